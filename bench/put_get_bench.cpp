// put_get: host-model RMA benchmark between PE 0 and PE 1 (osu_oshm_put style), for every pair of memory kinds.
//
//   tetherrun -n 2 tether_bench_put_get [--kinds all] [--max-size 1G] [--json out.jsonl] [--ops put,get] ...
//
// A pair `L->T` names the memory of the local buffer L (source of a put, destination of a get: H = host memory,
// D = GPU memory) and the segment of the symmetric target T (H = TETHER_SEG_HOST, D = TETHER_SEG_DEVICE).
// PE 0 issues and times every operation; PE 1 is the target (it also takes part in the ping-pong, put_bidir and the
// barriers); PEs beyond 1, if any, take part in the barriers only. Only PE 0 prints results; any PE prints its own
// errors. Every call's status is checked: on failure the PE prints tether_last_error() and exits non-zero (tetherrun
// then ends the job). Data is validated once per row and size after the timed batches; a mismatch fails the run.
// --pattern ring | all-pairs (default pair, the above): every PE issues at once, to next = (me + 1) % n or to all
// n - 1 others, into per-source slots that each PE checks; rows put, put_nbi, put_signal (ring pass / exchange) and
// barrier_all only (bench/README.md "Patterns").
// CUDA calls (local buffers, the copies that fill and check GPU memory) live behind bench/local_mem.h.
#include <tether/tether.h>

#include <cinttypes>
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"
#include "local_mem.h"

