#!/usr/bin/env bash
# The read benchmark: installs what it needs (cached), builds the extension in
# release mode, and runs benches/bench_read.py (pass --quick for a smoke run).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"
scripts/install-python.sh
scripts/install-tools.sh
maturin develop --release --quiet
python benches/bench_read.py "$@"
