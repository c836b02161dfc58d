// The stream-op layer on CUDA (contract: core/stream_ops.h). Copies: cudaMemcpyAsync on the user's stream. Writes,
// waits and barriers: stream memory operations, all through cuStreamBatchMemOp (one call per <= 256 entries; a
// release write is preceded by a system-scope MEM_OP_BARRIER), resolved with cudaGetDriverEntryPointByVersion (no
// libcuda link). Where the GPU lacks 64-bit stream memops (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) or NOR
// waits, the same operations run as one-thread kernels. Kernels (stream_kernels.h) also serve ADD signals, AMOs,
// narrow stores, NE/LT/LE waits, proxy calls and persistent messaging's round counters (increment, waitReach).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/log.h"
#include "core/stream/cuda/stream_kernels.h"
#include "core/stream_ops.h"
#include "gpu/cuda/kernels.h"
#include "gpu/gpu.h"

namespace tether {
namespace {

#define STREAM_CUDA_TRY(call)                                                                                   \
  do {                                                                                                          \
    cudaError_t e_ = (call);                                                                                    \
    if (e_ != cudaSuccess)                                                                                      \
      TETHER_FAIL(TETHER_ERR_CUDA, "%s: %s (%s)", #call, cudaGetErrorString(e_), cudaGetErrorName(e_));         \
  } while (0)

template <typename F>
Status resolve(const char* name, F* fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p) {
    cudaGetLastError();
    TETHER_FAIL(TETHER_ERR_CUDA, "driver entry point %s not found (error %d, query %d)", name, static_cast<int>(e),
                static_cast<int>(q));
  }
  *fn = reinterpret_cast<F>(p);
  return Status::ok();
}

constexpr size_t kMaxBatch = 256;  // entries per cuStreamBatchMemOp call

// A closure for cudaLaunchHostFunc.
struct HostFn {
  std::function<void()> fn;
  bool once;
  static void CUDART_CB run(void* p) {
    auto* f = static_cast<HostFn*>(p);
    f->fn();
    if (f->once) delete f;
  }
};

class CudaStreamOps : public StreamOps {
 public:
  CudaStreamOps(GpuContext& gpu, const GpuStreamOpsOptions& opts) : gpu_(gpu), opts_(opts) {}
  ~CudaStreamOps() override {
    cudaSetDevice(gpu_.device());
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
    if (follow_) cudaEventDestroy(follow_);
  }

  Status init() {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    // Stream kernels loaded before any stream operation exists (stream_kernels.h): loaded lazily, a first launch
    // while a memop wait of this context is pending (an armed doorbell) could wait for that wait, i.e. forever. So a
    // failed preload fails the stream layer, as GpuContext's does for its kernels, rather than risk that hang.
    const cudaError_t pre = gpukernels::preloadStreamKernels();
    if (pre != cudaSuccess) {
      cudaGetLastError();
      TETHER_FAIL(TETHER_ERR_CUDA, "stream operations: loading the stream kernels failed: %s (%s)",
                  cudaGetErrorString(pre), cudaGetErrorName(pre));
    }
    decltype(&cuDeviceGet) deviceGet = nullptr;
    decltype(&cuDeviceGetAttribute) attr = nullptr;
    Status s = resolve("cuStreamBatchMemOp", &batch_);
    if (s.isOk()) s = resolve("cuDeviceGet", &deviceGet);
    if (s.isOk()) s = resolve("cuDeviceGetAttribute", &attr);
    int mem64 = 0, nor = 0;
    CUdevice dev;
    if (s.isOk() && deviceGet(&dev, gpu_.device()) == CUDA_SUCCESS) {
      attr(&mem64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev);
      attr(&nor, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, dev);
    }
    int hostAtomics = 0;
    STREAM_CUDA_TRY(cudaDeviceGetAttribute(&hostAtomics, cudaDevAttrHostNativeAtomicSupported, gpu_.device()));
    hostAtomics_ = hostAtomics != 0;
    memOpsOk_ = s.isOk() && mem64;
    norOk_ = memOpsOk_ && nor;
    if (!memOpsOk_)
      TETHER_LOG_INFO(LogSys::Core, "stream operations: 64-bit stream memory operations unavailable (%s); writes and "
                      "waits run as one-thread kernels", s.isOk() ? "device attribute" : s.message().c_str());
    return Status::ok();
  }

  const char* name() const override {
    if (!memOpsOk_) return "cuda (kernels only)";
    return opts_.kernelWaits ? "cuda (stream memops; waits as kernels: peers on other hosts)" : "cuda (stream memops)";
  }
  bool gpuAddresses() const override { return true; }
  bool hostAtomics() const override { return hostAtomics_; }

