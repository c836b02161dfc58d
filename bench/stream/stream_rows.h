// Shared method of the stream-ordered benchmarks: tether_bench_stream (stream_bench.cu, tether's _on_stream calls)
// and tether_bench_nvshmem_stream (bench/nvshmem/nvshmem_stream.cu, NVSHMEM's nvshmemx_*_on_stream calls). Both
// programs include this header from ONE .cu file each, so options, the no-GPU agreement, batch timing, statistics,
// the watchdog, validation, the tables, the JSON lines and the rows both measure (put_on_stream, put_quiet_on_stream,
// put_quiet_sync, put_bw, put_bw_bidir, put_signal_pingpong, barrier_all; the calls come from the program, see "the
// rows both programs measure" below) are the same code. Each program keeps only its calls, its own rows and its own
// start-up. Nothing here names tether's stream API or NVSHMEM; tether's host API is the host coordination of both.
//
// Method (see bench/README.md "stream"): each batch lies between host barriers; `us` = steady_clock from before the
// first enqueue to after the synchronisation / ops, `gpu_us` = CUDA events on the stream around the same work / ops,
// `issue_us` = CPU time spent enqueueing / ops (timeBatches). Statistics are over batches (median, min, p90;
// bench/harness.h). Host coordination (the barriers around every batch, the bidir time exchange, the no-GPU
// agreement, the validation vote) goes through tether's host API in both programs, never inside a timed region. Data
// is checked after every row outside the timed region; wrong data exits 1, a failed call exits 2, no GPU exits 77, and
// a batch that has not finished after STREAM_BENCH_TIMEOUT seconds (default 60) exits 3 after printing the row's
// watched words (a stream wait cannot time out by itself; the watchdog turns such a hang into a diagnosis).
#pragma once

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../cuda_check.h"
#include "harness.h"
#include "tether/tether.h"

namespace streambench {
namespace {

namespace tb = tether_bench;

// ---- kernels (validation only) ------------------------------------------------------------------------------------

// Position- and PE-dependent pattern of the put sources, so a misplaced or foreign chunk shows.
__host__ __device__ __forceinline__ unsigned char patternByte(size_t i, int pe) {
  return static_cast<unsigned char>(((static_cast<uint32_t>(i) * 2654435761u) >> 24) + 17u * static_cast<uint32_t>(pe));
}
__global__ void fillPattern(char* p, size_t n, int pe) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<char>(patternByte(i, pe));
}
__global__ void countWrong(const char* p, size_t n, int pe, unsigned long long* bad) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (static_cast<unsigned char>(p[i]) != patternByte(i, pe)) atomicAdd(bad, 1ull);
}

// ---- context ------------------------------------------------------------------------------------------------------

constexpr size_t kMaxWatch = 8;  // watched words per row (the watchdog's pinned read-back buffer)

// Everything the method needs; the program fills the buffers and the stream after its own start-up (a program may
// derive from it for what only its rows use).
struct Ctx {
  const char* program = "";  // prefix of every message ("tether_bench_stream")
  const char* impl = "";     // JSON "impl" ("tether" | "nvshmem")
  const char* memory = "";   // the header's first line: where buf and words live
  std::string detail;        // when not empty: a '#' line of the header and the run record's "impl_detail"
  tether_t w = nullptr;      // host coordination (barriers, exchange, vote)
  int me = 0, peer = 1;      // peer: pair 1 - me; ring and all-pairs: next = (me + 1) % npes
  // Traffic pattern (bench/README.md "Patterns"); a program that never sets it runs the pair rows on exactly 2 PEs.
  tb::Traffic pattern = tb::Traffic::Pair;
  int npes = 2;
  size_t slotBytes = 0;      // all-pairs: buf holds one slot of maxSize per source PE (sender me writes at me x
                             // slotBytes on every target); else 0 (one source)
  tb::Options o;
  tb::RunInfo info;
  std::string gpu, path;
  cudaStream_t s = nullptr;  // the bench stream: every timed operation goes here
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  char* buf = nullptr;          // symmetric, GPU memory, maxSize: RMA target
  uint64_t* words = nullptr;    // symmetric, GPU memory, 4096 B: signals, counters
  double* xchg = nullptr;       // tether HOST symmetric, 64 + 32 npes B: [4] the no-GPU verdict (startGpu); on PE 0,
                                // per PE p at xchg + 8 + 4 p (peSlot): [0..2] its batch times (timeBatches), [3] its
                                // no-GPU flag (startGpu, before any batch), then its failure count (vote)
  char* local = nullptr;        // cudaMalloc, maxSize: put source (pattern of this PE)
  unsigned long long* bad = nullptr;  // cudaMalloc: wrong-byte counter (validation)
  FILE* json = nullptr;
  long failures = 0;  // validation failures seen on this PE
  // Watchdog: the row in progress and the words it waits on, read back on a stall through `probe` and `probeHost`
  // (made at start-up by makeProbe, or by the watchdog when it fires).
  std::unique_ptr<tb::Watchdog> dog;  // startWatchdog(); armed for each batch and each watched start-up step
  std::atomic<const char*> rowName{""};
  std::atomic<bool> rows{false};  // the batches have begun: a stall is a batch's; e0 and the bench stream tell
  std::vector<std::pair<const char*, const uint64_t*>> watch;  // set before a row's batches start
  cudaStream_t probe = nullptr;
  uint64_t* probeHost = nullptr;  // cudaMallocHost, kMaxWatch words
  int device = 0;
};

