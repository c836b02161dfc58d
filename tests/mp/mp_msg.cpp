// Two-sided messaging (include/tether/msg.h, issue #20) at 2/4/8 PEs on host memory: malloc'd pageable buffers and
// symmetric HOST buffers (tether_malloc_kind(TETHER_SEG_HOST)). Sections, in order (PE 0 prints one OK line each):
//   1 init/finalize: calls before tether_msg_init fail (TETHER_ERR_INVALID_ARG); init with NULL and with an attr;
//     bad attr; bad arguments of every call (NULL req, PE out of range, bad tags, wildcards on send, NULL buffers,
//     unknown requests) fail cleanly with a message; finalize with a pending request reports it
//   2 ring exchange (me -> me+1) of 0 B .. 3 MiB across the eager limit, every buffer kind, irecv+send and
//     isend+recv, every byte, the guard after the message and each status checked
//   3 matching order: k >= 3 x slots messages (some rendezvous) with one tag arrive in order; two interleaved tags
//     received all-B-then-all-A (unexpected messages held, no deadlock)
//   4 wildcards: TETHER_ANY_PE/TETHER_ANY_TAG receives (each source once, status right), decoys skipped
//   5 unexpected messages (sent before the receive is posted, received in reverse order); more eager messages than
//     the unexpected pool and the ring hold (flow control)
//   6 truncation: eager and rendezvous, posted and unexpected, through wait/test/waitall; the pair stays usable
//   7 self send
//   8 many outstanding requests: 64 per peer each way, tether_msg_waitall / waitany / test polling
//   9 random storm from MP_SEED (printed): random peers, tags, sizes 0 .. 64 KiB; every PE regenerates every PE's plan
//  10 zero-size messages, NULL buffers with 0 bytes, TETHER_REQUEST_NULL in tether_msg_wait/test/waitall/waitany;
//     test before a message can have arrived leaves the request alone
//  11 several threads of a PE messaging at once
//  12 finalize and init again (mismatched attr -> TETHER_ERR_MISMATCH), tether_finalize releases the messaging state
//  13 eager messages spanning ring slots (PEs on other hosts): stale payload bytes where later slots' sequence words
//     lie never read as a message; messages that meet the ring's end
// `mp_msg timeout` (2 PEs, TETHER_TIMEOUT=3): waits of every form time out with a message naming the request and
// leave it pending (a later wait completes it), the status of a timed-out wait is not garbage; a blocking recv or
// send that timed out has returned: it no longer writes or reads the caller's buffer.
// `mp_msg poolfull`: a rendezvous transfer whose handshake or data travel behind eager messages that fill the
// receiver's unexpected pool (valid under MPI's rules; see poolFullMode).
// MP_MSG_SMALL=1: the messaging layer runs with eager 256 B, 4 slots and a 64 KiB unexpected pool (rendezvous,
// ring wrap-around and flow control everywhere). MP_MSG_BIG=bytes: the largest ring-exchange size.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mp_util.h"
#include "tether/msg.h"

namespace {

tether_t w;
int me, npes;
uint64_t seed;
bool smallMode = false;
size_t eager = 8192, slots = 16, unexpectedBytes = 4u << 20;
const char* section = "";
std::string caseName;

constexpr unsigned char kGuard = 0xA5;
constexpr size_t kGuardBytes = 64;

[[noreturn]] void failf(const char* file, int line, const char* expr, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  char all[1400];
  std::snprintf(all, sizeof all, "%s [section %s, case %s, MP_SEED=%" PRIu64 "%s]", buf, section, caseName.c_str(),
                seed, smallMode ? ", MP_MSG_SMALL=1" : "");
  mp::fail(file, line, expr, all);
}

// A failed expectation that lets the run go on (the timeout mode's independent findings): printed like a failure,
// counted, and the program exits 1 at the end.
int softFailures = 0;
void softFail(const char* file, int line, const char* expr, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "FAIL PE %d %s:%d: %s %s [section %s, case %s] | last error: %s\n", me, file, line, expr, buf,
               section, caseName.c_str(), tether_last_error());
  ++softFailures;
}
#define SOFTF(cond, ...) ((cond) ? true : (softFail(__FILE__, __LINE__, #cond, __VA_ARGS__), false))

#define CHECKF(cond, ...)                                          \
  do {                                                             \
    if (!(cond)) failf(__FILE__, __LINE__, #cond, __VA_ARGS__);    \
  } while (0)
// A call's status must be `code`; a failure must leave a message in tether_last_error().
#define EXPECT_ST(call, code)                                                                                   \
  do {                                                                                                          \
    const tether_status_t e_st_ = (call);                                                                       \
    const tether_status_t e_want_ = (code);                                                                     \
    if (e_st_ != e_want_)                                                                                       \
      failf(__FILE__, __LINE__, #call, "returned %s, expected %s", tether_status_string(e_st_),                 \
            tether_status_string(e_want_));                                                                     \
    if (e_want_ != TETHER_SUCCESS && tether_last_error()[0] == '\0')                                            \
      failf(__FILE__, __LINE__, #call, "failed with %s but tether_last_error() is empty",                       \
            tether_status_string(e_st_));                                                                       \
  } while (0)
#define OK(call) EXPECT_ST(call, TETHER_SUCCESS)
// Either of two failure codes.
#define EXPECT_ST2(call, code1, code2)                                                                          \
  do {                                                                                                          \
    const tether_status_t e_st_ = (call);                                                                       \
    if (e_st_ != (code1) && e_st_ != (code2))                                                                   \
      failf(__FILE__, __LINE__, #call, "returned %s, expected %s or %s", tether_status_string(e_st_),           \
            tether_status_string(code1), tether_status_string(code2));                                          \
    if (tether_last_error()[0] == '\0') failf(__FILE__, __LINE__, #call, "failed but tether_last_error() is empty"); \
  } while (0)

void setCase(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  caseName = buf;
}

void barrier() { MP_OK(tether_barrier_all(w)); }

void sectionDone(int number) {
  barrier();
  if (me == 0) std::printf("mp_msg: section %d (%s) OK\n", number, section);
  caseName.clear();
}

// ---- content: every byte derived from (seed, a key naming the message), prefix-stable ----------------------------

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t msgKey(uint64_t sectionNo, int src, int dst, uint64_t index) {
  const uint64_t pair = mix(static_cast<uint64_t>(src) * 131u + static_cast<uint64_t>(dst));
  return mix(seed ^ mix(sectionNo * 0x100000001b3ull ^ pair ^ mix(index + 0x51ed27ull)));
}
void fill(void* p, size_t n, uint64_t key) {
  auto* b = static_cast<unsigned char*>(p);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = mix(key + i);
    std::memcpy(b + i, &v, 8);
  }
  if (i < n) {
    const uint64_t v = mix(key + i);
    std::memcpy(b + i, &v, n - i);
  }
}
unsigned char expectedByte(uint64_t key, size_t i) {
  const uint64_t v = mix(key + (i & ~size_t{7}));
  unsigned char b[8];
  std::memcpy(b, &v, 8);
  return b[i & 7];
}
// The first n bytes of p are the message `key`'s first n bytes.
void checkBytes(const void* p, size_t n, uint64_t key, const char* what) {
  const auto* b = static_cast<const unsigned char*>(p);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = mix(key + i);
    if (std::memcmp(b + i, &v, 8) != 0) break;
  }
  for (; i < n; ++i)
    CHECKF(b[i] == expectedByte(key, i), "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, b[i],
           expectedByte(key, i));
}
void fillGuard(void* p, size_t n) { std::memset(p, kGuard, n); }
void checkGuard(const void* p, size_t n, const char* what) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    CHECKF(b[i] == kGuard, "%s: byte %zu past the delivered bytes was overwritten (0x%02x)", what, i, b[i]);
}

void checkStatus(const tether_msg_status_t& st, int source, int tag, size_t bytes, tether_status_t error,
                 const char* what) {
  CHECKF(st.source == source && st.tag == tag && st.bytes == bytes && st.error == error,
         "%s: status {source %d, tag %d, bytes %zu, error %s}, expected {%d, %d, %zu, %s}", what, st.source, st.tag,
         st.bytes, tether_status_string(st.error), source, tag, bytes, tether_status_string(error));
}
tether_msg_status_t poisoned() {
  tether_msg_status_t st;
  st.source = -77;
  st.tag = -77;
  st.bytes = 0xdeadbeef;
  st.error = TETHER_ERR_INTERNAL;
  return st;
}

size_t envSize(const char* name, size_t dflt) {
  const char* s = std::getenv(name);
  if (!s || !*s) return dflt;
  char* end = nullptr;
  size_t v = std::strtoull(s, &end, 10);
  if (end && (*end == 'k' || *end == 'K')) v <<= 10;
  if (end && (*end == 'm' || *end == 'M')) v <<= 20;
  return v;
}

tether_msg_attr_t smallAttr() {
  tether_msg_attr_t a;
  a.eager_bytes = 256;
  a.slots = 4;
  a.unexpected_bytes = 64u << 10;
  return a;
}

// Buffers: pageable (malloc) and symmetric HOST, each with room for the guard.
struct Buf {
  unsigned char* p = nullptr;
  size_t cap = 0;
  bool sym = false;
};
Buf pageable(size_t n) {
  Buf b;
  b.p = static_cast<unsigned char*>(std::malloc(n + kGuardBytes));
  MP_CHECK(b.p != nullptr);
  b.cap = n + kGuardBytes;
  return b;
}
Buf symSend, symRecv;  // collective allocations, made once

// ---- 1: init/finalize and bad arguments ------------------------------------------------------------------------

// Every messaging call on an instance without messaging state: TETHER_ERR_INVALID_ARG.
void expectNotInitialised(const char* when) {
  setCase("calls %s", when);
  unsigned char b[16] = {};
  tether_request_t r = TETHER_REQUEST_NULL, rs[2] = {TETHER_REQUEST_NULL, TETHER_REQUEST_NULL};
  tether_msg_status_t st;
  int done = 0;
  size_t idx = 0;
  const int peer = (me + 1) % npes;
  EXPECT_ST(tether_send(w, b, sizeof b, peer, 1), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_recv(w, b, sizeof b, peer, 1, &st), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_isend(w, b, sizeof b, peer, 1, &r), TETHER_ERR_INVALID_ARG);
  CHECKF(r == TETHER_REQUEST_NULL, "a failed isend set *req to %" PRIu64, static_cast<uint64_t>(r));
  EXPECT_ST(tether_irecv(w, b, sizeof b, peer, 1, &r), TETHER_ERR_INVALID_ARG);
  CHECKF(r == TETHER_REQUEST_NULL, "a failed irecv set *req to %" PRIu64, static_cast<uint64_t>(r));
  EXPECT_ST(tether_msg_wait(w, &r, &st), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_msg_test(w, &r, &done, &st), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_msg_waitall(w, 2, rs, nullptr), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_msg_waitany(w, 2, rs, &idx, &st), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_msg_finalize(w), TETHER_ERR_INVALID_ARG);
}

// A short exchange around the ring: the layer works (sizes around the eager limit e).
void ping(size_t e, int tagBase) {
  const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
  const size_t sizes[] = {0, 5, e, e + 1, 4 * e + 3};
  std::vector<unsigned char> s(4 * e + 3 + kGuardBytes), r(4 * e + 3 + kGuardBytes);
  int k = 0;
  for (size_t n : sizes) {
    setCase("ping %zu B (eager %zu)", n, e);
    const int tag = tagBase + k++;
    fill(s.data(), n, msgKey(1, me, next, static_cast<uint64_t>(tag)));
    fillGuard(r.data(), r.size());
    tether_request_t rr = TETHER_REQUEST_NULL;
    tether_msg_status_t st = poisoned();
    OK(tether_irecv(w, r.data(), n, prev, tag, &rr));
    CHECKF(rr != TETHER_REQUEST_NULL, "irecv returned TETHER_REQUEST_NULL");
    OK(tether_send(w, s.data(), n, next, tag));
    OK(tether_msg_wait(w, &rr, &st));
    CHECKF(rr == TETHER_REQUEST_NULL, "wait left the request set");
    checkStatus(st, prev, tag, n, TETHER_SUCCESS, "ping recv");
    checkBytes(r.data(), n, msgKey(1, prev, me, static_cast<uint64_t>(tag)), "ping");
    checkGuard(r.data() + n, kGuardBytes, "ping");
  }
}

