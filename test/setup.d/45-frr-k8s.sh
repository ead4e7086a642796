#!/usr/bin/env bash
# frr-k8s for the BGP test bed (test/integration/setup/frr.ts), all from the Go module proxy:
#   frr-k8s-controller   built from github.com/metallb/frr-k8s/cmd/frr-k8s-controller@$FRRK8S_VERSION
#                        (v0.0.25: the version MetalLB v0.16.1's go.mod requires; its go.mod has no
#                        replace directives, so a plain `go install module@version` works)
#   crds/*.yaml          config/crd/bases/frrk8s.metallb.io_*.yaml of that module
#   frr-reloader.sh      cmd/reloader/frr-reloader.sh of that module
#
# Output: <repo>/.cache/frr-k8s/{frr-k8s-controller,crds/,frr-reloader.sh,version.txt} (.cache/ is
# gitignored; nothing of frr-k8s is committed). A copy is kept per version in the machine-wide cache
# ($METALLB_TS_K8S_CACHE, default ~/.cache/metallb-ts)/frr-k8s/<version>/, so another clone on the same
# machine copies it instead of building again. Idempotent: nothing is done when version.txt matches.
# A cold build takes ~8 min on 2 cores; warm (Go build cache) well under a minute.
#
# Environment: FRRK8S_VERSION (default v0.0.25), METALLB_TS_K8S_CACHE, FORCE=1 (rebuild).
set -euo pipefail

FRRK8S_VERSION="${FRRK8S_VERSION:-v0.0.25}"
FORCE="${FORCE:-0}"
module=github.com/metallb/frr-k8s

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out_dir="$repo_root/.cache/frr-k8s"
machine_cache="${METALLB_TS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metallb-ts}"
ver_cache="$machine_cache/frr-k8s/$FRRK8S_VERSION"
stamp="frr-k8s $FRRK8S_VERSION"

log() { printf '[45-frr-k8s %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

complete() { # dir: binary, reloader script and at least the FRRConfiguration CRD
  [ -x "$1/frr-k8s-controller" ] && [ -f "$1/frr-reloader.sh" ] && [ -f "$1/crds/frrk8s.metallb.io_frrconfigurations.yaml" ]
}

if [ "$FORCE" != 1 ] && complete "$out_dir" && [ "$(cat "$out_dir/version.txt" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi

export GOTOOLCHAIN=local
export CGO_ENABLED=0
# the same flags as any other `go install` of this module on the machine, so the Go build cache is reused
export GOFLAGS=-mod=mod
ldflags="-s -w"

if [ "$FORCE" = 1 ] || ! complete "$ver_cache"; then
  command -v go >/dev/null || { echo "45-frr-k8s: 'go' not found on PATH (needed to build frr-k8s $FRRK8S_VERSION from the module proxy)" >&2; exit 1; }
  mkdir -p "$ver_cache"
  log "fetching $module@$FRRK8S_VERSION from the module proxy"
  # outside any module: `go mod download` must not see a go.mod of the caller's directory
  moddir="$(cd "$ver_cache" && GOFLAGS= go mod download -json "$module@$FRRK8S_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [ -n "$moddir" ] && [ -d "$moddir" ] || { echo "45-frr-k8s: could not download $module@$FRRK8S_VERSION" >&2; exit 1; }
  rm -rf "$ver_cache/crds.tmp" && mkdir -p "$ver_cache/crds.tmp"
  cp "$moddir"/config/crd/bases/frrk8s.metallb.io_*.yaml "$ver_cache/crds.tmp/"
  chmod u+w "$ver_cache"/crds.tmp/*.yaml
  rm -rf "$ver_cache/crds" && mv "$ver_cache/crds.tmp" "$ver_cache/crds"
  install -m 0755 "$moddir/cmd/reloader/frr-reloader.sh" "$ver_cache/frr-reloader.sh"

  log "building frr-k8s-controller $FRRK8S_VERSION (cold: ~8 min on 2 cores)"
  t0=$(date +%s)
  tmpbin="$ver_cache/bin.tmp"
  rm -rf "$tmpbin" && mkdir -p "$tmpbin"
  (cd "$ver_cache" && GOBIN="$tmpbin" nice -n 10 go install -ldflags="$ldflags" "$module/cmd/frr-k8s-controller@$FRRK8S_VERSION")
  mv -f "$tmpbin/frr-k8s-controller" "$ver_cache/frr-k8s-controller"
  rm -rf "$tmpbin"
  log "built frr-k8s-controller in $(( $(date +%s) - t0 ))s ($(du -h "$ver_cache/frr-k8s-controller" | cut -f1))"
fi

mkdir -p "$out_dir"
rm -rf "$out_dir/crds.tmp" && cp -r "$ver_cache/crds" "$out_dir/crds.tmp" && rm -rf "$out_dir/crds" && mv "$out_dir/crds.tmp" "$out_dir/crds"
install -m 0755 "$ver_cache/frr-reloader.sh" "$out_dir/frr-reloader.sh"
cp -f "$ver_cache/frr-k8s-controller" "$out_dir/frr-k8s-controller.tmp" && mv -f "$out_dir/frr-k8s-controller.tmp" "$out_dir/frr-k8s-controller"
echo "$stamp" >"$out_dir/version.txt"
log "frr-k8s $FRRK8S_VERSION in $out_dir"
