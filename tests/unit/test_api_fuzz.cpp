// Random calls of the core C API (tether.h) with arguments drawn from good and bad classes, with the CPU emulation of
// the stream-op layer: one 1-PE instance (ctest test_api_fuzz), and 2/4/8 PEs under tetherrun (mp_api_fuzz_*), where
// every PE draws its one-sided calls on its own (good addresses in its own slice of each object, on any PE: only it
// writes there) and the collective ones (allocation, the world allreduce, teams) alike from PE 0's seed. What every
// call must do: tether.h's contract, "clear errors, never a crash or a hang". The calls: put/get (blocking, nbi,
// elems), atomics (host and stream), wait_until/test, put_signal, the signal calls, allocation, putmem/getmem/p on the
// stream, the world team's allreduce, prepared sets (prepare, post, free), teams (splits, destroys, calls on live,
// destroyed and garbage handles). For each:
//  - a call with an argument of a bad class (a PE outside [0, n_pes), a NULL or non-symmetric address, a byte count
//    beyond the heap, an enum value no enumerator has, a misaligned word for an atomic, wait or signal) fails, with a
//    status among tether.h's codes and a message naming the call;
//  - a call whose arguments are all good succeeds, and what it moved is there (a put's bytes at dest, a get's in the
//    local buffer, an atomic's old and new values, a signal's word);
//  - nothing crashes (the asan preset runs this too), and no call takes longer than its bound (a watchdog aborts with
//    the call that hung).
// Waits are asked only for conditions that hold (or with bad arguments): a wait that times out takes TETHER_TIMEOUT,
// and on a stream it would fail the emulated stream for the rest of the run. Prints its seed (TETHER_TEST_SEED repeats
// a run).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "call_watchdog.h"
#include "cpu_stream_world.h"
#include "test_seed.h"
#include "tether/datatype.h"
#include "tether/tether.h"

namespace {

constexpr size_t kObj = 4096;  // bytes of each symmetric object
constexpr int kCalls = 30000;

class ApiFuzz : public CpuStreamWorld<4> {};

// The classes an argument is drawn from, and whether the draw is a bad one.
struct Addr {
  char* p = nullptr;
  bool bad = false;        // NULL or outside the symmetric heap
  bool misaligned = false;  // inside, but not 8-byte aligned
  size_t room = 0;          // good: bytes from p to the end of this PE's slice of its object
};

class Fuzzer {
 public:
  // seed: the same on every PE (the calls that are collective are drawn from it alike everywhere).
  Fuzzer(tether_t w, tether::StreamOps* so, void* stream, uint64_t seed)
      : w_(w), so_(so), stream_(stream), me_(tether_my_pe(w)), n_(tether_n_pes(w)),
        slice_(kObj / static_cast<size_t>(n_) / 8 * 8), rng_(seed ^ (0x9e3779b97f4a7c15ull * (me_ + 1u))),
        shared_(seed), local_(kObj / 8), stackBuf_{} {}

  ~Fuzzer() {
    for (tether_team_t t : live_) (void)tether_team_destroy(t);
    for (char* o : objs_) (void)tether_free(w_, o);
    (void)tether_free(w_, coll_);
  }

  void run(int calls) {
    void* c = nullptr;
    ASSERT_EQ(tether_calloc(w_, 1, kObj, &c), TETHER_SUCCESS) << tether_last_error();
    coll_ = static_cast<char*>(c);
    for (int i = 0; i < 4; ++i) newObject();
    CallWatchdog dog("api fuzz", 60);  // (above the mp runs' TETHER_TIMEOUT=20: a wait that times out reports first)
    dog_ = &dog;
    for (int i = 0; i < calls && !::testing::Test::HasFailure(); ++i) {
      dog.enter(i, "");
      step();
      dog.left();
    }
    ASSERT_TRUE(so_->synchronize(stream_).isOk()) << "the emulated stream failed during the run";
    if (!::testing::Test::HasFailure()) {  // (no PE leaves while another still reaches into its objects)
      ASSERT_EQ(tether_barrier_all(w_), TETHER_SUCCESS) << tether_last_error();
    }
    std::printf("api fuzz: %d calls, %d must-fail, %d must-succeed, %d either; typed: %d checked, %d refused\n", calls,
                nFail_, nOk_, nEither_, nTyped_, nTypedBad_);
  }

