// Messaging (core/messaging.h): rendezvous -- the CTS, sends by the transport (whole, staged from GPU memory, in
// pieces), and direct reads of a send buffer on this host (process_vm_readv, CUDA IPC, gets).
#include "core/messaging_impl.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/clock.h"
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
  if (h.kind == kRts && (h.how & kTransportPayload) && expectByData(call, r, src))
    o.h.how = kByData | (r.gpu ? kByDataToGpu : 0);
  out_[static_cast<size_t>(src)].push_back(o);
  if (r.allowed == 0) complete(r, Status::ok());
  bool did = false;
  return push(call, src, &did);
}

// Whether this PE's transport to pe can move a buffer of this process by sendData/expectData: host memory where it
// has them, GPU memory where it also carries kCapDataGpu (a CUDA-aware UCX).
bool Messaging::transportTakes(int pe, bool gpu) const {
  void* ctx = nullptr;
  return takes(opsTo(pe, SegKind::Host, &ctx), gpu);
}

bool Messaging::takes(const TransportOps& ops, bool gpu) {
  return ops.expectData && ops.cancelData && ops.sendData && (!gpu || (ops.caps & kCapDataGpu));
}

// A rendezvous message from another host's PE (whose transport can send its buffer: the RTS's kTransportPayload),
// of at least TETHER_MSG_REMOTE_RNDV bytes, into a buffer here that this PE's transport can fill (host memory; GPU
// memory with a CUDA-aware UCX): the transport's own protocol moves it straight into r's buffer (UCX: one active
// message, eager or rendezvous as UCX picks, like its tag messages; rendezvous into GPU memory) instead of DATA slots
// through the ring. r takes a landing word, which the transport sets when the bytes are in (pollLandings completes
// r). False: the ring carries it.
bool Messaging::expectByData(const char* call, Req& r, int src) {
  if (direct_[static_cast<size_t>(src)] || r.allowed == 0 || remoteRndvMin_ == 0 || r.allowed < remoteRndvMin_ ||
      !words_.any())
    return false;
  void* ctx = nullptr;
  const TransportOps& ops = opsTo(src, SegKind::Host, &ctx);
  if (!takes(ops, r.gpu)) return false;
  uint32_t word = kNoWord;
  words_.take(&word);  // (one is free: checked above)
  __atomic_store_n(words_.trigger(word), uint64_t{0}, __ATOMIC_RELAXED);
  const Status s = ops.expectData(ctx, src, r.id, r.dst, r.allowed, words_.trigger(word));
  if (!s.isOk()) {
    words_.release(word);
    TETHER_LOG_INFO(LogSys::Core, "%s: PE %d: the rendezvous message from PE %d comes through the ring (%s)", call,
                    me_, src, s.message().c_str());
    return false;
  }
  r.landing = word;
  landings_.push_back(&r);
  return true;
}

