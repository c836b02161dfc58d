// Messaging (core/messaging.h): rendezvous -- the receiver's answer to an RTS: a direct read of the send buffer on
// this host (core/msg_direct.h), else a CTS (by data where core/msg_by_data.h moves the bytes).
#include "core/messaging_impl.h"

#include <algorithm>
#include <utility>

#include "core/world.h"

namespace tether {

// A receive r matched an RTS: ask for min(message, buffer) bytes (a CTS through this PE's ring to src).
Status Messaging::matchRts(const char* call, Req& r, int src, const SlotHead& h, const GpuIpcRef& ipc) {
  r.fromPe = src;
  r.fromTag = h.tag;
  r.msgBytes = h.bytes;
  r.allowed = std::min<size_t>(h.bytes, r.cap);
  if (h.kind == kRtsDirect) {  // read the send buffer here if we can (core/msg_direct.h), else a CTS
    Status read;
    switch (direct_.read(call, src, MsgDirect::Ticket{h.how, h.b, h.c, h.pid}, ipc, r.dst, r.gpu, r.allowed, &read)) {
      case MsgDirect::Outcome::Read:
        w_.wakeups().wake(src);  // its send is complete (the claim word MsgDirect::read stored)
        complete(r, read);
        return Status::ok();
      case MsgDirect::Outcome::Withdrawn:
        complete(r, Status(TETHER_ERR_TIMEOUT, strprintf("tether_recv: PE %d withdrew its message of %zu bytes (tag "
                                                         "%d): its blocking send failed (timed out)", src, r.msgBytes,
                                                         r.fromTag)));
        return Status::ok();
      case MsgDirect::Outcome::Ring:
        break;
    }
  }
  Out o{};
  o.h.kind = kCts;
  o.h.bytes = r.allowed;
  o.h.a = h.a;
  o.h.b = r.id;
  // From another host's PE whose transport can send the buffer: its bytes straight into r's buffer if the transport
  // can write it (core/msg_by_data.h), else DATA slots through the ring.
  if (h.kind == kRts && (h.how & kTransportPayload) && !mapped_[static_cast<size_t>(src)] &&
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

}  // namespace tether
