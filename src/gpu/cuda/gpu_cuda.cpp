// GpuContext over the CUDA runtime (linked statically: loads without a driver and then reports no GPU) and the driver
// entry points for virtual memory management, resolved through cudaGetDriverEntryPointByVersion (no libcuda link).
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/log.h"
#include "bootstrap/bootstrap.h"
#include "base/unix_socket.h"
#include "gpu/cuda/host_service.h"
#include "gpu/cuda/kernels.h"
#include "gpu/gpu.h"

namespace tether {
namespace {

Status cudaFail(const char* what, cudaError_t e) {
  return Status(TETHER_ERR_CUDA, strprintf("%s: %s (%s, %d)", what, cudaGetErrorString(e), cudaGetErrorName(e),
                                           static_cast<int>(e)));
}
#define CUDA_TRY(call)                                    \
  do {                                                    \
    cudaError_t e_ = (call);                              \
    if (e_ != cudaSuccess) return cudaFail(#call, e_);    \
  } while (0)
#define CU_TRY(call)                                                                                      \
  do {                                                                                                    \
    CUresult r_ = (call);                                                                                 \
    if (r_ != CUDA_SUCCESS) TETHER_FAIL(TETHER_ERR_CUDA, "%s: CUDA driver error %d", #call, static_cast<int>(r_)); \
  } while (0)

uint64_t roundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Makes `dev` current again when a scope that switched to another GPU ends (also on error returns).
struct DeviceRestore {
  int dev;
  ~DeviceRestore() { cudaSetDevice(dev); }
};

// Driver entry points for VMM (resolved once per context).
struct Driver {
  decltype(&cuMemCreate) memCreate = nullptr;
  decltype(&cuMemRelease) memRelease = nullptr;
  decltype(&cuMemExportToShareableHandle) memExport = nullptr;
  decltype(&cuMemImportFromShareableHandle) memImport = nullptr;
  decltype(&cuMemAddressReserve) addressReserve = nullptr;
  decltype(&cuMemAddressFree) addressFree = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) setAccess = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuDeviceGet) deviceGet = nullptr;
  decltype(&cuDeviceGetAttribute) deviceGetAttribute = nullptr;

  template <typename F>
  static Status resolve(const char* name, F* fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p)
      TETHER_FAIL(TETHER_ERR_CUDA, "driver entry point %s not found (error %d, query %d)", name, static_cast<int>(e),
                  static_cast<int>(q));
    *fn = reinterpret_cast<F>(p);
    return Status::ok();
  }
  // exportRegion's (CUDA IPC of user buffers), resolved apart from VMM's by loadPointers: either may be missing.
  decltype(&cuPointerGetAttributes) pointerGetAttributes = nullptr;
  decltype(&cuMemGetAddressRange) memGetAddressRange = nullptr;

  Status loadPointers() {
    TETHER_TRY(resolve("cuPointerGetAttributes", &pointerGetAttributes));
    return resolve("cuMemGetAddressRange", &memGetAddressRange);
  }
  Status load() {
    TETHER_TRY(resolve("cuMemCreate", &memCreate));
    TETHER_TRY(resolve("cuMemRelease", &memRelease));
    TETHER_TRY(resolve("cuMemExportToShareableHandle", &memExport));
    TETHER_TRY(resolve("cuMemImportFromShareableHandle", &memImport));
    TETHER_TRY(resolve("cuMemAddressReserve", &addressReserve));
    TETHER_TRY(resolve("cuMemAddressFree", &addressFree));
    TETHER_TRY(resolve("cuMemMap", &map));
    TETHER_TRY(resolve("cuMemUnmap", &unmap));
    TETHER_TRY(resolve("cuMemSetAccess", &setAccess));
    TETHER_TRY(resolve("cuMemGetAllocationGranularity", &granularity));
    TETHER_TRY(resolve("cuDeviceGet", &deviceGet));
    TETHER_TRY(resolve("cuDeviceGetAttribute", &deviceGetAttribute));
    return Status::ok();
  }
};

// ---- DEVICE heap over VMM: one reserved window, local PE j's chunks mapped at window + j * stride + offset. -------
class VmmDeviceHeap : public DeviceHeap {
 public:
  VmmDeviceHeap(const Driver& d, int device) : d_(d), device_(device) {}
  ~VmmDeviceHeap() override {
    for (const auto& m : mapped_) d_.unmap(m.first, m.second);
    if (window_) d_.addressFree(window_, windowBytes_);
  }