// ---- start-up -----------------------------------------------------------------------------------------------------

// The harness options; --max-size defaults to 1G here (unless --quick). false: exit with *rc (usage printed: 0 for
// --help, 2 for bad usage).
bool parseArgs(Ctx& c, int argc, char** argv, const char* extraUsage, int* rc) {
  std::string err;
  if (!tb::parseOptions(argc, argv, &c.o, &err)) {
    std::fprintf(stderr, "%s\n%s", err.c_str(), tb::usage(argv[0], extraUsage).c_str());
    *rc = 2;
    return false;
  }
  if (c.o.help) {
    std::printf("%s", tb::usage(argv[0], extraUsage).c_str());
    *rc = 0;
    return false;
  }
  bool gotMax = false;
  for (int i = 1; i < argc; ++i) gotMax = gotMax || std::strncmp(argv[i], "--max-size", 10) == 0;
  if (!gotMax && !c.o.quick) c.o.maxSize = size_t{1} << 30;
  if (c.o.minSize > c.o.maxSize) c.o.minSize = c.o.maxSize;
  return true;
}

void barrier(Ctx& c) { TK(tether_barrier_all(c.w)); }

bool patterned(const Ctx& c) { return c.pattern != tb::Traffic::Pair; }
// On PE 0: PE pe's exchange words (see Ctx::xchg).
double* peSlot(Ctx& c, int pe) { return c.xchg + 8 + 4 * pe; }

// tether_init; exactly 2 PEs for the pair pattern, 2 .. 256 for ring and all-pairs (all-pairs keeps one signal word per
// source PE in words[256..512)). false: exit with 2 (tether finalized).
bool startPes(Ctx& c) {
  TK(tether_init(&c.w));
  c.me = tether_my_pe(c.w);
  c.npes = tether_n_pes(c.w);
  c.peer = tb::patternTarget(c.pattern, c.me, 0, c.npes);
  if (!patterned(c) && c.npes != 2) {
    if (c.me == 0) std::fprintf(stderr, "%s needs exactly 2 PEs (tetherrun -n 2)\n", c.program);
    TK(tether_finalize(c.w));
    return false;
  }
  if (patterned(c) && (c.npes < 2 || c.npes > 256)) {
    if (c.me == 0)
      std::fprintf(stderr, "%s --pattern %s needs 2 to 256 PEs (got %d)\n", c.program, tb::patternName(c.pattern),
                   c.npes);
    TK(tether_finalize(c.w));
    return false;
  }
  if (c.pattern == tb::Traffic::AllPairs) c.slotBytes = c.o.maxSize;
  return true;
}

// No GPU on any PE: skip on every PE (false: exit with 77, tether finalized). The PEs agree through a HOST word on
// PE 0. Otherwise this PE's GPU = tether_local_pe % device count; fills device, info and gpu.
bool startGpu(Ctx& c) {
  int ndev = 0;
  const bool haveGpu = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
  {
    void* p = nullptr;
    TK(tether_malloc_kind(c.w, TETHER_SEG_HOST, 64, 64 + 32 * static_cast<size_t>(c.npes), &p));
    c.xchg = static_cast<double*>(p);
    double mine = haveGpu ? 0 : 1, any = 0;
    TK(tether_put(c.w, peSlot(c, c.me) + 3, &mine, sizeof mine, 0));
    barrier(c);
    if (c.me == 0) {
      for (int pe = 0; pe < c.npes; ++pe) any += peSlot(c, pe)[3];
      for (int pe = 1; pe < c.npes; ++pe) TK(tether_put(c.w, c.xchg + 4, &any, sizeof any, pe));  // PE 0 tells
    }
    barrier(c);
    if (c.me != 0) any = c.xchg[4];
    if (any != 0) {
      if (c.me == 0) std::printf("SKIP: no GPU visible on %s (%s needs one GPU per PE)\n",
                                 any == c.npes ? (c.npes == 2 ? "both PEs" : "every PE") : (any == 1 ? "one PE" : "some PEs"),
                                 c.program);
      std::fflush(stdout);  // before finalize: tetherrun stops the other PE once one has exited
      TK(tether_finalize(c.w));
      return false;
    }
  }
  CK(cudaSetDevice(tether_local_pe(c.w) % ndev));
  CK(cudaGetDevice(&c.device));
  c.info = tb::collectRunInfo("stream", c.o, c.npes);
  if (patterned(c)) c.info.pattern = tb::patternName(c.pattern);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, c.device));
  c.gpu = prop.name;
  return true;
}