// A send whose receiver expects the bytes by the transport (a CTS by data, for its request recvId; toGpu: into GPU
// memory): sendData started, its completion in r's landing word (r joins landings_). A GPU send buffer is copied into
// host memory first (stageSend: a copy-engine copy on the sibling context into a pinned stage; at most
// TETHER_MSG_REMOTE_INFLIGHT bytes per destination, or one larger message, are under way, so as many are held). False:
// not now, nothing started (the caller queues it in byData_): every stream word is in use, or
// TETHER_MSG_REMOTE_INFLIGHT bytes to dst are under way already. A staging copy or a transport that fails to start
// fails r and sends the receiver a CANCEL (its receive fails too).
bool Messaging::startByData(const char* call, int dst, Req& r, uint64_t recvId, bool toGpu) {
  void* ctx = nullptr;
  const TransportOps& ops = opsTo(dst, SegKind::Host, &ctx);
  if (!ops.sendData) {
    complete(r, Status(TETHER_ERR_INTERNAL, strprintf("%s: PE %d expects data by a transport operation the path "
                                                      "from PE %d lacks", call, dst, me_)));
    return true;
  }
  size_t& inFlight = byDataInFlight_[static_cast<size_t>(dst)];
  if (!words_.any() || (inFlight && inFlight + r.allowed > byDataCap_)) return false;
  r.pieced = false;  // (a persistent request's earlier round may have gone in pieces)
  r.pieceError = Status::ok();
  const void* from = r.src;
  size_t first = r.allowed;  // the first piece's bytes (all of them: one piece)
  if (r.gpu) {
    const Status c = stageSend(call, r, dst, &from, &first);
    if (!c.isOk()) {
      unstage(r, true);
      queueCancel(dst, recvId);  // the receiver's receive fails now, not at its timeout
      complete(r, c);
      return true;
    }
  } else if (pieceHost_ && pieceBytes_ && r.allowed > pieceBytes_) {
    first = pieceBytes_;
  }
  uint32_t word = kNoWord;
  words_.take(&word);  // (one is free: checked above)
  __atomic_store_n(words_.trigger(word), uint64_t{0}, __ATOMIC_RELAXED);
  const Status s = ops.sendData(ctx, dst, recvId, from, first, 0, r.allowed, toGpu, words_.trigger(word));
  if (!s.isOk()) {
    words_.release(word);
    unstage(r, true);
    queueCancel(dst, recvId);
    complete(r, s.withContext(call));
    return true;
  }
  inFlight += r.allowed;
  r.landing = word;
  landings_.push_back(&r);
  if (first < r.allowed) {
    r.pieced = true;
    r.pieceRecv = recvId;
    r.pieceToGpu = toGpu;
    r.pieceOff = 0;
    r.pieceLen = first;
    if (r.gpu) stageNextPiece(r);  // while the first piece is on the wire
  }
  return true;
}

void Messaging::stageNextPiece(Req& r) {
  const size_t off = r.pieceOff + r.pieceLen;
  if (off >= r.allowed || !r.pieceError.isOk()) return;
  const size_t n = std::min(pieceBytes_, r.allowed - off);
  r.pieceError = paths_->gpu()->copy(r.pieceNext, static_cast<const char*>(r.src) + off, n, false)
                     .withContext("tether_send");
}

bool Messaging::nextPiece(Req& r) {
  const size_t off = r.pieceOff + r.pieceLen, n = std::min(pieceBytes_, r.allowed - off);
  Status s = r.pieceError;
  if (s.isOk()) {
    void* ctx = nullptr;
    const TransportOps& ops = opsTo(r.pe, SegKind::Host, &ctx);
    const void* from = static_cast<const char*>(r.src) + off;
    if (r.gpu) {
      std::swap(r.pieceAt, r.pieceNext);
      from = r.pieceAt;
    }
    __atomic_store_n(words_.trigger(r.landing), uint64_t{0}, __ATOMIC_RELAXED);
    s = ops.sendData(ctx, r.pe, r.pieceRecv, from, n, off, r.allowed, r.pieceToGpu, words_.trigger(r.landing));
  }
  if (!s.isOk()) {
    landings_.remove(&r);
    landed(r, true);  // nothing under way (a failed sendData never stores the word)
    queueCancel(r.pe, r.pieceRecv);
    complete(r, s.withContext("tether_send"));
    return false;
  }
  r.pieceOff = off;
  r.pieceLen = n;
  if (r.gpu) stageNextPiece(r);  // while this piece is on the wire
  return true;
}

