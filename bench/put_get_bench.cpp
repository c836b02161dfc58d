// put_get: host-model RMA benchmark over the symmetric heap between PE 0 and PE 1 (osu_oshm_put style).
//
//   tetherrun -n 2 tether_bench_put_get [--max-size 1G] [--json out.jsonl] [--ops put,get] ...
//
// PE 0 issues and times every operation; PE 1 is the target (it only takes part in the ping-pong and the barrier);
// PEs beyond 1, if any, take part in the barriers only. Only PE 0 prints results; any PE prints its own errors.
// Every call's status is checked: on failure the PE prints tether_last_error() and exits non-zero (tetherrun then
// ends the job). Data is validated once per row and size after the timed batches; a mismatch fails the run.
#include <tether/tether.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"

namespace {

using tether_bench::Options;
using tether_bench::Reporter;
using tether_bench::Row;
using tether_bench::TableKind;

const char* const kOps[] = {"put", "get", "put_nbi", "get_nbi", "p", "g", "put_signal", "atomic_fetch_add",
                            "barrier_all"};

struct Bench {
  tether_t w = nullptr;
  int me = 0;
  int npes = 0;
  Options opts;
  Reporter* rep = nullptr;
  uint8_t* src = nullptr;  // symmetric, opts.maxSize bytes: what a PE sends
  uint8_t* dst = nullptr;  // symmetric, opts.maxSize bytes: where a PE receives
  uint64_t* sig = nullptr;      // symmetric: ping-pong signal word
  uint64_t* word = nullptr;     // symmetric: p/g word
  uint64_t* counter = nullptr;  // symmetric: atomic counter
  int64_t* vflags = nullptr;    // symmetric, npes entries: validation votes
  int64_t round = 0;            // validation round (same on every PE)
  uint64_t seq = 0;             // ping-pong sequence number (same on PE 0 and PE 1)
  std::string path;             // path PE 0 -> PE 1 for host segments
};

[[noreturn]] void fail(const Bench& b, const char* call, tether_status_t st) {
  std::fprintf(stderr, "put_get[PE %d]: %s failed: %s: %s\n", b.me, call, tether_status_string(st),
               tether_last_error());
  std::exit(1);
}

#define CHECK(b, call)                                  \
  do {                                                  \
    tether_status_t st_ = (call);                       \
    if (st_ != TETHER_SUCCESS) fail((b), #call, st_);   \
  } while (0)

// ---- data patterns -----------------------------------------------------------------------------------------------

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t seedFor(const char* op, size_t bytes, int sender) {
  uint64_t h = 1469598103934665603ull;
  for (const char* p = op; *p; ++p) h = (h ^ static_cast<uint8_t>(*p)) * 1099511628211ull;
  return mix(h ^ mix(bytes) ^ (static_cast<uint64_t>(sender) << 56));
}

// Word k of the pattern is mix(seed + k); a tail shorter than a word takes the low bytes of the next word.
void fillPattern(uint8_t* p, size_t n, uint64_t seed) {
  size_t words = n / 8;
  for (size_t k = 0; k < words; ++k) {
    uint64_t v = mix(seed + k);
    std::memcpy(p + 8 * k, &v, 8);
  }
  if (n % 8) {
    uint64_t v = mix(seed + words);
    std::memcpy(p + 8 * words, &v, n % 8);
  }
}

// Returns true when p[0..n) holds the pattern; else *bad = first wrong byte offset.
bool checkPattern(const uint8_t* p, size_t n, uint64_t seed, size_t* bad) {
  size_t words = n / 8;
  for (size_t k = 0; k < words; ++k) {
    uint64_t v = mix(seed + k), got;
    std::memcpy(&got, p + 8 * k, 8);
    if (got != v) {
      const uint8_t* vb = reinterpret_cast<const uint8_t*>(&v);
      size_t j = 0;
      while (j < 8 && p[8 * k + j] == vb[j]) ++j;
      *bad = 8 * k + j;
      return false;
    }
  }
  if (n % 8) {
    uint64_t v = mix(seed + words);
    const uint8_t* vb = reinterpret_cast<const uint8_t*>(&v);
    for (size_t j = 0; j < n % 8; ++j) {
      if (p[8 * words + j] != vb[j]) {
        *bad = 8 * words + j;
        return false;
      }
    }
  }
  return true;
}

// ---- collective helpers ------------------------------------------------------------------------------------------

void barrier(Bench& b) { CHECK(b, tether_barrier_all(b.w)); }

// Collective: every PE votes ok/not ok for `what`; returns only when all PEs voted ok, else every PE finalizes and
// exits 1 (PE 0 names the PEs that saw wrong data; the PE itself has printed the details).
void agree(Bench& b, bool localOk, const std::string& what) {
  ++b.round;
  int64_t vote = localOk ? b.round : -b.round;
  for (int pe = 0; pe < b.npes; ++pe) CHECK(b, tether_put(b.w, &b.vflags[b.me], &vote, sizeof(vote), pe));
  barrier(b);
  bool allOk = true;
  for (int pe = 0; pe < b.npes; ++pe) {
    if (b.vflags[pe] != b.round) {
      allOk = false;
      if (b.me == 0)
        std::fprintf(stderr, "put_get: data validation FAILED for %s on PE %d (vote %" PRId64 ", round %" PRId64
                     ")\n", what.c_str(), pe, b.vflags[pe], b.round);
    }
  }
  if (allOk) return;
  (void)tether_finalize(b.w);
  std::exit(1);
}

bool checkBuffer(const Bench& b, const uint8_t* buf, size_t n, uint64_t seed, const std::string& what) {
  size_t bad = 0;
  if (checkPattern(buf, n, seed, &bad)) return true;
  std::fprintf(stderr, "put_get[PE %d]: wrong data after %s: byte %zu of %zu differs\n", b.me, what.c_str(), bad, n);
  return false;
}

std::string sizeLabel(const std::string& op, size_t bytes) { return op + " " + std::to_string(bytes) + " B"; }

void report(Bench& b, const std::string& op, size_t bytes, long iters, const std::vector<double>& samples,
            bool bandwidth, const std::string& kinds) {
  if (b.me != 0) return;
  Row row;
  row.op = op;
  row.path = b.path;
  row.kinds = kinds;
  row.bytes = bytes;
  row.iters = iters;
  row.latUs = tether_bench::computeStats(samples);
  if (bandwidth && row.latUs.median > 0) row.bwGBps = static_cast<double>(bytes) / (row.latUs.median * 1e3);
  b.rep->addRow(row);
}

// ---- rows --------------------------------------------------------------------------------------------------------

// Blocking put or get of S bytes, PE 0 <-> PE 1, ops back to back, one quiet per batch.
void runBlocking(Bench& b, bool isPut) {
  const char* op = isPut ? "put" : "get";
  if (b.me == 0) {
    b.rep->beginTable(isPut ? "put: blocking tether_put of S bytes, PE 0 -> PE 1 (H->H, path " + b.path +
                                  "); ops back to back, tether_quiet once per batch"
                            : "get: blocking tether_get of S bytes from PE 1 into PE 0 (H->H, path " + b.path +
                                  "); ops back to back, tether_quiet once per batch",
                      TableKind::Latency);
  }
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    const int ops = tether_bench::opsPerBatch(b.opts, S);
    const int sender = isPut ? 0 : 1, receiver = isPut ? 1 : 0;
    const uint64_t seed = seedFor(op, S, sender);
    if (b.me == sender) fillPattern(b.src, S, seed);
    if (b.me == receiver) std::memset(b.dst, 0, S);
    barrier(b);
    std::vector<double> samples;
    if (b.me == 0) {
      tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
        for (int i = 0; i < k; ++i) {
          if (isPut)
            CHECK(b, tether_put(b.w, b.dst, b.src, S, 1));
          else
            CHECK(b, tether_get(b.w, b.dst, b.src, S, 1));
        }
        CHECK(b, tether_quiet(b.w));
        return true;
      }, &samples);
    }
    barrier(b);
    bool ok = b.me != receiver || checkBuffer(b, b.dst, S, seed, sizeLabel(op, S));
    agree(b, ok, sizeLabel(op, S));
    report(b, op, S, static_cast<long>(ops) * b.opts.batches, samples, false, "H->H");
  }
}

