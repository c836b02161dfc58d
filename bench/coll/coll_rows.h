// Shared method of the team-collective benchmarks (issue #21): tether_bench_coll (coll_bench.cu: tether and NCCL)
// and tether_bench_nvshmem_coll (bench/nvshmem/nvshmem_coll.cu: NVSHMEM). Both programs include this header from ONE
// .cu file each, so the rows, sizes, data and its check, timing, the watchdog, the tables and the JSON lines are the
// same code; each program supplies its implementations' calls (an Impl each) and its own start-up. Nothing here names
// tether's collective API, NCCL or NVSHMEM; tether's host API (on HOST memory) is the host coordination of both
// programs (barriers, the agreements on times and iteration counts), never inside a timed region.
//
// Rows (--ops; see bench/README.md "coll"), each in the models of --models (default stream,host,device):
//   allreduce, allgather, reduce_scatter, alltoall, broadcast: per size (--min-size .. --max-size, powers of 2; bytes
//     per rank as nccl-tests count them), float data, sum for the reductions, root 0, out of place, on the world team:
//       model "stream": one call enqueued on the bench's stream (Impl::enqueue);
//       model "host":   one blocking host call, its result in place on return (Impl::host).
//   device_allreduce, device_sync (model "device", implementations that have one): one kernel of 1 block x 256
//     threads makes --iters calls of an 8 B allreduce (2 floats, sum) / a team sync in a loop (Impl::device).
// Method, the same for every implementation: per (op, size, impl, model) a validation call (inputs f(rank, index),
// small integers, so float sums are exact; every output element checked by a kernel on the bench's stream; one wrong
// value exits 1 naming op, size, impl, model and index), --warmup calls (default 5), one timed probe call, then iters
// calls back to back, iters = clamp(--budget / slowest PE's probe, 1, --iters). Stream model: CUDA events on the
// stream around the calls; host model: steady_clock around the calls (each blocking). Time per call = elapsed /
// iters, averaged over the PEs (nccl-tests' default), the slowest PE's in the JSON. algbw = bytes / time; busbw =
// algbw x nccl-tests' factor: allreduce 2(n-1)/n, allgather, reduce_scatter and alltoall (n-1)/n, broadcast 1.
// Exit: 0 ok, 1 wrong data, 2 failed call or bad usage, 3 stalled (COLL_BENCH_TIMEOUT s, default 300, per row),
// 77 no GPU.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../cuda_check.h"
#include "harness.h"
#include "tether/tether.h"

