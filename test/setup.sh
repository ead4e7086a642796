#!/usr/bin/env bash
# Everything the integration tests need on this machine, installed or built once (idempotent):
# the real kube-apiserver and etcd (built from their Go modules), then each test/setup.d/*.sh
# (e.g. Debian tools for the network-namespace tests, the HashiCorp memberlist peer).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/integration/setup/build-apiserver.sh"
for step in "$here"/setup.d/*.sh; do
  [ -e "$step" ] || continue
  echo "[test/setup] $(basename "$step")" >&2
  bash "$step"
done
