#!/usr/bin/env bash
# tetherrun's behaviour, one case per ctest test: tetherrun_test.sh <case> <tetherrun> <launcher_probe>
# Each case prints what it checked and exits 0, or prints the failure (with tetherrun's output) and exits 1.
set -u
case_name=$1 TR=$2 PROBE=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tetherrun_test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
out=$tmp/stdout err=$tmp/stderr

fail() {
  echo "FAIL [$case_name]: $*"
  echo "--- stdout:"; head -c 4000 "$out" 2>/dev/null
  echo "--- stderr:"; head -c 4000 "$err" 2>/dev/null
  exit 1
}
run() { "$@" >"$out" 2>"$err"; rc=$?; }
expect_rc() { [ "$rc" = "$1" ] || fail "exit status $rc, expected $1"; }
expect_grep() { grep -qE -- "$2" "$1" || fail "no line matching '$2' in $(basename "$1")"; }
now_ms() { date +%s%3N; }
# The pids printed by the probes' "info" lines must all be gone (no orphans).
expect_pids_gone() {
  local pids
  pids=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$out")
  [ -n "$pids" ] || fail "no pids printed"
  for p in $pids; do
    kill -0 "$p" 2>/dev/null && fail "PE pid $p still alive after tetherrun exited"
  done
  return 0
}
# Waits until $1 has $2 lines matching $3 (bounded).
wait_lines() {
  for _ in $(seq 1 200); do
    [ "$(grep -cE -- "$3" "$1" 2>/dev/null)" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "timed out waiting for $2 lines matching '$3'"
}

case $case_name in
success)
  run "$TR" -n 4 "$PROBE" info
  expect_rc 0
  [ "$(grep -c '^rank=' "$out")" = 4 ] || fail "expected 4 info lines"
  [ "$(sed -n 's/^rank=\([0-9]*\) .*/\1/p' "$out" | sort -n | tr '\n' ' ')" = "0 1 2 3 " ] || fail "ranks not 0..3"
  [ "$(grep -c ' size=4 local_rank=' "$out")" = 4 ] || fail "size not 4 everywhere"
  for r in 0 1 2 3; do expect_grep "$out" "^rank=$r size=4 local_rank=$r local_size=4 addr=127\.0\.0\.1:[0-9]+ "; done
  [ "$(sed -n 's/.* secret=\([^ ]*\) .*/\1/p' "$out" | sort -u | wc -l)" = 1 ] || fail "secrets differ between PEs"
  expect_grep "$out" "secret=[0-9a-f]{64} launcher=tetherrun"
  [ "$(sed -n 's/.* addr=\([^ ]*\) .*/\1/p' "$out" | sort -u | wc -l)" = 1 ] || fail "addresses differ between PEs"
  [ "$(grep -c 'fd=-' "$out")" = 3 ] || fail "PEs other than 0 got TETHER_BOOTSTRAP_FD"
  expect_grep "$out" "^rank=0 .* fd=[0-9]+ pid="
  [ -s "$err" ] && fail "unexpected stderr"
  # Two jobs never share a secret.
  s1=$(sed -n 's/.* secret=\([^ ]*\) .*/\1/p' "$out" | head -1)
  run "$TR" -n 1 "$PROBE" info
  s2=$(sed -n 's/.* secret=\([^ ]*\) .*/\1/p' "$out")
  [ "$s1" != "$s2" ] || fail "two jobs got the same secret"
  ;;
tag_output)
  run "$TR" -n 3 --tag-output "$PROBE" info errlines=2 partial=tail-without-newline
  expect_rc 0
  for r in 0 1 2; do
    expect_grep "$out" "^\[$r\] rank=$r size=3 "
    expect_grep "$err" "^\[$r\] err 0 rank $r$"
    expect_grep "$err" "^\[$r\] err 1 rank $r$"
    expect_grep "$out" "^\[$r\] tail-without-newline$"
  done
  grep -vqE '^\[[0-2]\] ' "$out" "$err" && fail "an output line lacks its [rank] prefix"
  [ "$(wc -l <"$out")" = 6 ] || fail "expected 6 stdout lines"
  ;;
