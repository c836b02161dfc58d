// Messaging (core/messaging.h): progress passes -- draining the inboxes and handling their slots, acks and credit,
// writing slot messages.
#include "core/messaging_impl.h"

#include <algorithm>
#include <cstring>

#include "base/clock.h"
#include "core/op.h"
#include "core/world.h"
#include "gpu/gpu.h"

namespace tether {

// ---- progress ----------------------------------------------------------------------------------------------------

Status Messaging::progress(const char* call, bool* did) {
  TETHER_TRY(thread_.error());  // the progress thread failed (a lost peer, ...): every later call says so
  if (w_.paths().progress()) *did = true;  // network providers move what arrived
  if (!watch_.empty()) TETHER_TRY(scanStarts(call, did));
  if (!armed_.empty()) fireTriggers(did);
  if (direct_.any()) direct_.poll(did);
  if (byData_.any()) byData_.poll(did);
  for (int k = 0; k < n_; ++k) TETHER_TRY(drain(call, (drainStart_ + k) % n_, did));
  drainStart_ = (drainStart_ + 1) % n_;
  return pushAll(call, did);
}

Status Messaging::pushAll(const char* call, bool* did) {
  byData_.startQueued(call, did);
  for (int d = 0; d < n_; ++d) {
    if (!out_[static_cast<size_t>(d)].empty()) TETHER_TRY(push(call, d, did));
  }
  return Status::ok();
}

Status Messaging::drain(const char* call, int src, bool* did) {
  for (;;) {
    const uint64_t next = credit_.next(src);
    const char* s = slot(src, next);
    const uint64_t seq = __atomic_load_n(reinterpret_cast<const uint64_t*>(s), __ATOMIC_ACQUIRE);
    if (seq != next + 1) break;
    SlotHead h;
    std::memcpy(&h, s, sizeof h);
    credit_.hear(src, h.ack);  // the count src carries of this PE's slots it consumed
    const uint64_t span = (h.kind == kEager || h.kind == kData || h.kind == kSkip) && h.c > 1 ? h.c : 1;
    if (span > slots_ - next % slots_)
      TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: slot %llu from PE %d says it takes %llu slots; %llu are left before the "
                  "ring's end", call, static_cast<unsigned long long>(next), src, static_cast<unsigned long long>(span),
                  static_cast<unsigned long long>(slots_ - next % slots_));
    bool consumed = false;
    TETHER_TRY(handle(call, src, h, s + sizeof(SlotHead), &consumed));
    if (!consumed) break;  // the pool is full: this source waits for a receive
    // A spanning message's payload overwrote the seq words of the slots after its first: clear them before the
    // credit for them can reach the sender (below, or in the next slot written back), so no payload bytes can ever
    // read as the seq of a later lap.
    for (uint64_t k = 1; k < span; ++k)
      __atomic_store_n(reinterpret_cast<uint64_t*>(slot(src, next + k)), uint64_t{0}, __ATOMIC_RELAXED);
    credit_.consumed(src, span);
    *did = true;
    if (credit_.mustPublish(src)) TETHER_TRY(publishAck(call, src));
    // A direct rendezvous read (an RTS_DIRECT), or a send by the transport (a CTS by data), takes a while: send what
    // waits for credit before the next one, so the peers get this PE's own RTS while it reads theirs (else, both
    // directions at once, each side's RTS wait for its reads to end, the other side runs dry, and the two directions
    // alternate: bibw at unidirectional rate).
    if (h.kind == kRtsDirect || (h.kind == kCts && (h.how & kByData))) TETHER_TRY(pushAll(call, did));
  }
  return Status::ok();
}

