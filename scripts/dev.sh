#!/usr/bin/env bash
# Contributor shortcuts behind `make lint|test-rust|test-py|quick`: parts of
# scripts/test.sh (which CI runs whole), same venv, same build profile.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REPO_ROOT"
scripts/install-python.sh
what="${1:?usage: scripts/dev.sh lint|test-rust|test-py|quick|fuzz [args]}"
shift
case "$what" in
  lint)
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets --profile "$BUILD_PROFILE" -- -D warnings
    ruff check python tests benches scripts devtools
    ruff format --check python tests benches scripts devtools
    mkdocs build --strict --quiet
    ;;
  test-rust)
    cargo test --workspace --profile "$BUILD_PROFILE"
    ;;
  test-py)
    scripts/install-tools.sh
    maturin develop --quiet --profile "$BUILD_PROFILE"
    FASTINGEST_REQUIRE_SERVERS=1 python -m pytest -q -p no:cacheprovider "$@"
    ;;
  quick)
    maturin develop --quiet --profile "$BUILD_PROFILE"
    python -m pytest -q -p no:cacheprovider -x -m "not remote" "$@"
    ;;
  fuzz)
    maturin develop --quiet --profile "$BUILD_PROFILE"
    corpora=()
    if [[ -d "$REPO_ROOT/../shared/corpora" ]]; then
      corpora=(--corpora "$REPO_ROOT/../shared/corpora")
    fi
    python -m devtools.fuzz "${corpora[@]}" "$@"
    ;;
  *)
    echo "scripts/dev.sh: unknown target $what" >&2
    exit 2
    ;;
esac
