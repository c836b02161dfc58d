#!/usr/bin/env bash
# The install check of #23 (ctest install_check, label "install"): installs this build into a temporary prefix, then
#   layout  headers, libraries + soname links, tetherrun/oshrun/oshcc/oshc++/tether-info, CMake package, pkg-config
#           files, docs; installed executables carry RPATH $ORIGIN/../<libdir> and no build-tree path
#   (a)     a separate CMake project, find_package(tether CONFIG): put/get at 2 PEs under the installed tetherrun,
#           the device API's header through tether::device (plain C++, CPU handle) at 2 PEs, and an OpenSHMEM hello
#           through tether::shmem under the installed oshrun
#   (b)     the same C program built with `pkg-config --cflags --libs tether`, run at 2 PEs
#   (c)     an OpenSHMEM hello compiled by the installed oshcc, run by the installed oshrun at 2 PEs (+ --showme forms)
#   (e)     with --nvcc (a CUDA build): a separate CUDA project (consumer_cuda: a .cu kernel on tether::device +
#           tether::tether) configured and built by nvcc against the prefix; run at 2 PEs only where a GPU is visible
#           (nvidia-smi -L), otherwise the output says it was built and not run
#   moved   the prefix copied elsewhere and the original removed: (c) again, tether-info and pkg-config from there
#   (d)     a project that add_subdirectory()s the source tree defines only the libraries and tetherrun as targets
# Every command is bounded (timeout); exit 0 all passed, 1 a check failed (named), 77 a needed tool is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build= src= gen=Ninja cc=cc cxx=c++ libdir=lib version= cuda=OFF ucx=OFF sanitize=0 nvcc= cuda_archs=
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2 ;; --source) src=$2 ;; --generator) gen=$2 ;; --cc) cc=$2 ;; --cxx) cxx=$2 ;;
    --libdir) libdir=$2 ;; --version) version=$2 ;; --cuda) cuda=$2 ;; --ucx) ucx=$2 ;; --sanitize) sanitize=$2 ;;
    --nvcc) nvcc=$2 ;; --cuda-archs) cuda_archs=$2 ;;  # archs: comma-separated (a CMake list, ';' replaced)
    *) echo "install_check: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
[ -n "$build" ] && [ -n "$src" ] && [ -n "$version" ] || { echo "install_check: --build, --source, --version needed" >&2; exit 2; }
for tool in cmake pkg-config readelf timeout "$cc"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "install_check: SKIP: $tool not found"; exit 77; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tether-install-check.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fails=0
fail() { echo "install_check: FAIL: $*"; fails=$((fails + 1)); }
step() { echo; echo "== $*"; }
# run LOGNAME CMD...: bounded, output kept in $work/LOGNAME.log and shown when it fails
run() {
  local log=$work/$1.log; shift
  if timeout 300 "$@" >"$log" 2>&1; then return 0; fi
  local rc=$?
  echo "install_check: '$*' exited $rc:"; tail -30 "$log" | sed 's/^/  | /'
  return $rc
}
san_flags=()
[ "$sanitize" = 1 ] && san_flags=(-fsanitize=address,undefined)
lib_san=${san_flags[*]:-}

step "install into $prefix"
run install cmake --install "$build" --prefix "$prefix" || { fail "cmake --install"; exit 1; }

step "layout"
for f in include/tether/tether.h include/tether/tether_typed.h include/tether/datatype.h include/tether/msg.h include/tether/version.h \
         include/tether/device.cuh include/shmem.h include/pshmem.h include/shmem_amo.h include/shmem_coll.h \
         include/shmem_ctx.h include/shmem_sync.h include/shmem_team.h \
         "$libdir/libtether.so" "$libdir/libtether.so.${version%%.*}" "$libdir/libtether.so.$version" \
         "$libdir/libtether_shmem.so" "$libdir/libtether_shmem.so.${version%%.*}" "$libdir/libtether_shmem.so.$version" \
         bin/tetherrun bin/oshrun bin/oshcc bin/oshc++ bin/tether-info \
         "$libdir/cmake/tether/tetherConfig.cmake" "$libdir/cmake/tether/tetherConfigVersion.cmake" \
         "$libdir/cmake/tether/tetherTargets.cmake" "$libdir/pkgconfig/tether.pc" "$libdir/pkgconfig/tether-shmem.pc" \
         share/doc/tether/README.md share/doc/tether/architecture.md share/doc/tether/shmem/README.md; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
[ "$(readlink "$prefix/bin/oshrun")" = tetherrun ] || fail "bin/oshrun is not a link to tetherrun"
soname=$(readelf -d "$prefix/$libdir/libtether.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libtether.so.${version%%.*}" ] || fail "libtether's soname is '$soname'"
for exe in tether-info tetherrun; do
  rp=$(readelf -d "$prefix/bin/$exe" | grep -E 'R(UN)?PATH' || true)
  grep -q "\$ORIGIN/../$libdir" <<<"$rp" || fail "bin/$exe has no RPATH \$ORIGIN/../$libdir: $rp"
  ! grep -qF "$build" <<<"$rp" || fail "bin/$exe keeps a build-tree RPATH: $rp"
