#!/bin/sh
# Checks of the OpenSHMEM profiling interface (src/shmem/pshmem.cmake).
#   pshmem_check.sh symbols <libtether_shmem.so> <pshmem_names.txt>
#     Every C function libtether_shmem exports (nm -D) is either a weak routine NAME whose strong twin pNAME is
#     exported at the same address, or such a twin; the weak routines are exactly the names of pshmem_names.txt.
#   pshmem_check.sh header <generated pshmem.h> <include/pshmem.h>
#     The checked-in header is the one the build generates from include/shmem*.h.
set -eu
mode=${1:?mode}
case "$mode" in
symbols)
  lib=${2:?library}
  names=${3:?names file}
  nm -D --defined-only "$lib" | awk -v names="$names" '
    # Functions only (T strong, W weak); C++ (_Z) and implementation (__) symbols are not routines.
    ($2 == "T" || $2 == "W") && $3 !~ /^(_Z|__)/ && $3 != "_init" && $3 != "_fini" { type[$3] = $2; addr[$3] = $1 }
    END {
      bad = 0; weak = 0
      while ((getline line < names) > 0) if (line != "") listed[line] = 1
      for (s in type) {
        if (type[s] == "W") {
          ++weak
          if (!(s in listed)) { print "weak " s " is not a routine of include/shmem*.h"; bad = 1 }
          if (type["p" s] != "T") { print s ": no strong twin p" s; bad = 1 }
          else if (addr["p" s] != addr[s]) { print s ": p" s " at " addr["p" s] ", " s " at " addr[s]; bad = 1 }
        } else if (type[substr(s, 2)] != "W" || substr(s, 1, 1) != "p") {
          print s ": exported strong, not the twin of a weak routine"; bad = 1
        }
      }
      for (s in listed) if (type[s] != "W") { print s ": declared in include/shmem*.h, not a weak export"; bad = 1 }
      for (s in listed) ++nlisted
      if (nlisted < 1000) { print "only " nlisted " routines listed"; bad = 1 }
      if (!bad) print weak " routines, each weak with its strong p-twin at the same address"
      exit bad
    }'
  ;;
header)
  generated=${2:?generated header}
  checked_in=${3:?checked-in header}
  if ! cmp -s "$generated" "$checked_in"; then
    diff -u "$checked_in" "$generated" | head -40 || true
    echo "$checked_in is out of date: cp $generated $checked_in"
    exit 1
  fi
  echo "$checked_in matches the declarations of include/shmem*.h"
  ;;
*)
  echo "pshmem_check.sh: unknown mode '$mode' (symbols, header)" >&2
  exit 2
  ;;
esac
