#!/usr/bin/env bash
# The benchmarks: installs what they need (cached), builds the extension in
# release mode, and runs benches/bench_read.py, bench_cache.py and
# bench_orc.py (pass --quick for a smoke run of each).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"
scripts/install-python.sh
scripts/install-tools.sh
maturin develop --release --quiet
python benches/bench_read.py "$@"
python benches/bench_cache.py "$@"
python benches/bench_orc.py "$@"
