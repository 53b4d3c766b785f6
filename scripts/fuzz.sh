#!/usr/bin/env bash
# Runs every fuzz target for a while (default 30s each). Not part of CI:
# `go test ./...` already runs each target over its seed corpus.
#   scripts/fuzz.sh [duration]
set -euo pipefail
cd "$(dirname "$0")/.."
d=${1:-30s}
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
  pkg=./$(dirname "${f#./}")
  for t in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/func //'); do
    echo "== $pkg $t ($d)"
    go test "$pkg" -run '^$' -fuzz "^${t}\$" -fuzztime "$d"
  done
done
