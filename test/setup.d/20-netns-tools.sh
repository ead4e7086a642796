#!/usr/bin/env bash
# Debian tools for test/integration/l2-netns.test.ts: iputils-arping (arping), tcpdump, iproute2 (ip).
# Idempotent: installs only what is missing, runs `apt-get update` at most once. Needs root (CI runs it as root).
set -euo pipefail
missing=()
command -v arping >/dev/null 2>&1 || missing+=(iputils-arping)
command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "20-netns-tools: need root to install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
