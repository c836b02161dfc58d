// The device fuzz (tests/mp/device_fuzz.h) in CUDA kernels: each round one block of kWriters warps runs the
// interpreter (runRound) on this PE's GPU; local arenas in GPU memory, the symmetric objects in GPU memory
// (DEVICE_FUZZ_SEG=host: the HOST segment). TETHER_FORCE_PROXY=1: every other PE through the proxy ring. Exits 77
// without a GPU. Prints its seed (TETHER_TEST_SEED repeats a run); DEVICE_FUZZ_ROUNDS sets the rounds (default 200).
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "../mp/device_fuzz.h"
#include "gpu_util.h"

namespace {

__global__ void roundKernel(tether_device_handle_t h, device_fuzz::Round r) { device_fuzz::runRound(h, r); }

class CudaEnv : public device_fuzz::Env {
 public:
  CudaEnv() { CK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaEnv() override { cudaStreamDestroy(stream_); }
  unsigned char* allocLocal(size_t bytes) override {
    void* p = nullptr;
    CK(cudaMalloc(&p, bytes));
    return static_cast<unsigned char*>(p);
  }
  void freeLocal(unsigned char* p) override { CK(cudaFree(p)); }
  void toLocal(unsigned char* dst, const void* src, size_t n) override { gpu_test::copyLanded(dst, src, n); }
  void fromLocal(void* dst, const unsigned char* src, size_t n) override {
    CK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
  }
  tether_status_t handle(tether_t w, tether_device_handle_t* h) override { return tether_device_handle(w, h); }
  std::string launch(const tether_device_handle_t& h, const device_fuzz::Round& r) override {
    roundKernel<<<1, device_fuzz::kWriters * 32, 0, stream_>>>(h, r);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
    return e == cudaSuccess ? std::string() : std::string("CUDA: ") + cudaGetErrorString(e);
  }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  gpu_test::loadKernels({reinterpret_cast<const void*>(roundKernel)});
  CudaEnv env;
  const char* seg = std::getenv("DEVICE_FUZZ_SEG");
  env.seg = seg && std::strcmp(seg, "host") == 0 ? TETHER_SEG_HOST : TETHER_SEG_DEVICE;
  device_fuzz::run(mp::world(), env, "gpu_device_fuzz", 200);
  return mp::finish();
}
