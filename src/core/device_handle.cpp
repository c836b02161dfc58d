// World::deviceHandle: the device handle of tether.h (layout and translation rule are documented there and in
// include/tether/device.cuh). Built on demand from the heap windows, the GPU aliases of the HOST/STATIC views and the
// peer paths chosen at start-up; the peer table comes from the World's DeviceHandleCache (core/device_handle_cache.h).
#include <cstring>

#include "base/log.h"
#include "core/world.h"

namespace tether {

Status World::deviceHandle(bool forGpu, tether_device_handle_t* out, bool withRing) {
  if (!out) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_device_handle: handle is NULL");
  if (forGpu && !gpu_)
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED,
                "tether_device_handle: PE %d has no GPU (host-only build, no visible GPU, or TETHER_GPU=none); "
                "tether_device_handle_cpu gives the handle for CPU threads", job_.rank);
  // Stream operations compiled while the thread captures a CUDA graph take the handle too: its first peer table
  // and proxy ring are allocated outside the capture (GpuContext::outsideCapture).
  if (forGpu) return gpu_->outsideCapture([&] { return buildDeviceHandle(true, out, withRing); });
  return buildDeviceHandle(false, out, withRing);
}

Status World::buildDeviceHandle(bool forGpu, tether_device_handle_t* out, bool withRing) {
  tether_device_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.my_pe = job_.rank;
  h.n_pes = job_.size;
  h.my_local = localPe_;
  h.local_size = localSize_;
  h.flags = forGpu ? TETHER_DEVICE_GPU : 0u;
  h.timeout_ns = timeout_ > 0 ? static_cast<uint64_t>(timeout_ * 1e9) : 0;
  h.barrier_flat_max = static_cast<int32_t>(config_.integer("TETHER_BARRIER_FLAT_MAX"));

  // View of local PE j's copy of segment k in the handle's address space (0: none).
  const SymmetricHeap& heap = heap_;
  auto view = [&](int k, int j) -> uint64_t {
    switch (static_cast<SegKind>(k)) {
      case SegKind::Host:
        if (forGpu && !heap.hostAliased(j)) return 0;
        return reinterpret_cast<uint64_t>(heap.host()->base(j)) + (forGpu ? heap.hostAlias(j) : 0);
      case SegKind::Device:
        return forGpu && heap.device() ? reinterpret_cast<uint64_t>(heap.device()->base(j)) : 0;
      case SegKind::Static:
        if (!heap.statics() || (forGpu && !heap.staticAliased(j))) return 0;
        return reinterpret_cast<uint64_t>(heap.statics()->base(j)) + (forGpu ? heap.staticAlias(j) : 0);
    }
    return 0;
  };
  for (int k = 0; k < kSegKinds; ++k) {
    tether_device_segment_t& s = h.seg[k];
    const SegKind kind = static_cast<SegKind>(k);
    if (kind == SegKind::Host) {
      s.sym_base = reinterpret_cast<uint64_t>(heap.host()->myBase());
      s.size = forGpu ? heap.registered() : heap.host()->committed();
    } else if (kind == SegKind::Device) {
      if (!forGpu || !heap.device()) continue;
      s.sym_base = reinterpret_cast<uint64_t>(heap.device()->myBase());
      s.size = heap.device()->committed();
    } else {
      if (!heap.statics()) continue;
      s.sym_base = reinterpret_cast<uint64_t>(heap.staticLocal());
      s.size = heap.staticBytes();
    }
    s.my_view = view(k, localPe_);
    if (!s.my_view) {  // absent from this address space: no address falls in it
      s.sym_base = s.size = 0;
      continue;
    }
    s.present = 1;
    s.window = view(k, 0);
    s.stride = localSize_ > 1 ? view(k, 1) - view(k, 0) : s.size;
    s.uniform = 1;
    for (int j = 0; j < localSize_; ++j)
      if (view(k, j) != s.window + static_cast<uint64_t>(j) * s.stride) s.uniform = 0;
    if (!s.uniform)
      TETHER_LOG_INFO(LogSys::Core, "device handle: %s views are not evenly spaced in the %s address space; "
                      "translation reads the peer table", segKindName(kind), forGpu ? "GPU" : "CPU");
  }

  std::vector<tether_device_peer_t> peers(static_cast<size_t>(job_.size));
  bool direct = true, mixed = false;
  int proxied = 0;  // (PE, segment) pairs served by the proxy ring
  for (int pe = 0; pe < job_.size; ++pe) {
    tether_device_peer_t& p = peers[static_cast<size_t>(pe)];
    std::memset(&p, 0, sizeof p);
    const bool local = topo_.sameHost(pe, job_.rank);
    p.local_index = local ? topo_.pes[static_cast<size_t>(pe)].localIndex : -1;
    if (p.local_index != pe) direct = false;
    bool someReach = false, someProxied = false;
    for (int k = 0; k < kSegKinds; ++k) {
      if (!h.seg[k].present) continue;
      const SegPath& sp = path(pe, static_cast<SegKind>(k));
      bool reach = local && sp.ops && (sp.ops->caps & kCapLoadStore) && sp.base;
      if (static_cast<SegKind>(k) == SegKind::Device && sp.kind == PathKind::Staged) reach = false;
      if (forceProxy_ && pe != job_.rank) reach = false;
      if (reach) {
        p.base[k] = view(k, p.local_index);
        reach = p.base[k] != 0;
      }
      if (reach) {
        p.reach |= 1u << k;
        someReach = true;
      } else {
        direct = false;
        if (sp.ops) someProxied = true;  // the World reaches it by its host path: the proxy serves it
        // Its connection made now, on this thread, not by the proxy's first descriptor (transport.h, preconnect).
        if (sp.ops && sp.ops->preconnect && pe != job_.rank)
          TETHER_TRY(sp.ops->preconnect(sp.ctx, pe).withContext("device handle"));
      }
      if (!h.seg[k].uniform) direct = false;
    }
    proxied += someProxied;
    mixed = mixed || (someReach && someProxied);
  }
  if (direct) h.flags |= TETHER_DEVICE_DIRECT;

  // Barrier words: the DEVICE control block for GPU handles (p2p stores, no PCIe), else the HOST control block.
  if (forGpu && h.seg[static_cast<int>(SegKind::Device)].present) {
    h.barrier_seg = TETHER_DEVICE_SEG_DEVICE;
    h.barrier = reinterpret_cast<tether_device_barrier_t*>(heap.device()->myBase());
  } else {
    h.barrier_seg = TETHER_DEVICE_SEG_HOST;
    h.barrier = &reinterpret_cast<ControlBlock*>(heap.host()->myBase())->devBarrier;
  }

  // Proxy ring for the (PE, segment) pairs loads/stores do not reach (core/proxy.h), when asked for, and once the
  // World runs a proxy anyway (tether.h).
  std::unique_lock<std::mutex> proxyLock(proxyMu_);
  if (proxied || withRing || proxy_) {
    if (!proxy_) {
      TETHER_TRY(Proxy::create(*this, config_.integer("TETHER_PROXY_SLOTS"), &proxy_).withContext("device handle"));
      liveProxy_.store(proxy_.get());
    }
    std::vector<ProxyWindow> windows;  // GPU aliases of this PE's HOST/STATIC views, translated back by the proxy
    for (int k : {TETHER_DEVICE_SEG_HOST, TETHER_DEVICE_SEG_STATIC})
      if (forGpu && h.seg[k].present) windows.push_back(ProxyWindow{h.seg[k].my_view, h.seg[k].sym_base, h.seg[k].size});
    ProxyRingView rv;
    TETHER_TRY(proxy_->ring(forGpu, windows, &rv).withContext("device handle"));
    h.proxy_ring = rv.ring;
    h.proxy_state = rv.state;
    h.proxy_ticket = rv.ticket;
    h.proxy_slots = rv.slots;
    if (proxied) {
      h.flags |= TETHER_DEVICE_PROXY | (mixed ? TETHER_DEVICE_PROXY_MIXED : 0u);
      TETHER_LOG_INFO(LogSys::Core, "device handle (%s): %d PE(s) with segments served by the proxy ring (%s)",
                      forGpu ? "GPU" : "CPU", proxied,
                      forceProxy_ ? "TETHER_FORCE_PROXY=1" : "not load/store reachable");
    }
  }
  proxyLock.unlock();
  // Peer table: the last one when nothing changed, else a new one (older ones stay valid until the World dies).
  TETHER_TRY(handles_.table(forGpu, peers, gpu_.get(), &h.peers));
  *out = h;
  return Status::ok();
}

}  // namespace tether
