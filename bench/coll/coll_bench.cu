// tether_bench_coll: team collectives, tether against NCCL (issue #21), n PEs under tetherrun, one GPU per PE, in one
// run with one method. The rows, data, check, timing, tables and JSON lines are bench/coll/coll_rows.h's (shared with
// tether_bench_nvshmem_coll, NVSHMEM's twin in bench/nvshmem/nvshmem_coll.cu); this file holds the two
// implementations' calls and the start-up. See bench/README.md "coll".
//   impl "tether": stream model tether_team_<op>_on_stream, host model tether_team_<op> (the blocking host forms: on
//                  DEVICE objects they run the GPU engine, or the CPU path under TETHER_COLL_GPU=0), device model a
//                  kernel calling tether::device::team_allreduce / team_sync <Scope::Block>; on the world team, DEVICE
//                  symmetric buffers.
//   impl "nccl":   stream model ncclAllReduce / ncclAllGather / ncclReduceScatter / ncclBroadcast, alltoall as one
//                  group of ncclSend + ncclRecv to every rank (itself included, as nccl-tests do); host model the same
//                  call followed by cudaStreamSynchronize (what a host program does to get a blocking collective);
//                  cudaMalloc'd buffers (as nccl-tests); no device model.
// NCCL (NCCL_NVLS_ENABLE defaults to 0 here, as scripts/gpu-check sets it): its unique id is made on PE 0 and handed
// to the others through a HOST symmetric buffer (tether_put + barrier); ncclCommInitRank on every PE. NCCL needs one
// GPU per rank: when PEs share a GPU, --no-nccl is given, or NCCL fails to start, the run says why and measures the
// tether rows only.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "coll_rows.h"
#include "tether/device.cuh"

namespace dev = tether::device;
using namespace coll_rows;

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

// The device model's kernel: `iters` calls (which 0: team_allreduce of kDeviceCount floats, 1: team_sync).
__global__ void __launch_bounds__(kDeviceThreads)
    kDeviceLoop(tether_device_handle_t h, tether_device_team_t t, float* d, const float* x, int iters, int which) {
  for (int i = 0; i < iters; ++i) {
    if (which == 0)
      dev::team_allreduce<dev::Scope::Block>(h, t, d, x, kDeviceCount, dev::RedOp::Sum);
    else
      dev::team_sync<dev::Scope::Block>(h, t);
  }
}

struct TetherImpl : Impl {
  TetherImpl() : Impl("tether") {}
  tether_team_t world = TETHER_TEAM_INVALID;
  tether_device_handle_t h{};
  tether_device_team_t view{};

  void enqueue(Op op, size_t count, cudaStream_t st) override {
    void* s = static_cast<void*>(st);
    switch (op) {
      case Op::AllReduce:
        TK(tether_team_allreduce_on_stream(world, dst, src, count, TETHER_FLOAT, TETHER_RED_SUM, s));
        break;
      case Op::AllGather:
        TK(tether_team_allgather_on_stream(world, dst, src, count, TETHER_FLOAT, s));
        break;
      case Op::ReduceScatter:
        TK(tether_team_reduce_scatter_on_stream(world, dst, src, count, TETHER_FLOAT, TETHER_RED_SUM, s));
        break;
      case Op::AllToAll:
        TK(tether_team_alltoall_on_stream(world, dst, src, count, TETHER_FLOAT, s));
        break;
      case Op::Broadcast:
        TK(tether_team_broadcast_on_stream(world, dst, src, count, TETHER_FLOAT, 0, s));
        break;
    }
  }
  void host(Op op, size_t count) override {
    switch (op) {
      case Op::AllReduce:
        TK(tether_team_allreduce(world, dst, src, count, TETHER_FLOAT, TETHER_RED_SUM));
        break;
      case Op::AllGather:
        TK(tether_team_allgather(world, dst, src, count, TETHER_FLOAT));
        break;
      case Op::ReduceScatter:
        TK(tether_team_reduce_scatter(world, dst, src, count, TETHER_FLOAT, TETHER_RED_SUM));
        break;
      case Op::AllToAll:
        TK(tether_team_alltoall(world, dst, src, count, TETHER_FLOAT));
        break;
      case Op::Broadcast:
        TK(tether_team_broadcast(world, dst, src, count, TETHER_FLOAT, 0));
        break;
    }
  }
  bool hasDevice() const override { return true; }
  void device(int which, int iters, cudaStream_t s) override {
    kDeviceLoop<<<1, kDeviceThreads, 0, s>>>(h, view, dst, src, iters, which);
  }
};

struct NcclImpl : Impl {
  NcclImpl() : Impl("nccl") {}
  ncclComm_t comm = nullptr;
  int npes = 0;
  cudaStream_t hostStream = nullptr;  // the host model's stream (the bench's)