namespace coll_rows {

namespace tb = tether_bench;

enum class Op { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast };

struct OpDesc {
  Op op;
  const char* name;
  const char* what;
};
constexpr OpDesc kOps[] = {
    {Op::AllReduce, "allreduce", "float sum"},
    {Op::AllGather, "allgather", "float"},
    {Op::ReduceScatter, "reduce_scatter", "float sum"},
    {Op::AllToAll, "alltoall", "float"},
    {Op::Broadcast, "broadcast", "float, root 0"},
};

// nccl-tests' bus-bandwidth factors.
inline double busFactor(Op op, int n) {
  const double m = static_cast<double>(n);
  if (op == Op::AllReduce) return 2 * (m - 1) / m;
  if (op == Op::Broadcast) return 1;
  return (m - 1) / m;
}
inline const char* busFactorText(Op op) {
  return op == Op::AllReduce ? "2(n-1)/n" : (op == Op::Broadcast ? "1" : "(n-1)/n");
}

// Elements of one call at `bytes` (nccl-tests' accounting): count is the API count (per rank for allgather's input,
// reduce_scatter's output and each alltoall block); bytes the total per rank the row is labelled with.
struct Shape {
  size_t count = 0, srcElems = 0, dstElems = 0, bytes = 0;
};
inline Shape shapeOf(Op op, size_t bytes, int n) {
  const size_t elems = bytes / sizeof(float), per = elems / static_cast<size_t>(n), all = per * static_cast<size_t>(n);
  Shape s;
  if (op == Op::AllReduce || op == Op::Broadcast) {
    s.count = s.srcElems = s.dstElems = elems;
  } else {
    s.count = per;
    s.srcElems = op == Op::AllGather ? per : all;
    s.dstElems = op == Op::ReduceScatter ? per : all;
  }
  s.bytes = std::max(s.srcElems, s.dstElems) * sizeof(float);
  return s;
}

enum class Model { Stream, Host, Device };
inline const char* modelName(Model m) {
  return m == Model::Stream ? "stream" : (m == Model::Host ? "host" : "device");
}

// ---- data and its check --------------------------------------------------------------------------------------------

// Input element j of rank r: a small integer, so sums over up to 2^18 ranks are exact in float.
__host__ __device__ inline float inputVal(int r, size_t j) {
  return static_cast<float>((j * 7 + static_cast<size_t>(r) * 13 + 1) % 61);
}
// Output element k on rank me.
__host__ __device__ inline float expectedVal(Op op, int me, int n, size_t count, size_t k) {
  float s = 0;
  switch (op) {
    case Op::AllReduce:
      for (int r = 0; r < n; ++r) s += inputVal(r, k);
      return s;
    case Op::AllGather:
      return inputVal(static_cast<int>(k / count), k % count);
    case Op::ReduceScatter:
      for (int r = 0; r < n; ++r) s += inputVal(r, static_cast<size_t>(me) * count + k);
      return s;
    case Op::AllToAll:
      return inputVal(static_cast<int>(k / count), static_cast<size_t>(me) * count + k % count);
    default:
      return inputVal(0, k);
  }
}

__global__ inline void kFill(float* p, size_t n, int r) {
  for (size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[j] = inputVal(r, j);
}
// *firstBad = the lowest wrong index (it starts at ULLONG_MAX).
__global__ inline void kCheck(const float* d, size_t n, Op op, int me, int npes, size_t count,
                              unsigned long long* firstBad) {
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < n;
       k += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (d[k] != expectedVal(op, me, npes, count, k)) atomicMin(firstBad, static_cast<unsigned long long>(k));
}
inline unsigned gridFor(size_t n) { return static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096)); }

constexpr int kDeviceThreads = 256;  // the device rows' block
constexpr size_t kDeviceCount = 2;   // the device allreduce's floats (8 B)

// ---- an implementation ----------------------------------------------------------------------------------------------

// One implementation's calls, supplied by the program. src and dst: GPU memory of Ctx::bufBytes each (symmetric
// where the implementation needs it), set before the rows run. Every call is on the world (every PE).
struct Impl {
  explicit Impl(const char* n) : name(n) {}
  virtual ~Impl() = default;
  const char* name;  // the JSON "impl" and the tables' column prefix
  float* src = nullptr;
  float* dst = nullptr;
  // Stream model: one call enqueued on s (out of place: src -> dst); returns without waiting.
  virtual void enqueue(Op op, size_t count, cudaStream_t s) = 0;
  // Host model: one call from the host; its result is in dst when it returns (checked right after, on another stream).
  virtual void host(Op op, size_t count) = 0;
  // Device model (hasDevice): enqueues on s one kernel of 1 block x kDeviceThreads whose every thread makes `iters`
  // calls of which = 0: an allreduce of kDeviceCount floats, sum, src -> dst; 1: a team sync of the world.
  virtual bool hasDevice() const { return false; }
  virtual void device(int which, int iters, cudaStream_t s) {
    (void)which, (void)iters, (void)s;
  }
};

// ---- context --------------------------------------------------------------------------------------------------------