void badArguments() {
  unsigned char b[64] = {};
  tether_request_t r = TETHER_REQUEST_NULL;
  tether_msg_status_t st;
  const int peer = (me + 1) % npes;
  int done = 0;
  size_t idx = 0;
  setCase("NULL request");
  EXPECT_ST(tether_isend(w, b, 8, peer, 1, nullptr), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_irecv(w, b, 8, peer, 1, nullptr), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_msg_wait(w, nullptr, &st), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_msg_test(w, nullptr, &done, &st), TETHER_ERR_INVALID_ARG);
  setCase("NULL done / index / request array");
  EXPECT_ST(tether_msg_test(w, &r, nullptr, &st), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_msg_waitany(w, 1, &r, nullptr, &st), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_msg_waitall(w, 3, nullptr, nullptr), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_msg_waitany(w, 3, nullptr, &idx, &st), TETHER_ERR_INVALID_ARG);
  setCase("PE out of range");
  for (int pe : {npes, npes + 5, -2, -100}) {
    EXPECT_ST(tether_send(w, b, 8, pe, 1), TETHER_ERR_INVALID_PE);
    EXPECT_ST(tether_isend(w, b, 8, pe, 1, &r), TETHER_ERR_INVALID_PE);
    CHECKF(r == TETHER_REQUEST_NULL, "a failed isend set *req");
    EXPECT_ST(tether_recv(w, b, 8, pe, 1, &st), TETHER_ERR_INVALID_PE);
    EXPECT_ST(tether_irecv(w, b, 8, pe, 1, &r), TETHER_ERR_INVALID_PE);
    CHECKF(r == TETHER_REQUEST_NULL, "a failed irecv set *req");
  }
  setCase("TETHER_ANY_PE on send");
  EXPECT_ST2(tether_send(w, b, 8, TETHER_ANY_PE, 1), TETHER_ERR_INVALID_PE, TETHER_ERR_INVALID_ARG);
  EXPECT_ST2(tether_isend(w, b, 8, TETHER_ANY_PE, 1, &r), TETHER_ERR_INVALID_PE, TETHER_ERR_INVALID_ARG);
  setCase("negative tags");
  for (int tag : {-2, -1000, static_cast<int>(0x80000000u)}) {
    EXPECT_ST(tether_send(w, b, 8, peer, tag), TETHER_ERR_INVALID_ARG);
    EXPECT_ST(tether_isend(w, b, 8, peer, tag, &r), TETHER_ERR_INVALID_ARG);
    EXPECT_ST(tether_recv(w, b, 8, peer, tag, &st), TETHER_ERR_INVALID_ARG);
    EXPECT_ST(tether_irecv(w, b, 8, peer, tag, &r), TETHER_ERR_INVALID_ARG);
  }
  setCase("TETHER_ANY_TAG on send");
  EXPECT_ST(tether_send(w, b, 8, peer, TETHER_ANY_TAG), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_isend(w, b, 8, peer, TETHER_ANY_TAG, &r), TETHER_ERR_INVALID_ARG);
  setCase("NULL buffer with bytes > 0");
  EXPECT_ST(tether_send(w, nullptr, 8, peer, 1), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_isend(w, nullptr, 8, peer, 1, &r), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_recv(w, nullptr, 8, peer, 1, &st), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_irecv(w, nullptr, 8, peer, 1, &r), TETHER_ERR_INVALID_ARG);
  CHECKF(r == TETHER_REQUEST_NULL, "failed posting calls set *req");
  setCase("NULL world");
  EXPECT_ST(tether_send(nullptr, b, 8, peer, 1), TETHER_ERR_INVALID_ARG);
  EXPECT_ST(tether_irecv(nullptr, b, 8, peer, 1, &r), TETHER_ERR_INVALID_ARG);
  setCase("unknown request handles");
  // Never issued, and one that completed already (a stale copy): a clean failure, not a hang or a crash.
  tether_request_t bogus = static_cast<tether_request_t>(0xdead0000beefull);
  {
    const tether_status_t s = tether_msg_wait(w, &bogus, &st);
    CHECKF(s == TETHER_ERR_INVALID_ARG, "wait on a request never issued returned %s", tether_status_string(s));
    CHECKF(tether_last_error()[0] != '\0', "wait on a request never issued: empty tether_last_error()");
  }
  tether_request_t self = TETHER_REQUEST_NULL;
  OK(tether_isend(w, b, 8, me, 9, &self));
  const tether_request_t stale = self;
  OK(tether_recv(w, b + 8, 8, me, 9, &st));
  OK(tether_msg_wait(w, &self, &st));
  CHECKF(self == TETHER_REQUEST_NULL, "wait left the request set");
  {
    tether_request_t copy = stale;
    const tether_status_t s = tether_msg_test(w, &copy, &done, &st);
    CHECKF(s == TETHER_ERR_INVALID_ARG, "test on a completed (stale) request returned %s", tether_status_string(s));
    CHECKF(tether_last_error()[0] != '\0', "test on a stale request: empty tether_last_error()");
  }
}

void initFinalize() {
  section = "init/finalize and bad arguments";
  expectNotInitialised("before tether_msg_init");
  barrier();
  setCase("init NULL");
  OK(tether_msg_init(w, nullptr));
  setCase("init twice");
  EXPECT_ST(tether_msg_init(w, nullptr), TETHER_ERR_INVALID_ARG);
  barrier();
  ping(envSize("TETHER_MSG_EAGER", 8192), 100);
  badArguments();
  barrier();
  setCase("finalize after init NULL");
  OK(tether_msg_finalize(w));
  expectNotInitialised("after tether_msg_finalize");
  barrier();

  setCase("attr slots 1");
  tether_msg_attr_t bad = smallAttr();
  bad.slots = 1;
  EXPECT_ST(tether_msg_init(w, &bad), TETHER_ERR_INVALID_ARG);
  expectNotInitialised("after a failed tether_msg_init");
  barrier();

  setCase("init small attr");
  const tether_msg_attr_t a = smallAttr();
  OK(tether_msg_init(w, &a));
  ping(a.eager_bytes, 200);
  barrier();
  // A receive nobody will match is pending at finalize: dropped and reported (after the release).
  setCase("finalize with a pending receive");
  unsigned char b[8];
  tether_request_t r = TETHER_REQUEST_NULL;
  OK(tether_irecv(w, b, sizeof b, TETHER_ANY_PE, 31000, &r));
  barrier();
  EXPECT_ST(tether_msg_finalize(w), TETHER_ERR_INVALID_ARG);
  expectNotInitialised("after a finalize that dropped a request");
  barrier();

  // The configuration the rest runs with.
  setCase("init for the run");
  if (smallMode) {
    OK(tether_msg_init(w, &a));
  } else {
    OK(tether_msg_init(w, nullptr));
  }
  sectionDone(1);
}

// ---- 2: ring exchange ------------------------------------------------------------------------------------------

void ringExchange() {
  section = "ring exchange";
  const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
  const size_t big = envSize("MP_MSG_BIG", npes >= 8 ? (1u << 20) : (3u << 20));
  // around the eager limit, around whole fragments (a rendezvous fragment is one slot's payload, the eager size
  // rounded up to 64), then large
  const std::vector<size_t> sizes = {0,         1,         8,          eager - 1,  eager,      eager + 1, 2 * eager - 1,
                                     2 * eager, 2 * eager + 1, 16 * eager, 100u << 10, big};
  Buf ps = pageable(3u << 20), pr = pageable(3u << 20);
  int tag = 2000;
  const char* kindNames[] = {"pageable->pageable", "symmetric->symmetric", "pageable->symmetric",
                             "symmetric->pageable"};
  for (int kind = 0; kind < 4; ++kind) {
    const Buf& s = (kind == 1 || kind == 3) ? symSend : ps;
    const Buf& r = (kind == 1 || kind == 2) ? symRecv : pr;
    for (int mode = 0; mode < 2; ++mode) {
      for (size_t n : sizes) {
        // The largest size once per buffer kind (time at 8 PEs on 2 cores).
        if (n == big && mode != (kind & 1)) continue;
        ++tag;
        setCase("%s, %s, %zu B, tag %d", kindNames[kind], mode ? "isend+recv" : "irecv+send", n, tag);
        fill(s.p, n, msgKey(2, me, next, static_cast<uint64_t>(tag)));
        fillGuard(r.p, n + kGuardBytes);
        tether_msg_status_t st = poisoned();
        if (mode == 0) {
          tether_request_t rr = TETHER_REQUEST_NULL;
          OK(tether_irecv(w, r.p, n, prev, tag, &rr));
          OK(tether_send(w, s.p, n, next, tag));
          OK(tether_msg_wait(w, &rr, &st));
          CHECKF(rr == TETHER_REQUEST_NULL, "wait left the request set");
        } else {
          tether_request_t sr = TETHER_REQUEST_NULL;
          tether_msg_status_t ss = poisoned();
          OK(tether_isend(w, s.p, n, next, tag, &sr));
          // a receive buffer longer than the message
          OK(tether_recv(w, r.p, n + kGuardBytes / 2, prev, tag, &st));
          OK(tether_msg_wait(w, &sr, &ss));
          CHECKF(sr == TETHER_REQUEST_NULL, "wait left the request set");
          checkStatus(ss, next, tag, n, TETHER_SUCCESS, "send status");
        }
        checkStatus(st, prev, tag, n, TETHER_SUCCESS, "recv status");
        checkBytes(r.p, n, msgKey(2, prev, me, static_cast<uint64_t>(tag)), "ring");
        checkGuard(r.p + n, kGuardBytes, "ring");
      }
    }
  }
  std::free(ps.p);
  std::free(pr.p);
  sectionDone(2);
}

// ---- 3: matching order -----------------------------------------------------------------------------------------

size_t orderSize(size_t i) {
  if (i % 4 == 2 || i % 6 == 3) return 2 * eager + 8 * i + 3;  // rendezvous (with either tag of the second part)
  if (i % 9 == 4) return eager;                 // exactly the limit
  return (i * 37 + 1) % (eager + 1);
}