namespace {

using tether_bench::Options;
using tether_bench::Reporter;
using tether_bench::Row;
using tether_bench::TableKind;

const char* const kOps[] = {"put", "get", "put_nbi", "get_nbi", "put_bidir", "p", "g", "put_signal",
                            "atomic_fetch_add", "barrier_all", "put_local"};

// ---- memory kinds ------------------------------------------------------------------------------------------------

enum class Mem { H, D };

struct Pair {
  Mem local = Mem::H;   // PE's local buffer: source of a put, destination of a get
  Mem target = Mem::H;  // segment of the symmetric object the operation targets
  bool explicitly = true;  // named on the command line (false: only through "all")
  std::string name() const {
    return std::string(local == Mem::H ? "H" : "D") + "->" + (target == Mem::H ? "H" : "D");
  }
  bool usesGpu() const { return local == Mem::D || target == Mem::D; }
  bool operator==(const Pair& o) const { return local == o.local && target == o.target; }
};

// "H->D", "HD" (any case) -> pair.
bool parsePair(std::string t, Pair* out) {
  for (char& c : t) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  if (t.size() == 4 && t.compare(1, 2, "->") == 0) t = t.substr(0, 1) + t.substr(3);
  if (t.size() != 2) return false;
  for (char c : t)
    if (c != 'H' && c != 'D') return false;
  out->local = t[0] == 'H' ? Mem::H : Mem::D;
  out->target = t[1] == 'H' ? Mem::H : Mem::D;
  return true;
}

// --kinds LIST: comma list of pairs and/or "all" (= H->H,H->D,D->H,D->D), in order, duplicates dropped (a pair
// named explicitly as well as through "all" counts as explicit).
bool parseKinds(const std::string& text, std::vector<Pair>* out, std::string* error) {
  std::vector<Pair> pairs;
  auto add = [&](Pair p) {
    for (Pair& q : pairs)
      if (q == p) {
        q.explicitly = q.explicitly || p.explicitly;
        return;
      }
    pairs.push_back(p);
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string t = text.substr(start, comma - start);
    start = comma + 1;
    if (t.empty()) continue;
    if (t == "all") {
      for (const char* n : {"HH", "HD", "DH", "DD"}) {
        Pair p;
        parsePair(n, &p);
        p.explicitly = false;
        add(p);
      }
      continue;
    }
    Pair p;
    if (!parsePair(t, &p)) {
      *error = "--kinds: '" + t + "' is not a pair <local>-><target> of H (host memory) and D (GPU memory), e.g. "
               "'H->D' (quote it in the shell) or HD, or all";
      return false;
    }
    add(p);
  }
  if (pairs.empty()) {
    *error = "--kinds needs at least one pair (e.g. 'H->H', 'D->D', all)";
    return false;
  }
  *out = pairs;
  return true;
}

std::string joinPairs(const std::vector<Pair>& pairs) {
  std::string s;
  for (const Pair& p : pairs) s += (s.empty() ? "" : ",") + p.name();
  return s;
}

// Memory one row touches on this PE. `addr` is what tether calls are given (a symmetric address or the local
// buffer); `view` is how this PE reaches its own copy for filling and checking: the same host pointer for H, the
// GPU address for D (tether_ptr(addr, me) of a DEVICE object; CUDA copies only, no CPU loads and stores).
struct Region {
  uint8_t* addr = nullptr;
  uint8_t* view = nullptr;
  bool device = false;
};

struct Bench {
  tether_t w = nullptr;
  int me = 0;
  int npes = 0;
  Options opts;
  Reporter* rep = nullptr;
  // symmetric, opts.maxSize bytes each, allocated when a listed pair targets that kind
  Region tgtH, tgtD;
  // local buffers of opts.maxSize on PEs 0 and 1, allocated when a listed pair uses that kind locally
  Region locH, locD;
  bool locHPinned = false;
  uint8_t* staging = nullptr;  // host, opts.maxSize: fills and checks of GPU memory go through it (PEs 0 and 1)
  bool stagingPinned = false;
  uint64_t* sig = nullptr;      // symmetric HOST: ping-pong signal word
  uint64_t* word = nullptr;     // symmetric HOST: p/g word
  uint64_t* counter = nullptr;  // symmetric HOST: atomic counter
  int64_t* vflags = nullptr;    // symmetric HOST, npes entries: validation votes
  uint64_t* sigs = nullptr;     // symmetric HOST, npes entries: all-pairs signal words, one per source PE
  double* gather = nullptr;     // symmetric HOST, npes entries: per-PE values gathered on PE 0 (sumOnPe0)
  Region syncD;                 // symmetric DEVICE, 256 + 8 npes B: signal word at 0, atomic counter at 64 (D targets);
                                // all-pairs signal words from 256, one per source PE
  tether_bench::Traffic pattern = tether_bench::Traffic::Pair;
  size_t slotBytes = 0;         // all-pairs: a target buffer holds one slot of --max-size per source PE (else 0)
  int64_t round = 0;            // validation round (same on every PE)
  uint64_t seq = 0;             // ping-pong sequence number (same on PE 0 and PE 1)
  std::string path;             // path PE 0 -> PE 1 for HOST targets: shm (mapped) or unmapped (staged, or the network)
  std::string pathD = "p2p";    // ... for DEVICE targets: p2p (mapped) or unmapped
  int gpu = -1;                 // this PE's GPU (local_mem's current device), -1 when none
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

[[noreturn]] void failLocal(const Bench& b, const std::string& what, const std::string& error) {
  std::fprintf(stderr, "put_get[PE %d]: %s: %s\n", b.me, what.c_str(), error.c_str());
  std::exit(1);
}

std::string pathFor(const Bench& b, Mem target) { return target == Mem::D ? b.pathD : b.path; }

Region localRegion(const Bench& b, Mem m) { return m == Mem::H ? b.locH : b.locD; }
Region targetRegion(const Bench& b, Mem m) { return m == Mem::H ? b.tgtH : b.tgtD; }

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

// ---- filling and checking memory of either kind (outside timed regions) ------------------------------------------

void fillRegion(Bench& b, const Region& r, size_t n, uint64_t seed) {
  if (!r.device) {
    fillPattern(r.view, n, seed);
    return;
  }
  fillPattern(b.staging, n, seed);
  std::string error;
  if (!tether_bench::localCopy(r.view, b.staging, n, &error)) failLocal(b, "filling GPU memory", error);
}

void clearRegion(Bench& b, const Region& r, size_t n) {
  std::string error;
  if (!r.device)
    std::memset(r.view, 0, n);
  else if (!tether_bench::localZeroDevice(r.view, n, &error))
    failLocal(b, "clearing GPU memory", error);
}

bool checkRegion(Bench& b, const Region& r, size_t n, uint64_t seed, const std::string& what) {
  const uint8_t* p = r.view;
  if (r.device) {
    std::string error;
    if (!tether_bench::localCopy(b.staging, r.view, n, &error)) failLocal(b, "reading GPU memory back", error);
    p = b.staging;
  }
  size_t bad = 0;
  if (checkPattern(p, n, seed, &bad)) return true;
  std::fprintf(stderr, "put_get[PE %d]: wrong data after %s: byte %zu of %zu differs%s\n", b.me, what.c_str(), bad,
               n, r.device ? " (GPU memory, read back with cudaMemcpy)" : "");
  return false;
}

// One 64-bit word of this PE's own symmetric memory: `view` is a host pointer, or a GPU address when device.
uint64_t readWord(Bench& b, const uint64_t* view, bool device) {
  if (!device) return __atomic_load_n(view, __ATOMIC_ACQUIRE);
  uint64_t v = 0;
  std::string error;
  if (!tether_bench::localCopy(&v, view, sizeof v, &error)) failLocal(b, "reading a GPU word", error);
  return v;
}

void writeWord(Bench& b, uint64_t* view, bool device, uint64_t v) {
  if (!device) {
    __atomic_store_n(view, v, __ATOMIC_RELEASE);
    return;
  }
  std::string error;
  if (!tether_bench::localCopy(view, &v, sizeof v, &error)) failLocal(b, "writing a GPU word", error);
}

// ---- collective helpers ------------------------------------------------------------------------------------------

void barrier(Bench& b) { CHECK(b, tether_barrier_all(b.w)); }

// Collective: every PE votes; returns whether all voted true. *which (PE 0's view, may be null) lists the PEs that
// voted false.
bool voteAll(Bench& b, bool localOk, std::vector<int>* which) {
  ++b.round;
  int64_t vote = localOk ? b.round : -b.round;
  for (int pe = 0; pe < b.npes; ++pe) CHECK(b, tether_put(b.w, &b.vflags[b.me], &vote, sizeof(vote), pe));
  barrier(b);
  bool allOk = true;
  for (int pe = 0; pe < b.npes; ++pe) {
    if (b.vflags[pe] != b.round) {
      allOk = false;
      if (which) which->push_back(pe);
    }
  }
  barrier(b);  // nobody starts the next vote (overwriting vflags) before everyone has read this one
  return allOk;
}

// Collective: every PE votes ok/not ok for `what`; returns only when all PEs voted ok, else every PE finalizes and
// exits 1 (PE 0 names the PEs that saw wrong data; the PE itself has printed the details).
void agree(Bench& b, bool localOk, const std::string& what) {
  std::vector<int> bad;
  if (voteAll(b, localOk, &bad)) return;
  if (b.me == 0)
    for (int pe : bad)
      std::fprintf(stderr, "put_get: data validation FAILED for %s on PE %d (round %" PRId64 ")\n", what.c_str(), pe,
                   b.round);
  (void)tether_finalize(b.w);
  std::exit(1);
}

std::string sizeLabel(const std::string& op, const Pair& pair, size_t bytes) {
  return op + " " + pair.name() + " " + std::to_string(bytes) + " B";
}

void report(Bench& b, const std::string& op, size_t bytes, long iters, const std::vector<double>& samples,
            bool bandwidth, const std::string& kinds, const std::string& path) {
  if (b.me == 0) b.rep->addRow(tether_bench::makeRow(op, path, kinds, bytes, iters, samples, bandwidth));
}

std::string tag(const Bench& b, const Pair& pair) { return pair.name() + ", path " + pathFor(b, pair.target); }

// ---- rows --------------------------------------------------------------------------------------------------------

// Blocking put or get of S bytes, PE 0 <-> PE 1, ops back to back, one quiet per batch.
// put: PE 0's local buffer -> PE 1's target; get: PE 1's target -> PE 0's local buffer; local: tether_put_local.
void runBlocking(Bench& b, const Pair& pair, bool isPut, bool local = false) {
  const char* op = local ? "put_local" : isPut ? "put" : "get";
  if (b.me == 0) {
    b.rep->beginTable(local ? "put_local: tether_put_local of S bytes (local completion, OpenSHMEM's put), PE 0 -> "
                              "PE 1 (" + tag(b, pair) + "); ops back to back, tether_quiet once per batch"
                      : isPut ? "put: blocking tether_put of S bytes, PE 0 -> PE 1 (" + tag(b, pair) +
                                  "); ops back to back, tether_quiet once per batch"
                            : "get: blocking tether_get of S bytes from PE 1 into PE 0 (" + tag(b, pair) +
                                  "); ops back to back, tether_quiet once per batch",
                      TableKind::Latency);
  }
  const Region loc = localRegion(b, pair.local), tgt = targetRegion(b, pair.target);
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    const int ops = tether_bench::opsPerBatch(b.opts, S);
    const int sender = isPut ? 0 : 1, receiver = isPut ? 1 : 0;
    const Region& from = isPut ? loc : tgt;  // on the sender
    const Region& into = isPut ? tgt : loc;  // on the receiver
    const uint64_t seed = seedFor(op, S, sender);
    if (b.me == sender) fillRegion(b, from, S, seed);
    if (b.me == receiver) clearRegion(b, into, S);
    barrier(b);
    std::vector<double> samples;
    if (b.me == 0) {
      tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
        for (int i = 0; i < k; ++i) {
          if (local)
            CHECK(b, tether_put_local(b.w, tgt.addr, loc.addr, S, 1));
          else if (isPut)
            CHECK(b, tether_put(b.w, tgt.addr, loc.addr, S, 1));
          else
            CHECK(b, tether_get(b.w, loc.addr, tgt.addr, S, 1));
        }
        CHECK(b, tether_quiet(b.w));
        return true;
      }, &samples);
    }
    barrier(b);
    const std::string what = sizeLabel(op, pair, S);
    bool ok = b.me != receiver || checkRegion(b, into, S, seed, what);
    agree(b, ok, what);
    report(b, op, S, static_cast<long>(ops) * b.opts.batches, samples, false, pair.name(), pathFor(b, pair.target));
  }
}

