// Helpers for multi-process tests (run under tetherrun). A failed check prints PE, file, line, the expression and
// tether_last_error(), then exits 1 so tetherrun stops the job and ctest sees the failure.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tether/tether.h"

namespace mp {

inline tether_t& world() {
  static tether_t w = nullptr;  // test program state, not library state
  return w;
}

[[noreturn]] inline void fail(const char* file, int line, const char* expr, const char* extra) {
  std::fprintf(stderr, "FAIL PE %d %s:%d: %s%s%s | last error: %s\n", tether_my_pe(world()), file, line, expr,
               extra ? " " : "", extra ? extra : "", tether_last_error());
  std::fflush(stderr);
  std::exit(1);
}

// Output for a run that may hang: stdout line-buffered (into tetherrun's pipe it is otherwise block-buffered, and a
// run killed while hung loses every line it printed, so nobody can tell where it stopped), stderr unbuffered. Call
// first in main, before anything is printed; mp::init does.
inline void lineBufferedOutput() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::setvbuf(stderr, nullptr, _IONBF, 0);
}

inline void init() {
  lineBufferedOutput();
  if (tether_init(&world()) != TETHER_SUCCESS) {
    std::fprintf(stderr, "FAIL: tether_init: %s\n", tether_last_error());
    std::exit(1);
  }
}

inline int finish() {
  if (tether_finalize(world()) != TETHER_SUCCESS) {
    std::fprintf(stderr, "FAIL: tether_finalize: %s\n", tether_last_error());
    return 1;
  }
  return 0;
}

// n zeroed bytes of the HOST symmetric heap, 64-byte aligned (collective, as tether_malloc_kind). Every PE's copy is
// zeroed before any PE returns (a barrier after the memset: a peer's first write cannot land before it and be wiped,
// as it could in mp_stream's prepared-set barriers before 2026-12-06). Exits on failure.
inline void* hostZeroed(tether_t w, size_t n) {
  void* p = nullptr;
  if (tether_malloc_kind(w, TETHER_SEG_HOST, 64, n, &p) != TETHER_SUCCESS)
    fail(__FILE__, __LINE__, "hostZeroed", nullptr);
  std::memset(p, 0, n);
  if (tether_barrier_all(w) != TETHER_SUCCESS) fail(__FILE__, __LINE__, "hostZeroed: tether_barrier_all", nullptr);
  return p;
}

// Whether PE pe's copy of the symmetric HOST/STATIC object sym is load/store-mapped here, as the library says
// (tether_ptr non-NULL). For a test that must know which route the library takes (direct or over the network), in
// any job: one host, every peer over the network (TETHER_PATHS host=ucx), or mixed (shm to the PEs of this host, UCX
// to the others). A check OF tether_ptr needs an expectation of its own: expectMapped.
inline bool mapped(const void* sym, int pe) { return tether_ptr(world(), sym, pe) != nullptr; }

// Which PEs share this PE's host, by host name (collective: every PE calls it, once per job is enough). The library
// tells hosts apart by host name + boot id; the hosts a test job runs on (one machine, or the network namespaces of
// scripts/netns-hosts, each with its own UTS name) differ in name. Exits on failure.
inline std::vector<bool> sameHost(tether_t w) {
  constexpr size_t kName = 256;
  const int n = tether_n_pes(w);
  void* p = nullptr;
  // HOST: gethostname writes it with the CPU (tether_calloc gives GPU memory when every PE has a GPU).
  if (tether_malloc_kind(w, TETHER_SEG_HOST, 0, kName, &p) != TETHER_SUCCESS)
    fail(__FILE__, __LINE__, "sameHost: tether_malloc_kind", nullptr);
  auto* mine = static_cast<char*>(p);
  std::memset(mine, 0, kName);
  if (gethostname(mine, kName - 1) != 0) fail(__FILE__, __LINE__, "sameHost: gethostname", std::strerror(errno));
  if (tether_barrier_all(w) != TETHER_SUCCESS) fail(__FILE__, __LINE__, "sameHost: barrier", nullptr);
  std::vector<bool> same(static_cast<size_t>(n));
  char theirs[kName] = {};
  for (int pe = 0; pe < n; ++pe) {
    if (tether_get(w, theirs, mine, kName, pe) != TETHER_SUCCESS) fail(__FILE__, __LINE__, "sameHost: get", nullptr);
    same[static_cast<size_t>(pe)] = std::strncmp(theirs, mine, kName) == 0;
  }
  if (tether_barrier_all(w) != TETHER_SUCCESS || tether_free(w, mine) != TETHER_SUCCESS)
    fail(__FILE__, __LINE__, "sameHost: barrier/free", nullptr);
  return same;
}

