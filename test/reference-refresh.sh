#!/usr/bin/env bash
# `npm run reference:refresh -- DIR`: replaces test/reference/{conformance,crds,samples,differential}
# with the copies in DIR (the project's shared test data, which a maintainer has beside a checkout).
# Review and commit the result; the tests only ever read test/reference/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${1:-}"
[ -n "$src" ] && [ -d "$src" ] || { echo "reference:refresh: ${src:-no folder given}${src:+ not found}; usage: npm run reference:refresh -- DIR" >&2; exit 2; }
for d in conformance crds samples differential; do
  rm -rf "$root/test/reference/$d"
  cp -r "$src/$d" "$root/test/reference/$d"
done
echo "test/reference refreshed from $src; review with git status"