// PE 0, --json: the JSON file ('-': JSON lines to stdout, the tables to stderr, as the harness's programs do).
void openJson(Ctx& c) {
  if (c.me != 0 || c.o.jsonPath.empty()) return;
  if (c.o.jsonPath == "-") {
    std::fflush(stdout);
    c.json = fdopen(dup(STDOUT_FILENO), "w");
    dup2(STDERR_FILENO, STDOUT_FILENO);
  } else {
    c.json = std::fopen(c.o.jsonPath.c_str(), "w");
  }
  if (!c.json) std::fprintf(stderr, "cannot open %s; no JSON lines\n", c.o.jsonPath.c_str());
}

// ---- watchdog -----------------------------------------------------------------------------------------------------

double benchTimeout() { return tb::envPositive({"STREAM_BENCH_TIMEOUT"}, 60); }

// The watchdog's read-back stream and pinned buffer; probeHost is set only when both were made.
cudaError_t makeProbe(Ctx& c) {
  uint64_t* host = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&c.probe, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMallocHost(&host, 8 * kMaxWatch);
  if (e == cudaSuccess) c.probeHost = host;
  return e;
}

// Names the row for the watchdog and the words it may wait on.
void watchRow(Ctx& c, const char* row, std::vector<std::pair<const char*, const uint64_t*>> words = {}) {
  c.rowName = row;
  c.watch = std::move(words);
}