// Windows of put_nbi / get_nbi then one quiet: bandwidth.
void runNbi(Bench& b, const Pair& pair, bool isPut) {
  const char* op = isPut ? "put_nbi" : "get_nbi";
  if (b.me == 0) {
    std::string title = std::string(op) + " bandwidth: windows of " + std::to_string(b.opts.window) + " tether_" +
                        op + (isPut ? " PE 0 -> PE 1" : " from PE 1 into PE 0") +
                        " then one tether_quiet (window shrinks where a batch would exceed --batch-bytes), " +
                        tag(b, pair) + "; Latency = time per operation";
    b.rep->beginTable(title, TableKind::Bandwidth);
  }
  const Region loc = localRegion(b, pair.local), tgt = targetRegion(b, pair.target);
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    const int ops = tether_bench::opsPerBatch(b.opts, S);
    const int window = ops < b.opts.window ? ops : b.opts.window;
    const int windows = ops / window;  // >= 1
    const int sender = isPut ? 0 : 1, receiver = isPut ? 1 : 0;
    const Region& from = isPut ? loc : tgt;
    const Region& into = isPut ? tgt : loc;
    const uint64_t seed = seedFor(op, S, sender);
    if (b.me == sender) fillRegion(b, from, S, seed);
    if (b.me == receiver) clearRegion(b, into, S);
    barrier(b);
    std::vector<double> samples;
    if (b.me == 0) {
      tether_bench::measure(b.opts.warmup, b.opts.batches, windows * window, [&](int) {
        for (int wi = 0; wi < windows; ++wi) {
          for (int i = 0; i < window; ++i) {
            if (isPut)
              CHECK(b, tether_put_nbi(b.w, tgt.addr, loc.addr, S, 1));
            else
              CHECK(b, tether_get_nbi(b.w, loc.addr, tgt.addr, S, 1));
          }
          CHECK(b, tether_quiet(b.w));
        }
        return true;
      }, &samples);
    }
    barrier(b);
    const std::string what = sizeLabel(op, pair, S);
    bool ok = b.me != receiver || checkRegion(b, into, S, seed, what);
    agree(b, ok, what);
    report(b, op, S, static_cast<long>(windows) * window * b.opts.batches, samples, true, pair.name(),
           pathFor(b, pair.target));
  }
}

// put_bidir: PE 0 and PE 1 both put S bytes to each other at the same time (windows of put_nbi + quiet, from the
// local buffer into the peer's target). A batch starts and ends with tether_barrier_all on every PE; PE 0 times from
// after the first barrier to after the second (the second is where PE 0 learns that PE 1's puts are complete too).
// Reported per direction pair: Size = 2 S (both directions), GB/s = 2 S / time per operation pair.
void runBidir(Bench& b, const Pair& pair) {
  const char* op = "put_bidir";
  if (b.me == 0) {
    b.rep->beginTable("put_bidir bandwidth: PE 0 -> PE 1 and PE 1 -> PE 0 at once, each windows of " +
                          std::to_string(b.opts.window) + " tether_put_nbi of S bytes then one tether_quiet; batch "
                          "between two tether_barrier_all, timed on PE 0 (" + tag(b, pair) +
                          "); Size and GB/s are TOTALS of both directions (2 S); Latency = time per pair of puts",
                      TableKind::Bandwidth);
  }
  const Region loc = localRegion(b, pair.local), tgt = targetRegion(b, pair.target);
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    const int ops = tether_bench::opsPerBatch(b.opts, S);
    const int window = ops < b.opts.window ? ops : b.opts.window;
    const int windows = ops / window;  // >= 1
    const int k = windows * window;
    const int peer = 1 - b.me;
    if (b.me <= 1) {
      fillRegion(b, loc, S, seedFor(op, S, b.me));
      clearRegion(b, tgt, S);
    }
    barrier(b);
    std::vector<double> samples;
    for (int bi = 0; bi < b.opts.warmup + b.opts.batches; ++bi) {
      barrier(b);
      const double t0 = tether_bench::nowSeconds();
      if (b.me <= 1) {
        for (int wi = 0; wi < windows; ++wi) {
          for (int i = 0; i < window; ++i) CHECK(b, tether_put_nbi(b.w, tgt.addr, loc.addr, S, peer));
          CHECK(b, tether_quiet(b.w));
        }
      }
      barrier(b);
      const double t1 = tether_bench::nowSeconds();
      if (bi >= b.opts.warmup) samples.push_back((t1 - t0) * 1e6 / k);
    }
    const std::string what = sizeLabel(op, pair, S);
    bool ok = b.me > 1 || checkRegion(b, tgt, S, seedFor(op, S, peer), what);
    agree(b, ok, what);
    report(b, op, 2 * S, static_cast<long>(k) * b.opts.batches, samples, true, pair.name(), pathFor(b, pair.target));
  }
}

// p: 8-byte puts of an increasing value, one quiet per batch; PE 1 checks the last value. (H->H only.)
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
  report(b, "p", 8, static_cast<long>(ops) * b.opts.batches, samples, false, "H->H", b.path);
}

// g: 8-byte gets of a known value; every fetched value is checked. (H->H only.)
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
  report(b, "g", 8, static_cast<long>(ops) * b.opts.batches, samples, false, "H->H", b.path);
}