void matchingOrder() {
  section = "matching order";
  const int partner = me ^ 1;
  const bool active = partner < npes;
  const size_t k = 3 * slots + 5;
  size_t maxSize = 0;
  for (size_t i = 0; i < k; ++i) maxSize = std::max(maxSize, orderSize(i));
  std::vector<std::vector<unsigned char>> out(k);
  std::vector<unsigned char> in(maxSize + kGuardBytes);
  std::vector<tether_request_t> reqs(k, TETHER_REQUEST_NULL);
  std::vector<tether_msg_status_t> sts(k);
  for (int variant = 0; variant < 2 && active; ++variant) {
    const uint64_t sec = 30 + static_cast<uint64_t>(variant);
    const int tagA = 3000 + 10 * variant, tagB = tagA + 1;
    auto tagOf = [&](size_t i) { return variant == 0 ? tagA : (i % 2 == 0 ? tagA : tagB); };
    for (size_t i = 0; i < k; ++i) {
      setCase("%s, isend %zu of %zu (%zu B)", variant ? "two tags" : "one tag", i, k, orderSize(i));
      out[i].resize(orderSize(i));
      fill(out[i].data(), out[i].size(), msgKey(sec, me, partner, i));
      OK(tether_isend(w, out[i].data(), out[i].size(), partner, tagOf(i), &reqs[i]));
    }
    std::vector<size_t> order;
    if (variant == 0) {
      for (size_t i = 0; i < k; ++i) order.push_back(i);
    } else {
      for (size_t i = 1; i < k; i += 2) order.push_back(i);  // all of tag B first: every tag-A message waits
      for (size_t i = 0; i < k; i += 2) order.push_back(i);
    }
    for (size_t i : order) {
      const size_t n = orderSize(i);
      // One tag: wildcards match in order too (nobody else sends to this PE now).
      const int src = (variant == 0 && i % 3 == 1) ? TETHER_ANY_PE : partner;
      const int tag = (variant == 0 && i % 5 == 3) ? TETHER_ANY_TAG : tagOf(i);
      setCase("%s, recv %zu of %zu (%zu B) from %d tag %d", variant ? "two tags, B first" : "one tag", i, k, n, src,
              tag);
      fillGuard(in.data(), in.size());
      tether_msg_status_t st = poisoned();
      OK(tether_recv(w, in.data(), maxSize, src, tag, &st));
      checkStatus(st, partner, tagOf(i), n, TETHER_SUCCESS, "out of order?");
      checkBytes(in.data(), n, msgKey(sec, partner, me, i), "order");
      checkGuard(in.data() + n, kGuardBytes, "order");
    }
    setCase("%s, waitall sends", variant ? "two tags" : "one tag");
    OK(tether_msg_waitall(w, k, reqs.data(), sts.data()));
    for (size_t i = 0; i < k; ++i) {
      CHECKF(reqs[i] == TETHER_REQUEST_NULL, "waitall left request %zu set", i);
      checkStatus(sts[i], partner, tagOf(i), orderSize(i), TETHER_SUCCESS, "send status");
    }
  }
  sectionDone(3);
}

// ---- 4: wildcards ----------------------------------------------------------------------------------------------

size_t wildSize(int src) {
  return (src % 2) ? eager + 100 * static_cast<size_t>(src) + 1 : 10 * static_cast<size_t>(src);
}

void wildcards() {
  section = "wildcards";
  size_t maxSize = 0;
  for (int s = 0; s < npes; ++s) maxSize = std::max(maxSize, wildSize(s));
  std::vector<unsigned char> out(maxSize), decoy(64), in(maxSize + kGuardBytes);
  for (int root : {0, npes - 1}) {
    for (int round = 0; round < 3; ++round) {
      const uint64_t sec = 40 + static_cast<uint64_t>(round) + 10 * static_cast<uint64_t>(root);
      const int tag = round == 1 ? 4100 : 4000 + 200 * round + me;  // round 1: one tag for all
      if (me != root) {
        setCase("root %d round %d: send", root, round);
        fill(out.data(), wildSize(me), msgKey(sec, me, root, 0));
        tether_request_t r[2] = {TETHER_REQUEST_NULL, TETHER_REQUEST_NULL};
        if (round == 1) {  // a decoy with another tag before the real message
          fill(decoy.data(), decoy.size(), msgKey(sec, me, root, 1));
          OK(tether_isend(w, decoy.data(), decoy.size(), root, 4101, &r[0]));
        }
        OK(tether_isend(w, out.data(), wildSize(me), root, tag, &r[1]));
        OK(tether_msg_waitall(w, 2, r, nullptr));
      } else {
        std::vector<int> seen(static_cast<size_t>(npes), 0), sourcesDown;
        for (int p = npes - 1; p >= 0; --p)
          if (p != root) sourcesDown.push_back(p);
        for (int j = 0; j < npes - 1; ++j) {
          // round 0: ANY_PE + ANY_TAG; round 1: ANY_PE + the common tag (decoys skipped); round 2: each source in
          // descending order with ANY_TAG
          int src = TETHER_ANY_PE;
          int rtag = round == 0 ? TETHER_ANY_TAG : 4100;
          if (round == 2) {
            src = sourcesDown[static_cast<size_t>(j)];
            rtag = TETHER_ANY_TAG;
          }
          setCase("root %d round %d: receive %d from %d tag %d", root, round, j, src, rtag);
          fillGuard(in.data(), in.size());
          tether_msg_status_t st = poisoned();
          OK(tether_recv(w, in.data(), maxSize, src, rtag, &st));
          CHECKF(st.source >= 0 && st.source < npes && st.source != root, "status.source %d", st.source);
          CHECKF(src == TETHER_ANY_PE || st.source == src, "status.source %d, asked for %d", st.source, src);
          CHECKF(seen[static_cast<size_t>(st.source)]++ == 0, "source %d seen twice", st.source);
          const int wantTag = round == 1 ? 4100 : 4000 + 200 * round + st.source;
          checkStatus(st, st.source, wantTag, wildSize(st.source), TETHER_SUCCESS, "wildcard recv");
          checkBytes(in.data(), st.bytes, msgKey(sec, st.source, root, 0), "wildcard");
          checkGuard(in.data() + st.bytes, kGuardBytes, "wildcard");
        }
        if (round == 1) {  // the decoys are still there, in any order of sources
          std::vector<int> seenDecoy(static_cast<size_t>(npes), 0);
          for (int j = 0; j < npes - 1; ++j) {
            setCase("root %d round 1: decoy %d", root, j);
            tether_msg_status_t st = poisoned();
            OK(tether_recv(w, in.data(), maxSize, TETHER_ANY_PE, TETHER_ANY_TAG, &st));
            CHECKF(st.source >= 0 && st.source < npes && st.source != root, "status.source %d", st.source);
            CHECKF(seenDecoy[static_cast<size_t>(st.source)]++ == 0, "decoy from %d seen twice", st.source);
            checkStatus(st, st.source, 4101, decoy.size(), TETHER_SUCCESS, "decoy");
            checkBytes(in.data(), decoy.size(), msgKey(sec, st.source, root, 1), "decoy");
          }
        }
      }
      barrier();  // a round's wildcards must not see the next round's messages
    }
  }
  sectionDone(4);
}

// ---- 5: unexpected messages ------------------------------------------------------------------------------------

void unexpectedMessages() {
  section = "unexpected messages";
  const std::vector<size_t> sizes = {0, 17, eager, eager + 1, 5 * eager + 3};
  const size_t nsz = sizes.size();
  // 5a: to every other PE, then a barrier, then receives in reverse source and reverse tag order.
  std::vector<std::vector<unsigned char>> out(static_cast<size_t>(npes) * nsz);
  std::vector<tether_request_t> sreq;
  for (int d = 0; d < npes; ++d) {
    if (d == me) continue;
    for (size_t j = 0; j < nsz; ++j) {
      setCase("isend to %d, %zu B", d, sizes[j]);
      auto& o = out[static_cast<size_t>(d) * nsz + j];
      o.resize(sizes[j]);
      fill(o.data(), o.size(), msgKey(50, me, d, j));
      sreq.push_back(TETHER_REQUEST_NULL);
      OK(tether_isend(w, o.data(), o.size(), d, 5000 + static_cast<int>(j), &sreq.back()));
    }
  }
  barrier();
  std::vector<unsigned char> in(5 * eager + 3 + kGuardBytes);
  for (int s = npes - 1; s >= 0; --s) {
    if (s == me) continue;
    for (size_t j = nsz; j-- > 0;) {
      setCase("recv from %d, %zu B (posted after the send)", s, sizes[j]);
      fillGuard(in.data(), in.size());
      tether_msg_status_t st = poisoned();
      OK(tether_recv(w, in.data(), in.size(), s, 5000 + static_cast<int>(j), &st));
      checkStatus(st, s, 5000 + static_cast<int>(j), sizes[j], TETHER_SUCCESS, "unexpected recv");
      checkBytes(in.data(), sizes[j], msgKey(50, s, me, j), "unexpected");
      checkGuard(in.data() + sizes[j], kGuardBytes, "unexpected");
    }
  }
  setCase("waitall sends");
  OK(tether_msg_waitall(w, sreq.size(), sreq.data(), nullptr));
  barrier();

  // 5b: more eager messages than the unexpected pool and the ring hold, all sent before the receiver looks.
  const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
  const size_t m = std::min<size_t>(unexpectedBytes / eager + 2 * slots + 3, 1200);
  std::vector<unsigned char> big(m * eager);
  std::vector<tether_request_t> reqs(m, TETHER_REQUEST_NULL);
  for (size_t i = 0; i < m; ++i) {
    setCase("flow control: isend %zu of %zu (%zu B each)", i, m, eager);
    fill(big.data() + i * eager, eager, msgKey(51, me, next, i));
    OK(tether_isend(w, big.data() + i * eager, eager, next, 5100, &reqs[i]));
  }
  barrier();
  for (size_t i = 0; i < m; ++i) {
    setCase("flow control: recv %zu of %zu", i, m);
    tether_msg_status_t st = poisoned();
    OK(tether_recv(w, in.data(), eager, prev, 5100, &st));
    checkStatus(st, prev, 5100, eager, TETHER_SUCCESS, "flow control recv");
    checkBytes(in.data(), eager, msgKey(51, prev, me, i), "flow control");
  }
  setCase("flow control: waitall");
  OK(tether_msg_waitall(w, m, reqs.data(), nullptr));
  barrier();

  // 5c: more rendezvous messages than slots and than the pool holds eager ones, all sent before the receiver looks,
  // received in reverse tag order (every request-to-send held).
  const size_t mr = std::min<size_t>(unexpectedBytes / eager + 3 * slots + 5, 700);
  const size_t rsz = eager + 1 + eager / 2;
  std::vector<unsigned char> rbig(mr * rsz), rin(rsz + kGuardBytes);
  std::vector<tether_request_t> rreqs(mr, TETHER_REQUEST_NULL);
  for (size_t i = 0; i < mr; ++i) {
    setCase("held requests-to-send: isend %zu of %zu (%zu B each)", i, mr, rsz);
    fill(rbig.data() + i * rsz, rsz, msgKey(52, me, next, i));
    OK(tether_isend(w, rbig.data() + i * rsz, rsz, next, 5200 + static_cast<int>(i), &rreqs[i]));
  }
  barrier();
  for (size_t i = mr; i-- > 0;) {
    setCase("held requests-to-send: recv %zu of %zu (reverse order)", i, mr);
    tether_msg_status_t st = poisoned();
    fillGuard(rin.data(), rin.size());
    OK(tether_recv(w, rin.data(), rin.size(), prev, 5200 + static_cast<int>(i), &st));
    checkStatus(st, prev, 5200 + static_cast<int>(i), rsz, TETHER_SUCCESS, "held RTS recv");
    checkBytes(rin.data(), rsz, msgKey(52, prev, me, i), "held RTS");
    checkGuard(rin.data() + rsz, kGuardBytes, "held RTS");
  }
  setCase("held requests-to-send: waitall");
  OK(tether_msg_waitall(w, mr, rreqs.data(), nullptr));
  barrier();

  // 5d (3+ PEs): PE 1 fills PE 0's unexpected pool and its ring; PE 2's message, in another ring, still arrives
  // (received first), then PE 1's in order.
  if (npes >= 3) {
    const size_t mf = std::min<size_t>(unexpectedBytes / eager + 2 * slots + 3, 1200);
    std::vector<unsigned char> flood(me == 1 ? mf * eager : 0), one(3 * eager + 1);
    std::vector<tether_request_t> freqs(mf, TETHER_REQUEST_NULL);
    if (me == 1) {
      for (size_t i = 0; i < mf; ++i) {
        setCase("full pool: PE 1 isend %zu of %zu", i, mf);
        fill(flood.data() + i * eager, eager, msgKey(53, 1, 0, i));
        OK(tether_isend(w, flood.data() + i * eager, eager, 0, 5300, &freqs[i]));
      }
    }
    barrier();  // PE 1's messages have had time to fill the pool while PE 0 sat in the barrier
    if (me == 2) {
      setCase("full pool: PE 2 sends eager + rendezvous");
      fill(one.data(), one.size(), msgKey(54, 2, 0, 0));
      OK(tether_send(w, one.data(), 16, 0, 5301));
      OK(tether_send(w, one.data(), one.size(), 0, 5302));
    }
    if (me == 0) {
      std::vector<unsigned char> fin(3 * eager + 1);
      for (int t = 5301; t <= 5302; ++t) {
        setCase("full pool: PE 0 receives PE 2's tag %d first", t);
        tether_msg_status_t st = poisoned();
        const size_t n = t == 5301 ? 16 : fin.size();
        OK(tether_recv(w, fin.data(), fin.size(), TETHER_ANY_PE, t, &st));
        checkStatus(st, 2, t, n, TETHER_SUCCESS, "past a full pool");
        checkBytes(fin.data(), n, msgKey(54, 2, 0, 0), "past a full pool");
      }
      for (size_t i = 0; i < mf; ++i) {
        setCase("full pool: PE 0 recv %zu of %zu from PE 1", i, mf);
        tether_msg_status_t st = poisoned();
        OK(tether_recv(w, fin.data(), eager, 1, 5300, &st));
        checkStatus(st, 1, 5300, eager, TETHER_SUCCESS, "full pool recv");
        checkBytes(fin.data(), eager, msgKey(53, 1, 0, i), "full pool");
      }
    }
    if (me == 1) {
      setCase("full pool: PE 1 waitall");
      OK(tether_msg_waitall(w, mf, freqs.data(), nullptr));
    }
  }
  sectionDone(5);
}