// What a stall prints (bench/harness.h Watchdog, which then exits with 3): the row, the words it waits on (each read
// back through the probe stream, bounded), and for a batch whether it started. Before the batches begin (rows false)
// the deadline is a start-up step's, named by rowName.
void reportStall(Ctx& c) {
  if (c.rows)
    std::fprintf(stderr, "%s[PE %d]: row %s: a batch has not finished after %.0f s: stalled\n", c.program, c.me,
                 c.rowName.load(), benchTimeout());
  else
    std::fprintf(stderr, "%s[PE %d]: %s: not finished after its deadline (STREAM_BENCH_TIMEOUT %.0f s): stalled\n",
                 c.program, c.me, c.rowName.load(), benchTimeout());
  cudaSetDevice(c.device);
  if (c.probeHost != nullptr || makeProbe(c) == cudaSuccess) {
    const size_t n = std::min(c.watch.size(), kMaxWatch);
    for (size_t i = 0; i < n; ++i)
      cudaMemcpyAsync(c.probeHost + i, c.watch[i].second, 8, cudaMemcpyDefault, c.probe);
    const double until = tb::nowSeconds() + 2;
    while (cudaStreamQuery(c.probe) == cudaErrorNotReady && tb::nowSeconds() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool read = cudaStreamQuery(c.probe) == cudaSuccess;
    for (size_t i = 0; i < n; ++i) {
      if (read)
        std::fprintf(stderr, "%s[PE %d]:   %s = %llu\n", c.program, c.me, c.watch[i].first,
                     static_cast<unsigned long long>(c.probeHost[i]));
      else
        std::fprintf(stderr, "%s[PE %d]:   %s: not readable (the copy did not finish in 2 s)\n", c.program, c.me,
                     c.watch[i].first);
    }
  }
  if (c.rows)
    std::fprintf(stderr, "%s[PE %d]:   batch start event %s; the bench stream %s\n", c.program, c.me,
                 cudaEventQuery(c.e0) == cudaSuccess ? "reached" : "not reached",
                 cudaStreamQuery(c.s) == cudaSuccess ? "is idle" : "has work pending");
}

// Starts the watchdog (disarmed). PEs other than 0 report a little later: PE 0 leads the timed rows, and tetherrun
// stops the other PEs once one has exited.
void startWatchdog(Ctx& c) {
  c.dog.reset(new tb::Watchdog([&c] { reportStall(c); }, c.me != 0 ? 4 : 0));
}

// ---- validation ---------------------------------------------------------------------------------------------------

void syncStream(Ctx& c) { CK(cudaStreamSynchronize(c.s)); }

void clearDev(Ctx& c, void* p, size_t n) {
  CK(cudaMemsetAsync(p, 0, n, c.s));
  syncStream(c);
}
// This PE's pattern into c.local (maxSize bytes), on the bench stream.
void fillLocal(Ctx& c) {
  fillPattern<<<264, 1024, 0, c.s>>>(c.local, c.o.maxSize, c.me);
  CK(cudaGetLastError());
  syncStream(c);
}
void fail(Ctx& c, const char* row, size_t bytes, const std::string& what) {
  ++c.failures;
  std::fprintf(stderr, "%s[PE %d]: data validation FAILED: %s %zu B: %s\n", c.program, c.me, row, bytes,
               what.c_str());
}
// This PE's p[0..n) must hold PE `from`'s pattern.
void checkBytes(Ctx& c, const char* p, size_t n, int from, const char* row) {
  unsigned long long wrong = 0;
  CK(cudaMemsetAsync(c.bad, 0, sizeof wrong, c.s));
  countWrong<<<264, 1024, 0, c.s>>>(p, n, from, c.bad);
  CK(cudaGetLastError());
  CK(cudaMemcpyAsync(&wrong, c.bad, sizeof wrong, cudaMemcpyDeviceToHost, c.s));
  syncStream(c);
  if (wrong) fail(c, row, n, std::to_string(wrong) + " of " + std::to_string(n) + " bytes wrong");
}
uint64_t readWord(Ctx& c, const uint64_t* w) {
  uint64_t v = 0;
  CK(cudaMemcpyAsync(&v, w, sizeof v, cudaMemcpyDeviceToHost, c.s));
  syncStream(c);
  return v;
}
void checkWord(Ctx& c, const uint64_t* w, uint64_t expect, const char* row, const char* what) {
  const uint64_t v = readWord(c, w);
  if (v != expect)
    fail(c, row, 8, std::string(what) + " is " + std::to_string(v) + ", expected " + std::to_string(expect));
}

// Validation vote: every other PE's failure count to PE 0, which prints the verdict; closes the JSON file. true: every
// PE's data was right (exit 0, else 1).
bool vote(Ctx& c) {
  double mine = static_cast<double>(c.failures), others = 0;
  if (c.me != 0) TK(tether_put(c.w, peSlot(c, c.me) + 3, &mine, sizeof mine, 0));
  barrier(c);
  if (c.me == 0)
    for (int pe = 1; pe < c.npes; ++pe) others += peSlot(c, pe)[3];
  const bool ok = c.failures == 0 && others == 0;
  if (c.me == 0) std::printf(ok ? "\n# all data validated\n" : "\n# data validation FAILED (see stderr)\n");
  if (c.json) std::fclose(c.json);
  c.json = nullptr;
  return ok;
}

// After the rows: the bench stream, its events and the local buffers (the program frees what else it made).
void freeCuda(Ctx& c) {
  CK(cudaEventDestroy(c.e0));
  CK(cudaEventDestroy(c.e1));
  CK(cudaStreamDestroy(c.s));
  CK(cudaFree(c.local));
  CK(cudaFree(c.bad));
}

// ---- output -------------------------------------------------------------------------------------------------------

std::string num(double v) {
  char b[48];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// ,"pattern":...,"npes":n for the JSON lines of a ring or all-pairs run; "" for pair runs (their lines are as before).
std::string patternFields(const Ctx& c) {
  if (!patterned(c)) return "";
  return ",\"pattern\":" + tb::jsonString(tb::patternName(c.pattern)) + ",\"npes\":" + std::to_string(c.npes);
}

// PE 0: the '#' lines above the tables and the JSON run record.
void printHeader(Ctx& c) {
  if (c.me != 0) return;
  std::printf("# %s: %s x%d (PE 0: %s), path %s, %s\n", c.program, c.gpu.c_str(), c.npes, c.info.host.c_str(),
              c.path.c_str(), c.memory);
  if (patterned(c))
    std::printf("# pattern %s over %d PEs (bench/README.md \"Patterns\"): every PE issues at once, %s; tables of the "
                "rows put_on_stream, put_quiet_on_stream, put_quiet_sync, put_bw, put_signal_pingpong, barrier_all "
                "(the others run with --pattern pair only)\n",
                tb::patternName(c.pattern), c.npes,
                c.pattern == tb::Traffic::Ring ? "to next = (me + 1) % n"
                                               : "to all n - 1 others per operation (order (me + 1 + j) % n)");
  if (!c.detail.empty()) std::printf("# %s\n", c.detail.c_str());
  std::printf("# date %s; command: %s\n", c.info.date.c_str(), c.info.commandLine.c_str());
  std::printf("# iters %d, batches %d, warm-up %d, sizes %s..%s; us = steady_clock per op (enqueue to sync), "
              "gpu_us = CUDA events per op, issue_us = CPU enqueue time per op; median over batches\n",
              c.o.iters, c.o.batches, c.o.warmup, tb::formatSize(c.o.minSize).c_str(),
              tb::formatSize(c.o.maxSize).c_str());
  if (c.json) {
    const std::string detail = c.detail.empty() ? "" : ",\"impl_detail\":" + tb::jsonString(c.detail);
    std::fprintf(c.json,
                 "{\"record\":\"run\",\"bench\":\"stream\",\"impl\":\"%s\"%s,\"host\":%s,\"cpu\":%s,\"cpus\":%d,"
                 "\"gpu\":%s,\"date\":%s,\"command\":%s,\"pes\":%d,\"path\":%s,\"iters\":%d,\"batches\":%d,"
                 "\"warmup\":%d,\"min_size\":%zu,\"max_size\":%zu,\"quick\":%s%s}\n",
                 c.impl, detail.c_str(), tb::jsonString(c.info.host).c_str(), tb::jsonString(c.info.cpu).c_str(),
                 c.info.cpus, tb::jsonString(c.gpu + " x" + std::to_string(c.npes)).c_str(),
                 tb::jsonString(c.info.date).c_str(), tb::jsonString(c.info.commandLine).c_str(), c.npes,
                 tb::jsonString(c.path).c_str(), c.o.iters, c.o.batches, c.o.warmup, c.o.minSize, c.o.maxSize,
                 c.o.quick ? "true" : "false", patternFields(c).c_str());
  }
}
void beginTable(Ctx& c, const std::string& title) {
  if (c.me != 0) return;
  const std::string t = patterned(c) ? tb::patternTitle(c.pattern, c.npes).substr(1) + " " + title : title;
  std::printf("\n# %s\n%-22s %12s %10s %10s %10s %10s %10s %10s %9s\n", t.c_str(), "op", "bytes", "us", "min",
              "p90", "gpu_us", "issue_us", "GB/s", "iters");
}

struct Result {
  tb::Stats wall, gpu, issue;  // per op, µs
  long iters = 0;
};

// One table line and one JSON line (PE 0). bytesPerOp > 0 with bw: GB/s = bytesPerOp / gpu median. aggBytesPerOp > 0
// (ring, all-pairs bandwidth rows): the aggregate GB/s = aggBytesPerOp / gpu median, in the note and the JSON.
void report(Ctx& c, const char* op, size_t bytes, const Result& r, double bytesPerOp, const std::string& note0,
            double aggBytesPerOp = 0) {
  if (c.me != 0) return;
  const double bw = bytesPerOp > 0 && r.gpu.median > 0 ? bytesPerOp / (r.gpu.median * 1e3) : -1;
  const double agg = aggBytesPerOp > 0 && r.gpu.median > 0 ? aggBytesPerOp / (r.gpu.median * 1e3) : -1;
  const std::string note = agg >= 0 ? "aggregate " + num(agg) + " GB/s; " + note0 : note0;
  const std::string aggField = agg >= 0 ? ",\"bw_GBps_aggregate\":" + num(agg) : "";
  std::printf("%-22s %12zu %10.3f %10.3f %10.3f %10.3f %10.3f %10s %9ld %s\n", op, bytes, r.wall.median, r.wall.min,
              r.wall.p90, r.gpu.median, r.issue.median, bw >= 0 ? num(bw).c_str() : "-", r.iters, note.c_str());
  std::fflush(stdout);
  if (!c.json) return;
  std::fprintf(c.json,
               "{\"record\":\"row\",\"bench\":\"stream\",\"impl\":\"%s\",\"op\":%s,\"model\":\"stream\","
               "\"path\":%s,\"kinds\":\"D->D\",\"bytes\":%zu,\"iters\":%ld,\"batches\":%zu,\"lat_us_median\":%s,"
               "\"lat_us_min\":%s,\"lat_us_p90\":%s,\"gpu_us_median\":%s,\"issue_us_median\":%s,\"bw_GBps\":%s,"
               "\"pes\":%d%s%s,\"host\":%s,\"date\":%s,\"note\":%s}\n",
               c.impl, tb::jsonString(op).c_str(), tb::jsonString(c.path).c_str(), bytes, r.iters, r.wall.n,
               num(r.wall.median).c_str(), num(r.wall.min).c_str(), num(r.wall.p90).c_str(),
               num(r.gpu.median).c_str(), num(r.issue.median).c_str(), bw >= 0 ? num(bw).c_str() : "null", c.npes,
               patternFields(c).c_str(), aggField.c_str(),
               tb::jsonString(c.info.host).c_str(), tb::jsonString(c.info.date).c_str(),
               tb::jsonString(note).c_str());
  std::fflush(c.json);
}

// ---- timing -------------------------------------------------------------------------------------------------------

// Runs warm-up + timed batches. Every batch lies between host barriers; on PEs with active = true the batch
// enqueues `ops` operations on the stream (enqueue(ops)), then the stream is synchronised. divisor: per-op time =
// batch time / (ops * divisor) (2 for one-way ping-pong). maxOfBoth: PE 0 takes, per batch, the largest of all PEs'
// times (the others send theirs through the HOST exchange words). Samples are PE 0's. Each batch is watched (deadline).
Result timeBatches(Ctx& c, int ops, bool active, double divisor, bool maxOfBoth,
                   const std::function<void(int ops)>& enqueue) {
  std::vector<double> wall, gpu, issue;
  for (int b = 0; b < c.o.warmup + c.o.batches; ++b) {
    c.dog->arm(benchTimeout());
    barrier(c);
    double t[3] = {0, 0, 0};  // wall, gpu, issue (s)
    if (active) {
      const double t0 = tb::nowSeconds();
      CK(cudaEventRecord(c.e0, c.s));
      enqueue(ops);
      CK(cudaGetLastError());
      CK(cudaEventRecord(c.e1, c.s));
      const double t1 = tb::nowSeconds();
      CK(cudaEventSynchronize(c.e1));
      const double t2 = tb::nowSeconds();
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, c.e0, c.e1));
      t[0] = t2 - t0, t[1] = ms * 1e-3, t[2] = t1 - t0;
    }
    if (maxOfBoth) {
      if (c.me != 0) TK(tether_put(c.w, peSlot(c, c.me), t, sizeof t, 0));
      barrier(c);
      if (c.me == 0)
        for (int pe = 1; pe < c.npes; ++pe)
          for (int k = 0; k < 2; ++k) t[k] = std::max(t[k], peSlot(c, pe)[k]);
    }
    c.dog->disarm();
    if (b < c.o.warmup) continue;
    const double per = 1e6 / (ops * divisor);
    wall.push_back(t[0] * per);
    gpu.push_back(t[1] * per);
    issue.push_back(t[2] * per);
  }
  barrier(c);
  Result r;
  r.wall = tb::computeStats(wall);
  r.gpu = tb::computeStats(gpu);
  r.issue = tb::computeStats(issue);
  r.iters = static_cast<long>(ops) * c.o.batches;
  return r;
}

