#!/usr/bin/env bash
# The whole test suite, from nothing: installs the pinned tools and servers
# (cached), checks formatting and lints, runs the Rust tests, builds the
# Python extension, and runs pytest against real servers on loopback.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"

step() { printf '\n==> %s\n' "$*"; }

step "installing pinned Python tools and test servers (cached in $FASTINGEST_CACHE_ROOT)"
scripts/install-python.sh
scripts/install-tools.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test"
cargo test --workspace

step "ruff (lint and format check)"
ruff check python tests benches scripts
ruff format --check python tests benches scripts

step "building the extension (maturin develop)"
maturin develop --quiet

step "pytest"
# Servers are required here: a missing one fails the run instead of skipping.
export FASTINGEST_REQUIRE_SERVERS=1
if [[ -z "${FASTINGEST_CORPORA:-}" && -d "$REPO_ROOT/../shared/corpora" ]]; then
  export FASTINGEST_CORPORA="$REPO_ROOT/../shared/corpora"
fi
python -m pytest -q -p no:cacheprovider "$@"