// ---- 6: truncation ---------------------------------------------------------------------------------------------

void truncation() {
  section = "truncation";
  const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
  struct Case {
    size_t msg, buf;
  };
  const std::vector<Case> cases = {{eager / 2 + 10, eager / 4 + 1}, {eager, 1},         {eager, 0},
                                   {3 * eager + 100, eager + 5},   {3 * eager + 100, 10}, {3 * eager + 100, 0},
                                   {100u << 10, 50u << 10}};
  const size_t most = std::max<size_t>(100u << 10, 3 * eager + 100);  // the largest case (any TETHER_MSG_EAGER)
  std::vector<unsigned char> out(most + 8), in(most + kGuardBytes), after(2 * eager + 1), afterIn(2 * eager + 1);
  int tag = 6000;
  for (size_t c = 0; c < cases.size(); ++c) {
    for (int how = 0; how < 4; ++how) {
      // how: 0 irecv+send+wait, 1 isend+barrier+recv (unexpected), 2 irecv+isend+test loop, 3 waitall with another
      ++tag;
      const size_t msg = cases[c].msg, len = cases[c].buf;
      const char* hows[] = {"irecv+send+wait", "unexpected: isend, barrier, recv", "test loop", "waitall"};
      setCase("%zu B into %zu B, %s, tag %d", msg, len, hows[how], tag);
      fill(out.data(), msg, msgKey(60, me, next, static_cast<uint64_t>(tag)));
      fillGuard(in.data(), in.size());
      tether_msg_status_t st = poisoned(), ss = poisoned();
      tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
      tether_status_t got = TETHER_SUCCESS;
      std::string truncErr;
      if (how == 0) {
        OK(tether_irecv(w, in.data(), len, prev, tag, &rr));
        OK(tether_send(w, out.data(), msg, next, tag));
        got = tether_msg_wait(w, &rr, &st);
        truncErr = tether_last_error();
        CHECKF(rr == TETHER_REQUEST_NULL, "a truncated wait left the request set");
      } else if (how == 1) {
        OK(tether_isend(w, out.data(), msg, next, tag, &sr));
        barrier();
        got = tether_recv(w, in.data(), len, prev, tag, &st);
        truncErr = tether_last_error();
        OK(tether_msg_wait(w, &sr, &ss));
      } else if (how == 2) {
        OK(tether_irecv(w, in.data(), len, prev, tag, &rr));
        OK(tether_isend(w, out.data(), msg, next, tag, &sr));
        int rdone = 0, sdone = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (!rdone || !sdone) {
          if (!rdone) {
            got = tether_msg_test(w, &rr, &rdone, &st);
            if (rdone) truncErr = tether_last_error();
            CHECKF(rdone || got == TETHER_SUCCESS, "test not done returned %s", tether_status_string(got));
          }
          if (!sdone) OK(tether_msg_test(w, &sr, &sdone, &ss));
          CHECKF(std::chrono::steady_clock::now() < deadline, "test loop did not finish in 120 s");
        }
        CHECKF(rr == TETHER_REQUEST_NULL && sr == TETHER_REQUEST_NULL, "test done left a request set");
      } else {
        // a normal message with another tag in the same waitall
        tether_request_t reqs[3] = {TETHER_REQUEST_NULL, TETHER_REQUEST_NULL, TETHER_REQUEST_NULL};
        tether_msg_status_t sts[3] = {poisoned(), poisoned(), poisoned()};
        OK(tether_irecv(w, afterIn.data(), 16, prev, tag + 500, &reqs[0]));
        OK(tether_irecv(w, in.data(), len, prev, tag, &reqs[1]));
        fill(after.data(), 16, msgKey(61, me, next, static_cast<uint64_t>(tag)));
        OK(tether_isend(w, after.data(), 16, next, tag + 500, &reqs[2]));
        OK(tether_send(w, out.data(), msg, next, tag));
        got = tether_msg_waitall(w, 3, reqs, sts);
        truncErr = tether_last_error();
        for (const auto& r : reqs) CHECKF(r == TETHER_REQUEST_NULL, "waitall left a request set");
        checkStatus(sts[0], prev, tag + 500, 16, TETHER_SUCCESS, "the other receive in the waitall");
        checkStatus(sts[2], next, tag + 500, 16, TETHER_SUCCESS, "the send in the waitall");
        checkBytes(afterIn.data(), 16, msgKey(61, prev, me, static_cast<uint64_t>(tag)), "other receive");
        st = sts[1];
      }
      CHECKF(got == TETHER_ERR_TRUNCATED, "the truncated receive returned %s, expected TETHER_ERR_TRUNCATED",
             tether_status_string(got));
      CHECKF(!truncErr.empty(), "TETHER_ERR_TRUNCATED with an empty tether_last_error()");
      checkStatus(st, prev, tag, len, TETHER_ERR_TRUNCATED, "truncated recv");
      checkBytes(in.data(), len, msgKey(60, prev, me, static_cast<uint64_t>(tag)), "truncated prefix");
      checkGuard(in.data() + len, kGuardBytes, "truncated");
      if (how == 1 || how == 2) {
        // The send completes normally (bytes: what was sent or what was delivered).
        CHECKF(ss.source == next && ss.tag == tag && ss.error == TETHER_SUCCESS && (ss.bytes == msg || ss.bytes == len),
               "send status {source %d, tag %d, bytes %zu, error %s}", ss.source, ss.tag, ss.bytes,
               tether_status_string(ss.error));
      }
      // The pair is still in step: the next message (rendezvous size) arrives whole.
      setCase("after %zu B into %zu B, %s: next message", msg, len, hows[how]);
      fill(after.data(), after.size(), msgKey(62, me, next, static_cast<uint64_t>(tag)));
      OK(tether_irecv(w, afterIn.data(), afterIn.size(), prev, 6999, &rr));
      OK(tether_send(w, after.data(), after.size(), next, 6999));
      OK(tether_msg_wait(w, &rr, &st));
      checkStatus(st, prev, 6999, after.size(), TETHER_SUCCESS, "message after a truncation");
      checkBytes(afterIn.data(), after.size(), msgKey(62, prev, me, static_cast<uint64_t>(tag)), "after truncation");
    }
  }
  sectionDone(6);
}

// ---- 7: self send ----------------------------------------------------------------------------------------------

void selfSend() {
  section = "self send";
  const std::vector<size_t> sizes = {0, 3, eager, eager + 1, 4 * eager + 3};
  std::vector<unsigned char> out(4 * eager + 3), in(4 * eager + 3 + kGuardBytes);
  int tag = 7000;
  for (size_t n : sizes) {
    ++tag;
    setCase("isend to self then recv, %zu B", n);
    fill(out.data(), n, msgKey(70, me, me, static_cast<uint64_t>(tag)));
    fillGuard(in.data(), in.size());
    tether_request_t sr = TETHER_REQUEST_NULL, rr = TETHER_REQUEST_NULL;
    tether_msg_status_t st = poisoned(), ss = poisoned();
    OK(tether_isend(w, out.data(), n, me, tag, &sr));
    OK(tether_recv(w, in.data(), in.size(), me, tag, &st));
    OK(tether_msg_wait(w, &sr, &ss));
    checkStatus(st, me, tag, n, TETHER_SUCCESS, "self recv");
    checkStatus(ss, me, tag, n, TETHER_SUCCESS, "self send");
    checkBytes(in.data(), n, msgKey(70, me, me, static_cast<uint64_t>(tag)), "self");
    checkGuard(in.data() + n, kGuardBytes, "self");

    setCase("irecv from ANY_PE then send to self, %zu B", n);
    fillGuard(in.data(), in.size());
    st = poisoned();
    OK(tether_irecv(w, in.data(), in.size(), TETHER_ANY_PE, TETHER_ANY_TAG, &rr));
    OK(tether_send(w, out.data(), n, me, tag));
    OK(tether_msg_wait(w, &rr, &st));
    checkStatus(st, me, tag, n, TETHER_SUCCESS, "self recv (ANY_PE)");
    checkBytes(in.data(), n, msgKey(70, me, me, static_cast<uint64_t>(tag)), "self (ANY_PE)");
    checkGuard(in.data() + n, kGuardBytes, "self (ANY_PE)");
  }
  // Several to self, received in reverse tag order.
  const int k = static_cast<int>(2 * slots + 3);
  std::vector<std::vector<unsigned char>> outs(static_cast<size_t>(k));
  std::vector<tether_request_t> reqs(static_cast<size_t>(k), TETHER_REQUEST_NULL);
  for (int i = 0; i < k; ++i) {
    setCase("self, isend %d of %d", i, k);
    outs[static_cast<size_t>(i)].resize(i % 3 == 0 ? 2 * eager + static_cast<size_t>(i) : static_cast<size_t>(i) * 5);
    fill(outs[static_cast<size_t>(i)].data(), outs[static_cast<size_t>(i)].size(),
         msgKey(71, me, me, static_cast<uint64_t>(i)));
    OK(tether_isend(w, outs[static_cast<size_t>(i)].data(), outs[static_cast<size_t>(i)].size(), me, 7100 + i,
                    &reqs[static_cast<size_t>(i)]));
  }
  std::vector<unsigned char> in2(2 * eager + static_cast<size_t>(k) + 5 * static_cast<size_t>(k));
  for (int i = k - 1; i >= 0; --i) {
    setCase("self, recv %d of %d (reverse tag order)", i, k);
    tether_msg_status_t st = poisoned();
    OK(tether_recv(w, in2.data(), in2.size(), me, 7100 + i, &st));
    checkStatus(st, me, 7100 + i, outs[static_cast<size_t>(i)].size(), TETHER_SUCCESS, "self reverse");
    checkBytes(in2.data(), st.bytes, msgKey(71, me, me, static_cast<uint64_t>(i)), "self reverse");
  }
  setCase("self, waitall");
  OK(tether_msg_waitall(w, reqs.size(), reqs.data(), nullptr));
  sectionDone(7);
}

// ---- 8: many outstanding requests ------------------------------------------------------------------------------

constexpr int kPerPeer = 64;
size_t manySize(int i, int s, int d) {
  if (i % 16 == 5) return eager + 1 + static_cast<size_t>((i * 13 + s) % 200);
  return static_cast<size_t>(i * 29 + s + 3 * d) % (eager / 4 + 1);
}

