#!/usr/bin/env bash
# Builds (or reuses) the real Kubernetes control-plane binaries the integration tests run:
#   kube-apiserver  from the k8s.io/kubernetes Go module  ($K8S_VERSION)
#   etcd            from the go.etcd.io/etcd/server/v3 Go module ($ETCD_VERSION)
#   kubectl         optional (WITH_KUBECTL=1), same module as kube-apiserver
#
# Output: <repo>/.cache/k8s-bin/{kube-apiserver,etcd[,kubectl],versions.txt}  (.cache/ is gitignored)
# Idempotent: when versions.txt matches, nothing is done. A copy of the binaries is also kept per
# version in a machine-wide cache ($METALLB_TS_K8S_CACHE, default ~/.cache/metallb-ts), so a fresh
# clone on the same machine (CI) copies them instead of building again.
#
# Everything comes from the Go module proxy. k8s.io/kubernetes cannot be `go install`ed (its go.mod
# requires the staging modules at v0.0.0 with local replaces), so a throwaway wrapper module
# requires it and replaces each staging module k8s.io/X by its published k8s.io/X v0.<minor>.<patch>.
# Why etcd from source and not Debian's etcd-server: bookworm ships 3.4.23, while kube-apiserver
# 1.36 is built and tested against etcd 3.6 (its client is go.etcd.io/etcd/client/v3 v3.6.8).
#
# Environment: K8S_VERSION, ETCD_VERSION, WITH_KUBECTL=1, BUILD_JOBS (go build -p, default 2),
# METALLB_TS_K8S_CACHE, FORCE=1 (rebuild even if cached).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
WITH_KUBECTL="${WITH_KUBECTL:-0}"
BUILD_JOBS="${BUILD_JOBS:-2}"
FORCE="${FORCE:-0}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
out_dir="$repo_root/.cache/k8s-bin"
machine_cache="${METALLB_TS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metallb-ts}"
stamp="kube-apiserver $K8S_VERSION; etcd $ETCD_VERSION; kubectl $([ "$WITH_KUBECTL" = 1 ] && echo "$K8S_VERSION" || echo none)"
bin_cache="$machine_cache/k8s-bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"

