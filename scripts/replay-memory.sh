#!/usr/bin/env bash
# Peak resident memory of replay, measured from outside with /usr/bin/time:
#  1. an observation export of one day against one of fourteen days, same
#     series, same lines and rules as BenchmarkScale's traffic run
#     (replay/testdata/scale-traffic.yaml): the peak must not grow with the
#     file's length;
#  2. the replay of one RIPE RIS update file against bgpdump -m of the same
#     file and against a bare gobgp MRT parse loop (scripts/mrtparse).
#
#   scripts/replay-memory.sh [series [days [ris-file]]]   # series 0: the RIS file only
#
# bgpdump is Debian's (and Ubuntu's) package: apt-get install bgpdump.
# The exports are written compressed (scripts/genexport) to $TMPDIR, and
# replay streams them: 100,000 series take 110 MB (one day) and 1.5 GB
# (fourteen days) of disk, and 3 and 56 minutes on 2 shared cores. The
# default, 1,000 series, takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
series=${1:-1000}
days=${2:-14}
ris=${3:-ingest/bgp/testdata/ris-updates.20160811.1600.gz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/ {print $2}') GiB, $(go version | cut -d' ' -f3)"
go build -o "$tmp/outagewatch" ./cmd/outagewatch
go build -o "$tmp/mrtparse" ./scripts/mrtparse
go build -o "$tmp/genexport" ./scripts/genexport

# peak RSS in KiB of a command, its output discarded
peak() { /usr/bin/time -f '%M %e' -o "$tmp/rss" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }; cut -d' ' -f1 "$tmp/rss"; }
mib() { echo "$1/1024" | bc -l; }

if [ "$series" -gt 0 ]; then # 0 series: the RIS file only
	for d in 1 "$days"; do
		f="$tmp/export-$d.csv.gz"
		"$tmp/genexport" -series "$series" -days "$d" -o "$f"
		kb=$(peak "$tmp/outagewatch" replay --rules replay/testdata/scale-traffic.yaml "$f")
		printf 'replay of a %2d-day export: %9d lines, %6d series, peak RSS %7.1f MiB (%s s)\n' \
			"$d" $((series * 288 * d)) "$series" "$(mib "$kb")" "$(cut -d' ' -f2 "$tmp/rss")"
		eval "rss_$d=$kb"
		rm -f "$f"
	done
	eval "rss_long=\$rss_$days"
	printf '%d-day ÷ 1-day peak RSS: %.2f\n' "$days" "$(echo "$rss_long/$rss_1" | bc -l)"
fi

# the median of five runs: a short run's peak moves by a few MiB with the
# moment the collector starts
median5() { for _ in 1 2 3 4 5; do peak "$@"; done | sort -n | sed -n 3p; }
ow=$(median5 "$tmp/outagewatch" replay "$ris")
idle=$(median5 "$tmp/outagewatch" --help)
bare=$(median5 "$tmp/mrtparse" "$ris")
printf 'replay of %s: peak RSS %.1f MiB (median of 5)\n' "$(basename "$ris")" "$(mib "$ow")"
printf 'outagewatch --help (the binary alone):  %.1f MiB\n' "$(mib "$idle")"
printf 'bare gobgp MRT parse loop:              %.1f MiB (replay ÷ it: %.2f)\n' "$(mib "$bare")" "$(echo "$ow/$bare" | bc -l)"
if command -v bgpdump >/dev/null; then
	bd=$(median5 bgpdump -m "$ris")
	printf 'bgpdump -m:                             %.1f MiB (replay ÷ it: %.2f)\n' "$(mib "$bd")" "$(echo "$ow/$bd" | bc -l)"
else
	echo "bgpdump: not installed (apt-get install bgpdump)"
fi