done
grep -rlF "$build" "$prefix/bin/oshcc" "$prefix/$libdir/pkgconfig" "$prefix/$libdir/cmake" >/dev/null 2>&1 &&
  fail "installed wrappers or package files name the build tree: $(grep -rlF "$build" "$prefix/bin/oshcc" "$prefix/$libdir/pkgconfig" "$prefix/$libdir/cmake")"

step "installed tether-info"
if run info "$prefix/bin/tether-info"; then
  grep -q "^version: $version (library)" "$work/info.log" || fail "installed tether-info: no 'version: $version'"
  grep -q "^library: $prefix/$libdir/libtether.so" "$work/info.log" ||
    fail "installed tether-info does not load the installed libtether: $(grep '^library:' "$work/info.log")"
  grep -q "^prefix: $prefix " "$work/info.log" || fail "installed tether-info: prefix is not $prefix"
else
  fail "installed tether-info"
fi

step "(a) find_package(tether CONFIG) consumer"
cbuild=$work/consumer-cmake
if run a-configure cmake -S "$here/consumer_cmake" -B "$cbuild" -G "$gen" -DCMAKE_C_COMPILER="$cc" \
     -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$lib_san" \
     -DCMAKE_CXX_FLAGS="$lib_san" -DCMAKE_EXE_LINKER_FLAGS="$lib_san" &&
   run a-build cmake --build "$cbuild"; then
  grep -q "tether $version from $prefix/$libdir/cmake/tether" "$work/a-configure.log" ||
    fail "(a) the consumer did not find tether $version in $prefix"
  run a-run "$prefix/bin/tetherrun" -n 2 "$cbuild/consumer" && grep -q "consumer ok: 2 PEs" "$work/a-run.log" ||
    fail "(a) consumer at 2 PEs"
  run a-device "$prefix/bin/tetherrun" -n 2 "$cbuild/device_consumer" && grep -q "device ok: 2 PEs" "$work/a-device.log" ||
    fail "(a) tether::device (CPU handle) at 2 PEs"
  run a-shmem "$prefix/bin/oshrun" -n 2 "$cbuild/shmem_hello" && grep -q "shmem hello ok: 2 PEs" "$work/a-shmem.log" ||
    fail "(a) tether::shmem hello at 2 PEs"
else
  fail "(a) configure/build of the find_package consumer"
fi

step "(b) pkg-config consumer"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
pv=$(pkg-config --modversion tether 2>&1)
[ "$pv" = "$version" ] || fail "(b) pkg-config --modversion tether: $pv"
pkg-config --libs tether-shmem | grep -q -- "-ltether_shmem.*-ltether" || fail "(b) tether-shmem.pc: $(pkg-config --libs tether-shmem)"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
if run b-build "$cc" "${san_flags[@]}" "$here/consumer.c" -o "$work/consumer-pc" $(pkg-config --cflags --libs tether) \
     -Wl,-rpath,"$(pkg-config --variable=libdir tether)"; then
  run b-run "$prefix/bin/tetherrun" -n 2 "$work/consumer-pc" && grep -q "consumer ok: 2 PEs" "$work/b-run.log" ||
    fail "(b) pkg-config consumer at 2 PEs"
else
  fail "(b) build with pkg-config --cflags --libs tether"
fi

# oshcc_hello PREFIX TAG: compile shmem_hello.c with PREFIX/bin/oshcc, run it at 2 PEs with PREFIX/bin/oshrun
oshcc_hello() {
  local p=$1 tag=$2
  [ "$("$p/bin/oshcc" --showme:compile)" = "$lib_san${lib_san:+ }-I$p/include" ] ||
    fail "($tag) oshcc --showme:compile: $("$p/bin/oshcc" --showme:compile)"
  "$p/bin/oshcc" --showme:link | grep -q -- "-L$p/$libdir -Wl,-rpath,$p/$libdir -ltether_shmem -ltether" ||
    fail "($tag) oshcc --showme:link: $("$p/bin/oshcc" --showme:link)"
  "$p/bin/oshcc" --showme x.c | grep -q -- "-I$p/include x.c -L$p/$libdir" || fail "($tag) oshcc --showme x.c"
  "$p/bin/oshcc" --showme:nonsense >/dev/null 2>&1 && fail "($tag) oshcc accepts --showme:nonsense"
  if run "$tag-oshcc" "$p/bin/oshcc" "$here/shmem_hello.c" -o "$work/hello-$tag"; then
    run "$tag-oshrun" "$p/bin/oshrun" -n 2 "$work/hello-$tag" && grep -q "shmem hello ok: 2 PEs" "$work/$tag-oshrun.log" ||
      fail "($tag) oshrun -n 2 of the oshcc-built hello"
  else
    fail "($tag) oshcc shmem_hello.c"
  fi
  if command -v "$cxx" >/dev/null 2>&1; then
    run "$tag-oshcxx" "$p/bin/oshc++" -x c++ "$here/shmem_hello.c" -o "$work/hellocxx-$tag" || fail "($tag) oshc++"
  fi
}
step "(c) oshcc / oshrun"
oshcc_hello "$prefix" c

