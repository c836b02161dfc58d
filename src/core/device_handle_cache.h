// DeviceHandleCache: the peer tables of the device handles one World hands out (tether_device_handle_t.peers).
//
// Owns: per address space (CPU, GPU), the contents of the last table and every table handed out -- CPU tables in host
// memory owned here, GPU tables in device memory of the World's GPU context (freed with that context). A table is
// never freed or changed while the cache lives, so a kernel or thread still holding an older handle never reads freed
// memory; a new table is made only when the contents change (heap growth, STATIC registration).
// Who calls it: World::deviceHandle (core/device_handle.cpp), which assembles the handle from the heap views, the
// peer paths and the proxy, and asks here for the table of the peers it computed.
// Thread-safety: table() may be called from several threads at once (one mutex).
// Lifetime: a member of World; the GPU context passed to table() must outlive every GPU table handed out (the World
// destroys its GPU context after this cache, and nothing reads the tables after that).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "gpu/gpu.h"
#include "tether/tether.h"

namespace tether {

class DeviceHandleCache {
 public:
  // *out: a table with the contents of peers in the address space of forGpu (GPU memory of gpu, else host memory):
  // the last one of that space when its contents are equal, else a new one.
  Status table(bool forGpu, const std::vector<tether_device_peer_t>& peers, GpuContext* gpu,
               const tether_device_peer_t** out);

 private:
  std::mutex mu_;
  std::vector<tether_device_peer_t> lastPeers_[2];  // by address space (0: CPU, 1: GPU)
  const tether_device_peer_t* lastTable_[2] = {nullptr, nullptr};
  std::vector<std::unique_ptr<std::vector<tether_device_peer_t>>> cpuTables_;
};

}  // namespace tether
