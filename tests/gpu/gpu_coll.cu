// Team collectives on GPU memory (issue #21): the host forms (tether_team_*) on DEVICE objects (the GPU engine, or the
// CPU path under TETHER_COLL_GPU=0), and the device forms (tether::device::team_*) in kernels at block, warp and grid
// scope (a cooperative launch of 4 blocks), and the stream forms (tether_team_*_on_stream: one block, or a grid from
// TETHER_COLL_BLOCK_BYTES per block) on a blocking stream, on the world team, the even PEs and the world reversed;
// int64/double/uint8 allreduce with their ops, in place and not; int32/uint8 reduce and reduce_scatter (slices on
// different 16-byte phases); broadcast, allgather, alltoall; a host allreduce whose src a kernel on the legacy default
// stream fills late (legacyOrderCase); a stream allreduce captured into a CUDA graph and replayed (graphCase). Results
// against a reference the host computes from inputs every member generates from the seed (MP_SEED, printed).
// GPU_COLL_MISMATCH=1: rank 1 starts with TETHER_COLL_GPU=0, so a host allreduce on DEVICE objects runs on the GPU on
// every member but that one: every member must fail with TETHER_ERR_MISMATCH (and the team stay usable).
// GPU_COLL_THREADS=1: two teams of every PE (the world in order and reversed), each driven by its own thread of every
// PE: host allreduces on DEVICE objects (the GPU engine) on both teams at once, the even PEs' threads starting in one
// order and the odd PEs' in the other, with jitter, so the kernels of the two teams reach a PE's GPU in either order.
// One engine stream per PE would queue one team's kernel behind the other's and hang (until TETHER_TIMEOUT).
// Under TETHER_FORCE_PROXY=1 (gpu_coll_proxy) and split over two netns hosts (gpu_netns_coll) the device and stream
// reductions pull the members they cannot load through the proxy ring into the team's scratch.
#include <cinttypes>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <type_traits>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu_util.h"
#include "../mp/coll_ref.h"
#include "tether/device.cuh"

namespace dev = tether::device;
using dev::RedOp;
using dev::Scope;

