# metallb-ts on Node.js 24 (the runtime strips TypeScript types itself: Node >= 24, no build step).
# One image for both components: `metallb-ts controller` and `metallb-ts speaker` (deploy/).
#   docker build -t metallb-ts:0.1.0 .

# The raw-socket addon (native/l2.c) is compiled by `npm ci`'s install script, which needs a C
# compiler and Node's headers: the full node image has both; the runtime image has neither.
FROM node:24 AS build
WORKDIR /opt/metallb-ts
COPY package.json package-lock.json ./
COPY native ./native
RUN npm ci --omit=dev --no-audit --no-fund && test -f native/build/l2.node

FROM node:24-slim
ENV NODE_ENV=production \
    NODE_COMPILE_CACHE=/tmp/metallb-ts-compile-cache
WORKDIR /opt/metallb-ts

# Runtime dependencies only (npm ci --omit=dev in the build stage). The devDependency node@24 is
# left out on purpose: bin/metallb-ts then runs the image's own Node 24.
COPY package.json package-lock.json ./
COPY --from=build /opt/metallb-ts/node_modules ./node_modules
COPY --from=build /opt/metallb-ts/native/build ./native/build
COPY bin ./bin
COPY src ./src
RUN node --version | grep -q '^v24\.' && ./bin/metallb-ts --version

# Runs as root by default: the speaker needs NET_RAW for ARP/NDP (deploy/speaker.yaml adds only
# that capability); deploy/controller.yaml runs the controller as nobody (65534).
ENTRYPOINT ["/opt/metallb-ts/bin/metallb-ts"]
CMD ["--help"]
