#!/usr/bin/env bash
# Runs every command the README and docs/ give, as written: those written
# as `go run ./cmd/outagewatch ...` and those written for an installed
# binary (`outagewatch ...`), with one build of the binary standing in for
# both: a command that fails (or runs past two minutes) fails the script.
#   scripts/doc-commands.sh          (CI runs it)
#   scripts/doc-commands.sh REGEX    only the lines matching REGEX
#
# Most run from the repository root as they are. The others need something
# first, which the handler named in `setup` below provides, printing each
# substitution it makes ("with: ...") and what it checks ("checked: ..."):
#   * a Kafka broker: scripts/testkafka, an in-process Kafka (kfake, the
#     real wire protocol) on the loopback port the config names (9092 for
#     the README's minimal config, 9094 for deploy/outagewatch.host.yaml;
#     kafka:9092 becomes 127.0.0.1:9096 or :9097), fed by `outagewatch
#     produce` with the Uganda shutdown; each run of the service on the
#     minimal config gets a broker of its own, so that none starts from
#     another's committed offsets;
#   * commands that serve until stopped run in the background: their page
#     is polled until it shows the incident, /metrics must answer, and
#     SIGTERM must end them with status 0; `run --stage 1` and `--stage 2`
#     run as a pair, the first on port 9311;
#   * outagewatch.yaml is the README's minimal config, map.yaml
#     deploy/map.yaml; /etc/outagewatch/outagewatch.yaml that config with
#     the topics of every stream of the fixture produce writes;
#   * a deployment's paths (/var/lib/outagewatch, /tmp/outagewatch,
#     /tmp/incident.owrec.gz) become paths of this run, in copies of the
#     configs under $tmp;
#   * placeholders are replaced by a real value: ID by a shutdown of the
#     audit log (the Telia dry-run's, cut while its shutdowns are in force),
#     a secret's or password's "..." by a test value, the files `netmap
#     build` reads by the samples of ingest/mapdata/testdata, DIR by
#     ../shared/testdata (the labelled sets, not part of the repository:
#     without it those commands are "not run here").
# Lines that are examples with placeholders of the reader's own (their
# labels file and rules) are listed in `examples` with the reason, printed
# as "eg", and not counted.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
start=$SECONDS
tmp=$(mktemp -d)
bg=() # background processes of this run, stopped at exit
cleanup() {
	for p in "${bg[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
for tool in curl jq; do
	command -v $tool >/dev/null || {
		echo "doc-commands: needs $tool" >&2
		exit 1
	}
done
go build -o "$tmp/outagewatch" ./cmd/outagewatch || exit 1
go build -o "$tmp/testkafka" ./scripts/testkafka || exit 1
ow=$tmp/outagewatch

# Commands that need something first, by pattern, and the function that
# provides it and runs them.
setup=(
	'^run --config outagewatch\.yaml --stage (1|2)$::pair'
	'^run --check -c outagewatch\.yaml$::checkcfg'
	'^(--memory-limit [^ ]+ )?run (-c|--config) ::live'
	'^--memory-limit [^ ]+ replay ::memreplay'
	'^replay ((-c|--config) outagewatch\.yaml )?/tmp/incident\.owrec\.gz$::replayrec'
	'^produce ::produce'
	'^netmap build --out /var/lib/outagewatch/map\.yaml ::netmapbuild'
	'^netmap lookup --map map\.yaml ::lookup'
	'^rules (export|check) /etc/outagewatch/rules::rulesdir'
	'^run --demo::demo'
	'^replay --serve::serve'
	'^record ::record'
	'^actions (list|undo|override) ::audit'
	'^actions serve ::audit'
	'^scoreboard (--data )?DIR::scoreboard'
	'^replay .*DIR/::labelled'
)

note() { echo "      $*"; }
fail() {
	note "$*"
	return 1
}

# kafka PORT starts a broker on 127.0.0.1:PORT (once) and waits until it
# listens.
declare -A kafka_up
kafka() {
	[ -n "${kafka_up[$1]:-}" ] && return 0
	"$tmp/testkafka" -ports "$1" -for 10m >"$tmp/kafka-$1.out" 2>"$tmp/kafka-$1.err" &
	kafka_pid[$1]=$!
	bg+=($!)
	for _ in $(seq 100); do
		if grep -q "^brokers: 127.0.0.1:$1$" "$tmp/kafka-$1.out"; then
			kafka_up[$1]=1
			note "with: an in-process Kafka at 127.0.0.1:$1 (scripts/testkafka)"
			return 0
		fi
		sleep 0.1
	done
	fail "testkafka on port $1 did not start: $(cat "$tmp/kafka-$1.err")"
}

# fresh_kafka PORT starts a new, empty broker on 127.0.0.1:PORT, stopping
# the one there before.
declare -A kafka_pid
fresh_kafka() {
	if [ -n "${kafka_pid[$1]:-}" ]; then
		kill -TERM "${kafka_pid[$1]}" 2>/dev/null
		wait "${kafka_pid[$1]}" 2>/dev/null
		unset "kafka_up[$1]" "kafka_pid[$1]"
		for k in "${!fed_flows[@]}"; do
			[[ $k == "$1/"* ]] && unset "fed_flows[$k]"
		done
	fi
	kafka "$1"
}

# feed PORT FIXTURE plays a bundled incident into the broker at PORT (once)
# and sets fed to the number of records written to its flows topic.
declare -A fed_flows
feed() {
	local key="$1/$2"
	if [ -z "${fed_flows[$key]:-}" ]; then
		"$ow" produce "$2" --brokers "127.0.0.1:$1" >/dev/null 2>"$tmp/produce.err" ||
			fail "produce $2: $(tail -2 "$tmp/produce.err")" || return 1
		fed_flows[$key]=$(sed -n 's/.*msg=produced .* topic\.flows=\([0-9]*\).*/\1/p' "$tmp/produce.err")
		[ -n "${fed_flows[$key]}" ] || fail "produce $2: no flows count in: $(tail -1 "$tmp/produce.err")" || return 1
	fi
	fed=${fed_flows[$key]}
	note "with: outagewatch produce $2 --brokers 127.0.0.1:$1 ($fed flow records)"
}

# replays_shutdown FILE N: replaying the recording FILE reads all N records
# and raises AS20294's traffic alert, the Uganda shutdown.
replays_shutdown() {
	"$ow" replay "$1" >"$tmp/replayed" 2>"$tmp/replayed.err" || fail "replay $1: $(tail -2 "$tmp/replayed.err")" || return 1
	replayed_shutdown "$2" "replay $1: "
}

# replayed_shutdown N [WHAT]: the replay whose output and log are in
# $tmp/replayed and $tmp/replayed.err read all N records and raised
# AS20294's traffic alert; WHAT prefixes a failure.
replayed_shutdown() {
	grep -q ": $1 records read, $1 replayed" "$tmp/replayed.err" ||
		fail "${2:-}want $1 records: $(grep 'records read' "$tmp/replayed.err")" || return 1
	grep -q '"status":"firing","rule":"asn-traffic-drop",.*"entity":"asn:20294"' "$tmp/replayed" ||
		fail "${2:-}no traffic alert for AS20294" || return 1
}

# poll URL SECONDS PATTERN waits until URL answers 200 with a body matching
# the extended regular expression PATTERN; the body is left in $tmp/body.
poll() {
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		if curl -sf -o "$tmp/body" "$1" && grep -Eq "$3" "$tmp/body"; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || fail "exited before $1 showed /$3/: $(tail -3 "$tmp/${bgname:-bg}.err")" || return 1
		sleep 0.5
	done
	fail "$1 did not show /$3/ within $2 s"
}

# launch CMD [DIR [ENV...]] starts a command that serves until stopped, in
# DIR (default the repository), with its output in $tmp/bg.out and .err.
# With bgname set, the output goes to $tmp/$bgname.out and .err instead.
launch() {
	local dir=${2:-$repo} name=${bgname:-bg}
	# env runs the command's own VAR=value too, in the process bash execs.
	(cd "$dir" && exec env "${@:3}" bash -c "exec env $1") >"$tmp/$name.out" 2>"$tmp/$name.err" &
	pid=$!
	bg+=($pid)
	launched+=($pid)
}
launched=() # the processes the current line launched, stopped after it

# stop sends SIGTERM to the launched command and requires status 0 within
# 30 s (the service gives its sinks 10 s to flush: a Slack sink that cannot
# be reached takes them all).
stop() {
	kill -TERM "$pid"
	for _ in $(seq 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		fail "still running 30 s after SIGTERM"
		return 1
	fi
	wait "$pid"
	local code=$?
	[ $code -eq 0 ] || fail "exit $code after SIGTERM" || return 1
	note "checked: SIGTERM ends it with status 0"
}

# metrics URL checks the service's /metrics names its build.
metrics() {
	# (Not curl | grep -q: grep leaving early fails curl, and pipefail the check.)
	curl -sf -o "$tmp/metrics" "$1" && grep -q '^outagewatch_build_info{' "$tmp/metrics" || fail "$1 has no outagewatch_build_info" || return 1
	note "checked: $1 has outagewatch_build_info"
}

# The root for commands whose config names a deployment's paths: copies of
# deploy/ with those paths under $tmp.
root() {
	[ -d "$tmp/root" ] && return 0
	mkdir -p "$tmp/root/deploy" "$tmp/state"
	cp deploy/map.yaml "$tmp/root/deploy/"
	sed "s#/tmp/outagewatch#$tmp/state/host#g" deploy/outagewatch.host.yaml >"$tmp/root/deploy/outagewatch.host.yaml"
	sed "s#/var/lib/outagewatch/actions.jsonl#$tmp/state/actions.jsonl#g" deploy/actions.yaml >"$tmp/root/deploy/actions.yaml"
}

# minimal DIR [PORT] writes the README's minimal config to
# DIR/outagewatch.yaml, with its /var/lib/outagewatch under DIR/state and
# (given PORT) http.listen on 127.0.0.1:PORT, and deploy/map.yaml as
# DIR/map.yaml.
minimal() {
	mkdir -p "$1"
	awk '/<!-- the minimal live config/ { f = 1; next } f && /^```yaml/ { g = 1; next } g && /^```/ { exit } g' README.md |
		sed -e "s#/var/lib/outagewatch#$1/state#g" -e "s#listen: 127.0.0.1:9310#listen: 127.0.0.1:${2:-9310}#" >"$1/outagewatch.yaml"
	grep -q '^kafka:' "$1/outagewatch.yaml" || fail "README: no minimal config block" || return 1
	grep -q "listen: 127.0.0.1:${2:-9310}" "$1/outagewatch.yaml" || fail "README: the minimal config does not listen on 127.0.0.1:9310" || return 1
	cp deploy/map.yaml "$1/map.yaml"
	note "with: $1/outagewatch.yaml, the README's minimal config with /var/lib/outagewatch -> $1/state${2:+, http.listen 127.0.0.1:9310 -> 127.0.0.1:$2}, and beside it map.yaml (deploy/map.yaml)"
}

# run --check -c outagewatch.yaml: the README's minimal config, checked
# where it is written, with its Slack token set; no broker is started,
# for none must be contacted.
checkcfg() {
	local dir=$tmp/checkcfg
	minimal "$dir" || return 1
	(cd "$dir" && SLACK_BOT_TOKEN=xoxb-not-a-token timeout 120 bash -c "$2") >"$tmp/out" 2>&1 || fail "exit $?: $(tail -3 "$tmp/out")" || return 1
	grep -q 'outagewatch.yaml: OK' "$tmp/out" || fail "no OK line: $(tail -2 "$tmp/out")" || return 1
	note "checked: $(grep -c . "$tmp/out") lines, $(grep ': rules: ' "$tmp/out" | sed 's/.*: rules: //')"
}

# serving PORT WANT checks the launched service on 127.0.0.1:PORT: ready,
# every flow record produced consumed (unless a third argument is given
# empty: stage two reads the partials), its metrics, and (unless WANT is
# empty: stage one serves no outages) the page shows WANT.
serving() {
	local base=http://127.0.0.1:$1
	poll $base/readyz 60 '^ok' || return 1
	note "checked: $base/readyz answers ok"
	if [ -n "${3-yes}" ]; then
		local deadline=$((SECONDS + 90)) got=0
		while [ $SECONDS -lt $deadline ]; do
			got=$(curl -sf $base/metrics | sed -n 's/^outagewatch_records_total{topic="flows"} //p')
			[ "${got:-0}" -ge "$fed" ] && break
			sleep 0.5
		done
		[ "${got:-0}" -ge "$fed" ] || fail "consumed ${got:-0} of $fed flow records in 90 s" || return 1
		note "checked: $base/metrics counts $got flow records consumed (at least the $fed produced)"
	fi
	metrics $base/metrics || return 1
	if [ -n "$2" ]; then
		poll $base/ 60 "$2" || return 1
		note "checked: the outage page at $base/ shows $2"
	fi
}

# slack_stopped checks the launched service's Slack posts stopped at the
# proxy.
slack_stopped() {
	local err=$tmp/${bgname:-bg}.err
	if grep 'slack.com' "$err" | grep -qv 'proxyconnect'; then
		fail "the Slack sink reached past the proxy: $(grep slack.com "$err" | grep -v -m1 proxyconnect)"
	elif grep -q 'slack.com' "$err"; then
		note "checked: $(grep -c 'slack.com' "$err") attempts to post to Slack all stopped at the proxy"
	fi
}

nolive=0 # the runs on the minimal config so far, each in a directory of its own
slack_env=(SLACK_BOT_TOKEN=xoxb-not-a-token HTTPS_PROXY=http://127.0.0.1:9)

# run -c outagewatch.yaml (the README's minimal config, also with
# --memory-limit or OUTAGEWATCH_KAFKA_PASSWORD) and run --config
# deploy/outagewatch.host.yaml: the live service on testkafka, until it has
# consumed every record produced, then SIGTERM.
live() {
	local dir port want cmd=$2
	if [[ $1 == *deploy/outagewatch.host.yaml* ]]; then
		root
		dir=$tmp/root port=9094
		note "with: run in $tmp/root, deploy/outagewatch.host.yaml with data_dir /tmp/outagewatch -> $tmp/state/host"
		kafka $port && feed $port uganda-2021-01-13 || return 1
		# The Uganda shutdown, as the live service sees it on its flows:
		# MTN Uganda's traffic alert, on the page.
		want='>AS20294<'
	else
		nolive=$((nolive + 1))
		dir=$tmp/live$nolive port=9092
		minimal "$dir" || return 1
		note "with: run in $dir"
		note "with: SLACK_BOT_TOKEN=xoxb-not-a-token and HTTPS_PROXY=http://127.0.0.1:9 (nothing reaches Slack)"
		if [[ $cmd == OUTAGEWATCH_KAFKA_PASSWORD=...* ]]; then
			cmd=${cmd/OUTAGEWATCH_KAFKA_PASSWORD=.../OUTAGEWATCH_KAFKA_PASSWORD=doc-commands-password}
			note "with: OUTAGEWATCH_KAFKA_PASSWORD=doc-commands-password, unused: the minimal config has no kafka.sasl (testkafka has no SASL; the tests run SASL against kfake)"
		fi
		# The Uganda shutdown: the page lists MTN Uganda's outage; its
		# pages to Slack stop at the proxy.
		fresh_kafka $port && feed $port uganda-2021-01-13 || return 1
		want='>AS20294<'
	fi
	launch "$cmd" "$dir" "${slack_env[@]}"
	serving 9310 "$want" || return 1
	if [[ $1 =~ ^--memory-limit\ ([0-9]+)GiB ]]; then
		local lim want=$((BASH_REMATCH[1] << 30))
		lim=$(curl -sf http://127.0.0.1:9310/metrics | sed -n 's/^go_gc_gomemlimit_bytes //p')
		awk -v l="${lim:-0}" -v w="$want" 'BEGIN { exit !(l + 0 == w) }' ||
			fail "/metrics go_gc_gomemlimit_bytes ${lim:-absent}, want $want" || return 1
		note "checked: /metrics go_gc_gomemlimit_bytes $lim, the ${BASH_REMATCH[1]} GiB asked for"
	fi
	stop || return 1
	slack_stopped
}

# run --config outagewatch.yaml --stage 1 and --stage 2: the two run as a
# pair (stage one on port 9311, as two processes on one host must), which
# consumes the flows and shows the outage. The pair runs once, for the
# first of the two lines; the second reports that run.
pair_done="" pair_code=0
pair() {
	if [ -n "$pair_done" ]; then
		note "ran as a pair with the $pair_done line above (the same two processes): its checks are this line's"
		return $pair_code
	fi
	pair_done=$1
	local other one two
	if [[ $1 == *"--stage 1" ]]; then
		one=$2 two=${2/%--stage 1/--stage 2}
	else
		two=$2 one=${2/%--stage 2/--stage 1}
	fi
	note "with: ${one#$tmp/} and ${two#$tmp/} at once, two processes"
	fresh_kafka 9092 && feed 9092 uganda-2021-01-13 || { pair_code=1; return 1; }
	minimal "$tmp/stage1" 9311 && minimal "$tmp/stage2" || { pair_code=1; return 1; }
	note "with: stage one run in $tmp/stage1, stage two in $tmp/stage2"
	note "with: SLACK_BOT_TOKEN=xoxb-not-a-token and HTTPS_PROXY=http://127.0.0.1:9 (nothing reaches Slack)"
	local p1 p2
	bgname=stage2 launch "$two" "$tmp/stage2" "${slack_env[@]}"
	p2=$pid
	bgname=stage1 launch "$one" "$tmp/stage1" "${slack_env[@]}"
	p1=$pid
	pair_code=1
	note "stage one (port 9311):"
	pid=$p1 bgname=stage1 serving 9311 "" || return 1
	note "stage two (port 9310):"
	pid=$p2 bgname=stage2 serving 9310 '>AS20294<' "" || return 1
	note "stage one, then stage two:"
	pid=$p1 stop || return 1
	pid=$p2 stop || return 1
	bgname=stage2 slack_stopped || return 1
	pair_code=0
}

# run --demo: until its printed page lists the Uganda shutdown.
demo() {
	launch "$2"
	local deadline=$((SECONDS + 30)) url=""
	while [ -z "$url" ] && [ $SECONDS -lt $deadline ]; do
		url=$(sed -n 's/.* open \(http:[^ ;]*\/\).*/\1/p' "$tmp/bg.err" | head -1)
		[ -n "$url" ] || sleep 0.2
	done
	[ -n "$url" ] || fail "no page printed in 30 s: $(tail -2 "$tmp/bg.err")" || return 1
	poll "$url" 120 '>Uganda</a>' || return 1
	note "checked: $url lists the Uganda incident"
	metrics "${url}metrics" && stop
}

# replay --serve ADDR iberia-2025-04-28: until its page lists Spain and
# Portugal.
serve() {
	local addr
	addr=$(sed -n 's/.*--serve \([^ ]*\).*/\1/p' <<<"$1")
	launch "$2"
	poll "http://$addr/" 60 '>Spain</a>' && grep -q '>Portugal</a>' "$tmp/body" ||
		fail "http://$addr/ lacks Spain or Portugal" || return 1
	note "checked: http://$addr/ lists the Spain and Portugal incidents"
	metrics "http://$addr/metrics" && stop
}

# record --config deploy/outagewatch.host.yaml --topic flows --out FILE:
# every record produced is in FILE, and replaying it finds the shutdown.
record() {
	local out dir cmd=$2
	out=$(sed -n 's/.*--out \([^ ]*\).*/\1/p' <<<"$1")
	if [[ $1 == *"--config outagewatch.yaml "* ]]; then
		dir=$tmp/rec
		minimal "$dir" || return 1
		note "with: run in $dir"
		kafka 9092 && feed 9092 uganda-2021-01-13 || return 1
		cmd=${cmd//$out/$tmp/incident.owrec.gz}
		note "with: --out $out -> $tmp/incident.owrec.gz"
		out=$tmp/incident.owrec.gz
	else
		root
		dir=$tmp/root
		kafka 9094 && feed 9094 uganda-2021-01-13 || return 1
		note "with: run in $tmp/root (deploy/outagewatch.host.yaml's brokers: localhost:9094)"
	fi
	rm -f "$out"
	(cd "$dir" && timeout 120 bash -c "$cmd") >"$tmp/out" 2>&1 || fail "exit $?: $(tail -3 "$tmp/out")" || return 1
	[ -s "$out" ] || fail "$out is empty" || return 1
	replays_shutdown "$out" "$fed" || return 1
	note "checked: outagewatch replay $out reads all $fed records and raises AS20294's traffic alert"
}

# replay [-c outagewatch.yaml] /tmp/incident.owrec.gz: the recording
# `outagewatch record --config outagewatch.yaml --topic flows --out
# /tmp/incident.owrec.gz` made, here $tmp/incident.owrec.gz, replayed
# beside the config that recorded it.
replayrec() {
	recording || return 1
	local cmd=${2//\/tmp\/incident.owrec.gz/$rec}
	note "with: /tmp/incident.owrec.gz -> $rec, run in $tmp/rec"
	(cd "$tmp/rec" && timeout 120 bash -c "$cmd") >"$tmp/replayed" 2>"$tmp/replayed.err" || fail "exit $?: $(tail -3 "$tmp/replayed.err")" || return 1
	replayed_shutdown "$rec_n" || return 1
	note "checked: it reads all $rec_n records and raises AS20294's traffic alert"
}

# recording sets rec to $tmp/incident.owrec.gz, made (once) by the
# documented `outagewatch record --config outagewatch.yaml --topic flows
# --out /tmp/incident.owrec.gz` with that path, and rec_n to its records.
rec=$tmp/incident.owrec.gz rec_n=""
recording() {
	if [ -z "$rec_n" ]; then
		local dir=$tmp/rec
		minimal "$dir" >/dev/null || return 1
		kafka 9092 && feed 9092 uganda-2021-01-13 >/dev/null || return 1
		(cd "$dir" && timeout 120 "$ow" record --config outagewatch.yaml --topic flows --out "$rec") >"$tmp/rec.out" 2>&1 ||
			fail "record: $(tail -3 "$tmp/rec.out")" || return 1
		rec_n=$fed
	fi
	note "with: the recording $rec ($rec_n flow records of the Uganda shutdown, produced to 127.0.0.1:9092), written by: outagewatch record --config outagewatch.yaml --topic flows --out $rec"
}

# produce FIXTURE|FILE --brokers kafka:9092 [--speed N]: kafka:9092 is a
# broker of its own; what it holds is read back.
produce() {
	local port=9096 cmd=$2
	if [[ $1 == "produce incident.owrec "* ]]; then
		port=9097
		recording || return 1
		cmd=${cmd/ incident.owrec / $rec }
		note "with: incident.owrec -> $rec"
	fi
	local rb=(--brokers 127.0.0.1:$port --topic flows --stream flows --format goflow2-pb)
	if [[ $1 == *" --config /etc/outagewatch/outagewatch.yaml"* ]]; then
		# The config of a deployment that binds every stream of the
		# fixture (produce stops at one it has no topic for).
		port=9098
		minimal "$tmp/etc" || return 1
		sed -i -e "s#brokers: \[localhost:9092\]#brokers: [127.0.0.1:$port]#" \
			-e 's#^    - {name: flows, stream: flows, format: goflow2-pb}#&\n    - {name: bgp, stream: bgp, format: rislive}\n    - {name: dns, stream: dns, format: dnstap}\n    - {name: quality, stream: quality, format: quality-json}#' "$tmp/etc/outagewatch.yaml"
		grep -q "brokers: \[127.0.0.1:$port\]" "$tmp/etc/outagewatch.yaml" && grep -q 'name: dns, stream: dns' "$tmp/etc/outagewatch.yaml" ||
			fail "the minimal config's brokers or flows topic changed" || return 1
		cmd=${cmd//\/etc\/outagewatch\/outagewatch.yaml/$tmp/etc/outagewatch.yaml}
		note "with: /etc/outagewatch/outagewatch.yaml -> $tmp/etc/outagewatch.yaml, that config with brokers [127.0.0.1:$port] and deploy/outagewatch.yaml's commented topics of bgp, dns and quality"
		rb=(--config "$tmp/etc/outagewatch.yaml" --topic flows)
	else
		cmd=${cmd/--brokers kafka:9092/--brokers 127.0.0.1:$port}
		note "with: kafka:9092 -> 127.0.0.1:$port"
	fi
	kafka $port || return 1
	if [[ $1 == *" --speed "* ]]; then
		# Paced: it is still writing after 8 s (at 60 times real time the
		# recording's days take hours); SIGTERM stops it, status 0, and it
		# says what it wrote.
		bgname=produce launch "$cmd"
		sleep 8
		kill -0 "$pid" 2>/dev/null || fail "ended within 8 s: $(tail -2 "$tmp/produce.err")" || return 1
		note "checked: still writing after 8 s, as --speed 60 paces it"
		stop || return 1
		local n
		n=$(sed -n 's/.*msg=produced .* topic\.flows=\([0-9]*\).*/\1/p' "$tmp/produce.err")
		[ "${n:-0}" -gt 0 ] && [ "$n" -lt "$rec_n" ] || fail "wrote ${n:-no} of the $rec_n flow records in 8 s: $(tail -1 "$tmp/produce.err")" || return 1
		note "checked: it wrote $n of the $rec_n flow records, then stopped"
		return 0
	fi
	timeout 120 bash -c "$cmd" >"$tmp/out" 2>&1 || fail "exit $?: $(tail -3 "$tmp/out")" || return 1
	local n
	n=$(sed -n 's/.*msg=produced .* topic\.flows=\([0-9]*\).*/\1/p' "$tmp/out")
	[ "${n:-0}" -gt 0 ] || fail "no flows count in: $(tail -1 "$tmp/out")" || return 1
	if [[ $1 == *" --config "* ]]; then
		grep -Eq 'topic\.bgp=[1-9].* topic\.dns=[1-9]' "$tmp/out" || fail "no bgp or dns records: $(tail -1 "$tmp/out")" || return 1
		note "checked: it wrote $(grep -o 'topic\.bgp=[0-9]* topic\.dns=[0-9]* topic\.flows=[0-9]*' "$tmp/out") to the config's topics"
	fi
	"$ow" record "${rb[@]}" --out "$tmp/produced.owrec.gz" >"$tmp/out" 2>&1 || fail "record it back: $(tail -2 "$tmp/out")" || return 1
	replays_shutdown "$tmp/produced.owrec.gz" "$n" || return 1
	note "checked: the flows topic holds the $n records it says it wrote; replayed (outagewatch record ${rb[*]}, then replay) they raise AS20294's traffic alert"
}

# netmap build --out /var/lib/outagewatch/map.yaml FORMAT:FILE...: the
# files operators download are replaced by the repository's samples of
# each (ingest/mapdata/testdata, listed in its SOURCES.md).
netmapbuild() {
	local d=ingest/mapdata/testdata cmd=$2 f to
	mkdir -p "$tmp/var"
	cmd=${cmd//\/var\/lib\/outagewatch/$tmp/var}
	note "with: /var/lib/outagewatch -> $tmp/var"
	for f in delegated-afrinic-extended-latest:delegated-afrinic-extended-20240105.gz \
		delegated-ripencc-extended-latest:delegated-ripencc-20140630.head1500.txt \
		asn.txt:potaroo-asn.txt.head4000 ipasn_20240101.dat:ipasn_20140513.head8000.dat \
		GeoLite2-City.mmdb:GeoIP2-City-Test.mmdb; do
		to=$d/${f#*:}
		[[ $cmd == *":${f%%:*}"* ]] || fail "the command no longer reads ${f%%:*}" || return 1
		cmd=${cmd/:${f%%:*}/:$to}
		note "with: ${f%%:*} -> $to"
	done
	timeout 120 bash -c "$cmd" >"$tmp/out" 2>&1 || fail "exit $?: $(tail -3 "$tmp/out")" || return 1
	grep -q 'msg="netmap written".* asns=[1-9]' "$tmp/out" || fail "no map written: $(tail -1 "$tmp/out")" || return 1
	"$ow" netmap lookup --map "$tmp/var/map.yaml" 41.210.130.1 >"$tmp/lookup" 2>&1 || fail "lookup in it: $(tail -2 "$tmp/lookup")" || return 1
	grep -q 'country UG' "$tmp/lookup" || fail "the map it wrote does not place 41.210.130.1 in Uganda: $(cat "$tmp/lookup")" || return 1
	note "checked: $(sed -n 's/.*msg="netmap written" file=[^ ]* //p' "$tmp/out"); in it 41.210.130.1 is in UG (AFRINIC's delegation)"
}

# rules export|check /etc/outagewatch/rules: the operator's rules
# directory is a fresh one of this run's (written by export first for a
# check), and what export wrote must check.
rulesdir() {
	local cmd=${2//\/etc\/outagewatch\/rules/$tmp/rules}
	note "with: /etc/outagewatch/rules -> $tmp/rules"
	rm -rf "$tmp/rules"
	if [[ $cmd == *" rules check "* ]]; then
		"$ow" rules export "$tmp/rules" >/dev/null 2>&1 || fail "rules export failed" || return 1
	fi
	timeout 120 bash -c "$cmd" >"$tmp/out" 2>&1 || fail "exit $?: $(tail -3 "$tmp/out")" || return 1
	"$ow" rules check "$tmp/rules" >"$tmp/rules.check" 2>&1 || fail "the exported rules do not check: $(tail -2 "$tmp/rules.check")" || return 1
	note "checked: $(head -1 "$tmp/rules.check")"
}

# netmap lookup --map map.yaml ...: map.yaml is deploy/map.yaml.
lookup() {
	local cmd=${2/--map map.yaml/--map deploy/map.yaml}
	note "with: map.yaml -> deploy/map.yaml"
	timeout 120 bash -c "$cmd" >"$tmp/out" 2>&1 || fail "exit $?: $(tail -3 "$tmp/out")" || return 1
	grep -q '^41\.210\.130\.1	' "$tmp/out" && grep -q '^asn:20294	.*AS20294' "$tmp/out" && grep -q '^country:ES	Spain$' "$tmp/out" ||
		fail "want an answer for each of 41.210.130.1, asn:20294 and country:ES (Spain): $(tr '\n' ';' <"$tmp/out")" || return 1
	note "checked: it answers for 41.210.130.1, asn:20294 (AS20294) and country:ES (Spain)"
}

# --memory-limit 75% replay --rules examples/ioda/ioda.yaml EXPORT: the
# replay raises Uganda's alert, and (the same command with -v) the limit is
# set.
memreplay() {
	timeout 120 bash -c "$2" >"$tmp/out" 2>"$tmp/out.err" || fail "exit $?: $(tail -3 "$tmp/out.err")" || return 1
	grep -q '"status":"firing",.*"entity":"country:UG"' "$tmp/out" || fail "no firing alert for country:UG" || return 1
	note "checked: it raises an alert for country:UG"
	local v=${2/ --memory-limit/ -v --memory-limit}
	timeout 120 bash -c "$v" >/dev/null 2>"$tmp/out.err"
	grep -q 'msg="memory limit" from=--memory-limit bytes=[1-9]' "$tmp/out.err" || fail "with -v: no memory limit logged" || return 1
	note "checked: with -v it logs $(grep -o 'msg="memory limit".*' "$tmp/out.err")"
}

# actions list, undo and override on the audit log of the Telia dry-run,
# cut at 2019-06-20T12:30Z: its three shutdowns of 12:15 are still in force.
audit() {
	root
	local log=$tmp/state/actions.jsonl id
	if [ ! -s "$log" ]; then
		(cd "$tmp/root" && "$ow" replay "$repo/fixtures/telia-2019-06-20.yaml" 2>/dev/null |
			jq -c 'select(.at < "2019-06-20T12:30:00Z")' | "$ow" actions replay --audit "$log" >/dev/null 2>&1) ||
			fail "the Telia dry-run did not write $log" || return 1
		ln -s "$log" "$tmp/root/actions.jsonl"
	fi
	note "with: run in $tmp/root; audit log $log (deploy/actions.yaml's /var/lib/outagewatch/actions.jsonl, and actions.jsonl here),"
	note "      written by: outagewatch replay fixtures/telia-2019-06-20.yaml | jq 'select(.at < \"2019-06-20T12:30:00Z\")' | outagewatch actions replay --audit $log"
	local cmd=${2//\/var\/lib\/outagewatch\/actions.jsonl/$log}
	if [[ $1 == "actions serve "* ]]; then
		# The live actuator, until stopped: it serves the audit log.
		cmd=${cmd/OUTAGEWATCH_WEBHOOK_SECRET=.../OUTAGEWATCH_WEBHOOK_SECRET=doc-commands-secret}
		note "with: OUTAGEWATCH_WEBHOOK_SECRET=doc-commands-secret"
		launch "$cmd" "$tmp/root"
		poll http://127.0.0.1:9320/readyz 30 '^ready' || return 1
		note "checked: /readyz answers ready"
		local n got
		n=$(wc -l <"$log")
		poll http://127.0.0.1:9320/api/v1/actions 10 '"op":"shutdown"' || return 1
		got=$(jq -c 'select(.id)' "$tmp/body" | wc -l)
		[ "$got" -eq "$n" ] || fail "/api/v1/actions has $got records, the audit log $n" || return 1
		note "checked: /api/v1/actions serves the audit log's $n records"
		metrics http://127.0.0.1:9320/metrics && stop
		return
	fi
	if [[ $1 == *" undo ID "* ]]; then
		id=$("$ow" actions list --json --audit "$log" | jq -r 'select(.op == "shutdown" and (.undo // "") != "") | .id' | tail -1)
		[ -n "$id" ] || fail "no shutdown in force to undo" || return 1
		cmd=${cmd/ undo ID / undo $id }
		note "with: ID=$id, the last shutdown in force"
	fi
	(cd "$tmp/root" && timeout 120 bash -c "$cmd") >"$tmp/out" 2>&1 || fail "exit $?: $(tail -3 "$tmp/out")" || return 1
	"$ow" actions list --json --audit "$log" >"$tmp/list.json" || return 1
	case $1 in
	*" list "*)
		local n
		n=$(grep -c ' outagewatch actions undo ' "$tmp/out")
		[ "$n" -ge 1 ] || fail "lists no undo for a shutdown in force" || return 1
		note "checked: it lists $n shutdowns in force, each with its undo"
		;;
	*" undo "*)
		jq -e --arg id "$id" 'select(.op == "restore" and .of == $id and .who == "alice" and .why == "undone by hand")' "$tmp/list.json" >/dev/null ||
			fail "the audit log has no restore of $id by alice" || return 1
		note "checked: the audit log holds alice's restore of $id"
		;;
	*" override "*)
		jq -e 'select(.op == "override" and .site == "ams01" and .asn == 1299 and .keep == "up" and .who == "alice")' "$tmp/list.json" >/dev/null ||
			fail "the audit log has no override of AS1299 at ams01 by alice" || return 1
		! jq -e 'select(.op == "shutdown" and .site == "ams01" and (.undo // "") != "")' "$tmp/list.json" >/dev/null ||
			fail "AS1299 at ams01 is still shut after override up" || return 1
		note "checked: the audit log holds alice's override up, and no shutdown at ams01 is left in force"
		;;
	esac
	note "(deploy/actions.yaml is dry-run: its shutdowns, undo and override change no session, so gobgpd at gobgp:50051 is dialled lazily and never called)"
}

# ondata LINE: runs a documented line with DIR the labelled sets'
# directory (../shared/testdata, beside the clone), its output in
# $tmp/out and its log in $tmp/err; 2 (not run) where there is none.
ondata() {
	local data=../shared/testdata
	if [ ! -d "$data" ]; then
		note "not run here: no $data (the labelled sets' directory)"
		return 2
	fi
	note "with: DIR=$data"
	(timeout 120 bash -c "${1//DIR/$data}") >"$tmp/out" 2>"$tmp/err" || fail "exit $?: $(tail -3 "$tmp/err")"
}

# scoreboard --data DIR, or DIR/...: the board must score the sets the
# line names.
scoreboard() {
	ondata "$2" || return
	# A line that names its sets must score them; one that names none
	# scores every set, Gaza's among them; IODA's exports given bare are
	# rows named for their files, Atlas traces one row.
	local want=ioda-gaza-2023
	if [[ $2 =~ scoreboard/([a-z0-9-]+)\.yaml ]]; then want=${BASH_REMATCH[1]}; fi
	if [[ $2 =~ DIR/ioda-labelled/ ]]; then want=ioda_region_1226_gazastrip; fi
	if [[ $2 =~ DIR/atlas-rtt-labelled/ ]]; then want=atlas-rtt; fi
	grep -qw "$want" "$tmp/out" || fail "no $want in its output" || return 1
	note "checked: the board scores $want"
}

# labelled: a replay of one of the labelled sets' files as it comes; it
# must raise alerts.
labelled() {
	ondata "$2" || return
	grep -q '"kind":"alert"' "$tmp/out" || fail "no alert in its output" || return 1
	note "checked: $(grep -c '"kind":"alert"' "$tmp/out") alert lines"
}

# Lines that are examples with placeholders, each with the reason it
# cannot run as it is: listed, not counted among the commands.
examples=(
	'^score --labels labels\.yaml (--map map\.yaml --local-asn 64500|-c outagewatch\.yaml)( |$)::docs/real-data.md: labels.yaml is the labels file the reader writes for a recording of their own network (step 2), map.yaml, AS64500, outagewatch.yaml and my-rules/ theirs; the bundled sets are scored by the score lines above'
)

pass=0 fail=0 skipped=0 eg=0
declare -A passed # the commands that passed, by the line they came from
only=${1:-}
while IFS= read -r line; do
	[ -z "$only" ] || [[ $line =~ $only ]] || continue
	[[ $line =~ ^(([A-Z_]+=[^ ]* )*)(go run \./cmd/)?outagewatch( (.*))?$ ]]
	args=${BASH_REMATCH[5]}
	if [[ $line == *"go run ./cmd/outagewatch"* ]]; then
		cmd=${line//go run .\/cmd\/outagewatch/$ow}
	else
		cmd="${BASH_REMATCH[1]}$ow $args"
	fi
	fn="" t0=$SECONDS
	for e in "${examples[@]}"; do
		if [[ $args =~ ${e%%::*} ]]; then
			fn=example
			eg=$((eg + 1))
			echo "eg    $line"
			note "an example, not run: ${e#*::}"
			break
		fi
	done
	[ "$fn" = example ] && continue
	if [ -n "${passed[$cmd]:-}" ]; then
		# The binary stands in for go run and for an installed
		# outagewatch alike: the same command, run once.
		pass=$((pass + 1))
		echo "ok    $line"
		note "the same command as \`${passed[$cmd]}\` above, which passed"
		continue
	fi
	for s in "${setup[@]}"; do
		if [[ $args =~ ${s%%::*} ]]; then
			fn=${s#*::}
			break
		fi
	done
	if [ -n "$fn" ]; then
		# A handler returns 2 when what it needs is not here.
		$fn "$args" "$cmd" </dev/null >"$tmp/notes" 2>&1
		code=$?
		# What a failed check left running is stopped, so that it holds
		# no port or partition of the next line.
		for p in "${launched[@]}"; do
			kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
		done
		launched=()
		[ $code -eq 2 ] && code=skip
	else
		: >"$tmp/notes"
		timeout 120 bash -c "set -o pipefail; $cmd" </dev/null >"$tmp/out" 2>&1
		code=$?
		[ $code -eq 0 ] || tail -5 "$tmp/out" | sed 's/^/      /' >"$tmp/notes"
	fi
	case $code in
	0)
		pass=$((pass + 1))
		passed[$cmd]=$line
		echo "ok    $line  ($((SECONDS - t0)) s)"
		;;
	skip)
		skipped=$((skipped + 1))
		echo "skip  $line"
		;;
	*)
		fail=$((fail + 1))
		echo "FAIL  $line  (exit $code)"
		;;
	esac
	cat "$tmp/notes"
done < <(
	# Indented lines (four spaces or more: list items indent further)
	# starting with go run ./cmd/outagewatch, then those starting with
	# outagewatch (after any VAR=value), continuations joined, comments
	# (" # ...") dropped.
	for run in 'go run [.]/cmd/outagewatch' 'outagewatch'; do
		for f in README.md docs/*.md; do
			awk -v run="$run" '
				/^    / { l = $0; sub(/^ +/, "", l)
					while (l ~ /\\$/ && (getline nx) > 0) { sub(/\\$/, "", l); sub(/^ +/, "", nx); l = l " " nx }
					if (l ~ "^(\\$ )?([A-Z_]+=[^ ]* )*" run "( |$)") { sub(/^\$ /, "", l); sub(/ +# .*$/, "", l); print l } }' "$f"
		done | sort -u
	done
)
echo "in $((SECONDS - start)) s"
echo "examples with placeholders, listed above and not run: $eg"
echo "documented commands: $pass passed, $fail failed, $skipped not run here"
[ "$fail" -eq 0 ]