// r's GPU send buffer, copied into host memory (*from): a pinned stage of hostStages_ (reused, so the copy engine
// writes pinned pages at full speed), else -- TETHER_MSG_PINNED_MAX is 0, the stage would not fit it, or pinned memory
// is refused (logged once) -- host memory of r's own (pageable: 32 MiB GPU to GPU over TCP 0.68 GB/s against 1.7-1.9
// pinned at 4-16 MiB, bench/results/h200/msg_gpu_netns_2026-12-04.txt). About one stage per destination is in use at
// once (TETHER_MSG_REMOTE_INFLIGHT); the budget bounds what stays pinned.
Status Messaging::stageSend(const char* call, Req& r, int dst, const void** from, size_t* first) {
  void* p = nullptr;
  Status pinned = Status::ok();
  if (pinnedMax_) {
    pinned = hostStages_.acquire(*w_.gpu(), r.allowed, "a pinned stage (TETHER_MSG_PINNED_MAX)", &r.hostStage);
    if (pinned.isOk()) p = r.hostStage->p;
  }
  if (!p && pieceBytes_ && r.allowed > pieceBytes_) {
    // In pieces: two pinned stages of a piece, else a pageable buffer of two pieces.
    const char* what = "a pinned stage of a piece (TETHER_MSG_PINNED_MAX)";
    if (pinnedMax_ && hostStages_.acquire(*w_.gpu(), pieceBytes_, what, &r.hostStage).isOk() &&
        hostStages_.acquire(*w_.gpu(), pieceBytes_, what, &r.nextStage).isOk()) {
      r.pieceAt = static_cast<char*>(r.hostStage->p);
      r.pieceNext = static_cast<char*>(r.nextStage->p);
    } else {
      unstage(r, true);
      if (!pinnedRefused_) {
        pinnedRefused_ = true;
        TETHER_LOG_INFO(LogSys::Core, "%s: PE %d: the pieces of a GPU send buffer to PE %d are staged in pageable host "
                        "memory (no two pinned stages of %zu bytes within TETHER_MSG_PINNED_MAX); said once", call,
                        me_, dst, pieceBytes_);
      }
      r.bounce.reset(new (std::nothrow) char[2 * pieceBytes_]);
      if (!r.bounce)
        return Status(TETHER_ERR_NO_MEMORY, strprintf("%s: no host memory to stage two %zu-byte pieces of a GPU send "
                                                      "buffer to PE %d", call, pieceBytes_, dst));
      r.pieceAt = r.bounce.get();
      r.pieceNext = r.bounce.get() + pieceBytes_;
    }
    *from = r.pieceAt;
    *first = pieceBytes_;
    return paths_->gpu()->copy(r.pieceAt, r.src, pieceBytes_, false).withContext(call);
  }
  if (!p && !pinned.isOk() && !pinnedRefused_) {
    pinnedRefused_ = true;
    TETHER_LOG_INFO(LogSys::Core, "%s: PE %d: a GPU send buffer to PE %d is staged in pageable host memory (%s); "
                    "said once", call, me_, dst, pinned.message().c_str());
  }
  if (!p) {
    r.bounce.reset(new (std::nothrow) char[r.allowed]);
    if (!r.bounce)
      return Status(TETHER_ERR_NO_MEMORY, strprintf("%s: no host memory to stage the %zu bytes of a GPU send buffer "
                                                    "to PE %d", call, r.allowed, dst));
    p = r.bounce.get();
  }
  *from = p;
  return paths_->gpu()->copy(p, r.src, r.allowed, false).withContext(call);
}

// r's staged bytes are no longer needed (reusable), or may still be read by the transport (!reusable: a send given
// up after TETHER_TIMEOUT): then they are left alone -- the stage stays busy, never handed out again.
void Messaging::unstage(Req& r, bool reusable) {
  if (reusable) {
    if (r.hostStage) r.hostStage->release();
    if (r.nextStage) r.nextStage->release();
    r.bounce.reset();
  } else {
    (void)r.bounce.release();
  }
  r.hostStage = r.nextStage = nullptr;
  r.pieceAt = r.pieceNext = nullptr;
}