  Status init(const DeviceHeapParams& p, Bootstrap& bootstrap) {
    p_ = p;
    CUmemAllocationProp prop = props();
    size_t gran = 0;
    CU_TRY(d_.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    gran_ = std::max<uint64_t>(gran, 2ull << 20);
    stride_ = roundUp(p.maxBytes, gran_);
    windowBytes_ = stride_ * p.localRanks.size();
    CU_TRY(d_.addressReserve(&window_, windowBytes_, gran_, 0, 0));
    return addChunk(roundUp(std::max<uint64_t>(p.initialBytes, gran_), gran_), bootstrap);
  }

  char* base(int j) const override { return reinterpret_cast<char*>(window_) + static_cast<uint64_t>(j) * stride_; }
  char* myBase() const override { return base(p_.localIndex); }
  uint64_t committed() const override { return committed_; }
  uint64_t maxBytes() const override { return stride_; }
  const char* mechanism() const override { return "vmm"; }

  Status grow(uint64_t newBytes, Bootstrap& bootstrap) override {
    if (newBytes <= committed_) return Status::ok();
    if (newBytes > stride_)
      TETHER_FAIL(TETHER_ERR_NO_MEMORY, "device heap cannot grow to %llu bytes: TETHER_DEVICE_HEAP_MAX is %llu bytes",
                  static_cast<unsigned long long>(newBytes), static_cast<unsigned long long>(stride_));
    return addChunk(std::min(roundUp(newBytes - committed_, gran_), stride_ - committed_), bootstrap);
  }

 private:
  CUmemAllocationProp props() const {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
  }

  Status mapAt(CUdeviceptr at, uint64_t bytes, CUmemGenericAllocationHandle h, int ownerRank, int accessDevice) {
    CU_TRY(d_.map(at, bytes, 0, h, 0));
    mapped_.emplace_back(at, bytes);
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = accessDevice;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult r = d_.setAccess(at, bytes, &access, 1);
    if (r != CUDA_SUCCESS)
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED,
                  "cannot give GPU %d access to the DEVICE segment of PE %d (driver error %d); run host-only with "
                  "TETHER_GPU=none",
                  accessDevice, ownerRank, static_cast<int>(r));
    return Status::ok();
  }

  int accessDevice(int j) const {
    return p_.accessDevice.empty() ? device_ : p_.accessDevice[static_cast<size_t>(j)];
  }

  // Collective: every same-host PE creates `bytes` more, exports it, and maps everybody's new chunk.
  Status addChunk(uint64_t bytes, Bootstrap& bootstrap) {
    const int localSize = static_cast<int>(p_.localRanks.size());
    const int me = p_.localRanks[static_cast<size_t>(p_.localIndex)];
    CUmemAllocationProp prop = props();
    CUmemGenericAllocationHandle h;
    CUresult r = d_.memCreate(&h, bytes, &prop, 0);
    if (r != CUDA_SUCCESS)
      TETHER_FAIL(r == CUDA_ERROR_OUT_OF_MEMORY ? TETHER_ERR_NO_MEMORY : TETHER_ERR_CUDA,
                  "cuMemCreate(%llu bytes on GPU %d) failed with driver error %d",
                  static_cast<unsigned long long>(bytes), device_, static_cast<int>(r));
    int fd = -1;
    r = d_.memExport(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r != CUDA_SUCCESS) {
      d_.memRelease(h);
      TETHER_FAIL(TETHER_ERR_CUDA, "cuMemExportToShareableHandle(POSIX fd) failed with driver error %d "
                  "(set TETHER_DEVICE_IPC=1 to use legacy CUDA IPC)", static_cast<int>(r));
    }
    Status s = mapAt(reinterpret_cast<CUdeviceptr>(myBase() + committed_), bytes, h, me, device_);
    d_.memRelease(h);  // the mapping keeps the memory
    FdExchange fx;
    if (s.isOk()) s = fx.listen(p_.jobTag, "dev" + std::to_string(chunks_), me, localSize);
    // Everyone reaches the barrier even after a local failure, and learns of it: no PE is left waiting.
    int32_t mine = s.isOk() ? 0 : 1;
    std::vector<int32_t> all(bootstrap.size());
    TETHER_TRY(bootstrap.allgather(&mine, all.data(), sizeof mine));
    if (!s.isOk()) {
      ::close(fd);
      return s;
    }
    for (size_t r2 = 0; r2 < all.size(); ++r2)
      if (all[r2]) {
        ::close(fd);
        TETHER_FAIL(TETHER_ERR_CUDA, "PE %zu could not create its DEVICE segment chunk (see its log)", r2);
      }
    std::vector<int> fds;
    s = fx.exchange(p_.localIndex, p_.localRanks, p_.secret, fd, p_.timeoutSeconds, &fds);
    ::close(fd);
    TETHER_TRY(s);
    for (int j = 0; j < localSize; ++j) {
      if (j == p_.localIndex) continue;
      int pfd = fds[static_cast<size_t>(j)];
      CUmemGenericAllocationHandle ph;
      CUresult ri = d_.memImport(&ph, reinterpret_cast<void*>(static_cast<uintptr_t>(pfd)),
                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      ::close(pfd);
      if (ri != CUDA_SUCCESS)
        TETHER_FAIL(TETHER_ERR_CUDA, "importing the DEVICE segment of PE %d failed with driver error %d",
                    p_.localRanks[static_cast<size_t>(j)], static_cast<int>(ri));
      Status ms = mapAt(reinterpret_cast<CUdeviceptr>(base(j) + committed_), bytes, ph,
                        p_.localRanks[static_cast<size_t>(j)], accessDevice(j));
      d_.memRelease(ph);
      TETHER_TRY(ms);
    }
    committed_ += bytes;
    ++chunks_;
    return bootstrap.barrier();
  }

  const Driver& d_;
  int device_;
  DeviceHeapParams p_;
  CUdeviceptr window_ = 0;
  uint64_t windowBytes_ = 0, stride_ = 0, gran_ = 0, committed_ = 0;
  int chunks_ = 0;
  std::vector<std::pair<CUdeviceptr, size_t>> mapped_;
};

// ---- DEVICE heap over legacy CUDA IPC: one fixed-size cudaMalloc per PE, opened by the others. ------------------
class IpcDeviceHeap : public DeviceHeap {
 public:
  explicit IpcDeviceHeap(int device) : device_(device) {}
  ~IpcDeviceHeap() override {
    for (size_t j = 0; j < bases_.size(); ++j)
      if (bases_[j] && static_cast<int>(j) != localIndex_) cudaIpcCloseMemHandle(bases_[j]);
    if (mine_) cudaFree(mine_);
  }