// put_signal ping-pong: PE 0 put_signal(S, SET seq) to PE 1, PE 1 waits for seq and answers the same way. Data goes
// from each PE's local buffer into the peer's target; the signal word lives in the target's segment kind.
void runPingPong(Bench& b, const Pair& pair) {
  const char* op = "put_signal";
  if (b.me == 0)
    b.rep->beginTable("put_signal ping-pong: PE 0 tether_put_signal(S bytes, SIGNAL_SET seq) -> PE 1 "
                      "tether_signal_wait_until(GE seq), PE 1 answers in kind; latency = round trip / 2 (" +
                          tag(b, pair) + (pair.target == Mem::D ? ", signal word in GPU memory" : "") + ")",
                      TableKind::Latency);
  const bool devSig = pair.target == Mem::D;
  uint64_t* sig = devSig ? reinterpret_cast<uint64_t*>(b.syncD.addr) : b.sig;
  uint64_t* sigView = devSig ? reinterpret_cast<uint64_t*>(b.syncD.view) : b.sig;
  const Region loc = localRegion(b, pair.local), tgt = targetRegion(b, pair.target);
  // Both start from the same seq: no stale signal can satisfy the first wait (the first barrier below orders this
  // store before the peer's first put_signal).
  if (b.me <= 1) writeWord(b, sigView, devSig, b.seq);
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    const int ops = tether_bench::opsPerBatch(b.opts, S);
    const uint64_t seed = seedFor(op, S, b.me);
    const uint64_t peerSeed = seedFor(op, S, 1 - b.me);
    if (b.me <= 1) {
      fillRegion(b, loc, S, seed);
      clearRegion(b, tgt, S);
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
            CHECK(b, tether_put_signal(b.w, tgt.addr, loc.addr, S, sig, b.seq, TETHER_SIGNAL_SET, peer));
            CHECK(b, tether_signal_wait_until(b.w, sig, TETHER_CMP_GE, b.seq, &seen));
          } else {
            CHECK(b, tether_signal_wait_until(b.w, sig, TETHER_CMP_GE, b.seq, &seen));
            CHECK(b, tether_put_signal(b.w, tgt.addr, loc.addr, S, sig, b.seq, TETHER_SIGNAL_SET, peer));
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
    const std::string what = sizeLabel(op, pair, S);
    bool ok = b.me > 1 || checkRegion(b, tgt, S, peerSeed, what);
    agree(b, ok, what);
    report(b, op, S, static_cast<long>(ops) * b.opts.batches, samples, false, pair.name(), pathFor(b, pair.target));
  }
}

// atomic_fetch_add on PE 1's counter (in a HOST or DEVICE segment); every fetched value (a private host variable on
// PE 0) is checked, PE 1 checks the final count.
void runAtomic(Bench& b, Mem target) {
  const Pair pair{Mem::H, target, true};
  const bool dev = target == Mem::D;
  uint64_t* counter = dev ? reinterpret_cast<uint64_t*>(b.syncD.addr + 64) : b.counter;
  uint64_t* counterView = dev ? reinterpret_cast<uint64_t*>(b.syncD.view + 64) : b.counter;
  if (b.me == 0)
    b.rep->beginTable("atomic_fetch_add: tether_uint64_atomic_fetch_add(+1) on PE 1's counter" +
                          std::string(dev ? " in GPU memory" : "") + ", blocking, ops back to back (" +
                          tag(b, pair) + ")",
                      TableKind::Latency);
  const int ops = b.opts.iters;
  if (b.me == 1) writeWord(b, counterView, dev, 0);
  barrier(b);
  std::vector<double> samples;
  uint64_t expected = 0;
  long wrong = 0;
  if (b.me == 0) {
    tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
      for (int i = 0; i < k; ++i) {
        uint64_t old = 0;
        CHECK(b, tether_uint64_atomic_fetch_add(b.w, counter, 1, 1, &old));
        wrong += old != expected++;
      }
      return true;
    }, &samples);
    if (wrong != 0) std::fprintf(stderr, "put_get[PE 0]: fetch_add fetched an unexpected value %ld times\n", wrong);
  }
  barrier(b);
  bool ok = wrong == 0;
  const uint64_t total = static_cast<uint64_t>(ops) * static_cast<uint64_t>(b.opts.warmup + b.opts.batches);
  if (b.me == 1) {
    const uint64_t got = readWord(b, counterView, dev);
    if (got != total) {
      std::fprintf(stderr, "put_get[PE 1]: counter (%s) is %" PRIu64 " after %" PRIu64 " fetch_add(+1)\n",
                   pair.name().c_str(), got, total);
      ok = false;
    }
  }
  agree(b, ok, "atomic_fetch_add " + pair.name() + " 8 B");
  report(b, "atomic_fetch_add", 8, static_cast<long>(ops) * b.opts.batches, samples, false, pair.name(),
         pathFor(b, target));
}

// ---- ring and all-pairs rows (--pattern; bench/README.md "Patterns") ---------------------------------------------
// Every PE runs the row at once: ring to next = (me + 1) % n, all-pairs to all n - 1 others in each operation (one
// message to each, in the order (me + 1 + j) % n). A sender writes into its own slot of the target buffer (all-pairs:
// offset sender x --max-size; ring: offset 0, one source), so every PE checks what each of its sources sent it.
// Latency columns are PE 0's batches; bandwidth rows add the aggregate (sum over PEs of each PE's median bandwidth).

bool patterned(const Bench& b) { return b.pattern != tether_bench::Traffic::Pair; }
int fanout(const Bench& b) { return tether_bench::patternFanout(b.pattern, b.npes); }
int targetOf(const Bench& b, int j) { return tether_bench::patternTarget(b.pattern, b.me, j, b.npes); }

// The PEs whose data this PE receives in a pattern row (ring: prev; all-pairs: every other PE).
std::vector<int> sourcesOf(const Bench& b) {
  std::vector<int> src;
  for (int pe = 0; pe < b.npes; ++pe) {
    if (pe == b.me) continue;
    for (int j = 0; j < fanout(b); ++j)
      if (tether_bench::patternTarget(b.pattern, pe, j, b.npes) == b.me) src.push_back(pe);
  }
  return src;
}

Region offsetRegion(Region r, size_t off) {
  r.addr += off;
  r.view += off;
  return r;
}
// Where PE `src`'s messages land in a target buffer.
size_t slotOf(const Bench& b, int src) { return static_cast<size_t>(src) * b.slotBytes; }

std::string patternWho(const Bench& b) {
  return b.pattern == tether_bench::Traffic::Ring
             ? "every PE at once to next = (me + 1) % n"
             : "every PE at once to all n - 1 others, one message to each per operation (order (me + 1 + j) % n)";
}

// Collective: PE 0 gets the sum of every PE's `mine` (the others get 0).
double sumOnPe0(Bench& b, double mine) {
  CHECK(b, tether_put(b.w, &b.gather[b.me], &mine, sizeof mine, 0));
  barrier(b);
  double sum = 0;
  if (b.me == 0)
    for (int pe = 0; pe < b.npes; ++pe) sum += b.gather[pe];
  barrier(b);  // PE 0 has read the sums before anyone writes the next ones
  return sum;
}

