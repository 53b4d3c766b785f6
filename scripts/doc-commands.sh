#!/usr/bin/env bash
# Runs every command the README and docs/ give as `go run ./cmd/outagewatch
# ...`, as written, with one build of the binary standing in for `go run`:
# a command that fails (or runs past two minutes) fails the script.
#   scripts/doc-commands.sh          (CI runs it)
#
# Most run from the repository root as they are. The others need something
# first, which the handler named in `setup` below provides, printing each
# substitution it makes ("with: ...") and what it checks ("checked: ..."):
#   * a Kafka broker: scripts/testkafka, an in-process Kafka (kfake, the
#     real wire protocol) on the loopback port the config names (9092 for
#     the README's minimal config, 9094 for deploy/outagewatch.host.yaml),
#     fed by `outagewatch produce` with the Uganda shutdown;
#   * commands that serve until stopped run in the background: their page
#     is polled until it shows the incident, /metrics must answer, and
#     SIGTERM must end them with status 0;
#   * a deployment's paths (/var/lib/outagewatch, /tmp/outagewatch) become
#     directories of this run, in copies of the configs under $tmp/root;
#   * placeholders are replaced by a real value: ID by a shutdown of the
#     audit log (the Telia dry-run's, cut while its shutdowns are in force),
#     the webhook secret's "..." by a test secret, DIR by ../shared/testdata
#     (the labelled sets, not part of the repository: without it those
#     commands are "not run here").
# Only `go run ./cmd/outagewatch` lines are read: those written for an
# installed binary (`outagewatch ...`) are parsed by
# TestDocumentedCommandsParse, not run.
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
	'^run (-c|--config) ::live'
	'^run --demo::demo'
	'^replay --serve::serve'
	'^record ::record'
	'^actions (list|undo|override) ::audit'
	'^actions serve ::audit'
	'^scoreboard --data DIR::scoreboard'
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

# poll URL SECONDS PATTERN waits until URL answers 200 with a body matching
# the extended regular expression PATTERN; the body is left in $tmp/body.
poll() {
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		if curl -sf -o "$tmp/body" "$1" && grep -Eq "$3" "$tmp/body"; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || fail "exited before $1 showed /$3/: $(tail -3 "$tmp/bg.err")" || return 1
		sleep 0.5
	done
	fail "$1 did not show /$3/ within $2 s"
}

# launch CMD [DIR [ENV...]] starts a command that serves until stopped, in
# DIR (default the repository), with its output in $tmp/bg.out and .err.
launch() {
	local dir=${2:-$repo}
	# env runs the command's own VAR=value too, in the process bash execs.
	(cd "$dir" && exec env "${@:3}" bash -c "exec env $1") >"$tmp/bg.out" 2>"$tmp/bg.err" &
	pid=$!
	bg+=($pid)
}

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
	curl -sf "$1" | grep -q '^outagewatch_build_info{' || fail "$1 has no outagewatch_build_info" || return 1
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

