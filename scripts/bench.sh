#!/usr/bin/env bash
# The benchmark harness behind the README's performance section. Each
# benchmark runs beside its yardstick in the same `go test` run, so the two
# meet the same machine load, and the ratio of the two is what is reported:
# a shared or slower machine moves both figures, not much their ratio.
#   scripts/bench.sh [benchtime [count]]     ratios (defaults: 1s, 3 runs)
#   scripts/bench.sh --all [benchtime]       and every other benchmark, raw
#   BENCH_ONLY=./service scripts/bench.sh    only the pairs of one package
# Ratios are medians of the per-run ratios, higher is better for the
# benchmark; the range shows how much they moved.
# Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
all=0
if [[ ${1:-} == --all ]]; then all=1; shift; fi
bt=${1:-1s}
count=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out bin=$tmp/pkg.test

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(go version | cut -d' ' -f3)"
echo "benchtime $bt, $count alternating runs; medians, and the range of the per-run ratios"
printf '%-44s %16s %16s %7s  %s\n' "benchmark ÷ yardstick" "benchmark" "yardstick" "ratio" "range"

# pair PKG BENCH YARD UNIT [test flags...]: builds the package's test
# binary once, then runs benchmark and yardstick alternately, count times,
# so that a change in the machine's load meets both; prints the median of
# the per-run ratios and their range. UNIT is the metric compared: a rate
# (records/s, higher is better) or ns/op (lower is better; the ratio is
# turned so that higher is better for the benchmark).
pair() {
	local pkg=$1 bench=$2 yard=$3 unit=$4 bmetric=$4 i
	shift 4
	if [[ -n ${BENCH_ONLY:-} && $pkg != "$BENCH_ONLY" ]]; then return 0; fi
	if [[ $unit == steady-records/s ]]; then unit=records/s; fi
	go test -c -o "$bin" "$pkg" || return 1
	: >"$out"
	for ((i = 0; i < count; i++)); do
		for name in "$bench" "$yard"; do
			(cd "$pkg" && "$bin" -test.run '^$' -test.bench "^Benchmark${name}\$" -test.benchtime "$bt" "$@") >>"$out" 2>&1 || {
				echo "FAILED: $pkg Benchmark$name" >&2
				tail -20 "$out" >&2
				return 1
			}
		done
	done
	ratio "$bmetric" "$unit" "" || return 1
	# Benchmarks that also report records per second of processor time
	# (the load of a shared machine moves it less) get a second line.
	if grep "^Benchmark$bench\b" "$out" | grep -q 'records/cpu-s'; then ratio records/cpu-s records/cpu-s ' (cpu)'; fi
}

# ratio BMETRIC YMETRIC SUFFIX: the table line of the runs in $out.
ratio() {
	awk -v b="Benchmark$bench" -v y="Benchmark$yard" -v bm="$1" -v ym="$2" -v label="$pkg $bench ÷ $yard${note:-}$3" '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	function metric(want,   i) { for (i = 3; i < NF; i++) if ($(i+1) == want) return $i; return "" }
	/^Benchmark/ {
		name = $1; sub(/-[0-9]+$/, "", name)
		if (name == b && (v = metric(bm)) != "") bv[++nb] = v
		if (name == y && (v = metric(ym)) != "") yv[++ny] = v
	}
	END {
		if (nb == 0 || ny == 0 || nb != ny) { printf "%-44s %s\n", label, "no figures (did the benchmarks run?)"; exit 1 }
		lo = 1e300; hi = 0
		for (i = 1; i <= nb; i++) {
			r[i] = (ym == "ns/op") ? yv[i] / bv[i] : bv[i] / yv[i]
			if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i]
		}
		B = med(bv, nb); Y = med(yv, ny)
		printf "%-44s %12.4g %-3s %12.4g %-3s %7.2f  %.2f–%.2f\n", label, B, (bm == "ns/op" ? "ns" : "/s"), Y, (ym == "ns/op" ? "ns" : "/s"), med(r, nb), lo, hi
	}' "$out"
}

pair ./pipeline PipelineGoflowProto BareProtoUnmarshal records/s -test.benchmem
pair ./pipeline PipelineGoflowJSON BareProtoUnmarshal records/s -test.benchmem
pair ./ingest/flows ProtoDecode BareProtoUnmarshal ns/op -test.cpu 1
pair ./ingest/flows JSONDecode StdlibJSONUnmarshal ns/op -test.cpu 1
pair ./ingest/dns DnstapDecode DnstapFullUnmarshal ns/op
pair ./ingest/bgp MRTUpdates MRTBareParse records/s
pair ./ingest/bgp RISLive RISLiveStdlibParse ns/op
pair ./quantile Summary/sketch/bucket=1024/add Summary/p2/bucket=1024/add ns/op
pair ./ingest/linefile WholeLines PlainRead ns/op
# The service benchmarks hold a broker and a service each run: one
# iteration a run, flows only (the high-volume stream). The staged
# runtime pays per record and per input partition and bucket, so it runs
# at two densities: the fixture's own (12 flow records per partition and
# 5-minute bucket, the traffic of a link of about a megabit) and the same
# records in a span 1,000 times shorter (10,752 a partition and bucket,
# about one 1 Gb/s link's flow export sampled 1 in 1,000, the rate
# Cloudflare recommends for medium traffic: 125,000 packets/s of 1,000
# bytes give 125 samples/s, some 12,500 a bucket on each of three
# partitions).
bt_saved=$bt
bt=1x
note=" (fixture, 12/part-bucket)" OUTAGEWATCH_BENCH_STREAM=flows pair ./service EndToEnd BareKafkaGo steady-records/s
note=" (1,000× denser)" OUTAGEWATCH_BENCH_SQUEEZE=1000 OUTAGEWATCH_BENCH_STREAM=flows pair ./service EndToEnd BareKafkaGo steady-records/s
# What the end-to-end pair is up against at the fixture's density: the
# pipeline's own work (decode, aggregate, judge) with no Kafka at all, on
# one goroutine, against the same bare reader.
note=" (fixture, no Kafka)" OUTAGEWATCH_BENCH_STREAM=flows pair ./service PipelineOnly BareKafkaGo records/s
bt=$bt_saved

if ((all)); then
	run() { echo "== go test $*"; go test "$@" 2>/dev/null | grep -E '^Benchmark' || true; }
	run ./pipeline -run '^$' -bench 'PipelineDnstap|PipelineQuality' -benchmem -benchtime "$bt"
	run ./aggregate -run '^$' -bench 'Observe' -benchmem -benchtime "$bt"
	run ./aggregate -run '^$' -bench 'SeriesMemory' -benchtime 1x
	run ./detectors -run '^$' -bench . -benchmem -benchtime "$bt"
	run ./ingest/quality -run '^$' -bench . -benchmem -benchtime "$bt"
	run ./netmap -run '^$' -bench . -benchmem -benchtime "$bt"
	run ./ingest/bgp -run '^$' -bench 'RIBLoad|OriginAS' -benchmem -benchtime "$bt"
	run ./bgp -run '^$' -bench . -benchmem -benchtime "$bt"
	run ./alerting -run '^$' -bench . -benchmem -benchtime "$bt"
	# first- against last-day throughput as history fills; sizes from
	# OUTAGEWATCH_SCALE_SERIES (1000) and OUTAGEWATCH_SCALE_DAYS (14); the
	# table at 10k, 100k and 1M series is scripts/scale.sh
	run ./replay -run '^$' -bench Scale -benchtime 1x -timeout 60m
fi
