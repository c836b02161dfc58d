// Helpers for multi-process tests (run under tetherrun). A failed check prints PE, file, line, the expression and
// tether_last_error(), then exits 1 so tetherrun stops the job and ctest sees the failure.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

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

// n zeroed bytes of the HOST symmetric heap, 64-byte aligned (collective, as tether_malloc_kind). Exits on failure.
inline void* hostZeroed(tether_t w, size_t n) {
  void* p = nullptr;
  if (tether_malloc_kind(w, TETHER_SEG_HOST, 64, n, &p) != TETHER_SUCCESS)
    fail(__FILE__, __LINE__, "hostZeroed", nullptr);
  std::memset(p, 0, n);
  return p;
}

// Whether PE pe's HOST/STATIC memory is mapped here (tether_ptr non-NULL): always, except over the network path
// (TETHER_PATHS host=ucx, how the UCX provider runs on one host: only this PE's own memory is mapped).
inline bool mapped(int pe) {
  const char* paths = std::getenv("TETHER_PATHS");
  return pe == tether_my_pe(world()) || !paths || !std::strstr(paths, "host=ucx");
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
#define MP_MSG_HAS(needle)                                                                            \
  do {                                                                                                \
    if (!std::strstr(tether_last_error(), (needle))) ::mp::fail(__FILE__, __LINE__, "message lacks", needle); \
  } while (0)
