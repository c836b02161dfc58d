// A PE's first typed transfers while one of its streams waits: stream A waits for a word of this PE (HOST segment)
// that this thread sets only after them. Under CUDA's lazy loading a kernel's first launch is held until the context's
// pending work is done, i.e. until that wait ends: a hang, unless tether loaded the pack kernels at tether_init
// (TETHER_DT_PRELOAD, dt::gpuPreload; gpu_stream_fuzz hung so through the proxy on one H100, 2026-12-07). Its ctest
// names no calibration file (TETHER_DT_CALIBRATION=/dev/null/none), so the cost model is measured in every run: at
// tether_init, or with TETHER_DT_PRELOAD=0 in the first typed call, under the wait. Under the wait: the type's
// metadata built and uploaded, a put and a get on stream B (pack and unpack kernels or copies; through the proxy's
// staged route, a stage made), stream B synchronised, and the type freed (its metadata released, no synchronising
// free), then the HOST heap grown by a collective tether_malloc (the added range registered with the GPU: no
// cudaHostUnregister of the old range, which would wait for A) and a stream put into the peer's new bytes, and the
// DEVICE heap grown (cuMemCreate, cuMemMap, cuMemSetAccess of every PE's new chunk). A watchdog thread sets the word after GPU_WAIT_WATCHDOG seconds (default 30) if this thread has not: the
// test then fails, naming the call that hung. Exits 77 without a GPU.
// A's wait is a polling kernel (tether_signal_wait_until_on_stream with NE, a kernel wait), not a stream memop wait
// (EQ/GE/GT): a pending memop wait can hold back the process's work on its other streams by itself (they share the
// GPU's hardware queues; on one H100, 2026-12-07, stream B's copies and kernels did not run until it was released,
// the pack kernels loaded or not), which is CUDA's, not tether's, and tether.h says so.
#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tether/datatype.h"
#include "gpu_util.h"

