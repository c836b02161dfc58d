// Non-contiguous put/get between two GPUs (issue #7), 2 PEs under tetherrun, one GPU each, DEVICE symmetric heap.
// Measures tether_put_typed / tether_get_typed on the DDTBench-style layouts of patterns.h, so that the choice between
// the direct route (the GPU engine packs straight into, or unpacks straight out of, the peer's memory) and the staged
// route (local pack + one contiguous put per memory run of the remote type) can be calibrated on the same layouts.
// TETHER_DT_RMA picks the library's mode per process (auto: direct where the peer's memory is reachable, and the
// cost model for typed-to-typed rows; direct; staged): this program names the mode in its header and, in every row,
// the route the library takes for that row's calls (tether_typed_route), and is run once per mode.
//
// Rows (PE 0 issues, PE 1 is the target; per pattern and size, --ops selects):
//   putmem            contiguous tether_put of the packed bytes (count * size): the ceiling
//   put_typed_contig  put, source typed (local cudaMalloc buffer), target contiguous bytes at the peer
//   put_typed         put, the same layout on both sides
//   get_typed         get from PE 1's layout into PE 0's local buffer of the same layout
// Timing: one untimed probe call sizes the batches (time budget, --budget); then --warmup + --batches batches of k
// blocking calls and one tether_quiet, timed with steady_clock (bench/harness.h measure/computeStats); us = batch
// time / k, median and min over the timed batches; GB/s = packed bytes / median.
// Validation (after every row, outside the timed region): the source holds a byte pattern that depends on the
// position and the PE, the target was cleared to another one; the PE that holds the target compares every byte of
// it (for typed targets the whole buffer, gaps included) with an expectation built on the host by tether_type_pack /
// tether_type_unpack (the host reference, cross-checked against the pattern's own block list). Wrong data exits 1
// (PE 1's count is voted to PE 0), a failed call 2, a stalled batch 3 (watchdog: RMA_BENCH_TIMEOUT, else
// STREAM_BENCH_TIMEOUT, seconds; default 120), no GPU 77.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../cuda_check.h"
#include "harness.h"
#include "patterns.h"
#include "tether/datatype.h"
#include "tether/tether.h"

namespace tb = tether_bench;

namespace {

const char* const kProg = "tether_bench_rma_typed";
// The default selection: long rows (nas_mg_y, wrf_y_vec), pitched faces of short blocks (nas_lu_x: 40 B, nas_mg_x:
// 8 B), a transpose (fft2d: 16 B), nested vectors (milc), irregular indexed (lammps_full, specfem3d_oc) and a struct.
const char* const kDefaultPatterns[] = {"nas_lu_x", "nas_mg_x",     "nas_mg_y",     "wrf_y_vec",   "milc_su3_zdown",
                                        "fft2d",    "lammps_full", "specfem3d_oc", "nbody_struct"};
constexpr int64_t kGuard = 4096;  // bytes after a contiguous target that must stay untouched

// ---- byte patterns --------------------------------------------------------------------------------------------------
// Byte i of a fill is a hash of i XOR a salt, so two fills with different salts differ at every position: a target
// byte that was not written, or written where the type has a gap, never matches by chance.
__host__ __device__ inline unsigned char fillByte(uint64_t i, unsigned salt) {
  return static_cast<unsigned char>(((i * 0x9E3779B97F4A7C15ull) >> 56) ^ salt);
}
unsigned sourceSalt(int pe) { return 0x3Cu ^ static_cast<unsigned>(pe); }
unsigned clearedSalt(int pe) { return 0xC3u ^ static_cast<unsigned>(pe); }

__global__ void fillKernel(unsigned char* p, uint64_t n, unsigned salt) {
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n; i += step)
    p[i] = fillByte(i, salt);
}
// Fills p[0, n) of this PE's GPU and waits for it (tether reads local buffers after the default stream's work; the
// peer reads symmetric ones after a barrier, so the fill must be complete before it).
void fill(void* p, int64_t n, unsigned salt) {
  fillKernel<<<1024, 256>>>(static_cast<unsigned char*>(p), static_cast<uint64_t>(n), salt);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
}

// ---- options beyond the harness's -----------------------------------------------------------------------------------

struct Extra {
  std::vector<std::string> only;  // pattern names ("all": every pattern); empty: kDefaultPatterns
  std::vector<tb::Size> sizes;    // empty: small,large (--quick: small)
  double budget = -1;             // seconds of calls per row (<0: default)
  long long maxRuns = -1;         // staged route: the most remote runs a measured row may have (<0: default)
};