// r, just taken out of landings_, is done with the transport: its word is free again (unless the transport may still
// store it: wordReusable false), and a send's bytes are no longer under way.
void Messaging::landed(Req& r, bool wordReusable) {
  if (wordReusable) words_.release(r.landing);
  unstage(r, wordReusable);
  r.landing = kNoWord;
  if (r.send) byDataInFlight_[static_cast<size_t>(r.pe)] -= r.allowed;
}

// Requests whose bytes the transport has moved complete: receives (the landing word: bytes + 1, or kDataFailed) and
// sends (1, or kDataFailed).
void Messaging::pollLandings(bool* did) {
  for (auto it = landings_.begin(); it != landings_.end();) {
    Req& r = **it;
    const uint64_t v = __atomic_load_n(words_.trigger(r.landing), __ATOMIC_ACQUIRE);
    if (v == 0) {
      ++it;
      continue;
    }
    *did = true;
    if (r.send && r.pieced && v != kDataFailed && r.pieceOff + r.pieceLen < r.allowed) {
      ++it;  // nextPiece takes r out of landings_ only when it fails (list iterators stay valid)
      (void)nextPiece(r);
      continue;
    }
    it = landings_.erase(it);
    landed(r, true);
    if (r.send && r.pieced && v == kDataFailed && r.pieceOff + r.pieceLen < r.allowed)
      queueCancel(r.pe, r.pieceRecv);  // pieces not sent: the receiver would wait for them
    if (r.send) {
      complete(r, v == kDataFailed ? Status(TETHER_ERR_SYSTEM, strprintf("tether_send: the %zu bytes to PE %d (tag %d) "
                                                                         "by the transport failed: its log says why",
                                                                         r.allowed, r.pe, r.tag))
                                   : Status::ok());
      continue;
    }
    r.moved = v == kDataFailed ? 0 : static_cast<size_t>(v - 1);
    complete(r, r.moved == r.allowed
                    ? Status::ok()
                    : Status(TETHER_ERR_SYSTEM, strprintf("tether_recv: %zu of the %zu bytes from PE %d (tag %d) came "
                                                          "by the transport (%s)", r.moved, r.allowed, r.fromPe,
                                                          r.fromTag, v == kDataFailed ? "it failed: its log says why"
                                                                                      : "a short transfer")));
  }
}

// A request dropped while the transport moves its bytes (destroy, a failed round): a receive's expectation withdrawn,
// or (its bytes landing now) waited for, as a send is; bounded by TETHER_TIMEOUT while progressing the transport (after
// which its word is never reused: the transport may still store it).
void Messaging::awaitLanding(Req& r) {
  SpinWait spin(w_.timeout());
  while (!cancelLanding(r)) {
    w_.paths().progress();
    if (!spin.next()) {
      TETHER_LOG_WARN(LogSys::Core, "PE %d: a %s PE %d was dropped while its %zu bytes were still moving", me_,
                      r.send ? "send to" : "receive from", r.send ? r.pe : r.fromPe, r.allowed);
      landings_.remove(&r);
      landed(r, false);
      return;
    }
  }
}

// A request whose bytes the transport moves gives that up: true when its buffer is no longer touched (it left
// landings_, its word is free again), false while the bytes are moving (its landing word follows). A receive's
// expectation is withdrawn; a send cannot be: it is over when its word is set.
bool Messaging::cancelLanding(Req& r) {
  void* ctx = nullptr;
  const TransportOps& ops = opsTo(r.send ? r.pe : r.fromPe, SegKind::Host, &ctx);
  const bool over = r.send ? false : ops.cancelData(ctx, r.fromPe, r.id);
  if (!over && !__atomic_load_n(words_.trigger(r.landing), __ATOMIC_ACQUIRE)) return false;
  if (r.send && r.pieced && r.pieceOff + r.pieceLen < r.allowed)
    queueCancel(r.pe, r.pieceRecv);  // pieces left unsent: the receiver would wait for them
  landings_.remove(&r);
  landed(r, true);
  return true;
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
