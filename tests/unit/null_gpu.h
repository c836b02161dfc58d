// NullGpu: a GpuContext for unit tests that does nothing: every operation fails with TETHER_ERR_UNSUPPORTED ("not in
// the fake"), waits succeed at once, no pointer is GPU memory. A test derives from it and overrides what it plays.
#pragma once

#include <memory>
#include <string>

#include "gpu/gpu.h"

namespace tether {

class NullGpu : public GpuContext {
 public:
  int device() const override { return 0; }
  std::string busId() const override { return "0000:01:00.0"; }
  Status registerHost(void*, size_t, char**) override { return no(); }
  Status unregisterHost(void*) override { return no(); }
  bool isDeviceMemory(const void*) override { return false; }
  Status copy(void*, const void*, size_t, bool) override { return no(); }
  Status quiet() override { return Status::ok(); }
  Status settleDefaultStream() override { return Status::ok(); }
  Status atomic(void*, const AmoArgs&, uint64_t*) override { return no(); }
  Status signal(void*, uint64_t, tether_signal_op_t) override { return no(); }
  bool hostService() const override { return false; }
  Status putSmall(void*, const void*, size_t, bool) override { return no(); }
  Status getSmall(void*, const void*, size_t) override { return no(); }
  void noteGpuShared(int) override {}
  Status deviceByBusId(const std::string&, int*) override { return no(); }
  int deviceOf(const void*) override { return -1; }
  Status createStream(int, GpuStream**) override { return no(); }
  Status allocPinned(size_t, void**) override { return no(); }
  Status memset(void*, int, size_t) override { return no(); }
  Status allocDevice(size_t, void**) override { return no(); }
  Status allocHostMapped(size_t, void**, void**) override { return no(); }
  Status createSibling(std::unique_ptr<GpuContext>*) override { return no(); }
  Status createDeviceHeap(const DeviceHeapParams&, Bootstrap&, std::unique_ptr<DeviceHeap>*) override { return no(); }
  Status exportRegion(const void*, size_t, GpuIpcRef*) override { return no(); }
  Status openRegion(uint64_t, const GpuIpcRef&, char**) override { return no(); }

 protected:
  static Status no() { return Status(TETHER_ERR_UNSUPPORTED, "not in the fake"); }
};

}  // namespace tether