// Takes this program's own options out of argv (--only, --sizes, --budget, --max-runs; "--name value" or
// "--name=value"); the rest goes to the harness. False with *error on a bad value.
bool takeExtra(int argc, char** argv, std::vector<char*>* rest, Extra* x, std::string* error) {
  rest->assign(argv, argv + 1);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    if (name != "--only" && name != "--sizes" && name != "--budget" && name != "--max-runs") {
      rest->push_back(argv[i]);
      continue;
    }
    std::string v;
    if (eq != std::string::npos) {
      v = a.substr(eq + 1);
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      *error = name + " needs a value";
      return false;
    }
    char* end = nullptr;
    if (name == "--only") {
      x->only = tb::splitList(v);
    } else if (name == "--sizes") {
      x->sizes.clear();
      for (const std::string& w : tb::splitList(v)) {
        if (w != "small" && w != "large") {
          *error = "--sizes '" + v + "': expected small and/or large";
          return false;
        }
        x->sizes.push_back(w == "small" ? tb::Size::small : tb::Size::large);
      }
    } else if (name == "--budget") {
      x->budget = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end || !(x->budget > 0)) {
        *error = "--budget '" + v + "': expected seconds > 0";
        return false;
      }
    } else {
      x->maxRuns = std::strtoll(v.c_str(), &end, 10);
      if (end == v.c_str() || *end || x->maxRuns < 1) {
        *error = "--max-runs '" + v + "': expected an integer >= 1";
        return false;
      }
    }
  }
  rest->push_back(nullptr);
  return true;
}

// ---- context --------------------------------------------------------------------------------------------------------

struct Ctx {
  tether_t w = nullptr;
  int me = 0, peer = 1;
  tb::Options o;
  Extra x;
  tb::RunInfo info;
  std::string mode;   // TETHER_DT_RMA as read: auto | staged
  std::string route;  // direct | staged: what a contiguous-target row takes with this mode and path (the header)
  std::string path;   // p2p (PE 0 addresses PE 1's DEVICE heap) | no-p2p
  std::string gpu;
  int64_t* xchg = nullptr;          // HOST symmetric words for exchanges between the PEs
  tether_type_t bytes1 = nullptr;   // TETHER_BASIC_BYTE: the contiguous target type
  FILE* table = stdout;
  FILE* json = nullptr;
  long failures = 0;
  int rows = 0;
  // Watchdog (bench/harness.h): armed for each probe call and batch; what and batch name it on a stall.
  double timeoutS = 120;
  std::unique_ptr<tb::Watchdog> dog;
  std::atomic<const char*> what{""};
  std::atomic<int> batch{0};
  std::list<std::string> whats;  // storage for `what` (stable addresses)
};

// Both PEs' values of v, by PE: PE 1 puts its value into PE 0's word 1, PE 0 puts the pair into PE 1's words 2-3.
// Collective (two barriers).
void exchange(Ctx& c, int64_t v, int64_t out[2]) {
  if (c.me == 0)
    c.xchg[0] = v;
  else
    TK(tether_put(c.w, c.xchg + 1, &v, sizeof v, 0));
  TK(tether_barrier_all(c.w));
  if (c.me == 0) TK(tether_put(c.w, c.xchg + 2, c.xchg, 2 * sizeof v, 1));
  TK(tether_barrier_all(c.w));
  const int64_t* got = c.me == 0 ? c.xchg : c.xchg + 2;
  out[0] = got[0];
  out[1] = got[1];
}

// What a stall prints (the watchdog then exits with 3).
void reportStall(const Ctx& c) {
  const int batch = c.batch.load();
  std::fprintf(stderr, "%s[PE %d]: %s: %s%s has not finished after %.0f s: stalled (RMA_BENCH_TIMEOUT raises the "
               "limit)\n", kProg, c.me, c.what.load(), batch ? "batch " : "the probe call",
               batch ? std::to_string(batch).c_str() : "", c.timeoutS);
}
void arm(Ctx& c, int batch) {
  c.batch = batch;
  c.dog->arm(c.timeoutS);
}
void disarm(Ctx& c) { c.dog->disarm(); }

// ---- one pattern ----------------------------------------------------------------------------------------------------

enum class Op { Putmem, PutContig, PutTyped, GetTyped };
const char* opName(Op op) {
  switch (op) {
    case Op::Putmem: return "putmem";
    case Op::PutContig: return "put_typed_contig";
    case Op::PutTyped: return "put_typed";
    default: return "get_typed";
  }
}

struct Bufs {
  tb::Pattern p;
  int64_t runs = 0;      // memory runs of the layout (adjacent blocks joined), in packing order
  int64_t hostLen = 0;   // max(span, packed + guard): the scratch and host buffers
  unsigned char* sym = nullptr;        // DEVICE symmetric, span: target of put_typed, source of get_typed
  unsigned char* symPacked = nullptr;  // DEVICE symmetric, packed + guard: contiguous target
  unsigned char* loc = nullptr;        // cudaMalloc, hostLen: typed source / get target; validation scratch
  unsigned char* locPacked = nullptr;  // cudaMalloc, packed: putmem source
  std::unique_ptr<unsigned char[]> got, want, packed;  // host: the target as found, the expectation, a host pack
  int packedOf = -1;  // `packed` holds the host pack of PE packedOf's source pattern (-1: nothing yet)
};

