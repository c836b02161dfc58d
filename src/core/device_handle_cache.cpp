#include "core/device_handle_cache.h"

#include <cstring>

namespace tether {

Status DeviceHandleCache::table(bool forGpu, const std::vector<tether_device_peer_t>& peers, GpuContext* gpu,
                                const tether_device_peer_t** out) {
  const int space = forGpu ? 1 : 0;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t bytes = peers.size() * sizeof(tether_device_peer_t);
  if (!lastTable_[space] || lastPeers_[space].size() != peers.size() ||
      std::memcmp(lastPeers_[space].data(), peers.data(), bytes) != 0) {
    if (forGpu) {
      void* table = nullptr;
      TETHER_TRY(gpu->allocDevice(bytes, &table).withContext("tether_device_handle: peer table"));
      TETHER_TRY(gpu->copy(table, peers.data(), bytes, false).withContext("tether_device_handle: peer table"));
      lastTable_[space] = static_cast<const tether_device_peer_t*>(table);
    } else {
      cpuTables_.emplace_back(new std::vector<tether_device_peer_t>(peers));
      lastTable_[space] = cpuTables_.back()->data();
    }
    lastPeers_[space] = peers;
  }
  *out = lastTable_[space];
  return Status::ok();
}

}  // namespace tether