// ---- the rows both programs measure -------------------------------------------------------------------------------
//
// A program supplies its calls as a class, a template argument (so that the calls are inlined into the timed loops as
// if written there). Each call enqueues one operation on c.s; a failed call exits 2:
//   put(c, dest, src, nb, pe)                putmem_on_stream: nb bytes from local src to symmetric dest on PE pe
//   quiet(c)                                 quiet_on_stream
//   putSignal(c, dest, src, nb, sig, v, pe)  putmem_signal_on_stream, signal SET v
//   signalWait(c, sig, v)                    signal_wait_until_on_stream(GE v) on this PE's sig
//   barrierAll(c)                            barrier_all_on_stream
// and, deriving from NoVariant or hiding its members, a second row of the ping-pong table (8 B only): kVariantOp (its
// --ops name; nullptr: none), kVariantNote, variantBegin(c, nb, sig) and variantEnd(c) around its batches (untimed),
// variantTrip(c, seq) one round trip with signal value seq (the same on both PEs).
struct NoVariant {
  static constexpr const char* kVariantOp = nullptr;
  static constexpr const char* kVariantNote = "";
  void variantBegin(Ctx&, size_t, uint64_t*) {}
  void variantTrip(Ctx&, uint64_t) {}
  void variantEnd(Ctx&) {}
};