namespace {

tether_t w;
int me, npes;
uint64_t seed;
constexpr size_t kBytes = 1 << 20;
char* dA;  // symmetric DEVICE buffers
char* dB;
cudaStream_t st;  // the stream forms' stream (blocking: it waits for the default stream's cudaMemcpy)

template <typename T>
T input(uint64_t c, int m, size_t i) {
  return coll_ref::input<T>(seed, c, m, i);
}
template <typename T>
T refOp(RedOp op, T a, T b) {
  return coll_ref::combine(op, a, b);
}

template <Scope S, typename T>
__global__ void kAllreduce(tether_device_handle_t h, tether_device_team_t t, T* d, const T* s, size_t n, RedOp op) {
  dev::team_allreduce<S>(h, t, d, s, n, op);
}
template <Scope S, typename T>
__global__ void kRooted(tether_device_handle_t h, tether_device_team_t t, T* d, const T* s, size_t n, RedOp op,
                        int root) {
  if (root >= 0) dev::team_reduce<S>(h, t, d, s, n, op, root);
  else dev::team_reduce_scatter<S>(h, t, d, s, n, op);
}
template <Scope S>
__global__ void kMovers(tether_device_handle_t h, tether_device_team_t t, char* a, char* b, size_t bytes, int root,
                        int which) {
  if (which == 0) dev::team_broadcast<S>(h, t, b, a, bytes, root);
  if (which == 1) dev::team_allgather<S>(h, t, b, a, bytes);
  if (which == 2) dev::team_alltoall<S>(h, t, b, a, bytes);
}

uint64_t caseNo = 0;
const bool small = std::getenv("GPU_COLL_SMALL") != nullptr;  // small cases only (for the compute-sanitizer run)

// 0: host form, 1: device form at block scope, 2: device form at warp scope, 3: stream form (on st), 4: device form
// at grid scope (4 blocks of 256 threads, cooperative).
constexpr int kForms = 5;
template <typename T>
void allreduceCase(tether_team_t team, const tether_device_handle_t& h, const tether_device_team_t& t, RedOp op,
                   size_t count, bool inPlace, int form) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  std::vector<T> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in[i] = input<T>(c, my, i);
  T* src = reinterpret_cast<T*>(dA);
  T* dst = inPlace ? src : reinterpret_cast<T*>(dB);
  gpu_test::copyLanded(src, in.data(), count * sizeof(T));
  const tether_dtype_t dt = std::is_same<T, double>::value ? TETHER_DOUBLE
                                   : sizeof(T) == 1                ? TETHER_UINT8
                                                                   : TETHER_INT64;
  if (form == 0) {
    MP_OK(tether_team_allreduce(team, dst, src, count, dt, static_cast<tether_red_op_t>(op)));
  } else if (form == 3) {
    MP_OK(tether_team_allreduce_on_stream(team, dst, src, count, dt, static_cast<tether_red_op_t>(op), st));
    CK(cudaStreamSynchronize(st));
  } else {
    if (form == 1) kAllreduce<Scope::Block><<<1, 256>>>(h, t, dst, src, count, op);
    else if (form == 2) kAllreduce<Scope::Warp><<<1, 32>>>(h, t, dst, src, count, op);
    else CK(dev::launch_cooperative(kAllreduce<Scope::Grid, T>, dim3(4), dim3(256), 0, nullptr, h, t, dst,
                                    static_cast<const T*>(src), count, op));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
  }
  CK(cudaMemcpy(out.data(), dst, count * sizeof(T), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; ++i) {
    T want = input<T>(c, 0, i);
    for (int m = 1; m < n; ++m) want = refOp(op, want, input<T>(c, m, i));
    if (std::memcmp(&out[i], &want, sizeof(T)) != 0) {
      char msg[160];
      std::snprintf(msg, sizeof msg, "allreduce form %d case %" PRIu64 " count %zu element %zu (MP_SEED=%" PRIu64 ")",
                    form, c, count, i, seed);
      mp::fail(__FILE__, __LINE__, "result", msg);
    }
  }
  // The team must be done reading src before the next case overwrites it (host forms end with a barrier already).
  MP_OK(tether_team_sync(team));
}

// reduce (root >= 0: the team PE whose dest gets the result) or reduce_scatter (root < 0: count per member, src holds
// n * count; in place: dest = src + my * count), in every form. Counts that are not multiples of 16 bytes put the
// members' slices of reduce_scatter on different 16-byte phases, so members take different paths of the reduction
// loop (vectors or elements) in the same call.
template <typename T>
void rootedCase(tether_team_t team, const tether_device_handle_t& h, const tether_device_team_t& t, RedOp op,
                size_t count, bool inPlace, int root, int form) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  const size_t total = root >= 0 ? count : count * static_cast<size_t>(n);
  std::vector<T> in(total), out(count);
  for (size_t i = 0; i < total; ++i) in[i] = input<T>(c, my, i);
  T* src = reinterpret_cast<T*>(dA);
  T* dst = !inPlace ? reinterpret_cast<T*>(dB) : root >= 0 ? src : src + static_cast<size_t>(my) * count;
  gpu_test::copyLanded(src, in.data(), total * sizeof(T));
  const T mark = input<T>(c + 1000000, my, 0);  // a non-root's dest must stay as it was (not in place)
  if (!inPlace) gpu_test::copyLanded(dst, &mark, sizeof(T));
  const tether_dtype_t dt = sizeof(T) == 1 ? TETHER_UINT8 : TETHER_INT32;
  const auto rop = static_cast<tether_red_op_t>(op);
  if (form == 0) {
    if (root >= 0) MP_OK(tether_team_reduce(team, dst, src, count, dt, rop, root));
    else MP_OK(tether_team_reduce_scatter(team, dst, src, count, dt, rop));
  } else if (form == 3) {
    if (root >= 0) MP_OK(tether_team_reduce_on_stream(team, dst, src, count, dt, rop, root, st));
    else MP_OK(tether_team_reduce_scatter_on_stream(team, dst, src, count, dt, rop, st));
    CK(cudaStreamSynchronize(st));
  } else {
    if (form == 1) kRooted<Scope::Block><<<1, 256>>>(h, t, dst, src, count, op, root);
    else if (form == 2) kRooted<Scope::Warp><<<1, 32>>>(h, t, dst, src, count, op, root);
    else CK(dev::launch_cooperative(kRooted<Scope::Grid, T>, dim3(4), dim3(256), 0, nullptr, h, t, dst,
                                    static_cast<const T*>(src), count, op, root));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
  }
  CK(cudaMemcpy(out.data(), dst, count * sizeof(T), cudaMemcpyDeviceToHost));
  auto fail = [&](size_t i, const char* what) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "%s form %d case %" PRIu64 " count %zu element %zu%s (MP_SEED=%" PRIu64 ")",
                  root >= 0 ? "reduce" : "reduce_scatter", form, c, count, i, what, seed);
    mp::fail(__FILE__, __LINE__, "result", msg);
  };
  if (root >= 0 && my != root) {
    if (!inPlace && std::memcmp(&out[0], &mark, sizeof(T)) != 0) fail(0, " (a non-root's dest was written)");
  } else {
    const size_t first = root >= 0 ? 0 : static_cast<size_t>(my) * count;
    for (size_t i = 0; i < count; ++i) {
      T want = input<T>(c, 0, first + i);
      for (int m = 1; m < n; ++m) want = refOp(op, want, input<T>(c, m, first + i));
      if (std::memcmp(&out[i], &want, sizeof(T)) != 0) fail(i, "");
    }
  }
  MP_OK(tether_team_sync(team));
}