// Collective for bandwidth rows (bytesPerOp > 0: every PE's median bandwidth summed on PE 0); PE 0 prints the row.
void reportPattern(Bench& b, const char* op, size_t S, long iters, const std::vector<double>& samples,
                   double bytesPerOp, const Pair& pair) {
  const tether_bench::Stats st = tether_bench::computeStats(samples);
  const double mine = bytesPerOp > 0 && st.median > 0 ? bytesPerOp / (st.median * 1e3) : 0;
  const double agg = bytesPerOp > 0 ? sumOnPe0(b, mine) : -1;
  if (b.me != 0) return;
  Row row = tether_bench::makeRow(op, pathFor(b, pair.target), pair.name(), S, iters, samples, false);
  if (bytesPerOp > 0) row.bwGBps = mine;
  row.aggGBps = agg;
  row.pattern = tether_bench::patternName(b.pattern);
  row.npes = b.npes;
  b.rep->addRow(row);
}

// Checks this PE's slot of every source in `tgt` (seedFor(op, S, source)); false after printing what differs.
bool checkSources(Bench& b, const Region& tgt, const char* op, const Pair& pair, size_t S) {
  bool ok = true;
  for (int src : sourcesOf(b))
    ok = checkRegion(b, offsetRegion(tgt, slotOf(b, src)), S, seedFor(op, S, src),
                     sizeLabel(op, pair, S) + " from PE " + std::to_string(src)) && ok;
  return ok;
}

// put (blocking, ops back to back, one quiet per batch) or put_nbi (windows + quiet: bandwidth), every PE at once.
void runPutPattern(Bench& b, const Pair& pair, bool nbi) {
  const char* op = nbi ? "put_nbi" : "put";
  const bool all = b.pattern == tether_bench::Traffic::AllPairs;
  if (b.me == 0) {
    const std::string per = all ? "n - 1 puts (one to each other PE)" : "put";
    const std::string title =
        nbi ? "put_nbi bandwidth" + tether_bench::patternTitle(b.pattern, b.npes) + ": " + patternWho(b) +
                  ", windows of " + std::to_string(b.opts.window) + " operations (" + per +
                  " each) then one tether_quiet (" + tag(b, pair) +
                  "); Bandwidth, Peak, Latency: PE 0's (bytes per operation = " + (all ? "(n - 1) S" : "S") +
                  "); Aggregate = sum over PEs of each PE's median bandwidth"
            : "put" + tether_bench::patternTitle(b.pattern, b.npes) + ": blocking tether_put of S bytes, " +
                  patternWho(b) + "; ops back to back, tether_quiet once per batch (" + tag(b, pair) +
                  "); latency per operation = " + per + ", PE 0's batches";
    b.rep->beginTable(title, nbi ? TableKind::AggregateBandwidth : TableKind::Latency);
  }
  const Region loc = localRegion(b, pair.local), tgt = targetRegion(b, pair.target);
  const int n1 = fanout(b);
  uint8_t* dest = tgt.addr + slotOf(b, b.me);  // this PE's slot on every target (symmetric offset)
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    const int ops = tether_bench::opsPerBatch(b.opts, S);
    const int window = nbi ? (ops < b.opts.window ? ops : b.opts.window) : ops;
    const int windows = ops / window;  // >= 1
    fillRegion(b, loc, S, seedFor(op, S, b.me));
    for (int src : sourcesOf(b)) clearRegion(b, offsetRegion(tgt, slotOf(b, src)), S);
    barrier(b);
    std::vector<double> samples;
    tether_bench::measure(b.opts.warmup, b.opts.batches, windows * window, [&](int) {
      for (int wi = 0; wi < windows; ++wi) {
        for (int i = 0; i < window; ++i)
          for (int j = 0; j < n1; ++j) {
            if (nbi)
              CHECK(b, tether_put_nbi(b.w, dest, loc.addr, S, targetOf(b, j)));
            else
              CHECK(b, tether_put(b.w, dest, loc.addr, S, targetOf(b, j)));
          }
        CHECK(b, tether_quiet(b.w));
      }
      return true;
    }, &samples);
    barrier(b);
    agree(b, checkSources(b, tgt, op, pair, S), sizeLabel(op, pair, S));
    reportPattern(b, op, S, static_cast<long>(windows) * window * b.opts.batches, samples,
                  nbi ? static_cast<double>(S) * n1 : 0, pair);
  }
}

// put_signal: ring pass (PE 0 starts: put_signal(SET seq) to next, then waits for seq from prev; every other PE waits
// for seq then passes it on; latency = round time / n) or all-pairs exchange (each operation: put_signal(SET seq) to
// every other PE, each into the sender's slot and signal word, then wait for seq from every other PE; latency = time
// per exchange). Signal words live in the target's segment kind.
void runSignalPattern(Bench& b, const Pair& pair) {
  const char* op = "put_signal";
  const bool all = b.pattern == tether_bench::Traffic::AllPairs;
  const bool devSig = pair.target == Mem::D;
  if (b.me == 0)
    b.rep->beginTable(
        std::string("put_signal") + tether_bench::patternTitle(b.pattern, b.npes) +
            (all ? ": exchange, every PE tether_put_signal(S bytes, SIGNAL_SET seq) to every other PE, then "
                   "tether_signal_wait_until(GE seq) on the word of each; latency = time per exchange"
                 : ": ring pass, PE 0 tether_put_signal(S bytes, SIGNAL_SET seq) to next, each PE waits (GE seq) for "
                   "prev's then signals next, PE 0 waits for PE n-1's; latency = round time / n (one hop)") +
            " (" + tag(b, pair) + (devSig ? ", signal words in GPU memory" : "") + "), PE 0's batches",
        TableKind::Latency);
  // Ring: one signal word (offset 0); all-pairs: one per source PE.
  uint64_t* sigs = devSig ? reinterpret_cast<uint64_t*>(b.syncD.addr + (all ? 256 : 0)) : (all ? b.sigs : b.sig);
  uint64_t* sigsView = devSig ? reinterpret_cast<uint64_t*>(b.syncD.view + (all ? 256 : 0)) : (all ? b.sigs : b.sig);
  auto sigIndex = [&](int pe) { return all ? pe : 0; };
  const Region loc = localRegion(b, pair.local), tgt = targetRegion(b, pair.target);
  const std::vector<int> sources = sourcesOf(b);
  // Every word starts from the same seq on every PE: no stale signal can satisfy a first wait (the barrier below
  // orders these stores before anyone's first put_signal).
  for (int src : sources) writeWord(b, sigsView + sigIndex(src), devSig, b.seq);
  uint8_t* dest = tgt.addr + slotOf(b, b.me);
  uint64_t* mySig = sigs + sigIndex(b.me);  // the word this PE signals on its targets
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    const int ops = tether_bench::opsPerBatch(b.opts, S);
    fillRegion(b, loc, S, seedFor(op, S, b.me));
    for (int src : sources) clearRegion(b, offsetRegion(tgt, slotOf(b, src)), S);
    barrier(b);
    std::vector<double> samples;
    tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
      for (int i = 0; i < k; ++i) {
        ++b.seq;
        if (!all && b.me == 0)
          CHECK(b, tether_put_signal(b.w, dest, loc.addr, S, mySig, b.seq, TETHER_SIGNAL_SET, targetOf(b, 0)));
        if (all)
          for (int j = 0; j < fanout(b); ++j)
            CHECK(b, tether_put_signal(b.w, dest, loc.addr, S, mySig, b.seq, TETHER_SIGNAL_SET, targetOf(b, j)));
        for (int src : sources) {
          uint64_t seen = 0;
          CHECK(b, tether_signal_wait_until(b.w, sigs + sigIndex(src), TETHER_CMP_GE, b.seq, &seen));
          // ring: exactly seq; all-pairs: seq, or seq + 1 when src has finished this exchange and sent the next
          if (seen != b.seq && !(all && seen == b.seq + 1)) {
            std::fprintf(stderr, "put_get[PE %d]: signal_wait_until on PE %d's word saw %" PRIu64 ", expected %" PRIu64
                         "\n", b.me, src, seen, b.seq);
            std::exit(1);
          }
        }
        if (!all && b.me != 0)
          CHECK(b, tether_put_signal(b.w, dest, loc.addr, S, mySig, b.seq, TETHER_SIGNAL_SET, targetOf(b, 0)));
      }
      return true;
    }, &samples);
    if (!all)
      for (double& s : samples) s /= b.npes;  // round -> one hop
    barrier(b);
    bool ok = checkSources(b, tgt, op, pair, S);
    for (int src : sources) {
      const uint64_t got = readWord(b, sigsView + sigIndex(src), devSig);
      if (got != b.seq) {
        std::fprintf(stderr, "put_get[PE %d]: %s: signal word of PE %d is %" PRIu64 ", expected %" PRIu64 "\n", b.me,
                     sizeLabel(op, pair, S).c_str(), src, got, b.seq);
        ok = false;
      }
    }
    agree(b, ok, sizeLabel(op, pair, S));
    reportPattern(b, op, S, static_cast<long>(ops) * b.opts.batches, samples, 0, pair);
  }
}