Status Messaging::publishAck(const char* call, int src) {
  uint64_t v = 0;
  const uint64_t delta = credit_.publish(src, &v);
  if (char* d = mapped_[static_cast<size_t>(src)]) {
    __atomic_store_n(reinterpret_cast<uint64_t*>(d + (reinterpret_cast<char*>(acked_ + me_) - region_)), v,
                     __ATOMIC_RELEASE);
    w_.wakeups().wake(src);
    return Status::ok();
  }
  // Another host: ADD what was consumed since the last publish, posted (no wait for the owner's reply: a round trip
  // here stalled the drain for every half ring). ADDs commute, so acks applied out of order still sum to v.
  return postSignal(call, src, acked_ + me_, delta, TETHER_SIGNAL_ADD);
}

Status Messaging::postSignal(const char* call, int pe, void* at, uint64_t value, tether_signal_op_t op) {
  SymRef ref;
  TETHER_TRY(wordRef(call, pe, at, &ref));
  return signalWord(w_, pe, ref, value, op, /*post=*/true, paths_.get()).withContext(call);
}

const TransportOps& Messaging::opsTo(int pe, SegKind kind, void** ctx) const {
  const SegPath& p = w_.path(pe, kind);
  *ctx = paths_ ? paths_->ctx(p) : p.ctx;
  return *p.ops;
}

Status Messaging::handle(const char* call, int src, const SlotHead& h, const char* payload, bool* consumed) {
  *consumed = true;
  switch (h.kind) {
    case kEager:
    case kRts:
    case kRtsDirect: {
      Req* r = posted_.take(src, h.tag);
      GpuIpcRef ipc{};  // an RTS_DIRECT by CUDA IPC from another PE names the region in its payload
      if (h.kind == kRtsDirect && MsgDirect::Ticket{h.how}.byIpc() && src != me_)
        std::memcpy(&ipc, payload, sizeof ipc);
      if (!r) {  // unexpected: an EAGER's bytes are copied out, so its slot frees at once (the ring never stalls)
        const bool eager = h.kind == kEager;
        auto& u = unexpected_.add(src, h.tag, eager, static_cast<size_t>(h.bytes), payload);
        if (!eager) u.meta = Rts{h, ipc};
        return Status::ok();
      }
      if (h.kind != kEager) return matchRts(call, *r, src, h, ipc);
      r->fromPe = src;
      r->fromTag = h.tag;
      r->msgBytes = h.bytes;
      complete(*r, deliver(call, *r, 0, payload, std::min<size_t>(h.bytes, r->cap)));
      return Status::ok();
    }
    case kCts: {
      Req* rq = reqs_.find(h.a);
      if (!rq || !rq->send)
        TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: PE %d answered send request %llu, which PE %d does not have", call, src,
                    static_cast<unsigned long long>(h.a), me_);
      Req& r = *rq;
      r.allowed = h.bytes;
      if (r.abandoned) {  // the blocking send returned: tell the receiver there is nothing coming
        if (r.allowed) queueCancel(src, h.b);
        forget(r);
        return Status::ok();
      }
      if (r.allowed == 0) {
        complete(r, Status::ok());
        return Status::ok();
      }
      Out o{};
      o.h.kind = kData;
      o.h.a = h.b;
      o.req = &r;
      if (h.how & kByData) {  // the receiver expects the bytes by the transport's protocol (MsgByData)
        byData_.send(call, r.xfer, src, r.src, r.allowed, r.gpu, r.tag, h.b, h.how & kByDataToGpu);
        return Status::ok();
      }
      out_[static_cast<size_t>(src)].push_back(o);
      return Status::ok();
    }
    case kCancel: {
      Req* rq = reqs_.find(h.a);
      if (!rq && byData_.withdrawn(h.a)) return Status::ok();  // a receive withdrawn after its CTS by data
      if (!rq || rq->send)
        TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: PE %d withdrew data for receive request %llu, which PE %d does not have",
                    call, src, static_cast<unsigned long long>(h.a), me_);
      Req& r = *rq;
      if (r.xfer.busy()) byData_.cancel(r.xfer);  // nothing comes (the sender never sends it)
      complete(r, Status(TETHER_ERR_TIMEOUT, strprintf("tether_recv: PE %d withdrew its message of %zu bytes (tag %d) "
                                                       "after %zu bytes: its send failed (a blocking send that timed "
                                                       "out, or bytes its transport could not start: see PE %d's log)",
                                                       src, r.msgBytes, r.fromTag, r.moved, src)));
      return Status::ok();
    }
    case kSkip:  // the sender's next message did not fit before the ring's end
      return Status::ok();
    case kData: {
      Req* rq = reqs_.find(h.a);
      if (!rq || rq->send)
        TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: PE %d sent data for receive request %llu, which PE %d does not have",
                    call, src, static_cast<unsigned long long>(h.a), me_);
      Req& r = *rq;
      Status s = deliver(call, r, h.b, payload, h.bytes);
      r.moved += h.bytes;
      if (!s.isOk() || r.moved >= r.allowed) complete(r, s);
      return Status::ok();
    }
    default:
      TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: slot %llu from PE %d has unknown kind %u", call,
                  static_cast<unsigned long long>(credit_.next(src)), src, h.kind);
  }
}

