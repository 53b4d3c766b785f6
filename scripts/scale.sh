#!/usr/bin/env bash
# The scale table: BenchmarkScale (replay/scale_test.go) at each size, one
# process per size, so that each resident-memory figure is that size's own.
# Each run replays `days` days of five-minute values for every series (one
# CSV line per series and bucket) through the whole pipeline, and reports
# the first and the last day's throughput (per second of wall time and per
# second of processor time, which a shared machine's load moves less) and
# the memory per series: the live heap, the resident set after a GC, and
# the peak resident set of the run (from /proc, less what the process held
# before the pipeline).
#   scripts/scale.sh [-r ioda|traffic] [-d days] [-R days] [-m bytes] [series ...]
# Defaults: traffic rules (traffic_drop on a default-format signal), 14
# days, 10000 100000 1000000 series. A run replays series × days × 288
# records: on a shared 2-core machine 10,000 series × 14 days take two
# minutes, 100,000 twenty, 1,000,000 about four hours (one day of them a
# quarter of an hour); pass fewer days for memory alone.
# -R days restores that many days of history through the aggregator's
# checkpoint and replays only the rest: -d 14 -R 13 gives 1,000,000 series
# with two weeks of history in half an hour (figures: the days replayed).
# -m bytes runs under a soft memory limit of that many bytes per series
# above what the process held before (what --memory-limit sets), and
# shows the peak under it. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
rules=traffic days=14 restore= limit=
while getopts r:d:R:m: o; do
	case $o in
	r) rules=$OPTARG ;;
	d) days=$OPTARG ;;
	R) restore=$OPTARG ;;
	m) limit=$OPTARG ;;
	*) echo "usage: $0 [-r ioda|traffic] [-d days] [-R days] [-m bytes] [series ...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
sizes=("$@")
((${#sizes[@]})) || sizes=(10000 100000 1000000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/replay.test" ./replay

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3)"
echo "rules $rules, $days days of 5-minute buckets${restore:+, the first $restore restored from a checkpoint}${limit:+, memory limit $limit bytes a series}"
first=$((${restore:-0} + 1))
printf '%9s %12s %12s %6s %12s %12s %6s %10s %10s %10s %6s\n' series "day $first rec/s" "day $days" ratio "day $first /cpu-s" "day $days" ratio "rss B/ser" "peak B/ser" "heap B/ser" GCs
for n in "${sizes[@]}"; do
	(cd replay && OUTAGEWATCH_SCALE_SERIES=$n OUTAGEWATCH_SCALE_DAYS=$days OUTAGEWATCH_SCALE_RULES=$rules \
		OUTAGEWATCH_SCALE_RESTORE_DAYS=$restore OUTAGEWATCH_SCALE_MEMLIMIT=$limit \
		"$tmp/replay.test" -test.run '^$' -test.bench '^BenchmarkScale$' -test.benchtime 1x -test.timeout 24h) >"$tmp/out" 2>&1 || {
		echo "FAILED at $n series" >&2
		tail -20 "$tmp/out" >&2
		exit 1
	}
	awk -v n="$n" -v d="day$days-records/s" -v dc="day$days-records/cpu-s" '
	function metric(want,   i) { for (i = 3; i < NF; i++) if ($(i+1) == want) return $i; return "?" }
	/^BenchmarkScale/ {
		printf "%9d %12.0f %12.0f %6.2f %12.0f %12.0f %6.2f %10.0f %10.0f %10.0f %6.0f\n", n, metric("day1-records/s"), metric(d), metric("last÷first"),
			metric("day1-records/cpu-s"), metric(dc), metric("cpu-last÷first"),
			metric("rss-bytes/series"), metric("peak-rss-bytes/series"), metric("heap-bytes/series"), metric("gc-cycles")
	}' "$tmp/out"
done
