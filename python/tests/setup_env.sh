#!/usr/bin/env bash
# Makes the environment of the Python tests (ctest fixture python_env, tests/python/CMakeLists.txt):
#   setup_env.sh VENV SOURCE_DIR WHEEL_BUILD_DIR CUDA(ON|OFF)
# 1. VENV: a virtual environment (python3 -m venv --system-site-packages; Debian: python3-venv) with numpy, pytest
#    and the build backend (scikit-build-core, nanobind), each taken from the machine's Python when it has it, else
#    from SOURCE_DIR/.whl alone when that holds it with its dependencies (machines without network), else from pip's
#    index. torch/cupy wheels in .whl are installed too (with their dependencies from .whl), for the
#    GPU tests. mpi4py (built with Open MPI's mpicc.openmpi when that is there) for the tether.init(comm=) tests.
# 2. `pip install SOURCE_DIR` into it: the package as a user gets it (libtether, tetherrun and the extension built by
#    scikit-build-core), incrementally in WHEEL_BUILD_DIR, CUDA parts only when CUDA=ON.
# Exit 0 when the package imports; non-zero with the reason otherwise.
set -euo pipefail
venv=$1 src=$2 wheel_build=$3 cuda=${4:-OFF}
py=${PYTHON:-python3}
command -v "$py" >/dev/null || { echo "setup_env: $py not found (Debian: apt-get install python3 python3-venv)" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
  # --system-site-packages: torch/CuPy installed on the machine (GPU machines) are usable by the GPU tests; what the
  # tests need beyond them is installed into the venv
  "$py" -m venv --system-site-packages "$venv" \
    || { echo "setup_env: '$py -m venv' failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
fi
# A machine Python that is itself a virtual environment (the GPU machines' python3 is /opt/torch/.venv, holding numpy,
# torch and CuPy): a venv made from it sees the base interpreter's packages, not that environment's; a .pth file
# adds them (after the venv's own, which take precedence).
parent_sites=$("$py" -c 'import site, sys; print("\n".join(site.getsitepackages()) if sys.prefix != sys.base_prefix else "")')
if [ -n "$parent_sites" ]; then
  vsite=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  printf '%s\n' "$parent_sites" >"$vsite/_tether_parent_env.pth"
  echo "setup_env: $py is a virtual environment: its packages ($(echo $parent_sites)) are visible in $venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
whl="$src/.whl"
install() {  # packages...: from .whl/ alone when it has them (machines without network), else from the index
  if [ -d "$whl" ] && "${pip[@]}" install --no-index --find-links "$whl" "$@" 2>/dev/null; then return 0; fi
  "${pip[@]}" install "$@"
}
need=()
for mod_pkg in numpy:numpy pytest:pytest scikit_build_core:scikit-build-core nanobind:nanobind; do
  "$venv/bin/python" -c "import ${mod_pkg%%:*}" 2>/dev/null || need+=("${mod_pkg##*:}")
done
for p in "${need[@]}"; do
  echo "setup_env: pip install $p"
  install "$p"
done
# mpi4py for the tether.init(comm=...) tests (python_mpi_*), built from source against Open MPI (mpicc.openmpi of
# libopenmpi-dev: the tests run under Open MPI's mpirun); without it those tests skip and say why.
if ! "$venv/bin/python" -c "import mpi4py" 2>/dev/null; then
  if command -v mpicc.openmpi >/dev/null 2>&1; then
    echo "setup_env: pip install mpi4py (built with mpicc.openmpi)"
    MPICC=mpicc.openmpi install --no-binary mpi4py mpi4py \
      || echo "setup_env: WARNING: mpi4py did not install: the python_mpi tests skip"
  else
    echo "setup_env: no mpicc.openmpi (Debian: libopenmpi-dev): mpi4py not installed, the python_mpi tests skip"
  fi
fi
# Optional GPU test dependencies: only from local wheels (never downloaded here: they are large), with their
# dependencies from .whl/ too (torch's nvidia-* wheels).
if [ -d "$whl" ]; then
  for w in "$whl"/torch-*.whl "$whl"/cupy*.whl; do
    [ -f "$w" ] || continue
    "${pip[@]}" install --no-index --find-links "$whl" "$w" \
      || echo "setup_env: WARNING: could not install $w (its dependencies missing from .whl/?): its GPU tests skip"
  done
fi
echo "setup_env: pip install $src (build dir $wheel_build, CUDA $cuda)"
"${pip[@]}" install --no-build-isolation --no-deps "$src" -C build-dir="$wheel_build" \
  -C cmake.define.TETHER_CUDA="$cuda" -C cmake.define.TETHER_WERROR=ON
cd /
"$venv/bin/python" -c "import tether; print('setup_env: tether', tether.__version__, tether.build_info())"
