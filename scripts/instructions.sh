#!/usr/bin/env bash
# Compares two hcasim binaries by the instructions they execute on one run,
# counted by Valgrind (cachegrind without its cache model): an exact figure
# where timing on a shared machine cannot resolve a few per cent. Also
# checks that both give the same results (JSON, all but wall_s).
#
#   scripts/instructions.sh OLD NEW [hcasim run args]
#   scripts/instructions.sh /tmp/hcasim-old ./hcasim -config bench/fattree64-uniform-30.yaml --set workload.measure_ns=50000
#
# Go's runtime now and then executes an instruction Valgrind rejects
# (RDTSCP); a run that dies of it is retried.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,9p "$0" >&2; exit 2; }
old=$1 new=$2
shift 2
[ $# -gt 0 ] || set -- -config bench/fattree64-uniform-30.yaml --set workload.measure_ns=50000
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # bin tag run-args... -> prints the instructions executed
  local bin=$1 tag=$2 ir
  shift 2
  for _ in 1 2 3 4 5; do
    if GOGC=off GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
      "$bin" "$@" --quiet --format json >"$tmp/$tag.json" 2>"$tmp/$tag.err" &&
      ir=$(grep -o 'I *refs: *[0-9,]*' "$tmp/$tag.err" | tr -dc 0-9) && [ -n "$ir" ]; then
      echo "$ir"
      return
    fi
  done
  echo "instructions.sh: $bin failed under valgrind: $(tail -n 3 "$tmp/$tag.err")" >&2
  exit 1
}
a=$(count "$old" old "$@")
b=$(count "$new" new "$@")
echo "old $a  new $b  change $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%+.2f %%", 100 * (b - a) / a }')"
if cmp -s <(grep -v '"wall_s"' "$tmp/old.json") <(grep -v '"wall_s"' "$tmp/new.json"); then
  echo "results identical"
else
  echo "RESULTS DIFFER"
  exit 1
fi
