#!/usr/bin/env bash
# What the real-node tests (test/integration/e2e, test/integration/setup/node-cluster.ts) need, once:
#   Debian packages  containerd (1.6) + runc, containernetworking-plugins (bridge, host-local,
#                    loopback in /usr/lib/cni), util-linux (unshare, nsenter), iproute2,
#                    iputils-arping, openssl
#   Kubernetes       kubelet, kube-scheduler, kube-controller-manager, kubectl beside
#                    kube-apiserver and etcd: build-apiserver.sh with WITH_NODE=1 (one go build,
#                    cached by version in ~/.cache/metallb-ts; a no-op when they are there)
#   the pause image  test/integration/setup/node-pause (a static Go program of ours), packed as the
#                    OCI archive of registry.k8s.io/pause:3.10 (containerd 1.6's sandbox_image, so
#                    nothing is ever pulled): .cache/real-node/pause-3.10.oci.tar, rebuilt only
#                    when its source or the Go version changes
# The metallb-ts image itself is built by the test (npm run image), which caches it.
#
# Needs root (the tests need it too: namespaces, mounts, cgroups). Without root it says so in one
# line and exits 0: the tests then skip, naming the reason. No containerd or kubelet is started
# here, and the package installation starts no service (a temporary policy-rc.d).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out_dir="$repo_root/.cache/real-node"
pause_src="$repo_root/test/integration/setup/node-pause"

log() { printf '[60-real-node %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [ "$(id -u)" -ne 0 ] || [ "$(uname -s)" != Linux ]; then
  log "not root on Linux: the real-node tests will be skipped (nothing installed or built)"
  exit 0
fi

# --- Debian packages --------------------------------------------------------------------------
missing=()
command -v containerd >/dev/null 2>&1 && command -v ctr >/dev/null 2>&1 || missing+=(containerd)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
command -v unshare >/dev/null 2>&1 && command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v arping >/dev/null 2>&1 || missing+=(iputils-arping)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# temporary, written by metallb-ts test/setup.d/60-real-node.sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    own_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  status=0
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } || status=$?
  [ "$own_policy" = 1 ] && rm -f "$policy"
  [ "$status" -eq 0 ] || { log "apt-get failed ($status)"; exit "$status"; }
  # a machine with systemd would have started the packaged containerd: the tests run their own
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    systemctl disable --now containerd >/dev/null 2>&1 || true
  fi
fi

# --- kubelet, kube-scheduler, kube-controller-manager, kubectl -----------------------------------
WITH_NODE=1 bash "$repo_root/test/integration/setup/build-apiserver.sh"

# --- the pause image ----------------------------------------------------------------------------
command -v go >/dev/null || { log "'go' not found on PATH (needed to build the pause image)"; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
stamp="$( { go env GOVERSION; cat "$pause_src/go.mod" "$pause_src"/*.go "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-16)"
archive="$out_dir/pause-3.10.oci.tar"
if [ -f "$archive" ] && [ "$(cat "$out_dir/pause.stamp" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
log "building the pause image (registry.k8s.io/pause:3.10 from $pause_src)"
mkdir -p "$out_dir"
work="$(mktemp -d "$out_dir/.pause.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs" "$work/oci/blobs/sha256"
(cd "$pause_src" && go build -trimpath -ldflags='-s -w' -o "$work/rootfs/pause" .)
"$work/rootfs/pause" -v >/dev/null

# One uncompressed layer holding /pause, a config (entrypoint /pause, user 65535 as the real pause
# image), a manifest and an index whose annotation io.containerd.image.name is the name `ctr images
# import` tags it with. Reproducible: fixed owner and mtime.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=0755 -cf "$work/layer.tar" -C "$work/rootfs" pause
blob() { # file media-type -> prints the descriptor, moves the file into blobs/
  local d s
  d="$(sha256sum "$1" | cut -d' ' -f1)"
  s="$(stat -c %s "$1")"
  mv "$1" "$work/oci/blobs/sha256/$d"
  printf '{"mediaType":"%s","digest":"sha256:%s","size":%s}' "$2" "$d" "$s"
}
diff_id="$(sha256sum "$work/layer.tar" | cut -d' ' -f1)"
layer="$(blob "$work/layer.tar" application/vnd.oci.image.layer.v1.tar)"
printf '{"architecture":"%s","os":"linux","config":{"User":"65535:65535","Entrypoint":["/pause"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$(go env GOARCH)" "$diff_id" >"$work/config.json"
config="$(blob "$work/config.json" application/vnd.oci.image.config.v1+json)"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":%s,"layers":[%s]}' "$config" "$layer" >"$work/manifest.json"
manifest="$(blob "$work/manifest.json" application/vnd.oci.image.manifest.v1+json)"
printf '{"schemaVersion":2,"manifests":[%s]}' \
  "${manifest%\}},\"annotations\":{\"io.containerd.image.name\":\"registry.k8s.io/pause:3.10\",\"org.opencontainers.image.ref.name\":\"3.10\"}}" >"$work/oci/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$archive.tmp" -C "$work/oci" oci-layout index.json blobs
mv -f "$archive.tmp" "$archive"
echo "$stamp" >"$out_dir/pause.stamp"
log "wrote $archive ($(du -h "$archive" | cut -f1))"
