#!/usr/bin/env bash
# MetalLB's own controller and speaker binaries, for the tests that run them beside and instead of
# metallb-ts (test/e2e/metallb-*.test.ts: migration, mixed speakers, same decisions), all from the
# Go module proxy:
#   controller   go.universe.tf/metallb/controller@$METALLB_VERSION
#   speaker      go.universe.tf/metallb/speaker@$METALLB_VERSION
# (v0.16.1: the version metallb-ts re-implements; its go.mod has no replace directives, so a plain
# `go install module/pkg@version` builds them; nothing of MetalLB is committed).
#
#   manifests/   config/manifests/metallb-native.yaml and metallb-frr-k8s.yaml of that module (what
#                users install; test/e2e/metallb-replace.test.ts applies deploy/replace-metallb over them)
#
# Output: <repo>/.cache/metallb-bin/{controller,speaker,manifests,version.txt}: symbolic links to a copy kept
# per version in the machine-wide cache ($METALLB_TS_K8S_CACHE, default ~/.cache/metallb-ts)
# /metallb-bin/<version>/, so another clone on the same machine (CI) links them instead of
# building again. Idempotent: nothing is built when that directory already has both binaries.
#
# Both binaries in ONE `go install` (they share most of their package graph), -trimpath and
# -ldflags '-s -w' as the other builds of this module here (test/setup.d/50-metallb-differential.sh
# builds MetalLB's packages with -trimpath too), so the Go build cache they leave is reused: cold
# (an empty Go build cache) ~16 min on 2 busy cores, warm a minute or two.
#
# Environment: METALLB_VERSION (default v0.16.1), METALLB_TS_K8S_CACHE, FORCE=1 (rebuild),
# BUILD_JOBS (go install -p, default 2).
set -euo pipefail

METALLB_VERSION="${METALLB_VERSION:-v0.16.1}"
FORCE="${FORCE:-0}"
BUILD_JOBS="${BUILD_JOBS:-2}"
module=go.universe.tf/metallb

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out_dir="$repo_root/.cache/metallb-bin"
machine_cache="${METALLB_TS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metallb-ts}"
ver_cache="$machine_cache/metallb-bin/$METALLB_VERSION"
stamp="metallb $METALLB_VERSION"

log() { printf '[55-metallb-binaries %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

complete() { [ -x "$1/controller" ] && [ -x "$1/speaker" ] && [ -f "$1/manifests/metallb-native.yaml" ]; }

if [ "$FORCE" != 1 ] && complete "$out_dir" && [ "$(cat "$out_dir/version.txt" 2>/dev/null)" = "$stamp" ] &&
  [ "$(readlink "$out_dir/controller")" = "$ver_cache/controller" ]; then
  exit 0
fi

if [ "$FORCE" = 1 ] || ! complete "$ver_cache"; then
  command -v go >/dev/null || { echo "55-metallb-binaries: 'go' not found on PATH (needed to build MetalLB $METALLB_VERSION's controller and speaker from the module proxy)" >&2; exit 1; }
  export GOTOOLCHAIN=local
  export CGO_ENABLED=0
  export GOFLAGS="-mod=mod"
  mkdir -p "$ver_cache"
  if [ "$FORCE" = 1 ] || [ ! -f "$ver_cache/manifests/metallb-native.yaml" ]; then
    # outside any module: `go mod download` must not see a go.mod of the caller's directory
    moddir="$(cd "$ver_cache" && GOFLAGS= go mod download -json "$module@$METALLB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
    [ -n "$moddir" ] && [ -d "$moddir" ] || { echo "55-metallb-binaries: could not download $module@$METALLB_VERSION" >&2; exit 1; }
    rm -rf "$ver_cache/manifests.tmp" && mkdir -p "$ver_cache/manifests.tmp"
    cp "$moddir/config/manifests/metallb-native.yaml" "$moddir/config/manifests/metallb-frr-k8s.yaml" "$ver_cache/manifests.tmp/"
    chmod u+w "$ver_cache"/manifests.tmp/*.yaml
    rm -rf "$ver_cache/manifests" && mv "$ver_cache/manifests.tmp" "$ver_cache/manifests"
  fi
  if [ "$FORCE" = 1 ] || [ ! -x "$ver_cache/controller" ] || [ ! -x "$ver_cache/speaker" ]; then
    tmpbin="$ver_cache/.bin.$$"
    rm -rf "$tmpbin" && mkdir -p "$tmpbin"
    trap 'rm -rf "$tmpbin"' EXIT
    log "building MetalLB $METALLB_VERSION controller and speaker from the module proxy (go install -p $BUILD_JOBS, niced; cold: ~16 min on 2 busy cores)"
    t0=$(date +%s)
    # outside any module too, for `go install pkg@version`
    (cd "$ver_cache" && GOBIN="$tmpbin" nice -n 10 go install -p "$BUILD_JOBS" -trimpath -ldflags="-s -w" \
      "$module/controller@$METALLB_VERSION" "$module/speaker@$METALLB_VERSION")
    for b in controller speaker; do
      [ -x "$tmpbin/$b" ] || { echo "55-metallb-binaries: go install wrote no $b" >&2; exit 1; }
      mv -f "$tmpbin/$b" "$ver_cache/$b"
    done
    log "built controller and speaker in $(( $(date +%s) - t0 ))s ($(cd "$ver_cache" && du -ch controller speaker | tail -1 | cut -f1))"
  fi
  echo "$stamp" >"$ver_cache/version.txt"
fi

mkdir -p "$out_dir"
for b in controller speaker manifests; do
  ln -sfn "$ver_cache/$b" "$out_dir/$b"
done
echo "$stamp" >"$out_dir/version.txt"
log "MetalLB $METALLB_VERSION controller and speaker in $out_dir"
