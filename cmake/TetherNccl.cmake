# NCCL discovery for the benchmarks that compare against it (bench/coll, bench/msg). Include after CUDA is set up.
# Sets TETHER_NCCL_FOUND (TRUE when nccl.h and libnccl were found), TETHER_NCCL_INCLUDE_DIR, TETHER_NCCL_LIBRARY,
# TETHER_NCCL_VERSION ("2.28.3", from nccl.h) and TETHER_NCCL_WHY_NOT (a phrase for status lines when not found).
# Where: under TETHER_NCCL_HOME when it is set (include/, lib/ or lib64/; nothing else is searched then), else
# NCCL_HOME from the environment, the CUDA toolkit's directories and the system's. Searched again when
# TETHER_NCCL_HOME changes (find_path/find_library cache what they found). Safe to include from several directories
# (no include guard: the result variables are per directory; the search itself is cached).

set(TETHER_NCCL_HOME "" CACHE PATH "NCCL install for the NCCL benchmarks (include/nccl.h, lib/libnccl.so)")
set(TETHER_NCCL_FOUND FALSE)
set(TETHER_NCCL_VERSION "")
set(TETHER_NCCL_WHY_NOT "")
if(NOT TETHER_HAVE_CUDA)
  set(TETHER_NCCL_WHY_NOT "CUDA parts off")
  return()
endif()

if(NOT "${TETHER_NCCL_HOME}" STREQUAL "${_TETHER_NCCL_HOME_SEARCHED}")
  unset(TETHER_NCCL_INCLUDE_DIR CACHE)
  unset(TETHER_NCCL_LIBRARY CACHE)
endif()
set(_TETHER_NCCL_HOME_SEARCHED "${TETHER_NCCL_HOME}" CACHE INTERNAL "")
if(TETHER_NCCL_HOME)
  find_path(TETHER_NCCL_INCLUDE_DIR nccl.h PATHS "${TETHER_NCCL_HOME}" PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(TETHER_NCCL_LIBRARY NAMES nccl libnccl.so.2 PATHS "${TETHER_NCCL_HOME}" PATH_SUFFIXES lib lib64
               NO_DEFAULT_PATH)
else()
  find_path(TETHER_NCCL_INCLUDE_DIR nccl.h HINTS "$ENV{NCCL_HOME}" ${CUDAToolkit_INCLUDE_DIRS}
            "${CUDAToolkit_LIBRARY_ROOT}" PATH_SUFFIXES include)
  find_library(TETHER_NCCL_LIBRARY NAMES nccl libnccl.so.2
               HINTS "$ENV{NCCL_HOME}" "${CUDAToolkit_LIBRARY_ROOT}" "${CUDAToolkit_LIBRARY_DIR}"
               PATH_SUFFIXES lib lib64)
endif()
if(NOT TETHER_NCCL_INCLUDE_DIR OR NOT TETHER_NCCL_LIBRARY)
  set(TETHER_NCCL_WHY_NOT "NCCL's nccl.h or libnccl not found")
  if(TETHER_NCCL_HOME)
    string(APPEND TETHER_NCCL_WHY_NOT " under ${TETHER_NCCL_HOME}")
  endif()
  string(APPEND TETHER_NCCL_WHY_NOT "; set TETHER_NCCL_HOME")
  return()
endif()
file(STRINGS "${TETHER_NCCL_INCLUDE_DIR}/nccl.h" TETHER_NCCL_VERSION REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE "[^0-9;]|#define NCCL_(MAJOR|MINOR|PATCH)" "" TETHER_NCCL_VERSION "${TETHER_NCCL_VERSION}")
string(REPLACE ";" "." TETHER_NCCL_VERSION "${TETHER_NCCL_VERSION}")
set(TETHER_NCCL_FOUND TRUE)
