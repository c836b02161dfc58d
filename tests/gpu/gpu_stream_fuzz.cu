// The stream fuzz (tests/mp/stream_fuzz.h) on CUDA streams: three non-blocking streams per PE, local buffers in pinned
// host memory (STREAM_FUZZ_LOCAL=device: GPU memory, and typed puts and gets join the mix: a stream's typed route needs
// the local side in GPU memory), the symmetric objects in GPU memory (STREAM_FUZZ_SEG=host: the HOST segment). Each
// PE synchronizes its streams' phase A before it enqueues the collective and the waits (Env::phaseAFirst: the header
// says why). The copies, memop writes and waits, one-thread kernels, proxy calls (TETHER_FORCE_PROXY=1), prepared sets
// and the stream barriers and collectives of the library all run here; the model checks what they leave. Exits 77
// without a GPU. Prints its seed (TETHER_TEST_SEED repeats a run); STREAM_FUZZ_ROUNDS sets the rounds (default 200).
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "../mp/stream_fuzz.h"
#include "gpu_util.h"

namespace {

class CudaEnv : public stream_fuzz::Env {
 public:
  bool onGpu = false;  // local buffers in GPU memory (else pinned host memory)
  void* createStream() override {
    cudaStream_t s = nullptr;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }
  void destroyStream(void* s) override { CK(cudaStreamDestroy(static_cast<cudaStream_t>(s))); }
  std::string synchronize(void* s) override {
    const cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(s));
    return e == cudaSuccess ? std::string() : std::string("CUDA: ") + cudaGetErrorString(e);
  }
  unsigned char* allocLocal(size_t bytes) override {
    void* p = nullptr;
    if (onGpu)
      CK(cudaMalloc(&p, bytes));
    else
      CK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
    return static_cast<unsigned char*>(p);
  }
  void freeLocal(unsigned char* p) override {
    if (onGpu)
      CK(cudaFree(p));
    else
      CK(cudaFreeHost(p));
  }
  void toLocal(void* local, const void* host, size_t bytes) override { gpu_test::copyLanded(local, host, bytes); }
  void fromLocal(void* host, const void* local, size_t bytes) override {
    if (bytes) CK(cudaMemcpy(host, local, bytes, cudaMemcpyDefault));
  }
};

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  tether_t w = mp::world();
  CudaEnv env;
  const char* seg = std::getenv("STREAM_FUZZ_SEG");
  env.seg = seg && std::strcmp(seg, "host") == 0 ? TETHER_SEG_HOST : TETHER_SEG_DEVICE;
  const char* local = std::getenv("STREAM_FUZZ_LOCAL");
  env.onGpu = local && std::strcmp(local, "device") == 0;
  env.typedOps = env.onGpu;
  env.phaseAFirst = true;
  stream_fuzz::run(w, env, "gpu_stream_fuzz", 200);
  return mp::finish();
}
