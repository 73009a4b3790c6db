#!/usr/bin/env bash
# Runs the load harness and the pass-through benchmarks, writing everything under bench/results/
# (gitignored). Usage: bench/run.sh [loadgen flags...], e.g. bench/run.sh -duration 10s -rounds 5
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
go build -o "$out/loadgen" ./bench/loadgen
"$out/loadgen" -json "$@" >"$out/load.json" 2> >(tee "$out/load.txt" >&2)
go test -run '^$' -bench . -benchtime 2s -count 3 \
	./internal/relay/ ./internal/dialect/openai/ ./internal/dialect/anthropic/ | tee "$out/bench.txt"
echo "results in $out"