 private:
  std::string at() const { return "call " + std::to_string(dog_->index()) + " " + what_; }
  // Draws of this PE (its one-sided calls), and draws alike on every PE (suni, scoin: collective calls).
  uint64_t uni(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool coin(unsigned percent) { return uni(100) < percent; }
  uint64_t suni(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(shared_); }
  bool scoin(unsigned percent) { return suni(100) < percent; }
  // The bytes at (pe, addr): this PE's own memory, or a get (which must work: only this PE writes its slice).
  std::vector<char> readBack(int pe, const char* addr, size_t n) {
    std::vector<char> v(n);
    if (pe == me_) {
      if (n) std::memcpy(v.data(), addr, n);
    } else if (n) {
      EXPECT_EQ(tether_get(w_, v.data(), addr, n, pe), TETHER_SUCCESS)
          << at() << ": read back: " << tether_last_error();
    }
    return v;
  }
  // Writes n pattern bytes to (pe, addr) and returns them.
  std::vector<char> plant(int pe, char* addr, size_t n) {
    std::vector<char> v(n);
    pattern(v.data(), n);
    if (pe == me_) {
      if (n) std::memcpy(addr, v.data(), n);
    } else if (n) {
      EXPECT_EQ(tether_put(w_, addr, v.data(), n, pe), TETHER_SUCCESS) << at() << ": plant: " << tether_last_error();
    }
    return v;
  }

  void newObject() {
    void* p = nullptr;
    ASSERT_EQ(tether_calloc(w_, 1, kObj, &p), TETHER_SUCCESS) << tether_last_error();
    objs_.push_back(static_cast<char*>(p));
  }

  // A symmetric address: good (an object at an 8-aligned offset), misaligned, or bad.
  Addr sym(unsigned badPercent = 15, unsigned misPercent = 5) {
    Addr a;
    if (coin(badPercent)) {
      a.bad = true;
      switch (uni(4)) {
        case 0: a.p = nullptr; break;
        case 1: a.p = reinterpret_cast<char*>(stackBuf_); break;  // this program's memory, not the heap
        case 2: a.p = objs_[0] + (size_t{1} << 40); break;        // far beyond the heap (never dereferenced)
        default: a.p = reinterpret_cast<char*>(local_.data()); break;
      }
      return a;
    }
    // Good addresses lie in this PE's slice of an object, on whichever PE: only this PE writes there.
    char* o = objs_[uni(objs_.size())] + static_cast<size_t>(me_) * slice_;
    if (coin(misPercent)) {
      a.p = o + 1 + 8 * uni(std::min<size_t>(8, slice_ / 8));
      a.misaligned = true;
      a.room = slice_ - static_cast<size_t>(a.p - o);
      return a;
    }
    const size_t off = 8 * uni(slice_ / 8);
    a.p = o + off;
    a.room = slice_ - off;
    return a;
  }
  // A byte count for an address with `room` bytes: within it, or beyond the heap (bad).
  size_t bytes(size_t room, bool* bad) {
    *bad = coin(10);
    if (*bad) return uni(2) ? size_t{1} << 40 : SIZE_MAX - uni(8);
    if (room == 0) return 0;
    const size_t caps[] = {0, 1, 7, 8, 16, 64, 512, kObj};
    return std::min(room, caps[uni(8)]);
  }
  int pe(bool* bad) {
    *bad = coin(10);
    if (!*bad) return static_cast<int>(uni(static_cast<uint64_t>(n_)));
    const int bads[] = {n_, -1, INT_MAX, INT_MIN, n_ + 1};
    return bads[uni(5)];
  }
  // An enum value: a good one below draw, or a bad one (representable values that no enumerator has: the type has
  // `enumerators` of them, 0 .. enumerators-1).
  // alike: drawn alike on every PE (collective calls).
  template <class E>
  E enumOf(int draw, int enumerators, bool* bad, bool alike = false) {
    auto u = [&](uint64_t n) { return alike ? suni(n) : uni(n); };
    *bad = u(100) < 8;
    if (!*bad) return static_cast<E>(u(static_cast<uint64_t>(draw)));
    const int bads[] = {enumerators, enumerators + 1, 1000, INT_MAX};
    return static_cast<E>(bads[u(4)]);
  }
  void pattern(void* p, size_t n) {
    auto* b = static_cast<unsigned char*>(p);
    const unsigned char s = static_cast<unsigned char>(uni(256));
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(s + i * 7);
  }

  // Checks one call's outcome against its class; mustFail wins over a good-looking rest.
  void expect(const char* call, tether_status_t st, bool mustFail, bool mustSucceed) {
    const std::string msg = st == TETHER_SUCCESS ? "" : tether_last_error();
    ASSERT_TRUE(st >= TETHER_SUCCESS && st <= TETHER_ERR_TRUNCATED)
        << at() << ": status " << static_cast<int>(st) << " is no tether_status_t";
    if (mustFail) {
      ++nFail_;
      ASSERT_NE(st, TETHER_SUCCESS) << at() << " succeeded with a bad argument";
    } else if (mustSucceed) {
      ++nOk_;
      ASSERT_EQ(st, TETHER_SUCCESS) << at() << ": " << msg;
    } else {
      ++nEither_;
    }
    if (st != TETHER_SUCCESS) {
      ASSERT_NE(msg.find(call), std::string::npos)
          << at() << ": the message does not name " << call << ": '" << msg << "'";
    }
  }
  void describe(const char* call, const Addr& a, size_t n, int p) {
    dog_->name(call);
    char b[200];
    std::snprintf(b, sizeof b, "%s(addr %p%s%s, %zu bytes, pe %d)", call, static_cast<void*>(a.p),
                  a.bad ? " bad" : "", a.misaligned ? " misaligned" : "", n, p);
    what_ = b;
  }

  void step() {
    switch (suni(17)) {
      case 0: rma(true, false); break;
      case 1: rma(false, false); break;
      case 2: rma(true, true); break;
      case 3: rma(false, true); break;
      case 4: elems(); break;
      case 5: atomic(false); break;
      case 6: atomic(true); break;
      case 7: waitOrTest(); break;
      case 8: putSignal(); break;
      case 9: signalOps(); break;
      case 10: alloc(); break;
      case 11: streamRma(); break;
      case 12: allreduce(); break;
      case 13: prepared(); break;
      case 14: teams(); break;
      case 15: typed(); break;
      default: {
        dog_->name("tether_quiet/fence");
        what_ = "tether_quiet/fence";
        expect("tether_quiet", tether_quiet(w_), false, true);
        expect("tether_fence", tether_fence(w_), false, true);
      }
    }
  }

  // put/get (blocking, or nbi then quiet) between the local buffer (or NULL) and a symmetric address.
  void rma(bool isPut, bool nbi) {
    const char* call = isPut ? (nbi ? "tether_put_nbi" : "tether_put") : (nbi ? "tether_get_nbi" : "tether_get");
    Addr a = sym();
    bool badN = false, badPe = false;
    const size_t n = bytes(a.bad ? kObj : a.room, &badN);
    const int p = pe(&badPe);
    const bool nullLocal = coin(5);
    char* loc = nullLocal ? nullptr : reinterpret_cast<char*>(local_.data());
    describe(call, a, n, p);
    const bool mustFail = badPe || (n > 0 && (a.bad || nullLocal)) || badN;
    const bool good = !mustFail && !a.bad;
    if (isPut && loc) pattern(loc, std::min(n, kObj));
    std::vector<char> want;  // a get's: the bytes planted at the source first
    if (!isPut && good) want = plant(p, a.p, n);
    tether_status_t st;
    if (isPut) st = (nbi ? tether_put_nbi : tether_put)(w_, a.p, loc, n, p);
    else st = (nbi ? tether_get_nbi : tether_get)(w_, loc, a.p, n, p);
    expect(call, st, mustFail, good);
    if (nbi) expect("tether_quiet", tether_quiet(w_), false, true);
    if (good && st == TETHER_SUCCESS && n > 0) {
      const std::vector<char> got = isPut ? readBack(p, a.p, n) : std::vector<char>(loc, loc + n);
      if (std::memcmp(got.data(), isPut ? loc : want.data(), n) != 0) ADD_FAILURE() << at() << ": the bytes differ";
    }
  }

  // put_elems / get_elems: nelems * elem_size must not overflow.
  void elems() {
    const bool isPut = coin(50);
    const char* call = isPut ? "tether_put_elems" : "tether_get_elems";
    Addr a = sym();
    bool badPe = false;
    const int p = pe(&badPe);
    const bool overflow = coin(10);
    const size_t es = size_t{1} << (overflow ? 1 + uni(3) : uni(4));  // (1-byte elements cannot overflow)
    size_t ne = a.bad ? uni(16) : uni(a.room / es + 1);
    if (overflow) ne = SIZE_MAX / es + 1 + uni(4);
    describe(call, a, ne * es, p);
    char* loc = reinterpret_cast<char*>(local_.data());
    if (isPut) pattern(loc, std::min(ne * es, kObj));
    const tether_status_t st =
        isPut ? tether_put_elems(w_, a.p, loc, ne, es, p) : tether_get_elems(w_, loc, a.p, ne, es, p);
    const bool mustFail = badPe || overflow || (ne > 0 && a.bad);
    expect(call, st, mustFail, !mustFail && !a.bad);
    if (overflow && !badPe && st != TETHER_ERR_OVERFLOW && st != TETHER_ERR_INVALID_PE)
      ADD_FAILURE() << at() << ": an overflowing count gave " << tether_status_string(st);
  }

  // tether_atomic (or its stream form) on a word of the types and ops tether.h lists, with bad classes mixed in.
  void atomic(bool onStream) {
    const char* call = onStream ? "tether_atomic_on_stream" : "tether_atomic";
    Addr a = sym(15, 15);
    bool badOp = false, badType = false, badPe = false;
    const tether_amo_t op = enumOf<tether_amo_t>(TETHER_AMO_COUNT, TETHER_AMO_COUNT, &badOp);
    // The 64-bit integer types every op takes, and a few that some ops refuse (those are "either").
    const tether_dtype_t goodTypes[] = {TETHER_UINT64, TETHER_INT64, TETHER_ULONGLONG, TETHER_UINT32, TETHER_INT,
                                        TETHER_DOUBLE, TETHER_SHORT};
    bool badTypeEnum = coin(8);
    tether_dtype_t type = badTypeEnum ? static_cast<tether_dtype_t>(TETHER_DTYPE_COUNT + uni(3))
                                      : goodTypes[uni(sizeof goodTypes / sizeof *goodTypes)];
    badType = badTypeEnum;
    const int p = pe(&badPe);
    describe(call, a, 8, p);
    uint64_t value = uni(1000), cond = uni(3), fetched = 0;
    const bool nullFetched = coin(10);
    const bool fetching = op == TETHER_AMO_FETCH || op == TETHER_AMO_SWAP || op == TETHER_AMO_COMPARE_SWAP ||
                          op == TETHER_AMO_FETCH_INC || op == TETHER_AMO_FETCH_ADD || op == TETHER_AMO_FETCH_AND ||
                          op == TETHER_AMO_FETCH_OR || op == TETHER_AMO_FETCH_XOR;
    uint64_t* fp = nullFetched ? nullptr : &fetched;
    uint64_t before = 0;
    if (!a.bad && !a.misaligned && !badPe) std::memcpy(&before, readBack(p, a.p, 8).data(), 8);
    tether_status_t st;
    if (onStream) {
      // fetched must be memory the stream can write (the emulation: any host memory; kept alive until the sync).
      st = tether_atomic_on_stream(w_, op, type, a.p, &value, &cond, fp, p, stream_);
      if (st == TETHER_SUCCESS) {
        ASSERT_TRUE(so_->synchronize(stream_).isOk()) << at();
      }
    } else {
      st = tether_atomic(w_, op, type, a.p, &value, &cond, fp, p);
    }
    const bool mustFail = badOp || badType || badPe || a.bad || a.misaligned || (fetching && nullFetched);
    // Good: a 64-bit integer type (every op takes those), the word aligned, fetched given where the op fetches.
    const bool wide = type == TETHER_UINT64 || type == TETHER_INT64 || type == TETHER_ULONGLONG;
    const bool good = !mustFail && wide;
    expect(call, st, mustFail, good);
    if (good && st == TETHER_SUCCESS) {
      uint64_t after = 0;
      std::memcpy(&after, readBack(p, a.p, 8).data(), 8);
      uint64_t want = before;
      switch (op) {
        case TETHER_AMO_SET: case TETHER_AMO_SWAP: want = value; break;
        case TETHER_AMO_COMPARE_SWAP: want = before == cond ? value : before; break;
        case TETHER_AMO_INC: case TETHER_AMO_FETCH_INC: want = before + 1; break;
        case TETHER_AMO_ADD: case TETHER_AMO_FETCH_ADD: want = before + value; break;
        case TETHER_AMO_AND: case TETHER_AMO_FETCH_AND: want = before & value; break;
        case TETHER_AMO_OR: case TETHER_AMO_FETCH_OR: want = before | value; break;
        case TETHER_AMO_XOR: case TETHER_AMO_FETCH_XOR: want = before ^ value; break;
        default: break;
      }
      if (after != want) ADD_FAILURE() << at() << ": word " << after << ", want " << want;
      if (fetching && fetched != before)
        ADD_FAILURE() << at() << ": fetched " << fetched << ", old value " << before;
    }
  }

  // tether_wait_until / tether_test on a word, for a condition that holds (EQ its value, GE 0, NE value+1) unless an
  // argument is bad.
  void waitOrTest() {
    const bool isTest = coin(50);
    const char* call = isTest ? "tether_test" : "tether_wait_until";
    Addr a = sym(15, 10);
    bool badCmp = false;
    tether_cmp_t cmp = enumOf<tether_cmp_t>(3, TETHER_CMP_LE + 1, &badCmp);  // good: EQ, NE, GT
    bool badType = coin(8);
    const tether_dtype_t type = badType ? static_cast<tether_dtype_t>(TETHER_DTYPE_COUNT + uni(3)) : TETHER_UINT64;
    describe(call, a, 8, 0);
    uint64_t cur = 0;
    if (!a.bad && !a.misaligned) std::memcpy(&cur, a.p, 8);
    uint64_t value = cur;
    if (!badCmp && cmp == TETHER_CMP_NE) value = cur + 1;
    if (!badCmp && cmp == TETHER_CMP_GT) value = cur - 1;  // holds unless cur == 0 (then wraps: does not hold)
    const bool holds = badCmp || cmp != TETHER_CMP_GT || cur != 0;
    if (!holds && !isTest) return;  // never wait for what does not hold
    const bool nullValue = coin(5);
    int result = -1;
    const tether_status_t st = isTest ? tether_test(w_, a.p, type, cmp, nullValue ? nullptr : &value, &result)
                                      : tether_wait_until(w_, a.p, type, cmp, nullValue ? nullptr : &value);
    const bool mustFail = badCmp || badType || a.bad || a.misaligned || nullValue;
    expect(call, st, mustFail, !mustFail);
    if (isTest && !mustFail && st == TETHER_SUCCESS && result != (holds ? 1 : 0))
      ADD_FAILURE() << at() << ": result " << result << ", the condition "
                    << (holds ? "holds" : "does not hold");
  }

  // put_signal (blocking or nbi) with the signal word drawn like any symmetric word.
  void putSignal() {
    const bool nbi = coin(50);
    const char* call = nbi ? "tether_put_signal_nbi" : "tether_put_signal";
    Addr a = sym(10, 0), s = sym(10, 10);
    bool badN = false, badPe = false, badOp = false;
    const size_t n = bytes(a.bad ? kObj : a.room, &badN);
    const int p = pe(&badPe);
    const tether_signal_op_t op = enumOf<tether_signal_op_t>(2, 2, &badOp);
    describe(call, a, n, p);
    what_ += " sig " + std::to_string(reinterpret_cast<uintptr_t>(s.p)) + (s.bad ? " bad" : "") +
             (s.misaligned ? " misaligned" : "");
    char* loc = reinterpret_cast<char*>(local_.data());
    pattern(loc, std::min(n, kObj));
    // The signal word must not overlap the data (that would be the caller's race; keep the draws apart).
    if (!a.bad && !s.bad && s.p + 8 > a.p && s.p < a.p + n) return;
    uint64_t before = 0;
    if (!s.bad && !s.misaligned && !badPe) std::memcpy(&before, readBack(p, s.p, 8).data(), 8);
    const uint64_t sig = 1 + uni(100);
    const tether_status_t st = (nbi ? tether_put_signal_nbi : tether_put_signal)(
        w_, a.p, loc, n, reinterpret_cast<uint64_t*>(s.p), sig, op, p);
    const bool mustFail = badN || badPe || badOp || (n > 0 && a.bad) || s.bad || s.misaligned;
    const bool good = !mustFail && !a.bad;
    expect(call, st, mustFail, good);
    if (nbi) expect("tether_quiet", tether_quiet(w_), false, true);
    if (good && st == TETHER_SUCCESS) {
      uint64_t after = 0;
      std::memcpy(&after, readBack(p, s.p, 8).data(), 8);
      const uint64_t want = op == TETHER_SIGNAL_SET ? sig : before + sig;
      if (after != want) ADD_FAILURE() << at() << ": signal " << after << ", want " << want;
      if (n > 0 && std::memcmp(readBack(p, a.p, n).data(), loc, n) != 0) ADD_FAILURE() << at() << ": data differ";
    }
  }

  // signal_op, signal_fetch, signal_wait_until (a condition that holds).
  void signalOps() {
    Addr s = sym(15, 15);
    bool badPe = false, badOp = false, badCmp = false;
    auto* w = reinterpret_cast<uint64_t*>(s.p);
    switch (uni(3)) {
      case 0: {
        const int p = pe(&badPe);
        const tether_signal_op_t op = enumOf<tether_signal_op_t>(2, 2, &badOp);
        describe("tether_signal_op", s, 8, p);
        expect("tether_signal_op", tether_signal_op(w_, w, 1 + uni(9), op, p), badPe || badOp || s.bad || s.misaligned,
               !(badPe || badOp || s.bad || s.misaligned));
        break;
      }
      case 1: {
        uint64_t v = 0;
        const bool nullOut = coin(10);
        describe("tether_signal_fetch", s, 8, 0);
        const tether_status_t st = tether_signal_fetch(w_, w, nullOut ? nullptr : &v);
        const bool mustFail = s.bad || s.misaligned || nullOut;
        expect("tether_signal_fetch", st, mustFail, !mustFail);
        if (!mustFail && st == TETHER_SUCCESS && std::memcmp(&v, s.p, 8) != 0)
          ADD_FAILURE() << at() << ": fetched another value";
        break;
      }
      default: {
        const tether_cmp_t cmp = enumOf<tether_cmp_t>(1, TETHER_CMP_LE + 1, &badCmp);  // EQ when good
        uint64_t cur = 0, seen = 0;
        if (!s.bad && !s.misaligned) std::memcpy(&cur, s.p, 8);
        describe("tether_signal_wait_until", s, 8, 0);
        const tether_status_t st = tether_signal_wait_until(w_, w, cmp, cur, &seen);
        const bool mustFail = s.bad || s.misaligned || badCmp;
        expect("tether_signal_wait_until", st, mustFail, !mustFail);
        if (!mustFail && st == TETHER_SUCCESS && seen != cur)
          ADD_FAILURE() << at() << ": seen " << seen << ", value " << cur;
      }
    }
  }

  // The allocation calls (collective: drawn alike on every PE): objects come and go; bad sizes and alignments fail
  // and change nothing.
  void alloc() {
    dog_->name("tether_malloc/calloc/align/realloc/free");
    void* p = nullptr;
    switch (suni(4)) {
      case 0: {  // malloc of a size beyond the heap's maximum
        what_ = "tether_malloc(beyond the heap)";
        const size_t n = suni(2) ? SIZE_MAX - suni(64) : size_t{1} << 40;
        expect("tether_malloc", tether_malloc(w_, n, &p), true, false);
        break;
      }
      case 1: {  // calloc whose count * size overflows, or NULL out
        const bool nullOut = scoin(50);
        what_ = nullOut ? "tether_calloc(out NULL)" : "tether_calloc(overflowing count)";
        expect("tether_calloc", nullOut ? tether_calloc(w_, 1, 8, nullptr) : tether_calloc(w_, SIZE_MAX / 2, 4, &p),
               true, false);
        break;
      }
      case 2: {  // align with a bad alignment (not a power of two) or a good one
        const bool badAlign = scoin(40);
        const size_t al = badAlign ? 3 + 2 * suni(100) : size_t{8} << suni(8);
        what_ = "tether_align(" + std::to_string(al) + ")";
        const tether_status_t st = tether_align(w_, al, kObj, &p);
        expect("tether_align", st, badAlign, !badAlign);
        if (st == TETHER_SUCCESS) {
          if (reinterpret_cast<uintptr_t>(p) % al != 0) ADD_FAILURE() << what_ << " returned " << p;
          std::memset(static_cast<char*>(p) + static_cast<size_t>(me_) * slice_, 0, slice_);  // this PE's slice
          if (objs_.size() < 12) objs_.push_back(static_cast<char*>(p));
          else expect("tether_free", tether_free(w_, p), false, true);
        }
        break;
      }
      default: {  // realloc an object to the same size (contents kept) or free one (a fresh one replaces it)
        const size_t i = suni(objs_.size());
        if (scoin(50)) {
          what_ = "tether_realloc(same size)";
          // (This PE's slice: the others' may still change until their PEs enter the call.)
          char* mine = objs_[i] + static_cast<size_t>(me_) * slice_;
          std::vector<char> keep(mine, mine + slice_);
          const tether_status_t st = tether_realloc(w_, objs_[i], kObj, &p);
          expect("tether_realloc", st, false, true);
          if (st == TETHER_SUCCESS) {
            objs_[i] = static_cast<char*>(p);
            if (std::memcmp(objs_[i] + static_cast<size_t>(me_) * slice_, keep.data(), slice_) != 0)
              ADD_FAILURE() << "realloc lost the contents";
          }
        } else if (objs_.size() > 2) {
          what_ = "tether_free(object)";
          expect("tether_free", tether_free(w_, objs_[i]), false, true);
          objs_.erase(objs_.begin() + static_cast<std::ptrdiff_t>(i));
          newObject();
        }
      }
    }
  }

  // putmem/getmem/p on the emulated stream, then a sync: good calls move their bytes, bad ones fail at the call.
  void streamRma() {
    const unsigned kind = static_cast<unsigned>(uni(3));
    const char* call = kind == 0 ? "tether_putmem_on_stream" : kind == 1 ? "tether_getmem_on_stream"
                                                                          : "tether_p_on_stream";
    Addr a = sym(15, kind == 2 ? 15 : 0);
    bool badN = false, badPe = false;
    size_t n = bytes(a.bad ? kObj : a.room, &badN);
    bool badWidth = false;
    if (kind == 2 && !badN) {
      const size_t widths[] = {1, 2, 4, 8, 3, 16};
      n = widths[uni(6)];
      badWidth = n == 3 || n == 16;
    }
    const int p = pe(&badPe);
    describe(call, a, n, p);
    // The stream reads and writes these after the call returns: a buffer of its own, alive until the sync.
    std::vector<char> loc(std::max<size_t>(n <= kObj ? n : 0, 8));
    pattern(loc.data(), loc.size());
    const bool misalignedP = kind == 2 && !badWidth && !a.bad && reinterpret_cast<uintptr_t>(a.p) % n != 0;
    const bool mustFail = badN || badPe || (n > 0 && a.bad) || badWidth || misalignedP;
    const bool good = !mustFail && !a.bad;
    std::vector<char> want;  // a get's: the bytes planted at the source first
    if (kind == 1 && good) want = plant(p, a.p, n);
    tether_status_t st;
    if (kind == 0) st = tether_putmem_on_stream(w_, a.p, loc.data(), n, p, stream_);
    else if (kind == 1) st = tether_getmem_on_stream(w_, loc.data(), a.p, n, p, stream_);
    else st = tether_p_on_stream(w_, a.p, loc.data(), n, p, stream_);
    expect(call, st, mustFail, good);
    ASSERT_TRUE(so_->synchronize(stream_).isOk()) << at() << ": the stream failed";
    if (good && st == TETHER_SUCCESS && n > 0) {
      const std::vector<char> got = kind == 1 ? std::vector<char>(loc.begin(), loc.begin() + n) : readBack(p, a.p, n);
      if (std::memcmp(got.data(), kind == 1 ? want.data() : loc.data(), n) != 0)
        ADD_FAILURE() << at() << ": the bytes differ after the sync";
    }
  }

  // A prepared set of 1-4 operations (puts, gets, put_signals, signals, waits that hold, quiets, barriers) with bad
  // fields mixed in: tether_prepare refuses a set with any bad operation; a good set posts (patch: none, zero, or an
  // offset beyond the heap, which the post refuses) and moves its bytes.
  void prepared() {
    dog_->name("tether_prepare");
    tether_op_desc_t ops[4];
    std::vector<std::vector<char>> srcs;  // put sources and get destinations: alive until the sync
    const size_t n = 1 + uni(4);
    bool anyBad = false;
    struct Moved { int pe; char* sym; const char* loc; size_t n; };
    std::vector<Moved> moved;
    std::vector<std::pair<char*, size_t>> written;  // symmetric ranges this set writes (kept apart)
    auto apart = [&](char* p, size_t len) {
      for (auto& w : written)
        if (p < w.first + w.second && w.first < p + len) return false;
      written.emplace_back(p, len);
      return true;
    };
    std::string text = "tether_prepare(";
    bool flaggedData = false, flaggedEmpty = false;  // some data operation takes patch offsets (with bytes / none)
    for (size_t i = 0; i < n; ++i) {
      tether_op_desc_t& o = ops[i];
      std::memset(&o, 0, sizeof o);
      bool badKind = coin(5);
      int kind = badKind ? (uni(2) ? 0 : 9 + static_cast<int>(uni(1000))) : 1 + static_cast<int>(uni(8));
      // (Barriers in a set are collective: with several PEs, whose sets differ, a quiet instead.)
      if (n_ > 1 && (kind == TETHER_OP_BARRIER_ALL || kind == TETHER_OP_SYNC_ALL)) kind = TETHER_OP_QUIET;
      o.kind = static_cast<tether_op_kind_t>(kind);
      bool badPe = false, badN = false, badOp = false, badCmp = false;
      o.pe = pe(&badPe);
      Addr d = sym(8, 0), sg = sym(8, 8);
      o.nbytes = bytes(d.bad ? kObj : d.room, &badN);
      srcs.emplace_back(std::max<size_t>(o.nbytes <= kObj ? o.nbytes : 0, 8));
      pattern(srcs.back().data(), srcs.back().size());
      o.sig_addr = reinterpret_cast<uint64_t*>(sg.p);
      o.signal = 1 + uni(5);
      o.sig_op = enumOf<tether_signal_op_t>(2, 2, &badOp);
      o.cmp = TETHER_CMP_GE;
      bool bad = badKind;
      switch (kind) {
        case TETHER_OP_PUT: case TETHER_OP_PUT_SIGNAL:
          o.dest = d.p;
          o.src = srcs.back().data();
          bad = bad || badPe || badN || (o.nbytes > 0 && d.bad);
          if (kind == TETHER_OP_PUT_SIGNAL) bad = bad || badOp || sg.bad || sg.misaligned;
          // Writes that overlap within one set are the caller's race: such an operation becomes a quiet.
          if (!bad && ((!d.bad && !apart(d.p, o.nbytes)) || (kind == TETHER_OP_PUT_SIGNAL && !apart(sg.p, 8)))) {
            o.kind = TETHER_OP_QUIET;
            break;
          }
          if (!bad && !d.bad && o.nbytes) moved.push_back({o.pe, d.p, srcs.back().data(), o.nbytes});
          if (coin(30)) o.flags = TETHER_OP_PATCH_OFFSET;
          break;
        case TETHER_OP_GET:
          o.dest = srcs.back().data();
          o.src = d.p;
          bad = bad || badPe || badN || (o.nbytes > 0 && d.bad);
          if (!bad && !d.bad && !apart(d.p, o.nbytes)) {  // (read while written: keep apart too)
            o.kind = TETHER_OP_QUIET;
            break;
          }
          if (!bad && !d.bad && o.nbytes) moved.push_back({o.pe, d.p, srcs.back().data(), o.nbytes});
          if (coin(30)) o.flags = TETHER_OP_PATCH_OFFSET;
          break;
        case TETHER_OP_SIGNAL:
          bad = bad || badPe || badOp || sg.bad || sg.misaligned;
          if (!bad && !apart(sg.p, 8)) o.kind = TETHER_OP_QUIET;
          break;
        case TETHER_OP_SIGNAL_WAIT:  // EQ the word's value now, which no other operation of the set writes
          o.cmp = enumOf<tether_cmp_t>(1, TETHER_CMP_LE + 1, &badCmp);
          bad = bad || badCmp || sg.bad || sg.misaligned;
          if (!bad) {
            std::memcpy(&o.signal, sg.p, 8);
            if (!apart(sg.p, 8)) o.kind = TETHER_OP_QUIET;
          }
          break;
        default: break;  // QUIET, BARRIER_ALL, SYNC_ALL and bad kinds
      }
      anyBad = anyBad || bad;
      if (o.flags) (o.nbytes ? flaggedData : flaggedEmpty) = true;
      text += std::to_string(kind) + (bad ? "!" : "") + " ";
    }
    what_ = text + ")";
    tether_op_set_t set = nullptr;
    const tether_status_t st = tether_prepare(w_, ops, n, &set);
    expect("tether_prepare", st, anyBad, !anyBad);
    if (st != TETHER_SUCCESS) {
      if (set != nullptr) ADD_FAILURE() << at() << ": a failed prepare gave a set";
      return;
    }
    dog_->name("tether_post_on_stream");
    const unsigned how = static_cast<unsigned>(uni(3));
    tether_post_patch_t patch{how == 2 ? size_t{1} << 40 : 0, 0};
    const tether_status_t ps = tether_post_on_stream(set, stream_, how == 0 ? nullptr : &patch);
    // A patch beyond the heap fails where an operation with bytes takes offsets (checked at the post, nothing
    // enqueued); otherwise it is ignored or zero, and the post succeeds.
    const bool postFails = how == 2 && flaggedData;
    expect("tether_post_on_stream", ps, postFails, how != 2 || (!flaggedData && !flaggedEmpty));
    ASSERT_TRUE(so_->synchronize(stream_).isOk()) << at() << ": the stream failed";
    for (const Moved& m : moved)
      if (ps == TETHER_SUCCESS && std::memcmp(readBack(m.pe, m.sym, m.n).data(), m.loc, m.n) != 0)
        ADD_FAILURE() << at() << ": bytes differ";
    expect("tether_op_set_free", tether_op_set_free(set), false, true);
  }

  // The address of a buffer's byte -lo (the origin of a type whose bytes start lo from it; lo may be positive, the
  // origin then before the buffer): computed as an address.
  static char* origin(std::vector<char>& v, int64_t lo) {
    return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(v.data()) - static_cast<uintptr_t>(lo));
  }
  // Typed put/get (tether/datatype.h) with the symmetric side a random small type -- two blocks at displacements
  // from small to +-2^40 bytes, resized or not, 1-3 instances -- at an address of this PE's slice: where the whole true
  // extent stays in the slice the call must succeed and move exactly what the host reference unpacks
  // (tether_type_unpack into a copy of the bytes before); where it reaches 2^40 bytes away (outside any heap) it must
  // fail with nothing written; in between (inside the heap, outside the slice) it is not made. The local side is
  // contiguous bytes.
  void typed() {
    dog_->name("tether_put_typed/get_typed");
    const int64_t disps[] = {0, 1, 7, -5, 24, -40, 100, INT64_C(1) << 40, -(INT64_C(1) << 40)};
    const int64_t d0 = disps[uni(7)], d1 = coin(15) ? disps[7 + uni(2)] : disps[uni(7)];
    const int64_t lens[2] = {1 + static_cast<int64_t>(uni(8)), static_cast<int64_t>(uni(8))};
    const int64_t ds[2] = {d0, d1};
    tether_type_t byte = nullptr, t = nullptr, flat = nullptr;
    ASSERT_EQ(tether_type_basic(TETHER_BASIC_BYTE, &byte), TETHER_SUCCESS);
    ASSERT_EQ(tether_type_hindexed(2, lens, ds, byte, &t), TETHER_SUCCESS) << tether_type_last_error();
    if (coin(30)) {  // an extent of its own (instances overlap or leave gaps)
      tether_type_t r = nullptr;
      ASSERT_EQ(tether_type_resized(t, -static_cast<int64_t>(uni(8)), 1 + static_cast<int64_t>(uni(40)), &r),
                TETHER_SUCCESS);
      tether_type_free(&t);
      t = r;
    }
    ASSERT_EQ(tether_type_commit(t), TETHER_SUCCESS) << tether_type_last_error();
    const int64_t count = 1 + static_cast<int64_t>(uni(3));
    int64_t size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
    tether_type_size(t, &size);
    tether_type_extent(t, &lb, &extent);
    tether_type_true_extent(t, &tlb, &textent);
    const int64_t n = size * count;
    ASSERT_EQ(tether_type_contiguous(n, byte, &flat), TETHER_SUCCESS);
    ASSERT_EQ(tether_type_commit(flat), TETHER_SUCCESS);
    // The instances' true span around the origin: [lo, hi).
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t i = 0; i < count; ++i) {
      lo = std::min(lo, i * extent + tlb);
      hi = std::max(hi, i * extent + tlb + textent);
    }
    Addr a = sym(0, 0);
    bool badPe = false;
    const int p = pe(&badPe);
    const int64_t from = static_cast<int64_t>(a.room) - static_cast<int64_t>(slice_);  // the slice's start - a.p
    const bool inside = lo >= from && hi <= static_cast<int64_t>(a.room);
    const bool far = lo <= -(INT64_C(1) << 39) || hi >= (INT64_C(1) << 39);
    const bool isPut = coin(50);
    const char* call = isPut ? "tether_put_typed" : "tether_get_typed";
    what_ = std::string(call) + "(" + std::to_string(count) + " x [" + std::to_string(lo) + ", " +
            std::to_string(hi) + "), pe " + std::to_string(p) + ")";
    if (n > 0 && (inside || far || badPe)) {
      std::vector<char> local(static_cast<size_t>(n));
      pattern(local.data(), local.size());
      std::vector<char> before, want;
      if (inside && !badPe) {
        before = readBack(p, a.p + lo, static_cast<size_t>(hi - lo));
        want = before;
        if (isPut) {
          int64_t done = 0;
          ASSERT_EQ(tether_type_unpack(t, count, local.data(), 0, n, origin(want, lo), &done), TETHER_SUCCESS);
        }
      }
      const tether_status_t st = isPut ? tether_put_typed(w_, a.p, t, count, local.data(), flat, 1, p)
                                       : tether_get_typed(w_, local.data(), flat, 1, a.p, t, count, p);
      const bool mustFail = badPe || far;
      expect(call, st, mustFail, !mustFail);
      ++(mustFail ? nTypedBad_ : nTyped_);
      if (!mustFail && st == TETHER_SUCCESS) {
        if (isPut) {
          if (readBack(p, a.p + lo, static_cast<size_t>(hi - lo)) != want)
            ADD_FAILURE() << at() << ": the target differs from the host reference's unpack";
        } else {
          std::vector<char> packed(static_cast<size_t>(n));
          int64_t done = 0;
          ASSERT_EQ(tether_type_pack(t, count, origin(before, lo), 0, n, packed.data(), &done), TETHER_SUCCESS);
          if (packed != local) ADD_FAILURE() << at() << ": the bytes got differ from the host reference's pack";
        }
      }
    }
    tether_type_free(&flat);
    tether_type_free(&t);
    tether_type_free(&byte);
  }