  void enqueue(Op op, size_t count, cudaStream_t s) override {
    switch (op) {
      case Op::AllReduce:
        NK(ncclAllReduce(src, dst, count, ncclFloat, ncclSum, comm, s));
        break;
      case Op::AllGather:
        NK(ncclAllGather(src, dst, count, ncclFloat, comm, s));
        break;
      case Op::ReduceScatter:
        NK(ncclReduceScatter(src, dst, count, ncclFloat, ncclSum, comm, s));
        break;
      case Op::AllToAll:
        NK(ncclGroupStart());
        for (int p = 0; p < npes; ++p) {
          const size_t off = static_cast<size_t>(p) * count;
          NK(ncclSend(src + off, count, ncclFloat, p, comm, s));
          NK(ncclRecv(dst + off, count, ncclFloat, p, comm, s));
        }
        NK(ncclGroupEnd());
        break;
      case Op::Broadcast:
        NK(ncclBroadcast(src, dst, count, ncclFloat, 0, comm, s));
        break;
    }
  }
  void host(Op op, size_t count) override {
    enqueue(op, count, hostStream);
    CK(cudaStreamSynchronize(hostStream));
  }
};

// NCCL on every PE, or a reason why not (the same decision on every PE). PE 0 makes the unique id and puts it, with
// its status, into every PE's HOST symmetric box; a barrier; then ncclCommInitRank everywhere.
std::string bootNccl(Ctx& c, ncclComm_t* comm) {
  // One GPU per rank: NCCL refuses ranks that share a GPU.
  if (sharedGpus(c)) return "not run: PEs share GPUs (NCCL needs one GPU per rank)";
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
  const ncclResult_t r = ncclCommInitRank(comm, c.npes, b.id, c.me);
  c.dog->disarm();
  std::string mine;
  if (r != ncclSuccess) {
    mine = std::string("ncclCommInitRank failed on PE ") + std::to_string(c.me) + ": " + ncclGetErrorString(r) +
           " (" + ncclGetLastError(nullptr) + ")";
    std::fprintf(stderr, "tether_bench_coll[PE %d]: %s\n", c.me, mine.c_str());
    *comm = nullptr;
  }
  if (agree(c, r == ncclSuccess ? 0 : 1, TETHER_RED_SUM) > 0) {
    if (*comm != nullptr) ncclCommAbort(*comm);
    *comm = nullptr;
    return "not run: " + (mine.empty() ? std::string("ncclCommInitRank failed on another PE") : mine);
  }
  int v = 0;
  NK(ncclGetVersion(&v));
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
         " (header " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
         std::to_string(NCCL_PATCH) + "), NCCL_NVLS_ENABLE=" +
         (std::getenv("NCCL_NVLS_ENABLE") ? std::getenv("NCCL_NVLS_ENABLE") : "(unset)");
}

const char* kExtraUsage =
    "tether_bench_coll: team collectives, tether (stream, host and device models) vs NCCL, n PEs with one GPU each\n"
    "  --no-nccl      tether rows only\n"
    "  heap: TETHER_DEVICE_HEAP_SIZE >= 2 x max-size + 16M saves heap growth (e.g. 3G for 1G)\n";

}  // namespace

int main(int argc, char** argv) {
  Ctx c;
  c.program = "tether_bench_coll";
  c.title = "tether benchmark: coll (team collectives: tether's stream, host and device forms vs NCCL)";
  std::vector<char*> args(argv, argv + argc);
  const size_t before = args.size();
  args.erase(std::remove_if(args.begin() + 1, args.end(), [](const char* a) { return std::strcmp(a, "--no-nccl") == 0; }),
             args.end());
  const bool noNccl = args.size() != before;
  int rc = 0;
  if (!parseArgs(c, args, argc, argv, kExtraUsage, &rc) || !start(c, &rc)) return rc;

  TetherImpl t;
  NcclImpl n;
  t.world = c.world;
  n.npes = c.npes;
  n.hostStream = c.s;
  setenv("NCCL_NVLS_ENABLE", "0", 0);  // NVLink multicast off unless the environment says otherwise (shared machines)
  const std::string ncclNote = noNccl ? "not run (--no-nccl)" : bootNccl(c, &n.comm);
  if (c.me == 0 && n.comm == nullptr) std::fprintf(stderr, "tether_bench_coll: NCCL %s\n", ncclNote.c_str());
  c.notes.push_back("NCCL: " + ncclNote);
  capSize(c, n.comm ? 4 : 2);
  void* p = nullptr;
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, c.bufBytes, &p));
  t.src = static_cast<float*>(p);
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, c.bufBytes, &p));
  t.dst = static_cast<float*>(p);
  TK(tether_device_handle(c.w, &t.h));  // after the last symmetric allocation
  TK(tether_team_device_view(c.world, &t.h, &t.view));
  c.impls.push_back(&t);
  if (n.comm) {
    CK(cudaMalloc(&n.src, c.bufBytes));
    CK(cudaMalloc(&n.dst, c.bufBytes));
    c.impls.push_back(&n);
  }
  openJson(c);
  runRows(c);

  if (n.comm) NK(ncclCommDestroy(n.comm));
  CK(cudaFree(n.src));
  CK(cudaFree(n.dst));
  TK(tether_free(c.w, t.dst));
  TK(tether_free(c.w, t.src));
  finish(c);
  return 0;
}