// The host reference pack of PE src's source pattern (in b.packed, built once per pattern), checked against the
// pattern's block list (built without the type constructors). Uses b.loc and b.want as scratch.
void hostPack(Ctx& c, Bufs& b, int src) {
  if (b.packedOf == src) return;
  const tb::Pattern& p = b.p;
  fill(b.loc, p.span, sourceSalt(src));
  CK(cudaMemcpy(b.want.get(), b.loc, static_cast<size_t>(p.span), cudaMemcpyDeviceToHost));
  int64_t done = 0;
  if (tether_type_pack(p.type, p.count, b.want.get() + p.base, 0, p.packed, b.packed.get(), &done) != TETHER_SUCCESS) {
    std::fprintf(stderr, "%s: tether_type_pack (host reference) of %s: %s\n", kProg, p.name.c_str(),
                 tether_type_last_error());
    std::exit(2);
  }
  int64_t at = 0;
  bool same = done == p.packed;
  for (size_t i = 0; same && i < p.blocks.size(); ++i) {
    const tb::Block& k = p.blocks[i];
    same = std::memcmp(b.packed.get() + at, b.want.get() + k.offset, static_cast<size_t>(k.bytes)) == 0;
    at += k.bytes;
  }
  if (!same) {
    ++c.failures;
    std::fprintf(stderr, "%s[PE %d]: %s %s: the host reference pack differs from the pattern's block list\n", kProg,
                 c.me, p.name.c_str(), p.size.c_str());
  }
  b.packedOf = src;
}

// Compares the target (b.got) with the expectation (b.want) over [0, n); returns the bytes that differ.
int64_t compare(Ctx& c, const Bufs& b, Op op, int64_t n) {
  const unsigned char* g = b.got.get();
  const unsigned char* e = b.want.get();
  if (std::memcmp(g, e, static_cast<size_t>(n)) == 0) return 0;
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (g[i] != e[i]) {
      if (first < 0) first = i;
      ++wrong;
    }
  std::fprintf(stderr,
               "%s[PE %d]: data validation FAILED: %s %s %s (TETHER_DT_RMA=%s): %lld of %lld target bytes wrong, the "
               "first at byte %lld (got 0x%02x, expected 0x%02x)\n",
               kProg, c.me, b.p.name.c_str(), b.p.size.c_str(), opName(op), c.mode.c_str(),
               static_cast<long long>(wrong), static_cast<long long>(n), static_cast<long long>(first), g[first],
               e[first]);
  return wrong;
}

// The target of `op` after the row, checked on the PE that holds it (PE 1 for puts, PE 0 for the get). Returns the
// number of wrong bytes.
int64_t validate(Ctx& c, Bufs& b, Op op) {
  const tb::Pattern& p = b.p;
  if (op == Op::Putmem || op == Op::PutContig) {  // contiguous target: packed bytes, then the untouched guard
    const int64_t n = p.packed + kGuard;
    CK(cudaMemcpy(b.got.get(), b.symPacked, static_cast<size_t>(n), cudaMemcpyDeviceToHost));
    if (op == Op::PutContig) hostPack(c, b, c.peer);
    fill(b.loc, n, clearedSalt(c.me));
    if (op == Op::Putmem) fill(b.loc, p.packed, sourceSalt(c.peer));  // putmem's source: the pattern from byte 0
    CK(cudaMemcpy(b.want.get(), b.loc, static_cast<size_t>(n), cudaMemcpyDeviceToHost));
    if (op == Op::PutContig) std::memcpy(b.want.get(), b.packed.get(), static_cast<size_t>(p.packed));
    return compare(c, b, op, n);
  }
  // Typed target (the same layout): the cleared buffer with the source's packed bytes unpacked into it.
  unsigned char* target = op == Op::PutTyped ? b.sym : b.loc;
  CK(cudaMemcpy(b.got.get(), target, static_cast<size_t>(p.span), cudaMemcpyDeviceToHost));
  hostPack(c, b, c.peer);
  fill(b.loc, p.span, clearedSalt(c.me));
  CK(cudaMemcpy(b.want.get(), b.loc, static_cast<size_t>(p.span), cudaMemcpyDeviceToHost));
  int64_t done = 0;
  if (tether_type_unpack(p.type, p.count, b.packed.get(), 0, p.packed, b.want.get() + p.base, &done) !=
          TETHER_SUCCESS ||
      done != p.packed) {
    std::fprintf(stderr, "%s: tether_type_unpack (host reference) of %s: %s\n", kProg, p.name.c_str(),
                 tether_type_last_error());
    std::exit(2);
  }
  return compare(c, b, op, p.span);
}

struct Timing {
  tb::Stats us;
  int ops = 0, batches = 0;
  bool budgeted = false;  // fewer ops per batch or batches than the options ask (time budget)
};