void runBarrier(Bench& b) {
  if (b.me == 0)
    b.rep->beginTable("barrier_all" +
                          (patterned(b) ? tether_bench::patternTitle(b.pattern, b.npes) : std::string()) +
                          ": tether_barrier_all over all " + std::to_string(b.npes) +
                          " PEs, back to back, timed on PE 0",
                      TableKind::Latency);
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
    if (patterned(b)) {
      row.pattern = tether_bench::patternName(b.pattern);
      row.npes = b.npes;
    }
    b.rep->addRow(row);
  }
}

// ---- set-up ------------------------------------------------------------------------------------------------------

// Collective symmetric allocation; on failure prints what the benchmark needs and exits 1 (every PE fails alike).
void* allocSymmetric(Bench& b, tether_seg_kind_t kind, size_t bytes, size_t align, const char* what) {
  void* p = nullptr;
  tether_status_t st = tether_malloc_kind(b.w, kind, align, bytes, &p);
  if (st == TETHER_SUCCESS) return p;
  const bool dev = kind == TETHER_SEG_DEVICE;
  std::fprintf(stderr, "put_get[PE %d]: allocating %s (%zu bytes of %s symmetric heap) failed: %s: %s\n", b.me, what,
               bytes, dev ? "DEVICE" : "HOST", tether_status_string(st), tether_last_error());
  if (st == TETHER_ERR_UNSUPPORTED) std::exit(1);  // no such segment in this job: tether's message says why
  const std::string need = tether_bench::formatSize(b.opts.maxSize);
  std::fprintf(stderr,
               "  every PE needs one %s buffer of --max-size (%s) plus a few words of %s heap: raise %s (initial heap, "
               "default %s) and %s (growth limit, default %s),\n"
               "  e.g. TETHER_HEAP_SIZE=4G TETHER_DEVICE_HEAP_SIZE=4G tetherrun -n 2 ... for --max-size 1G, or lower "
               "--max-size\n",
               dev ? "DEVICE" : "HOST", need.c_str(), dev ? "DEVICE" : "HOST",
               dev ? "TETHER_DEVICE_HEAP_SIZE" : "TETHER_HEAP_SIZE", dev ? "256M" : "64M",
               dev ? "TETHER_DEVICE_HEAP_MAX" : "TETHER_HEAP_MAX", dev ? "32G" : "8G");
  std::exit(1);
}

// This PE's GPU for local buffers: tether's default choice (node-local PE modulo the visible GPUs) or the ordinal
// in TETHER_GPU; TETHER_GPU=none: no GPU. Returns -1 with *why when there is none.
int chooseGpu(const Bench& b, std::string* why) {
  const int count = tether_bench::localGpuCount(why);
  if (count <= 0) return -1;
  const char* sel = std::getenv("TETHER_GPU");
  int dev = tether_local_pe(b.w) % count;
  if (sel && std::strcmp(sel, "none") == 0) {
    *why = "TETHER_GPU=none";
    return -1;
  }
  if (sel && *sel && std::strcmp(sel, "auto") != 0) {
    char* end = nullptr;
    long v = std::strtol(sel, &end, 10);
    if (*end != '\0' || v < 0 || v >= count) {
      *why = std::string("TETHER_GPU=") + sel + " is not auto, none or a GPU ordinal below " + std::to_string(count);
      return -1;
    }
    dev = static_cast<int>(v);
  }
  if (!tether_bench::localSelectGpu(dev, why)) return -1;
  return dev;
}

Region allocLocal(Bench& b, Mem m, bool* pinned) {
  Region r;
  std::string error;
  void* p = m == Mem::H ? tether_bench::localAllocHost(b.opts.maxSize, pinned, &error)
                        : tether_bench::localAllocDevice(b.opts.maxSize, &error);
  if (!p)
    failLocal(b, std::string("allocating the local ") + (m == Mem::H ? "host" : "GPU") + " buffer (" +
                     std::to_string(b.opts.maxSize) + " bytes, --max-size)",
              error);
  r.addr = r.view = static_cast<uint8_t*>(p);
  r.device = m == Mem::D;
  return r;
}

Region symmetricRegion(Bench& b, void* p, bool device) {
  Region r;
  r.addr = static_cast<uint8_t*>(p);
  r.device = device;
  r.view = r.addr;
  if (device) {
    void* own = tether_ptr(b.w, p, b.me);
    if (own) r.view = static_cast<uint8_t*>(own);
  }
  return r;
}