void moversCase(tether_team_t team, const tether_device_handle_t& h, const tether_device_team_t& t, size_t bytes,
                int which, int form) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team), root = n - 1;
  const size_t words = bytes / 4 * static_cast<size_t>(n);
  std::vector<uint32_t> in(words), out(words);
  for (size_t i = 0; i < words; ++i) in[i] = input<uint32_t>(c, my, i);
  gpu_test::copyLanded(dA, in.data(), words * 4);
  if (form == 0) {
    const size_t cnt = bytes / 4;
    if (which == 0) MP_OK(tether_team_broadcast(team, dB, dA, cnt, TETHER_UINT32, root));
    if (which == 1) MP_OK(tether_team_allgather(team, dB, dA, cnt, TETHER_UINT32));
    if (which == 2) MP_OK(tether_team_alltoall(team, dB, dA, cnt, TETHER_UINT32));
  } else if (form == 3) {
    const size_t cnt = bytes / 4;
    if (which == 0) MP_OK(tether_team_broadcast_on_stream(team, dB, dA, cnt, TETHER_UINT32, root, st));
    if (which == 1) MP_OK(tether_team_allgather_on_stream(team, dB, dA, cnt, TETHER_UINT32, st));
    if (which == 2) MP_OK(tether_team_alltoall_on_stream(team, dB, dA, cnt, TETHER_UINT32, st));
    CK(cudaStreamSynchronize(st));
  } else {
    if (form == 1) kMovers<Scope::Block><<<1, 256>>>(h, t, dA, dB, bytes, root, which);
    else if (form == 2) kMovers<Scope::Warp><<<1, 32>>>(h, t, dA, dB, bytes, root, which);
    else CK(dev::launch_cooperative(kMovers<Scope::Grid>, dim3(4), dim3(256), 0, nullptr, h, t, dA, dB, bytes, root,
                                    which));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
  }
  CK(cudaMemcpy(out.data(), dB, which == 0 ? bytes : bytes * static_cast<size_t>(n), cudaMemcpyDeviceToHost));
  const size_t per = bytes / 4;
  for (int m = 0; m < (which == 0 ? 1 : n); ++m)
    for (size_t i = 0; i < per; ++i) {
      uint32_t want = 0;
      if (which == 0) want = input<uint32_t>(c, root, i);
      if (which == 1) want = input<uint32_t>(c, m, i);
      if (which == 2) want = input<uint32_t>(c, m, static_cast<size_t>(my) * per + i);
      if (out[static_cast<size_t>(m) * per + i] != want) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "mover %d form %d case %" PRIu64 " block %d element %zu (MP_SEED=%" PRIu64 ")",
                      which, form, c, m, i, seed);
        mp::fail(__FILE__, __LINE__, "result", msg);
      }
    }
  MP_OK(tether_team_sync(team));
}