  Status init(const DeviceHeapParams& p, Bootstrap& bootstrap) {
    localIndex_ = p.localIndex;
    DeviceRestore restore{device_};
    bytes_ = roundUp(std::max<uint64_t>(p.initialBytes, 2ull << 20), 2ull << 20);
    CUDA_TRY(cudaMalloc(&mine_, bytes_));
    cudaIpcMemHandle_t h;
    CUDA_TRY(cudaIpcGetMemHandle(&h, mine_));
    std::vector<cudaIpcMemHandle_t> all(static_cast<size_t>(bootstrap.size()));
    TETHER_TRY(bootstrap.allgather(&h, all.data(), sizeof h));
    bases_.assign(p.localRanks.size(), nullptr);
    for (size_t j = 0; j < p.localRanks.size(); ++j) {
      if (static_cast<int>(j) == p.localIndex) {
        bases_[j] = static_cast<char*>(mine_);
        continue;
      }
      void* q = nullptr;
      CUDA_TRY(cudaSetDevice(p.accessDevice.empty() ? device_ : p.accessDevice[j]));
      cudaError_t e = cudaIpcOpenMemHandle(&q, all[static_cast<size_t>(p.localRanks[j])],
                                           cudaIpcMemLazyEnablePeerAccess);
      if (e != cudaSuccess) return cudaFail("cudaIpcOpenMemHandle (DEVICE segment of a same-host PE)", e);
      bases_[j] = static_cast<char*>(q);
    }
    return bootstrap.barrier();
  }
  char* base(int j) const override { return bases_[static_cast<size_t>(j)]; }
  char* myBase() const override { return static_cast<char*>(mine_); }
  uint64_t committed() const override { return bytes_; }
  uint64_t maxBytes() const override { return bytes_; }
  const char* mechanism() const override { return "ipc"; }
  Status grow(uint64_t newBytes, Bootstrap&) override {
    if (newBytes <= bytes_) return Status::ok();
    TETHER_FAIL(TETHER_ERR_NO_MEMORY,
                "device heap cannot grow to %llu bytes: with legacy CUDA IPC (TETHER_DEVICE_IPC=1) it has a fixed "
                "size of %llu bytes (raise TETHER_DEVICE_HEAP_SIZE)",
                static_cast<unsigned long long>(newBytes), static_cast<unsigned long long>(bytes_));
  }

 private:
  int device_;
  int localIndex_ = 0;
  uint64_t bytes_ = 0;
  void* mine_ = nullptr;
  std::vector<char*> bases_;
};

// ---- a stream of any GPU of this process (GpuContext::createStream) ---------------------------------------------
class CudaGpuStream : public GpuStream {
 public:
  CudaGpuStream(int dev, int home) : dev_(dev), home_(home) {}
  ~CudaGpuStream() override {
    cudaSetDevice(dev_);
    if (stream_) cudaStreamDestroy(stream_);
    if (result_) cudaFreeHost(result_);
    cudaSetDevice(home_);
  }