// ---- ring and all-pairs (bench/README.md "Patterns") ----------------------------------------------------------------
// Every PE runs the row at once: ring to next = (me + 1) % n, all-pairs to all n - 1 others in each operation (one
// message to each, in the order (me + 1 + j) % n). A sender writes into its own slot of buf (all-pairs: offset
// sender x slotBytes; ring: offset 0, one source), so every PE checks what each of its sources sent it. With the pair
// pattern these helpers reduce to the two-PE rows (one put to the peer at offset 0).

int fanout(const Ctx& c) { return tb::patternFanout(c.pattern, c.npes); }
int targetOf(const Ctx& c, int j) { return tb::patternTarget(c.pattern, c.me, j, c.npes); }
char* slotOf(const Ctx& c, int src) { return c.buf + static_cast<size_t>(src) * c.slotBytes; }
// The PEs whose data this PE receives in every-PE rows (ring and pair: prev; all-pairs: every other PE).
std::vector<int> sourcesOf(const Ctx& c) {
  std::vector<int> src;
  for (int pe = 0; pe < c.npes; ++pe)
    for (int j = 0; pe != c.me && j < fanout(c); ++j)
      if (tb::patternTarget(c.pattern, pe, j, c.npes) == c.me) src.push_back(pe);
  return src;
}
// One operation's puts of nb bytes from c.local: one to each target, into this PE's slot.
template <class Calls>
void putToTargets(Ctx& c, Calls& calls, size_t nb) {
  for (int j = 0; j < fanout(c); ++j) calls.put(c, slotOf(c, c.me), c.local, nb, targetOf(c, j));
}
void clearSources(Ctx& c, size_t nb) {
  for (int src : sourcesOf(c)) clearDev(c, slotOf(c, src), nb);
}
void checkSources(Ctx& c, size_t nb, const char* row) {
  for (int src : sourcesOf(c)) checkBytes(c, slotOf(c, src), nb, src, row);
}
// Watchdog names of the all-pairs signal words (one per source PE; the first kMaxWatch are watched).
const char* sourceWordName(int pe) {
  static const char* const names[kMaxWatch] = {"signal word of PE 0", "signal word of PE 1", "signal word of PE 2",
                                               "signal word of PE 3", "signal word of PE 4", "signal word of PE 5",
                                               "signal word of PE 6", "signal word of PE 7"};
  return pe >= 0 && static_cast<size_t>(pe) < kMaxWatch ? names[pe] : "signal word of a PE above 7";
}