// Copies bytes from src to dst after delayNs of spinning: work the program queued on the legacy default stream.
__global__ void kLateCopy(char* dst, const char* src, size_t bytes, uint64_t delayNs) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < delayNs);
  for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = src[i];
}

// A host form reads this member's src only after what the program queued on the legacy default stream before the
// call (tether.h): a kernel there that fills src 3 ms late must be seen by every member, not the zeros before it. The
// GPU engine orders its kernel after that work on the GPU (no host wait); the CPU path settles it on the host.
void legacyOrderCase(tether_team_t team) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  constexpr size_t kCount = 4096, kB = kCount * sizeof(int64_t);
  std::vector<int64_t> in(kCount), out(kCount);
  for (size_t i = 0; i < kCount; ++i) in[i] = input<int64_t>(c, my, i);
  char* src = dA;
  char* dst = dA + kB;
  char* staged = dB;
  gpu_test::copyLanded(staged, in.data(), kB);
  CK(cudaMemset(src, 0, kB));
  CK(cudaDeviceSynchronize());
  MP_OK(tether_team_sync(team));  // every member's src is zero now
  kLateCopy<<<1, 256>>>(src, staged, kB, 3000000);
  CK(cudaGetLastError());
  MP_OK(tether_team_allreduce(team, dst, src, kCount, TETHER_INT64, TETHER_RED_SUM));
  CK(cudaMemcpy(out.data(), dst, kB, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kCount; ++i) {
    int64_t want = input<int64_t>(c, 0, i);
    for (int m = 1; m < n; ++m) want = refOp(RedOp::Sum, want, input<int64_t>(c, m, i));
    if (out[i] != want) {
      char msg[200];
      std::snprintf(msg, sizeof msg, "element %zu: a member read its src before the legacy stream's kernel filled it "
                    "(MP_SEED=%" PRIu64 ")", i, seed);
      mp::fail(__FILE__, __LINE__, "legacy-stream order", msg);
    }
  }
  MP_OK(tether_team_sync(team));
}

// CUDA graphs: a stream allreduce captured (its inputs from a round counter the graph advances, a checking kernel
// after it, a team sync) and replayed kGraphReplays times back to back on a non-blocking stream: every replay must
// combine that replay's inputs (the stream forms keep their epochs in GPU memory; tether.h says graph-capturable).
constexpr int kGraphReplays = 10;
constexpr size_t kGraphCount = 4096;
__host__ __device__ int64_t graphInput(int m, uint64_t round, size_t i) {
  return (m + 1) * 1000 + static_cast<int64_t>(round) * 7 + static_cast<int64_t>(i % 97);
}
__global__ void kGraphBump(unsigned long long* round) { ++*round; }
__global__ void kGraphFill(int64_t* src, int my, const unsigned long long* round) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < kGraphCount; i += gridDim.x * blockDim.x)
    src[i] = graphInput(my, *round, i);
}
__global__ void kGraphCheck(const int64_t* dst, int n, const unsigned long long* round, unsigned long long* errors) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < kGraphCount; i += gridDim.x * blockDim.x) {
    int64_t want = 0;
    for (int m = 0; m < n; ++m) want += graphInput(m, *round, i);
    if (dst[i] != want) atomicAdd(errors, 1ull);
  }
}
void graphCase(tether_team_t team, const char* label) {
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  auto* src = reinterpret_cast<int64_t*>(dA);
  auto* dst = reinterpret_cast<int64_t*>(dB);
  unsigned long long *round = nullptr, *errors = nullptr;
  CK(cudaMalloc(&round, sizeof *round));
  CK(cudaMalloc(&errors, sizeof *errors));
  cudaStream_t gs = nullptr;
  CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  CK(cudaMemsetAsync(round, 0, sizeof *round, gs));
  CK(cudaMemsetAsync(errors, 0, sizeof *errors, gs));
  CK(cudaStreamSynchronize(gs));
  MP_OK(tether_team_sync(team));
  gpu_test::replay(gs, [&] {
    kGraphBump<<<1, 1, 0, gs>>>(round);
    kGraphFill<<<8, 256, 0, gs>>>(src, my, round);
    MP_OK(tether_team_allreduce_on_stream(team, dst, src, kGraphCount, TETHER_INT64, TETHER_RED_SUM, gs));
    kGraphCheck<<<8, 256, 0, gs>>>(dst, n, round, errors);
    MP_OK(tether_team_sync_on_stream(team, gs));
  }, kGraphReplays);
  unsigned long long errs = 0, r = 0;
  CK(cudaMemcpy(&errs, errors, sizeof errs, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&r, round, sizeof r, cudaMemcpyDeviceToHost));
  MP_CHECK(r == kGraphReplays);
  if (errs != 0) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%s: %llu wrong elements over %d replays of a captured allreduce", label, errs,
                  kGraphReplays);
    mp::fail(__FILE__, __LINE__, "graph", msg);
  }
  CK(cudaStreamDestroy(gs));
  CK(cudaFree(round));
  CK(cudaFree(errors));
  MP_OK(tether_team_sync(team));
  if (my == 0) std::printf("PE %d: %s (%d PEs): a captured stream allreduce, %d replays: OK\n", me, label, n,
                           kGraphReplays);
}