Status Messaging::deliver(const char* call, Req& r, size_t off, const void* symSrc, size_t n) {
  if (n == 0 || r.abandoned) return Status::ok();  // an abandoned receive's buffer belongs to its caller again
  char* to = static_cast<char*>(r.dst) + off;
  if (!r.gpu) {
    std::memcpy(to, symSrc, n);
    return Status::ok();
  }
  return move(call, Op::Get, to, symSrc, n, me_, nullptr, 0);  // from this PE's region into GPU memory
}

// Bytes of an unexpected message kept in this process's own memory (not symmetric) into the start of r's buffer.
Status Messaging::deliverHost(const char* call, Req& r, const void* src, size_t n) {
  if (n == 0 || r.abandoned) return Status::ok();
  if (!r.gpu) {
    std::memcpy(r.dst, src, n);
    return Status::ok();
  }
  return paths_->gpu()->copy(r.dst, src, n, false).withContext(call);
}

void Messaging::queueCancel(int dst, uint64_t recvId) {
  Out o{};
  o.h.kind = kCancel;
  o.h.a = recvId;
  out_[static_cast<size_t>(dst)].push_back(o);
}

void Messaging::forget(Req& r) {
  releaseWords(r);
  posted_.unlink(r);
  reqs_.erase(r.id);  // (last: r's storage is reset)
}

// A blocking send or receive whose wait failed: the caller gets its buffer back and has no request to wait for, so the
// request is withdrawn. Not started yet: dropped. A receive already matched to a rendezvous: its data is discarded as
// it arrives. A send whose request-to-send went out: the receiver is told (CANCEL) instead of getting data; one whose
// RTS_DIRECT went out takes its claim word (the receiver's later claim fails) -- unless the receiver claimed it
// first and is reading the buffer: then it returns true and the caller must wait for the request to complete.
bool Messaging::withdraw(uint64_t id) {
  Req* rq = reqs_.find(id);
  if (!rq) return false;
  Req& r = *rq;
  if (r.done) {
    forget(r);
    return false;
  }
  auto& q = out_[static_cast<size_t>(r.pe)];
  if (!r.send) {
    if (r.inPosted) {
      forget(r);
    } else if (r.xfer.busy()) {
      if (!byData_.withdraw(r.xfer)) return true;  // the bytes are landing in the buffer now: wait for them
      // Nothing more reaches the buffer (the transport drops the bytes if they come); the sender may still answer
      // with a CANCEL, which byData_ recognises.
      forget(r);
    } else {
      r.abandoned = true;
    }
    return false;
  }
  if (r.xfer.busy()) return true;  // the transport is reading the buffer (MsgByData): wait for it
  if (byData_.unqueue(r.xfer)) {  // by data, not started: the receiver is told instead
    queueCancel(r.pe, r.xfer.token);
    forget(r);
    return false;
  }
  for (auto o = q.begin(); o != q.end(); ++o) {
    if (o->req != &r) continue;
    if (o->h.kind == kEager || o->h.kind == kRts || o->h.kind == kRtsDirect) {  // never written: nobody knows of it
      q.erase(o);
      forget(r);
      return false;
    }
    const uint64_t recvId = o->h.a;  // DATA under way: the rest is withdrawn
    q.erase(o);
    queueCancel(r.pe, recvId);
    forget(r);
    return false;
  }
  if (r.direct.offered() && r.allowed == 0) {  // RTS_DIRECT out, no CTS yet
    if (!direct_.withdraw(r.direct)) return true;  // the receiver is reading: its kDone (or a CTS) follows
    forget(r);
    return false;
  }
  r.abandoned = true;  // its request-to-send is out, no answer yet: the CTS handler withdraws it
  return false;
}