  Status init(unsigned flags) {
    DeviceRestore restore{home_};
    CUDA_TRY(cudaSetDevice(dev_));
    CUDA_TRY(cudaStreamCreateWithFlags(&stream_, flags));
    const cudaError_t le = gpukernels::preload();  // in dev's context too (kernels.h, preload)
    if (le != cudaSuccess) return cudaFail("loading the host path's atomic and signal kernels on the staged GPU", le);
    CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&result_), 64, cudaHostAllocMapped | cudaHostAllocPortable));
    return Status::ok();
  }

  int device() const override { return dev_; }
  bool pending() const { return pending_.load(); }

  Status copyAsync(void* dst, const void* src, size_t n) override {
    DeviceRestore restore{home_};
    CUDA_TRY(cudaSetDevice(dev_));
    CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream_));
    pending_ = true;
    return Status::ok();
  }

  Status sync() override {
    DeviceRestore restore{home_};
    CUDA_TRY(cudaSetDevice(dev_));
    pending_ = false;
    CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::ok();
  }

  Status atomic(void* target, const AmoArgs& a, uint64_t* fetched) override {
    std::lock_guard<std::mutex> lock(kernelMu_);
    DeviceRestore restore{home_};
    CUDA_TRY(cudaSetDevice(dev_));
    CUDA_TRY(gpukernels::launchAmo(stream_, target, a, result_));
    CUDA_TRY(cudaStreamSynchronize(stream_));
    if (fetched) *fetched = __atomic_load_n(result_, __ATOMIC_ACQUIRE);
    return Status::ok();
  }

  Status signal(void* target, uint64_t value, tether_signal_op_t op) override {
    std::lock_guard<std::mutex> lock(kernelMu_);
    DeviceRestore restore{home_};
    CUDA_TRY(cudaSetDevice(dev_));
    CUDA_TRY(gpukernels::launchSignal(stream_, static_cast<uint64_t*>(target), value, op == TETHER_SIGNAL_ADD));
    CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::ok();
  }

 private:
  int dev_, home_;
  cudaStream_t stream_ = nullptr;
  uint64_t* result_ = nullptr;  // host-mapped word the AMO kernel writes the old value to
  std::atomic<bool> pending_{false};
  std::mutex kernelMu_;
};

static_assert(GpuContext::kSmallCopyBytes == gpukernels::kServiceBytes, "small copies fit a service slot");

// The host service's settings (TETHER_HOST_SERVICE*, TETHER_TIMEOUT), kept by a context for its siblings.
struct ServiceOptions {
  bool on = false;
  bool automatic = false;  // TETHER_HOST_SERVICE=auto: off once noteGpuShared is called
  uint64_t idleNs = 0;
  unsigned pollers = 1;
  double timeoutSeconds = 0;
};

// ---- the context -----------------------------------------------------------------------------------------------
class CudaGpuContext : public GpuContext {
 public:
  ~CudaGpuContext() override {
    service_.reset();  // stops its kernel first
    made_.clear();  // each stream destroys itself and makes device_ current again
    cudaSetDevice(device_);
    for (auto& owner : opened_)
      for (const Opened& o : owner.second) cudaIpcCloseMemHandle(o.base);
    for (auto s : streams_) cudaStreamDestroy(s);
    for (void* p : registered_) cudaHostUnregister(p);
    for (void* p : allocs_) cudaFree(p);
    for (void* p : hostAllocs_) cudaFreeHost(p);
    if (result_) cudaFreeHost(result_);
  }

