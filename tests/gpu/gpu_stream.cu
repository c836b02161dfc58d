// Stream-ordered operations (#6) on the GPU, 2+ PEs (ring: each PE talks to the next, hears from the previous). Run
// once directly (p2p/self paths: copies, stream memops, kernels) and once with TETHER_FORCE_PROXY=1 (every other PE
// through the proxy ring, posted by a one-thread kernel on the stream). For each segment kind (HOST, DEVICE):
//  1. ordering with kernels: a kernel fills the source, putmem_signal_on_stream sends it, the peer's stream waits
//     for the signal and a kernel there checks every byte (and counts errors into device memory);
//  2. every on-stream operation: putmem, getmem, p (1/2/4/8 bytes), putmem_signal SET/ADD, signal_op SET/ADD,
//     signal_wait_until and wait_until with each comparison, quiet, fence, atomics (add, set, fetch_add, 32-bit
//     fetch_or), barrier_all/sync_all on stream, with checks after a stream synchronisation;
//  3. a prepared set posted many times with patched offset and signal values;
//  4. CUDA graph capture of a whole exchange (put_signal, wait, check kernel, barrier) and 20 replays; 4b. a captured
//     barrier_all_on_stream synchronises on each of 20 back-to-back replays (the world team's sync under capture,
//     memops with resets where PEs share the GPU);
//  5. doorbell transfers: a put_signal set armed kPosts times before any ring; each round a kernel fills the source
//     and rings the doorbell (tether::device::ring_doorbell), the copy engines send it, the peer waits and checks.
// Every PE prints a line after each section (stdout line-buffered by mp::init: a hang shows where it stopped).
// Exits 77 without a GPU. Its first run (2 PEs on 2 H200s, 2026-11-23, commit 998e434) printed nothing in 170 s: a
// lazy kernel load behind the armed doorbell in section 5, fixed below (preloadKernels) and in the library (its
// kernels are loaded at init). Since then it passes: 2 H200s one PE per GPU (2026-11-26), and with section 4b at 2/4
// PEs sharing one H100, directly and with the proxy, and under memcheck (2026-12-06,
// bench/results/h100/gpu_tests_2026-12-06l.txt).
#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_util.h"
#include "tether/device.cuh"

namespace {

constexpr size_t kBytes = 64 * 1024;
constexpr int kPosts = 32;

__device__ unsigned char pat(int pe, uint64_t round, size_t k) {
  return static_cast<unsigned char>(pe * 31 + round * 7 + k * 13 + 1);
}

__global__ void fill(unsigned char* p, size_t n, int pe, uint64_t round) {
  for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) p[k] = pat(pe, round, k);
}

// Counts bytes that differ from the pattern into *errors (device memory).
__global__ void check(const unsigned char* p, size_t n, int pe, uint64_t round, unsigned long long* errors) {
  for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x)
    if (p[k] != pat(pe, round, k)) atomicAdd(errors, 1ull);
}

// Round number taken from a device word at run time (graph replays: each replay advances it).
__global__ void fillFrom(unsigned char* p, size_t n, int pe, const unsigned long long* round) {
  const uint64_t r = *round;
  for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) p[k] = pat(pe, r, k);
}
__global__ void checkFrom(const unsigned char* p, size_t n, int pe, const unsigned long long* round,
                          unsigned long long* errors) {
  const uint64_t r = *round;
  for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x)
    if (p[k] != pat(pe, r, k)) atomicAdd(errors, 1ull);
}
__global__ void bump(unsigned long long* round) { ++*round; }
__global__ void spinNs(uint64_t ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < ns);
}
// Counts slots[0 .. n) (this PE's copy) that differ from *round into *errors.
__global__ void checkSlots(const volatile uint64_t* slots, int n, const unsigned long long* round,
                           unsigned long long* errors) {
  if (static_cast<int>(threadIdx.x) < n && slots[threadIdx.x] != *round) atomicAdd(errors, 1ull);
}
// One block: fills p for `round`, then rings the doorbell with `value` (after every thread's stores).
__global__ void fillAndRing(tether::device::Handle h, unsigned char* p, size_t n, int pe, uint64_t round,
                            uint64_t* bell, uint64_t value) {
  for (size_t k = threadIdx.x; k < n; k += blockDim.x) p[k] = pat(pe, round, k);
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    tether::device::ring_doorbell(h, bell, value);
  }
}