// Whether PE pe's HOST/STATIC memory should be mapped here (what tether_ptr must say), given sameHost's answer:
// this PE's own, and a same-host PE's unless TETHER_PATHS host=ucx sends same-host peers over the network too (how
// the UCX provider runs on one host). A PE on another host is reached over the network: never mapped.
inline bool expectMapped(const std::vector<bool>& sameHostPes, int pe) {
  if (pe == tether_my_pe(world())) return true;
  const char* paths = std::getenv("TETHER_PATHS");
  return sameHostPes.at(static_cast<size_t>(pe)) && !(paths && std::strstr(paths, "host=ucx"));
}

}  // namespace mp

#define MP_CHECK(cond)                                             \
  do {                                                             \
    if (!(cond)) ::mp::fail(__FILE__, __LINE__, #cond, nullptr);   \
  } while (0)
#define MP_OK(call) MP_CHECK((call) == TETHER_SUCCESS)
#define MP_EXPECT_STATUS(call, code)                                                                  \
  do {                                                                                                \
    tether_status_t mp_s_ = (call);                                                                   \
    if (mp_s_ != (code)) ::mp::fail(__FILE__, __LINE__, #call, tether_status_string(mp_s_));          \
  } while (0)
namespace mp {

// A PE that skipped a collective waits here for the others to get through their timeout: each of them calls
// passedTimeout(counter, pe) when done, and the skipping PE (pe) waits for all `others` of them. counter: a symmetric
// zeroed uint64_t. Waits up to 5 TETHER_TIMEOUTs (the others need one).
inline void passedTimeout(uint64_t* counter, int pe) {
  const uint64_t one = 1;
  MP_OK(tether_atomic(world(), TETHER_AMO_ADD, TETHER_UINT64, counter, &one, nullptr, nullptr, pe));
}
inline void awaitTimeouts(uint64_t* counter, int others) {
  const uint64_t n = static_cast<uint64_t>(others);
  tether_status_t st = TETHER_ERR_TIMEOUT;
  for (int i = 0; i < 5 && st == TETHER_ERR_TIMEOUT; ++i)
    st = tether_wait_until(world(), counter, TETHER_UINT64, TETHER_CMP_GE, &n);
  MP_OK(st);
}

// The run's seed: MP_SEED, or PE 0's clock; every PE takes PE 0's (read with a get after a barrier) and PE 0 prints
// "<name>: MP_SEED=<seed>". Collective.
inline uint64_t agreeSeed(tether_t w, const char* name) {
  const char* s = std::getenv("MP_SEED");
  uint64_t seed = s ? std::strtoull(s, nullptr, 10)
                    : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  auto* word = static_cast<uint64_t*>(hostZeroed(w, sizeof(uint64_t)));
  if (tether_my_pe(w) == 0) *word = seed;
  MP_OK(tether_barrier_all(w));
  if (tether_my_pe(w) != 0) MP_OK(tether_get(w, &seed, word, sizeof seed, 0));
  if (tether_my_pe(w) == 0) std::printf("%s: MP_SEED=%" PRIu64 "\n", name, seed);
  return seed;
}

}  // namespace mp

#define MP_MSG_HAS(needle)                                                                            \
  do {                                                                                                \
    if (!std::strstr(tether_last_error(), (needle))) ::mp::fail(__FILE__, __LINE__, "message lacks", needle); \
  } while (0)
