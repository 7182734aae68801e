#!/usr/bin/env bash
# The whole test suite, from nothing: installs the pinned tools and servers
# (cached), checks formatting and lints, runs the Rust tests, builds the
# Python extension, and runs pytest against real servers on loopback.
# Extra arguments go to pytest (e.g. `scripts/test.sh -k cache -x`).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"

started=$SECONDS
step() { printf '\n==> [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*"; }

step "Python venv with the pinned tools and peers (first time ~1 min, then cached in $FASTINGEST_CACHE_ROOT)"
scripts/install-python.sh

# The test servers build from source (MinIO ~4 min the first time); that runs
# beside the Rust build and is waited for just before pytest.
tools_log="$(mktemp)"
step "test servers (MinIO, toxiproxy, fake-gcs-server, Azurite): building in the background, log in $tools_log"
scripts/install-tools.sh >"$tools_log" 2>&1 &
tools_pid=$!

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings (first time ~3 min)"
cargo clippy --workspace --all-targets --profile "$BUILD_PROFILE" -- -D warnings

step "cargo test (profile $BUILD_PROFILE, one build shared with the extension and the demo; first time ~10 min on 2 cores, seconds after make demo)"
cargo test --workspace --profile "$BUILD_PROFILE"

step "ruff (lint and format check)"
ruff check python tests benches scripts devtools
ruff format --check python tests benches scripts devtools

step "docs (mkdocs build --strict)"
mkdocs build --strict --quiet

step "building the extension (maturin develop, profile $BUILD_PROFILE; ~30 s after cargo test)"
maturin develop --quiet --profile "$BUILD_PROFILE"

step "stubs (stubtest: python/fastingest/_fastingest.pyi against the built module)"
python -m mypy.stubtest fastingest._fastingest --mypy-config-file pyproject.toml --allowlist tests/stubtest-allowlist.txt

step "waiting for the test servers"
if ! wait "$tools_pid"; then
  cat "$tools_log" >&2
  echo "test.sh: installing the test servers failed (log above)" >&2
  exit 1
fi
rm -f "$tools_log"

step "pytest (~5 min)"
# Servers are required here: a missing one fails the run instead of skipping.
export FASTINGEST_REQUIRE_SERVERS=1
if [[ -z "${FASTINGEST_CORPORA:-}" && -d "$REPO_ROOT/../shared/corpora" ]]; then
  export FASTINGEST_CORPORA="$REPO_ROOT/../shared/corpora"
fi
python -m pytest -q -p no:cacheprovider "$@"
step "done"