// PE 0: a probe call, then the batches (see the file comment). A failed call exits 2.
Timing timeCalls(Ctx& c, const std::function<tether_status_t()>& call, int64_t bytes) {
  auto failed = [&](const char* which) {
    std::fprintf(stderr, "%s: %s: %s failed: %s\n", kProg, c.what.load(), which, tether_last_error());
    std::exit(2);
  };
  arm(c, 0);
  const double t0 = tb::nowSeconds();
  if (call() != TETHER_SUCCESS) failed("the call");
  if (tether_quiet(c.w) != TETHER_SUCCESS) failed("tether_quiet");
  const double probe = tb::nowSeconds() - t0;
  disarm(c);
  Timing t;
  t.ops = tb::opsPerBatch(c.o, static_cast<size_t>(bytes));
  t.batches = c.o.batches;
  int warmup = c.o.warmup;
  if (probe * t.ops * (warmup + t.batches) > c.x.budget) {  // the probe was the warm-up
    t.budgeted = true;
    warmup = 0;
    t.ops = std::max(1, std::min(t.ops, static_cast<int>(c.x.budget / (probe * t.batches))));
    if (t.ops == 1) t.batches = std::max(1, std::min(t.batches, static_cast<int>(c.x.budget / probe)));
  }
  int batch = 0;
  std::vector<double> samples;
  const bool ok = tb::measure(warmup, t.batches, t.ops, [&](int n) {
    arm(c, ++batch);
    for (int i = 0; i < n; ++i)
      if (call() != TETHER_SUCCESS) return false;
    const bool quiet = tether_quiet(c.w) == TETHER_SUCCESS;
    disarm(c);
    return quiet;
  }, &samples);
  if (!ok) failed("a timed call");
  t.us = tb::computeStats(samples);
  return t;
}

std::string num(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.6g", v);
  return s;
}

// One table line and one JSON line (PE 0). t == nullptr: not measured (the note says why).
void report(Ctx& c, const Bufs& b, Op op, const std::string& route, int64_t runs, const Timing* t, bool valid,
            const std::string& note) {
  const tb::Pattern& p = b.p;
  const double gbs = t && t->us.median > 0 ? static_cast<double>(p.packed) / (t->us.median * 1e3) : -1;
  const long iters = t ? static_cast<long>(t->ops) * t->batches : 0;
  ++c.rows;
  if (t)
    std::fprintf(c.table, "%-15s %-5s %-16s %-6s %11lld %10.2f %10.2f %8.2f %7ld  %s%s\n", p.name.c_str(),
                 p.size.c_str(), opName(op), route.c_str(), static_cast<long long>(p.packed), t->us.median,
                 t->us.min, gbs, iters, valid ? "" : "DATA WRONG; ", note.c_str());
  else
    std::fprintf(c.table, "%-15s %-5s %-16s %-6s %11lld %10s %10s %8s %7d  %s\n", p.name.c_str(), p.size.c_str(),
                 opName(op), route.c_str(), static_cast<long long>(p.packed), "-", "-", "-", 0, note.c_str());
  std::fflush(c.table);
  if (!c.json) return;
  std::fprintf(c.json,
               "{\"record\":\"row\",\"bench\":\"rma_typed\",\"impl\":\"tether\",\"route\":%s,\"op\":%s,"
               "\"pattern\":%s,\"family\":%s,\"size\":%s,\"bytes\":%lld,\"blocks\":%zu,\"remote_runs\":%lld,"
               "\"iters\":%ld,\"batches\":%d,\"ops_per_batch\":%d,\"us_median\":%s,\"us_min\":%s,\"us_p90\":%s,"
               "\"GBps\":%s,\"valid\":%s,\"note\":%s,\"pes\":2,\"host\":%s,\"date\":%s}\n",
               tb::jsonString(route).c_str(), tb::jsonString(opName(op)).c_str(), tb::jsonString(p.name).c_str(),
               tb::jsonString(p.family).c_str(), tb::jsonString(p.size).c_str(), static_cast<long long>(p.packed),
               p.blocks.size(), static_cast<long long>(runs), iters, t ? t->batches : 0, t ? t->ops : 0,
               t ? num(t->us.median).c_str() : "null", t ? num(t->us.min).c_str() : "null",
               t ? num(t->us.p90).c_str() : "null", gbs > 0 ? num(gbs).c_str() : "null",
               t ? (valid ? "true" : "false") : "null", tb::jsonString(note).c_str(),
               tb::jsonString(c.info.host).c_str(), tb::jsonString(c.info.date).c_str());
  std::fflush(c.json);
}

// What the row's calls do on this route (the table's note).
std::string routeNote(const std::string& route, Op op, int64_t runs) {
  const bool direct = route == "direct";
  switch (op) {
    case Op::Putmem: return "contiguous tether_put of the packed bytes (ceiling)";
    case Op::PutContig:
      return direct ? "one engine pack into the peer's memory" : "local pack + one contiguous put per staging fragment";
    case Op::PutTyped:
      return direct ? "pack + unpack into the peer's memory through GPU staging"
                    : "local pack + " + std::to_string(runs) + " contiguous puts (runs of the target)";
    default:
      return direct ? "pack out of the peer's memory + unpack through GPU staging"
                    : std::to_string(runs) + " contiguous gets (runs of the source) + local unpack";
  }
}