// This PE's copy of a symmetric object as kernels address it (HOST objects: through their registered GPU alias).
template <typename T>
T* gpuView(tether_t w, T* sym) {
  tether_device_handle_t h;
  MP_OK(tether_device_handle(w, &h));
  for (const tether_device_segment_t& g : h.seg) {
    const uint64_t a = reinterpret_cast<uint64_t>(sym);
    if (g.present && a - g.sym_base < g.size) return reinterpret_cast<T*>(g.my_view + (a - g.sym_base));
  }
  MP_CHECK(!"symmetric address not in any segment of the device handle");
  return nullptr;
}

// Loads every kernel of this file now. Under CUDA's lazy loading (the default) a kernel is loaded at its first launch
// and the load may synchronise the context; section 5 first launches fillAndRing while the doorbell's internal stream
// waits for the ring that kernel makes: the launch would wait for that wait, forever (tether.h, doorbells).
void preloadKernels() {
  const void* const kernels[] = {reinterpret_cast<const void*>(fill),      reinterpret_cast<const void*>(check),
                                 reinterpret_cast<const void*>(fillFrom),  reinterpret_cast<const void*>(checkFrom),
                                 reinterpret_cast<const void*>(bump),      reinterpret_cast<const void*>(fillAndRing),
                                 reinterpret_cast<const void*>(spinNs),    reinterpret_cast<const void*>(checkSlots)};
  cudaFuncAttributes a;
  for (const void* k : kernels) CK(cudaFuncGetAttributes(&a, k));
}

