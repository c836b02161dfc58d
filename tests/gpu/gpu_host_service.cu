// Host atomics and signals on GPU words (DEVICE segment), the calls the host service serves (src/gpu/cuda/
// host_service.h, issue #22); run with TETHER_HOST_SERVICE=1 (a resident kernel answering a mailbox) and =0 (one
// kernel launch per call), any number of PEs:
//  1. contention: 4 host threads per PE, each 300 fetch_add(+1) on every PE's 64-bit counter and 300 on its 32-bit
//     counter; every fetched value a thread sees on a target must be new to this PE (no value fetched twice), and
//     every counter ends at PEs x threads x 300;
//  2. every AMO once with known operands on the next PE's words (32 and 64 bits): fetch, set, swap, compare_swap
//     (hit and miss), inc, add, and/or/xor and their fetching forms, each result checked;
//  2b. small puts and gets (1-16 bytes, the service's inline size, at offsets 0-7) into the next PE's DEVICE buffer,
//     each read back by a small get, the whole buffer at the end by a 64-byte get (a copy-engine copy); tether_p/g;
//  2c. 3 rounds of 200 put_nbi of 8 bytes (more than the service's 64-slot ring) into the next PE's DEVICE buffer, then
//     a signal with no quiet before it: the next PE waits for the signal (a host wait on its GPU word) and must find
//     every value of the round in place (a signal follows the puts before it);
//  2e. 3 rounds of 200 tether_put_local of 8 bytes from one source variable overwritten after each call (local
//     completion: the service copies it into its slot), then tether_fence and a 64-byte put (a copy-engine copy) over
//     the first 8 values, then tether_quiet: after a barrier the next PE must find the fenced put's values over the
//     first 8 and the round's put_local values after them;
//  2d. 32 blocking put_signal of 1-16 bytes into the next PE's DEVICE buffer (the put is posted, the signal's wait
//     completes both), the source overwritten at once, the signal on a DEVICE word and on a HOST word in turn;
//  3. the idle boundary: 300 fetch_inc on the next PE's ring counter with random pauses of 0-3x
//     TETHER_HOST_SERVICE_IDLE between them (the kernel leaves and is restarted, also while a request is being
//     posted); each fetched value must be the count so far (executed exactly once, in order). Seed printed
//     (GPU_SERVICE_SEED repeats a run);
//  4. signals into a waiting kernel: 40 rounds, each PE launches a kernel that polls its own DEVICE signal word for
//     the round's value while the previous PE's host sets it with tether_signal_op (SET, then ADD on a second word);
//     skipped with GPU_SERVICE_SANITIZER=1 (under compute-sanitizer a process's kernels do not run side by side, so
//     the waiting kernel holds back the service kernel of its own process, which the other PE waits for);
//  5. the program's own cudaDeviceSynchronize returns after all this (the service kernel leaves when idle; a hang
//     here fails at the ctest TIMEOUT).
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gpu_util.h"