// One row on both PEs: prepare the buffers, PE 0 times the calls, the target's holder validates, PE 0 reports.
void row(Ctx& c, Bufs& b, Op op) {
  if (!tb::wantsOp(c.o, opName(op))) return;
  const tb::Pattern& p = b.p;
  const int64_t runs = op == Op::PutTyped || op == Op::GetTyped ? b.runs : 1;
  // The route of this row's calls, as the library decides it (PE 0 asks; both PEs need it to skip alike).
  std::string route = op == Op::Putmem ? "-" : c.route;
  if (op == Op::PutTyped || op == Op::GetTyped) {
    const char* r = "?";
    if (c.me == 0) {
      unsigned char* base = b.loc + b.p.base;
      unsigned char* symBase = b.sym + b.p.base;
      TK(op == Op::PutTyped ? tether_typed_route(c.w, 1, symBase, b.p.type, b.p.count, base, b.p.type, b.p.count, 1, &r)
                            : tether_typed_route(c.w, 0, base, b.p.type, b.p.count, symBase, b.p.type, b.p.count, 1, &r));
    }
    int64_t staged[2];
    exchange(c, std::strcmp(r, "staged") == 0 ? 1 : 0, staged);
    route = staged[0] ? "staged" : "direct";
  }
  if (route == "staged" && op != Op::Putmem && runs > c.x.maxRuns) {
    if (c.me == 0)
      report(c, b, op, route, runs, nullptr, true,
             "not measured: the staged route would make " + std::to_string(runs) +
                 " contiguous transfers per call (> --max-runs " + std::to_string(c.x.maxRuns) + ")");
    return;
  }
  // Sources hold their PE's pattern, targets are cleared (put: PE 1's buffers; get: PE 0's local one).
  if (c.me == 0) {
    if (op == Op::Putmem) fill(b.locPacked, p.packed, sourceSalt(0));
    else fill(b.loc, p.span, op == Op::GetTyped ? clearedSalt(0) : sourceSalt(0));
  } else {
    if (op == Op::PutTyped || op == Op::GetTyped)
      fill(b.sym, p.span, op == Op::GetTyped ? sourceSalt(1) : clearedSalt(1));
    else
      fill(b.symPacked, p.packed + kGuard, clearedSalt(1));
  }
  TK(tether_barrier_all(c.w));
  Timing t;
  if (c.me == 0) {
    c.whats.push_back(p.name + " " + p.size + " " + opName(op) + " (route " + route + ", " +
                      std::to_string(p.packed) + " B)");
    c.what = c.whats.back().c_str();
    tether_t w = c.w;
    unsigned char* base = b.loc + p.base;
    unsigned char* symBase = b.sym + p.base;
    std::function<tether_status_t()> call;
    switch (op) {
      case Op::Putmem:
        call = [&] { return tether_put(w, b.symPacked, b.locPacked, static_cast<size_t>(p.packed), 1); };
        break;
      case Op::PutContig:
        call = [&] { return tether_put_typed(w, b.symPacked, c.bytes1, p.packed, base, p.type, p.count, 1); };
        break;
      case Op::PutTyped:
        call = [&] { return tether_put_typed(w, symBase, p.type, p.count, base, p.type, p.count, 1); };
        break;
      case Op::GetTyped:
        call = [&] { return tether_get_typed(w, base, p.type, p.count, symBase, p.type, p.count, 1); };
        break;
    }
    t = timeCalls(c, call, p.packed);
  }
  TK(tether_barrier_all(c.w));
  const int holder = op == Op::GetTyped ? 0 : 1;
  const int64_t wrong = c.me == holder ? validate(c, b, op) : 0;
  if (wrong) ++c.failures;
  int64_t verdict[2];
  exchange(c, wrong, verdict);
  if (c.me != 0) return;
  std::string note = routeNote(route, op, runs);
  if (t.budgeted)
    note += "; time budget: " + std::to_string(t.ops) + " calls x " + std::to_string(t.batches) + " batches";
  report(c, b, op, route, runs, &t, verdict[holder] == 0, note);
}

