// The device API from a kernel, built by nvcc against an installed tether (tests/install/install_check.sh step (e),
// target tether::device). At 2+ PEs with a GPU each: a kernel stores this PE's id + 1000 into the next PE's symmetric
// word (GPU memory) with tether::device::p, then the device barrier; the host reads its own word back and checks it.
// Prints "cuda device ok: N PEs" on PE 0. Needs a GPU per PE (install_check runs it only where one is visible).
#include <tether/device.cuh>

#include <cuda_runtime.h>

#include <cstdio>

__global__ void ring(tether_device_handle_t h, long* x, int me, int n) {
  tether::device::p(h, x, 1000L + me, (me + 1) % n);
  tether::device::barrier_all(h);
}

static int cudaFailed(const char* what, cudaError_t e) {
  std::fprintf(stderr, "cuda device: %s: %s\n", what, cudaGetErrorString(e));
  return 1;
}

int main() {
  tether_t w;
  if (tether_init(&w) != TETHER_SUCCESS) return std::fprintf(stderr, "cuda device: init: %s\n", tether_last_error()), 1;
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  long* x = nullptr;
  tether_device_handle_t h;
  if (tether_malloc_kind(w, TETHER_SEG_DEVICE, 0, sizeof *x, reinterpret_cast<void**>(&x)) != TETHER_SUCCESS ||
      tether_device_handle(w, &h) != TETHER_SUCCESS)
    return std::fprintf(stderr, "cuda device: setup: %s\n", tether_last_error()), 1;
  cudaPointerAttributes attr;  // launch on the GPU that holds this PE's heap
  cudaError_t e = cudaPointerGetAttributes(&attr, x);
  if (e != cudaSuccess) return cudaFailed("cudaPointerGetAttributes", e);
  if ((e = cudaSetDevice(attr.device)) != cudaSuccess) return cudaFailed("cudaSetDevice", e);
  ring<<<1, 1>>>(h, x, me, n);
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return cudaFailed("kernel", e);
  long got = 0;
  if ((e = cudaMemcpy(&got, x, sizeof got, cudaMemcpyDeviceToHost)) != cudaSuccess) return cudaFailed("cudaMemcpy", e);
  const long want = 1000L + (me + n - 1) % n;
  if (got != want) return std::fprintf(stderr, "cuda device: PE %d: x = %ld, want %ld\n", me, got, want), 1;
  if (tether_barrier_all(w) != TETHER_SUCCESS) return 1;
  if (me == 0) std::printf("cuda device ok: %d PEs\n", n);
  tether_free(w, x);
  return tether_finalize(w) == TETHER_SUCCESS ? 0 : 1;
}
