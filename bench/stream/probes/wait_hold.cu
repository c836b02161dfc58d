// Probe (2026-12-07, issue #22's stream waits and the datatype engine's preload): while stream A waits
// (cuStreamWaitValue64 GEQ on a mapped host word), does work enqueued on stream B run, and does the enqueue call
// return? A thread releases the word 1.5 s after the wait is enqueued, so nothing hangs. Cases: kernels (launched
// before; first launch under lazy loading; loaded by cudaFuncGetAttributes or cuFuncLoad), 1D/2D copies between
// cudaMalloc and VMM (cuMemCreate) memory, H2D, memset, cudaMallocAsync, an event record. No libtether.
// Build: nvcc -O2 -arch=sm_90 -std=c++17 -o wait_hold bench/stream/probes/wait_hold.cu -lcuda
// Run: ./wait_hold (one GPU); CUDA_MODULE_LOADING=EAGER ./wait_hold for the eager rows. The last cases time host
// calls that may synchronise (allocations, frees, registration, VMM create/map/unmap as in DEVICE heap growth, stream
// and event creation) under the wait.
// Results: bench/results/h100/wait_hold_2026-12-07.txt.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      exit(1);                                       \
    }                                                \
  } while (0)
__global__ void touch(int* p) {
  if (threadIdx.x == 0) atomicAdd(p, 1);
}
__global__ void touch2(int* p) {
  if (threadIdx.x == 0) atomicAdd(p, 2);
}
__global__ void touch3(int* p) {
  if (threadIdx.x == 0) atomicAdd(p, 3);
}
__global__ void touch4(int* p) {
  if (threadIdx.x == 0) atomicAdd(p, 4);
}
__global__ void touch5(int* p) {
  if (threadIdx.x == 0) atomicAdd(p, 5);
}
static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  CK(cudaSetDevice(0));
  unsigned long long* word = nullptr;
  CK(cudaHostAlloc(&word, 64, cudaHostAllocMapped));
  unsigned long long* dword = nullptr;
  CK(cudaHostGetDevicePointer(&dword, word, 0));
  char *d = nullptr, *d2 = nullptr;
  CK(cudaMalloc(&d, 4 << 20));
  CK(cudaMalloc(&d2, 4 << 20));
  int* cnt = nullptr;
  CK(cudaMalloc(&cnt, 64));
  touch<<<1, 32>>>(cnt);
  CK(cudaDeviceSynchronize());
  // VMM memory (like tether's symmetric heap)
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  size_t vsz = ((4 << 20) + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h;
  CUdeviceptr va = 0;
  if (cuMemCreate(&h, vsz, &prop, 0) || cuMemAddressReserve(&va, vsz, 0, 0, 0) || cuMemMap(va, vsz, 0, h, 0)) {
    printf("vmm failed\n");
    return 1;
  }
  CUmemAccessDesc acc{};
  acc.location = prop.location;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  cuMemSetAccess(va, vsz, &acc, 1);
  char* v = reinterpret_cast<char*>(va);
  CUfunction f4 = nullptr, f5 = nullptr;
  int loaded = -1;
  {
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, (const void*)touch4));
    CK(cudaGetFuncBySymbol((cudaFunction_t*)&f4, (const void*)touch4));
    CUfunctionLoadingState st;
    if (cuFuncIsLoaded(&st, f4) == CUDA_SUCCESS) loaded = st == CU_FUNCTION_LOADING_STATE_LOADED;
    printf("touch4 after cudaFuncGetAttributes: cuFuncIsLoaded = %d\n", loaded);
    CK(cudaGetFuncBySymbol((cudaFunction_t*)&f5, (const void*)touch5));
    if (cuFuncIsLoaded(&st, f5) == CUDA_SUCCESS)
      printf("touch5 before cuFuncLoad: %d\n", st == CU_FUNCTION_LOADING_STATE_LOADED);
    if (cuFuncLoad(f5) != CUDA_SUCCESS) printf("cuFuncLoad failed\n");
    if (cuFuncIsLoaded(&st, f5) == CUDA_SUCCESS)
      printf("touch5 after cuFuncLoad: %d\n", st == CU_FUNCTION_LOADING_STATE_LOADED);
  }
  static char host[4096];
  void* spare = nullptr;
  cudaStream_t spareStream = nullptr;
  char* pageable = static_cast<char*>(aligned_alloc(4096, 1 << 20));
  // DEVICE heap growth (tether's VmmDeviceHeap::addChunk): a chunk created with a POSIX fd, exported, imported
  // again from that fd (as a peer's import), mapped into reserved VA with access set; then unmapped and released.
  CUmemAllocationProp fdProp = prop;
  fdProp.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t fdGran = 0;
  cuMemGetAllocationGranularity(&fdGran, &fdProp, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  const size_t chunk = ((2 << 20) + fdGran - 1) / fdGran * fdGran;
  CUdeviceptr growVa = 0;
  if (cuMemAddressReserve(&growVa, 2 * chunk, 0, 0, 0) != CUDA_SUCCESS) {
    printf("reserve failed\n");
    return 1;
  }
  auto vmmOk = [](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) {
      printf("%s: driver error %d\n", what, static_cast<int>(r));
      exit(1);
    }
  };
  struct Case {
    const char* name;
    std::function<void(cudaStream_t)> f;
  };
  Case cases[] = {
      {"2D D2D cudaMalloc->VMM 24 B x 1000 (first copy of the process)",
       [&](cudaStream_t b) { CK(cudaMemcpy2DAsync(v, 24, d, 48, 24, 1000, cudaMemcpyDeviceToDevice, b)); }},
      {"2D D2D VMM->cudaMalloc 24 B x 1000",
       [&](cudaStream_t b) { CK(cudaMemcpy2DAsync(d2, 48, v, 24, 24, 1000, cudaMemcpyDeviceToDevice, b)); }},
      {"1D D2D cudaMalloc->VMM 24000 B",
       [&](cudaStream_t b) { CK(cudaMemcpyAsync(v, d, 24000, cudaMemcpyDeviceToDevice, b)); }},
      {"kernel touch4: cudaFuncGetAttributes before, first <<<>>>",
       [&](cudaStream_t b) { touch4<<<1, 32, 0, b>>>(cnt); }},
      {"kernel touch5: cuFuncLoad before, first cuLaunchKernel",
       [&](cudaStream_t b) {
         void* args[] = {&cnt};
         if (cuLaunchKernel(f5, 1, 1, 1, 32, 1, 1, 0, (CUstream)b, args, nullptr)) printf("launch failed\n");
       }},
      {"kernel, launched before", [&](cudaStream_t b) { touch<<<1, 32, 0, b>>>(cnt); }},
      {"kernel, first launch (lazy loading)", [&](cudaStream_t b) { touch2<<<1, 32, 0, b>>>(cnt); }},
      {"kernel touch2 again", [&](cudaStream_t b) { touch2<<<1, 32, 0, b>>>(cnt); }},
      {"cudaMemcpyAsync D2D 1 MiB (used before)",
       [&](cudaStream_t b) { CK(cudaMemcpyAsync(d2, d, 1 << 20, cudaMemcpyDeviceToDevice, b)); }},
      {"cudaMemcpy2DAsync D2D 24 B x 1000, pitch 48 -> 24 (first)",
       [&](cudaStream_t b) { CK(cudaMemcpy2DAsync(d2, 24, d, 48, 24, 1000, cudaMemcpyDeviceToDevice, b)); }},
      {"cudaMemcpy2DAsync D2D 24 B x 1000 (again)",
       [&](cudaStream_t b) { CK(cudaMemcpy2DAsync(d2, 24, d, 48, 24, 1000, cudaMemcpyDeviceToDevice, b)); }},
      {"cudaMemcpy2DAsync D2D 40 B x 64, pitch 80 -> 40",
       [&](cudaStream_t b) { CK(cudaMemcpy2DAsync(d2, 40, d, 80, 40, 64, cudaMemcpyDeviceToDevice, b)); }},
      {"cudaMemcpy2DAsync D2D 8 B x 4096, pitch 16 -> 8",
       [&](cudaStream_t b) { CK(cudaMemcpy2DAsync(d2, 8, d, 16, 8, 4096, cudaMemcpyDeviceToDevice, b)); }},
      {"cudaMemcpyAsync H2D 64 B pageable",
       [&](cudaStream_t b) { CK(cudaMemcpyAsync(d2, host, 64, cudaMemcpyHostToDevice, b)); }},
      {"cudaMemsetAsync 1 MiB", [&](cudaStream_t b) { CK(cudaMemsetAsync(d2, 1, 1 << 20, b)); }},
      {"cudaMallocAsync + cudaFreeAsync 1 MiB",
       [&](cudaStream_t b) {
         void* p;
         CK(cudaMallocAsync(&p, 1 << 20, b));
         CK(cudaFreeAsync(p, b));
       }},
      {"event record",
       [&](cudaStream_t b) {
         cudaEvent_t ev;
         CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
         CK(cudaEventRecord(ev, b));
       }},
      {"kernel touch3 first launch", [&](cudaStream_t b) { touch3<<<1, 32, 0, b>>>(cnt); }},
      // Host calls that may synchronise: "enqueue" is the call itself (B gets nothing).
      {"cudaMalloc 8 MiB", [&](cudaStream_t) { CK(cudaMalloc(&spare, 8 << 20)); }},
      {"cudaFree (of that 8 MiB)", [&](cudaStream_t) { CK(cudaFree(spare)); }},
      {"cudaHostAlloc 1 MiB", [&](cudaStream_t) { CK(cudaHostAlloc(&spare, 1 << 20, cudaHostAllocDefault)); }},
      {"cudaFreeHost (of that 1 MiB)", [&](cudaStream_t) { CK(cudaFreeHost(spare)); }},
      {"cudaHostRegister 1 MiB", [&](cudaStream_t) { CK(cudaHostRegister(pageable, 1 << 20, 0)); }},
      {"cudaHostUnregister", [&](cudaStream_t) { CK(cudaHostUnregister(pageable)); }},
      {"cudaStreamCreateWithFlags (non-blocking)", [&](cudaStream_t) {
         cudaStream_t s;
         CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
         spareStream = s;
       }},
      {"cudaStreamDestroy (of that stream)", [&](cudaStream_t) { CK(cudaStreamDestroy(spareStream)); }},
      {"cuMemCreate(fd) + export + import + cuMemMap x2 + cuMemSetAccess 2 MiB", [&](cudaStream_t) {
         CUmemGenericAllocationHandle g, g2;
         int fd = -1;
         vmmOk(cuMemCreate(&g, chunk, &fdProp, 0), "cuMemCreate");
         vmmOk(cuMemExportToShareableHandle(&fd, g, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "export");
         vmmOk(cuMemImportFromShareableHandle(&g2, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), "import");
         close(fd);
         vmmOk(cuMemMap(growVa, chunk, 0, g, 0), "cuMemMap");
         vmmOk(cuMemMap(growVa + chunk, chunk, 0, g2, 0), "cuMemMap (imported)");
         vmmOk(cuMemSetAccess(growVa, 2 * chunk, &acc, 1), "cuMemSetAccess");
         cuMemRelease(g);
         cuMemRelease(g2);
       }},
      {"cuMemUnmap x2 (of those; releases them)", [&](cudaStream_t) {
         vmmOk(cuMemUnmap(growVa, chunk), "cuMemUnmap");
         vmmOk(cuMemUnmap(growVa + chunk, chunk), "cuMemUnmap");
       }},
      {"cudaEventCreate", [&](cudaStream_t) {
         cudaEvent_t ev;
         CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
       }},
  };
  for (auto& c : cases) {
    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    *word = 0;
    if (cuStreamWaitValue64((CUstream)a, (CUdeviceptr)dword, 1, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
      printf("waitvalue failed\n");
      return 1;
    }
    const double t0 = now();
    std::thread dog([&] {
      usleep(1500000);
      __atomic_store_n(word, 1ull, __ATOMIC_RELEASE);
    });
    usleep(1000);
    c.f(b);
    const double tEnq = now() - t0;
    double tDone = -1;
    while (now() - t0 < 3.0) {
      if (cudaStreamQuery(b) == cudaSuccess) {
        tDone = now() - t0;
        break;
      }
      usleep(20);
    }
    dog.join();
    CK(cudaStreamSynchronize(a));
    CK(cudaStreamSynchronize(b));
    printf("%-58s | enqueue returned at %7.1f ms | B done at %7.1f ms | %s\n", c.name, tEnq * 1e3, tDone * 1e3,
           tEnq > 1.4                 ? "ENQUEUE BLOCKED until release"
           : tDone > 1.4 || tDone < 0 ? "B BLOCKED until release"
                                      : "ok");
    CK(cudaStreamDestroy(a));
    CK(cudaStreamDestroy(b));
  }
  return 0;
}