void runPattern(Ctx& c, const tb::Recipe& rc, tb::Size z) {
  Bufs b;
  try {
    b.p = rc.make(z, 1);
  } catch (const std::exception& e) {  // the same on both PEs
    ++c.failures;
    std::fprintf(stderr, "%s[PE %d]: %s %s: building the pattern failed: %s\n", kProg, c.me, rc.name.c_str(),
                 tb::sizeName(z), e.what());
    return;
  }
  tb::Pattern& p = b.p;
  int64_t end = -1;
  for (const tb::Block& k : p.blocks) {
    if (k.offset != end) ++b.runs;
    end = k.offset + k.bytes;
  }
  b.hostLen = std::max(p.span, p.packed + kGuard);
  void* q = nullptr;
  for (unsigned char** at : {&b.sym, &b.symPacked}) {
    const size_t n = static_cast<size_t>(at == &b.sym ? p.span : p.packed + kGuard);
    if (tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, n, &q) != TETHER_SUCCESS) {
      std::fprintf(stderr, "%s: %s %s: %zu bytes of the DEVICE heap: %s (TETHER_DEVICE_HEAP_SIZE=4G suits the large "
                   "size)\n", kProg, p.name.c_str(), p.size.c_str(), n, tether_last_error());
      std::exit(2);
    }
    *at = static_cast<unsigned char*>(q);
  }
  // The local buffers must fit on both PEs' GPUs, else both skip the pattern.
  size_t freeB = 0, totalB = 0;
  CK(cudaMemGetInfo(&freeB, &totalB));
  const int64_t need = b.hostLen + p.packed + (int64_t{256} << 20);
  int64_t fits[2];
  exchange(c, static_cast<int64_t>(freeB) >= need ? 1 : 0, fits);
  if (fits[0] && fits[1]) {
    CK(cudaMalloc(&b.loc, static_cast<size_t>(b.hostLen)));
    CK(cudaMalloc(&b.locPacked, static_cast<size_t>(p.packed)));
    b.got.reset(new unsigned char[static_cast<size_t>(b.hostLen)]);
    b.want.reset(new unsigned char[static_cast<size_t>(b.hostLen)]);
    b.packed.reset(new unsigned char[static_cast<size_t>(p.packed)]);
    if (c.me == 0)
      std::fprintf(c.table, "# %s %s (%s: %s): %lld packed bytes in %zu blocks (mean %.1f B), %lld runs; span %lld B\n",
                   p.name.c_str(), p.size.c_str(), p.family.c_str(), p.note.c_str(),
                   static_cast<long long>(p.packed), p.blocks.size(),
                   p.blocks.empty() ? 0.0 : static_cast<double>(p.packed) / static_cast<double>(p.blocks.size()),
                   static_cast<long long>(b.runs), static_cast<long long>(p.span));
    for (Op op : {Op::Putmem, Op::PutContig, Op::PutTyped, Op::GetTyped}) row(c, b, op);
    CK(cudaFree(b.loc));
    CK(cudaFree(b.locPacked));
  } else if (c.me == 0) {
    std::fprintf(c.table, "# %s %s: skipped: a PE's GPU has less than %lld MiB free for the local buffers\n",
                 p.name.c_str(), p.size.c_str(), static_cast<long long>(need >> 20));
  }
  TK(tether_free(c.w, b.sym));
  TK(tether_free(c.w, b.symPacked));
  tb::freePattern(p);
}

// ---- header ---------------------------------------------------------------------------------------------------------

void printHeader(Ctx& c, const std::vector<std::string>& names, int dev0, int dev1) {
  std::string sizes, pats;
  for (tb::Size z : c.x.sizes) sizes += std::string(sizes.empty() ? "" : ",") + tb::sizeName(z);
  for (const std::string& n : names) pats += (pats.empty() ? "" : ",") + n;
  std::fprintf(c.table, "# %s: non-contiguous put/get between 2 GPUs (issue #7), route %s (TETHER_DT_RMA=%s%s)\n",
               kProg, c.route.c_str(), c.mode.c_str(),
               c.mode != "staged" && c.route == "staged" ? ": the peer's GPU memory is not reachable, the library stages"
               : c.mode == "auto" ? "; typed-to-typed rows: the route the cost model chose" : "");
  std::fprintf(c.table, "# %s, PE 0 on GPU %d, PE 1 on GPU %d, path %s, DEVICE segments; host %s; date %s\n",
               c.gpu.c_str(), dev0, dev1, c.path.c_str(), c.info.host.c_str(), c.info.date.c_str());
  std::fprintf(c.table, "# command: %s\n", c.info.commandLine.c_str());
  std::fprintf(c.table,
               "# patterns %s; sizes %s; k = min(%d, %s / packed bytes) calls + one tether_quiet per batch, %d "
               "batches after %d warm-up; time budget %.3g s per row; staged rows up to %lld runs\n",
               pats.c_str(), sizes.c_str(), c.o.iters, tb::formatSize(c.o.batchBytes).c_str(), c.o.batches,
               c.o.warmup, c.x.budget, c.x.maxRuns);
  std::fprintf(c.table, "# us = steady_clock per blocking call (batch / k), median and min over batches; GB/s = packed "
                        "bytes / median; every row data-checked\n");
  std::fprintf(c.table, "%-15s %-5s %-16s %-6s %11s %10s %10s %8s %7s  %s\n", "pattern", "size", "op", "route",
               "bytes", "us", "min", "GB/s", "iters", "note");
  std::fflush(c.table);
  if (c.json)
    std::fprintf(c.json,
                 "{\"record\":\"run\",\"bench\":\"rma_typed\",\"impl\":\"tether\",\"route\":%s,\"route_mode\":%s,"
                 "\"path\":%s,\"gpu\":%s,\"host\":%s,\"cpu\":%s,\"cpus\":%d,\"date\":%s,\"command\":%s,\"pes\":2,"
                 "\"patterns\":%s,\"sizes\":%s,\"iters\":%d,\"batch_bytes\":%zu,\"batches\":%d,\"warmup\":%d,"
                 "\"budget_s\":%s,\"max_runs\":%lld,\"quick\":%s}\n",
                 tb::jsonString(c.route).c_str(), tb::jsonString(c.mode).c_str(), tb::jsonString(c.path).c_str(),
                 tb::jsonString(c.gpu + (dev0 == dev1 ? " (one, shared)" : " x2")).c_str(),
                 tb::jsonString(c.info.host).c_str(),
                 tb::jsonString(c.info.cpu).c_str(), c.info.cpus, tb::jsonString(c.info.date).c_str(),
                 tb::jsonString(c.info.commandLine).c_str(), tb::jsonString(pats).c_str(),
                 tb::jsonString(sizes).c_str(), c.o.iters, c.o.batchBytes, c.o.batches, c.o.warmup,
                 num(c.x.budget).c_str(), c.x.maxRuns, c.o.quick ? "true" : "false");
}