void manyOutstanding() {
  section = "many outstanding requests";
  const size_t peers = static_cast<size_t>(npes - 1);
  const size_t nreq = 2 * peers * kPerPeer;
  const size_t maxSize = eager + 1 + 200;
  std::vector<unsigned char> outbuf(peers * kPerPeer * maxSize), inbuf(peers * kPerPeer * maxSize);
  // Request slot layout: [recvs from each peer, kPerPeer each][sends to each peer, kPerPeer each]
  struct Meta {
    bool recv;
    int peer, i;
  };
  std::vector<Meta> meta(nreq);
  std::vector<int> peerList;
  for (int p = 0; p < npes; ++p)
    if (p != me) peerList.push_back(p);
  for (size_t pi = 0; pi < peers; ++pi)
    for (int i = 0; i < kPerPeer; ++i) {
      meta[pi * kPerPeer + static_cast<size_t>(i)] = {true, peerList[pi], i};
      meta[peers * kPerPeer + pi * kPerPeer + static_cast<size_t>(i)] = {false, peerList[pi], i};
    }
  const char* names[] = {"waitall", "waitany", "test polling"};
  for (int variant = 0; variant < 3; ++variant) {
    const int tagBase = 8000 + 100 * variant;
    const uint64_t sec = 80 + static_cast<uint64_t>(variant);
    std::vector<tether_request_t> reqs(nreq, TETHER_REQUEST_NULL);
    std::vector<tether_msg_status_t> sts(nreq, poisoned());
    auto slot = [&](size_t r) { return r * maxSize; };
    auto postRecv = [&](size_t r) {
      const Meta& m = meta[r];
      setCase("%s: irecv %d from %d", names[variant], m.i, m.peer);
      fillGuard(inbuf.data() + slot(r), maxSize);
      OK(tether_irecv(w, inbuf.data() + slot(r), maxSize, m.peer, tagBase + m.i, &reqs[r]));
    };
    auto postSend = [&](size_t r) {
      const Meta& m = meta[r];
      setCase("%s: isend %d to %d", names[variant], m.i, m.peer);
      const size_t n = manySize(m.i, me, m.peer);
      unsigned char* p = outbuf.data() + slot(r - peers * kPerPeer);
      fill(p, n, msgKey(sec, me, m.peer, static_cast<uint64_t>(m.i)));
      OK(tether_isend(w, p, n, m.peer, tagBase + m.i, &reqs[r]));
    };
    const size_t half = peers * kPerPeer;
    if (variant == 0) {  // receives first
      for (size_t r = 0; r < half; ++r) postRecv(r);
      for (size_t r = half; r < nreq; ++r) postSend(r);
    } else if (variant == 1) {  // sends first, receives in reverse order (many unexpected)
      for (size_t r = half; r < nreq; ++r) postSend(r);
      for (size_t r = half; r-- > 0;) postRecv(r);
    } else {  // interleaved
      for (size_t r = 0; r < half; ++r) {
        postSend(half + r);
        postRecv(r);
      }
    }
    std::vector<int> completed(nreq, 0);
    if (variant == 0) {
      setCase("waitall of %zu requests", nreq);
      OK(tether_msg_waitall(w, nreq, reqs.data(), sts.data()));
      for (size_t r = 0; r < nreq; ++r) completed[r] = 1;
    } else if (variant == 1) {
      for (size_t c = 0; c < nreq; ++c) {
        setCase("waitany %zu of %zu", c, nreq);
        size_t idx = SIZE_MAX - 1;
        tether_msg_status_t st = poisoned();
        OK(tether_msg_waitany(w, nreq, reqs.data(), &idx, &st));
        CHECKF(idx < nreq, "waitany index %zu with %zu requests pending", idx, nreq - c);
        CHECKF(!completed[idx], "waitany reported request %zu twice", idx);
        CHECKF(reqs[idx] == TETHER_REQUEST_NULL, "waitany left request %zu set", idx);
        completed[idx] = 1;
        sts[idx] = st;
      }
      setCase("waitany with every request null");
      size_t idx = 0;
      tether_msg_status_t st = poisoned();
      OK(tether_msg_waitany(w, nreq, reqs.data(), &idx, &st));
      CHECKF(idx == SIZE_MAX, "waitany on all-null requests gave index %zu", idx);
    } else {
      size_t left = nreq;
      long rounds = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (left > 0) {
        for (size_t r = 0; r < nreq; ++r) {
          if (completed[r]) continue;
          int done = 0;
          const tether_request_t before = reqs[r];
          setCase("test polling: request %zu (%zu left, round %ld)", r, left, rounds);
          OK(tether_msg_test(w, &reqs[r], &done, &sts[r]));
          if (done) {
            CHECKF(reqs[r] == TETHER_REQUEST_NULL, "test done left request %zu set", r);
            completed[r] = 1;
            --left;
          } else {
            CHECKF(reqs[r] == before, "test not done changed request %zu", r);
          }
        }
        ++rounds;
        CHECKF(std::chrono::steady_clock::now() < deadline, "test polling did not finish in 120 s (%zu left)", left);
      }
    }
    for (size_t r = 0; r < nreq; ++r) {
      const Meta& m = meta[r];
      setCase("%s: check %s %d %s %d", names[variant], m.recv ? "recv" : "send", m.i, m.recv ? "from" : "to", m.peer);
      CHECKF(reqs[r] == TETHER_REQUEST_NULL, "request %zu still set", r);
      if (m.recv) {
        const size_t n = manySize(m.i, m.peer, me);
        checkStatus(sts[r], m.peer, tagBase + m.i, n, TETHER_SUCCESS, "recv status");
        checkBytes(inbuf.data() + slot(r), n, msgKey(sec, m.peer, me, static_cast<uint64_t>(m.i)), "many");
        checkGuard(inbuf.data() + slot(r) + n, maxSize - n, "many");
      } else {
        checkStatus(sts[r], m.peer, tagBase + m.i, manySize(m.i, me, m.peer), TETHER_SUCCESS, "send status");
      }
    }
    barrier();
  }
  sectionDone(8);
}
// The random storm's largest message: 64 KiB, or 2 x eager_bytes when that is more (any TETHER_MSG_EAGER).
size_t stormMax() { return std::max<size_t>(64u << 10, 2 * eager); }

// ---- 9: random storm -------------------------------------------------------------------------------------------

struct Rng {
  uint64_t s;
  uint64_t next() { return s = mix(s); }
  size_t below(size_t n) { return n ? static_cast<size_t>(next() % n) : 0; }
};

struct PlanMsg {
  int dest, tag;
  size_t bytes;
  bool wildPe;  // sent with the tag only ANY_PE receives use
};
constexpr int kWildTag = 77;
const int kTags[] = {0, 1, 2, 3, TETHER_TAG_MAX};

// PE src's messages in round `round`, from the seed alone.
std::vector<PlanMsg> plan(int src, int round) {
  Rng g{mix(seed ^ mix(0x5707u + static_cast<uint64_t>(round) * 1000003u + static_cast<uint64_t>(src)))};
  const size_t maxMsgs = npes >= 8 ? 24 : 48;
  const size_t n = g.below(maxMsgs + 1);
  std::vector<PlanMsg> p(n);
  for (auto& m : p) {
    m.dest = static_cast<int>(g.below(static_cast<size_t>(npes)));
    const size_t kind = g.below(10);
    if (kind < 2) m.bytes = g.below(17);
    else if (kind < 7) m.bytes = g.below(eager + 1);
    else m.bytes = eager + 1 + g.below(stormMax() - eager);
    m.wildPe = g.below(5) == 0;
    m.tag = m.wildPe ? kWildTag : kTags[g.below(sizeof kTags / sizeof kTags[0])];
  }
  return p;
}

void storm() {
  section = "random storm";
  const int rounds = npes >= 8 ? 2 : 3;
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::vector<PlanMsg>> plans(static_cast<size_t>(npes));
    for (int s = 0; s < npes; ++s) plans[static_cast<size_t>(s)] = plan(s, round);
    const auto& mine = plans[static_cast<size_t>(me)];
    // My receives: per source in its send order (exact tag, or ANY_TAG: every earlier message from that source has
    // a receive posted before this one); the wildcard-tag messages from every source by ANY_PE receives, all posted
    // first, exactly as many as there are such messages.
    struct Rx {
      int src;       // the expected source (-1: an ANY_PE receive)
      size_t index;  // the message's index in src's plan
      bool anyTag;
    };
    std::vector<std::vector<Rx>> perSource(static_cast<size_t>(npes));
    size_t wildCount = 0;
    Rng g{mix(seed ^ mix(0x9a11u + static_cast<uint64_t>(round) * 7919u + static_cast<uint64_t>(me)))};
    for (int s = 0; s < npes; ++s)
      for (size_t i = 0; i < plans[static_cast<size_t>(s)].size(); ++i) {
        const PlanMsg& m = plans[static_cast<size_t>(s)][i];
        if (m.dest != me) continue;
        if (m.wildPe) ++wildCount;
        else perSource[static_cast<size_t>(s)].push_back({s, i, g.below(3) == 0});
      }
    const size_t wildCap = stormMax();
    std::vector<std::vector<unsigned char>> wildBufs(wildCount, std::vector<unsigned char>(wildCap));
    std::vector<tether_request_t> wildReqs(wildCount, TETHER_REQUEST_NULL);
    std::vector<tether_msg_status_t> wildSts(wildCount, poisoned());
    for (size_t k = 0; k < wildCount; ++k) {
      setCase("round %d: ANY_PE irecv %zu of %zu", round, k, wildCount);
      OK(tether_irecv(w, wildBufs[k].data(), wildCap, TETHER_ANY_PE, kWildTag, &wildReqs[k]));
    }
    // Interleave my sends and my per-source receives in a random order (each list keeps its own order).
    std::vector<std::vector<unsigned char>> outBufs(mine.size());
    std::vector<tether_request_t> sendReqs(mine.size(), TETHER_REQUEST_NULL);
    std::vector<tether_msg_status_t> sendSts(mine.size(), poisoned());
    std::vector<std::vector<std::vector<unsigned char>>> inBufs(static_cast<size_t>(npes));
    std::vector<std::vector<tether_request_t>> recvReqs(static_cast<size_t>(npes));
    std::vector<std::vector<tether_msg_status_t>> recvSts(static_cast<size_t>(npes));
    for (int s = 0; s < npes; ++s) {
      const size_t c = perSource[static_cast<size_t>(s)].size();
      inBufs[static_cast<size_t>(s)].resize(c);
      recvReqs[static_cast<size_t>(s)].assign(c, TETHER_REQUEST_NULL);
      recvSts[static_cast<size_t>(s)].assign(c, poisoned());
    }
    std::vector<size_t> nextRecv(static_cast<size_t>(npes), 0);
    size_t nextSend = 0, recvLeft = 0;
    for (const auto& v : perSource) recvLeft += v.size();
    while (nextSend < mine.size() || recvLeft > 0) {
      const bool doSend = nextSend < mine.size() && (recvLeft == 0 || g.below(2) == 0);
      if (doSend) {
        const PlanMsg& m = mine[nextSend];
        setCase("round %d: isend %zu (%zu B, tag %d) to %d", round, nextSend, m.bytes, m.tag, m.dest);
        auto& b = outBufs[nextSend];
        b.resize(m.bytes);
        fill(b.data(), m.bytes, msgKey(90 + static_cast<uint64_t>(round), me, m.dest, nextSend));
        OK(tether_isend(w, b.data(), m.bytes, m.dest, m.tag, &sendReqs[nextSend]));
        ++nextSend;
      } else {
        size_t pick = g.below(recvLeft);
        int s = 0;
        for (;; ++s) {
          const size_t avail = perSource[static_cast<size_t>(s)].size() - nextRecv[static_cast<size_t>(s)];
          if (pick < avail) break;
          pick -= avail;
        }
        const size_t j = nextRecv[static_cast<size_t>(s)]++;
        const Rx& rx = perSource[static_cast<size_t>(s)][j];
        const PlanMsg& m = plans[static_cast<size_t>(s)][rx.index];
        setCase("round %d: irecv message %zu of PE %d (%zu B, tag %d%s)", round, rx.index, s, m.bytes, m.tag,
                rx.anyTag ? ", as ANY_TAG" : "");
        auto& b = inBufs[static_cast<size_t>(s)][j];
        b.assign(m.bytes + kGuardBytes, kGuard);
        OK(tether_irecv(w, b.data(), m.bytes, s, rx.anyTag ? TETHER_ANY_TAG : m.tag,
                        &recvReqs[static_cast<size_t>(s)][j]));
        --recvLeft;
      }
    }
    setCase("round %d: waitall sends", round);
    OK(tether_msg_waitall(w, sendReqs.size(), sendReqs.data(), sendSts.data()));
    for (int s = 0; s < npes; ++s) {
      setCase("round %d: waitall receives from %d", round, s);
      OK(tether_msg_waitall(w, recvReqs[static_cast<size_t>(s)].size(), recvReqs[static_cast<size_t>(s)].data(),
                        recvSts[static_cast<size_t>(s)].data()));
    }
    setCase("round %d: waitall ANY_PE receives", round);
    OK(tether_msg_waitall(w, wildCount, wildReqs.data(), wildSts.data()));
    // Check.
    for (size_t i = 0; i < mine.size(); ++i) {
      setCase("round %d: send %zu status", round, i);
      checkStatus(sendSts[i], mine[i].dest, mine[i].tag, mine[i].bytes, TETHER_SUCCESS, "storm send");
    }
    for (int s = 0; s < npes; ++s)
      for (size_t j = 0; j < perSource[static_cast<size_t>(s)].size(); ++j) {
        const Rx& rx = perSource[static_cast<size_t>(s)][j];
        const PlanMsg& m = plans[static_cast<size_t>(s)][rx.index];
        setCase("round %d: message %zu of PE %d (%zu B, tag %d%s)", round, rx.index, s, m.bytes, m.tag,
                rx.anyTag ? ", received as ANY_TAG" : "");
        const auto& b = inBufs[static_cast<size_t>(s)][j];
        checkStatus(recvSts[static_cast<size_t>(s)][j], s, m.tag, m.bytes, TETHER_SUCCESS, "storm recv");
        checkBytes(b.data(), m.bytes, msgKey(90 + static_cast<uint64_t>(round), s, me, rx.index), "storm");
        checkGuard(b.data() + m.bytes, kGuardBytes, "storm");
      }
    // ANY_PE receives: posted in order, so the k-th of them to complete with source s took s's k-th wildcard-tag
    // message to me.
    std::vector<size_t> wildSeen(static_cast<size_t>(npes), 0);
    for (size_t k = 0; k < wildCount; ++k) {
      const tether_msg_status_t& st = wildSts[k];
      setCase("round %d: ANY_PE receive %zu (source %d, %zu B)", round, k, st.source, st.bytes);
      CHECKF(st.source >= 0 && st.source < npes, "ANY_PE receive: status.source %d", st.source);
      const auto& ps = plans[static_cast<size_t>(st.source)];
      size_t nth = wildSeen[static_cast<size_t>(st.source)]++, idx = 0;
      bool found = false;
      for (size_t i = 0; i < ps.size(); ++i)
        if (ps[i].dest == me && ps[i].wildPe && nth-- == 0) {
          idx = i;
          found = true;
          break;
        }
      CHECKF(found, "more wildcard-tag messages from PE %d than it sent", st.source);
      checkStatus(st, st.source, kWildTag, ps[idx].bytes, TETHER_SUCCESS, "storm ANY_PE recv");
      checkBytes(wildBufs[k].data(), ps[idx].bytes, msgKey(90 + static_cast<uint64_t>(round), st.source, me, idx),
                 "storm ANY_PE");
    }
    barrier();
  }
  sectionDone(9);
}

