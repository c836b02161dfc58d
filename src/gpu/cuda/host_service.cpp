// The host service (host_service.h has the protocol and the contract).
#include "gpu/cuda/host_service.h"

#include <cstring>

#include "base/clock.h"
#include "base/log.h"

namespace tether {
namespace gk = gpukernels;

namespace {

using gk::kServiceSlots;
using gk::ServiceSlot;
using gk::ServiceState;

Status serviceCudaFail(const char* what, cudaError_t e) {
  return Status(TETHER_ERR_CUDA, strprintf("host service: %s: %s (%s)", what, cudaGetErrorString(e),
                                           cudaGetErrorName(e)));
}

uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// About one poll of the ring by a warp of the kernel (a read of host-mapped memory and the loop around it): the
// pollers start this far apart divided by their number, so their reads are spread over it.
constexpr uint64_t kPollNs = 1000;

}  // namespace

Status HostService::create(int device, uint64_t idleNs, unsigned pollers, double timeoutSeconds,
                           std::unique_ptr<HostService>* out) {
  std::unique_ptr<HostService> s(new HostService());
  s->device_ = device;
  s->idleNs_ = idleNs;
  s->pollers_ = pollers;
  s->timeoutSeconds_ = timeoutSeconds;
  cudaError_t e = cudaStreamCreateWithFlags(&s->stream_, cudaStreamNonBlocking);
  if (e != cudaSuccess) return serviceCudaFail("cudaStreamCreateWithFlags", e);
  const size_t ringBytes = sizeof(ServiceSlot) * kServiceSlots;
  e = cudaHostAlloc(&s->block_, ringBytes + sizeof(ServiceState), cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) return serviceCudaFail("cudaHostAlloc(ring)", e);
  std::memset(s->block_, 0, ringBytes + sizeof(ServiceState));
  s->slots_ = static_cast<ServiceSlot*>(s->block_);
  s->state_ = reinterpret_cast<ServiceState*>(static_cast<char*>(s->block_) + ringBytes);
  void* dev = nullptr;
  e = cudaHostGetDevicePointer(&dev, s->block_, 0);
  if (e != cudaSuccess) return serviceCudaFail("cudaHostGetDevicePointer(ring)", e);
  s->devSlots_ = static_cast<const ServiceSlot*>(dev);
  s->devState_ = reinterpret_cast<ServiceState*>(static_cast<char*>(dev) + ringBytes);
  *out = std::move(s);
  return Status::ok();
}

HostService::~HostService() {
  cudaSetDevice(device_);
  if (running_ && failed_.empty() && loadAcquire(&state_->exited) != epoch_) {
    uint64_t ticket = 0;
    Status s = call(gk::serviceHead(gk::kServiceStop), nullptr, 0, 0, &ticket);
    if (!s.isOk()) TETHER_LOG_WARN(LogSys::Core, "host service of GPU %d: stopping: %s", device_, s.message().c_str());
  }
  // The kernel has returned (stop served) or returns within idleNs; bounded all the same (a kernel that never got
  // an SM would otherwise hold the teardown forever).
  if (stream_) {
    Deadline d(timeoutSeconds_);
    while (cudaStreamQuery(stream_) == cudaErrorNotReady && !d.expired()) {
      timespec ts{0, 100000};
      nanosleep(&ts, nullptr);
    }
    cudaGetLastError();
    cudaStreamDestroy(stream_);
  }
  if (block_) cudaFreeHost(block_);
}

Status HostService::launch() {
  cudaError_t d = cudaSetDevice(device_);
  if (d != cudaSuccess) return serviceCudaFail("cudaSetDevice", d);
  const uint64_t next = loadAcquire(&state_->done) + 1;
  cudaError_t e =
      gk::launchService(stream_, devSlots_, devState_, next, idleNs_, ++epoch_, pollers_, kPollNs / pollers_);
  if (e != cudaSuccess) return serviceCudaFail("launching the service kernel", e);
  running_ = true;
  return Status::ok();
}

Status HostService::awaitTicket(uint64_t ticket) {
  // Pure spinning for the first kSpinNs: the answer comes from the GPU in a few microseconds, and this spin holds
  // back no PE (SpinWait's early yields would add a system call to every answer); then SpinWait's backoff.
  constexpr uint64_t kSpinNs = 20000;
  const uint64_t spinUntil = nowNs() + kSpinNs;
  SpinWait spin(timeoutSeconds_);
  while (loadAcquire(&state_->done) < ticket) {
    if (loadAcquire(&state_->exited) == epoch_) {
      // The kernel left (idle) without this ticket: once its stream is done, done is final; start a new one there.
      cudaError_t e = cudaStreamSynchronize(stream_);
      if (e != cudaSuccess) return serviceCudaFail("waiting for the service kernel to return", e);
      running_ = false;
      if (loadAcquire(&state_->done) < ticket) TETHER_TRY(launch());
      continue;
    }
    if (nowNs() < spinUntil) spin.busy();
    if (!spin.next()) {
      failed_ = strprintf("host service of GPU %d: request %llu not answered within %.1f s (TETHER_TIMEOUT): the "
                          "service kernel did not run (are all SMs held by a kernel that waits for this request?)",
                          device_, static_cast<unsigned long long>(ticket), timeoutSeconds_);
      return Status(TETHER_ERR_TIMEOUT, failed_);
    }
  }
  return Status::ok();
}

Status HostService::post(uint32_t head, void* target, uint64_t value, uint64_t cond, uint64_t* ticketOut) {
  if (!failed_.empty()) return Status(TETHER_ERR_TIMEOUT, failed_ + " (an earlier call)");
  const uint64_t ticket = posted_ + 1;
  // The slot's previous ticket must be done before it is overwritten (a ring full of posted puts).
  if (ticket > kServiceSlots) TETHER_TRY(awaitTicket(ticket - kServiceSlots));
  posted_ = ticket;
  // Each word carries the ticket (kernels.h, ServiceSlot): stored in any order, no release needed between them.
  const uint64_t tag = (ticket & 0xffffffffu) << 32;
  const uint64_t t = reinterpret_cast<uint64_t>(target);
  const uint64_t words[gk::kSlotWords] = {
      head, t & 0xffffffffu, t >> 32, value & 0xffffffffu, value >> 32, cond & 0xffffffffu, cond >> 32, 0};
  uint64_t* slot = slots_[ticket % kServiceSlots].word;
  for (unsigned i = 0; i < gk::kSlotWords; ++i) __atomic_store_n(&slot[i], tag | words[i], __ATOMIC_RELAXED);
  // A kernel that leaves before it sees the post is restarted by the next awaitTicket.
  if (!running_) TETHER_TRY(launch());
  *ticketOut = ticket;
  return Status::ok();
}

Status HostService::call(uint32_t head, void* target, uint64_t value, uint64_t cond, uint64_t* ticketOut) {
  TETHER_TRY(post(head, target, value, cond, ticketOut));
  return awaitTicket(*ticketOut);
}

Status HostService::amo(void* target, const AmoArgs& a, uint64_t* fetched) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t ticket = 0;
  TETHER_TRY(call(gk::serviceHead(gk::kServiceAmo, static_cast<uint32_t>(a.op), a.width), target, a.value,
                  a.cond, &ticket));
  if (fetched) *fetched = state_->result[ticket % kServiceSlots][0];  // written before done (acquired)
  return Status::ok();
}

