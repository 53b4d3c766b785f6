#!/usr/bin/env bash
# Runs every command the README and docs/ give as `go run ./cmd/outagewatch
# ...`, as written, from the repository root, with one build of the binary
# standing in for `go run`: a command that fails (or runs past two minutes)
# fails the script. The commands listed in `needs` are not run here, each
# for the reason beside it; TestDocumentedCommandsParse still checks that
# they parse, and the tests named there run what they do.
#   scripts/doc-commands.sh          (CI runs it)
set -uo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/outagewatch" ./cmd/outagewatch || exit 1

# Commands that need what a documentation run does not have, by pattern.
needs=(
	'run -c |run --config ::a Kafka broker and a config (tested on kfake: go test ./service ./cmd/outagewatch)'
	'run --demo::runs until stopped (TestRunDemo, TestRunDemoInChromium)'
	'replay --serve::serves until stopped (TestReplayPage, the browser tests)'
	'^record ::a Kafka broker (TestRecord*)'
	'actions list --audit /var/::a deployment'"'"'s audit log'
	'actions undo ID::an action id from a deployment'"'"'s audit log'
	'actions override::a deployment'"'"'s audit log and gobgpd'
	'scoreboard --data DIR::the labelled sets'"'"' directory (CI runs the board on its own copy)'
)

pass=0 fail=0 skipped=0
while IFS= read -r line; do
	args=${line#go run ./cmd/outagewatch }
	why=""
	for n in "${needs[@]}"; do
		if [[ $args =~ ${n%%::*} ]]; then why=${n#*::}; break; fi
	done
	if [ -n "$why" ]; then
		skipped=$((skipped + 1))
		echo "skip  $line  ($why)"
		continue
	fi
	cmd=${line//go run .\/cmd\/outagewatch/$tmp/outagewatch}
	if timeout 120 bash -c "set -o pipefail; $cmd" >"$tmp/out" 2>&1; then
		pass=$((pass + 1))
		echo "ok    $line"
	else
		code=$?
		# score exits 2 when a labelled set fails, which is news, not a
		# broken command: the commands say so, and CI's own score step
		# fails on it.
		fail=$((fail + 1))
		echo "FAIL  $line  (exit $code)"
		tail -5 "$tmp/out" | sed 's/^/      /'
	fi
done < <(
	# Indented lines starting with go run ./cmd/outagewatch, continuations
	# joined, comments (" # ...") dropped.
	for f in README.md docs/*.md; do
		awk '
			/^    / { l = substr($0, 5)
				while (l ~ /\\$/ && (getline nx) > 0) { sub(/\\$/, "", l); sub(/^ +/, "", nx); l = l " " nx }
				if (l ~ /^(\$ )?go run \.\/cmd\/outagewatch/) { sub(/^\$ /, "", l); sub(/ +# .*$/, "", l); print l } }' "$f"
	done | sort -u
)
echo "documented commands: $pass passed, $fail failed, $skipped not run here"
[ "$fail" -eq 0 ]
