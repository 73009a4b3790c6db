#!/usr/bin/env bash
# The issue-15 table in one run (docs/performance.md), written under bench/results/ (gitignored):
#   1. bench/loadgen -preset issue15 (unless loadgen flags are given): added latency of non-stream
#      chat at 500 and 1000 req/s, 5 rounds, medians; Switchyard with metrics on and tracing
#      sampled at 1%, the same with observability off and with tracing at 10%; gateway CPU per
#      request; memory per held stream at 5,000 concurrent slow streams; all against the bare
#      httputil.ReverseProxy of the same run. ~6 minutes on 2 quiet cores.
#   2. plan.Build with 10 routes (ns/op, allocs/op), 10 counts: min and median per case.
#   3. MICRO=1: also the relay and dialect micro-benchmarks (3 more minutes).
# Usage: bench/run.sh [loadgen flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
go build -o "$out/loadgen" ./bench/loadgen
[ $# -eq 0 ] && set -- -preset issue15
"$out/loadgen" -json "$@" >"$out/load.json" 2> >(tee "$out/load.txt" >&2)
go test -run '^$' -bench 'BenchmarkBuild' -benchtime 20000x -count 10 ./internal/plan/ >"$out/plan.txt"
echo
echo "plan.Build, 10 routes (ns/op over 10 counts; allocs/op):"
awk '/^BenchmarkBuild/ { n=$1; sub(/-[0-9]+$/, "", n); v[n]=v[n] " " $3; a[n]=$7 }
  END { for (n in v) { c=split(v[n], x, " "); asort(x); printf "  %-45s min %7.0f  median %7.0f  allocs %s\n", n, x[1], x[int((c+1)/2)], a[n] } }' "$out/plan.txt" | sort
if [ -n "${MICRO:-}" ]; then
	go test -run '^$' -bench . -benchtime 2s -count 3 \
		./internal/relay/ ./internal/dialect/openai/ ./internal/dialect/anthropic/ | tee "$out/bench.txt"
fi
echo "results in $out"
