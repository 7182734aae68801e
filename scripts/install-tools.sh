#!/usr/bin/env bash
# Installs the test servers at pinned versions into $TOOLS_BIN (a cache outside
# the checkout); each is skipped when its binary is already there.
set -euo pipefail
source "$(dirname "$0")/env.sh"
mkdir -p "$TOOLS_BIN"

MINIO_MOD="github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"
TOXI_VER="v2.5.0"
FAKEGCS_MOD="github.com/fsouza/fake-gcs-server@v1.56.1"
AZURITE_VER="3.37.0"

go_tool() {  # go_tool <installed name> <module/cmd@version>
  local name="$1" mod="$2" stamp="$TOOLS_BIN/.$1.version" tmp
  if [[ -x "$TOOLS_BIN/$name" && "$(cat "$stamp" 2>/dev/null)" == "$mod" ]]; then return; fi
  echo "install-tools: building $name ($mod)" >&2
  tmp="$(mktemp -d)"
  GOBIN="$tmp" GOFLAGS=-buildvcs=false go install "$mod"
  mv -f "$tmp"/* "$TOOLS_BIN/$name"
  rm -rf "$tmp"
  echo "$mod" >"$stamp"
}

go_tool minio "$MINIO_MOD" &
p1=$!
( go_tool toxiproxy-server "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXI_VER"
  go_tool toxiproxy-cli "github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXI_VER"
  go_tool fake-gcs-server "$FAKEGCS_MOD" ) &
p2=$!
if [[ ! -x "$TOOLS_DIR/azurite/node_modules/.bin/azurite-blob" || "$(cat "$TOOLS_DIR/azurite/.version" 2>/dev/null)" != "$AZURITE_VER" ]]; then
  echo "install-tools: installing azurite $AZURITE_VER" >&2
  mkdir -p "$TOOLS_DIR/azurite"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS_DIR/azurite" "azurite@$AZURITE_VER" >/dev/null
  echo "$AZURITE_VER" >"$TOOLS_DIR/azurite/.version"
fi
wait $p1
wait $p2
echo "install-tools: ok ($TOOLS_BIN)" >&2