uint64_t readWord(tether_t w, uint64_t* sym) {
  uint64_t v = 0;
  MP_OK(tether_get(w, &v, sym, 8, tether_my_pe(w)));
  return v;
}

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w), next = (me + 1) % n, prev = (me + n - 1) % n;
  int dev = -1;
  CK(cudaGetDevice(&dev));  // tether_init leaves this PE's GPU current
  std::printf("PE %d of %d on GPU %d of %d\n", me, n, dev, ndev);
  preloadKernels();
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned char *src = nullptr, *dst = nullptr;
  unsigned long long* errors = nullptr;
  uint64_t* fetched = nullptr;  // pinned: fetched values of stream atomics
  CK(cudaMalloc(&src, kBytes));
  CK(cudaMalloc(&dst, kBytes));
  CK(cudaMalloc(&errors, sizeof *errors));
  CK(cudaMemsetAsync(errors, 0, sizeof *errors, s));  // on s: the legacy stream does not order s (non-blocking)
  CK(cudaHostAlloc(&fetched, 64 * sizeof(uint64_t), cudaHostAllocMapped));
  const tether_seg_kind_t kinds[2] = {TETHER_SEG_HOST, TETHER_SEG_DEVICE};
  const char* kindName[2] = {"HOST", "DEVICE"};

  for (int ki = 0; ki < 2; ++ki) {
    auto* buf = static_cast<unsigned char*>(gpu_test::symAlloc(w, kinds[ki], kBytes * kPosts));
    auto* words = static_cast<uint64_t*>(gpu_test::symAlloc(w, kinds[ki], 64 * sizeof(uint64_t)));
    MP_OK(tether_put(w, words, std::vector<uint64_t>(64, 0).data(), 64 * sizeof(uint64_t), me));
    MP_OK(tether_barrier_all(w));
    uint64_t* sig = &words[0];
    unsigned char* view = gpuView(w, buf);

    // 1. kernel -> put_signal -> peer waits -> peer's kernel checks
    for (uint64_t r = 1; r <= 8; ++r) {
      fill<<<32, 256, 0, s>>>(src, kBytes, me, r);
      MP_OK(tether_putmem_signal_on_stream(w, buf, src, kBytes, sig, r, TETHER_SIGNAL_SET, next, s));
      MP_OK(tether_signal_wait_until_on_stream(w, sig, TETHER_CMP_GE, r, s));
      check<<<32, 256, 0, s>>>(view, kBytes, prev, r, errors);
      MP_OK(tether_barrier_all_on_stream(w, s));  // nobody overwrites buf before the peer checked it
    }
    CK(cudaStreamSynchronize(s));
    unsigned long long errs = 0;
    CK(cudaMemcpy(&errs, errors, sizeof errs, cudaMemcpyDeviceToHost));
    MP_CHECK(errs == 0);
    std::printf("PE %d %s: 1. kernel -> put_signal -> wait -> kernel: ok\n", me, kindName[ki]);

    // 2. every operation
    MP_OK(tether_putmem_on_stream(w, buf, src, 4096, next, s));
    MP_OK(tether_getmem_on_stream(w, dst, buf, 4096, next, s));
    const uint8_t v1 = 0xa1;
    const uint16_t v2 = 0xb2b2;
    const uint32_t v4 = 0xc3c3c3c3u;
    const uint64_t v8 = 0xd4d4d4d4d4d4d4d4ull;
    MP_OK(tether_p_on_stream(w, reinterpret_cast<char*>(&words[8]) + 0, &v1, 1, next, s));
    MP_OK(tether_p_on_stream(w, reinterpret_cast<char*>(&words[8]) + 2, &v2, 2, next, s));
    MP_OK(tether_p_on_stream(w, reinterpret_cast<char*>(&words[8]) + 4, &v4, 4, next, s));
    MP_OK(tether_p_on_stream(w, &words[9], &v8, 8, next, s));
    MP_OK(tether_putmem_signal_on_stream(w, buf, src, 256, &words[10], 3, TETHER_SIGNAL_ADD, next, s));
    MP_OK(tether_signal_op_on_stream(w, &words[11], 7, TETHER_SIGNAL_SET, next, s));
    MP_OK(tether_signal_op_on_stream(w, &words[12], 5, TETHER_SIGNAL_ADD, next, s));
    MP_OK(tether_atomic_add_on_stream(w, &words[13], 2, next, s));
    MP_OK(tether_atomic_set_on_stream(w, &words[14], 99, next, s));
    MP_OK(tether_atomic_fetch_add_on_stream(w, &words[15], 1, &fetched[0], 0, s));
    uint32_t orv = 1u << me;
    MP_OK(tether_atomic_on_stream(w, TETHER_AMO_FETCH_OR, TETHER_UINT32, &words[16], &orv, nullptr, &fetched[1], 0,
                                  s));
    MP_OK(tether_quiet_on_stream(w, s));
    MP_OK(tether_fence_on_stream(w, s));
    MP_OK(tether_sync_all_on_stream(w, s));
    // waits with every comparison on words the previous PE set above
    const uint64_t three = 3, seven = 7, five = 5, big = 100;
    MP_OK(tether_wait_until_on_stream(w, &words[10], TETHER_UINT64, TETHER_CMP_EQ, &three, s));
    MP_OK(tether_wait_until_on_stream(w, &words[11], TETHER_UINT64, TETHER_CMP_GE, &seven, s));
    MP_OK(tether_wait_until_on_stream(w, &words[12], TETHER_UINT64, TETHER_CMP_GT, &three, s));
    MP_OK(tether_wait_until_on_stream(w, &words[12], TETHER_UINT64, TETHER_CMP_NE, &three, s));
    MP_OK(tether_wait_until_on_stream(w, &words[12], TETHER_UINT64, TETHER_CMP_LE, &five, s));
    MP_OK(tether_wait_until_on_stream(w, &words[12], TETHER_UINT64, TETHER_CMP_LT, &big, s));
    MP_OK(tether_signal_wait_until_on_stream(w, &words[11], TETHER_CMP_EQ, 7, s));
    MP_OK(tether_barrier_all_on_stream(w, s));
    CK(cudaStreamSynchronize(s));
    MP_OK(tether_barrier_all(w));
    MP_CHECK(readWord(w, &words[9]) == v8);
    uint64_t packed = readWord(w, &words[8]);
    MP_CHECK((packed & 0xff) == v1 && ((packed >> 16) & 0xffff) == v2 && (packed >> 32) == v4);
    MP_CHECK(readWord(w, &words[13]) == 2 && readWord(w, &words[14]) == 99);
    if (me == 0) MP_CHECK(readWord(w, &words[15]) == static_cast<uint64_t>(n));
    MP_CHECK(fetched[0] < static_cast<uint64_t>(n));
    std::vector<unsigned char> a(4096), b(4096);
    CK(cudaMemcpy(a.data(), src, 4096, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), dst, 4096, cudaMemcpyDeviceToHost));
    MP_CHECK(std::memcmp(a.data(), b.data(), 4096) == 0);  // got back what this PE put into next's buf
    std::printf("PE %d %s: 2. every operation: ok\n", me, kindName[ki]);

    // 3. prepared set: put_signal at a patched offset with a patched signal, wait for the previous PE's, check
    tether_op_desc_t ops[2];
    std::memset(ops, 0, sizeof ops);
    ops[0].kind = TETHER_OP_PUT_SIGNAL;
    ops[0].pe = next;
    ops[0].dest = buf;
    ops[0].src = src;
    ops[0].nbytes = kBytes;
    ops[0].sig_addr = &words[20];
    ops[0].sig_op = TETHER_SIGNAL_SET;
    ops[0].flags = TETHER_OP_PATCH_SIGNAL;  // the source stays; the destination moves via its own op below
    ops[1].kind = TETHER_OP_SIGNAL_WAIT;
    ops[1].sig_addr = &words[20];
    ops[1].cmp = TETHER_CMP_GE;
    ops[1].flags = TETHER_OP_PATCH_SIGNAL;
    tether_op_set_t set = nullptr;
    MP_OK(tether_prepare(w, ops, 2, &set));
    for (int i = 0; i < kPosts; ++i) {
      fill<<<32, 256, 0, s>>>(src, kBytes, me, 100 + i);
      const tether_post_patch_t patch{0, static_cast<uint64_t>(i) + 1};
      MP_OK(tether_post_on_stream(set, s, &patch));
      check<<<32, 256, 0, s>>>(view, kBytes, prev, 100 + i, errors);
      MP_OK(tether_sync_all_on_stream(w, s));
    }
    MP_OK(tether_op_set_free(set));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(&errs, errors, sizeof errs, cudaMemcpyDeviceToHost));
    MP_CHECK(errs == 0);
    std::printf("PE %d %s: 3. prepared set x %d: ok\n", me, kindName[ki], kPosts);

    // 4. graph capture of a whole exchange, replayed: the round number lives in device memory (bump per replay)
    unsigned long long* round = nullptr;
    CK(cudaMalloc(&round, sizeof *round));
    CK(cudaMemsetAsync(round, 0, sizeof *round, s));  // before the first replay on s (not on the legacy stream)
    const gpu_test::Graph exchange(s, [&] {
      bump<<<1, 1, 0, s>>>(round);
      fillFrom<<<32, 256, 0, s>>>(src, kBytes, me, round);
      MP_OK(tether_putmem_signal_on_stream(w, buf, src, kBytes, &words[21], 1, TETHER_SIGNAL_SET, next, s));
      MP_OK(tether_signal_wait_until_on_stream(w, &words[21], TETHER_CMP_EQ, 1, s));
      checkFrom<<<32, 256, 0, s>>>(view, kBytes, prev, round, errors);
    });
    // The signal's value repeats on every replay (SET 1, wait EQ 1), so the host resets the word between replays.
    const uint64_t zero = 0;
    for (int i = 0; i < 20; ++i) {
      exchange.launch();
      CK(cudaStreamSynchronize(s));
      MP_OK(tether_barrier_all(w));
      MP_OK(tether_put(w, &words[21], &zero, 8, me));
      MP_OK(tether_barrier_all(w));
    }
    CK(cudaMemcpy(&errs, errors, sizeof errs, cudaMemcpyDeviceToHost));
    MP_CHECK(errs == 0);
    uint64_t r = 0;
    CK(cudaMemcpy(&r, round, sizeof r, cudaMemcpyDeviceToHost));
    MP_CHECK(r == 20);
    std::printf("PE %d %s: 4. graph capture, 20 replays: ok\n", me, kindName[ki]);

    // 4b. a captured stream barrier synchronises on every replay (under capture it is the world team's sync, whose
    // epoch lives in GPU memory, or where PEs share a GPU memops with resets): each replay bumps a round word, puts
    // it into slot me of every PE (the copy engine reads it at run time), PE 0 after a ~200 us delay; after
    // barrier_all_on_stream every slot must hold this replay's round, and a second barrier keeps round r + 1 out
    // until every PE checked. With epochs captured as
    // values (before), the second replay's barrier passed at once and the others saw PE 0's previous round.
    {
      uint64_t* slots = &words[32];  // n <= 16 words (words[32 .. 48))
      MP_CHECK(n <= 16);
      MP_OK(tether_put(w, slots, std::vector<uint64_t>(16, 0).data(), 16 * sizeof(uint64_t), me));
      CK(cudaMemsetAsync(round, 0, sizeof *round, s));
      CK(cudaStreamSynchronize(s));
      MP_OK(tether_barrier_all(w));
      gpu_test::replay(s, [&] {  // 20 replays back to back: only the barriers keep order
        bump<<<1, 1, 0, s>>>(round);
        if (me == 0) spinNs<<<1, 1, 0, s>>>(200000);
        for (int pe = 0; pe < n; ++pe) MP_OK(tether_putmem_on_stream(w, &slots[me], round, 8, pe, s));
        MP_OK(tether_barrier_all_on_stream(w, s));
        checkSlots<<<1, 32, 0, s>>>(gpuView(w, slots), n, round, errors);
        MP_OK(tether_barrier_all_on_stream(w, s));
      }, 20);
      CK(cudaMemcpy(&errs, errors, sizeof errs, cudaMemcpyDeviceToHost));
      MP_CHECK(errs == 0);
      CK(cudaMemcpy(&r, round, sizeof r, cudaMemcpyDeviceToHost));
      MP_CHECK(r == 20);
      MP_OK(tether_barrier_all(w));
      std::printf("PE %d %s: 4b. captured barrier_all_on_stream, 20 replays: ok\n", me, kindName[ki]);
    }
    CK(cudaFree(round));
    // 5. doorbell: armed before any ring; rung from kernels; round i's copy has landed everywhere before fill i + 1
    // (every PE passes the stream's sync_all only after its own signal i arrived).
    {
      tether_device_handle_t h;
      MP_OK(tether_device_handle(w, &h));
      tether_op_desc_t op;
      std::memset(&op, 0, sizeof op);
      op.kind = TETHER_OP_PUT_SIGNAL;
      op.pe = next;
      op.dest = buf;
      op.src = src;
      op.nbytes = kBytes;
      op.sig_addr = &words[22];
      op.signal = 1;
      op.sig_op = TETHER_SIGNAL_SET;
      op.flags = TETHER_OP_PATCH_SIGNAL;
      tether_op_set_t bellSet = nullptr;
      MP_OK(tether_prepare(w, &op, 1, &bellSet));
      tether_doorbell_t db = nullptr;
      MP_OK(tether_doorbell_create(bellSet, &words[23], &db));
      for (int i = 1; i <= kPosts; ++i) {
        const tether_post_patch_t patch{0, static_cast<uint64_t>(i - 1)};  // signal value i
        MP_OK(tether_doorbell_arm(db, static_cast<uint64_t>(i), &patch));
      }
      MP_OK(tether_barrier_all(w));
      for (int i = 1; i <= kPosts; ++i) {
        const uint64_t iu = static_cast<uint64_t>(i);
        fillAndRing<<<1, 256, 0, s>>>(h, src, kBytes, me, 200 + iu, &words[23], iu);
        CK(cudaGetLastError());
        MP_OK(tether_signal_wait_until_on_stream(w, &words[22], TETHER_CMP_GE, iu, s));
        check<<<32, 256, 0, s>>>(view, kBytes, prev, 200 + iu, errors);
        MP_OK(tether_sync_all_on_stream(w, s));
      }
      CK(cudaStreamSynchronize(s));
      MP_OK(tether_doorbell_free(db));
      MP_OK(tether_op_set_free(bellSet));
      CK(cudaMemcpy(&errs, errors, sizeof errs, cudaMemcpyDeviceToHost));
      MP_CHECK(errs == 0);
      MP_CHECK(readWord(w, &words[22]) == static_cast<uint64_t>(kPosts));
      std::printf("PE %d %s: 5. doorbell, %d rings: ok\n", me, kindName[ki], kPosts);
    }
    MP_OK(tether_free(w, words));
    MP_OK(tether_free(w, buf));
    if (me == 0) std::printf("stream operations on %s segments: ok\n", kindName[ki]);
  }
  CK(cudaStreamDestroy(s));
  CK(cudaFree(src));
  CK(cudaFree(dst));
  CK(cudaFree(errors));
  CK(cudaFreeHost(fetched));
  return mp::finish();
}