const char* kExtraUsage =
    "tether_bench_rma_typed: non-contiguous put/get between two GPUs (issue #7); 2 PEs, one GPU each, DEVICE heap\n"
    "  rows (--ops): putmem (contiguous ceiling), put_typed_contig, put_typed, get_typed\n"
    "  --only P,Q,...   patterns of bench/datatype/patterns.h ('all': every one; default nas_lu_x, nas_mg_x,\n"
    "                   nas_mg_y, wrf_y_vec, milc_su3_zdown, fft2d, lammps_full, specfem3d_oc, nbody_struct)\n"
    "  --sizes LIST     small and/or large (default small,large; --quick: small)\n"
    "  --budget SEC     calls of one row beyond the probe (default 10; --quick 1): fewer calls per batch, then\n"
    "                   fewer batches (the note says so)\n"
    "  --max-runs N     staged route: a typed row whose remote type has more memory runs (one contiguous put/get\n"
    "                   each) is not measured (default 600000; --quick 30000)\n"
    "  --min-size, --max-size and --window are not used here\n"
    "  route: TETHER_DT_RMA=auto (direct where the peer's memory is reachable; typed-to-typed rows by the cost model),\n"
    "  direct or staged; run once per mode\n"
    "  heap: TETHER_DEVICE_HEAP_SIZE=4G for the large size (the small one fits 1G)\n"
    "  watchdog: a batch running longer than RMA_BENCH_TIMEOUT (else STREAM_BENCH_TIMEOUT) seconds, default 120,\n"
    "            exits 3; TETHER_TIMEOUT must exceed the longest row (PE 1 waits in a barrier)\n"
    "  exit: 0 ok, 1 wrong data, 2 failed call or bad usage, 3 stalled batch, 77 no GPU\n";

}  // namespace

