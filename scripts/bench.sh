#!/usr/bin/env bash
# The benchmark suite (benches/suite.py): installs what it needs (cached),
# builds the extension in release mode, generates the datasets once, starts
# MinIO and toxiproxy, and writes benches/results/suite-<time>.{json,md,png}.
# Pass --quick for a run under 3 minutes (suite only); other options go to
# suite.py.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"
scripts/install-python.sh
scripts/install-tools.sh
maturin develop --release --quiet
python benches/suite.py "$@"
# The scenario benchmarks after the suite's per-file tables (a full run
# only): partitioned lake, training loader, Ray and Dask.
if [[ " $* " != *" --quick "* ]]; then
  python benches/bench_partitioned.py
  python benches/bench_loader.py
  python benches/bench_cluster.py
fi