// Windows of put_nbi / get_nbi then one quiet: bandwidth.
void runNbi(Bench& b, bool isPut) {
  const char* op = isPut ? "put_nbi" : "get_nbi";
  if (b.me == 0) {
    std::string title = std::string(op) + " bandwidth: windows of " + std::to_string(b.opts.window) + " tether_" +
                        op + (isPut ? " PE 0 -> PE 1" : " from PE 1 into PE 0") +
                        " then one tether_quiet (window shrinks where a batch would exceed --batch-bytes), H->H, "
                        "path " + b.path + "; Latency = time per operation";
    b.rep->beginTable(title, TableKind::Bandwidth);
  }
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    const int ops = tether_bench::opsPerBatch(b.opts, S);
    const int window = ops < b.opts.window ? ops : b.opts.window;
    const int windows = ops / window;  // >= 1
    const int sender = isPut ? 0 : 1, receiver = isPut ? 1 : 0;
    const uint64_t seed = seedFor(op, S, sender);
    if (b.me == sender) fillPattern(b.src, S, seed);
    if (b.me == receiver) std::memset(b.dst, 0, S);
    barrier(b);
    std::vector<double> samples;
    if (b.me == 0) {
      tether_bench::measure(b.opts.warmup, b.opts.batches, windows * window, [&](int) {
        for (int wi = 0; wi < windows; ++wi) {
          for (int i = 0; i < window; ++i) {
            if (isPut)
              CHECK(b, tether_put_nbi(b.w, b.dst, b.src, S, 1));
            else
              CHECK(b, tether_get_nbi(b.w, b.dst, b.src, S, 1));
          }
          CHECK(b, tether_quiet(b.w));
        }
        return true;
      }, &samples);
    }
    barrier(b);
    bool ok = b.me != receiver || checkBuffer(b, b.dst, S, seed, sizeLabel(op, S));
    agree(b, ok, sizeLabel(op, S));
    report(b, op, S, static_cast<long>(windows) * window * b.opts.batches, samples, true, "H->H");
  }
}

