#!/usr/bin/env bash
# `npm run shared:refresh`: replaces test/shared/{conformance,crds,samples,differential} with the
# copies in ../shared next to the repository (the project's shared test data). Review and commit
# the result; the tests only ever read test/shared/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/../shared"
[ -d "$src" ] || { echo "shared:refresh: $src not found" >&2; exit 2; }
for d in conformance crds samples differential; do
  rm -rf "$root/test/shared/$d"
  cp -r "$src/$d" "$root/test/shared/$d"
done
echo "test/shared refreshed from $src; review with git status"