// ---- 10: zero-size messages and TETHER_REQUEST_NULL -----------------------------------------------------------

void zeroAndNull() {
  section = "zero-size messages and TETHER_REQUEST_NULL";
  const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
  tether_request_t r = TETHER_REQUEST_NULL;
  tether_msg_status_t st = poisoned();
  setCase("wait on TETHER_REQUEST_NULL");
  OK(tether_msg_wait(w, &r, &st));
  CHECKF(r == TETHER_REQUEST_NULL && st.bytes == 0 && st.error == TETHER_SUCCESS,
         "wait(NULL request): req %" PRIu64 ", status bytes %zu error %s", static_cast<uint64_t>(r), st.bytes,
         tether_status_string(st.error));
  OK(tether_msg_wait(w, &r, nullptr));
  setCase("test on TETHER_REQUEST_NULL");
  int done = 0;
  st = poisoned();
  OK(tether_msg_test(w, &r, &done, &st));
  CHECKF(done == 1 && r == TETHER_REQUEST_NULL && st.bytes == 0 && st.error == TETHER_SUCCESS,
         "test(NULL request): done %d, status bytes %zu error %s", done, st.bytes, tether_status_string(st.error));
  setCase("waitall / waitany on null requests");
  tether_request_t rs[4] = {TETHER_REQUEST_NULL, TETHER_REQUEST_NULL, TETHER_REQUEST_NULL, TETHER_REQUEST_NULL};
  tether_msg_status_t sts[4] = {poisoned(), poisoned(), poisoned(), poisoned()};
  OK(tether_msg_waitall(w, 4, rs, sts));
  for (const auto& s : sts) CHECKF(s.bytes == 0 && s.error == TETHER_SUCCESS, "waitall(null) status");
  OK(tether_msg_waitall(w, 4, rs, nullptr));
  OK(tether_msg_waitall(w, 0, rs, nullptr));
  size_t idx = 7;
  OK(tether_msg_waitany(w, 4, rs, &idx, &st));
  CHECKF(idx == SIZE_MAX, "waitany(all null) index %zu", idx);
  idx = 7;
  OK(tether_msg_waitany(w, 0, rs, &idx, nullptr));
  CHECKF(idx == SIZE_MAX, "waitany(n = 0) index %zu", idx);

  // Zero-size messages: NULL buffers, a real receive buffer (left untouched), every form, and mixed with nulls in
  // waitall/waitany.
  unsigned char in[32];
  const uint64_t dummy = 0x1234;
  for (int form = 0; form < 4; ++form) {
    const int tag = 10000 + form;
    setCase("zero-size, form %d", form);
    fillGuard(in, sizeof in);
    st = poisoned();
    tether_status_t got = TETHER_SUCCESS;
    if (form == 0) {  // NULL send buffer, NULL receive buffer
      OK(tether_isend(w, nullptr, 0, next, tag, &r));
      OK(tether_recv(w, nullptr, 0, prev, tag, &st));
      OK(tether_msg_wait(w, &r, nullptr));
    } else if (form == 1) {  // a receive buffer longer than the empty message
      tether_request_t rr = TETHER_REQUEST_NULL;
      OK(tether_irecv(w, in, sizeof in, TETHER_ANY_PE, tag, &rr));
      OK(tether_send(w, &dummy, 0, next, tag));
      OK(tether_msg_wait(w, &rr, &st));
    } else if (form == 2) {  // waitall with nulls among the requests
      tether_request_t q[4] = {TETHER_REQUEST_NULL, TETHER_REQUEST_NULL, TETHER_REQUEST_NULL, TETHER_REQUEST_NULL};
      tether_msg_status_t qs[4] = {poisoned(), poisoned(), poisoned(), poisoned()};
      OK(tether_irecv(w, in, 0, prev, tag, &q[1]));
      OK(tether_isend(w, in + 16, 0, next, tag, &q[3]));
      got = tether_msg_waitall(w, 4, q, qs);
      OK(got);
      checkStatus(qs[3], next, tag, 0, TETHER_SUCCESS, "zero-size send in waitall");
      CHECKF(qs[0].bytes == 0 && qs[0].error == TETHER_SUCCESS, "waitall: null entry's status");
      st = qs[1];
    } else {  // waitany with nulls among the requests
      tether_request_t q[3] = {TETHER_REQUEST_NULL, TETHER_REQUEST_NULL, TETHER_REQUEST_NULL};
      OK(tether_isend(w, nullptr, 0, next, tag, &q[2]));
      OK(tether_irecv(w, nullptr, 0, prev, tag, &q[0]));
      int seen[3] = {0, 0, 0};
      for (int c = 0; c < 2; ++c) {
        tether_msg_status_t s1 = poisoned();
        OK(tether_msg_waitany(w, 3, q, &idx, &s1));
        CHECKF(idx == 0 || idx == 2, "waitany index %zu", idx);
        CHECKF(!seen[idx]++, "waitany index %zu twice", idx);
        if (idx == 0) st = s1;
      }
      OK(tether_msg_waitany(w, 3, q, &idx, nullptr));
      CHECKF(idx == SIZE_MAX, "waitany after all done: index %zu", idx);
    }
    checkStatus(st, prev, tag, 0, TETHER_SUCCESS, "zero-size recv");
    checkGuard(in, sizeof in, "zero-size");
  }

  // test before the message can exist: not done, request untouched; then it completes.
  setCase("test before the send");
  unsigned char out[40], buf[40];
  fill(out, sizeof out, msgKey(100, me, next, 0));
  tether_request_t rr = TETHER_REQUEST_NULL;
  OK(tether_irecv(w, buf, sizeof buf, prev, 10100, &rr));
  const tether_request_t before = rr;
  done = 7;
  OK(tether_msg_test(w, &rr, &done, &st));
  CHECKF(done == 0 && rr == before, "test before any send: done %d, request %s", done,
         rr == before ? "unchanged" : "changed");
  barrier();
  OK(tether_send(w, out, sizeof out, next, 10100));
  st = poisoned();
  OK(tether_msg_wait(w, &rr, &st));
  checkStatus(st, prev, 10100, sizeof out, TETHER_SUCCESS, "after the test");
  checkBytes(buf, sizeof buf, msgKey(100, prev, me, 0), "after the test");
  sectionDone(10);
}

// ---- 11: threads -----------------------------------------------------------------------------------------------

void threads() {
  section = "threads";
  const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
  constexpr int kThreads = 3, kIters = 12;
  std::atomic<int> failures{0};
  std::string firstFailure;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::vector<unsigned char> out(3 * eager + 7), in(3 * eager + 7);
      for (int it = 0; it < kIters; ++it) {
        const size_t n = (it % 3 == 0) ? 3 * eager + 7 : static_cast<size_t>(it * 11 + t);
        const int tag = 11000 + t;  // one tag per thread: each thread's messages arrive in its order
        fill(out.data(), n, msgKey(110 + static_cast<uint64_t>(t), me, next, static_cast<uint64_t>(it)));
        tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
        tether_msg_status_t st = poisoned();
        bool ok = tether_irecv(w, in.data(), in.size(), prev, tag, &rr) == TETHER_SUCCESS &&
                  tether_isend(w, out.data(), n, next, tag, &sr) == TETHER_SUCCESS &&
                  tether_msg_wait(w, &sr, nullptr) == TETHER_SUCCESS && tether_msg_wait(w, &rr, &st) == TETHER_SUCCESS;
        ok = ok && st.source == prev && st.tag == tag && st.bytes == n;
        if (ok) {
          const uint64_t key = msgKey(110 + static_cast<uint64_t>(t), prev, me, static_cast<uint64_t>(it));
          for (size_t i = 0; i < n && ok; ++i) ok = in[i] == expectedByte(key, i);
        }
        if (!ok) {
          if (failures++ == 0) {
            char b[300];
            std::snprintf(b, sizeof b, "thread %d iteration %d (%zu B): status {%d, %d, %zu, %s}, last error: %s", t,
                          it, n, st.source, st.tag, st.bytes, tether_status_string(st.error), tether_last_error());
            firstFailure = b;
          }
          return;
        }
      }
    });
  for (auto& t : ts) t.join();
  setCase("%d threads x %d exchanges", kThreads, kIters);
  CHECKF(failures.load() == 0, "%s", firstFailure.c_str());
  sectionDone(11);
}