// p: 8-byte puts of an increasing value, one quiet per batch; PE 1 checks the last value.
void runP(Bench& b) {
  if (b.me == 0)
    b.rep->beginTable("p: tether_uint64_p (8 B) PE 0 -> PE 1, ops back to back, tether_quiet once per batch (H->H, "
                      "path " + b.path + ")", TableKind::Latency);
  const int ops = b.opts.iters;
  if (b.me == 1) *b.word = 0;
  barrier(b);
  std::vector<double> samples;
  uint64_t value = 0;
  if (b.me == 0) {
    tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
      for (int i = 0; i < k; ++i) CHECK(b, tether_uint64_p(b.w, b.word, ++value, 1));
      CHECK(b, tether_quiet(b.w));
      return true;
    }, &samples);
  }
  barrier(b);
  const uint64_t expected = static_cast<uint64_t>(ops) * static_cast<uint64_t>(b.opts.warmup + b.opts.batches);
  bool ok = true;
  if (b.me == 1 && *b.word != expected) {
    std::fprintf(stderr, "put_get[PE 1]: after p: word is %" PRIu64 ", expected %" PRIu64 "\n", *b.word, expected);
    ok = false;
  }
  agree(b, ok, "p 8 B");
  report(b, "p", 8, static_cast<long>(ops) * b.opts.batches, samples, false, "H->H");
}

// g: 8-byte gets of a known value; every fetched value is checked.
void runG(Bench& b) {
  if (b.me == 0)
    b.rep->beginTable("g: tether_uint64_g (8 B) from PE 1 into a private variable on PE 0, ops back to back (H->H, "
                      "path " + b.path + ")", TableKind::Latency);
  const int ops = b.opts.iters;
  const uint64_t known = 0x5eed0123456789abull;
  if (b.me == 1) *b.word = known;
  barrier(b);
  std::vector<double> samples;
  long wrong = 0;
  if (b.me == 0) {
    tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
      for (int i = 0; i < k; ++i) {
        uint64_t v = 0;
        CHECK(b, tether_uint64_g(b.w, &v, b.word, 1));
        wrong += v != known;
      }
      return true;
    }, &samples);
    if (wrong != 0) std::fprintf(stderr, "put_get[PE 0]: g returned a wrong value %ld times\n", wrong);
  }
  barrier(b);
  agree(b, wrong == 0, "g 8 B");
  report(b, "g", 8, static_cast<long>(ops) * b.opts.batches, samples, false, "H->H");
}

