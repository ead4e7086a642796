# metallb-ts on Node.js 24 (the runtime strips TypeScript types itself: Node >= 24, no build step).
# One image for both components: `metallb-ts controller` and `metallb-ts speaker` (deploy/).
#   docker build -t metallb-ts:0.1.0 .
FROM node:24-slim

ENV NODE_ENV=production \
    NODE_COMPILE_CACHE=/tmp/metallb-ts-compile-cache
WORKDIR /opt/metallb-ts

# Runtime dependencies only. The devDependency node@24 is left out on purpose: bin/metallb-ts then
# runs the image's own Node 24.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY bin ./bin
COPY src ./src
RUN node --version | grep -q '^v24\.' && ./bin/metallb-ts --version

# Runs as root by default: the speaker needs NET_RAW for ARP/NDP (deploy/speaker.yaml adds only
# that capability); deploy/controller.yaml runs the controller as nobody (65534).
ENTRYPOINT ["/opt/metallb-ts/bin/metallb-ts"]
CMD ["--help"]
