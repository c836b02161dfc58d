#!/usr/bin/env bash
# Only the C API is visible (#23): every dynamic symbol that libtether.so defines is tether_*, and every one of
# libtether_shmem.so is an OpenSHMEM name (shmem_*, pshmem_*, the deprecated 1.x names, tether_shmem_* objects of
# SHMEM_CTX_DEFAULT and the predefined teams). Lists the offenders and exits 1; 77 when nm is missing.
# Usage: check_exports.sh LIBTETHER LIBTETHER_SHMEM
set -euo pipefail
command -v nm >/dev/null 2>&1 || { echo "check_exports: SKIP: nm (binutils) not found"; exit 77; }
[ $# -eq 2 ] || { echo "usage: $0 LIBTETHER LIBTETHER_SHMEM" >&2; exit 2; }

# check LIB ERE REQUIRED...: every defined dynamic symbol of LIB matches ERE; every REQUIRED name is among them.
check() {
  local lib=$1 allowed=$2; shift 2
  local syms bad n
  syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort -u)
  n=$(wc -l <<<"$syms")
  bad=$(grep -Ev "$allowed" <<<"$syms" || true)
  if [ -n "$bad" ]; then
    echo "check_exports: $lib exports $(wc -l <<<"$bad") symbol(s) outside its API:"
    head -20 <<<"$bad" | sed 's/^/  /'
    fails=1
  fi
  for req in "$@"; do
    grep -qx "$req" <<<"$syms" || { echo "check_exports: $lib does not export $req"; fails=1; }
  done
  echo "check_exports: $lib: $n symbols exported"
}

fails=0
check "$1" '^tether_[A-Za-z0-9_]+$' tether_init tether_put tether_version tether_get_build_info tether_type_commit
check "$2" '^(p?shmemx?_[A-Za-z0-9_]+|p?(shmalloc|shfree|shrealloc|shmemalign|start_pes)|p?_my_pe|p?_num_pes|tether_shmem_[A-Za-z0-9_]+)$' \
  shmem_init shmem_putmem pshmem_putmem shmem_team_split_strided
[ $fails -eq 0 ] && echo "check_exports: only the APIs are exported"
exit $fails