// Writes what credit allows from dst's queue.
Status Messaging::push(const char* call, int dst, bool* did) {
  auto& q = out_[static_cast<size_t>(dst)];
  while (!q.empty() && credit_.free(dst) > 0) {
    Out& o = q.front();
    Req* r = o.req;
    if (o.h.kind == kEager || o.h.kind == kData) {  // they may span slots: free ones, without wrapping
      const bool data = o.h.kind == kData;  // the next fragment of a rendezvous send through the ring
      const size_t n = data ? std::min(fragTo_[static_cast<size_t>(dst)], r->allowed - r->moved) : r->cap;
      const uint64_t span = spanOf(n), at = credit_.sent(dst) % slots_, free = credit_.free(dst);
      if (at + span > slots_) {  // the ring ends first: one SKIP takes its rest, the message then starts at slot 0
        if (free < slots_ - at) break;
        SlotHead skip{};
        skip.kind = kSkip;
        TETHER_TRY(writeSlot(call, dst, skip, nullptr, 0, false, slots_ - at));
        *did = true;
        continue;
      }
      if (free < span) break;
      SlotHead h = o.h;
      const char* from = static_cast<const char*>(r->src);
      if (data) {
        h.bytes = n;
        h.b = r->moved;
        from += r->moved;
      }
      TETHER_TRY(writeSlot(call, dst, h, from, n, r->gpu, span));
      *did = true;
      if (data && (r->moved += n) < r->allowed) continue;
      complete(*r, Status::ok());
      q.pop_front();
      continue;
    }
    *did = true;
    switch (o.h.kind) {
      case kRtsDirect:  // by CUDA IPC to another PE: the region's GpuIpcRef as the payload
        TETHER_TRY(writeSlot(call, dst, o.h, r->direct.ipc.get(), r->direct.ipc ? sizeof(GpuIpcRef) : 0, false));
        q.pop_front();
        break;
      case kRts:
      case kCts:
      case kCancel:
        TETHER_TRY(writeSlot(call, dst, o.h, nullptr, 0, false));
        q.pop_front();
        break;
      default:
        q.pop_front();
    }
  }
  return Status::ok();
}

// One blocking put, get (from this PE's own region) or put-with-signal (SET) through the World's paths, GPU work on the
// sibling context (core/sibling_paths.h): it must move while a kernel or a stream waits for this room.
Status Messaging::move(const char* call, Op::Kind kind, void* dest, const void* src, size_t n, int pe, uint64_t* sig,
                       uint64_t value) {
  Op op = rmaOp(kind, dest, src, n, pe);
  op.sig = sig;
  op.value = value;
  op.sigOp = TETHER_SIGNAL_SET;
  SymRef ref{SegKind::Host, 0}, sigRef{SegKind::Host, 0};
  TETHER_TRY(checkOp(w_, call, op, &ref, sig ? &sigRef : nullptr));
  return runOp(w_, op, ref, sig ? sigRef : ref, false, nullptr, paths_.get());
}