// ---- 12: finalize, init again, tether_finalize with messaging still initialised --------------------------------

void finalizeAgain() {
  section = "finalize and init again";
  setCase("finalize");
  OK(tether_msg_finalize(w));
  setCase("init with attr that differ between PEs");
  tether_msg_attr_t a = smallAttr();
  if (me == 0) a.eager_bytes = 512;
  EXPECT_ST(tether_msg_init(w, &a), TETHER_ERR_MISMATCH);
  barrier();
  setCase("init again after the mismatch");
  a = smallAttr();
  OK(tether_msg_init(w, &a));
  ping(a.eager_bytes, 12000);
  // Left initialised: tether_finalize releases it.
  sectionDone(12);
}

// ---- 13: eager messages spanning ring slots (to PEs on other hosts) over stale ring bytes ------------------------

// A PE whose ring is written by one flagged put per slot message (another host: UCX) takes eager messages of up to
// TETHER_MSG_REMOTE_EAGER bytes in consecutive slots; their payload overwrites the later slots' sequence words. Here
// the messaging layer runs with eager 1 KiB and 16 slots (slot = 64-byte head + 1024 B: kSpanSlotBytes), so a
// 4000-byte message takes 4 slots, and its payload holds, where the 2nd..4th slot's sequence word lies, exactly the
// value the receiver expects there one lap later. Then 8-byte ping-pongs walk the next lap slot by slot, the receiver
// looking at each slot before its sender writes it: a receiver that did not clear those words would take the stale
// bytes for a message. Last, 3-slot messages sent before the receive is posted: the ring's end forces a SKIP, and
// they wait for credit. Between PEs of one host (or with the eager size at its default) the same exchange runs on
// other protocols.
constexpr size_t kSpanSlotBytes = 64 + 1024, kSpanSlots = 16, kSpanBytes = 4000, kSpanSpan = 4;

std::vector<unsigned char> spanPayload(int src, int dst, size_t j) {
  std::vector<unsigned char> b(kSpanBytes);
  fill(b.data(), b.size(), msgKey(130, src, dst, j));
  for (size_t k = 1; k < kSpanSpan; ++k) {  // slot 4j + k's seq word: the seq of that slot one lap later
    const uint64_t lapLater = kSpanSlots + kSpanSpan * j + k + 1;
    std::memcpy(b.data() + k * kSpanSlotBytes - 64, &lapLater, sizeof lapLater);
  }
  return b;
}

void spanningMessages() {
  section = "eager messages spanning slots";
  setCase("init with eager 1 KiB, 16 slots");
  OK(tether_msg_finalize(w));
  tether_msg_attr_t a;
  a.eager_bytes = 1024;
  a.slots = kSpanSlots;
  a.unexpected_bytes = 0;
  OK(tether_msg_init(w, &a));
  const bool sender = me % 2 == 0 && me + 1 < npes, receiver = me % 2 == 1;
  const int peer = sender ? me + 1 : me - 1;
  tether_msg_status_t st;
  // Lap 0: four 4-slot messages.
  for (size_t j = 0; j < kSpanSlots / kSpanSpan; ++j) {
    setCase("lap 0: message %zu of %zu B", j, kSpanBytes);
    if (sender) {
      const auto out = spanPayload(me, peer, j);
      OK(tether_send(w, out.data(), out.size(), peer, 13000));
    } else if (receiver) {
      std::vector<unsigned char> in(kSpanBytes + kGuardBytes, kGuard);
      OK(tether_recv(w, in.data(), kSpanBytes, peer, 13000, &st));
      checkStatus(st, peer, 13000, kSpanBytes, TETHER_SUCCESS, "spanning recv");
      CHECKF(std::memcmp(in.data(), spanPayload(peer, me, j).data(), kSpanBytes) == 0, "message %zu's bytes differ",
             j);
      checkGuard(in.data() + kSpanBytes, kGuardBytes, "spanning recv");
    }
  }
  // Lap 1: one slot at a time, the receiver waiting in each slot before it is written.
  for (uint64_t i = 0; i < kSpanSlots; ++i) {
    setCase("lap 1: ping-pong %" PRIu64, i);
    uint64_t v = 0;
    if (sender) {
      v = mix(i + 131);
      OK(tether_send(w, &v, sizeof v, peer, 13001));
      OK(tether_recv(w, &v, sizeof v, peer, 13002, &st));
      checkStatus(st, peer, 13002, sizeof v, TETHER_SUCCESS, "pong");
      CHECKF(v == i, "pong %" PRIu64 " carried %" PRIu64, i, v);
    } else if (receiver) {
      OK(tether_recv(w, &v, sizeof v, peer, 13001, &st));
      checkStatus(st, peer, 13001, sizeof v, TETHER_SUCCESS, "ping");
      CHECKF(v == mix(i + 131), "ping %" PRIu64 " carried 0x%" PRIx64, i, v);
      v = i;
      OK(tether_send(w, &v, sizeof v, peer, 13002));
    }
  }
  // 3-slot messages, all sent before the receiver posts: the ring's end (a SKIP) and credit waits.
  const size_t n3 = 7, b3 = 2500;
  std::vector<std::vector<unsigned char>> outs(n3);
  std::vector<tether_request_t> reqs(n3, TETHER_REQUEST_NULL);
  if (sender)
    for (size_t j = 0; j < n3; ++j) {
      setCase("3-slot isend %zu", j);
      outs[j].resize(b3 + 8 * j);
      fill(outs[j].data(), outs[j].size(), msgKey(131, me, peer, j));
      OK(tether_isend(w, outs[j].data(), outs[j].size(), peer, 13003, &reqs[j]));
    }
  barrier();
  if (receiver)
    for (size_t j = 0; j < n3; ++j) {
      setCase("3-slot recv %zu", j);
      std::vector<unsigned char> in(b3 + 8 * j + kGuardBytes, kGuard);
      OK(tether_recv(w, in.data(), b3 + 8 * j, peer, 13003, &st));
      checkStatus(st, peer, 13003, b3 + 8 * j, TETHER_SUCCESS, "3-slot recv");
      checkBytes(in.data(), b3 + 8 * j, msgKey(131, peer, me, j), "3-slot recv");
      checkGuard(in.data() + b3 + 8 * j, kGuardBytes, "3-slot recv");
    }
  setCase("3-slot waitall");
  if (sender) OK(tether_msg_waitall(w, n3, reqs.data(), nullptr));
  sectionDone(13);
}

// ---- `mp_msg timeout` (2 PEs, TETHER_TIMEOUT=3): bounded waits, and what a timed-out call leaves behind ---------

