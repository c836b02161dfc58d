// tether_bench_nvshmem_coll: the NVSHMEM twin of tether_bench_coll (bench/coll/coll_bench.cu, issue #21) — the same
// rows, sizes, data, check, timing, tables and JSON lines (bench/coll/coll_rows.h drives both), with NVSHMEM's
// collectives on the world team (NVSHMEM_TEAM_WORLD) and nvshmem_malloc'd buffers. n PEs under tetherrun, one GPU each.
//
//   tetherrun -n N tether_bench_nvshmem_coll [harness options] [--models stream,host,device] [--json FILE]
//
//   impl "nvshmem", model stream: nvshmemx_float_sum_reduce_on_stream (allreduce), nvshmemx_float_fcollect_on_stream
//     (allgather), nvshmemx_float_sum_reducescatter_on_stream, nvshmemx_float_alltoall_on_stream,
//     nvshmemx_float_broadcast_on_stream (root 0);
//   model host: the host-side calls of the same names without _on_stream / nvshmemx_ (nvshmem_float_sum_reduce, ...);
//     each is taken as complete on return, and the row's validation checks that: its check kernel runs right after
//     the call on the bench's own stream, so a call that returned early reads as wrong data (exit 1);
//   model device: a kernel of 1 block x 256 threads calling nvshmemx_float_sum_reduce_block (8 B) or
//     nvshmemx_team_sync_block (NVSHMEM_TEAM_WORLD) `iters` times, started with nvshmemx_collective_launch (NVSHMEM's
//     rule for kernels that synchronise across PEs).
// Start-up: nvshmem_boot.h (tether hands out NVSHMEM's unique id; nvshmemx_init_attr with UID bootstrap), as the other
// twins. Host coordination (barriers, agreements) goes through tether's host API in coll_rows.h, never inside a timed
// region. NVSHMEM's environment (set when unset, every PE the same, printed in the header): NVSHMEM_SYMMETRIC_SIZE =
// 2 x the buffers' size + 256M, NVSHMEM_REMOTE_TRANSPORT=none (one host, P2P only), NVSHMEM_DISABLE_NVLS=1 (never
// NVLink multicast on the shared machines).
// Exit: 0 ok, 1 wrong data, 2 failed call or bad usage, 3 stalled (COLL_BENCH_TIMEOUT s per row), 77 no GPU.
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>
#include <string>
#include <vector>

#include "../coll/coll_rows.h"
#include "nvshmem_boot.h"

using namespace coll_rows;