struct Ctx {
  const char* program = "";  // for messages: tether_bench_coll, tether_bench_nvshmem_coll
  const char* title = "";    // the table's first line: what this program compares
  tb::Options o;
  double budget = 0.2;  // seconds of timed calls per (op, size, impl, model)
  bool models[3] = {true, true, true};  // by Model
  tether_t w = nullptr;
  tether_team_t world = TETHER_TEAM_INVALID;
  int me = 0, npes = 0, device = 0, ndev = 0;
  std::string gpu;
  double* hx = nullptr;  // HOST symmetric scratch for the agreements
  cudaStream_t s = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  size_t bufBytes = 0;                // each implementation's src and dst
  unsigned long long* bad = nullptr;  // cudaMalloc, kCheck's result
  std::vector<Impl*> impls;           // the program's, in column order (the first is the ratios' numerator)
  std::vector<std::string> notes;     // '#' lines of the header: the peers' versions, or why they are not measured
  tb::RunInfo info;
  FILE* table = stdout;
  FILE* json = nullptr;
  std::unique_ptr<tb::Watchdog> dog;
  std::mutex rowMu;
  std::string row = "start-up";  // what the watchdog names on a stall
  long rows = 0;                 // validated rows
};

inline void barrier(Ctx& c) { TK(tether_barrier_all(c.w)); }
inline double timeoutSeconds() { return tb::envPositive({"COLL_BENCH_TIMEOUT"}, 300); }

// op over every PE's v (host form on the world team; HOST memory, so it works without a GPU).
inline double agree(Ctx& c, double v, tether_red_op_t op) {
  c.hx[0] = v;
  TK(tether_team_allreduce(c.world, c.hx, c.hx, 1, TETHER_DOUBLE, op));
  return c.hx[0];
}

// Names the row for the watchdog and arms it (per row: COLL_BENCH_TIMEOUT).
inline void watch(Ctx& c, const std::string& what) {
  {
    std::lock_guard<std::mutex> g(c.rowMu);
    c.row = what;
  }
  c.dog->arm(timeoutSeconds());
}

