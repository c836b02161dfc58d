#!/usr/bin/env bash
# tether-info tells the truth about the build (#23): runs it and checks its key lines against what CMake configured.
# Usage: tether_info_check.sh TETHER_INFO VERSION CUDA(0|1) UCX(0|1) SANITIZE(0|1)
set -uo pipefail
[ $# -eq 5 ] || { echo "usage: $0 TETHER_INFO VERSION CUDA UCX SANITIZE" >&2; exit 2; }
info=$1 version=$2
yn() { [ "$1" = 1 ] && echo yes || echo no; }
cuda=$(yn "$3") ucx=$(yn "$4") san=$(yn "$5")

out=$(timeout 60 "$info" 2>&1); rc=$?
echo "$out"
fails=0
[ $rc -eq 0 ] || { echo "tether_info_check: tether-info exited $rc"; fails=1; }
expect() {  # expect ERE WHAT
  grep -Eq -- "$1" <<<"$out" || { echo "tether_info_check: missing $2 (pattern: $1)"; fails=1; }
}
expect "^version: ${version//./\\.} \\(library\\), ${version//./\\.} \\(headers" "the version of library and headers"
expect "^features: CUDA $cuda; UCX $ucx" "CUDA $cuda and UCX $ucx"
[ "$ucx" = yes ] && expect "UCX yes \\(runtime [0-9]+\\.[0-9]+\\.[0-9]+\\)" "the UCX runtime version"
expect "sanitizers $san\$" "sanitizers $san"
expect "^GPUs visible: [0-9]+\$" "the GPU count"
expect "^library: /.*libtether\\.so" "the library's path"
expect "^prefix: /" "the prefix"
expect "^TETHER_TIMEOUT +seconds" "the configuration table (TETHER_TIMEOUT)"
"$info" --bogus >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || { echo "tether_info_check: an unknown option exited $rc, want 2"; fails=1; }
[ $fails -eq 0 ] && echo "tether_info_check: ok"
exit $fails
