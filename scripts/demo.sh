#!/usr/bin/env bash
# The main job on local data, from nothing: installs the pinned Python tools
# (cached), builds the extension in release mode, and runs scripts/demo.py.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"
scripts/install-python.sh
maturin develop --release --quiet
python scripts/demo.py "$@"
