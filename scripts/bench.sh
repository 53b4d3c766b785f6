#!/usr/bin/env bash
# The benchmark harness behind the README's performance section. Not part
# of CI. Each line prints the command it ran, so a figure can be re-measured
# on its own. The machine is shared and noisy: compare figures of one run.
#   scripts/bench.sh [benchtime]
set -euo pipefail
cd "$(dirname "$0")/.."
bt=${1:-1s}
run() { echo "== go test $*"; go test "$@" 2>/dev/null | grep -E '^Benchmark' || true; }
run ./pipeline -run '^$' -bench 'Pipeline|BareProto' -benchmem -benchtime "$bt"
run ./ingest/flows -run '^$' -bench . -benchmem -benchtime "$bt" -cpu 1
run ./aggregate -run '^$' -bench 'Observe' -benchmem -benchtime "$bt"
run ./aggregate -run '^$' -bench 'SeriesMemory' -benchtime 1x
run ./detectors -run '^$' -bench . -benchmem -benchtime "$bt"
run ./ingest/dns -run '^$' -bench . -benchmem -benchtime "$bt"
run ./ingest/quality -run '^$' -bench . -benchmem -benchtime "$bt"
run ./quantile -run '^$' -bench . -benchmem -benchtime "$bt"
run ./netmap -run '^$' -bench . -benchmem -benchtime "$bt"
run ./bgp ./ingest/bgp -run '^$' -bench . -benchmem -benchtime "$bt"
run ./service -run '^$' -bench . -benchtime 1x
run ./alerting -run '^$' -bench . -benchmem -benchtime "$bt"
