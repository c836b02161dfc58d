// Messaging (core/messaging.h): rendezvous -- the CTS (by data where core/msg_by_data.h moves the bytes), and direct
// reads of a send buffer on this host (process_vm_readv, CUDA IPC, gets).
#include "core/messaging_impl.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/log.h"
#include "core/op.h"
#include "core/world.h"
#include "gpu/gpu.h"

namespace tether {

// A receive r matched an RTS: ask for min(message, buffer) bytes (a CTS through this PE's ring to src).
Status Messaging::matchRts(const char* call, Req& r, int src, const SlotHead& h, const GpuIpcRef& ipc) {
  r.fromPe = src;
  r.fromTag = h.tag;
  r.msgBytes = h.bytes;
  r.allowed = std::min<size_t>(h.bytes, r.cap);
  if (h.kind == kRtsDirect) {
    bool viaRing = false;
    TETHER_TRY(readDirect(call, r, src, h, ipc, &viaRing));
    if (!viaRing) return Status::ok();
  }
  Out o{};
  o.h.kind = kCts;
  o.h.bytes = r.allowed;
  o.h.a = h.a;
  o.h.b = r.id;
  // From another host's PE whose transport can send the buffer: its bytes straight into r's buffer if the transport
  // can write it (core/msg_by_data.h), else DATA slots through the ring.
  if (h.kind == kRts && (h.how & kTransportPayload) && !direct_[static_cast<size_t>(src)] &&
      byData_.expect(call, r.xfer, src, r.dst, r.allowed, r.gpu, r.id, r.fromTag))
    o.h.how = kByData | (r.gpu ? kByDataToGpu : 0);
  out_[static_cast<size_t>(src)].push_back(o);
  if (r.allowed == 0) complete(r, Status::ok());
  bool did = false;
  return push(call, src, &did);
}

// A transfer by the transport (core/msg_by_data.h) ended: its request completes (a receive with the bytes that landed).
void Messaging::ended(MsgByData::Xfer& x, Status result) {
  Req& r = *static_cast<Req*>(x.owner);
  if (!r.send) r.moved = x.moved;
  complete(r, std::move(result));
}

// The receiver's side of RTS_DIRECT: claim the read (compare-and-swap on the sender's claim word), read the bytes
// straight into r's buffer, tell the sender (kClaimDone in the same word). A claim lost to a withdrawal fails r; a read that cannot be made
// here (a GPU buffer from private host memory, process_vm_readv refused, CUDA IPC refused or no GPU here) leaves
// *viaRing set: the caller answers with a CTS and the data comes through the ring after all. A refusal is logged
// once and remembered per source: its later messages of that kind take the ring at once.
Status Messaging::readDirect(const char* call, Req& r, int src, const SlotHead& h, const GpuIpcRef& ipc,
                             bool* viaRing) {
  *viaRing = false;
  const uint64_t how = h.how & 0xff;
  const bool viaGet = how == kViaGet;
  const size_t from = static_cast<size_t>(src);
  const bool canRead = viaGet || (how == kViaCma && !r.gpu && cmaOk_[from]) ||
                       (how == kViaIpc && paths_->gpu() && (src == me_ || ipcOk_[from]));
  if (!canRead) {
    *viaRing = true;
    return Status::ok();
  }
  auto* claim = reinterpret_cast<uint64_t*>(direct_[static_cast<size_t>(src)] + h.c);
  uint64_t open = kClaimOpen;
  if (!__atomic_compare_exchange_n(claim, &open, kClaimRead, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    complete(r, Status(TETHER_ERR_TIMEOUT, strprintf("tether_recv: PE %d withdrew its message of %zu bytes (tag %d): "
                                                     "its blocking send failed (timed out)", src, r.msgBytes,
                                                     r.fromTag)));
    return Status::ok();
  }
  Status s;
  if (r.allowed && viaGet) {  // the same object in this PE's copy of the segment, read from src's
    const auto kind = static_cast<SegKind>(h.how >> 8);
    const char* base = kind == SegKind::Static ? w_.heap().staticLocal() : w_.heap().base(kind);
    s = move(call, Op::Get, r.dst, base + h.b, r.allowed, src, nullptr, 0);
  } else if (r.allowed && how == kViaIpc) {  // on the sibling context, into GPU or host memory
    const char* bytes = reinterpret_cast<const char*>(h.b);  // a self-send: the buffer itself
    if (src != me_) {
      char* mapped = nullptr;
      const Status o = paths_->gpu()->openRegion(static_cast<uint64_t>(src), ipc, &mapped);
      if (!o.isOk()) {
        ipcOk_[from] = 0;
        TETHER_LOG_INFO(LogSys::Core, "PE %d: cannot open PE %d's GPU buffers by CUDA IPC (%s): its rendezvous "
                        "messages from private GPU buffers come through the ring", me_, src, o.message().c_str());
        *viaRing = true;  // claimed: the sender streams it when the CTS comes
        return Status::ok();
      }
      bytes = mapped + ipc.offset;
    }
    s = paths_->gpu()->copy(r.dst, bytes, r.allowed, false).withContext(call);  // blocking: the mapping is free again
  } else if (r.allowed && !cmaRead(static_cast<pid_t>(h.pid), h.b, r.dst, r.allowed)) {
    cmaOk_[from] = 0;
    TETHER_LOG_INFO(LogSys::Core, "PE %d: process_vm_readv from PE %d (pid %llu) refused (%s): its rendezvous "
                    "messages come through the ring", me_, src, static_cast<unsigned long long>(h.pid),
                    std::strerror(errno));
    *viaRing = true;  // claimed: the sender streams it when the CTS comes
    return Status::ok();
  }
  __atomic_store_n(claim, kClaimDone, __ATOMIC_RELEASE);  // the sender's send is complete
  complete(r, s);
  return Status::ok();
}

bool Messaging::cmaRead(pid_t pid, uint64_t from, void* to, size_t n) {
  size_t done = 0;
  while (done < n) {
    iovec local{static_cast<char*>(to) + done, n - done};
    iovec remote{reinterpret_cast<void*>(from + done), n - done};
    const ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

}  // namespace tether
