#!/usr/bin/env bash
# Regenerates cmd/hcasim/default.pgo: the CPU profile Go's compiler uses to
# optimise the hcasim binary (go build, go run and go install pick it up by
# itself; -pgo=off builds without it). The profile is the benchmark suite
# and the shipped NDR sweep, so what it speeds up is what users run. Rerun
# after large changes to the model's hot paths (a stale profile still
# builds correctly, only less well); docs/performance.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -pgo=off -o "$tmp/hcasim" ./cmd/hcasim
run() { # name, args...
  local name=$1
  shift
  "$tmp/hcasim" "$@" --quiet --format json --cpuprofile "$tmp/$name.prof" >/dev/null
}
for b in fattree64-uniform-30 fattree64-uniform-80 switch16-uniform-50 switch16-uniform-90 b2b-ndr-write-bw; do
  run "$b" -config "configs/bench/$b.yaml"
done
run fattree1024 -config configs/bench/fattree1024-permutation.yaml --set workload.measure_ns=10000
run ndr -config configs/ndr.yaml --out "$tmp/ndr-out"
go tool pprof -proto "$tmp"/*.prof >cmd/hcasim/default.pgo
echo "wrote cmd/hcasim/default.pgo ($(wc -c <cmd/hcasim/default.pgo) bytes)"
