#!/usr/bin/env bash
# The main job on local data, from nothing: installs the pinned Python tools
# (cached), builds the extension (optimised; the same build the tests use),
# and runs scripts/demo.py: fastingest, pyarrow and polars side by side.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"
echo "==> Python venv with the pinned tools and peers (first time ~1 min, then cached)"
scripts/install-python.sh
echo "==> building fastingest (optimised, profile $BUILD_PROFILE: the first time ~9 min on 2 cores, mostly the Rust dependencies; then seconds)"
maturin develop --quiet --profile "$BUILD_PROFILE"
echo "==> demo"
python scripts/demo.py "$@"
