// GPU conformance of the host-initiated API (run under tetherrun, 2+ PEs): every segment-kind pair for put/get
// (local buffer in host memory or GPU memory, target HOST or DEVICE segment), nbi + quiet, p/g, atomics on DEVICE
// words (also racing a kernel's atomics on the same word), put_signal and waits on DEVICE words, ptr, calloc/realloc/
// growth of the DEVICE heap. Instantiated by tests/gpu/CMakeLists.txt on two GPUs, on one shared GPU, and with
// legacy CUDA IPC.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu_util.h"

using gpu_test::symAlloc;

__global__ void gpuAdd(unsigned long long* target, int iters) {
  for (int i = 0; i < iters; ++i) atomicAdd_system(target, 1ull);
}

namespace {

unsigned char pattern(int pe, size_t i, size_t salt) { return static_cast<unsigned char>(pe * 37 + i * 13 + salt); }

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  int dev = 0;
  CK(cudaGetDevice(&dev));

  // DEFAULT is DEVICE when every PE has a GPU.
  void* d = nullptr;
  MP_OK(tether_malloc(w, 4096, &d));
  cudaPointerAttributes attr;
  CK(cudaPointerGetAttributes(&attr, d));
  MP_CHECK(attr.type == cudaMemoryTypeDevice);
  MP_CHECK(tether_segment_kind(w, d) == TETHER_SEG_DEVICE);
  MP_CHECK(tether_ptr(w, d, me) != nullptr);
  const bool staged = tether_ptr(w, d, next) == nullptr;  // the staged path maps no peer memory for this GPU
  if (me == 0) std::printf("DEVICE path to the peer: %s\n", staged ? "staged" : "p2p");
  MP_OK(tether_free(w, d));

  const size_t maxBytes = 4 << 20;
  const tether_seg_kind_t kinds[2] = {TETHER_SEG_HOST, TETHER_SEG_DEVICE};
  const char* kindName[2] = {"HOST", "DEVICE"};
  std::vector<unsigned char> hostBuf(maxBytes), check(maxBytes);
  unsigned char* devBuf = nullptr;
  CK(cudaMalloc(&devBuf, maxBytes));