Status HostService::put(void* dst, const void* src, size_t n, bool wait) {
  if (n > gk::kServiceBytes) TETHER_FAIL(TETHER_ERR_INTERNAL, "host service: a put of %zu bytes", n);
  uint64_t data[2] = {0, 0};
  std::memcpy(data, src, n);
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t ticket = 0;
  const uint32_t head = gk::serviceHead(gk::kServicePut, 0, 0, static_cast<uint32_t>(n));
  return wait ? call(head, dst, data[0], data[1], &ticket) : post(head, dst, data[0], data[1], &ticket);
}

Status HostService::get(void* dst, const void* src, size_t n) {
  if (n > gk::kServiceBytes) TETHER_FAIL(TETHER_ERR_INTERNAL, "host service: a get of %zu bytes", n);
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t ticket = 0;
  TETHER_TRY(call(gk::serviceHead(gk::kServiceGet, 0, 0, static_cast<uint32_t>(n)), const_cast<void*>(src), 0, 0,
                  &ticket));
  std::memcpy(dst, state_->result[ticket % kServiceSlots], n);
  return Status::ok();
}

Status HostService::signal(void* target, uint64_t value, bool add) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t ticket = 0;
  return call(gk::serviceHead(add ? gk::kServiceSignalAdd : gk::kServiceSignalSet), target, value, 0, &ticket);
}

Status HostService::drain() {
  std::lock_guard<std::mutex> lock(mu_);
  if (posted_ == 0 || loadAcquire(&state_->done) >= posted_) return Status::ok();
  if (!failed_.empty()) return Status(TETHER_ERR_TIMEOUT, failed_ + " (an earlier call)");
  return awaitTicket(posted_);
}

}  // namespace tether
