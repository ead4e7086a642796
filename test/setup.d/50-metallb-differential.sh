#!/usr/bin/env bash
# The oracle of the differential test (test/differential): MetalLB v0.16.1's own controller,
# config parser and speaker, driven by test files of ours, built from the Go module proxy.
#
# MetalLB's packages (controller and speaker are `package main`, the parser and the reconcilers are
# under internal/) cannot be imported from another module, so the harness lives inside a copy of
# MetalLB's module: `go mod download go.universe.tf/metallb@$METALLB_VERSION` gives the module
# directory, which is copied to a scratch directory and made writable; MetalLB's own *_test.go
# files of the two packages we test are removed there (they are not needed and would pull in their
# test-only dependencies), and our files from test/differential/oracle/*.go_ are copied in with a
# .go name:
#   common.go_                  -> internal/zzdifferential/common.go  (case I/O, fake client)
#   layer2_inert.go_            -> internal/layer2/zz_differential_inert.go (an announcer that opens no socket)
#   speaker_oracle_test.go_     -> speaker/zz_differential_oracle_test.go
#   controller_oracle_test.go_  -> controller/zz_differential_oracle_test.go
# then `go test -c` builds one test binary per package:
#   speaker.test     the speaker in frr-k8s mode per node, and config.For over the whole namespace
#   controller.test  the controller restarted on the case, several times
# Nothing of MetalLB is committed: the module comes from the proxy at build time.
#
# Output: <repo>/.cache/metallb-differential/{speaker.test,controller.test,stamp} (symbolic links
# to the machine-wide cache, $METALLB_TS_K8S_CACHE, default ~/.cache/metallb-ts,
# /metallb-differential/<version>-<hash of our Go files and the Go version>/). Idempotent: nothing is
# built when that directory already has both binaries. Cold (Go build cache without MetalLB's
# dependencies) ~4 min on 2 cores; warm, a change of our files only, ~30 s.
#
# Environment: METALLB_VERSION (default v0.16.1), METALLB_TS_K8S_CACHE, FORCE=1 (rebuild),
# BUILD_JOBS (go build -p, default 2).
set -euo pipefail

METALLB_VERSION="${METALLB_VERSION:-v0.16.1}"
FORCE="${FORCE:-0}"
BUILD_JOBS="${BUILD_JOBS:-2}"
module=go.universe.tf/metallb

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
src_dir="$repo_root/test/differential/oracle"
out_dir="$repo_root/.cache/metallb-differential"
machine_cache="${METALLB_TS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metallb-ts}"

log() { printf '[50-metallb-differential %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

command -v go >/dev/null || { echo "50-metallb-differential: 'go' not found on PATH (needed to build MetalLB $METALLB_VERSION's oracle from the module proxy)" >&2; exit 1; }

export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"

hash="$( { echo "$METALLB_VERSION"; go env GOVERSION; cat "$src_dir"/*.go_ "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-16)"
stamp="metallb $METALLB_VERSION oracle $hash"
ver_cache="$machine_cache/metallb-differential/$METALLB_VERSION-$hash"

complete() { [ -x "$1/speaker.test" ] && [ -x "$1/controller.test" ]; }

if [ "$FORCE" != 1 ] && complete "$out_dir" && [ "$(cat "$out_dir/stamp" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi

if [ "$FORCE" = 1 ] || ! complete "$ver_cache"; then
  mkdir -p "$ver_cache"
  log "fetching $module@$METALLB_VERSION from the module proxy"
  # outside any module: `go mod download` must not see a go.mod of the caller's directory
  moddir="$(cd "$ver_cache" && GOFLAGS= go mod download -json "$module@$METALLB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [ -n "$moddir" ] && [ -d "$moddir" ] || { echo "50-metallb-differential: could not download $module@$METALLB_VERSION" >&2; exit 1; }

  work="$ver_cache/src"
  log "copying the module to $work"
  rm -rf "$work"
  cp -r "$moddir" "$work"
  chmod -R u+w "$work"
  rm -f "$work"/speaker/*_test.go "$work"/controller/*_test.go
  mkdir -p "$work/internal/zzdifferential"
  cp "$src_dir/common.go_" "$work/internal/zzdifferential/common.go"
  cp "$src_dir/layer2_inert.go_" "$work/internal/layer2/zz_differential_inert.go"
  cp "$src_dir/speaker_oracle_test.go_" "$work/speaker/zz_differential_oracle_test.go"
  cp "$src_dir/controller_oracle_test.go_" "$work/controller/zz_differential_oracle_test.go"

  t0=$(date +%s)
  for pkg in speaker controller; do
    log "building $pkg.test (go test -c -vet=off -p $BUILD_JOBS; cold: a few minutes on 2 cores)"
    (cd "$work" && nice -n 10 go test -c -vet=off -p "$BUILD_JOBS" -trimpath -ldflags="-s -w" -o "$ver_cache/$pkg.test.tmp" "./$pkg")
    mv -f "$ver_cache/$pkg.test.tmp" "$ver_cache/$pkg.test"
  done
  log "built the oracle in $(( $(date +%s) - t0 ))s ($(du -ch "$ver_cache"/*.test | tail -1 | cut -f1))"
  echo "$stamp" >"$ver_cache/stamp"
  rm -rf "$work"
fi

mkdir -p "$out_dir"
for b in speaker.test controller.test; do
  ln -sfn "$ver_cache/$b" "$out_dir/$b"
done
echo "$stamp" >"$out_dir/stamp"
log "MetalLB $METALLB_VERSION oracle in $out_dir"
