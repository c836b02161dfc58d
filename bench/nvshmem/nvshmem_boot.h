// Starting NVSHMEM under tetherrun, shared by tether_bench_nvshmem (nvshmem_host_put.cu) and
// tether_bench_nvshmem_device (nvshmem_device_bench.cu). tether is used for one thing only: handing NVSHMEM's unique
// id from PE 0 to every PE. No MPI, no files.
//
//   envDefault(...)                 NVSHMEM's environment, before any NVSHMEM call (every PE the same values)
//   tether_init; cudaSetDevice(tether_local_pe % device count)   (the program does these)
//   bootNvshmem(w, &error)          PE 0: nvshmemx_get_uniqueid, tether_put of the id into a HOST symmetric buffer of
//                                   every PE; tether_barrier_all; every PE: nvshmemx_init_attr(WITH_UNIQUEID) with
//                                   rank tether_my_pe, size tether_n_pes; checks nvshmem_my_pe / nvshmem_n_pes.
#pragma once

#include <nvshmem.h>
#include <nvshmemx.h>
#include <tether/tether.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace tether_nvshmem {

// Sets name=value unless the environment already has a non-empty name; *effective gets the value in force.
// false only when setenv fails.
inline bool envDefault(const char* name, const std::string& value, std::string* effective) {
  const char* cur = std::getenv(name);
  if (cur != nullptr && *cur != '\0') {
    *effective = cur;
    return true;
  }
  *effective = value;
  return setenv(name, value.c_str(), 1) == 0;
}

// Collective over all tether PEs, after tether_init and cudaSetDevice. false with *error on failure.
inline bool bootNvshmem(tether_t w, std::string* error) {
  const int me = tether_my_pe(w), npes = tether_n_pes(w);
  auto tetherFailed = [&](const char* call, tether_status_t st) {
    *error = std::string(call) + " failed: " + tether_status_string(st) + ": " + tether_last_error();
    return false;
  };
  void* idBuf = nullptr;
  tether_status_t st = tether_malloc_kind(w, TETHER_SEG_HOST, 64, sizeof(nvshmemx_uniqueid_t), &idBuf);
  if (st != TETHER_SUCCESS) return tetherFailed("tether_malloc_kind(HOST, unique id)", st);
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (me == 0) {
    const int rc = nvshmemx_get_uniqueid(&id);
    if (rc != 0) {
      *error = "nvshmemx_get_uniqueid failed (status " + std::to_string(rc) + ")";
      return false;  // the other PEs wait in the barrier below; the caller exits and tetherrun ends the job
    }
    for (int pe = 0; pe < npes; ++pe) {
      st = tether_put(w, idBuf, &id, sizeof(id), pe);
      if (st != TETHER_SUCCESS) return tetherFailed("tether_put(unique id)", st);
    }
  }
  st = tether_barrier_all(w);
  if (st != TETHER_SUCCESS) return tetherFailed("tether_barrier_all", st);
  std::memcpy(&id, idBuf, sizeof(id));
  st = tether_free(w, idBuf);
  if (st != TETHER_SUCCESS) return tetherFailed("tether_free(unique id)", st);

  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  int rc = nvshmemx_set_attr_uniqueid_args(me, npes, &id, &attr);
  if (rc != 0) {
    *error = "nvshmemx_set_attr_uniqueid_args(" + std::to_string(me) + ", " + std::to_string(npes) +
             ") failed (status " + std::to_string(rc) + ")";
    return false;
  }
  rc = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
  if (rc != 0) {
    *error = "nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID) failed (status " + std::to_string(rc) + ")";
    return false;
  }
  if (nvshmem_my_pe() != me || nvshmem_n_pes() != npes) {
    *error = "NVSHMEM says PE " + std::to_string(nvshmem_my_pe()) + " of " + std::to_string(nvshmem_n_pes()) +
             ", tether says " + std::to_string(me) + " of " + std::to_string(npes);
    return false;
  }
  return true;
}

// "major.minor.patch" of the NVSHMEM library in use (after init).
inline std::string nvshmemVersion() {
  int major = 0, minor = 0, patch = 0;
  nvshmemx_vendor_get_version_info(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace tether_nvshmem