log() { printf '[build-apiserver %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

have_all() { # dir
  [ -x "$1/kube-apiserver" ] && [ -x "$1/etcd" ] && { [ "$WITH_KUBECTL" != 1 ] || [ -x "$1/kubectl" ]; }
}

if [ "$FORCE" != 1 ] && have_all "$out_dir" && [ -f "$out_dir/versions.txt" ] && [ "$(cat "$out_dir/versions.txt")" = "$stamp" ]; then
  log "up to date in $out_dir ($stamp)"
  exit 0
fi

command -v go >/dev/null || { echo "build-apiserver: 'go' not found on PATH (the Go toolchain is needed to build kube-apiserver and etcd)" >&2; exit 1; }

mkdir -p "$out_dir" "$bin_cache"
start=$(date +%s)

export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
ldflags="-s -w"
nice_cmd=(nice -n 10)

version_ldflags() { # what kubernetes' hack/lib/version.sh stamps, so /version and --version tell the truth
  local minor="${K8S_VERSION#v1.}" p
  minor="${minor%%.*}"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    printf -- '-X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean ' "$p" "$K8S_VERSION" "$p" "$p" "$minor" "$p"
  done
}

build_kube() { # targets...
  local work="$machine_cache/k8s-build/kubernetes-$K8S_VERSION"
  mkdir -p "$work"
  if [ ! -f "$work/go.mod" ] || ! grep -q "k8s.io/kubernetes $K8S_VERSION" "$work/go.mod"; then
    log "writing wrapper module for k8s.io/kubernetes $K8S_VERSION in $work"
    local minor_patch="${K8S_VERSION#v1.}"
    rm -f "$work/go.mod" "$work/go.sum"
    (cd "$work" && go mod init metallb-ts.local/k8s-build >/dev/null 2>&1)
    log "fetching k8s.io/kubernetes@$K8S_VERSION go.mod"
    local gomod
    gomod="$(cd "$work" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
    [ -f "$gomod" ] || { echo "build-apiserver: could not download k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
    {
      echo "module metallb-ts.local/k8s-build"
      echo
      echo "go 1.26"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      echo "replace ("
      # every staging module the published go.mod points at ./staging/src/k8s.io/X
      sed -n 's#^[[:space:]]*\(k8s.io/[A-Za-z0-9._/-]*\) => ./staging/src/.*#\1#p' "$gomod" | sort -u |
        while read -r m; do echo "	$m => $m v0.$minor_patch"; done
      echo ")"
    } >"$work/go.mod"
    log "wrapper go.mod has $(grep -c ' => ' "$work/go.mod") staging replaces (v0.$minor_patch)"
  fi
  local t
  for t in "$@"; do
    log "building $t $K8S_VERSION (go build -p $BUILD_JOBS, niced; the first build takes several minutes)"
    local t0=$(date +%s)
    (cd "$work" && "${nice_cmd[@]}" go build -p "$BUILD_JOBS" -trimpath -ldflags="$ldflags $(version_ldflags)" -o "$bin_cache/$t.tmp" "k8s.io/kubernetes/cmd/$t")
    mv -f "$bin_cache/$t.tmp" "$bin_cache/$t"
    log "built $t in $(( $(date +%s) - t0 ))s ($(du -h "$bin_cache/$t" | cut -f1))"
  done
}

build_etcd() {
  local work="$machine_cache/k8s-build/etcd-$ETCD_VERSION"
  mkdir -p "$work"
  if [ ! -f "$work/go.mod" ] || ! grep -q "go.etcd.io/etcd/server/v3 $ETCD_VERSION" "$work/go.mod"; then
    log "writing wrapper module for go.etcd.io/etcd/server/v3 $ETCD_VERSION in $work"
    rm -f "$work/go.sum"
    printf 'module metallb-ts.local/etcd-build\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$work/go.mod"
  fi
  log "building etcd $ETCD_VERSION"
  local t0=$(date +%s)
  (cd "$work" && "${nice_cmd[@]}" go build -p "$BUILD_JOBS" -trimpath -ldflags="$ldflags" -o "$bin_cache/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv -f "$bin_cache/etcd.tmp" "$bin_cache/etcd"
  log "built etcd in $(( $(date +%s) - t0 ))s ($(du -h "$bin_cache/etcd" | cut -f1))"
}

if [ "$FORCE" = 1 ]; then rm -f "$bin_cache/kube-apiserver" "$bin_cache/etcd" "$bin_cache/kubectl"; fi

[ -x "$bin_cache/etcd" ] && log "reusing etcd from $bin_cache" || build_etcd
kube_targets=()
[ -x "$bin_cache/kube-apiserver" ] && log "reusing kube-apiserver from $bin_cache" || kube_targets+=(kube-apiserver)
if [ "$WITH_KUBECTL" = 1 ]; then
  [ -x "$bin_cache/kubectl" ] && log "reusing kubectl from $bin_cache" || kube_targets+=(kubectl)
fi
[ "${#kube_targets[@]}" -eq 0 ] || build_kube "${kube_targets[@]}"

for b in kube-apiserver etcd kubectl; do
  if [ -x "$bin_cache/$b" ] && { [ "$b" != kubectl ] || [ "$WITH_KUBECTL" = 1 ]; }; then
    cp -f "$bin_cache/$b" "$out_dir/$b.tmp" && mv -f "$out_dir/$b.tmp" "$out_dir/$b"
  fi
done
"$out_dir/etcd" --version | sed -n 1p >&2
"$out_dir/kube-apiserver" --version >&2
echo "$stamp" >"$out_dir/versions.txt"
log "done in $(( $(date +%s) - start ))s: $out_dir ($(du -sh "$out_dir" | cut -f1))"