int main(int argc, char** argv) {
  Ctx c;
  std::string err;
  std::vector<char*> rest;
  if (!takeExtra(argc, argv, &rest, &c.x, &err) ||
      !tb::parseOptions(static_cast<int>(rest.size()) - 1, rest.data(), &c.o, &err)) {
    std::fprintf(stderr, "%s\n%s", err.c_str(), tb::usage(argv[0], kExtraUsage).c_str());
    return 2;
  }
  if (c.o.help) {
    std::printf("%s", tb::usage(argv[0], kExtraUsage).c_str());
    return 0;
  }
  c.o.argv.assign(argv, argv + argc);  // the whole command line for the record
  if (c.x.sizes.empty()) c.x.sizes = c.o.quick ? std::vector<tb::Size>{tb::Size::small}
                                                : std::vector<tb::Size>{tb::Size::small, tb::Size::large};
  if (c.x.budget < 0) c.x.budget = c.o.quick ? 1 : 10;
  if (c.x.maxRuns < 0) c.x.maxRuns = c.o.quick ? 30000 : 600000;
  const std::vector<tb::Recipe> recipes = tb::recipes();
  std::vector<std::string> names;
  if (c.x.only.empty()) names.assign(std::begin(kDefaultPatterns), std::end(kDefaultPatterns));
  for (const std::string& n : c.x.only) {
    if (n == "all") {
      for (const tb::Recipe& r : recipes) names.push_back(r.name);
      continue;
    }
    if (std::none_of(recipes.begin(), recipes.end(), [&](const tb::Recipe& r) { return r.name == n; })) {
      std::fprintf(stderr, "%s: --only: unknown pattern '%s'; known:", kProg, n.c_str());
      for (const tb::Recipe& r : recipes) std::fprintf(stderr, " %s", r.name.c_str());
      std::fprintf(stderr, "\n");
      return 2;
    }
    names.push_back(n);
  }
  const char* modeEnv = std::getenv("TETHER_DT_RMA");
  c.mode = modeEnv && *modeEnv ? modeEnv : "auto";
  if (c.mode != "auto" && c.mode != "direct" && c.mode != "staged") {
    std::fprintf(stderr, "%s: TETHER_DT_RMA='%s': expected auto, direct or staged\n", kProg, c.mode.c_str());
    return 2;
  }

  TK(tether_init(&c.w));
  c.me = tether_my_pe(c.w);
  c.peer = 1 - c.me;
  if (tether_n_pes(c.w) != 2) {
    if (c.me == 0) std::fprintf(stderr, "%s needs exactly 2 PEs (tetherrun -n 2)\n", kProg);
    TK(tether_finalize(c.w));
    return 2;
  }
  void* q = nullptr;
  TK(tether_malloc_kind(c.w, TETHER_SEG_HOST, 64, 64, &q));
  c.xchg = static_cast<int64_t*>(q);
  // A GPU on every PE, else all skip (77) together.
  int ndev = 0;
  const bool haveGpu = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
  cudaGetLastError();
  int64_t gpus[2];
  exchange(c, haveGpu ? 1 : 0, gpus);
  if (!gpus[0] || !gpus[1]) {
    if (c.me == 0)
      std::printf("SKIP: no GPU visible on %s (%s needs one GPU per PE)\n",
                  !gpus[0] && !gpus[1] ? "both PEs" : (!gpus[0] ? "PE 0" : "PE 1"), kProg);
    std::fflush(stdout);
    TK(tether_finalize(c.w));
    return 77;
  }
  // The GPU tether_init chose for this PE (the local PE index modulo the visible GPUs, or TETHER_GPU's ordinal).
  int dev = tether_local_pe(c.w) % ndev;
  const char* sel = std::getenv("TETHER_GPU");
  if (sel && *sel >= '0' && *sel <= '9' && std::atoi(sel) < ndev) dev = std::atoi(sel);
  CK(cudaSetDevice(dev));
  {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    c.gpu = prop.name;
  }
  int64_t modes[2], devs[2];
  exchange(c, c.mode == "staged" ? 1 : c.mode == "direct" ? 2 : 0, modes);
  exchange(c, dev, devs);
  if (modes[0] != modes[1]) {
    if (c.me == 0) std::fprintf(stderr, "%s: the PEs were given different TETHER_DT_RMA values\n", kProg);
    TK(tether_finalize(c.w));
    return 2;
  }
  // The route PE 0's calls take: direct when TETHER_DT_RMA=auto and PE 0 addresses PE 1's DEVICE heap.
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, 4096, &q));
  int64_t p2p[2];
  exchange(c, tether_ptr(c.w, q, c.peer) ? 1 : 0, p2p);
  TK(tether_free(c.w, q));
  c.path = p2p[0] ? "p2p" : "no-p2p";
  c.route = c.mode != "staged" && p2p[0] ? "direct" : "staged";
  c.info = tb::collectRunInfo("rma_typed", c.o, 2);
  c.timeoutS = tb::envPositive({"RMA_BENCH_TIMEOUT", "STREAM_BENCH_TIMEOUT"}, 120);
  if (tether_type_basic(TETHER_BASIC_BYTE, &c.bytes1) != TETHER_SUCCESS ||
      tether_type_gpu_calibrate(0, nullptr, 0) != TETHER_SUCCESS) {  // the cost model's table, before any row
    std::fprintf(stderr, "%s: datatype set-up failed: %s\n", kProg, tether_type_last_error());
    return 2;
  }
  if (c.me == 0) {
    if (c.o.jsonPath == "-") {
      c.json = stdout;
      c.table = stderr;
    } else if (!c.o.jsonPath.empty() && !(c.json = std::fopen(c.o.jsonPath.c_str(), "w"))) {
      std::fprintf(stderr, "%s: cannot open --json file '%s'\n", kProg, c.o.jsonPath.c_str());
      return 2;
    }
    printHeader(c, names, static_cast<int>(devs[0]), static_cast<int>(devs[1]));
  }
  c.dog.reset(new tb::Watchdog([&c] { reportStall(c); }));

  const double t0 = tb::nowSeconds();
  for (const tb::Recipe& rc : recipes) {
    if (std::find(names.begin(), names.end(), rc.name) == names.end()) continue;
    for (tb::Size z : c.x.sizes) runPattern(c, rc, z);
  }

  // The validation vote: PE 1's failure count to PE 0.
  int64_t fails[2];
  exchange(c, c.failures, fails);
  const bool ok = fails[0] == 0 && fails[1] == 0;
  if (c.me == 0) {
    std::fprintf(c.table, "# %d rows in %.0f s\n", c.rows, tb::nowSeconds() - t0);
    std::fprintf(c.table, ok ? "# all data validated\n" : "# data validation FAILED (see stderr)\n");
    std::fflush(c.table);
  }
  if (c.json && c.json != stdout) std::fclose(c.json);
  tether_type_free(&c.bytes1);
  TK(tether_free(c.w, c.xchg));
  TK(tether_finalize(c.w));
  return c.me == 0 ? (ok ? 0 : 1) : (c.failures ? 1 : 0);
}
