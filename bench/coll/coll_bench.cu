// Team collectives against NCCL (issue #21), n PEs under tetherrun, one GPU per PE, in one run with one method.
// Rows (see bench/README.md "coll"):
//   allreduce, allgather, reduce_scatter, alltoall, broadcast
//       per size (--min-size .. --max-size, default 8 B .. 1 GiB, powers of 2; bytes per rank as nccl-tests count
//       them), float data, sum for the reductions, root 0 for broadcast, out of place:
//       impl "tether": tether_team_<op>_on_stream on the world team, DEVICE symmetric buffers, the bench's stream;
//       impl "nccl":   ncclAllReduce / ncclAllGather / ncclReduceScatter / ncclBroadcast, alltoall as one group of
//                      ncclSend + ncclRecv to every rank (itself included, as nccl-tests do), cudaMalloc'd buffers
//                      (as nccl-tests), the same stream.
//   device_allreduce, device_sync
//       impl "tether_device": one kernel of 1 block x 256 threads calling tether::device::team_allreduce
//       <Scope::Block> on 8 B (2 floats, sum) / team_sync<Scope::Block> --iters times in a loop; time per call.
// Method, the same for both implementations: per (op, size, impl) a validation call (inputs f(rank, index), small
// integers, so float sums are exact; every output element checked by a kernel; one wrong value exits 1 naming op,
// size, impl and index), --warmup calls (default 5), one probe call timed with CUDA events, then iters calls back to
// back between two CUDA events on the stream, iters = clamp(--budget / slowest PE's probe, 1, --iters); time per call
// = elapsed / iters, averaged over the PEs (nccl-tests' default) with the slowest PE's in the JSON. algbw = bytes /
// time; busbw = algbw x nccl-tests' factor: allreduce 2(n-1)/n, allgather, reduce_scatter and alltoall (n-1)/n,
// broadcast 1.
// NCCL (NCCL_NVLS_ENABLE defaults to 0 here, as scripts/gpu-check sets it): its unique id is made on PE 0 and handed
// to the others through a HOST symmetric buffer (tether_put + barrier); ncclCommInitRank on every PE. NCCL needs one
// GPU per rank: when PEs share a GPU, --no-nccl is given, or NCCL fails to start, the run says why and measures the
// tether rows only.
// Exit: 0 ok, 1 wrong data, 2 failed call or bad usage, 3 stalled (COLL_BENCH_TIMEOUT s, default 300, per row),
// 77 no GPU.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "../cuda_check.h"
#include "harness.h"
#include "tether/device.cuh"
#include "tether/tether.h"

namespace tb = tether_bench;
namespace dev = tether::device;

#define NK(x)                                                                                                    \
  do {                                                                                                           \
    const ncclResult_t r_ = (x);                                                                                 \
    if (r_ != ncclSuccess) {                                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_),              \
                   ncclGetLastError(nullptr));                                                                   \
      std::exit(2);                                                                                              \
    }                                                                                                            \
  } while (0)

