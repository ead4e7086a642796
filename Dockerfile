# metallb-ts on Node.js 24 (the runtime strips TypeScript types itself: Node >= 24, no build step).
# One image for both components: `metallb-ts controller` and `metallb-ts speaker` (deploy/).
#   docker build -t metallb-ts:0.1.0 .
# Without Docker, `npm run image` builds the same layout as an OCI archive (image/build.ts, README
# "Container image"). test/unit/image-dockerfile.test.ts checks this file against that layout
# (image/layout.ts): keep the COPY destinations, ENV, WORKDIR, ENTRYPOINT, CMD and USER in step.

# The raw-socket addon (native/l2.c) is compiled by `npm ci`'s install script, which needs a C
# compiler and Node's headers: the full node image has both; the runtime image has neither.
FROM node:24 AS build
WORKDIR /opt/metallb-ts
COPY package.json package-lock.json ./
COPY native ./native
COPY image/prune.ts ./image/prune.ts
# Production dependencies only, less what Node never loads (image/prune.ts: type declarations,
# source maps, docs, tests, the Bare runtime's addons, npm's .bin), as `npm run image` does.
RUN npm ci --omit=dev --no-audit --no-fund && test -f native/build/l2.node \
 && node image/prune.ts node_modules
# Node's compile cache of src/ for each daemon's V8 flags and user (image/compile-cache.ts): no Pod
# strips the TypeScript types again at start (the stripper would stay resident, ~30 MiB).
COPY bin ./bin
COPY src ./src
COPY image/compile-cache.ts ./image/compile-cache.ts
RUN node image/compile-cache.ts /opt/metallb-ts

# The daemons' bundles (scripts/bundle.ts: dist/speaker.cjs, dist/controller.cjs and their
# starters), built from the src/ the image ships with esbuild, a devDependency (hence a stage of its
# own with the full install; no scripts: the addon is the build stage's): the speaker and the
# controller run them (issue #14).
FROM node:24 AS bundle
WORKDIR /opt/metallb-ts
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY scripts ./scripts
COPY src ./src
RUN node scripts/bundle.ts

# Node 24 at /usr/local/bin/node, where `npm run image` puts it too. Unlike that image, this base
# also carries Debian's userland, npm, corepack and yarn, and Node's debug symbols.
FROM node:24-slim
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    NODE_ENV=production \
    NODE_COMPILE_CACHE=/opt/metallb-ts/.compile-cache \
    NODE_COMPILE_CACHE_PORTABLE=1 \
    METALLB_TS_BUNDLE=1
WORKDIR /opt/metallb-ts

# Runtime dependencies only (npm ci --omit=dev in the build stage). The devDependency node@24 is
# left out on purpose: bin/metallb-ts then runs the image's own Node 24.
COPY package.json package-lock.json ./
COPY --from=build /opt/metallb-ts/node_modules ./node_modules
COPY --from=build /opt/metallb-ts/native/build/l2.node ./native/build/l2.node
COPY bin ./bin
COPY src ./src
# What the daemons run (bin/metallb-ts, with METALLB_TS_BUNDLE=1: the image has no find).
COPY --from=bundle /opt/metallb-ts/dist/speaker.cjs /opt/metallb-ts/dist/metallb-ts-speaker.cjs /opt/metallb-ts/dist/controller.cjs /opt/metallb-ts/dist/metallb-ts-controller.cjs ./dist/
COPY --from=build /opt/metallb-ts/.compile-cache ./.compile-cache
RUN node --version | grep -q '^v24\.' && NODE_DISABLE_COMPILE_CACHE=1 ./bin/metallb-ts --version

# Runs as root by default: the speaker needs NET_RAW for ARP/NDP (deploy/speaker.yaml adds only
# that capability); deploy/controller.yaml runs the controller as nobody (65534).
ENTRYPOINT ["/opt/metallb-ts/bin/metallb-ts"]
CMD ["--help"]
