#!/usr/bin/env bash
# expect_status.sh <max-seconds> <status> -- command...
# Passes when the command exits with exactly <status> in less than max-seconds (it is stopped at max-seconds).
set -u
max=$1 want=$2
shift 3
start=$(date +%s)
timeout -k 5 "$max" "$@"
rc=$?
elapsed=$(( $(date +%s) - start ))
echo "expect_status: exit status $rc after ${elapsed}s (want $want in under ${max}s)"
if [ "$elapsed" -ge "$max" ]; then echo "expect_status: FAIL: command hung (stopped after ${max}s)"; exit 1; fi
if [ "$rc" -ne "$want" ]; then echo "expect_status: FAIL: exit status $rc, want $want"; exit 1; fi
echo "expect_status: PASS"