const char* const kExtraUsage =
    "  --kinds LIST     memory kinds, a comma list of <local>-><target> pairs (default H->H): local H = host memory\n"
    "                   (pinned when a GPU is present), D = GPU memory (cudaMalloc); target H = TETHER_SEG_HOST,\n"
    "                   D = TETHER_SEG_DEVICE; 'all' = H->H,H->D,D->H,D->D (D pairs skipped without GPUs; a D pair\n"
    "                   named explicitly fails instead). Quote pairs in the shell ('H->D') or write HD\n"
    "rows (--ops): per pair put get put_nbi get_nbi put_bidir; H->H only: p g put_signal atomic_fetch_add;\n"
    "              pairs with a D target: put_signal, and atomic_fetch_add once; then barrier_all;\n"
    "              per pair when named only: put_local\n"
    "  --pattern P      traffic pattern (default pair): pair = PE 0 -> PE 1 (PEs above 1 idle); ring = every PE at\n"
    "                   once to next = (me + 1) % n; all-pairs = every PE at once to all n - 1 others per operation;\n"
    "                   ring and all-pairs run the rows put put_nbi put_signal barrier_all only\n"
    "heap: one symmetric buffer of --max-size per target kind per PE (all-pairs: n x --max-size); if allocation fails,\n"
    "      raise TETHER_HEAP_SIZE / TETHER_HEAP_MAX (HOST) or TETHER_DEVICE_HEAP_SIZE / TETHER_DEVICE_HEAP_MAX (DEVICE)\n";

}  // namespace