void onTeam(tether_team_t team, const tether_device_handle_t& h, const char* label) {
  tether_device_team_t t;
  MP_OK(tether_team_device_view(team, &h, &t));
  caseNo = 0;
  const int n = tether_team_n_pes(team);
  legacyOrderCase(team);
  for (int form = 0; form < kForms; ++form) {
    for (RedOp op : {RedOp::Sum, RedOp::Min, RedOp::Xor})
      for (size_t count : {size_t{1}, size_t{1000}, size_t{60000}})
        for (bool inPlace : {false, true}) {
          if (small && count > 1000) continue;
          allreduceCase<int64_t>(team, h, t, op, count, inPlace, form);
          allreduceCase<uint8_t>(team, h, t, op, count, inPlace, form);
        }
    for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Max})
      for (size_t count : {size_t{7}, size_t{4096}}) allreduceCase<double>(team, h, t, op, count, false, form);
    for (RedOp op : {RedOp::Sum, RedOp::Max})
      for (size_t count : {size_t{1}, size_t{13}, size_t{5000}})
        for (bool inPlace : {false, true}) {
          if (small && count > 13) continue;
          rootedCase<int32_t>(team, h, t, op, count, inPlace, n - 1, form);
          rootedCase<int32_t>(team, h, t, op, count, inPlace, -1, form);
          rootedCase<uint8_t>(team, h, t, op, count * 3, inPlace, -1, form);
        }
    for (int which = 0; which < 3; ++which)
      for (size_t bytes : {size_t{4}, size_t{1024}, kBytes / 4 / static_cast<size_t>(n) / 4 * 4})
        if (!small || bytes <= 1024) moversCase(team, h, t, bytes, which, form);
  }
  if (tether_team_my_pe(team) == 0) std::printf("PE %d: %s (%d PEs): host, device (block, warp, grid) and stream team collectives OK "
                                            "(allreduce, reduce, reduce_scatter, broadcast, allgather, alltoall; host "
                                            "forms after the legacy stream's work)%s\n", me, label, n,
                                            t.host_run ? " (device broadcast by host)" : "");
}

}  // namespace

// GPU_COLL_MISMATCH: the members disagree about the GPU engine; the call fails alike everywhere, then a sync works.
int mismatchCase() {
  int64_t* x = static_cast<int64_t*>(gpu_test::symAlloc(w, TETHER_SEG_DEVICE, 1 << 16));
  MP_EXPECT_STATUS(tether_team_allreduce(tether_team_world(w), x, x, 1000, TETHER_INT64, TETHER_RED_SUM),
                   TETHER_ERR_MISMATCH);
  std::printf("PE %d: %s\n", me, tether_last_error());
  MP_OK(tether_team_sync(tether_team_world(w)));
  if (me == 0) std::printf("PE 0: GPU engine disagreement -> TETHER_ERR_MISMATCH on every member: OK\n");
  MP_OK(tether_free(w, x));
  return mp::finish();
}