  Status init(int device, int nStreams, uint64_t splitMin, const ServiceOptions& service, bool nonBlocking = false) {
    device_ = device;
    splitMin_ = splitMin;
    serviceOpts_ = service;
    streamFlags_ = nonBlocking ? cudaStreamNonBlocking : cudaStreamDefault;
    CUDA_TRY(cudaSetDevice(device_));
    CUDA_TRY(cudaFree(nullptr));  // creates the primary context now, not inside the first operation
    char bus[32] = {};
    CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof bus, device_));
    busId_ = bus;
    streams_.resize(static_cast<size_t>(std::max(1, nStreams)));
    // Blocking streams on purpose (except in a sibling, see createSibling): they wait for work already queued on the
    // legacy default stream, so a user buffer filled there (cudaMemcpy from pageable memory and cudaMemset return
    // before the data has landed) is complete before a tether copy reads it. Work on the user's own non-default
    // streams must be synchronised by the user.
    for (auto& s : streams_) CUDA_TRY(cudaStreamCreateWithFlags(&s, streamFlags_));
    pending_.reset(new std::atomic<bool>[streams_.size()]);
    for (size_t i = 0; i < streams_.size(); ++i) pending_[i] = false;
    CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&result_), 64, cudaHostAllocMapped | cudaHostAllocPortable));
    // atomic()/signal() kernels loaded now, while no kernel of the program runs, not lazily at their first launch: a
    // lazy load may synchronise the context (kernels.h, preload), so a first launch inside the proxy thread could wait
    // for the very kernel the proxy serves, and one from a host signal ringing an armed doorbell for that doorbell's
    // own memop wait.
    const cudaError_t le = gpukernels::preload();
    if (le != cudaSuccess) return cudaFail("loading the host path's atomic and signal kernels", le);
    if (service.on)
      TETHER_TRY(HostService::create(device_, service.idleNs, service.pollers, service.timeoutSeconds, &service_));
    Status s = driver_.load();
    vmmOk_ = s.isOk();
    if (!vmmOk_) TETHER_LOG_INFO(LogSys::Heap, "VMM entry points unavailable (%s)", s.message().c_str());
    s = driver_.loadPointers();
    if (!s.isOk()) pointersMissing_ = s.message();
    return Status::ok();
  }

  int device() const override { return device_; }
  std::string busId() const override { return busId_; }

  Status registerHost(void* p, size_t n, char** deviceAlias) override {
    CUDA_TRY(cudaSetDevice(device_));
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    uintptr_t lo = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
    uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n + page - 1) & ~(page - 1);
    cudaError_t e = cudaHostRegister(reinterpret_cast<void*>(lo), hi - lo,
                                     cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (e == cudaErrorHostMemoryAlreadyRegistered)
      cudaGetLastError();
    else if (e != cudaSuccess)
      return cudaFail("cudaHostRegister(host segment)", e);
    else
      registered_.push_back(reinterpret_cast<void*>(lo));
    void* d = nullptr;
    CUDA_TRY(cudaHostGetDevicePointer(&d, p, 0));
    *deviceAlias = static_cast<char*>(d);
    return Status::ok();
  }

  Status unregisterHost(void* p) override {
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    void* lo = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~(page - 1));
    auto it = std::find(registered_.begin(), registered_.end(), lo);
    if (it == registered_.end()) return Status::ok();
    registered_.erase(it);
    CUDA_TRY(cudaHostUnregister(lo));
    return Status::ok();
  }

  bool isDeviceMemory(const void* p) override {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  }

  Status copy(void* dst, const void* src, size_t n, bool nbi) override {
    CUDA_TRY(cudaSetDevice(device_));
    const size_t k = splitMin_ && n >= splitMin_ ? streams_.size() : 1;
    const size_t first = next_.fetch_add(k) % streams_.size();
    const size_t chunk = (n + k - 1) / k;
    for (size_t i = 0; i < k; ++i) {
      size_t off = i * chunk;
      if (off >= n) break;
      size_t len = std::min(chunk, n - off);
      size_t si = (first + i) % streams_.size();
      CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off, len,
                               cudaMemcpyDefault, streams_[si]));
      pending_[si] = true;
    }
    if (nbi) return Status::ok();
    for (size_t i = 0; i < k; ++i) {
      size_t si = (first + i) % streams_.size();
      CUDA_TRY(cudaStreamSynchronize(streams_[si]));
    }
    return Status::ok();
  }

  Status quiet() override {
    TETHER_TRY(quietCopies());
    return service_ ? service_->drain() : Status::ok();  // small puts posted to the host service
  }

  Status settleDefaultStream() override {
    CUDA_TRY(cudaSetDevice(device_));
    CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
    return Status::ok();
  }

  Status atomic(void* target, const AmoArgs& a, uint64_t* fetched) override {
    if (service_) return service_->amo(target, a, fetched);
    std::lock_guard<std::mutex> lock(kernelMu_);
    CUDA_TRY(cudaSetDevice(device_));
    CUDA_TRY(gpukernels::launchAmo(streams_[0], target, a, result_));
    CUDA_TRY(cudaStreamSynchronize(streams_[0]));
    if (fetched) *fetched = __atomic_load_n(result_, __ATOMIC_ACQUIRE);
    return Status::ok();
  }

  Status signal(void* target, uint64_t value, tether_signal_op_t op) override {
    TETHER_TRY(quietCopies());  // the signal must follow every earlier copy (the service's own puts: it runs in order)
    if (service_) return service_->signal(target, value, op == TETHER_SIGNAL_ADD);
    std::lock_guard<std::mutex> lock(kernelMu_);
    CUDA_TRY(cudaSetDevice(device_));  // streams_[0] is device_'s (quietCopies() set it too; not relied upon)
    CUDA_TRY(gpukernels::launchSignal(streams_[0], static_cast<uint64_t*>(target), value, op == TETHER_SIGNAL_ADD));
    CUDA_TRY(cudaStreamSynchronize(streams_[0]));
    return Status::ok();
  }

  bool hostService() const override { return service_ != nullptr; }

  Status putSmall(void* dst, const void* src, size_t n, bool nbi) override {
    if (!service_) return Status(TETHER_ERR_UNSUPPORTED, "the host service is off");
    return service_->put(dst, src, n, !nbi);
  }

  Status getSmall(void* dst, const void* src, size_t n) override {
    if (!service_) return Status(TETHER_ERR_UNSUPPORTED, "the host service is off");
    return service_->get(dst, src, n);
  }

  void noteGpuShared(int pe) override {
    if (!serviceOpts_.automatic || !service_) return;
    TETHER_LOG_INFO(LogSys::Core, "GPU %d is shared with PE %d: host atomics and signals use one kernel launch each "
                    "(TETHER_HOST_SERVICE=auto; =1 forces the resident service kernel)", device_, pe);
    service_.reset();  // (called at start-up, before any request)
    serviceOpts_.on = false;
  }

  Status deviceByBusId(const std::string& busId, int* dev) override {
    CUDA_TRY(cudaDeviceGetByPCIBusId(dev, busId.c_str()));
    return Status::ok();
  }

  int deviceOf(const void* p) override {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
  }

  Status createStream(int dev, GpuStream** out) override {
    std::unique_ptr<CudaGpuStream> m(new CudaGpuStream(dev, device_));
    TETHER_TRY(m->init(streamFlags_));
    std::lock_guard<std::mutex> lock(madeMu_);
    *out = m.get();
    made_.push_back(std::move(m));
    return Status::ok();
  }

  Status allocPinned(size_t n, void** out) override {
    CUDA_TRY(cudaSetDevice(device_));
    CUDA_TRY(cudaHostAlloc(out, n, cudaHostAllocPortable));
    std::lock_guard<std::mutex> lock(madeMu_);
    hostAllocs_.push_back(*out);
    return Status::ok();
  }

  Status allocDevice(size_t n, void** out) override {
    CUDA_TRY(cudaSetDevice(device_));
    CUDA_TRY(cudaMalloc(out, n));
    std::lock_guard<std::mutex> lock(madeMu_);
    allocs_.push_back(*out);
    return Status::ok();
  }

  Status outsideCapture(const std::function<Status()>& f) override {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&mode));
    const Status s = f();
    cudaThreadExchangeStreamCaptureMode(&mode);  // the caller's mode again
    return s;
  }

  Status allocHostMapped(size_t n, void** host, void** device) override {
    CUDA_TRY(cudaSetDevice(device_));
    CUDA_TRY(cudaHostAlloc(host, n, cudaHostAllocMapped | cudaHostAllocPortable));
    {
      std::lock_guard<std::mutex> lock(madeMu_);
      hostAllocs_.push_back(*host);
    }
    std::memset(*host, 0, n);
    CUDA_TRY(cudaHostGetDevicePointer(device, *host, 0));
    return Status::ok();
  }

  Status createSibling(std::unique_ptr<GpuContext>* out) override {
    std::unique_ptr<CudaGpuContext> c(new CudaGpuContext());
    TETHER_TRY(c->init(device_, 1, 0, serviceOpts_, true));
    *out = std::move(c);
    return Status::ok();
  }

  Status memset(void* dst, int value, size_t n) override {
    CUDA_TRY(cudaSetDevice(device_));
    CUDA_TRY(cudaMemsetAsync(dst, value, n, streams_[0]));
    CUDA_TRY(cudaStreamSynchronize(streams_[0]));
    return Status::ok();
  }

  Status createDeviceHeap(const DeviceHeapParams& p, Bootstrap& bootstrap, std::unique_ptr<DeviceHeap>* out) override {
    CUDA_TRY(cudaSetDevice(device_));
    int vmmAttr = 0, fdAttr = 0;
    CUdevice cuDev;
    if (vmmOk_ && driver_.deviceGet(&cuDev, device_) == CUDA_SUCCESS) {
      driver_.deviceGetAttribute(&vmmAttr, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, cuDev);
      driver_.deviceGetAttribute(&fdAttr, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, cuDev);
    }
    // All same-host PEs must pick the same mechanism: agree on it.
    int32_t wantVmm = (!p.forceIpc && vmmOk_ && vmmAttr && fdAttr) ? 1 : 0;
    std::vector<int32_t> all(static_cast<size_t>(bootstrap.size()));
    TETHER_TRY(bootstrap.allgather(&wantVmm, all.data(), sizeof wantVmm));
    bool vmm = std::all_of(all.begin(), all.end(), [](int32_t v) { return v != 0; });
    if (vmm) {
      std::unique_ptr<VmmDeviceHeap> h(new VmmDeviceHeap(driver_, device_));
      TETHER_TRY(h->init(p, bootstrap));
      *out = std::move(h);
    } else {
      TETHER_LOG_INFO(LogSys::Heap, "DEVICE heap via legacy CUDA IPC (%s)",
                      p.forceIpc ? "TETHER_DEVICE_IPC=1" : "VMM with POSIX fds not available on every PE");
      std::unique_ptr<IpcDeviceHeap> h(new IpcDeviceHeap(device_));
      TETHER_TRY(h->init(p, bootstrap));
      *out = std::move(h);
    }
    return Status::ok();
  }

  Status exportRegion(const void* p, size_t n, GpuIpcRef* out) override {
    static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(out->handle), "GpuIpcRef holds a cudaIpcMemHandle_t");
    if (!pointersMissing_.empty())
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "CUDA IPC of user buffers needs the driver's %s", pointersMissing_.c_str());
    CUDA_TRY(cudaSetDevice(device_));
    // Each attribute lands in a zeroed 8-byte word: cuda.h does not say how many bytes a boolean takes (the memory
    // type takes 4), and a narrower value reads the same from the zeroed word on these (little-endian) hosts.
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                   CU_POINTER_ATTRIBUTE_BUFFER_ID};
    uint64_t v[5] = {};
    void* data[5] = {&v[0], &v[1], &v[2], &v[3], &v[4]};
    const CUdeviceptr at = reinterpret_cast<CUdeviceptr>(p);
    CU_TRY(driver_.pointerGetAttributes(5, attrs, data, at));
    const char* kind = v[1] ? "managed memory"
                       : v[2] ? "memory of a stream-ordered pool (cudaMallocAsync)"
                       : v[0] != static_cast<uint64_t>(CU_MEMORYTYPE_DEVICE) ? "not GPU memory"
                       : !v[3] ? "GPU memory legacy CUDA IPC cannot share (VMM memory from cuMemCreate, ...)"
                               : nullptr;
    if (kind) TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "CUDA IPC of a user buffer: %s", kind);
    CUdeviceptr base = 0;
    size_t bytes = 0;
    CU_TRY(driver_.memGetAddressRange(&base, &bytes, at));
    if (at + n > base + bytes)
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "CUDA IPC of a user buffer: the range runs past the end of its allocation");
    out->bufferId = v[4];
    out->offset = at - base;
    out->allocBytes = bytes;
    std::lock_guard<std::mutex> lock(ipcMu_);
    for (auto it = exported_.begin(); it != exported_.end(); ++it)
      if (it->base == base && it->bufferId == v[4]) {
        exported_.splice(exported_.begin(), exported_, it);
        std::memcpy(out->handle, &it->handle, sizeof out->handle);
        return Status::ok();
      }
    cudaIpcMemHandle_t h;
    const cudaError_t e = cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(base));
    if (e != cudaSuccess) {
      cudaGetLastError();  // not left for the program's next cudaGetLastError
      return cudaFail("cudaIpcGetMemHandle (a user buffer)", e);
    }
    if (exported_.size() >= kIpcCacheMax) exported_.pop_back();
    exported_.push_front(Exported{base, v[4], h});
    std::memcpy(out->handle, &h, sizeof out->handle);
    return Status::ok();
  }

  Status openRegion(uint64_t owner, const GpuIpcRef& ref, char** mapped) override {
    std::lock_guard<std::mutex> lock(ipcMu_);
    std::vector<Opened>& cache = opened_[owner];
    for (const Opened& o : cache)
      if (o.bufferId == ref.bufferId) {
        *mapped = o.base;
        return Status::ok();
      }
    // Full: refuse rather than close one. cudaIpcCloseMemHandle returns only once every pending wait of the context
    // has ended (one H100, 2026-12-07, bench/results/h100/wait_hold_2026-12-07.txt), and the caller may be the
    // progress of a message that a stream or kernel of this PE is waiting for: a hang.
    if (cache.size() >= kIpcCacheMax)
      TETHER_FAIL(TETHER_ERR_NO_MEMORY, "CUDA IPC: %zu GPU buffers of this owner are open here already (the most "
                  "kept; none is closed before the context ends)", kIpcCacheMax);
    CUDA_TRY(cudaSetDevice(device_));
    cudaIpcMemHandle_t h;
    std::memcpy(&h, ref.handle, sizeof h);
    void* q = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&q, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      cudaGetLastError();
      // The owner freed a buffer that is still mapped here and allocated this one over its range: the driver will
      // not map the range twice, and the stale mapping is not closed before the context ends (above).
      if (e == cudaErrorAlreadyMapped)
        TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "CUDA IPC: a freed GPU buffer of this owner is still mapped here over "
                    "the range of this one (cudaErrorAlreadyMapped; none is closed before the context ends)");
      return cudaFail("cudaIpcOpenMemHandle (a GPU buffer of another process)", e);
    }
    cache.push_back(Opened{ref.bufferId, static_cast<char*>(q)});
    *mapped = static_cast<char*>(q);
    return Status::ok();
  }

 private:
  // CUDA IPC of user buffers: exportRegion's handles by allocation (most recently used first) and openRegion's
  // mappings by owner (kept until the context ends), each at most kIpcCacheMax long (per owner for the mappings).
  static constexpr size_t kIpcCacheMax = 64;
  struct Exported {
    CUdeviceptr base;
    uint64_t bufferId;
    cudaIpcMemHandle_t handle;
  };
  struct Opened {
    uint64_t bufferId;
    char* base;
  };
  std::mutex ipcMu_;  // exported_, opened_
  std::list<Exported> exported_;
  std::unordered_map<uint64_t, std::vector<Opened>> opened_;
  std::string pointersMissing_;  // why the entry points exportRegion needs are missing (empty: resolved)
  std::mutex madeMu_;                                // made_, allocs_, hostAllocs_
  // Waits for the copies of the pool and of every stream createStream made (quiet() without the host service).
  Status quietCopies() {
    CUDA_TRY(cudaSetDevice(device_));
    for (size_t i = 0; i < streams_.size(); ++i)
      if (pending_[i].exchange(false)) CUDA_TRY(cudaStreamSynchronize(streams_[i]));
    std::lock_guard<std::mutex> lock(madeMu_);
    for (auto& m : made_)
      if (m->pending()) TETHER_TRY(m->sync());
    return Status::ok();
  }

  std::vector<std::unique_ptr<CudaGpuStream>> made_;  // createStream, destroyed first
  int device_ = -1;
  std::string busId_;
  std::vector<cudaStream_t> streams_;
  std::vector<void*> registered_;
  std::vector<void*> allocs_;  // allocDevice, freed in the destructor
  std::vector<void*> hostAllocs_;  // allocHostMapped and allocPinned, freed in the destructor
  unsigned streamFlags_ = cudaStreamDefault;  // cudaStreamNonBlocking in a sibling context
  std::unique_ptr<std::atomic<bool>[]> pending_;
  std::atomic<size_t> next_{0};
  uint64_t splitMin_ = 0;
  uint64_t* result_ = nullptr;  // host-mapped word the AMO kernel writes the old value to
  std::mutex kernelMu_;
  ServiceOptions serviceOpts_;
  std::unique_ptr<HostService> service_;  // atomics and signals of this context, when TETHER_HOST_SERVICE is on
  Driver driver_;
  bool vmmOk_ = false;
};

}  // namespace