namespace {

constexpr const char* kProgram = "tether_bench_nvshmem_coll";

// An NVSHMEM call's status: non-zero exits 2 naming the call.
#define NV(x)                                                                                                    \
  do {                                                                                                           \
    const int r_ = (x);                                                                                          \
    if (r_ != 0) {                                                                                               \
      std::fprintf(stderr, "%s:%d: %s: NVSHMEM status %d\n", __FILE__, __LINE__, #x, r_);                        \
      std::exit(2);                                                                                              \
    }                                                                                                            \
  } while (0)

__global__ void __launch_bounds__(kDeviceThreads) kDeviceLoop(float* d, const float* x, int iters, int which) {
  for (int i = 0; i < iters; ++i) {
    if (which == 0)
      nvshmemx_float_sum_reduce_block(NVSHMEM_TEAM_WORLD, d, x, kDeviceCount);
    else
      nvshmemx_team_sync_block(NVSHMEM_TEAM_WORLD);
  }
}

struct NvshmemImpl : Impl {
  NvshmemImpl() : Impl("nvshmem") {}
  static constexpr nvshmem_team_t kTeam = NVSHMEM_TEAM_WORLD;

  void enqueue(Op op, size_t count, cudaStream_t s) override {
    switch (op) {
      case Op::AllReduce:
        NV(nvshmemx_float_sum_reduce_on_stream(kTeam, dst, src, count, s));
        break;
      case Op::AllGather:
        NV(nvshmemx_float_fcollect_on_stream(kTeam, dst, src, count, s));
        break;
      case Op::ReduceScatter:
        NV(nvshmemx_float_sum_reducescatter_on_stream(kTeam, dst, src, count, s));
        break;
      case Op::AllToAll:
        NV(nvshmemx_float_alltoall_on_stream(kTeam, dst, src, count, s));
        break;
      case Op::Broadcast:
        NV(nvshmemx_float_broadcast_on_stream(kTeam, dst, src, count, 0, s));
        break;
    }
  }
  void host(Op op, size_t count) override {
    switch (op) {
      case Op::AllReduce:
        NV(nvshmem_float_sum_reduce(kTeam, dst, src, count));
        break;
      case Op::AllGather:
        NV(nvshmem_float_fcollect(kTeam, dst, src, count));
        break;
      case Op::ReduceScatter:
        NV(nvshmem_float_sum_reducescatter(kTeam, dst, src, count));
        break;
      case Op::AllToAll:
        NV(nvshmem_float_alltoall(kTeam, dst, src, count));
        break;
      case Op::Broadcast:
        NV(nvshmem_float_broadcast(kTeam, dst, src, count, 0));
        break;
    }
  }
  bool hasDevice() const override { return true; }
  void device(int which, int iters, cudaStream_t s) override {
    float* d = dst;
    const float* x = src;
    void* args[] = {&d, &x, &iters, &which};
    NV(nvshmemx_collective_launch(reinterpret_cast<const void*>(kDeviceLoop), dim3(1), dim3(kDeviceThreads), args, 0,
                                  s));
  }
};

const char* kExtraUsage =
    "tether_bench_nvshmem_coll: NVSHMEM's team collectives (stream, host and device models), the twin of\n"
    "  tether_bench_coll: the same rows and method; n PEs with one GPU each\n";

}  // namespace

int main(int argc, char** argv) {
  Ctx c;
  c.program = kProgram;
  c.title = "tether benchmark: coll, NVSHMEM twin (NVSHMEM's team collectives, same rows and method as tether_bench_coll)";
  std::vector<char*> args(argv, argv + argc);
  int rc = 0;
  if (!parseArgs(c, args, argc, argv, kExtraUsage, &rc) || !start(c, &rc)) return rc;
  capSize(c, 2);
  std::string heap, remote, nvls;
  const std::string heapWant = std::to_string(2 * c.bufBytes + (size_t{256} << 20));
  if (!tether_nvshmem::envDefault("NVSHMEM_SYMMETRIC_SIZE", heapWant, &heap) ||
      !tether_nvshmem::envDefault("NVSHMEM_REMOTE_TRANSPORT", "none", &remote) ||
      !tether_nvshmem::envDefault("NVSHMEM_DISABLE_NVLS", "1", &nvls)) {
    std::fprintf(stderr, "%s: setenv failed\n", kProgram);
    return 2;
  }
  watch(c, "start-up (unique-id exchange through tether, nvshmemx_init_attr, nvshmem_malloc)");
  std::string err;
  if (!tether_nvshmem::bootNvshmem(c.w, &err)) {
    std::fprintf(stderr, "%s[PE %d]: %s\n", kProgram, c.me, err.c_str());
    return 2;
  }
  NvshmemImpl n;
  n.src = static_cast<float*>(nvshmem_malloc(c.bufBytes));
  n.dst = static_cast<float*>(nvshmem_malloc(c.bufBytes));
  if (n.src == nullptr || n.dst == nullptr) {
    std::fprintf(stderr, "%s[PE %d]: nvshmem_malloc of 2 x %zu bytes failed (NVSHMEM_SYMMETRIC_SIZE=%s)\n", kProgram,
                 c.me, c.bufBytes, heap.c_str());
    return 2;
  }
  c.dog->disarm();
  c.notes.push_back("NVSHMEM " + tether_nvshmem::nvshmemVersion() + "; NVSHMEM_SYMMETRIC_SIZE=" + heap +
                    ", NVSHMEM_REMOTE_TRANSPORT=" + remote + ", NVSHMEM_DISABLE_NVLS=" + nvls);
  c.impls.push_back(&n);
  openJson(c);
  runRows(c);

  nvshmem_free(n.dst);
  nvshmem_free(n.src);
  nvshmem_finalize();
  finish(c);
  return 0;
}