// put_on_stream, put_quiet_on_stream, put_quiet_sync: 8 B, PE 0 -> PE 1 (ring, all-pairs: every PE at once, each op
// one put to each target).
template <class Calls>
void rowPutLatency(Ctx& c, Calls& calls) {
  const int k = c.o.iters;
  const bool pat = patterned(c);
  const bool active = pat || c.me == 0, receives = pat || c.me == 1;
  const std::string per = c.pattern == tb::Traffic::AllPairs ? "n - 1 puts (one to each other PE)" : "put";
  beginTable(c, pat ? "8 B puts on a stream, every PE at once; per op = " + per + "; times are PE 0's"
                    : "8 B puts on a stream, PE 0 -> PE 1");
  auto prepare = [&] {
    if (pat) clearSources(c, 8);
    else if (receives) clearDev(c, c.buf, 8);
  };
  auto check = [&](const char* row) {
    if (pat) checkSources(c, 8, row);
    else if (receives) checkBytes(c, c.buf, 8, 0, row);
  };
  if (tb::wantsOp(c.o, "put_on_stream")) {
    watchRow(c, "put_on_stream");
    prepare();
    const Result r = timeBatches(c, k, active, 1, false, [&](int n) {
      for (int i = 0; i < n; ++i) putToTargets(c, calls, 8);
    });
    check("put_on_stream");
    report(c, "put_on_stream", 8, r, 0, "back to back, one sync per batch; per op");
  }
  if (tb::wantsOp(c.o, "put_quiet_on_stream")) {
    watchRow(c, "put_quiet_on_stream");
    prepare();
    const Result r = timeBatches(c, k, active, 1, false, [&](int n) {
      for (int i = 0; i < n; ++i) {
        putToTargets(c, calls, 8);
        calls.quiet(c);
      }
    });
    check("put_quiet_on_stream");
    report(c, "put_quiet_on_stream", 8, r, 0, "put + quiet_on_stream back to back, one sync per batch; per pair");
  }
  if (tb::wantsOp(c.o, "put_quiet_sync")) {
    watchRow(c, "put_quiet_sync");
    prepare();
    const Result r = timeBatches(c, std::max(1, k / 4), active, 1, false, [&](int n) {
      for (int i = 0; i < n; ++i) {
        putToTargets(c, calls, 8);
        calls.quiet(c);
        syncStream(c);
      }
    });
    check("put_quiet_sync");
    report(c, "put_quiet_sync", 8, r, 0, "put + quiet_on_stream + cudaStreamSynchronize per op");
  }
}

// put_bw, put_bw_bidir: k puts of each size + one quiet per batch. Ring, all-pairs: put_bw only, every PE at once
// (each op one put to each target); GB/s per PE and the aggregate over the slowest PE's events.
template <class Calls>
void rowBandwidth(Ctx& c, Calls& calls) {
  if (patterned(c)) {
    if (!tb::wantsOp(c.o, "put_bw")) return;
    const int n1 = fanout(c);
    beginTable(c, std::string("putmem_on_stream, every PE at once ") +
                      (n1 > 1 ? "to all n - 1 others (one put to each per op)" : "to next") +
                      "; k ops + quiet_on_stream per batch; times: the slowest PE's per batch; GB/s per PE = " +
                      (n1 > 1 ? "(n - 1) S" : "S") + " / time per op, aggregate = n x that");
    watchRow(c, "put_bw");
    for (size_t nb : tb::messageSizes(c.o)) {
      const int k = tb::opsPerBatch(c.o, nb);
      clearSources(c, nb);
      const Result r = timeBatches(c, k, true, 1, true, [&](int n) {
        for (int i = 0; i < n; ++i) putToTargets(c, calls, nb);
        calls.quiet(c);
      });
      checkSources(c, nb, "put_bw");
      const double perPe = static_cast<double>(nb) * n1;
      report(c, "put_bw", nb, r, perPe, "per PE", perPe * c.npes);
    }
    return;
  }
  for (int bidir = 0; bidir < 2; ++bidir) {
    const char* op = bidir ? "put_bw_bidir" : "put_bw";
    if (!tb::wantsOp(c.o, op)) continue;
    beginTable(c, bidir ? "putmem_on_stream, PE 0 <-> PE 1 at once; k puts + quiet_on_stream per batch; GB/s = total "
                          "of both directions over the slower PE's events"
                        : "putmem_on_stream, PE 0 -> PE 1; k puts + quiet_on_stream per batch; GB/s from the events");
    watchRow(c, op);
    for (size_t nb : tb::messageSizes(c.o)) {
      const int k = tb::opsPerBatch(c.o, nb);
      const bool active = bidir || c.me == 0;
      const bool receives = bidir || c.me == 1;
      if (receives) clearDev(c, c.buf, nb);
      const Result r = timeBatches(c, k, active, 1, bidir != 0, [&](int n) {
        for (int i = 0; i < n; ++i) calls.put(c, c.buf, c.local, nb, c.peer);
        calls.quiet(c);
      });
      if (receives) checkBytes(c, c.buf, nb, c.peer, op);
      report(c, op, nb, r, static_cast<double>(nb) * (bidir ? 2 : 1), bidir ? "total of both directions" : "");
    }
  }
}