  Status copy(void* stream, void* dst, const void* src, size_t n) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    STREAM_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, cuda(stream)));
    return Status::ok();
  }

  Status memOps(void* stream, const StreamMemOp* ops, size_t n) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    std::vector<CUstreamBatchMemOpParams> params;
    params.reserve(std::min(n * 2, kMaxBatch + 1));
    auto flush = [&]() -> Status {
      if (params.empty()) return Status::ok();
      const CUresult r = batch_(reinterpret_cast<CUstream>(cuda(stream)), static_cast<unsigned>(params.size()),
                                params.data(), 0);
      params.clear();
      if (r != CUDA_SUCCESS) TETHER_FAIL(TETHER_ERR_CUDA, "cuStreamBatchMemOp: driver error %d", static_cast<int>(r));
      return Status::ok();
    };
    for (size_t i = 0; i < n; ++i) {
      const StreamMemOp& o = ops[i];
      if (o.kind != StreamMemOp::Barrier && !o.addr)
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "stream memop %zu: null address", i);
      if (!memOpsOk_ ||
          (o.kind == StreamMemOp::Wait && (opts_.kernelWaits || (o.cond == StreamCond::Nor && !norOk_)))) {
        TETHER_TRY(flush());
        TETHER_TRY(kernelMemOp(stream, o));
        continue;
      }
      if (params.size() + 2 > kMaxBatch) TETHER_TRY(flush());
      CUstreamBatchMemOpParams p{};
      switch (o.kind) {
        case StreamMemOp::Barrier:
          p.memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
          p.memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_SYS;
          params.push_back(p);
          break;
        case StreamMemOp::Write:
          if (o.release) {
            CUstreamBatchMemOpParams b{};
            b.memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
            b.memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_SYS;
            params.push_back(b);
          }
          p.writeValue.operation = o.width == 4 ? CU_STREAM_MEM_OP_WRITE_VALUE_32 : CU_STREAM_MEM_OP_WRITE_VALUE_64;
          p.writeValue.address = reinterpret_cast<CUdeviceptr>(o.addr);
          if (o.width == 4)
            p.writeValue.value = static_cast<cuuint32_t>(o.value);
          else
            p.writeValue.value64 = o.value;
          p.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
          params.push_back(p);
          break;
        case StreamMemOp::Wait:
          p.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
          p.waitValue.address = reinterpret_cast<CUdeviceptr>(o.addr);
          p.waitValue.value64 = o.value;
          p.waitValue.flags = waitFlag(o.cond);
          params.push_back(p);
          break;
      }
    }
    return flush();
  }

  Status store(void* stream, void* addr, uint64_t value, unsigned width) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    STREAM_CUDA_TRY(gpukernels::launchStore(cuda(stream), addr, value, width, 0));
    return Status::ok();
  }

  Status signal(void* stream, uint64_t* addr, uint64_t value, tether_signal_op_t op) override {
    if (op == TETHER_SIGNAL_SET) {
      StreamMemOp w;
      w.kind = StreamMemOp::Write;
      w.addr = addr;
      w.value = value;
      return memOps(stream, &w, 1);
    }
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    STREAM_CUDA_TRY(gpukernels::launchSignal(cuda(stream), addr, value, 1));
    return Status::ok();
  }

  Status amo(void* stream, void* target, const AmoArgs& a, void* fetched) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    STREAM_CUDA_TRY(gpukernels::launchStreamAmo(cuda(stream), target, a, fetched));
    return Status::ok();
  }

  Status waitCmp(void* stream, const uint64_t* addr, tether_cmp_t cmp, uint64_t value, bool isSigned,
                 uint64_t timeoutNs) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    STREAM_CUDA_TRY(gpukernels::launchWait(cuda(stream), addr, gpukernels::kWaitCmpBase + static_cast<int>(cmp),
                                           value, isSigned ? 1 : 0, timeoutNs));
    return Status::ok();
  }

  Status increment(void* stream, uint64_t* const* words, size_t n) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    for (size_t i = 0; i < n; i += kWordsPerCall)
      STREAM_CUDA_TRY(gpukernels::launchIncrement(cuda(stream), words + i, std::min(kWordsPerCall, n - i)));
    return Status::ok();
  }

  Status waitReach(void* stream, const uint64_t* const* reach, const uint64_t* const* target, size_t n,
                   uint64_t timeoutNs) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    for (size_t i = 0; i < n; i += kWordsPerCall)
      STREAM_CUDA_TRY(
          gpukernels::launchWaitReach(cuda(stream), reach + i, target + i, std::min(kWordsPerCall, n - i), timeoutNs));
    return Status::ok();
  }

  Status proxy(void* stream, const tether_device_handle_t& handle, const Op& call) override {
    if (!(handle.flags & TETHER_DEVICE_GPU))
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "stream proxy call: needs the GPU device handle");
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    STREAM_CUDA_TRY(gpukernels::launchProxyCall(cuda(stream), handle, call));
    return Status::ok();
  }

  Status coll(void* stream, const tether_device_handle_t& handle, const tether_device_team_t& team,
              const StreamCollCall& call) override {
    if (!(handle.flags & TETHER_DEVICE_GPU))
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "stream collective: needs the GPU device handle");
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    STREAM_CUDA_TRY(gpukernels::launchCollCall(cuda(stream), handle, team, call));
    return Status::ok();
  }

  Status follow(void* stream, void* other) override {
    if (stream == other) return Status::ok();
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    // One event for every call: record and wait as a pair under the lock (a record by another thread in between, on
    // another stream, would be waited for instead).
    std::lock_guard<std::mutex> lock(followMu_);
    if (!follow_) STREAM_CUDA_TRY(cudaEventCreateWithFlags(&follow_, cudaEventDisableTiming));
    STREAM_CUDA_TRY(cudaEventRecord(follow_, cuda(other)));
    STREAM_CUDA_TRY(cudaStreamWaitEvent(cuda(stream), follow_, 0));
    return Status::ok();
  }

  Status capturing(void* stream, bool* out) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    STREAM_CUDA_TRY(cudaStreamIsCapturing(cuda(stream), &cap));
    *out = cap != cudaStreamCaptureStatusNone;  // (invalidated: the capture fails at its end anyway)
    return Status::ok();
  }

  Status hostCall(void* stream, std::function<void()> fn) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    // Run once: the callback frees its closure. Captured into a graph (replayed any number of times): the closure
    // lives as long as this object.
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    STREAM_CUDA_TRY(cudaStreamIsCapturing(cuda(stream), &cap));
    auto* f = new HostFn{std::move(fn), cap == cudaStreamCaptureStatusNone};
    const cudaError_t e = cudaLaunchHostFunc(cuda(stream), &HostFn::run, f);
    if (e != cudaSuccess) {
      delete f;  // not enqueued: never runs
      STREAM_CUDA_TRY(e);
    }
    if (!f->once) {
      std::lock_guard<std::mutex> lock(mu_);
      kept_.emplace_back(f);
    }
    return Status::ok();
  }

  Status createStream(void** out) override {
    if (!out) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "createStream: out is NULL");
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    cudaStream_t s = nullptr;
    STREAM_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::lock_guard<std::mutex> lock(mu_);
    streams_.push_back(s);
    *out = s;
    return Status::ok();
  }

  Status destroyStream(void* stream) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = std::find(streams_.begin(), streams_.end(), cuda(stream));
      if (it == streams_.end()) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "destroyStream: %p was not created here", stream);
      streams_.erase(it);
    }
    STREAM_CUDA_TRY(cudaStreamSynchronize(cuda(stream)));
    STREAM_CUDA_TRY(cudaStreamDestroy(cuda(stream)));
    return Status::ok();
  }

  Status synchronize(void* stream) override {
    STREAM_CUDA_TRY(cudaSetDevice(gpu_.device()));
    STREAM_CUDA_TRY(cudaStreamSynchronize(cuda(stream)));
    return Status::ok();
  }

 private:
  static cudaStream_t cuda(void* s) { return static_cast<cudaStream_t>(s); }
  static unsigned waitFlag(StreamCond c) {
    switch (c) {
      case StreamCond::Geq: return CU_STREAM_WAIT_VALUE_GEQ;
      case StreamCond::Eq: return CU_STREAM_WAIT_VALUE_EQ;
      case StreamCond::And: return CU_STREAM_WAIT_VALUE_AND;
      case StreamCond::Nor: return CU_STREAM_WAIT_VALUE_NOR;
    }
    return CU_STREAM_WAIT_VALUE_GEQ;
  }

  // The kernel form of one memop (GPUs without stream memops); waits are unbounded, like the memop they replace.
  Status kernelMemOp(void* stream, const StreamMemOp& o) {
    switch (o.kind) {
      case StreamMemOp::Barrier: STREAM_CUDA_TRY(gpukernels::launchFence(cuda(stream))); break;
      case StreamMemOp::Write:
        STREAM_CUDA_TRY(gpukernels::launchStore(cuda(stream), o.addr, o.value, o.width, o.release ? 1 : 0));
        break;
      case StreamMemOp::Wait:
        STREAM_CUDA_TRY(gpukernels::launchWait(cuda(stream), static_cast<const uint64_t*>(o.addr),
                                               gpukernels::kWaitCondBase + static_cast<int>(o.cond), o.value, 0, 0));
        break;
    }
    return Status::ok();
  }

  GpuContext& gpu_;
  const GpuStreamOpsOptions opts_;
  decltype(&cuStreamBatchMemOp) batch_ = nullptr;
  bool memOpsOk_ = false, norOk_ = false, hostAtomics_ = false;
  std::mutex mu_;
  std::vector<cudaStream_t> streams_;
  std::vector<std::unique_ptr<HostFn>> kept_;  // closures captured into graphs
  std::mutex followMu_;
  cudaEvent_t follow_ = nullptr;  // follow()'s event, made at its first call
};

}  // namespace

Status createGpuStreamOps(GpuContext& gpu, const GpuStreamOpsOptions& opts, std::unique_ptr<StreamOps>* out) {
  std::unique_ptr<CudaStreamOps> ops(new CudaStreamOps(gpu, opts));
  TETHER_TRY(ops->init());
  *out = std::move(ops);
  return Status::ok();
}

}  // namespace tether