[[noreturn]] inline void wrong(Ctx& c, const std::string& what) {
  std::fprintf(stderr, "%s[PE %d]: WRONG DATA: %s\n", c.program, c.me, what.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  std::exit(1);
}

// Checks every element of dst (n elements) against expectedVal, on the bench's stream; exits 1 naming the first
// wrong one.
inline void validate(Ctx& c, const std::string& row, Op kind, const float* dst, size_t n, size_t count) {
  CK(cudaMemsetAsync(c.bad, 0xff, sizeof *c.bad, c.s));
  kCheck<<<gridFor(n), 256, 0, c.s>>>(dst, n, kind, c.me, c.npes, count, c.bad);
  CK(cudaGetLastError());
  unsigned long long first = 0;
  CK(cudaMemcpyAsync(&first, c.bad, sizeof first, cudaMemcpyDeviceToHost, c.s));
  CK(cudaStreamSynchronize(c.s));
  if (first == ULLONG_MAX) return;
  float got = 0;
  CK(cudaMemcpy(&got, dst + first, sizeof got, cudaMemcpyDeviceToHost));
  char msg[256];
  std::snprintf(msg, sizeof msg, "%s: element %llu is %g, expected %g", row.c_str(), first, static_cast<double>(got),
                static_cast<double>(expectedVal(kind, c.me, c.npes, count, first)));
  wrong(c, msg);
}

// ---- timing ---------------------------------------------------------------------------------------------------------

// Seconds between e0 and e1 (recorded on the stream).
inline double elapsed(Ctx& c) {
  CK(cudaEventSynchronize(c.e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, c.e0, c.e1));
  return 1e-3 * static_cast<double>(ms);
}

struct Timing {
  double us = 0;     // per call, mean over the PEs
  double usMax = 0;  // per call, slowest PE
  long iters = 0;
};

// Times `call` in `model`: warm-up, a probe that sets iters, the timed loop. Every PE the same. Stream model: call()
// enqueues on c.s, timed by CUDA events; host model: call() is blocking, timed by steady_clock.
template <typename Call>
Timing timeCalls(Ctx& c, Model model, const Call& call) {
  using Clock = std::chrono::steady_clock;
  const bool onStream = model == Model::Stream;
  auto run = [&](long n) {  // seconds of n calls
    if (onStream) {
      CK(cudaEventRecord(c.e0, c.s));
      for (long i = 0; i < n; ++i) call();
      CK(cudaEventRecord(c.e1, c.s));
      return elapsed(c);
    }
    const auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) call();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  for (int i = 0; i < c.o.warmup; ++i) call();
  if (onStream) CK(cudaStreamSynchronize(c.s));
  const double probe = agree(c, run(1), TETHER_RED_MAX);
  const double want = probe > 0 ? std::ceil(c.budget / probe) : static_cast<double>(c.o.iters);
  Timing t;
  t.iters = static_cast<long>(std::max(1.0, std::min(want, static_cast<double>(c.o.iters))));
  barrier(c);
  const double us = 1e6 * run(t.iters) / static_cast<double>(t.iters);
  t.us = agree(c, us, TETHER_RED_SUM) / c.npes;
  t.usMax = agree(c, us, TETHER_RED_MAX);
  return t;
}

inline std::string rowName(const OpDesc& od, const Impl& impl, Model model, size_t bytes) {
  return std::string(od.name) + " " + std::to_string(bytes) + " B " + impl.name + " " + modelName(model);
}

// One (op, size, impl, model): fill, a validated call, then the timed calls.
inline Timing measure(Ctx& c, const OpDesc& od, Impl& impl, Model model, const Shape& sh) {
  const std::string row = rowName(od, impl, model, sh.bytes);
  watch(c, row);
  kFill<<<gridFor(sh.srcElems), 256, 0, c.s>>>(impl.src, sh.srcElems, c.me);
  CK(cudaGetLastError());
  CK(cudaMemsetAsync(impl.dst, 0xff, sh.dstElems * sizeof(float), c.s));  // NaN: a missed element cannot pass
  CK(cudaStreamSynchronize(c.s));
  barrier(c);
  auto call = [&] {
    if (model == Model::Stream) impl.enqueue(od.op, sh.count, c.s);
    else impl.host(od.op, sh.count);
  };
  call();
  validate(c, row, od.op, impl.dst, sh.dstElems, sh.count);
  const Timing t = timeCalls(c, model, call);
  if (model == Model::Stream) CK(cudaStreamSynchronize(c.s));
  c.dog->disarm();
  ++c.rows;
  return t;
}

// ---- output ---------------------------------------------------------------------------------------------------------

inline std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

inline void jsonRow(Ctx& c, const char* op, const char* impl, Model model, const Shape& sh, const Timing& t,
                    double factor) {
  if (c.json == nullptr) return;
  const double algbw = sh.bytes > 0 ? static_cast<double>(sh.bytes) / (t.us * 1e3) : 0;
  std::string line = "{\"record\":\"row\",\"bench\":\"coll\",\"op\":" + tb::jsonString(op) +
                     ",\"impl\":" + tb::jsonString(impl) + ",\"model\":" + tb::jsonString(modelName(model)) +
                     ",\"dtype\":\"float\",\"bytes\":" + std::to_string(sh.bytes) +
                     ",\"count\":" + std::to_string(sh.count) + ",\"iters\":" + std::to_string(t.iters) +
                     ",\"value\":" + num(t.us) + ",\"unit\":\"us\",\"time_us\":" + num(t.us) +
                     ",\"time_us_max\":" + num(t.usMax);
  if (factor > 0)
    line += ",\"algbw_GBps\":" + num(algbw) + ",\"busbw_GBps\":" + num(algbw * factor) +
            ",\"bus_factor\":" + num(factor);
  line += ",\"npes\":" + std::to_string(c.npes) + ",\"pes\":" + std::to_string(c.npes) +
          ",\"gpu\":" + tb::jsonString(c.gpu) + ",\"host\":" + tb::jsonString(c.info.host) +
          ",\"date\":" + tb::jsonString(c.info.date) + "}\n";
  std::fputs(line.c_str(), c.json);
  std::fflush(c.json);
}

// PE 0: the '#' lines above the tables and the JSON run record (impl: the first implementation's name).
inline void printHeader(Ctx& c) {
  if (c.me != 0) return;
  FILE* f = c.table;
  std::fprintf(f, "# %s\n", c.title);
  std::fprintf(f, "# machine: %s, cpu: %s (%d logical CPUs), GPU: %s\n", c.info.host.c_str(), c.info.cpu.c_str(),
               c.info.cpus, c.gpu.c_str());
  std::fprintf(f, "# date: %s\n# command: %s\n# PEs: %d (%d GPUs visible)\n", c.info.date.c_str(),
               c.info.commandLine.c_str(), c.npes, c.ndev);
  for (const std::string& n : c.notes) std::fprintf(f, "# %s\n", n.c_str());
  std::string models;
  for (int m = 0; m < 3; ++m)
    if (c.models[m]) models += std::string(models.empty() ? "" : ",") + modelName(static_cast<Model>(m));
  std::fprintf(f,
               "# method: per op, size, implementation and model (%s): 1 validated call, %d warm-up calls, 1 probe,\n"
               "#   then iters calls (stream: between CUDA events on one stream; host: blocking calls, steady_clock),"
               "\n#   iters = clamp(%.3g s / slowest probe, 1, %d); us = elapsed / iters, mean over PEs;\n"
               "#   busbw = bytes / us x nccl-tests' factor; sizes %s..%s (bytes per rank as nccl-tests count them)\n",
               models.c_str(), c.o.warmup, c.budget, c.o.iters, tb::formatSize(c.o.minSize).c_str(),
               tb::formatSize(c.o.maxSize).c_str());
  std::fflush(f);
  if (c.json != nullptr) {
    std::string notes;
    for (const std::string& n : c.notes) notes += (notes.empty() ? "" : "; ") + n;
    std::fprintf(c.json,
                 "{\"record\":\"run\"%s,\"impl\":%s,\"gpu\":%s,\"notes\":%s,\"models\":%s,\"min_size\":%zu,"
                 "\"max_size\":%zu,\"max_iters\":%d,\"warmup\":%d,\"budget_s\":%s}\n",
                 tb::runFields(c.info).c_str(), tb::jsonString(c.impls.empty() ? "" : c.impls[0]->name).c_str(),
                 tb::jsonString(c.gpu).c_str(), tb::jsonString(notes).c_str(), tb::jsonString(models).c_str(),
                 c.o.minSize, c.o.maxSize, c.o.iters, c.o.warmup, num(c.budget).c_str());
    std::fflush(c.json);
  }
}

// One op in one model: a table of every size, a column pair (us, busbw) per implementation, and the first
// implementation's time over each other's (< 1: the first is faster).
inline void runOp(Ctx& c, const OpDesc& od, Model model) {
  if (!tb::wantsOp(c.o, od.name) || !c.models[static_cast<int>(model)] || c.impls.empty()) return;
  const double factor = busFactor(od.op, c.npes);
  const char* first = c.impls[0]->name;
  if (c.me == 0) {
    std::fprintf(c.table, "\n# %s (%s), model %s, out of place, %d PEs; busbw factor %s = %.3f\n", od.name, od.what,
                 modelName(model), c.npes, busFactorText(od.op), factor);
    std::fprintf(c.table, "%-12s %12s", "# bytes", "count");
    for (const Impl* i : c.impls) std::fprintf(c.table, " %12s", (std::string(i->name) + "_us").c_str());
    for (const Impl* i : c.impls) std::fprintf(c.table, " %14s", (std::string(i->name) + "_busbw").c_str());
    for (size_t k = 1; k < c.impls.size(); ++k)
      std::fprintf(c.table, " %14s", (std::string(first) + "/" + c.impls[k]->name).c_str());
    std::fprintf(c.table, " %10s\n", "iters");
  }
  size_t last = 0;
  for (size_t size : tb::messageSizes(c.o)) {
    const Shape sh = shapeOf(od.op, size, c.npes);
    if (sh.count == 0 || sh.bytes == last) continue;  // too small to give every rank an element; or a repeat
    last = sh.bytes;
    std::vector<Timing> ts;
    for (Impl* i : c.impls) ts.push_back(measure(c, od, *i, model, sh));
    if (c.me != 0) continue;
    const double bytes = static_cast<double>(sh.bytes);
    std::fprintf(c.table, "%-12zu %12zu", sh.bytes, sh.count);
    for (const Timing& t : ts) std::fprintf(c.table, " %12.3f", t.us);
    for (const Timing& t : ts) std::fprintf(c.table, " %14.3f", bytes / (t.us * 1e3) * factor);
    for (size_t k = 1; k < ts.size(); ++k) std::fprintf(c.table, " %14.3f", ts[0].us / ts[k].us);
    std::string iters;
    for (const Timing& t : ts) iters += (iters.empty() ? "" : "/") + std::to_string(t.iters);
    std::fprintf(c.table, " %10s\n", iters.c_str());
    std::fflush(c.table);
    for (size_t k = 0; k < ts.size(); ++k) jsonRow(c, od.name, c.impls[k]->name, model, sh, ts[k], factor);
  }
}

// The device-model rows: Impl::device with --iters calls per kernel, time per call.
inline void runDevice(Ctx& c) {
  const bool wantReduce = tb::wantsOp(c.o, "device_allreduce"), wantSync = tb::wantsOp(c.o, "device_sync");
  if ((!wantReduce && !wantSync) || !c.models[static_cast<int>(Model::Device)]) return;
  if (c.me == 0) {
    std::fprintf(c.table,
                 "\n# model device: one kernel of 1 block x %d threads makes iters calls of an 8 B allreduce (2 floats,"
                 " sum)\n#   or a team sync at block scope; us per call (mean over PEs / slowest PE)\n",
                 kDeviceThreads);
    std::fprintf(c.table, "%-18s %-10s %8s %12s %12s %10s\n", "# op", "impl", "bytes", "us", "us_max", "iters");
  }
  for (int which = 0; which < 2; ++which) {
    if (!(which == 0 ? wantReduce : wantSync)) continue;
    const char* op = which == 0 ? "device_allreduce" : "device_sync";
    for (Impl* impl : c.impls) {
      if (!impl->hasDevice()) continue;
      Shape sh;
      sh.count = sh.srcElems = sh.dstElems = which == 0 ? kDeviceCount : 0;
      sh.bytes = sh.count * sizeof(float);
      const std::string row = std::string(op) + " " + impl->name;
      watch(c, row);
      kFill<<<1, 32, 0, c.s>>>(impl->src, kDeviceCount, c.me);
      CK(cudaMemsetAsync(impl->dst, 0xff, kDeviceCount * sizeof(float), c.s));
      CK(cudaStreamSynchronize(c.s));
      barrier(c);
      impl->device(which, 1, c.s);
      CK(cudaGetLastError());
      if (which == 0) validate(c, row, Op::AllReduce, impl->dst, kDeviceCount, kDeviceCount);
      for (int i = 0; i < c.o.warmup; ++i) impl->device(which, std::min(c.o.iters, 16), c.s);
      CK(cudaStreamSynchronize(c.s));
      barrier(c);
      CK(cudaEventRecord(c.e0, c.s));
      impl->device(which, c.o.iters, c.s);
      CK(cudaEventRecord(c.e1, c.s));
      const double us = 1e6 * elapsed(c) / c.o.iters;
      if (which == 0) validate(c, row, Op::AllReduce, impl->dst, kDeviceCount, kDeviceCount);
      Timing t;
      t.iters = c.o.iters;
      t.us = agree(c, us, TETHER_RED_SUM) / c.npes;
      t.usMax = agree(c, us, TETHER_RED_MAX);
      c.dog->disarm();
      ++c.rows;
      if (c.me != 0) continue;
      std::fprintf(c.table, "%-18s %-10s %8zu %12.3f %12.3f %10ld\n", op, impl->name, sh.bytes, t.us, t.usMax,
                   t.iters);
      std::fflush(c.table);
      jsonRow(c, op, impl->name, Model::Device, sh, t, 0);
    }
  }
}

// Every row of --ops in every model of --models, then the closing line.
inline void runRows(Ctx& c) {
  printHeader(c);
  for (Model m : {Model::Stream, Model::Host})
    for (const OpDesc& od : kOps) runOp(c, od, m);
  runDevice(c);
  CK(cudaStreamSynchronize(c.s));
  barrier(c);
  if (c.me == 0) {
    std::fprintf(c.table, "\n# coll: all data validated (%ld rows, %d PEs)\n", c.rows, c.npes);
    std::fflush(c.table);
  }
  if (c.json != nullptr && c.json != stdout) std::fclose(c.json);
  c.json = nullptr;
}

// ---- start-up -------------------------------------------------------------------------------------------------------

inline const char* kUsage =
    "  rows (--ops): allreduce, allgather, reduce_scatter, alltoall, broadcast, device_allreduce, device_sync\n"
    "  --models M     some of stream,host,device (default all three)\n"
    "  --max-size defaults to 1G here (capped by free GPU memory); --iters: most timed calls per size (and the\n"
    "  device rows' calls per kernel); --warmup: warm-up calls (default 5)\n"
    "  --budget S     seconds of timed calls per op, size, implementation and model (default 0.2)\n"
    "  exit: 0 ok, 1 wrong data, 2 failed call or bad usage, 3 stalled (COLL_BENCH_TIMEOUT s per row), 77 no GPU\n";

// The harness options and --budget / --models (the program has taken its own flags out of args already).
// false: exit with *rc (usage printed: 0 for --help, 2 for bad usage).
inline bool parseArgs(Ctx& c, std::vector<char*> args, int argc, char** argv, const std::string& extraUsage,
                      int* rc) {
  std::string err;
  bool ok = tb::takeValueOption(&args, "--budget", " (seconds)", &err, [&](const std::string& v) {
    char* end = nullptr;
    c.budget = std::strtod(v.c_str(), &end);
    if (end != v.c_str() && *end == '\0' && c.budget > 0) return true;
    err = "--budget '" + v + "': not a number of seconds > 0";
    return false;
  });
  ok = ok && tb::takeValueOption(&args, "--models", ": stream,host,device", &err, [&](const std::string& v) {
    for (bool& m : c.models) m = false;
    size_t at = 0;
    while (at <= v.size()) {
      const size_t comma = std::min(v.find(',', at), v.size());
      const std::string name = v.substr(at, comma - at);
      int m = 0;
      while (m < 3 && name != modelName(static_cast<Model>(m))) ++m;
      if (m == 3) {
        err = "--models: unknown model '" + name + "' (stream, host, device)";
        return false;
      }
      c.models[m] = true;
      at = comma + 1;
    }
    return true;
  });
  ok = ok && tb::parseOptions(static_cast<int>(args.size()), args.data(), &c.o, &err);
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", c.program, err.c_str());
    *rc = 2;
    return false;
  }
  if (c.o.help) {
    std::printf("%s", tb::usage(c.program, extraUsage + kUsage).c_str());
    *rc = 0;
    return false;
  }
  c.o.argv.assign(argv, argv + argc);
  bool gotMax = false, gotWarmup = false;
  for (int i = 1; i < argc; ++i) {
    gotMax = gotMax || std::strncmp(argv[i], "--max-size", 10) == 0;
    gotWarmup = gotWarmup || std::strncmp(argv[i], "--warmup", 8) == 0;
  }
  if (!gotMax && !c.o.quick) c.o.maxSize = size_t{1} << 30;
  if (!gotWarmup && !c.o.quick) c.o.warmup = 5;
  if (c.o.quick) c.budget = std::min(c.budget, 0.02);
  return true;
}