# run -c outagewatch.yaml (the README's minimal config) and run --config
# deploy/outagewatch.host.yaml: the live service on testkafka, until it
# has consumed every record produced, then SIGTERM.
live() {
	local dir port want
	if [[ $1 == *deploy/outagewatch.host.yaml* ]]; then
		root
		dir=$tmp/root port=9094
		note "with: run in $tmp/root, deploy/outagewatch.host.yaml with data_dir /tmp/outagewatch -> $tmp/state/host"
		kafka $port && feed $port uganda-2021-01-13 || return 1
		# The Uganda shutdown, as the live service sees it on its flows:
		# MTN Uganda's traffic alert, on the page.
		want='>AS20294<'
	else
		dir=$tmp/live port=9092
		mkdir -p "$dir"
		awk '/<!-- the minimal live config/ { f = 1; next } f && /^```yaml/ { g = 1; next } g && /^```/ { exit } g' README.md |
			sed "s#/var/lib/outagewatch#$dir/state#g" >"$dir/outagewatch.yaml"
		grep -q '^kafka:' "$dir/outagewatch.yaml" || fail "README: no minimal config block" || return 1
		cp deploy/map.yaml "$dir/map.yaml"
		note "with: run in $dir, outagewatch.yaml the README's minimal config with /var/lib/outagewatch -> $dir/state, map.yaml deploy/map.yaml"
		note "with: SLACK_BOT_TOKEN=xoxb-not-a-token and HTTPS_PROXY=http://127.0.0.1:9 (nothing reaches Slack)"
		# The Uganda shutdown: the page lists MTN Uganda's outage; its
		# pages to Slack stop at the proxy.
		kafka $port && feed $port uganda-2021-01-13 || return 1
		want='>AS20294<'
	fi
	launch "$2" "$dir" SLACK_BOT_TOKEN=xoxb-not-a-token HTTPS_PROXY=http://127.0.0.1:9
	poll http://127.0.0.1:9310/readyz 60 '^ok' || return 1
	note "checked: /readyz answers ok"
	local deadline=$((SECONDS + 90)) got=0
	while [ $SECONDS -lt $deadline ]; do
		got=$(curl -sf http://127.0.0.1:9310/metrics | sed -n 's/^outagewatch_records_total{topic="flows"} //p')
		[ "${got:-0}" -ge "$fed" ] && break
		sleep 0.5
	done
	[ "${got:-0}" -ge "$fed" ] || fail "consumed ${got:-0} of $fed flow records in 90 s" || return 1
	note "checked: /metrics counts $got flow records consumed (at least the $fed produced)"
	metrics http://127.0.0.1:9310/metrics || return 1
	poll http://127.0.0.1:9310/ 60 "$want" || return 1
	note "checked: the outage page shows $want"
	stop || return 1
	if grep 'slack.com' "$tmp/bg.err" | grep -qv 'proxyconnect'; then
		fail "the Slack sink reached past the proxy: $(grep slack.com "$tmp/bg.err" | grep -v -m1 proxyconnect)"
	elif grep -q 'slack.com' "$tmp/bg.err"; then
		note "checked: $(grep -c 'slack.com' "$tmp/bg.err") attempts to post to Slack all stopped at the proxy"
	fi
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
	root
	kafka 9094 && feed 9094 uganda-2021-01-13 || return 1
	note "with: run in $tmp/root (deploy/outagewatch.host.yaml's brokers: localhost:9094)"
	local out
	out=$(sed -n 's/.*--out \([^ ]*\).*/\1/p' <<<"$1")
	rm -f "$out"
	(cd "$tmp/root" && timeout 120 bash -c "$2") >"$tmp/out" 2>&1 || fail "exit $?: $(tail -3 "$tmp/out")" || return 1
	[ -s "$out" ] || fail "$out is empty" || return 1
	"$ow" replay "$out" >"$tmp/replayed" 2>"$tmp/replayed.err" || fail "replay $out: $(tail -2 "$tmp/replayed.err")" || return 1
	grep -q ": $fed records read, $fed replayed" "$tmp/replayed.err" ||
		fail "replay $out: want $fed records: $(grep 'records read' "$tmp/replayed.err")" || return 1
	grep -q '"status":"firing","rule":"asn-traffic-drop",.*"entity":"asn:20294"' "$tmp/replayed" ||
		fail "replay $out: no traffic alert for AS20294" || return 1
	note "checked: outagewatch replay $out reads all $fed records and raises AS20294's traffic alert"
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

# scoreboard --data DIR: DIR is ../shared/testdata, the labelled sets
# beside the clone.
scoreboard() {
	local data=../shared/testdata
	if [ ! -d "$data" ]; then
		note "not run here: no $data (the labelled sets' directory)"
		return 2
	fi
	note "with: DIR=$data"
	(timeout 120 bash -c "${2/--data DIR/--data $data}") >"$tmp/out" 2>&1 || fail "exit $?: $(tail -3 "$tmp/out")" || return 1
	grep -q 'ioda-gaza-2023' "$tmp/out" || fail "no ioda-gaza-2023 in its output" || return 1
	note "checked: the board scores ioda-gaza-2023"
}

pass=0 fail=0 skipped=0
while IFS= read -r line; do
	args=${line#*go run ./cmd/outagewatch }
	cmd=${line//go run .\/cmd\/outagewatch/$ow}
	fn="" t0=$SECONDS
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
	# Indented lines starting with go run ./cmd/outagewatch (after any
	# VAR=value), continuations joined, comments (" # ...") dropped.
	for f in README.md docs/*.md; do
		awk '
			/^    / { l = substr($0, 5)
				while (l ~ /\\$/ && (getline nx) > 0) { sub(/\\$/, "", l); sub(/^ +/, "", nx); l = l " " nx }
				if (l ~ /^(\$ )?([A-Z_]+=[^ ]* )*go run \.\/cmd\/outagewatch/) { sub(/^\$ /, "", l); sub(/ +# .*$/, "", l); print l } }' "$f"
	done | sort -u
)
echo "in $((SECONDS - start)) s"
echo "documented commands: $pass passed, $fail failed, $skipped not run here"
[ "$fail" -eq 0 ]