Status Messaging::wordRef(const char* call, int pe, void* at, SymRef* ref) {
  Op o = rmaOp(Op::Signal, nullptr, nullptr, 0, pe);
  o.sig = static_cast<uint64_t*>(at);
  return checkOp(w_, call, o, nullptr, ref);
}

Status Messaging::writeSlot(const char* call, int dst, const SlotHead& head, const void* payload, size_t n,
                            bool payloadGpu, uint64_t span) {
  SlotHead h = head;
  if (span > 1) h.c = span;
  h.ack = credit_.carry(dst);  // of dst's slots to this PE, the count consumed: carried back (its credit)
  const uint64_t sent = credit_.sent(dst);
  char* remote = slot(me_, sent);  // my ring at dst: the same symmetric address on every PE
  auto* sig = reinterpret_cast<uint64_t*>(remote);
  const size_t body = sizeof(SlotHead) - sizeof(uint64_t);  // the head after seq
  const bool cpuPayload = !(payloadGpu && n);
  char* direct = mapped_[static_cast<size_t>(dst)];
  void* ctx = nullptr;
  const TransportOps& ops = opsTo(dst, SegKind::Host, &ctx);
  if (direct && cpuPayload) {  // a mapped peer and a CPU payload: stores, then seq with release order
    direct += remote - region_;
    std::memcpy(direct + sizeof(uint64_t), reinterpret_cast<const char*>(&h) + sizeof(uint64_t), body);
    if (n) std::memcpy(direct + sizeof(SlotHead), payload, n);
    __atomic_store_n(reinterpret_cast<uint64_t*>(direct), sent + 1, __ATOMIC_RELEASE);
    w_.wakeups().wake(dst);
  } else if (!direct && ops.putFlagged && sizeof(SlotHead) + n <= kFlaggedPutMax) {
    // Another host: the whole slot as one flagged put (one message, seq visible last), built in staging_; a GPU
    // payload is copied there first by the copy engine (sibling context: never behind the legacy stream), since a
    // network transport moves host bytes much faster than it stages GPU memory itself (UCX over TCP, measured in
    // docs/msg.md).
    const uint64_t seq = sent + 1;
    std::memcpy(staging_.data(), &h, sizeof h);
    std::memcpy(staging_.data(), &seq, sizeof seq);
    if (!cpuPayload) TETHER_TRY(paths_->gpu()->copy(staging_.data() + sizeof h, payload, n, false).withContext(call));
    else if (n) std::memcpy(staging_.data() + sizeof h, payload, n);
    SymRef ref;
    TETHER_TRY(wordRef(call, dst, remote, &ref));
    TETHER_TRY(ops.putFlagged(ctx, dst, w_.remote(dst, ref), staging_.data(), sizeof(SlotHead) + n).withContext(call));
  } else if (!cpuPayload) {
    TETHER_TRY(move(call, Op::Put, remote + sizeof(uint64_t), reinterpret_cast<const char*>(&h) + sizeof(uint64_t),
                    body, dst, nullptr, 0));
    TETHER_TRY(move(call, Op::PutSignal, remote + sizeof(SlotHead), payload, n, dst, sig, sent + 1));
  } else if (n > kStageMax) {  // a large host payload straight into the slot (no staging copy), then head + seq
    TETHER_TRY(move(call, Op::Put, remote + sizeof(SlotHead), payload, n, dst, nullptr, 0));
    TETHER_TRY(move(call, Op::PutSignal, remote + sizeof(uint64_t), reinterpret_cast<const char*>(&h) + sizeof(uint64_t),
                    body, dst, sig, sent + 1));
  } else {
    std::memcpy(staging_.data(), &h, sizeof h);
    if (n) std::memcpy(staging_.data() + sizeof h, payload, n);
    TETHER_TRY(move(call, Op::PutSignal, remote + sizeof(uint64_t), staging_.data() + sizeof(uint64_t), body + n, dst,
                    sig, sent + 1));
  }
  credit_.wrote(dst, span);
  return Status::ok();
}

}  // namespace tether