  for (int tk = 0; tk < 2; ++tk) {
    auto* target = static_cast<unsigned char*>(symAlloc(w, kinds[tk], maxBytes));
    for (int local = 0; local < 2; ++local) {  // 0: host buffer, 1: device buffer
      unsigned char* src = local ? devBuf : hostBuf.data();
      for (size_t sz = 1; sz <= maxBytes; sz *= 8) {
        const size_t salt = sz + 7 * tk + 3 * local;
        for (size_t i = 0; i < sz; ++i) check[i] = pattern(me, i, salt);
        if (local)
          gpu_test::copyLanded(devBuf, check.data(), sz);
        else
          std::memcpy(hostBuf.data(), check.data(), sz);
        // put to next (blocking for odd sizes, nbi + quiet otherwise), barrier, then prev's data is in my target.
        MP_OK(sz % 2 ? tether_put(w, target, src, sz, next) : tether_put_nbi(w, target, src, sz, next));
        MP_OK(tether_quiet(w));
        MP_OK(tether_barrier_all(w));
        // get my own copy back (self path) into the other kind of local buffer and compare with prev's pattern.
        unsigned char* dst = local ? hostBuf.data() : devBuf;
        MP_OK(tether_get(w, dst, target, sz, me));
        if (!local) CK(cudaMemcpy(hostBuf.data(), devBuf, sz, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < sz; ++i)
          if (hostBuf[i] != pattern(prev, i, salt)) {
            std::fprintf(stderr, "FAIL PE %d: target %s, local %s, size %zu: byte %zu is %d, expected %d\n", me,
                         kindName[tk], local ? "device" : "host", sz, i, hostBuf[i], pattern(prev, i, salt));
            return 1;
          }
        // get from the peer directly (D->D / D->H / H->D across PEs).
        MP_OK(tether_get_nbi(w, hostBuf.data(), target, sz, next));
        MP_OK(tether_quiet(w));
        for (size_t i = 0; i < sz; ++i) MP_CHECK(hostBuf[i] == pattern(me, i, salt));
        MP_OK(tether_barrier_all(w));
      }
    }
    MP_OK(tether_free(w, target));
  }
  if (me == 0) std::printf("put/get over every kind pair: ok\n");

  // p/g and atomics on DEVICE words; a kernel races the host atomics on PE 0's counter.
  uint64_t* words = nullptr;  // DEVICE (the default kind here), zeroed: device memory from malloc is not
  MP_OK(tether_calloc(w, 64, sizeof(uint64_t), reinterpret_cast<void**>(&words)));
  MP_CHECK(tether_segment_kind(w, words) == TETHER_SEG_DEVICE);
  MP_OK(tether_uint64_p(w, &words[1], 1000 + me, next));
  MP_OK(tether_barrier_all(w));
  uint64_t v = 0;
  MP_OK(tether_uint64_g(w, &v, &words[1], me));
  MP_CHECK(v == static_cast<uint64_t>(1000 + prev));
  const int hostIters = 200, gpuIters = 500;
  // A kernel races the host atomics on PE 0's counter, through tether_ptr (p2p path only: the staged path gives
  // this GPU no mapping of the peer's memory, so there the kernel runs only on PE 0 itself). A PE on another host
  // (the UCX path: tests/netns) has no mapping of PE 0 either, whatever its path to its own next PE: in a mixed job
  // only PE 0's host runs the kernel. Each PE that runs it counts itself in PE 0's words[2], so the expected total
  // follows from what the PEs found rather than from one PE's view.
  auto* peerCounter = static_cast<unsigned long long*>(tether_ptr(w, &words[0], 0));
  // (Each host runs a contiguous range of ranks, as tetherrun --ranks starts them: PE 0 shares this host when this
  // host's first rank is 0.)
  const bool hostOfPe0 = me - tether_local_pe(w) == 0;
  MP_CHECK(me == 0 ? peerCounter != nullptr : (peerCounter != nullptr || staged || !hostOfPe0));
  if (peerCounter) MP_OK(tether_uint64_atomic_add(w, &words[2], 1, 0));
  MP_OK(tether_barrier_all(w));
  uint64_t kernelPes = 0;
  MP_OK(tether_uint64_atomic_fetch(w, &words[2], 0, &kernelPes));
  MP_CHECK(kernelPes >= 1 && kernelPes <= static_cast<uint64_t>(n));
  if (peerCounter) {
    gpuAdd<<<4, 32>>>(peerCounter, gpuIters);
    CK(cudaGetLastError());
  }
  for (int i = 0; i < hostIters; ++i) {
    uint64_t old;
    MP_OK(tether_uint64_atomic_fetch_add(w, &words[0], 1, 0, &old));
  }
  CK(cudaDeviceSynchronize());
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_uint64_atomic_fetch(w, &words[0], 0, &v));
  const uint64_t expect = static_cast<uint64_t>(n) * hostIters + kernelPes * 4ull * 32 * gpuIters;
  if (v != expect) {
    std::fprintf(stderr, "FAIL PE %d: counter %llu, expected %llu\n", me, static_cast<unsigned long long>(v),
                 static_cast<unsigned long long>(expect));
    return 1;
  }
  uint32_t* w32 = reinterpret_cast<uint32_t*>(&words[8]);
  uint32_t o32 = 0;
  MP_OK(tether_uint32_atomic_or(w, w32, 1u << me, 0));
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_uint32_atomic_fetch(w, w32, 0, &o32));
  MP_CHECK(o32 == (n >= 32 ? ~0u : (1u << n) - 1));
  int64_t* cs = reinterpret_cast<int64_t*>(&words[9]);
  int64_t old64 = -1;
  MP_OK(tether_int64_atomic_compare_swap(w, cs, 0, me + 1, 0, &old64));
  MP_OK(tether_barrier_all(w));
  int64_t winner = 0;
  MP_OK(tether_int64_atomic_fetch(w, cs, 0, &winner));
  MP_CHECK(winner >= 1 && winner <= n);
  if (me == 0) std::printf("atomics on DEVICE words (racing GPU atomics): ok\n");

  // put_signal into DEVICE memory; signal_wait_until and wait_until on DEVICE words.
  auto* inbox = static_cast<unsigned char*>(symAlloc(w, TETHER_SEG_DEVICE, 1 << 20));
  for (uint64_t round = 1; round <= 10; ++round) {
    const size_t sz = 1 + (round * 65537) % (1 << 20);
    for (size_t i = 0; i < sz; ++i) hostBuf[i] = pattern(me, i, round);
    MP_OK(tether_put_signal(w, inbox, hostBuf.data(), sz, &words[16], round, TETHER_SIGNAL_SET, next));
    uint64_t seen = 0;
    MP_OK(tether_signal_wait_until(w, &words[16], TETHER_CMP_EQ, round, &seen));
    MP_CHECK(seen == round);
    MP_OK(tether_get(w, check.data(), inbox, sz, me));
    for (size_t i = 0; i < sz; ++i) MP_CHECK(check[i] == pattern(prev, i, round));
    MP_OK(tether_sync_all(w));
  }
  MP_OK(tether_int64_atomic_add(w, reinterpret_cast<int64_t*>(&words[20]), 5, next));
  MP_OK(tether_int64_wait_until(w, reinterpret_cast<int64_t*>(&words[20]), TETHER_CMP_GE, 5));
  uint64_t sig = 0;
  MP_OK(tether_signal_fetch(w, &words[16], &sig));
  MP_CHECK(sig == 10);
  if (me == 0) std::printf("signals and waits on DEVICE words: ok\n");

  // calloc/realloc/growth of the DEVICE heap (the test sets a small TETHER_DEVICE_HEAP_SIZE).
  void* z = nullptr;
  MP_OK(tether_calloc(w, 1, 96 << 20, &z));  // beyond the initial device heap: grows
  MP_OK(tether_get(w, check.data(), static_cast<char*>(z) + (96 << 20) - 4096, 4096, next));
  for (int i = 0; i < 4096; ++i) MP_CHECK(check[static_cast<size_t>(i)] == 0);
  const char msg[] = "grown heap, remote write";
  MP_OK(tether_put(w, static_cast<char*>(z) + (90 << 20), msg, sizeof msg, next));
  MP_OK(tether_barrier_all(w));
  char got[sizeof msg];
  MP_OK(tether_get(w, got, static_cast<char*>(z) + (90 << 20), sizeof msg, me));
  MP_CHECK(std::memcmp(got, msg, sizeof msg) == 0);
  void* z2 = nullptr;
  MP_OK(tether_realloc(w, z, 100 << 20, &z2));
  MP_OK(tether_get(w, got, static_cast<char*>(z2) + (90 << 20), sizeof msg, me));
  MP_CHECK(std::memcmp(got, msg, sizeof msg) == 0);
  MP_OK(tether_free(w, z2));
  if (me == 0) std::printf("DEVICE heap calloc/growth/realloc: ok\n");

  MP_OK(tether_free(w, inbox));
  MP_OK(tether_free(w, words));
  CK(cudaFree(devBuf));
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("gpu_rma: %d PEs on GPU %d: OK\n", n, dev);
  return mp::finish();
}