// tether_init, the agreement scratch, the watchdog, and this PE's GPU (tether_local_pe % device count), its stream,
// events and check word. false: exit with *rc (77: no GPU on some PE, every PE skips; tether finalized).
inline bool start(Ctx& c, int* rc) {
  TK(tether_init(&c.w));
  c.me = tether_my_pe(c.w);
  c.npes = tether_n_pes(c.w);
  c.world = tether_team_world(c.w);
  void* p = nullptr;
  TK(tether_malloc_kind(c.w, TETHER_SEG_HOST, 64, 64 * sizeof(double), &p));
  c.hx = static_cast<double*>(p);
  c.dog = std::make_unique<tb::Watchdog>([&c] {
    std::lock_guard<std::mutex> g(c.rowMu);
    std::fprintf(stderr, "%s[PE %d]: %s: not finished after %.0f s (COLL_BENCH_TIMEOUT): stalled\n", c.program, c.me,
                 c.row.c_str(), timeoutSeconds());
  }, c.me == 0 ? 0 : 2);
  const bool haveGpu = cudaGetDeviceCount(&c.ndev) == cudaSuccess && c.ndev > 0;
  if (agree(c, haveGpu ? 0 : 1, TETHER_RED_SUM) > 0) {
    if (c.me == 0) std::printf("SKIP: no GPU visible (%s needs one GPU per PE)\n", c.program);
    std::fflush(stdout);
    TK(tether_free(c.w, c.hx));
    TK(tether_finalize(c.w));
    *rc = 77;
    return false;
  }
  CK(cudaSetDevice(tether_local_pe(c.w) % c.ndev));
  CK(cudaGetDevice(&c.device));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, c.device));
  c.gpu = prop.name;
  c.info = tb::collectRunInfo("coll", c.o, c.npes);
  CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
  CK(cudaEventCreate(&c.e0));
  CK(cudaEventCreate(&c.e1));
  CK(cudaMalloc(&c.bad, sizeof *c.bad));
  return true;
}