output_dir)
  run "$TR" -n 3 --output-dir "$tmp/logs/run1" "$PROBE" info errlines=1
  expect_rc 0
  [ -s "$out" ] && fail "stdout not empty with --output-dir"
  for r in 0 1 2; do
    expect_grep "$tmp/logs/run1/pe$r.out" "^rank=$r size=3 "
    expect_grep "$tmp/logs/run1/pe$r.err" "^err 0 rank $r$"
  done
  run "$TR" -n 2 --tag-output --output-dir "$tmp/logs/run2" "$PROBE" info
  expect_rc 0
  expect_grep "$tmp/logs/run2/pe1.out" "^\[1\] rank=1 "
  ;;
pe_exit)
  t0=$(now_ms)
  run "$TR" -n 4 "$PROBE" info sleep=0.5@1 exit=3@1 sleep=60
  t1=$(now_ms)
  expect_rc 3
  expect_grep "$err" "^tetherrun: PE 1 \(pid [0-9]+\) exited with status 3; stopping the other 3 PEs$"
  [ $((t1 - t0)) -lt 20000 ] || fail "took $((t1 - t0)) ms to stop the job"
  expect_pids_gone
  ;;
pe_signal)
  t0=$(now_ms)
  run "$TR" -n 3 "$PROBE" info sleep=0.5@2 signal=9@2 sleep=60
  t1=$(now_ms)
  expect_rc 137
  expect_grep "$err" "^tetherrun: PE 2 \(pid [0-9]+\) was killed by signal 9 \(Killed\); stopping the other 2 PEs$"
  [ $((t1 - t0)) -lt 20000 ] || fail "took $((t1 - t0)) ms to stop the job"
  expect_pids_gone
  ;;
kill_grace)
  # PEs that ignore SIGTERM are killed TETHER_KILL_GRACE after it.
  t0=$(now_ms)
  TETHER_KILL_GRACE=0.5 run "$TR" -n 3 "$PROBE" ignoreterm info sleep=0.5@0 exit=1@0 sleep=60
  t1=$(now_ms)
  expect_rc 1
  expect_grep "$err" "PE 0 \(pid [0-9]+\) exited with status 1"
  expect_grep "$err" "2 PEs still running 0.5 s after SIGTERM; sending SIGKILL"
  [ $((t1 - t0)) -lt 20000 ] || fail "took $((t1 - t0)) ms"
  expect_pids_gone
  TETHER_KILL_GRACE=soon run "$TR" -n 1 true
  expect_rc 2
  expect_grep "$err" "TETHER_KILL_GRACE='soon'"
  ;;
sigterm|sigint)
  sig=TERM; code=143
  [ "$case_name" = sigint ] && sig=INT && code=130
  "$TR" -n 3 "$PROBE" info sleep=60 >"$out" 2>"$err" &
  trpid=$!
  wait_lines "$out" 3 '^rank='
  t0=$(now_ms)
  kill -s "$sig" "$trpid"
  wait "$trpid"; rc=$?
  t1=$(now_ms)
  expect_rc $code
  expect_grep "$err" "^tetherrun: received .*; forwarding it to 3 running PEs$"
  [ $((t1 - t0)) -lt 20000 ] || fail "took $((t1 - t0)) ms"
  expect_pids_gone
  ;;
not_found)
  run "$TR" -n 2 "$tmp/no-such-program" arg
  expect_rc 127
  expect_grep "$err" "^tetherrun: cannot run '$tmp/no-such-program' \(PE 0\): No such file or directory$"
  run "$TR" -n 2 no-such-program-in-path-xyz
  expect_rc 127
  echo 'echo hi' >"$tmp/not-executable"
  run "$TR" -n 2 "$tmp/not-executable"
  expect_rc 126
  expect_grep "$err" "Permission denied"
  ;;