// put_signal all-pairs exchange, every PE per round: put_signal(SET seq) to every other PE (into its slot, on its own
// signal word words[256 + me]), then signal_wait_until(GE seq) on each source's word; k rounds enqueued per batch.
template <class Calls>
void rowSignalExchange(Ctx& c, Calls& calls) {
  if (!tb::wantsOp(c.o, "put_signal_pingpong")) return;
  beginTable(c, "put_signal_pingpong as an exchange: every PE put_signal(SET seq) to every other PE, then "
                "signal_wait_until(GE seq) on each one's word; k rounds enqueued, one sync per batch; per round, PE 0's");
  const char* op = "put_signal_pingpong";
  const std::vector<int> sources = sourcesOf(c);
  uint64_t* sigs = c.words + 256;
  std::vector<std::pair<const char*, const uint64_t*>> watched;
  for (int src : sources)
    if (watched.size() < kMaxWatch) watched.push_back({sourceWordName(src), sigs + src});
  watchRow(c, op, watched);
  for (size_t nb : {size_t{8}, size_t{4} << 10, size_t{64} << 10, size_t{1} << 20}) {
    if (nb > c.o.maxSize) continue;
    const int k = std::max(1, nb >= (64 << 10) ? c.o.iters / 10 : c.o.iters);
    clearSources(c, nb);
    clearDev(c, sigs, 8 * static_cast<size_t>(c.npes));
    barrier(c);
    uint64_t seq = 0;  // the last round enqueued (the same on every PE)
    const Result r = timeBatches(c, k, true, 1, false, [&](int n) {
      for (int i = 0; i < n; ++i) {
        ++seq;
        for (int j = 0; j < fanout(c); ++j)
          calls.putSignal(c, slotOf(c, c.me), c.local, nb, sigs + c.me, seq, targetOf(c, j));
        for (int src : sources) calls.signalWait(c, sigs + src, seq);
      }
    });
    checkSources(c, nb, op);
    for (int src : sources) checkWord(c, sigs + src, seq, op, sourceWordName(src));
    report(c, op, nb, r, 0, "per round of n - 1 put_signals and n - 1 waits");
  }
}

// put_signal_pingpong (8 B, 4 KiB, 64 KiB, 1 MiB) and the program's variant (8 B), one table: PE 0 put_signal then
// wait, PE 1 wait then put_signal, k round trips enqueued on both PEs per batch; one-way = time / 2k. Ring: the same
// pass around the ring (PE 0 starts, each PE waits for prev's signal then signals next), no variant; one hop = time /
// (n k). All-pairs: rowSignalExchange.
template <class Calls>
void rowPingPong(Ctx& c, Calls& calls) {
  if (c.pattern == tb::Traffic::AllPairs) return rowSignalExchange(c, calls);
  const bool plain = tb::wantsOp(c.o, "put_signal_pingpong");
  const bool variant = !patterned(c) && Calls::kVariantOp != nullptr && tb::wantsOp(c.o, Calls::kVariantOp);
  if (!plain && !variant) return;
  beginTable(c, patterned(c) ? "put_signal + signal_wait_until on streams, ring pass: PE 0 put_signal to next then "
                               "waits for prev's, the others wait for prev's then put_signal to next (k rounds "
                               "enqueued, one sync per batch); one hop = round time / n"
                             : "put_signal + signal_wait_until on streams, ping-pong PE 0 <-> PE 1 (k round trips "
                               "enqueued, one sync per batch); one-way = time / 2k");
  const int next = targetOf(c, 0), prev = (c.me + c.npes - 1) % c.npes;  // pair: both the peer
  uint64_t* sig = c.words;
  for (int mode = 0; mode < 2; ++mode) {
    if ((mode == 0 && !plain) || (mode == 1 && !variant)) continue;
    const char* op = mode ? Calls::kVariantOp : "put_signal_pingpong";
    watchRow(c, op, {{"signal word", sig}});
    for (size_t nb : {size_t{8}, size_t{4} << 10, size_t{64} << 10, size_t{1} << 20}) {
      if (nb > c.o.maxSize || (mode == 1 && nb != 8)) continue;
      const int k = std::max(1, nb >= (64 << 10) ? c.o.iters / 10 : c.o.iters);
      clearDev(c, c.buf, nb);
      clearDev(c, sig, 8);
      barrier(c);
      uint64_t seq = 0;  // signal value of the last round trip enqueued (the same on both PEs)
      if (mode == 1) calls.variantBegin(c, nb, sig);
      const Result r = timeBatches(c, k, true, c.npes, false, [&](int n) {
        for (int i = 0; i < n; ++i) {
          ++seq;
          if (mode == 1) {
            calls.variantTrip(c, seq);
          } else if (c.me == 0) {
            calls.putSignal(c, c.buf, c.local, nb, sig, seq, next);
            calls.signalWait(c, sig, seq);
          } else {
            calls.signalWait(c, sig, seq);
            calls.putSignal(c, c.buf, c.local, nb, sig, seq, next);
          }
        }
      });
      if (mode == 1) calls.variantEnd(c);
      checkBytes(c, c.buf, nb, prev, op);
      checkWord(c, sig, seq, op, "final signal");
      report(c, op, nb, r, 0, mode ? Calls::kVariantNote : (patterned(c) ? "one hop" : "one-way"));
    }
  }
}

// barrier_all: k barriers back to back on both PEs (ring, all-pairs: on all PEs).
template <class Calls>
void rowBarrier(Ctx& c, Calls& calls) {
  if (!tb::wantsOp(c.o, "barrier_all")) return;
  beginTable(c, patterned(c) ? "barrier_all_on_stream on all " + std::to_string(c.npes) +
                                   " PEs, k back to back, one sync per batch; PE 0's times"
                             : "barrier_all_on_stream on both PEs, k back to back, one sync per batch");
  watchRow(c, "barrier_all");
  const Result r = timeBatches(c, c.o.iters, true, 1, false, [&](int n) {
    for (int i = 0; i < n; ++i) calls.barrierAll(c);
  });
  report(c, "barrier_all", 0, r, 0, "per barrier");
}

}  // namespace
}  // namespace streambench