// PE 0 times out while PE 1 waits for it (mp::awaitTimeouts: up to 5 TETHER_TIMEOUTs), one counter per phase.
void timeoutMode() {
  section = "timeouts";
  MP_CHECK(npes == 2);
  auto* counters = static_cast<uint64_t*>(mp::hostZeroed(w, 8 * sizeof(uint64_t)));
  // A rendezvous message on every path: over 4 slots, and over the most an eager message to another host can span
  // (TETHER_MSG_REMOTE_EAGER is clamped to one flagged put, 128 KiB with the head).
  const size_t big = std::max<size_t>(4 * eager, size_t{128} << 10) + 5;
  // Buffers outlive every call (a library that kept a timed-out operation would write or read them later).
  auto* keepA = static_cast<unsigned char*>(std::malloc(big + kGuardBytes));
  auto* keepB = static_cast<unsigned char*>(std::malloc(big + kGuardBytes));
  auto* keepS = static_cast<unsigned char*>(std::malloc(big));
  MP_CHECK(keepA && keepB && keepS);
  OK(tether_msg_init(w, nullptr));
  barrier();
  const int peer = 1 - me;
  auto timed = [](const char* what, tether_status_t st, std::chrono::steady_clock::time_point t0) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECKF(st == TETHER_ERR_TIMEOUT, "%s returned %s, expected TETHER_ERR_TIMEOUT", what, tether_status_string(st));
    CHECKF(secs >= 2.0 && secs < 30.0, "%s timed out after %.1f s (TETHER_TIMEOUT=3)", what, secs);
    CHECKF(std::strstr(tether_last_error(), "timed out") != nullptr, "%s: message lacks 'timed out': %s", what,
           tether_last_error());
  };

  // a. irecv + wait: TETHER_ERR_TIMEOUT naming the receive, the request still pending; the next wait gets it.
  setCase("a: wait on an irecv nobody sends to");
  fillGuard(keepA, big + kGuardBytes);
  if (me == 0) {
    tether_request_t r = TETHER_REQUEST_NULL;
    OK(tether_irecv(w, keepA, big, 1, 1, &r));
    const tether_request_t before = r;
    tether_msg_status_t st = poisoned();
    auto t0 = std::chrono::steady_clock::now();
    timed("tether_msg_wait", tether_msg_wait(w, &r, &st), t0);
    CHECKF(std::strstr(tether_last_error(), "tag 1") != nullptr, "the message does not name the request: %s",
           tether_last_error());
    CHECKF(r == before, "a timed-out wait changed the request");
    // The status: TETHER_ERR_TIMEOUT in status->error, or left alone (never stack garbage).
    const tether_msg_status_t p = poisoned();
    SOFTF(st.error == TETHER_ERR_TIMEOUT ||
              (st.source == p.source && st.tag == p.tag && st.bytes == p.bytes && st.error == p.error),
          "status after a timed-out wait is {source %d, tag %d, bytes %zu, error %d}: neither TETHER_ERR_TIMEOUT "
          "nor left alone", st.source, st.tag, st.bytes, static_cast<int>(st.error));
    mp::passedTimeout(&counters[0], 1);
    st = poisoned();
    OK(tether_msg_wait(w, &r, &st));
    checkStatus(st, 1, 1, 100, TETHER_SUCCESS, "receive after a timed-out wait");
    checkBytes(keepA, 100, msgKey(120, 1, 0, 1), "after a timed-out wait");
    checkGuard(keepA + 100, big - 100, "after a timed-out wait");
  } else {
    mp::awaitTimeouts(&counters[0], 1);
    fill(keepS, 100, msgKey(120, 1, 0, 1));
    OK(tether_send(w, keepS, 100, 0, 1));
  }
  barrier();

  // b. A blocking recv that timed out has returned: it must not stay posted (its buffer belongs to the caller again),
  // so the next message with its tag goes to the next receive.
  setCase("b: blocking recv that timed out, then the message comes");
  if (me == 0) {
    fillGuard(keepA, big + kGuardBytes);
    fillGuard(keepB, big + kGuardBytes);
    tether_msg_status_t st = poisoned();
    auto t0 = std::chrono::steady_clock::now();
    timed("tether_recv", tether_recv(w, keepA, big, 1, 2, &st), t0);
    mp::passedTimeout(&counters[1], 1);
    st = poisoned();
    const tether_status_t got = tether_recv(w, keepB, big, 1, 2, &st);
    bool landedInA = true;
    for (size_t i = 0; i < 100 && landedInA; ++i) landedInA = keepA[i] == expectedByte(msgKey(121, 1, 0, 2), i);
    if (SOFTF(!landedInA, "the message for the second tether_recv (tag 2) was written into the buffer of the first "
              "one, which had returned TETHER_ERR_TIMEOUT: a blocking receive stays posted after it fails (second "
              "recv: %s)", tether_status_string(got))) {
      OK(got);
      checkStatus(st, 1, 2, 100, TETHER_SUCCESS, "second recv");
      checkBytes(keepB, 100, msgKey(121, 1, 0, 2), "second recv");
      checkGuard(keepA, big + kGuardBytes, "the timed-out recv's buffer");
    }
  } else {
    mp::awaitTimeouts(&counters[1], 1);
    fill(keepS, 100, msgKey(121, 1, 0, 2));
    OK(tether_send(w, keepS, 100, 0, 2));
  }
  barrier();

  // c. A blocking rendezvous send nobody receives: TETHER_ERR_TIMEOUT saying so. It has returned, so its buffer is
  // the caller's again: PE 0 overwrites it; PE 1 then posts the matching receive (while PE 0 keeps calling
  // tether_msg_test): it may time out, but must not deliver the bytes written after the send returned.
  setCase("c: blocking rendezvous send nobody receives");
  if (me == 0) {
    fill(keepS, big, msgKey(122, 0, 1, 3));
    auto t0 = std::chrono::steady_clock::now();
    timed("tether_send", tether_send(w, keepS, big, 1, 3), t0);
    CHECKF(std::strstr(tether_last_error(), "rendezvous") != nullptr, "message does not say why: %s",
           tether_last_error());
    std::memset(keepS, 0xEE, big);
    mp::passedTimeout(&counters[2], 1);
    setCase("c: PE 0 polls while PE 1 looks for the timed-out send");
    tether_request_t rr = TETHER_REQUEST_NULL;
    OK(tether_irecv(w, keepB, 16, 1, 4, &rr));
    int done = 0;
    const uint64_t one = 1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    tether_status_t ts = TETHER_SUCCESS;
    while (!done && ts == TETHER_SUCCESS) {
      ts = tether_msg_test(w, &rr, &done, nullptr);
      CHECKF(std::chrono::steady_clock::now() < deadline, "PE 1 did not finish looking within 30 s");
    }
    OK(ts);
    OK(tether_wait_until(w, &counters[4], TETHER_UINT64, TETHER_CMP_GE, &one));
  } else {
    mp::awaitTimeouts(&counters[2], 1);
    setCase("c: PE 1 receives what PE 0's timed-out send left");
    fillGuard(keepA, big + kGuardBytes);
    tether_msg_status_t st = poisoned();
    const tether_status_t got = tether_recv(w, keepA, big, 0, 3, &st);
    size_t ee = 0;
    for (size_t i = 0; i < big; ++i) ee += keepA[i] == 0xEE;
    SOFTF(ee < big / 2, "tether_recv (tag 3) -> %s, %zu B: it delivered the bytes PE 0 wrote into its send buffer "
          "after tether_send had returned TETHER_ERR_TIMEOUT: a blocking send stays pending after it fails",
          tether_status_string(got), got == TETHER_SUCCESS ? st.bytes : size_t{0});
    unsigned char b[16] = {};
    OK(tether_send(w, b, 16, 0, 4));  // PE 0 stops polling
    mp::passedTimeout(&counters[4], 0);
  }
  barrier();
  setCase("c: the pair after the timed-out send");
  {
    std::vector<unsigned char> out(2 * eager + 3), in(2 * eager + 3);
    fill(out.data(), out.size(), msgKey(123, me, peer, 5));
    tether_request_t rr = TETHER_REQUEST_NULL;
    tether_msg_status_t st = poisoned();
    OK(tether_irecv(w, in.data(), in.size(), peer, 7, &rr));
    OK(tether_send(w, out.data(), out.size(), peer, 7));
    OK(tether_msg_wait(w, &rr, &st));
    checkStatus(st, peer, 7, in.size(), TETHER_SUCCESS, "after the timed-out send");
    checkBytes(in.data(), in.size(), msgKey(123, peer, me, 5), "after the timed-out send");
  }
  barrier();

  // d. waitany and waitall time out too, leaving the requests pending; then they complete.
  setCase("d: waitany / waitall on receives nobody sends to yet");
  if (me == 0) {
    tether_request_t q[2] = {TETHER_REQUEST_NULL, TETHER_REQUEST_NULL};
    OK(tether_irecv(w, keepB, 16, 1, 5, &q[0]));
    OK(tether_irecv(w, keepB + 16, 16, 1, 6, &q[1]));
    size_t idx = 0;
    auto t0 = std::chrono::steady_clock::now();
    timed("tether_msg_waitany", tether_msg_waitany(w, 2, q, &idx, nullptr), t0);
    t0 = std::chrono::steady_clock::now();
    timed("tether_msg_waitall", tether_msg_waitall(w, 2, q, nullptr), t0);
    CHECKF(q[0] != TETHER_REQUEST_NULL && q[1] != TETHER_REQUEST_NULL, "timed-out waits changed the requests");
    mp::passedTimeout(&counters[3], 1);
    tether_msg_status_t sts[2] = {poisoned(), poisoned()};
    OK(tether_msg_waitall(w, 2, q, sts));
    checkStatus(sts[0], 1, 5, 16, TETHER_SUCCESS, "waitall after timeouts");
    checkStatus(sts[1], 1, 6, 16, TETHER_SUCCESS, "waitall after timeouts");
  } else {
    mp::awaitTimeouts(&counters[3], 1);
    unsigned char b[16] = {};
    OK(tether_send(w, b, 16, 0, 6));
    OK(tether_send(w, b, 16, 0, 5));
  }
  barrier();
  if (softFailures) {
    std::fprintf(stderr, "FAIL PE %d: %d failed expectations in the timeout mode (above)\n", me, softFailures);
    std::exit(1);
  }
  sectionDone(1);
  // Withdrawn requests never touch their buffers again (msg.h), so they may go now (LeakSanitizer in the asan build).
  std::free(keepA);
  std::free(keepB);
  std::free(keepS);
}

// ---- `mp_msg poolfull`: a rendezvous handshake behind eager messages that do not fit the unexpected pool -------

// Pairs (A = even PE, B = A + 1). A sends B more eager messages than B's unexpected pool and ring hold, which B
// receives only after a rendezvous transfer between the two has completed, for which a matching receive is posted
// before anybody waits. Valid under MPI's rules (A's sends are nonblocking; the rendezvous message's receive is
// posted), and msg.h promises that a rendezvous send moves while either side is in a messaging call.
//   case 1: B sends the rendezvous message to A (A's clear-to-send travels to B behind A's eager messages)
//   case 2: A sends the rendezvous message to B before its eager messages (its data fragments travel behind them)
void poolFullMode() {
  section = "rendezvous behind a full unexpected pool";
  OK(tether_msg_init(w, smallMode ? [] { static tether_msg_attr_t a = smallAttr(); return &a; }() : nullptr));
  const bool isA = me % 2 == 0;
  const int peer = isA ? me + 1 : me - 1;
  const bool active = peer < npes;
  const size_t m = std::min<size_t>(unexpectedBytes / eager + 2 * slots + 3, 1200);
  const size_t rz = 4 * eager + 1;
  std::vector<unsigned char> flood(m * eager), rv(rz), in(std::max(rz, eager));
  for (int c = 1; c <= 2; ++c) {
    if (!active) {  // an odd PE out: only the barriers
      barrier();
      continue;
    }
    const int tagR = 13000 + 10 * c, tagE = tagR + 1;
    if (isA) {
      std::vector<tether_request_t> q(m + 1, TETHER_REQUEST_NULL);
      setCase("case %d: A posts", c);
      if (c == 1) {
        OK(tether_irecv(w, rv.data(), rz, peer, tagR, &q[0]));
      } else {
        fill(rv.data(), rz, msgKey(130 + static_cast<uint64_t>(c), me, peer, 0));
        OK(tether_isend(w, rv.data(), rz, peer, tagR, &q[0]));
      }
      for (size_t i = 0; i < m; ++i) {
        fill(flood.data() + i * eager, eager, msgKey(132 + static_cast<uint64_t>(c), me, peer, i));
        OK(tether_isend(w, flood.data() + i * eager, eager, peer, tagE, &q[i + 1]));
      }
      barrier();  // everything is queued before B starts
      setCase("case %d (%s): A waits for the rendezvous message and its %zu eager messages", c,
              c == 1 ? "B -> A rendezvous" : "A -> B rendezvous", m);
      OK(tether_msg_waitall(w, m + 1, q.data(), nullptr));
      if (c == 1) checkBytes(rv.data(), rz, msgKey(130 + static_cast<uint64_t>(c), peer, me, 0), "rendezvous");
    } else {
      barrier();
      setCase("case %d (%s): B waits for the rendezvous transfer before receiving A's %zu eager messages", c,
              c == 1 ? "B -> A rendezvous" : "A -> B rendezvous", m);
      if (c == 1) {
        fill(rv.data(), rz, msgKey(130 + static_cast<uint64_t>(c), me, peer, 0));
        OK(tether_send(w, rv.data(), rz, peer, tagR));
      } else {
        tether_msg_status_t st = poisoned();
        OK(tether_recv(w, rv.data(), rz, peer, tagR, &st));
        checkStatus(st, peer, tagR, rz, TETHER_SUCCESS, "rendezvous");
        checkBytes(rv.data(), rz, msgKey(130 + static_cast<uint64_t>(c), peer, me, 0), "rendezvous");
      }
      for (size_t i = 0; i < m; ++i) {
        setCase("case %d: B receives eager message %zu of %zu", c, i, m);
        tether_msg_status_t st = poisoned();
        OK(tether_recv(w, in.data(), eager, peer, tagE, &st));
        checkStatus(st, peer, tagE, eager, TETHER_SUCCESS, "eager after the rendezvous");
        checkBytes(in.data(), eager, msgKey(132 + static_cast<uint64_t>(c), peer, me, i), "eager");
      }
    }
  }
  sectionDone(1);
  OK(tether_msg_finalize(w));
}

}  // namespace

int main(int argc, char** argv) {
  mp::init();
  w = mp::world();
  me = tether_my_pe(w);
  npes = tether_n_pes(w);
  MP_CHECK(npes >= 2);
  const char* s = std::getenv("MP_SEED");
  seed = s ? std::strtoull(s, nullptr, 10) : 1;
  const char* sm = std::getenv("MP_MSG_SMALL");
  smallMode = sm && std::strcmp(sm, "0") != 0 && *sm;
  if (smallMode) {
    const tether_msg_attr_t a = smallAttr();
    eager = a.eager_bytes;
    slots = a.slots;
    unexpectedBytes = a.unexpected_bytes;
  } else {
    eager = envSize("TETHER_MSG_EAGER", 8192);
    slots = envSize("TETHER_MSG_SLOTS", 16);
    unexpectedBytes = envSize("TETHER_MSG_UNEXPECTED", 4u << 20);
  }
  if (me == 0)
    std::printf("mp_msg: MP_SEED=%" PRIu64 " (%d PEs, eager %zu B, %zu slots, unexpected pool %zu B%s)\n", seed,
                npes, eager, slots, unexpectedBytes, smallMode ? ", MP_MSG_SMALL=1" : "");
  const size_t symBytes = (3u << 20) + kGuardBytes;
  symSend.p = static_cast<unsigned char*>(mp::hostZeroed(w, symBytes));
  symSend.cap = symBytes;
  symSend.sym = true;
  symRecv.p = static_cast<unsigned char*>(mp::hostZeroed(w, symBytes));
  symRecv.cap = symBytes;
  symRecv.sym = true;
  barrier();

  if (argc > 1 && std::strcmp(argv[1], "poolfull") == 0) {
    poolFullMode();
    if (me == 0) std::printf("mp_msg poolfull: OK\n");
    return mp::finish();
  }
  if (argc > 1 && std::strcmp(argv[1], "timeout") == 0) {
    timeoutMode();
    if (me == 0) std::printf("mp_msg timeout: OK\n");
    return mp::finish();
  }
  initFinalize();
  ringExchange();
  matchingOrder();
  wildcards();
  unexpectedMessages();
  truncation();
  selfSend();
  manyOutstanding();
  storm();
  zeroAndNull();
  threads();
  finalizeAgain();
  spanningMessages();

  barrier();
  if (me == 0) std::printf("mp_msg: OK (MP_SEED=%" PRIu64 ")\n", seed);
  return mp::finish();
}