namespace {

constexpr int64_t kBlock = 24, kCount = 1000;  // a vector of kCount blocks of kBlock bytes at stride 2 * kBlock
constexpr int64_t kPacked = kBlock * kCount, kSpan = 2 * kBlock * kCount;
// The HOST and DEVICE allocations made under the wait: past TETHER_HEAP_SIZE's default (64M) and the ctests'
// TETHER_DEVICE_HEAP_SIZE (64M), so both heaps grow; the HOST one's last kTail bytes are put into from the peer.
constexpr size_t kGrow = size_t{96} << 20, kTail = 4096;

unsigned char pattern(int pe, int64_t i) { return static_cast<unsigned char>((pe * 131 + i * 7 + 1) & 0xff); }

// Sets *word after `seconds` unless disarmed first; fired() says whether it did.
class Watchdog {
 public:
  Watchdog(uint64_t* word, double seconds)
      : thread_([this, word, seconds] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return disarmed_; })) {
            fired_ = true;
            __atomic_store_n(word, uint64_t{1}, __ATOMIC_RELEASE);  // host memory the stream's wait reads
          }
        }) {}
  ~Watchdog() { disarm(); }
  void disarm() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      disarmed_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  bool fired() {
    std::lock_guard<std::mutex> lock(mu_);
    return fired_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool disarmed_ = false, fired_ = false;
  std::thread thread_;
};

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  const int peer = (me + 1) % n, from = (me + n - 1) % n;
  const char* wd = std::getenv("GPU_WAIT_WATCHDOG");
  const double watchdogSeconds = wd ? std::atof(wd) : 30.0;

  auto* word = static_cast<uint64_t*>(gpu_test::symAlloc(w, TETHER_SEG_HOST, sizeof(uint64_t)));
  *word = 0;
  auto* dst = static_cast<unsigned char*>(gpu_test::symAlloc(w, TETHER_SEG_DEVICE, kPacked));
  CK(cudaMemset(dst, 0, kPacked));
  unsigned char *src = nullptr, *back = nullptr;
  CK(cudaMalloc(&src, kSpan));
  CK(cudaMalloc(&back, kSpan));
  std::vector<unsigned char> host(kSpan);
  for (int64_t i = 0; i < kSpan; ++i) host[i] = pattern(me, i);
  gpu_test::copyLanded(src, host.data(), kSpan);
  CK(cudaMemset(back, 0, kSpan));
  CK(cudaDeviceSynchronize());
  cudaStream_t a = nullptr, b = nullptr;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  tether_type_t byte = nullptr;
  MP_CHECK(tether_type_basic(TETHER_BASIC_BYTE, &byte) == TETHER_SUCCESS);
  MP_OK(tether_barrier_all(w));  // every PE's dst is zero before anyone puts

  // The wait, then everything else while it is pending.
  MP_OK(tether_signal_wait_until_on_stream(w, word, TETHER_CMP_NE, 0, a));  // a polling kernel (see the top)
  std::string hung;  // the first call that returned only after the watchdog fired
  void *grown = nullptr, *grownDev = nullptr;
  {
    Watchdog dog(word, watchdogSeconds);
    auto step = [&](const char* what, tether_status_t st) {
      if (st != TETHER_SUCCESS) mp::fail(__FILE__, __LINE__, what, tether_status_string(st));
      if (hung.empty() && dog.fired()) hung = what;
    };
    tether_type_t vec = nullptr;
    step("tether_type_vector", tether_type_vector(kCount, kBlock, 2 * kBlock, byte, &vec));
    step("tether_type_commit", tether_type_commit(vec));
    step("tether_put_typed_on_stream (first pack)",
         tether_put_typed_on_stream(w, dst, byte, kPacked, src, vec, 1, peer, b));
    step("tether_get_typed_on_stream (first unpack)",
         tether_get_typed_on_stream(w, back, vec, 1, dst, byte, kPacked, peer, b));
    const cudaError_t e = cudaStreamSynchronize(b);  // b does not wait for a
    step("cudaStreamSynchronize(b)", e == cudaSuccess ? TETHER_SUCCESS : TETHER_ERR_CUDA);
    step("tether_type_free", tether_type_free(&vec));
    // The HOST heap grows (collective): its GPU views take the added range. Then a stream put into the peer's new
    // bytes (a copy through the peer's view, which must cover them).
    step("tether_malloc_kind (HOST heap growth)", tether_malloc_kind(w, TETHER_SEG_HOST, 256, kGrow, &grown));
    step("tether_putmem_on_stream (into the grown HOST heap)",
         tether_putmem_on_stream(w, static_cast<unsigned char*>(grown) + kGrow - kTail, src, kTail, peer, b));
    const cudaError_t e2 = cudaStreamSynchronize(b);
    step("cudaStreamSynchronize(b) after the growth", e2 == cudaSuccess ? TETHER_SUCCESS : TETHER_ERR_CUDA);
    // The DEVICE heap grows too (its ctests start it at 64M): a VMM chunk made, exported, and every PE's mapped.
    step("tether_malloc_kind (DEVICE heap growth)", tether_malloc_kind(w, TETHER_SEG_DEVICE, 256, kGrow, &grownDev));
    dog.disarm();
    if (hung.empty() && dog.fired()) hung = "(the watchdog fired as the calls ended)";
  }
  MP_OK(tether_signal_op(w, word, 1, TETHER_SIGNAL_SET, me));
  CK(cudaStreamSynchronize(a));
  if (!hung.empty())
    mp::fail(__FILE__, __LINE__, hung.c_str(),
             "did not return while stream A waited for this thread (the watchdog set the word): a first launch or a "
             "synchronising call waited for the pending wait");

  // What came back from the peer is what went (the vector's blocks; the gaps untouched), and what arrived from PE
  // `from` is its blocks, packed.
  std::vector<unsigned char> got(kSpan), in(kPacked);
  CK(cudaMemcpy(got.data(), back, kSpan, cudaMemcpyDeviceToHost));
  MP_OK(tether_barrier_all(w));
  CK(cudaMemcpy(in.data(), dst, kPacked, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < kSpan; ++i) {
    const bool inBlock = (i / kBlock) % 2 == 0;
    const unsigned char want = inBlock ? pattern(me, i) : 0;
    if (got[i] != want) {
      std::printf("[%d] got back byte %lld = %u, want %u\n", me, static_cast<long long>(i), got[i], want);
      mp::fail(__FILE__, __LINE__, "typed get", "wrong byte");
    }
  }
  for (int64_t k = 0; k < kPacked; ++k) {
    const int64_t i = (k / kBlock) * 2 * kBlock + k % kBlock;
    if (in[k] != pattern(from, i)) {
      std::printf("[%d] received byte %lld = %u, want %u\n", me, static_cast<long long>(k), in[k], pattern(from, i));
      mp::fail(__FILE__, __LINE__, "typed put", "wrong byte");
    }
  }
  const unsigned char* tail = static_cast<const unsigned char*>(grown) + kGrow - kTail;  // from's src, first kTail
  for (size_t i = 0; i < kTail; ++i)
    if (tail[i] != pattern(from, static_cast<int64_t>(i))) {
      std::printf("[%d] grown heap byte %zu = %u, want %u\n", me, i, tail[i], pattern(from, static_cast<int64_t>(i)));
      mp::fail(__FILE__, __LINE__, "put into the grown HOST heap", "wrong byte");
    }
  if (me == 0) std::printf("gpu_typed_under_wait: %d PEs: first typed put/get, calibration, type free under a pending "
                           "stream wait: ok\n", n);
  MP_CHECK(tether_type_free(&byte) == TETHER_SUCCESS);
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_free(w, grown));
  MP_OK(tether_free(w, grownDev));
  CK(cudaStreamDestroy(a));
  CK(cudaStreamDestroy(b));
  CK(cudaFree(src));
  CK(cudaFree(back));
  return mp::finish();
}
