# Shared locations for the build and test scripts. Sourced, not run.
# Everything heavy lives in a cache outside the checkout so that a fresh clone
# (CI) reuses it when present and rebuilds it from nothing when absent.
FASTINGEST_CACHE_ROOT="${FASTINGEST_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/fastingest-dev}"
export FASTINGEST_CACHE_ROOT
export TOOLS_DIR="$FASTINGEST_CACHE_ROOT/tools"
export TOOLS_BIN="$TOOLS_DIR/bin"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$FASTINGEST_CACHE_ROOT/target}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO_ROOT
# The venv is keyed by the pinned requirements and the interpreter version, so
# a version bump makes a new one. Computed once: nested scripts inherit it.
if [[ -z "${VENV_DIR:-}" ]]; then
  _req_hash="$({ cat "$REPO_ROOT/requirements-dev.txt"; python3 --version; } 2>&1 | sha256sum | cut -c1-12)"
  VENV_DIR="${FASTINGEST_VENV:-$FASTINGEST_CACHE_ROOT/venv-$_req_hash}"
fi
export VENV_DIR
export PATH="$VENV_DIR/bin:$TOOLS_BIN:$PATH"
export VIRTUAL_ENV="$VENV_DIR"
# The cargo profile of the demo and the tests (Cargo.toml: optimised, no LTO):
# one build serves both. Benchmarks and wheels use `release`.
export BUILD_PROFILE="${FASTINGEST_BUILD_PROFILE:-local}"