namespace {

constexpr int kThreads = 4;
constexpr int kPerThread = 300;
constexpr int kIdleRounds = 300;
constexpr int kSignalRounds = 40;

struct Words {
  uint64_t c64;      // section 1
  uint32_t c32;      // section 1
  uint32_t a32;      // section 2
  uint64_t a64;      // section 2
  uint64_t ring;     // section 3
  uint64_t sigSet;   // section 4
  uint64_t sigAdd;   // section 4
  unsigned char bytes[64];  // section 2b
  uint64_t nbi[200];        // section 2c
  uint64_t nbiSig;          // section 2c
  unsigned char ps[16];     // section 2d
  uint64_t psSig;           // section 2d
};

// Polls *word until it reaches want (volatile loads; bounded by ~20 s of %globaltimer); *seen = the last value read.
__global__ void awaitWord(const uint64_t* word, uint64_t want, unsigned long long* seen) {
  uint64_t start, now, v = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    v = *reinterpret_cast<const volatile uint64_t*>(word);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (v < want && now - start < 20000000000ull);
  *seen = v;
}

void amo(tether_t w, tether_amo_t op, tether_dtype_t t, void* dest, uint64_t value, uint64_t cond, uint64_t* fetched,
         int pe) {
  // Operands in the type's width (a 32-bit operation reads 4 bytes of value/cond/fetched).
  uint32_t v32 = static_cast<uint32_t>(value), c32 = static_cast<uint32_t>(cond), f32 = 0;
  const bool narrow = t == TETHER_UINT32;
  MP_OK(tether_atomic(w, op, t, dest, narrow ? static_cast<const void*>(&v32) : &value,
                      narrow ? static_cast<const void*>(&c32) : &cond, narrow ? static_cast<void*>(&f32) : fetched,
                      pe));
  if (narrow && fetched) *fetched = f32;
}

// Section 2 on one word: the sequence of operations and the value each fetching one must return.
void everyAmo(tether_t w, tether_dtype_t t, void* word, int pe) {
  const uint64_t mask = t == TETHER_UINT32 ? 0xffffffffull : ~0ull;
  uint64_t f = 0;
  amo(w, TETHER_AMO_SET, t, word, 0x0f0f0f0f0f0f0f0full & mask, 0, nullptr, pe);
  amo(w, TETHER_AMO_FETCH, t, word, 0, 0, &f, pe);
  MP_CHECK(f == (0x0f0f0f0f0f0f0f0full & mask));
  amo(w, TETHER_AMO_SWAP, t, word, 7, 0, &f, pe);
  MP_CHECK(f == (0x0f0f0f0f0f0f0f0full & mask));
  amo(w, TETHER_AMO_COMPARE_SWAP, t, word, 9, 8, &f, pe);  // miss: stays 7
  MP_CHECK(f == 7);
  amo(w, TETHER_AMO_COMPARE_SWAP, t, word, 9, 7, &f, pe);  // hit: becomes 9
  MP_CHECK(f == 7);
  amo(w, TETHER_AMO_INC, t, word, 0, 0, nullptr, pe);                     // 10
  amo(w, TETHER_AMO_ADD, t, word, 5, 0, nullptr, pe);                     // 15
  amo(w, TETHER_AMO_FETCH_INC, t, word, 0, 0, &f, pe);                    // 16
  MP_CHECK(f == 15);
  amo(w, TETHER_AMO_FETCH_ADD, t, word, mask, 0, &f, pe);                 // 16 - 1 = 15 (wraps)
  MP_CHECK(f == 16);
  amo(w, TETHER_AMO_AND, t, word, 0xc, 0, nullptr, pe);                   // 15 & 12 = 12
  amo(w, TETHER_AMO_FETCH_OR, t, word, 0x3, 0, &f, pe);                   // 15
  MP_CHECK(f == 12);
  amo(w, TETHER_AMO_FETCH_XOR, t, word, 0x5, 0, &f, pe);                  // 10
  MP_CHECK(f == 15);
  amo(w, TETHER_AMO_FETCH_AND, t, word, 0x8, 0, &f, pe);                  // 8
  MP_CHECK(f == 10);
  amo(w, TETHER_AMO_OR, t, word, 0x1, 0, nullptr, pe);                    // 9
  amo(w, TETHER_AMO_XOR, t, word, 0x3, 0, nullptr, pe);                   // 10
  amo(w, TETHER_AMO_FETCH, t, word, 0, 0, &f, pe);
  MP_CHECK(f == 10);
}

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  CK(cudaSetDevice(tether_local_pe(w) % ndev));
  gpu_test::loadKernels({reinterpret_cast<const void*>(awaitWord)});
  const char* svc = std::getenv("TETHER_HOST_SERVICE");
  if (me == 0) std::printf("gpu_host_service: %d PEs, TETHER_HOST_SERVICE=%s\n", n, svc ? svc : "(default: auto)");

  auto* words = static_cast<Words*>(gpu_test::symAlloc(w, TETHER_SEG_DEVICE, sizeof(Words)));
  CK(cudaMemset(words, 0, sizeof(Words)));
  CK(cudaDeviceSynchronize());
  MP_OK(tether_barrier_all(w));

