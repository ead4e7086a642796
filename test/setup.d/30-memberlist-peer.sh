#!/usr/bin/env bash
# Builds the HashiCorp memberlist v0.5.1 test peer (test/memberlist/peer) into
# .cache/memberlist-peer/memberlist-peer, once: rebuilt only when its sources change.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
src="$root/test/memberlist/peer"
out="$root/.cache/memberlist-peer"
stamp="$(cat "$src"/go.mod "$src"/go.sum "$src"/*.go | sha256sum | cut -c1-16)"
if [ -x "$out/memberlist-peer" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
mkdir -p "$out"
echo "[memberlist-peer] building (memberlist v0.5.1 from the Go module proxy)" >&2
(cd "$src" && go build -o "$out/memberlist-peer.tmp" .)
mv "$out/memberlist-peer.tmp" "$out/memberlist-peer"
echo "$stamp" > "$out/stamp"
