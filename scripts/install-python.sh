#!/usr/bin/env bash
# Creates the pinned development venv (in the cache, keyed by requirements-dev.txt).
set -euo pipefail
source "$(dirname "$0")/env.sh"
if [[ ! -f "$VENV_DIR/.complete" ]]; then
  echo "install-python: creating $VENV_DIR" >&2
  rm -rf "$VENV_DIR"
  python3 -m venv "$VENV_DIR"
  "$VENV_DIR/bin/python" -m pip install -q --upgrade pip
  "$VENV_DIR/bin/python" -m pip install -q -r "$REPO_ROOT/requirements-dev.txt"
  touch "$VENV_DIR/.complete"
fi
