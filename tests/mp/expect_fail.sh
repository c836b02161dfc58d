#!/usr/bin/env bash
# expect_fail.sh <max-seconds> <regex> -- command...
# Passes when the command exits non-zero within max-seconds and its output matches regex.
set -u
max=$1 regex=$2
shift 3
start=$(date +%s)
out=$(timeout -k 5 "$max" "$@" 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
printf '%s\n' "$out"
echo "expect_fail: exit status $rc after ${elapsed}s"
if [ "$rc" -eq 0 ]; then echo "expect_fail: FAIL: command succeeded"; exit 1; fi
if [ "$elapsed" -ge "$max" ]; then echo "expect_fail: FAIL: command hung (stopped after ${max}s)"; exit 1; fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then echo "expect_fail: FAIL: output does not match /$regex/"; exit 1; fi
echo "expect_fail: PASS"