int main(int argc, char** argv) {
  // Our own option (--kinds) is taken out before the harness parses the rest.
  std::vector<char*> rest;
  std::string kindsText = "H->H";
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (i > 0 && (a == "--kinds" || a.rfind("--kinds=", 0) == 0)) {
      if (a == "--kinds") {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "put_get: --kinds needs a value (e.g. all, 'H->D', DD)\n");
          return 2;
        }
        kindsText = argv[++i];
      } else {
        kindsText = a.substr(std::strlen("--kinds="));
      }
      continue;
    }
    rest.push_back(argv[i]);
  }
  Options opts;
  std::string error;
  tether_bench::Traffic pattern = tether_bench::Traffic::Pair;
  if (!tether_bench::takePatternOption(&rest, &pattern, &error)) {
    std::fprintf(stderr, "put_get: %s\n", error.c_str());
    return 2;
  }
  if (!tether_bench::parseOptions(static_cast<int>(rest.size()), rest.data(), &opts, &error)) {
    std::fprintf(stderr, "put_get: %s\n", error.c_str());
    return 2;
  }
  opts.argv.assign(argv, argv + argc);
  if (opts.help) {
    std::printf("%s", tether_bench::usage("tether_bench_put_get", kExtraUsage).c_str());
    return 0;
  }
  for (const std::string& op : opts.ops) {
    bool known = false;
    for (const char* k : kOps) known = known || op == k;
    if (!known) {
      std::fprintf(stderr, "put_get: unknown row '%s' in --ops (see --help)\n", op.c_str());
      return 2;
    }
    if (pattern != tether_bench::Traffic::Pair && op != "put" && op != "put_nbi" && op != "put_signal" &&
        op != "barrier_all") {
      std::fprintf(stderr, "put_get: row '%s' runs with --pattern pair only (ring and all-pairs: put, put_nbi, "
                   "put_signal, barrier_all)\n", op.c_str());
      return 2;
    }
  }
  std::vector<Pair> pairs;
  if (!parseKinds(kindsText, &pairs, &error)) {
    std::fprintf(stderr, "put_get: %s\n", error.c_str());
    return 2;
  }

  Bench b;
  b.opts = opts;
  b.pattern = pattern;
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

  const size_t syncBytes = 256 + 3 * sizeof(int64_t) * static_cast<size_t>(b.npes);
  uint8_t* sync = static_cast<uint8_t*>(allocSymmetric(b, TETHER_SEG_HOST, syncBytes, 64, "the synchronisation words"));
  std::memset(sync, 0, syncBytes);
  b.sig = reinterpret_cast<uint64_t*>(sync + 0);
  b.word = reinterpret_cast<uint64_t*>(sync + 64);
  b.counter = reinterpret_cast<uint64_t*>(sync + 128);
  b.vflags = reinterpret_cast<int64_t*>(sync + 256);
  b.sigs = reinterpret_cast<uint64_t*>(sync + 256 + 8 * static_cast<size_t>(b.npes));
  b.gather = reinterpret_cast<double*>(sync + 256 + 16 * static_cast<size_t>(b.npes));
  // all-pairs: one slot of --max-size per source PE in each target buffer
  size_t targetBytes = opts.maxSize;
  if (pattern == tether_bench::Traffic::AllPairs) {
    if (opts.maxSize > SIZE_MAX / static_cast<size_t>(b.npes)) {
      if (b.me == 0) std::fprintf(stderr, "put_get: --max-size x %d PEs overflows (all-pairs)\n", b.npes);
      (void)tether_finalize(b.w);
      return 2;
    }
    b.slotBytes = opts.maxSize;
    targetBytes = opts.maxSize * static_cast<size_t>(b.npes);
  }
  barrier(b);  // the zeroed sync words are in place everywhere before anyone writes to them

  // GPU memory needs a GPU on every PE (DEVICE segments exist only then); decided together so all PEs agree.
  bool wantGpu = false, explicitGpu = false;
  for (const Pair& p : pairs) {
    wantGpu = wantGpu || p.usesGpu();
    explicitGpu = explicitGpu || (p.usesGpu() && p.explicitly);
  }
  std::string gpuWhy, skippedNote;
  if (wantGpu) {
    b.gpu = chooseGpu(b, &gpuWhy);
    std::vector<int> without;
    const bool allGpu = voteAll(b, b.gpu >= 0, &without);
    if (!allGpu) {
      std::string pes;
      for (int pe : without) pes += (pes.empty() ? "" : ", ") + std::to_string(pe);
      if (b.gpu < 0 && (explicitGpu || b.me == 0))
        std::fprintf(stderr, "put_get[PE %d]: no GPU: %s\n", b.me, gpuWhy.c_str());
      if (explicitGpu) {
        if (b.me == 0)
          std::fprintf(stderr,
                       "put_get: --kinds %s needs GPU memory on every PE, but PE(s) %s have no GPU; use --kinds H->H "
                       "(or all, which skips the D pairs) on this machine\n",
                       kindsText.c_str(), pes.c_str());
        (void)tether_finalize(b.w);
        return 2;
      }
      std::vector<Pair> kept;
      std::string skipped;
      for (const Pair& p : pairs) {
        if (p.usesGpu())
          skipped += (skipped.empty() ? "" : ", ") + p.name();
        else
          kept.push_back(p);
      }
      skippedNote = "skipped (no GPU on PE(s) " + pes + "): " + skipped + "\n";
      if (b.me == 0)
        std::fprintf(stderr, "put_get: --kinds all: skipping the GPU-memory pairs %s: no GPU on PE(s) %s\n",
                     skipped.c_str(), pes.c_str());
      pairs = kept;
      b.gpu = -1;
    }
  }

  bool tgtH = false, tgtD = false, locH = false, locD = false;
  for (const Pair& p : pairs) {
    (p.target == Mem::H ? tgtH : tgtD) = true;
    (p.local == Mem::H ? locH : locD) = true;
  }
  if (tgtH) b.tgtH = symmetricRegion(b, allocSymmetric(b, TETHER_SEG_HOST, targetBytes, 4096, "the HOST target "
                                                       "buffer"), false);
  if (tgtD) {
    b.tgtD = symmetricRegion(b, allocSymmetric(b, TETHER_SEG_DEVICE, targetBytes, 4096, "the DEVICE target buffer"),
                             true);
    const size_t syncDBytes = 256 + 8 * static_cast<size_t>(b.npes);
    b.syncD = symmetricRegion(b, allocSymmetric(b, TETHER_SEG_DEVICE, syncDBytes, 64, "the DEVICE synchronisation "
                                                "words"), true);
    std::string e;
    if (!tether_bench::localZeroDevice(b.syncD.view, syncDBytes, &e)) failLocal(b, "clearing the DEVICE words", e);
  }
  if (b.me <= 1 || patterned(b)) {
    if (locH) b.locH = allocLocal(b, Mem::H, &b.locHPinned);
    if (locD) b.locD = allocLocal(b, Mem::D, nullptr);
    if (tgtD || locD) {
      b.staging = static_cast<uint8_t*>(tether_bench::localAllocHost(opts.maxSize, &b.stagingPinned, &error));
      if (!b.staging) failLocal(b, "allocating the host staging buffer (--max-size bytes)", error);
    }
  }
  // Path labels from tether_ptr: shm (HOST) / p2p (DEVICE) when PE 1's segment is directly mapped, else "unmapped"
  // (the staged path on one host, UCX to another host: TETHER_LOG=info names the provider).
  b.path = tether_ptr(b.w, sync, 1) != nullptr ? "shm" : "unmapped";
  if (tgtD) b.pathD = tether_ptr(b.w, b.tgtD.addr, 1) != nullptr ? "p2p" : "unmapped";
  barrier(b);  // every PE's buffers and words are in place before anyone writes to them

  tether_bench::RunInfo info = tether_bench::collectRunInfo("put_get", opts, b.npes);
  if (patterned(b)) info.pattern = tether_bench::patternName(b.pattern);
  Reporter rep(info, opts, b.me == 0);
  b.rep = &rep;
  if (!rep.open(&error)) {
    std::fprintf(stderr, "put_get: %s\n", error.c_str());
    std::exit(1);
  }
  std::string notes =
      (patterned(b) ? std::string("model host: CPU-issued tether calls; pattern ") +
                          tether_bench::patternName(b.pattern) + " over " + std::to_string(b.npes) + " PEs: " +
                          patternWho(b) + "; PE 0 times and prints; kinds "
                    : std::string("model host: CPU-issued tether calls; PE 0 issues and times, PE 1 is the target; "
                                  "kinds ")) +
      joinPairs(pairs) + " (<local>-><target>)\n" + skippedNote;
  if (locH)
    notes += std::string("local H: ") +
             (b.locHPinned ? "pinned host memory (cudaHostAlloc)" : "malloc'ed host memory") + "; ";
  if (locD) notes += "local D: cudaMalloc on the PE's GPU; ";
  notes += std::string(tgtH ? "target H: TETHER_SEG_HOST" : "") + (tgtH && tgtD ? ", " : "") +
           (tgtD ? "target D: TETHER_SEG_DEVICE" : "") + "\n";
  if (b.gpu >= 0)
    notes += "PE 0's GPU: " + std::to_string(b.gpu) + " (" + tether_bench::localGpuName(b.gpu) +
             "), node-local PE modulo visible GPUs as tether chooses (or TETHER_GPU)\n";
  notes += "path " + b.path + " for HOST targets" + (tgtD ? ", " + b.pathD + " for DEVICE targets" : "") +
           " (shm/p2p: PE 1's segment is mapped, tether_ptr != NULL; unmapped: the staged path or UCX to another "
           "host); data validated once per row and size after the timed batches";
  rep.printHeader(notes);

  bool atomicD = false;
  for (const Pair& pair : patterned(b) ? pairs : std::vector<Pair>{}) {
    if (tether_bench::wantsOp(opts, "put")) runPutPattern(b, pair, false);
    if (tether_bench::wantsOp(opts, "put_nbi")) runPutPattern(b, pair, true);
    const bool hh = pair.local == Mem::H && pair.target == Mem::H;
    if ((hh || pair.target == Mem::D) && tether_bench::wantsOp(opts, "put_signal")) runSignalPattern(b, pair);
  }
  for (const Pair& pair : patterned(b) ? std::vector<Pair>{} : pairs) {
    if (tether_bench::wantsOp(opts, "put")) runBlocking(b, pair, true);
    if (std::find(opts.ops.begin(), opts.ops.end(), "put_local") != opts.ops.end()) runBlocking(b, pair, true, true);
    if (tether_bench::wantsOp(opts, "get")) runBlocking(b, pair, false);
    if (tether_bench::wantsOp(opts, "put_nbi")) runNbi(b, pair, true);
    if (tether_bench::wantsOp(opts, "get_nbi")) runNbi(b, pair, false);
    if (tether_bench::wantsOp(opts, "put_bidir")) runBidir(b, pair);
    const bool hh = pair.local == Mem::H && pair.target == Mem::H;
    if (hh && tether_bench::wantsOp(opts, "p")) runP(b);
    if (hh && tether_bench::wantsOp(opts, "g")) runG(b);
    if ((hh || pair.target == Mem::D) && tether_bench::wantsOp(opts, "put_signal")) runPingPong(b, pair);
    if (hh && tether_bench::wantsOp(opts, "atomic_fetch_add")) runAtomic(b, Mem::H);
    if (pair.target == Mem::D && !atomicD && tether_bench::wantsOp(opts, "atomic_fetch_add")) {
      runAtomic(b, Mem::D);
      atomicD = true;
    }
  }
  if (tether_bench::wantsOp(opts, "barrier_all")) runBarrier(b);
  rep.flush();

  tether_bench::localFreeHost(b.staging, b.stagingPinned);
  tether_bench::localFreeDevice(b.locD.addr);
  tether_bench::localFreeHost(b.locH.addr, b.locHPinned);
  if (tgtD) {
    CHECK(b, tether_free(b.w, b.syncD.addr));
    CHECK(b, tether_free(b.w, b.tgtD.addr));
  }
  if (tgtH) CHECK(b, tether_free(b.w, b.tgtH.addr));
  CHECK(b, tether_free(b.w, sync));
  CHECK(b, tether_finalize(b.w));
  return 0;
}