Status GpuContext::create(const Config& config, int localPe, std::unique_ptr<GpuContext>* out) {
  out->reset();
  const std::string sel = config.str("TETHER_GPU");
  if (sel == "none") {
    TETHER_LOG_INFO(LogSys::Core, "no GPU context: TETHER_GPU=none");
    return Status::ok();
  }
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    cudaGetLastError();
    TETHER_LOG_INFO(LogSys::Core, "no GPU context: %s", e != cudaSuccess ? cudaGetErrorString(e) : "no GPU visible");
    if (sel != "auto")
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "TETHER_GPU=%s but no GPU is usable here (%s)", sel.c_str(),
                  e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
    return Status::ok();
  }
  int dev = localPe % count;
  if (sel != "auto") {
    int64_t v = -1;
    if (!parseInt(sel, &v) || v < 0 || v >= count)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "TETHER_GPU=%s: expected auto, none or a GPU ordinal in [0, %d)",
                  sel.c_str(), count);
    dev = static_cast<int>(v);
  }
  std::unique_ptr<CudaGpuContext> c(new CudaGpuContext());
  ServiceOptions service;
  const std::string mode = config.str("TETHER_HOST_SERVICE");
  bool forced = false;
  service.automatic = mode == "auto";
  if (!service.automatic && !parseBool(mode, &forced))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "TETHER_HOST_SERVICE=%s: expected auto, 1 or 0", mode.c_str());
  service.on = service.automatic || forced;
  service.idleNs = static_cast<uint64_t>(config.seconds("TETHER_HOST_SERVICE_IDLE") * 1e9);
  service.pollers = static_cast<unsigned>(config.integer("TETHER_HOST_SERVICE_POLLERS"));
  service.timeoutSeconds = config.seconds("TETHER_TIMEOUT");
  TETHER_TRY(c->init(dev, static_cast<int>(config.integer("TETHER_COPY_STREAMS")), config.size("TETHER_COPY_SPLIT"),
                     service));
  TETHER_LOG_INFO(LogSys::Core, "GPU %d (%s) of %d visible", dev, c->busId().c_str(), count);
  *out = std::move(c);
  return Status::ok();
}

}  // namespace tether