step "(e) CUDA consumer (nvcc, tether::device)"
if [ -z "$nvcc" ]; then
  echo "(e) skipped: this build has no CUDA compiler (CMAKE_CUDA_COMPILER unset)"
else
  ebuild=$work/consumer-cuda
  if run e-configure cmake -S "$here/consumer_cuda" -B "$ebuild" -G "$gen" -DCMAKE_CXX_COMPILER="$cxx" \
       -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="${cuda_archs//,/;}" -DCMAKE_PREFIX_PATH="$prefix" &&
     run e-build cmake --build "$ebuild"; then
    grep -q "tether_cuda_consumer: tether $version from $prefix/$libdir/cmake/tether" "$work/e-configure.log" ||
      fail "(e) the CUDA consumer did not find tether $version in $prefix"
    echo "(e) built $ebuild/device_kernel with $nvcc ($(grep -o 'architectures .*' "$work/e-configure.log"))"
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
      run e-run env TETHER_GPU=auto "$prefix/bin/tetherrun" -n 2 "$ebuild/device_kernel" &&
        grep -q "cuda device ok: 2 PEs" "$work/e-run.log" || fail "(e) CUDA consumer kernel at 2 PEs"
    else
      echo "(e) NOT run: no GPU visible (nvidia-smi -L); built only"
    fi
  else
    fail "(e) configure/build of the CUDA consumer with nvcc"
  fi
fi

step "moved prefix"
moved=$work/moved/elsewhere
mkdir -p "$work/moved" && cp -a "$prefix" "$moved" && rm -rf "$prefix" || fail "moving the prefix"
oshcc_hello "$moved" moved
if run moved-info "$moved/bin/tether-info"; then
  grep -q "^library: $moved/$libdir/libtether.so" "$work/moved-info.log" ||
    fail "moved tether-info loads $(grep '^library:' "$work/moved-info.log")"
else
  fail "tether-info in the moved prefix"
fi
export PKG_CONFIG_PATH=$moved/$libdir/pkgconfig
inc=$(pkg-config --cflags tether | sed 's/^-I//; s/ *$//')
[ "$(cd "$inc" 2>/dev/null && pwd -P)" = "$(cd "$moved/include" && pwd -P)" ] || fail "moved tether.pc --cflags: -I$inc"

step "(d) tether as a subproject"
sbuild=$work/subproject
if run d-configure cmake -S "$here/subproject" -B "$sbuild" -G "$gen" -DCMAKE_C_COMPILER="$cc" \
     -DCMAKE_CXX_COMPILER="$cxx" -DTETHER_SOURCE_DIR="$src" -DTETHER_CUDA="$cuda" -DTETHER_UCX="$ucx"; then
  if [ "$gen" = Ninja ]; then
    # what the parent's default build would produce (the outputs of `ninja -t commands all`: -o of the link steps,
    # ar's archives): tether's layer archives, libtether, libtether_shmem, tetherrun and the parent's own programs;
    # any other tether program or library is a leak
    linked=$(cd "$sbuild" && timeout 60 ninja -t commands all | grep -oE '( -o | qc )[^ ]+' | awk '{print $2}' |
             grep -Ev '\.(o|i)$' | sed 's|.*/||; s/\.so\.[0-9.]*$/.so/' | sort -u)
    for t in libtether.so libtether_shmem.so tetherrun parent_app parent_shmem; do
      grep -qx "$t" <<<"$linked" || fail "(d) $t is not built"
    done
    extra=$(grep -Evx 'libtether_[a-z]+\.a|libtether\.so|libtether_shmem\.so|tetherrun|parent_app|parent_shmem' <<<"$linked" || true)
    [ -z "$extra" ] || fail "(d) a parent project also builds $(wc -l <<<"$extra") of tether's tests/bench/examples/tools: $(head -8 <<<"$extra" | tr '\n' ' ')"
    echo "(d) linked by the parent's build: $(tr '\n' ' ' <<<"$linked")"
  else
    echo "(d) build list checked with Ninja only (generator $gen)"
  fi
else
  fail "(d) configure of a project including tether with add_subdirectory"
fi

echo
echo "programs' own reports:"
grep -h " ok: " "$work"/*.log | sort | uniq -c
if [ $fails -eq 0 ]; then echo "install_check: all passed"; exit 0; fi
echo "install_check: $fails check(s) failed"
exit 1