// put_signal ping-pong: PE 0 put_signal(S, SET seq) to PE 1, PE 1 waits for seq and answers the same way.
void runPingPong(Bench& b) {
  const char* op = "put_signal";
  if (b.me == 0)
    b.rep->beginTable("put_signal ping-pong: PE 0 tether_put_signal(S bytes, SIGNAL_SET seq) -> PE 1 "
                      "tether_signal_wait_until(GE seq), PE 1 answers in kind; latency = round trip / 2 (H->H, "
                      "path " + b.path + ")", TableKind::Latency);
  if (b.me <= 1) *b.sig = b.seq;  // both start from the same seq: no stale signal can satisfy the first wait
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    const int ops = tether_bench::opsPerBatch(b.opts, S);
    const uint64_t seed = seedFor(op, S, b.me);
    const uint64_t peerSeed = seedFor(op, S, 1 - b.me);
    if (b.me <= 1) {
      fillPattern(b.src, S, seed);
      std::memset(b.dst, 0, S);
    }
    barrier(b);
    std::vector<double> samples;
    if (b.me <= 1) {
      const int peer = 1 - b.me;
      tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
        for (int i = 0; i < k; ++i) {
          ++b.seq;
          uint64_t seen = 0;
          if (b.me == 0) {
            CHECK(b, tether_put_signal(b.w, b.dst, b.src, S, b.sig, b.seq, TETHER_SIGNAL_SET, peer));
            CHECK(b, tether_signal_wait_until(b.w, b.sig, TETHER_CMP_GE, b.seq, &seen));
          } else {
            CHECK(b, tether_signal_wait_until(b.w, b.sig, TETHER_CMP_GE, b.seq, &seen));
            CHECK(b, tether_put_signal(b.w, b.dst, b.src, S, b.sig, b.seq, TETHER_SIGNAL_SET, peer));
          }
          if (seen != b.seq) {
            std::fprintf(stderr, "put_get[PE %d]: signal_wait_until saw %" PRIu64 ", expected %" PRIu64 "\n", b.me,
                         seen, b.seq);
            std::exit(1);
          }
        }
        return true;
      }, &samples);
      for (double& s : samples) s /= 2;  // round trip -> one way
    }
    barrier(b);
    bool ok = b.me > 1 || checkBuffer(b, b.dst, S, peerSeed, sizeLabel(op, S));
    agree(b, ok, sizeLabel(op, S));
    report(b, op, S, static_cast<long>(ops) * b.opts.batches, samples, false, "H->H");
  }
}

// atomic_fetch_add on PE 1's counter; every fetched value is checked, PE 1 checks the final count.
void runAtomic(Bench& b) {
  if (b.me == 0)
    b.rep->beginTable("atomic_fetch_add: tether_uint64_atomic_fetch_add(+1) on PE 1's counter, blocking, ops back "
                      "to back (H->H, path " + b.path + ")", TableKind::Latency);
  const int ops = b.opts.iters;
  if (b.me == 1) *b.counter = 0;
  barrier(b);
  std::vector<double> samples;
  uint64_t expected = 0;
  long wrong = 0;
  if (b.me == 0) {
    tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
      for (int i = 0; i < k; ++i) {
        uint64_t old = 0;
        CHECK(b, tether_uint64_atomic_fetch_add(b.w, b.counter, 1, 1, &old));
        wrong += old != expected++;
      }
      return true;
    }, &samples);
    if (wrong != 0) std::fprintf(stderr, "put_get[PE 0]: fetch_add fetched an unexpected value %ld times\n", wrong);
  }
  barrier(b);
  bool ok = wrong == 0;
  const uint64_t total = static_cast<uint64_t>(ops) * static_cast<uint64_t>(b.opts.warmup + b.opts.batches);
  if (b.me == 1 && *b.counter != total) {
    std::fprintf(stderr, "put_get[PE 1]: counter is %" PRIu64 " after %" PRIu64 " fetch_add(+1)\n", *b.counter,
                 total);
    ok = false;
  }
  agree(b, ok, "atomic_fetch_add 8 B");
  report(b, "atomic_fetch_add", 8, static_cast<long>(ops) * b.opts.batches, samples, false, "H->H");
}

void runBarrier(Bench& b) {
  if (b.me == 0)
    b.rep->beginTable("barrier_all: tether_barrier_all over all " + std::to_string(b.npes) +
                      " PEs, back to back, timed on PE 0", TableKind::Latency);
  const int ops = b.opts.iters;
  std::vector<double> samples;
  tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
    for (int i = 0; i < k; ++i) barrier(b);
    return true;
  }, &samples);
  if (b.me == 0) {
    Row row;
    row.op = "barrier_all";
    row.path = b.path;
    row.bytes = 0;
    row.iters = static_cast<long>(ops) * b.opts.batches;
    row.latUs = tether_bench::computeStats(samples);
    b.rep->addRow(row);
  }
}