// True when some PE shares its GPU with another PE (agreed).
inline bool sharedGpus(Ctx& c) { return agree(c, tether_local_size(c.w) > c.ndev ? 1 : 0, TETHER_RED_MAX) > 0; }

// The largest size (<= --max-size) whose `buffers` buffers of that size fit this PE's share of its GPU's free memory
// (the smallest over the PEs); sets o.maxSize (and o.minSize when above it) and bufBytes. Returns the wanted size.
inline size_t capSize(Ctx& c, int buffers) {
  const size_t want = c.o.maxSize;
  size_t freeB = 0, totalB = 0;
  CK(cudaMemGetInfo(&freeB, &totalB));
  const int local = tether_local_size(c.w);
  const size_t sharers = static_cast<size_t>(std::max(1, (local - 1 - c.device) / c.ndev + 1));
  const size_t share = freeB / sharers, reserve = size_t{512} << 20;
  size_t s = want;
  while (s > c.o.minSize && static_cast<size_t>(buffers) * s + reserve > share) s /= 2;
  c.o.maxSize = static_cast<size_t>(agree(c, static_cast<double>(s), TETHER_RED_MIN));
  if (c.o.minSize > c.o.maxSize) c.o.minSize = c.o.maxSize;
  c.bufBytes = std::max<size_t>(c.o.maxSize, 64);
  if (c.o.maxSize < want)
    c.notes.push_back("max-size capped to " + tb::formatSize(c.o.maxSize) + " by free GPU memory (wanted " +
                      tb::formatSize(want) + ")");
  return want;
}

// PE 0, --json: the JSON file ('-': JSON lines to stdout, the tables to stderr).
inline void openJson(Ctx& c) {
  if (c.me != 0 || c.o.jsonPath.empty()) return;
  if (c.o.jsonPath == "-") {
    c.json = stdout;
    c.table = stderr;
  } else if ((c.json = std::fopen(c.o.jsonPath.c_str(), "w")) == nullptr) {
    std::fprintf(stderr, "%s: cannot open %s; no JSON lines\n", c.program, c.o.jsonPath.c_str());
  }
}

// After the rows and the program's own clean-up: the stream, events, check word, scratch; tether_finalize.
inline void finish(Ctx& c) {
  CK(cudaFree(c.bad));
  CK(cudaEventDestroy(c.e0));
  CK(cudaEventDestroy(c.e1));
  CK(cudaStreamDestroy(c.s));
  c.dog.reset();
  TK(tether_free(c.w, c.hx));
  TK(tether_finalize(c.w));
}

}  // namespace coll_rows
