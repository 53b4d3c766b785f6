#!/usr/bin/env bash
# Peak resident memory of replay, measured from outside with /usr/bin/time:
#  1. an observation export of one day against one of fourteen days, same
#     series (the peak must not grow with the file's length);
#  2. the replay of one RIPE RIS update file against bgpdump -m of the same
#     file (apt-get install bgpdump) and against a bare gobgp MRT parse loop.
#   scripts/replay-memory.sh [series] [ris-file]
set -euo pipefail
cd "$(dirname "$0")/.."
series=${1:-1000}
ris=${2:-ingest/bgp/testdata/ris-updates.20160811.1600.gz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
go build -o "$tmp/outagewatch" ./cmd/outagewatch
go build -o "$tmp/mrtparse" ./scripts/mrtparse

# peak RSS in KiB of a command, its output discarded
peak() { /usr/bin/time -f '%M' -o "$tmp/rss" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }; cat "$tmp/rss"; }

# time,entity,signal,value every 5 minutes for $series networks
gen() {
	awk -v days="$1" -v n="$series" 'BEGIN {
		print "time,entity,signal,value"
		t0 = 1700000000 - 1700000000 % 86400
		for (i = 0; i < days * 288; i++)
			for (s = 0; s < n; s++)
				printf "%d,asn:%d,bgp_visible_slash24,%d\n", t0 + i * 300, 64512 + s, 1000 + (i * 7 + s) % 13
	}' >"$2"
}
gen 1 "$tmp/short.csv"
gen 14 "$tmp/long.csv"
for f in short long; do
	lines=$(($(wc -l <"$tmp/$f.csv") - 1))
	kb=$(peak "$tmp/outagewatch" replay --rules examples/ioda/ioda.yaml "$tmp/$f.csv")
	printf 'replay %-5s export: %9d lines, %5d series, peak RSS %6.1f MiB\n' "$f" "$lines" "$series" "$(echo "$kb/1024" | bc -l)"
	eval "rss_$f=$kb"
done
printf 'long ÷ short peak RSS: %.2f\n' "$(echo "$rss_long/$rss_short" | bc -l)"

ow=$(peak "$tmp/outagewatch" replay "$ris")
bare=$(peak "$tmp/mrtparse" "$ris")
printf 'replay of %s: peak RSS %.1f MiB\n' "$(basename "$ris")" "$(echo "$ow/1024" | bc -l)"
printf 'bare gobgp MRT parse loop:            %.1f MiB (ratio %.2f)\n' "$(echo "$bare/1024" | bc -l)" "$(echo "$ow/$bare" | bc -l)"
if command -v bgpdump >/dev/null; then
	bd=$(peak bgpdump -m "$ris")
	printf 'bgpdump -m:                           %.1f MiB (ratio %.2f)\n' "$(echo "$bd/1024" | bc -l)" "$(echo "$ow/$bd" | bc -l)"
else
	echo "bgpdump: not installed (apt-get install bgpdump)"
fi
