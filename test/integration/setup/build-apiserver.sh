#!/usr/bin/env bash
# Builds (or reuses) the real Kubernetes binaries the integration tests run:
#   kube-apiserver  from the k8s.io/kubernetes Go module  ($K8S_VERSION)
#   etcd            from the go.etcd.io/etcd/server/v3 Go module ($ETCD_VERSION)
#   kubectl         optional (WITH_KUBECTL=1), same module as kube-apiserver
#   kubelet, kube-scheduler, kube-controller-manager, kubectl
#                   for the real-node tests (test/integration/e2e; WITH_NODE=1, the default as root
#                   on Linux, where those tests run), same module as kube-apiserver
#
# Every missing k8s.io/kubernetes binary is built by ONE `go build` of all its cmd/ targets: they
# share most of their package graph (kubelet's is the largest), so that is the cheapest cold build.
# kube-apiserver and etcd are the same binaries whichever set is built (same flags, same version).
#
# Output: <repo>/.cache/k8s-bin/{kube-apiserver,etcd[,kubectl,kubelet,...],versions.txt}
# (.cache/ is gitignored). Idempotent: when versions.txt matches and every wanted binary is there,
# nothing is done. A copy of the binaries is also kept per version in a machine-wide cache
# ($METALLB_TS_K8S_CACHE, default ~/.cache/metallb-ts), so a fresh clone on the same machine (CI)
# copies them instead of building again. Asking for fewer binaries later never removes any.
#
# Everything comes from the Go module proxy. k8s.io/kubernetes cannot be `go install`ed (its go.mod
# requires the staging modules at v0.0.0 with local replaces), so a throwaway wrapper module
# requires it and replaces each staging module k8s.io/X by its published k8s.io/X v0.<minor>.<patch>.
# Why etcd from source and not Debian's etcd-server: bookworm ships 3.4.23, while kube-apiserver
# 1.36 is built and tested against etcd 3.6 (its client is go.etcd.io/etcd/client/v3 v3.6.8).
#
# Environment: K8S_VERSION, ETCD_VERSION, WITH_KUBECTL=1, WITH_NODE=0|1 (default 1 as root on
# Linux), BUILD_JOBS (go build -p, default 2), METALLB_TS_K8S_CACHE, FORCE=1 (rebuild even if cached).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
WITH_KUBECTL="${WITH_KUBECTL:-0}"
if [ -z "${WITH_NODE:-}" ]; then
  # the real-node tests need root (namespaces, cgroups, mounts): build their binaries where they run
  if [ "$(id -u)" -eq 0 ] && [ "$(uname -s)" = Linux ]; then WITH_NODE=1; else WITH_NODE=0; fi
fi
BUILD_JOBS="${BUILD_JOBS:-2}"
FORCE="${FORCE:-0}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
out_dir="$repo_root/.cache/k8s-bin"
machine_cache="${METALLB_TS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metallb-ts}"
bin_cache="$machine_cache/k8s-bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
# the k8s.io/kubernetes binaries wanted (cmd/<name>), kube-apiserver always
kube_wanted=(kube-apiserver)
[ "$WITH_KUBECTL" = 1 ] || [ "$WITH_NODE" = 1 ] && kube_wanted+=(kubectl)
[ "$WITH_NODE" = 1 ] && kube_wanted+=(kubelet kube-scheduler kube-controller-manager)
# versions.txt names the versions only: which binaries are there is checked file by file
stamp="kubernetes $K8S_VERSION; etcd $ETCD_VERSION"

log() { printf '[build-apiserver %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

have_all() { # dir
  local b
  [ -x "$1/etcd" ] || return 1
  for b in "${kube_wanted[@]}"; do [ -x "$1/$b" ] || return 1; done
}

if [ "$FORCE" != 1 ] && have_all "$out_dir" && [ -f "$out_dir/versions.txt" ] && [ "$(cat "$out_dir/versions.txt")" = "$stamp" ]; then
  log "up to date in $out_dir ($stamp: etcd ${kube_wanted[*]})"
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
  # one go build of every target: the packages they share are compiled once, in parallel
  local t pkgs=() tmp="$bin_cache/.build.$$"
  for t in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$t"); done
  rm -rf "$tmp" && mkdir -p "$tmp"
  log "building $* $K8S_VERSION in one go build (-p $BUILD_JOBS, niced; a cold build takes many minutes: kubelet's graph is the largest)"
  local t0=$(date +%s)
  if [ "${#pkgs[@]}" -eq 1 ]; then
    (cd "$work" && "${nice_cmd[@]}" go build -p "$BUILD_JOBS" -trimpath -ldflags="$ldflags $(version_ldflags)" -o "$tmp/$1" "${pkgs[0]}")
  else
    # several packages with -o DIR/: each binary is written as DIR/<last path element>
    (cd "$work" && "${nice_cmd[@]}" go build -p "$BUILD_JOBS" -trimpath -ldflags="$ldflags $(version_ldflags)" -o "$tmp/" "${pkgs[@]}")
  fi
  for t in "$@"; do
    [ -x "$tmp/$t" ] || { echo "build-apiserver: go build wrote no $t" >&2; exit 1; }
    mv -f "$tmp/$t" "$bin_cache/$t"
  done
  rm -rf "$tmp"
  log "built $* in $(( $(date +%s) - t0 ))s ($(cd "$bin_cache" && du -ch "$@" | tail -1 | cut -f1))"
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

if [ "$FORCE" = 1 ]; then
  rm -f "$bin_cache/etcd"
  for b in "${kube_wanted[@]}"; do rm -f "$bin_cache/$b"; done
fi

[ -x "$bin_cache/etcd" ] && log "reusing etcd from $bin_cache" || build_etcd
kube_targets=()
for b in "${kube_wanted[@]}"; do
  [ -x "$bin_cache/$b" ] && log "reusing $b from $bin_cache" || kube_targets+=("$b")
done
[ "${#kube_targets[@]}" -eq 0 ] || build_kube "${kube_targets[@]}"

# another version's binaries in out_dir must not pass for this one's later: those not replaced
# now go (the wanted ones are replaced atomically, tests running meanwhile keep working)
if [ "$(cat "$out_dir/versions.txt" 2>/dev/null)" != "$stamp" ]; then
  rm -f "$out_dir/versions.txt"
  for b in kube-apiserver kubectl kubelet kube-scheduler kube-controller-manager; do
    [[ " ${kube_wanted[*]} " == *" $b "* ]] || rm -f "$out_dir/$b"
  done
fi
for b in etcd "${kube_wanted[@]}"; do
  cp -f "$bin_cache/$b" "$out_dir/$b.tmp" && mv -f "$out_dir/$b.tmp" "$out_dir/$b"
done
"$out_dir/etcd" --version | sed -n 1p >&2
"$out_dir/kube-apiserver" --version >&2
echo "$stamp" >"$out_dir/versions.txt"
log "done in $(( $(date +%s) - start ))s: $out_dir ($(du -sh "$out_dir" | cut -f1))"