  // 1. contention from host threads of every PE.
  {
    std::vector<std::set<uint64_t>> seen64(static_cast<size_t>(n)), seen32(static_cast<size_t>(n));
    std::atomic<int> dup{0};
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i)
          for (int k = 0; k < n; ++k) {
            const int pe = (me + t + k) % n;
            uint64_t f64 = 0, f32 = 0;
            amo(w, TETHER_AMO_FETCH_ADD, TETHER_UINT64, &words->c64, 1, 0, &f64, pe);
            amo(w, TETHER_AMO_FETCH_INC, TETHER_UINT32, &words->c32, 0, 0, &f32, pe);
            std::lock_guard<std::mutex> lock(mu);
            dup += !seen64[static_cast<size_t>(pe)].insert(f64).second;
            dup += !seen32[static_cast<size_t>(pe)].insert(f32).second;
          }
      });
    for (auto& th : threads) th.join();
    if (dup != 0) std::fprintf(stderr, "PE %d: %d fetched values seen twice\n", me, dup.load());
    MP_CHECK(dup == 0);
    MP_OK(tether_barrier_all(w));
    Words mine{};
    CK(cudaMemcpy(&mine, words, sizeof mine, cudaMemcpyDeviceToHost));
    const uint64_t want = static_cast<uint64_t>(n) * kThreads * kPerThread;
    if (mine.c64 != want || mine.c32 != want)
      std::fprintf(stderr, "PE %d: counters %" PRIu64 " / %u, expected %" PRIu64 "\n", me, mine.c64, mine.c32, want);
    MP_CHECK(mine.c64 == want && mine.c32 == want);
    if (me == 0)
      std::printf("contention: %d PEs x %d threads x %d fetch_add each on every PE's 64/32-bit counters: ok\n", n,
                  kThreads, kPerThread);
  }

  // 2. every AMO, 32 and 64 bits, on the next PE's words.
  everyAmo(w, TETHER_UINT32, &words->a32, next);
  everyAmo(w, TETHER_UINT64, &words->a64, next);
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("every AMO on the next PE's 32/64-bit words: ok\n");

  // 2b. small puts and gets.
  {
    unsigned char model[sizeof(Words::bytes)] = {};
    long wrong = 0;
    for (unsigned len = 1; len <= 16; ++len)
      for (unsigned off = 0; off < 8; ++off) {
        unsigned char src[16], back[16];
        for (unsigned i = 0; i < len; ++i) src[i] = static_cast<unsigned char>(me * 31 + len * 7 + off * 3 + i + 1);
        MP_OK(tether_put(w, words->bytes + off + len, src, len, next));
        std::memcpy(model + off + len, src, len);
        MP_OK(tether_get(w, back, words->bytes + off + len, len, next));
        wrong += std::memcmp(back, src, len) != 0;
      }
    unsigned char all[sizeof(Words::bytes)];
    MP_OK(tether_get(w, all, words->bytes, sizeof all, next));
    wrong += std::memcmp(all, model, sizeof all) != 0;
    uint64_t v = 0;
    MP_OK(tether_uint64_p(w, &words->a64, 0x1122334455667788ull, next));
    MP_OK(tether_uint64_g(w, &v, &words->a64, next));
    wrong += v != 0x1122334455667788ull;
    if (wrong) std::fprintf(stderr, "PE %d: %ld small put/get checks failed\n", me, wrong);
    MP_CHECK(wrong == 0);
    MP_OK(tether_barrier_all(w));
    if (me == 0) std::printf("small puts and gets of 1-16 bytes at offsets 0-7, p and g: ok\n");
  }

  // 2c. posted small puts, then a signal.
  {
    long wrong = 0;
    std::vector<uint64_t> got(200);
    for (uint64_t round = 1; round <= 3; ++round) {
      for (uint64_t i = 0; i < 200; ++i) {
        const uint64_t v = (round << 32) | (static_cast<uint64_t>(me) << 16) | i;
        MP_OK(tether_put_nbi(w, &words->nbi[i], &v, sizeof v, next));
      }
      MP_OK(tether_signal_op(w, &words->nbiSig, round, TETHER_SIGNAL_SET, next));
      MP_OK(tether_signal_wait_until(w, &words->nbiSig, TETHER_CMP_GE, round, nullptr));
      CK(cudaMemcpy(got.data(), words->nbi, 200 * sizeof(uint64_t), cudaMemcpyDeviceToHost));
      for (uint64_t i = 0; i < 200; ++i)
        wrong += got[i] != ((round << 32) | (static_cast<uint64_t>(prev) << 16) | i);
      MP_OK(tether_barrier_all(w));
    }
    if (wrong) std::fprintf(stderr, "PE %d: %ld values from PE %d missing after its signal\n", me, wrong, prev);
    MP_CHECK(wrong == 0);
    if (me == 0) std::printf("posted puts (3 x 200 put_nbi of 8 B) then a signal without quiet: ok\n");
  }

  // 2e. tether_put_local (OpenSHMEM's put: src reusable on return; posted to the service), fence, quiet.
  {
    std::vector<uint64_t> got(200);
    long wrong = 0;
    for (uint64_t round = 1; round <= 3; ++round) {
      uint64_t v = 0;
      for (uint64_t i = 0; i < 200; ++i) {
        v = (round << 40) | (static_cast<uint64_t>(me) << 16) | i;
        MP_OK(tether_put_local(w, &words->nbi[i], &v, sizeof v, next));
      }
      v = 0;  // (the last put's source, reused at once)
      MP_OK(tether_fence(w));
      uint64_t over[8];
      for (uint64_t i = 0; i < 8; ++i) over[i] = (round << 40) | (static_cast<uint64_t>(me) << 16) | 0x8000 | i;
      MP_OK(tether_put(w, &words->nbi[0], over, sizeof over, next));  // over the service's 16 B: a copy
      MP_OK(tether_quiet(w));
      MP_OK(tether_barrier_all(w));
      CK(cudaMemcpy(got.data(), words->nbi, 200 * sizeof(uint64_t), cudaMemcpyDeviceToHost));
      for (uint64_t i = 0; i < 200; ++i)
        wrong += got[i] != ((round << 40) | (static_cast<uint64_t>(prev) << 16) | (i < 8 ? 0x8000 : 0) | i);
      MP_OK(tether_barrier_all(w));
    }
    if (wrong) std::fprintf(stderr, "PE %d: %ld values from PE %d wrong after put_local, fence, put, quiet\n", me,
                            wrong, prev);
    MP_CHECK(wrong == 0);
    if (me == 0) std::printf("put_local (3 x 200 of 8 B), fence, a 64 B put over 8 of them, quiet: ok\n");
  }

  // 2d. blocking put_signal of 1-16 B into GPU memory (the put is posted and the signal's wait completes both): the
  // source is overwritten as soon as the call returns; the signal word is a DEVICE word in odd rounds and a HOST
  // word in even ones (the put and the signal take different routes to the GPU then).
  {
    auto* hostSig = static_cast<uint64_t*>(gpu_test::symAlloc(w, TETHER_SEG_HOST, sizeof(uint64_t)));
    *hostSig = 0;
    MP_OK(tether_barrier_all(w));
    long wrong = 0;
    unsigned char src[16], got[16];
    for (uint64_t round = 1; round <= 32; ++round) {
      const size_t sz = 1 + (round - 1) % 16;
      uint64_t* sig = round % 2 ? &words->psSig : hostSig;
      for (size_t i = 0; i < sz; ++i) src[i] = static_cast<unsigned char>(round * 31 + i * 7 + me);
      MP_OK(tether_put_signal(w, words->ps, src, sz, sig, round, TETHER_SIGNAL_SET, next));
      std::memset(src, 0xEE, sizeof src);  // reusable at once
      MP_OK(tether_signal_wait_until(w, sig, TETHER_CMP_EQ, round, nullptr));
      CK(cudaMemcpy(got, words->ps, sz, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < sz; ++i) wrong += got[i] != static_cast<unsigned char>(round * 31 + i * 7 + prev);
      MP_OK(tether_barrier_all(w));
    }
    if (wrong) std::fprintf(stderr, "PE %d: %ld bytes from PE %d wrong after its put_signal\n", me, wrong, prev);
    MP_CHECK(wrong == 0);
    MP_OK(tether_free(w, hostSig));
    if (me == 0) std::printf("put_signal of 1-16 B (signal on DEVICE and HOST words): ok\n");
  }

  // 3. the idle boundary.
  {
    const char* s = std::getenv("GPU_SERVICE_SEED");
    const uint64_t seed0 = s ? std::strtoull(s, nullptr, 10)
                             : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    const uint64_t seed = seed0 + static_cast<uint64_t>(me);
    std::printf("PE %d: idle boundary: GPU_SERVICE_SEED=%" PRIu64 " (this PE's stream: seed + %d)\n", me, seed0, me);
    std::mt19937_64 rng(seed);
    const char* idleVar = std::getenv("TETHER_HOST_SERVICE_IDLE");
    const double idleUs = idleVar ? std::strtod(idleVar, nullptr) : 100;  // the test sets it in microseconds ("50us")
    std::uniform_real_distribution<double> pause(0, 3 * idleUs);
    long wrong = 0;
    for (int i = 0; i < kIdleRounds; ++i) {
      const auto us = std::chrono::duration<double, std::micro>(pause(rng));
      const auto until = std::chrono::steady_clock::now() + us;
      while (std::chrono::steady_clock::now() < until) {
      }
      uint64_t f = 0;
      amo(w, TETHER_AMO_FETCH_INC, TETHER_UINT64, &words->ring, 0, 0, &f, next);
      wrong += f != static_cast<uint64_t>(i);
    }
    if (wrong) std::fprintf(stderr, "PE %d: %ld fetch_inc across idle pauses fetched a wrong count\n", me, wrong);
    MP_CHECK(wrong == 0);
    MP_OK(tether_barrier_all(w));
    uint64_t ring = 0;
    CK(cudaMemcpy(&ring, &words->ring, sizeof ring, cudaMemcpyDeviceToHost));
    MP_CHECK(ring == kIdleRounds);
    if (me == 0)
      std::printf("idle boundary: %d fetch_inc with pauses of 0-%.0f us: ok\n", kIdleRounds, 3 * idleUs);
  }

  // 4. signals into a kernel that waits for them.
  const char* sanitizer = std::getenv("GPU_SERVICE_SANITIZER");
  if (sanitizer && std::strcmp(sanitizer, "1") == 0) {
    if (me == 0) std::printf("signals into waiting kernels: skipped (GPU_SERVICE_SANITIZER=1)\n");
  } else {
    unsigned long long* seen = nullptr;
    CK(cudaMallocHost(&seen, 2 * sizeof *seen));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    for (int r = 1; r <= kSignalRounds; ++r) {
      seen[0] = seen[1] = 0;
      awaitWord<<<1, 1, 0, st>>>(&words->sigSet, static_cast<uint64_t>(r), &seen[0]);
      awaitWord<<<1, 1, 0, st>>>(&words->sigAdd, static_cast<uint64_t>(2 * r), &seen[1]);
      CK(cudaGetLastError());
      MP_OK(tether_signal_op(w, &words->sigSet, static_cast<uint64_t>(r), TETHER_SIGNAL_SET, next));
      MP_OK(tether_signal_op(w, &words->sigAdd, 2, TETHER_SIGNAL_ADD, next));
      CK(cudaStreamSynchronize(st));
      if (seen[0] != static_cast<uint64_t>(r) || seen[1] != static_cast<uint64_t>(2 * r))
        std::fprintf(stderr, "PE %d round %d: the kernel saw %llu / %llu from PE %d, expected %d / %d\n", me, r,
                     seen[0], seen[1], prev, r, 2 * r);
      MP_CHECK(seen[0] == static_cast<uint64_t>(r) && seen[1] == static_cast<uint64_t>(2 * r));
      MP_OK(tether_barrier_all(w));
    }
    CK(cudaStreamDestroy(st));
    CK(cudaFreeHost(seen));
    if (me == 0) std::printf("signals into waiting kernels: %d rounds of SET and ADD: ok\n", kSignalRounds);
  }

  // 5. the program's device-wide synchronisation returns.
  CK(cudaDeviceSynchronize());
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("cudaDeviceSynchronize after host atomics: returned\n");
  MP_OK(tether_free(w, words));
  return mp::finish();
}