// GPU_COLL_THREADS: see the file comment.
int threadsCase() {
  constexpr int kIters = 40;
  constexpr size_t kCount = 20000;  // int64: 160 KB per call, one block
  tether_team_t teams[2] = {TETHER_TEAM_INVALID, TETHER_TEAM_INVALID};
  MP_OK(tether_team_split_strided(tether_team_world(w), 0, 1, npes, nullptr, &teams[0]));
  MP_OK(tether_team_split_strided(tether_team_world(w), npes - 1, -1, npes, nullptr, &teams[1]));
  int64_t* bufs[2];
  for (auto& b : bufs) b = static_cast<int64_t*>(gpu_test::symAlloc(w, TETHER_SEG_DEVICE, 2 * kCount * 8));
  auto drive = [&](int k) {
    const tether_team_t team = teams[k];
    const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
    std::mt19937_64 rng(seed ^ (uint64_t(k) << 32));
    std::vector<int64_t> in(kCount), out(kCount);
    int64_t* src = bufs[k];
    int64_t* dst = bufs[k] + kCount;
    for (int it = 0; it < kIters; ++it) {
      const uint64_t c = uint64_t(k) * 1000 + uint64_t(it);
      for (size_t i = 0; i < kCount; ++i) in[i] = input<int64_t>(c, my, i);
      gpu_test::copyLanded(src, in.data(), kCount * 8);
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
      MP_OK(tether_team_allreduce(team, dst, src, kCount, TETHER_INT64, TETHER_RED_SUM));
      CK(cudaMemcpy(out.data(), dst, kCount * 8, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < kCount; ++i) {
        int64_t want = input<int64_t>(c, 0, i);
        for (int m = 1; m < n; ++m) want = refOp(RedOp::Sum, want, input<int64_t>(c, m, i));
        if (out[i] != want) {
          char msg[160];
          std::snprintf(msg, sizeof msg, "team %d call %d element %zu (MP_SEED=%" PRIu64 ")", k, it, i, seed);
          mp::fail(__FILE__, __LINE__, "threads: result", msg);
        }
      }
    }
  };
  // Even PEs start team 0's thread first, odd PEs team 1's; the other follows 5 ms later.
  const int first = me % 2;
  std::thread a([&] { drive(first); });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::thread b([&] { drive(1 - first); });
  a.join();
  b.join();
  MP_OK(tether_barrier_all(w));
  for (auto& b2 : bufs) MP_OK(tether_free(w, b2));
  for (auto& t : teams) MP_OK(tether_team_destroy(t));
  if (me == 0) std::printf("PE 0: host collectives on two teams from two threads, in opposite orders: OK\n");
  return mp::finish();
}

int main() {
  const char* rank = std::getenv("TETHER_RANK");
  const bool mismatch = std::getenv("GPU_COLL_MISMATCH") != nullptr;
  if (mismatch && rank && std::strcmp(rank, "1") == 0) setenv("TETHER_COLL_GPU", "0", 1);
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  w = mp::world();
  me = tether_my_pe(w);
  npes = tether_n_pes(w);
  if (mismatch) return mismatchCase();
  seed = coll_ref::seedFromEnv("gpu_coll", me);
  if (std::getenv("GPU_COLL_THREADS")) return threadsCase();
  dA = static_cast<char*>(gpu_test::symAlloc(w, TETHER_SEG_DEVICE, kBytes));
  dB = static_cast<char*>(gpu_test::symAlloc(w, TETHER_SEG_DEVICE, kBytes));
  CK(cudaStreamCreate(&st));
  tether_device_handle_t h;
  MP_OK(tether_device_handle(w, &h));
  tether_team_t world = tether_team_world(w), even = TETHER_TEAM_INVALID, reversed = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 2, (npes + 1) / 2, nullptr, &even));
  MP_OK(tether_team_split_strided(world, npes - 1, -1, npes, nullptr, &reversed));
  onTeam(world, h, "world");
  if (even) onTeam(even, h, "even PEs");
  onTeam(reversed, h, "reversed world");
  graphCase(world, "world");
  graphCase(reversed, "reversed world");
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_team_destroy(even));
  MP_OK(tether_team_destroy(reversed));
  MP_OK(tether_free(w, dB));
  MP_OK(tether_free(w, dA));
  CK(cudaStreamDestroy(st));
  return mp::finish();
}