void allocOrDie(Bench& b, size_t bytes, size_t align, void** out, const char* what) {
  tether_status_t st = tether_malloc_kind(b.w, TETHER_SEG_HOST, align, bytes, out);
  if (st == TETHER_SUCCESS) return;
  std::fprintf(stderr,
               "put_get[PE %d]: allocating %s (%zu bytes of HOST symmetric heap) failed: %s: %s\n"
               "  the buffers need 2 x --max-size per PE: raise TETHER_HEAP_SIZE (initial heap, default 64M) and\n"
               "  TETHER_HEAP_MAX (growth limit, default 8G), e.g. TETHER_HEAP_SIZE=4G TETHER_HEAP_MAX=8G tetherrun -n 2 ...,\n"
               "  or lower --max-size\n",
               b.me, what, bytes, tether_status_string(st), tether_last_error());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  std::string error;
  if (!tether_bench::parseOptions(argc, argv, &opts, &error)) {
    std::fprintf(stderr, "put_get: %s\n", error.c_str());
    return 2;
  }
  if (opts.help) {
    std::printf("%s", tether_bench::usage("tether_bench_put_get",
                                          "rows (--ops): put get put_nbi get_nbi p g put_signal atomic_fetch_add "
                                          "barrier_all\nheap: two HOST symmetric buffers of --max-size per PE; if allocation "
                                          "fails, raise TETHER_HEAP_SIZE / TETHER_HEAP_MAX\n")
                          .c_str());
    return 0;
  }
  for (const std::string& op : opts.ops) {
    bool known = false;
    for (const char* k : kOps) known = known || op == k;
    if (!known) {
      std::fprintf(stderr, "put_get: unknown row '%s' in --ops (see --help)\n", op.c_str());
      return 2;
    }
  }

  Bench b;
  b.opts = opts;
  {
    tether_status_t st = tether_init(&b.w);
    if (st != TETHER_SUCCESS) {
      std::fprintf(stderr, "put_get: tether_init failed: %s: %s\n", tether_status_string(st), tether_last_error());
      return 1;
    }
  }
  b.me = tether_my_pe(b.w);
  b.npes = tether_n_pes(b.w);
  if (b.npes < 2) {
    if (b.me == 0)
      std::fprintf(stderr, "put_get: needs at least 2 PEs (PE 0 -> PE 1); run it as: tetherrun -n 2 %s\n", argv[0]);
    (void)tether_finalize(b.w);
    return 2;
  }

  void* p = nullptr;
  allocOrDie(b, opts.maxSize, 4096, &p, "the source buffer");
  b.src = static_cast<uint8_t*>(p);
  allocOrDie(b, opts.maxSize, 4096, &p, "the destination buffer");
  b.dst = static_cast<uint8_t*>(p);
  const size_t syncBytes = 256 + sizeof(int64_t) * static_cast<size_t>(b.npes);
  allocOrDie(b, syncBytes, 64, &p, "the synchronisation words");
  std::memset(p, 0, syncBytes);
  uint8_t* sync = static_cast<uint8_t*>(p);
  b.sig = reinterpret_cast<uint64_t*>(sync + 0);
  b.word = reinterpret_cast<uint64_t*>(sync + 64);
  b.counter = reinterpret_cast<uint64_t*>(sync + 128);
  b.vflags = reinterpret_cast<int64_t*>(sync + 256);
  b.path = tether_ptr(b.w, b.dst, 1) != nullptr ? "shm" : "proxy";
  barrier(b);  // the zeroed sync words are in place everywhere before anyone writes to them

  Reporter rep(tether_bench::collectRunInfo("put_get", opts, b.npes), opts, b.me == 0);
  b.rep = &rep;
  if (!rep.open(&error)) {
    std::fprintf(stderr, "put_get: %s\n", error.c_str());
    std::exit(1);
  }
  rep.printHeader("model host: CPU-issued tether calls on HOST symmetric segments (H->H); PE 0 issues and times, "
                  "PE 1 is the target\npath " + b.path + " (PE 1's segment is " +
                  (b.path == "shm" ? "directly mapped: tether_ptr != NULL" : "not directly addressable") +
                  "); data validated once per row and size after the timed batches");

  if (tether_bench::wantsOp(opts, "put")) runBlocking(b, true);
  if (tether_bench::wantsOp(opts, "get")) runBlocking(b, false);
  if (tether_bench::wantsOp(opts, "put_nbi")) runNbi(b, true);
  if (tether_bench::wantsOp(opts, "get_nbi")) runNbi(b, false);
  if (tether_bench::wantsOp(opts, "p")) runP(b);
  if (tether_bench::wantsOp(opts, "g")) runG(b);
  if (tether_bench::wantsOp(opts, "put_signal")) runPingPong(b);
  if (tether_bench::wantsOp(opts, "atomic_fetch_add")) runAtomic(b);
  if (tether_bench::wantsOp(opts, "barrier_all")) runBarrier(b);
  rep.flush();

  CHECK(b, tether_free(b.w, sync));
  CHECK(b, tether_free(b.w, b.dst));
  CHECK(b, tether_free(b.w, b.src));
  CHECK(b, tether_finalize(b.w));
  return 0;
}