timeout)
  t0=$(now_ms)
  run "$TR" -n 2 --timeout 1 "$PROBE" info sleep=30
  t1=$(now_ms)
  expect_rc 124
  expect_grep "$err" "^tetherrun: job timed out after 1 s \(--timeout\); stopping 2 running PEs$"
  [ $((t1 - t0)) -lt 10000 ] || fail "took $((t1 - t0)) ms"
  expect_pids_gone
  run "$TR" -n 2 --timeout=5 "$PROBE" info
  expect_rc 0
  ;;
bad_usage)
  for args in "" "-n" "-n 0 true" "-n 1025 true" "-n x true" "--bogus -n 1 true" "-n 2" "-n 2 -x FOO true" \
              "-n 2 --timeout abc true" "-n 2 --timeout 0 true" "-n 2 --output-dir= true"; do
    # shellcheck disable=SC2086
    run "$TR" $args
    [ "$rc" = 2 ] || fail "'tetherrun $args' exited $rc, expected 2"
    grep -q "tetherrun --help" "$err" || fail "'tetherrun $args' printed no usage hint"
  done
  run "$TR" --help
  expect_rc 0
  expect_grep "$out" "^Usage: tetherrun -n N"
  run "$TR" --version
  expect_rc 0
  expect_grep "$out" "^tetherrun \(tether\) [0-9]+\.[0-9]+\.[0-9]+$"
  ;;
env)
  FROM_PARENT=p run "$TR" -n 2 -x FOO=bar --env BAZ=q=1 --env=EMPTY= -- QUX=7 "$PROBE" env=FOO env=BAZ env=EMPTY env=QUX \
    env=FROM_PARENT
  expect_rc 0
  for line in "FOO=bar" "BAZ=q=1" "EMPTY=" "QUX=7" "FROM_PARENT=p"; do
    [ "$(grep -cx -- "$line" "$out")" = 2 ] || fail "expected '$line' from both PEs"
  done
  # An enclosing job's TETHER_* position is replaced; its inherited fd is not passed on.
  TETHER_RANK=5 TETHER_SIZE=9 TETHER_BOOTSTRAP_FD=99 run "$TR" -n 2 "$PROBE" info
  expect_rc 0
  expect_grep "$out" "^rank=1 size=2 .* fd=- "
  ;;
checkfd)
  run "$TR" -n 3 "$PROBE" checkfd
  expect_rc 0
  [ "$(grep -c '^checkfd ok' "$out")" = 3 ] || fail "expected 3 checkfd lines"
  run "$TR" -n 2 --tag-output "$PROBE" checkfd
  expect_rc 0
  ;;
bootstrap)
  run "$TR" -n 4 "$PROBE" bootstrap
  expect_rc 0
  [ "$(grep -c '^bootstrap ok rank=[0-3] size=4 launcher=tetherrun$' "$out")" = 4 ] || fail "expected 4 bootstrap lines"
  oshrun=$(dirname "$TR")/oshrun
  [ -x "$oshrun" ] || fail "no oshrun next to tetherrun"
  run "$oshrun" -n 2 "$PROBE" bootstrap
  expect_rc 0
  [ "$(grep -c '^bootstrap ok' "$out")" = 2 ] || fail "oshrun: expected 2 bootstrap lines"
  ;;
lots_of_output)
  run "$TR" -n 4 --tag-output "$PROBE" lines=20000 errlines=5000
  expect_rc 0
  for r in 0 1 2 3; do
    grep "^\[$r\] " "$out" | awk -v r="$r" '$0 != "[" r "] out " NR-1 " rank " r { bad = 1 } END { exit bad || NR != 20000 }' ||
      fail "stdout of PE $r lost, reordered or mangled lines"
    grep "^\[$r\] " "$err" | awk -v r="$r" '$0 != "[" r "] err " NR-1 " rank " r { bad = 1 } END { exit bad || NR != 5000 }' ||
      fail "stderr of PE $r lost, reordered or mangled lines"
  done
  [ "$(wc -l <"$out")" = 80000 ] || fail "stdout has $(wc -l <"$out") lines, expected 80000"
  ;;
*)
  echo "unknown case '$case_name'"
  exit 2
  ;;
esac
echo "PASS [$case_name]"