  // Teams, every decision alike on every PE (splits, syncs and collectives are collective): splits of the world team
  // (good: start 0, stride 1, every PE -- with one PE any stride; bad: a PE outside the parent, size < 1, stride 0
  // with several PEs, config flags), destroys, and sync/allreduce/queries/splits with a live or a garbage handle, and
  // queries with a destroyed one (tether.h: checked, TETHER_ERR_INVALID_ARG / -1, never a crash). A destroyed handle
  // is not passed to collective calls with several PEs: its address may name a later team on one PE and not another.
  void teams() {
    dog_->name("teams");
    tether_team_t world = tether_team_world(w_);
    switch (suni(4)) {
      case 0: {
        if (live_.size() >= 8) return;
        bool bad = scoin(40);
        int start = 0, stride = n_ == 1 ? static_cast<int>(suni(5)) - 2 : 1, size = n_;
        tether_team_config_t cfg{0};
        if (bad) {
          switch (suni(4)) {
            case 0: start = scoin(50) ? n_ : -1; break;
            case 1: size = scoin(50) ? 0 : -3; break;
            case 2: size = n_ + 1, stride = scoin(50) ? 0 : 1; break;  // a PE outside the parent (stride 0: twice)
            default: cfg.flags = 1u << suni(32);
          }
        }
        what_ = "tether_team_split_strided(" + std::to_string(start) + ", " + std::to_string(stride) + ", " +
                std::to_string(size) + ", flags " + std::to_string(cfg.flags) + ")";
        tether_team_t t = TETHER_TEAM_INVALID;
        const tether_team_config_t* c = cfg.flags || scoin(70) ? &cfg : nullptr;
        const tether_status_t st = tether_team_split_strided(world, start, stride, size, c, &t);
        expect("tether_team_split_strided", st, bad, !bad);
        if (st != TETHER_SUCCESS) {
          if (t != TETHER_TEAM_INVALID) ADD_FAILURE() << what_ << ": a failed split gave a team";
          return;
        }
        if (tether_team_my_pe(t) != me_ || tether_team_n_pes(t) != n_ || tether_team_world_pe(t, 0) != 0)
          ADD_FAILURE() << what_ << ": the new team's queries are wrong";
        live_.push_back(t);
        break;
      }
      case 1: {  // destroy a live team (it goes stale)
        if (live_.empty()) return;
        const size_t i = suni(live_.size());
        what_ = "tether_team_destroy(live)";
        expect("tether_team_destroy", tether_team_destroy(live_[i]), false, true);
        stale_.push_back(live_[i]);
        live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      default: {  // a call on a live, destroyed or garbage handle
        const unsigned kind = live_.empty() ? 1 + static_cast<unsigned>(suni(2)) : static_cast<unsigned>(suni(3));
        const unsigned call = static_cast<unsigned>(suni(4));
        const bool staleOk = n_ == 1 || call == 1;  // (queries are local)
        const bool garbage = kind == 2 || (kind == 1 && (stale_.empty() || !staleOk));
        tether_team_t t = kind == 0 ? live_[suni(live_.size())]
                          : !garbage ? stale_[suni(stale_.size())]
                          : reinterpret_cast<tether_team_t>(coin(50) ? reinterpret_cast<uintptr_t>(stackBuf_) + 8
                                                                     : (uint64_t{1} << 47) + 8 * uni(1 << 20));
        // (A destroyed handle's address may be reused by a later split: then it names that live team again.)
        bool good = kind == 0;
        for (tether_team_t l : live_) good = good || l == t;
        what_ = std::string("team call on a ") + (good ? "live" : garbage ? "garbage" : "destroyed") + " handle";
        switch (call) {
          case 0: expect("tether_team_sync", tether_team_sync(t), !good, good); break;
          case 1: {
            const int me = tether_team_my_pe(t), n = tether_team_n_pes(t), ix = tether_team_index(t);
            if (good ? (me != me_ || n != n_ || ix < 0) : (me != -1 || n != -1 || ix != -1))
              ADD_FAILURE() << what_ << ": queries gave my_pe " << me << " n_pes " << n << " index " << ix;
            break;
          }
          case 2:
            expect("tether_team_allreduce", tether_team_allreduce(t, coll_, coll_, 4, TETHER_INT64, TETHER_RED_MAX),
                   !good, good);
            break;
          default: {
            tether_team_t sub = TETHER_TEAM_INVALID;
            const tether_status_t st = tether_team_split_strided(t, 0, 1, n_, nullptr, &sub);
            expect("tether_team_split_strided", st, !good, good && live_.size() < 8);
            if (st == TETHER_SUCCESS) live_.push_back(sub);
          }
        }
      }
    }
  }

  // tether_team_allreduce over the world team, every argument drawn alike on every PE: src in the first half of the
  // collectives' object, dest in the second half or in place (no one-sided call touches that object), bad classes
  // (a pointer outside the heap, a bad type or op, a count that overflows) the same on every member. Every member's
  // src holds the same values, so MIN and MAX (and any op with one PE) give them back.
  void allreduce() {
    dog_->name("tether_team_allreduce");
    bool badType = false, badOp = false;
    // The classic types (INT .. USHORT); SUM, PROD, MIN, MAX, which every type takes.
    const tether_dtype_t type = enumOf<tether_dtype_t>(TETHER_INT8, TETHER_DTYPE_COUNT, &badType, true);
    const tether_red_op_t op = enumOf<tether_red_op_t>(4, TETHER_RED_COUNT, &badOp, true);
    const size_t es = badType ? 8 : tether_dtype_size(type);
    const size_t half = kObj / 2;
    const size_t so = 8 * suni(half / 8), dof = half + 8 * suni(half / 8);
    const bool inPlace = scoin(20);
    char* src = coll_ + so;
    char* dest = inPlace ? src : coll_ + dof;
    const size_t room = std::min(half - so, inPlace ? half - so : kObj - dof);
    const unsigned badAddr = scoin(10) ? 1 + static_cast<unsigned>(suni(2)) : 0;  // 1: dest, 2: src outside the heap
    if (badAddr == 1) dest = reinterpret_cast<char*>(stackBuf_);
    if (badAddr == 2) src = coll_ + (size_t{1} << 40);
    size_t count = suni(room / es + 1);
    const bool overflow = scoin(5);
    if (overflow) count = SIZE_MAX / 2;
    what_ = "tether_team_allreduce(" + std::to_string(count) + " x type " + std::to_string(type) + ", op " +
            std::to_string(op) + (inPlace ? ", in place" : "") + (badAddr ? ", outside the heap" : "") + ")";
    const bool mustFail = badType || badOp || overflow || (count > 0 && badAddr);
    std::vector<char> want(mustFail ? 0 : count * es);
    if (!want.empty()) {
      const unsigned char s0 = static_cast<unsigned char>(suni(256));
      for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<char>(s0 + i * 7);
      std::memcpy(src, want.data(), want.size());
    }
    const tether_status_t st = tether_team_allreduce(tether_team_world(w_), dest, src, count, type, op);
    expect("tether_team_allreduce", st, mustFail, !mustFail);
    const bool integer = type != TETHER_FLOAT && type != TETHER_DOUBLE;  // (patterns may be NaNs)
    const bool same = n_ == 1 || op == TETHER_RED_MIN || op == TETHER_RED_MAX;
    if (!mustFail && integer && same && st == TETHER_SUCCESS && count > 0 &&
        std::memcmp(dest, want.data(), want.size()) != 0)
      ADD_FAILURE() << at() << ": dest is not every member's src";
  }

  tether_t w_;
  tether::StreamOps* so_;
  void* stream_;
  const int me_, n_;
  const size_t slice_;  // each PE's share of an object: one-sided calls of PE p write only [p*slice_, (p+1)*slice_)
  std::mt19937_64 rng_, shared_;
  std::vector<uint64_t> local_;
  uint64_t stackBuf_[64];
  std::vector<char*> objs_;
  char* coll_ = nullptr;  // the collectives' object (no one-sided call touches it)
  std::vector<tether_team_t> live_, stale_;  // teams split and not destroyed; destroyed
  CallWatchdog* dog_ = nullptr;  // run()'s
  std::string what_;
  int nFail_ = 0, nOk_ = 0, nEither_ = 0, nTyped_ = 0, nTypedBad_ = 0;
};

TEST_F(ApiFuzz, RandomCallsKeepTheContract) {
  // PE 0's seed on every PE: the collective calls are drawn from it alike everywhere.
  words_[1] = tether::testSeed("test_api_fuzz");
  ASSERT_EQ(tether_team_broadcast(tether_team_world(w_), &words_[0], &words_[1], 1, TETHER_UINT64, 0), TETHER_SUCCESS)
      << tether_last_error();
  const uint64_t seed = words_[0];
  if (tether_n_pes(w_) > 1 && tether_my_pe(w_) == 0)
    std::printf("api fuzz: %d PEs, PE 0's seed %llu on all\n", tether_n_pes(w_), static_cast<unsigned long long>(seed));
  const char* calls = std::getenv("API_FUZZ_CALLS");
  Fuzzer f(w_, so_, stream_, seed);
  f.run(calls ? std::atoi(calls) : kCalls);
}

}  // namespace
