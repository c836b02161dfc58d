# Sourced by bench/shmem/compare.sh and bench/msg/compare.sh: waiting for a quiet machine before measuring.
#   load1                 prints the 1-minute load average
#   above A B             true when the number A > B
#   wait_quiet MAX WAIT   waits (30 s steps, at most WAIT seconds) until the 1-minute load average is below MAX;
#                         sets load_note (what it saw and waited, for the result header) and prints it on stderr
load1() { cut -d' ' -f1 /proc/loadavg; }
above() { python3 -c "import sys; sys.exit(0 if float('$1') > float('$2') else 1)"; }
wait_quiet() {
  local max=$1 wait=$2 waited=0
  while above "$(load1)" "$max" && (( waited < wait )); do
    echo "compare.sh: load average $(load1) > $max, waiting (${waited}s of ${wait}s)" >&2
    sleep 30
    waited=$((waited + 30))
  done
  load_note="load average before measuring: $(cut -d' ' -f1-3 /proc/loadavg) (waited ${waited}s for < $max)"
  if above "$(load1)" "$max"; then load_note+="; STILL ABOVE $max after ${wait}s: measured anyway"; fi
  echo "compare.sh: $load_note" >&2
}