namespace {

enum class Op { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast };
enum class Impl { Tether, Nccl };

struct OpDesc {
  Op op;
  const char* name;
  const char* what;
};
constexpr OpDesc kOps[] = {
    {Op::AllReduce, "allreduce", "float sum"},
    {Op::AllGather, "allgather", "float"},
    {Op::ReduceScatter, "reduce_scatter", "float sum"},
    {Op::AllToAll, "alltoall", "float; NCCL: grouped ncclSend/ncclRecv to every rank"},
    {Op::Broadcast, "broadcast", "float, root 0"},
};

const char* implName(Impl i) { return i == Impl::Tether ? "tether" : "nccl"; }

// nccl-tests' bus-bandwidth factors.
double busFactor(Op op, int n) {
  const double m = static_cast<double>(n);
  if (op == Op::AllReduce) return 2 * (m - 1) / m;
  if (op == Op::Broadcast) return 1;
  return (m - 1) / m;
}
const char* busFactorText(Op op) {
  return op == Op::AllReduce ? "2(n-1)/n" : (op == Op::Broadcast ? "1" : "(n-1)/n");
}

// Elements of one call at `bytes` (nccl-tests' accounting): count is the API count (per rank for allgather's input,
// reduce_scatter's output and each alltoall block); bytes the total per rank the row is labelled with.
struct Shape {
  size_t count = 0, srcElems = 0, dstElems = 0, bytes = 0;
};
Shape shapeOf(Op op, size_t bytes, int n) {
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

__global__ void kFill(float* p, size_t n, int r) {
  for (size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[j] = inputVal(r, j);
}
// *firstBad = the lowest wrong index (it starts at ULLONG_MAX).
__global__ void kCheck(const float* d, size_t n, Op op, int me, int npes, size_t count, unsigned long long* firstBad) {
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < n;
       k += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (d[k] != expectedVal(op, me, npes, count, k)) atomicMin(firstBad, static_cast<unsigned long long>(k));
}
unsigned gridFor(size_t n) { return static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096)); }

constexpr int kDeviceThreads = 256;
constexpr size_t kDeviceCount = 2;  // 8 B of float
// The device-form row: `iters` calls in one block (which 0: team_allreduce of kDeviceCount floats, 1: team_sync).
__global__ void __launch_bounds__(kDeviceThreads)
    kDeviceLoop(tether_device_handle_t h, tether_device_team_t t, float* d, const float* x, int iters, int which) {
  for (int i = 0; i < iters; ++i) {
    if (which == 0)
      dev::team_allreduce<dev::Scope::Block>(h, t, d, x, kDeviceCount, dev::RedOp::Sum);
    else
      dev::team_sync<dev::Scope::Block>(h, t);
  }
}

// ---- context --------------------------------------------------------------------------------------------------------

struct Ctx {
  tb::Options o;
  double budget = 0.2;  // seconds of timed calls per (op, size, impl)
  bool noNccl = false;
  tether_t w = nullptr;
  tether_team_t world = TETHER_TEAM_INVALID;
  int me = 0, npes = 0, device = 0;
  std::string gpu;
  double* hx = nullptr;  // HOST symmetric scratch for the agreements (host-form collectives)
  cudaStream_t s = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  float *tSrc = nullptr, *tDst = nullptr;  // DEVICE symmetric (tether rows)
  float *nSrc = nullptr, *nDst = nullptr;  // cudaMalloc (NCCL rows)
  size_t bufBytes = 0;                     // each of the four buffers
  unsigned long long* bad = nullptr;       // cudaMalloc, kCheck's result
  tether_device_handle_t h{};
  tether_device_team_t view{};
  ncclComm_t comm = nullptr;  // null: no NCCL rows
  std::string ncclNote;       // NCCL's version, or why there are no NCCL rows
  tb::RunInfo info;
  FILE* table = stdout;
  FILE* json = nullptr;
  tb::Watchdog* dog = nullptr;
  std::mutex rowMu;
  std::string row = "start-up";  // what the watchdog names on a stall
  long rows = 0;                 // validated rows
};

void barrier(Ctx& c) { TK(tether_barrier_all(c.w)); }
double timeoutSeconds() { return tb::envPositive({"COLL_BENCH_TIMEOUT"}, 300); }

// op over every PE's v (host form on the world team; HOST memory, so it works without a GPU).
double agree(Ctx& c, double v, tether_red_op_t op) {
  c.hx[0] = v;
  TK(tether_team_allreduce(c.world, c.hx, c.hx, 1, TETHER_DOUBLE, op));
  return c.hx[0];
}

void watch(Ctx& c, const std::string& what) {
  {
    std::lock_guard<std::mutex> g(c.rowMu);
    c.row = what;
  }
  c.dog->arm(timeoutSeconds());
}

[[noreturn]] void wrong(Ctx& c, const std::string& what) {
  std::fprintf(stderr, "tether_bench_coll[PE %d]: WRONG DATA: %s\n", c.me, what.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  std::exit(1);
}

// Checks every element of dst (n elements) against expectedVal; exits 1 naming the first wrong one.
void validate(Ctx& c, const char* op, Op kind, const char* impl, size_t bytes, const float* dst, size_t n,
              size_t count) {
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
  std::snprintf(msg, sizeof msg, "op %s, size %zu B, impl %s: element %llu is %g, expected %g", op, bytes, impl, first,
                static_cast<double>(got), static_cast<double>(expectedVal(kind, c.me, c.npes, count, first)));
  wrong(c, msg);
}

// ---- the calls ------------------------------------------------------------------------------------------------------

void enqueue(Ctx& c, Impl impl, Op op, size_t count) {
  if (impl == Impl::Tether) {
    void* s = static_cast<void*>(c.s);
    float *d = c.tDst, *x = c.tSrc;
    switch (op) {
      case Op::AllReduce:
        TK(tether_team_allreduce_on_stream(c.world, d, x, count, TETHER_FLOAT, TETHER_RED_SUM, s));
        break;
      case Op::AllGather:
        TK(tether_team_allgather_on_stream(c.world, d, x, count, TETHER_FLOAT, s));
        break;
      case Op::ReduceScatter:
        TK(tether_team_reduce_scatter_on_stream(c.world, d, x, count, TETHER_FLOAT, TETHER_RED_SUM, s));
        break;
      case Op::AllToAll:
        TK(tether_team_alltoall_on_stream(c.world, d, x, count, TETHER_FLOAT, s));
        break;
      case Op::Broadcast:
        TK(tether_team_broadcast_on_stream(c.world, d, x, count, TETHER_FLOAT, 0, s));
        break;
    }
    return;
  }
  float *d = c.nDst, *x = c.nSrc;
  switch (op) {
    case Op::AllReduce:
      NK(ncclAllReduce(x, d, count, ncclFloat, ncclSum, c.comm, c.s));
      break;
    case Op::AllGather:
      NK(ncclAllGather(x, d, count, ncclFloat, c.comm, c.s));
      break;
    case Op::ReduceScatter:
      NK(ncclReduceScatter(x, d, count, ncclFloat, ncclSum, c.comm, c.s));
      break;
    case Op::AllToAll:
      NK(ncclGroupStart());
      for (int p = 0; p < c.npes; ++p) {
        const size_t off = static_cast<size_t>(p) * count;
        NK(ncclSend(x + off, count, ncclFloat, p, c.comm, c.s));
        NK(ncclRecv(d + off, count, ncclFloat, p, c.comm, c.s));
      }
      NK(ncclGroupEnd());
      break;
    case Op::Broadcast:
      NK(ncclBroadcast(x, d, count, ncclFloat, 0, c.comm, c.s));
      break;
  }
}

// Seconds between e0 and e1 (recorded on the stream).
double elapsed(Ctx& c) {
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

// Times `call` (enqueues one call on c.s): warm-up, a probe that sets iters, the timed loop. Every PE the same.
template <typename Call>
Timing timeCalls(Ctx& c, const Call& call) {
  for (int i = 0; i < c.o.warmup; ++i) call();
  CK(cudaEventRecord(c.e0, c.s));
  call();
  CK(cudaEventRecord(c.e1, c.s));
  const double probe = agree(c, elapsed(c), TETHER_RED_MAX);
  const double want = probe > 0 ? std::ceil(c.budget / probe) : static_cast<double>(c.o.iters);
  Timing t;
  t.iters = static_cast<long>(std::max(1.0, std::min(want, static_cast<double>(c.o.iters))));
  barrier(c);
  CK(cudaEventRecord(c.e0, c.s));
  for (long i = 0; i < t.iters; ++i) call();
  CK(cudaEventRecord(c.e1, c.s));
  const double us = 1e6 * elapsed(c) / static_cast<double>(t.iters);
  t.us = agree(c, us, TETHER_RED_SUM) / c.npes;
  t.usMax = agree(c, us, TETHER_RED_MAX);
  return t;
}

Timing measure(Ctx& c, const OpDesc& od, Impl impl, const Shape& sh) {
  watch(c, std::string(od.name) + " " + std::to_string(sh.bytes) + " B " + implName(impl));
  float* src = impl == Impl::Tether ? c.tSrc : c.nSrc;
  float* dst = impl == Impl::Tether ? c.tDst : c.nDst;
  kFill<<<gridFor(sh.srcElems), 256, 0, c.s>>>(src, sh.srcElems, c.me);
  CK(cudaGetLastError());
  CK(cudaMemsetAsync(dst, 0xff, sh.dstElems * sizeof(float), c.s));  // NaN: a missed element cannot pass
  CK(cudaStreamSynchronize(c.s));
  barrier(c);
  enqueue(c, impl, od.op, sh.count);
  validate(c, od.name, od.op, implName(impl), sh.bytes, dst, sh.dstElems, sh.count);
  const Timing t = timeCalls(c, [&] { enqueue(c, impl, od.op, sh.count); });
  c.dog->disarm();
  ++c.rows;
  return t;
}

// ---- output ---------------------------------------------------------------------------------------------------------

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

void jsonRow(Ctx& c, const char* op, const char* impl, const char* model, const Shape& sh, const Timing& t,
             double factor) {
  if (c.json == nullptr) return;
  const double algbw = sh.bytes > 0 ? static_cast<double>(sh.bytes) / (t.us * 1e3) : 0;
  std::string line = "{\"record\":\"row\",\"bench\":\"coll\",\"op\":" + tb::jsonString(op) +
                     ",\"impl\":" + tb::jsonString(impl) + ",\"model\":" + tb::jsonString(model) +
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

void printHeader(Ctx& c) {
  if (c.me != 0) return;
  FILE* f = c.table;
  std::fprintf(f, "# tether benchmark: coll (team collectives: tether stream forms and device form vs NCCL)\n");
  std::fprintf(f, "# machine: %s, cpu: %s (%d logical CPUs), GPU: %s\n", c.info.host.c_str(), c.info.cpu.c_str(),
               c.info.cpus, c.gpu.c_str());
  std::fprintf(f, "# date: %s\n# command: %s\n# PEs: %d (one GPU each)\n", c.info.date.c_str(),
               c.info.commandLine.c_str(), c.npes);
  std::fprintf(f, "# NCCL: %s\n", c.ncclNote.c_str());
  std::fprintf(f,
               "# method: per op, size and implementation: 1 validated call, %d warm-up calls, 1 probe, then iters "
               "calls between\n#   CUDA events on one stream, iters = clamp(%.3g s / slowest probe, 1, %d); "
               "us = elapsed / iters, mean over PEs;\n#   busbw = bytes / us x nccl-tests' factor; sizes %s..%s "
               "(bytes per rank as nccl-tests count them)\n",
               c.o.warmup, c.budget, c.o.iters, tb::formatSize(c.o.minSize).c_str(),
               tb::formatSize(c.o.maxSize).c_str());
  std::fflush(f);
  if (c.json != nullptr) {
    std::fprintf(c.json,
                 "{\"record\":\"run\"%s,\"gpu\":%s,\"nccl\":%s,\"min_size\":%zu,\"max_size\":%zu,\"max_iters\":%d,"
                 "\"warmup\":%d,\"budget_s\":%s}\n",
                 tb::runFields(c.info).c_str(), tb::jsonString(c.gpu).c_str(), tb::jsonString(c.ncclNote).c_str(),
                 c.o.minSize, c.o.maxSize, c.o.iters, c.o.warmup, num(c.budget).c_str());
    std::fflush(c.json);
  }
}

void runOp(Ctx& c, const OpDesc& od) {
  if (!tb::wantsOp(c.o, od.name)) return;
  const double factor = busFactor(od.op, c.npes);
  if (c.me == 0) {
    std::fprintf(c.table, "\n# %s (%s), out of place, %d PEs; busbw factor %s = %.3f\n", od.name, od.what, c.npes,
                 busFactorText(od.op), factor);
    std::fprintf(c.table, "%-12s %12s %12s %12s %14s %14s %12s %10s\n", "# bytes", "count", "tether_us", "nccl_us",
                 "tether_busbw", "nccl_busbw", "tether/nccl", "iters");
  }
  size_t last = 0;
  for (size_t size : tb::messageSizes(c.o)) {
    const Shape sh = shapeOf(od.op, size, c.npes);
    if (sh.count == 0 || sh.bytes == last) continue;  // too small to give every rank an element; or a repeat
    last = sh.bytes;
    const Timing t = measure(c, od, Impl::Tether, sh);
    Timing n;
    if (c.comm != nullptr) n = measure(c, od, Impl::Nccl, sh);
    if (c.me != 0) continue;
    const double bytes = static_cast<double>(sh.bytes);
    const std::string nUs = c.comm ? num(n.us) : "-", nBw = c.comm ? num(bytes / (n.us * 1e3) * factor) : "-",
                      ratio = c.comm ? num(t.us / n.us) : "-",
                      iters = std::to_string(t.iters) + (c.comm ? "/" + std::to_string(n.iters) : "");
    std::fprintf(c.table, "%-12zu %12zu %12.3f %12s %14.3f %14s %12s %10s\n", sh.bytes, sh.count, t.us, nUs.c_str(),
                 bytes / (t.us * 1e3) * factor, nBw.c_str(), ratio.c_str(), iters.c_str());
    std::fflush(c.table);
    jsonRow(c, od.name, "tether", "stream", sh, t, factor);
    if (c.comm) jsonRow(c, od.name, "nccl", "stream", sh, n, factor);
  }
}

// The device-form rows: kDeviceLoop with --iters calls per kernel, time per call.
void runDevice(Ctx& c) {
  const bool wantReduce = tb::wantsOp(c.o, "device_allreduce"), wantSync = tb::wantsOp(c.o, "device_sync");
  if (!wantReduce && !wantSync) return;
  if (c.me == 0) {
    std::fprintf(c.table,
                 "\n# device form: one kernel of 1 block x %d threads calls tether::device::team_allreduce"
                 "<Scope::Block> (8 B = 2 floats, sum)\n#   or team_sync<Scope::Block> iters times; us per call "
                 "(mean over PEs / slowest PE)\n",
                 kDeviceThreads);
    std::fprintf(c.table, "%-18s %8s %12s %12s %10s\n", "# op", "bytes", "us", "us_max", "iters");
  }
  Shape sh;
  sh.count = sh.srcElems = sh.dstElems = kDeviceCount;
  sh.bytes = kDeviceCount * sizeof(float);
  for (int which = 0; which < 2; ++which) {
    if (!(which == 0 ? wantReduce : wantSync)) continue;
    const char* op = which == 0 ? "device_allreduce" : "device_sync";
    watch(c, op);
    kFill<<<1, 32, 0, c.s>>>(c.tSrc, kDeviceCount, c.me);
    CK(cudaMemsetAsync(c.tDst, 0xff, sh.dstElems * sizeof(float), c.s));
    CK(cudaStreamSynchronize(c.s));
    barrier(c);
    auto launch = [&](int iters) {
      kDeviceLoop<<<1, kDeviceThreads, 0, c.s>>>(c.h, c.view, c.tDst, c.tSrc, iters, which);
      CK(cudaGetLastError());
    };
    launch(1);
    if (which == 0) validate(c, op, Op::AllReduce, "tether_device", sh.bytes, c.tDst, kDeviceCount, kDeviceCount);
    for (int i = 0; i < c.o.warmup; ++i) launch(std::min(c.o.iters, 16));
    CK(cudaStreamSynchronize(c.s));
    barrier(c);
    CK(cudaEventRecord(c.e0, c.s));
    launch(c.o.iters);
    CK(cudaEventRecord(c.e1, c.s));
    const double us = 1e6 * elapsed(c) / c.o.iters;
    if (which == 0) validate(c, op, Op::AllReduce, "tether_device", sh.bytes, c.tDst, kDeviceCount, kDeviceCount);
    Timing t;
    t.iters = c.o.iters;
    t.us = agree(c, us, TETHER_RED_SUM) / c.npes;
    t.usMax = agree(c, us, TETHER_RED_MAX);
    c.dog->disarm();
    ++c.rows;
    if (which == 1) sh.bytes = sh.count = 0;
    if (c.me != 0) continue;
    std::fprintf(c.table, "%-18s %8zu %12.3f %12.3f %10ld\n", op, sh.bytes, t.us, t.usMax, t.iters);
    std::fflush(c.table);
    jsonRow(c, op, "tether_device", "device", sh, t, 0);
  }
}

// ---- start-up -------------------------------------------------------------------------------------------------------

// Takes the bench's own options out of args (--budget SECONDS, --no-nccl); false with *error on a bad value.
bool takeOwnOptions(std::vector<char*>* args, Ctx* c, std::string* error) {
  const size_t before = args->size();
  const auto isFlag = [](const char* a) { return std::strcmp(a, "--no-nccl") == 0; };
  args->erase(std::remove_if(args->begin() + 1, args->end(), isFlag), args->end());
  c->noNccl = args->size() != before;
  return tb::takeValueOption(args, "--budget", " (seconds)", error, [&](const std::string& v) {
    char* end = nullptr;
    c->budget = std::strtod(v.c_str(), &end);
    if (end != v.c_str() && *end == '\0' && c->budget > 0) return true;
    *error = "--budget '" + v + "': not a number of seconds > 0";
    return false;
  });
}

// NCCL on every PE, or a reason why not (the same decision on every PE). PE 0 makes the unique id and puts it, with
// its status, into every PE's HOST symmetric box; a barrier; then ncclCommInitRank everywhere.
std::string bootNccl(Ctx& c, int ndev) {
  // One GPU per rank: NCCL refuses ranks that share a GPU.
  const int localShare = tether_local_size(c.w) > ndev ? 1 : 0;
  if (agree(c, localShare, TETHER_RED_MAX) > 0) return "not run: PEs share GPUs (NCCL needs one GPU per rank)";
  struct Box {
    int64_t status;
    ncclUniqueId id;
  };
  void* p = nullptr;
  TK(tether_malloc_kind(c.w, TETHER_SEG_HOST, 64, sizeof(Box), &p));
  Box* box = static_cast<Box*>(p);
  if (c.me == 0) {
    Box b;
    std::memset(&b, 0, sizeof b);
    b.status = ncclGetUniqueId(&b.id);
    for (int pe = 0; pe < c.npes; ++pe) TK(tether_put(c.w, box, &b, sizeof b, pe));
  }
  barrier(c);
  Box b;
  std::memcpy(&b, box, sizeof b);
  TK(tether_free(c.w, box));
  if (b.status != ncclSuccess)
    return std::string("not run: ncclGetUniqueId failed on PE 0: ") +
           ncclGetErrorString(static_cast<ncclResult_t>(b.status));
  watch(c, "NCCL start-up (ncclCommInitRank)");
  const ncclResult_t r = ncclCommInitRank(&c.comm, c.npes, b.id, c.me);
  c.dog->disarm();
  std::string mine;
  if (r != ncclSuccess) {
    mine = std::string("ncclCommInitRank failed on PE ") + std::to_string(c.me) + ": " + ncclGetErrorString(r) +
           " (" + ncclGetLastError(nullptr) + ")";
    std::fprintf(stderr, "tether_bench_coll[PE %d]: %s\n", c.me, mine.c_str());
    c.comm = nullptr;
  }
  if (agree(c, r == ncclSuccess ? 0 : 1, TETHER_RED_SUM) > 0) {
    if (c.comm != nullptr) ncclCommAbort(c.comm);
    c.comm = nullptr;
    return "not run: " + (mine.empty() ? std::string("ncclCommInitRank failed on another PE") : mine);
  }
  int v = 0;
  NK(ncclGetVersion(&v));
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
         " (header " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
         std::to_string(NCCL_PATCH) + "), NCCL_NVLS_ENABLE=" +
         (std::getenv("NCCL_NVLS_ENABLE") ? std::getenv("NCCL_NVLS_ENABLE") : "(unset)");
}

// The largest size whose buffers fit this PE's share of its GPU's free memory (the smallest over the PEs).
size_t capSize(Ctx& c, int ndev, size_t want) {
  size_t freeB = 0, totalB = 0;
  CK(cudaMemGetInfo(&freeB, &totalB));
  const int local = tether_local_size(c.w);
  const size_t sharers = static_cast<size_t>(std::max(1, (local - 1 - c.device) / ndev + 1));
  const size_t share = freeB / sharers, reserve = size_t{512} << 20;
  const size_t buffers = c.comm ? 4 : 2;
  size_t s = want;
  while (s > c.o.minSize && buffers * s + reserve > share) s /= 2;
  return static_cast<size_t>(agree(c, static_cast<double>(s), TETHER_RED_MIN));
}

const char* kExtraUsage =
    "tether_bench_coll: team collectives, tether (stream forms, device form) vs NCCL, n PEs with one GPU each\n"
    "  rows (--ops): allreduce, allgather, reduce_scatter, alltoall, broadcast, device_allreduce, device_sync\n"
    "  --max-size defaults to 1G here (capped by free GPU memory); --iters: most timed calls per size (and the\n"
    "  device rows' calls per kernel); --warmup: warm-up calls (default 5)\n"
    "  --budget S     seconds of timed calls per op, size and implementation (default 0.2)\n"
    "  --no-nccl      tether rows only\n"
    "  heap: TETHER_DEVICE_HEAP_SIZE >= 2 x max-size + 16M saves heap growth (e.g. 3G for 1G)\n"
    "  exit: 0 ok, 1 wrong data, 2 failed call or bad usage, 3 stalled (COLL_BENCH_TIMEOUT s per row), 77 no GPU\n";

}  // namespace

int main(int argc, char** argv) {
  Ctx c;
  std::vector<char*> args(argv, argv + argc);
  std::string err;
  if (!takeOwnOptions(&args, &c, &err) || !tb::parseOptions(static_cast<int>(args.size()), args.data(), &c.o, &err)) {
    std::fprintf(stderr, "tether_bench_coll: %s\n", err.c_str());
    return 2;
  }
  if (c.o.help) {
    std::printf("%s", tb::usage("tether_bench_coll", kExtraUsage).c_str());
    return 0;
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

  TK(tether_init(&c.w));
  c.me = tether_my_pe(c.w);
  c.npes = tether_n_pes(c.w);
  c.world = tether_team_world(c.w);
  void* p = nullptr;
  TK(tether_malloc_kind(c.w, TETHER_SEG_HOST, 64, 64 * sizeof(double), &p));
  c.hx = static_cast<double*>(p);
  tb::Watchdog dog([&c] {
    std::lock_guard<std::mutex> g(c.rowMu);
    std::fprintf(stderr, "tether_bench_coll[PE %d]: %s: not finished after %.0f s (COLL_BENCH_TIMEOUT): stalled\n",
                 c.me, c.row.c_str(), timeoutSeconds());
  }, c.me == 0 ? 0 : 2);
  c.dog = &dog;

  // No GPU on some PE: every PE skips.
  int ndev = 0;
  const bool haveGpu = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
  if (agree(c, haveGpu ? 0 : 1, TETHER_RED_SUM) > 0) {
    if (c.me == 0) std::printf("SKIP: no GPU visible (tether_bench_coll needs one GPU per PE)\n");
    std::fflush(stdout);
    TK(tether_free(c.w, c.hx));
    TK(tether_finalize(c.w));
    return 77;
  }
  CK(cudaSetDevice(tether_local_pe(c.w) % ndev));
  CK(cudaGetDevice(&c.device));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, c.device));
  c.gpu = prop.name;
  c.info = tb::collectRunInfo("coll", c.o, c.npes);
  CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
  CK(cudaEventCreate(&c.e0));
  CK(cudaEventCreate(&c.e1));

  setenv("NCCL_NVLS_ENABLE", "0", 0);  // NVLink multicast off unless the environment says otherwise (shared machines)
  c.ncclNote = c.noNccl ? "not run (--no-nccl)" : bootNccl(c, ndev);
  if (c.me == 0 && c.comm == nullptr) std::fprintf(stderr, "tether_bench_coll: NCCL %s\n", c.ncclNote.c_str());
  const size_t want = c.o.maxSize;
  c.o.maxSize = capSize(c, ndev, want);
  if (c.o.minSize > c.o.maxSize) c.o.minSize = c.o.maxSize;
  c.bufBytes = std::max<size_t>(c.o.maxSize, 64);
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, c.bufBytes, &p));
  c.tSrc = static_cast<float*>(p);
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, c.bufBytes, &p));
  c.tDst = static_cast<float*>(p);
  TK(tether_device_handle(c.w, &c.h));  // after the last symmetric allocation
  TK(tether_team_device_view(c.world, &c.h, &c.view));
  if (c.comm) {
    CK(cudaMalloc(&c.nSrc, c.bufBytes));
    CK(cudaMalloc(&c.nDst, c.bufBytes));
  }
  CK(cudaMalloc(&c.bad, sizeof *c.bad));

  if (c.me == 0 && !c.o.jsonPath.empty()) {
    if (c.o.jsonPath == "-") {
      c.json = stdout;
      c.table = stderr;
    } else if ((c.json = std::fopen(c.o.jsonPath.c_str(), "w")) == nullptr) {
      std::fprintf(stderr, "tether_bench_coll: cannot open %s; no JSON lines\n", c.o.jsonPath.c_str());
    }
  }
  printHeader(c);
  if (c.me == 0 && c.o.maxSize < want)
    std::fprintf(c.table, "# max-size capped to %s by free GPU memory (wanted %s)\n",
                 tb::formatSize(c.o.maxSize).c_str(), tb::formatSize(want).c_str());

  for (const OpDesc& od : kOps) runOp(c, od);
  runDevice(c);

  CK(cudaStreamSynchronize(c.s));
  barrier(c);
  if (c.me == 0) {
    std::fprintf(c.table, "\n# coll: all data validated (%ld rows, %d PEs)\n", c.rows, c.npes);
    std::fflush(c.table);
  }
  if (c.json != nullptr && c.json != stdout) std::fclose(c.json);
  if (c.comm) NK(ncclCommDestroy(c.comm));
  for (void* q : {static_cast<void*>(c.nSrc), static_cast<void*>(c.nDst), static_cast<void*>(c.bad)}) CK(cudaFree(q));
  CK(cudaEventDestroy(c.e0));
  CK(cudaEventDestroy(c.e1));
  CK(cudaStreamDestroy(c.s));
  TK(tether_free(c.w, c.tDst));
  TK(tether_free(c.w, c.tSrc));
  TK(tether_free(c.w, c.hx));
  TK(tether_finalize(c.w));
  return 0;
}
