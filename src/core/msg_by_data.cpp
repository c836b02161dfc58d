// MsgByData (core/msg_by_data.h): rendezvous bytes moved by the transport's data operations -- expectations,
// sends (whole, staged from GPU memory, in pieces), their completion.
#include "core/msg_by_data.h"

#include <algorithm>
#include <new>
#include <utility>

#include "base/clock.h"
#include "base/log.h"
#include "gpu/gpu.h"
#include "transport/transport.h"

namespace tether {

MsgByData::MsgByData(const Settings& s, StreamWords& words, Owner& owner)
    : s_(s),
      words_(words),
      owner_(owner),
      hostStages_(size_t{64} << 10, GpuStages::Memory::PinnedHost, s.pinnedMax),
      queue_(static_cast<size_t>(s.nPes)),
      inFlight_(static_cast<size_t>(s.nPes)) {}

bool MsgByData::takes(int pe, bool gpu) const {
  void* ctx = nullptr;
  return takes(links_.ops(pe, &ctx), gpu);
}

bool MsgByData::takes(const TransportOps& ops, bool gpu) {
  return ops.expectData && ops.cancelData && ops.sendData && (!gpu || (ops.caps & kCapDataGpu));
}

bool MsgByData::expect(const char* call, Xfer& x, int src, void* dst, size_t bytes, bool gpu, uint64_t token,
                       int tag) {
  if (bytes == 0 || s_.rndvMin == 0 || bytes < s_.rndvMin || !words_.any()) return false;
  void* ctx = nullptr;
  const TransportOps& o = links_.ops(src, &ctx);
  if (!takes(o, gpu)) return false;
  uint32_t word = kNone;
  words_.take(&word);  // (one is free: checked above)
  __atomic_store_n(words_.trigger(word), uint64_t{0}, __ATOMIC_RELAXED);
  const Status s = o.expectData(ctx, src, token, dst, bytes, words_.trigger(word));
  if (!s.isOk()) {
    words_.release(word);
    TETHER_LOG_INFO(LogSys::Core, "%s: PE %d: the rendezvous message from PE %d comes through the ring (%s)", call,
                    s_.me, src, s.message().c_str());
    return false;
  }
  x.send = false;
  x.pe = src;
  x.tag = tag;
  x.token = token;
  x.bytes = bytes;
  x.moved = 0;
  x.landing = word;
  landings_.push_back(&x);
  return true;
}

void MsgByData::send(const char* call, Xfer& x, int dst, const void* src, size_t bytes, bool gpu, int tag,
                     uint64_t token, bool toGpu) {
  x.send = true;
  x.pe = dst;
  x.src = src;
  x.bytes = bytes;
  x.gpu = gpu;
  x.tag = tag;
  x.token = token;
  x.toGpu = toGpu;
  auto& q = queue_[static_cast<size_t>(dst)];
  if (q.empty() && start(call, x)) return;
  q.push_back(&x);
}

void MsgByData::startQueued(const char* call, bool* did) {
  for (auto& q : queue_) {
    while (!q.empty() && start(call, *q.front())) {
      q.pop_front();
      *did = true;
    }
  }
}

bool MsgByData::unqueue(Xfer& x) {
  if (!x.send || x.pe < 0 || static_cast<size_t>(x.pe) >= queue_.size()) return false;
  auto& q = queue_[static_cast<size_t>(x.pe)];
  const auto it = std::find(q.begin(), q.end(), &x);
  if (it == q.end()) return false;
  q.erase(it);
  return true;
}

// A send whose receiver expects its bytes: sendData started, its completion in x's landing word (x joins landings_).
// False: not now, nothing started -- every stream word is in use, or TETHER_MSG_REMOTE_INFLIGHT bytes to the
// destination are under way already. A staging copy or a transport that fails to start ends x (and refuses the
// receiver).
bool MsgByData::start(const char* call, Xfer& x) {
  void* ctx = nullptr;
  const TransportOps& o = links_.ops(x.pe, &ctx);
  if (!o.sendData) {
    owner_.ended(x, Status(TETHER_ERR_INTERNAL, strprintf("%s: PE %d expects data by a transport operation the path "
                                                          "from PE %d lacks", call, x.pe, s_.me)));
    return true;
  }
  size_t& inFlight = inFlight_[static_cast<size_t>(x.pe)];
  if (!words_.any() || (inFlight && inFlight + x.bytes > s_.cap)) return false;
  x.pieced = false;  // (a persistent request's earlier round may have gone in pieces)
  x.pieceError = Status::ok();
  const void* from = x.src;
  size_t first = x.bytes;  // the first piece's bytes (all of them: one piece)
  if (x.gpu) {
    const Status c = stage(call, x, &from, &first);
    if (!c.isOk()) {
      unstage(x, true);
      owner_.refuse(x.pe, x.token);  // the receiver's receive fails now, not at its timeout
      owner_.ended(x, c);
      return true;
    }
  } else if (s_.pieceHost && s_.pieceBytes && x.bytes > s_.pieceBytes) {
    first = s_.pieceBytes;
  }
  uint32_t word = kNone;
  words_.take(&word);  // (one is free: checked above)
  __atomic_store_n(words_.trigger(word), uint64_t{0}, __ATOMIC_RELAXED);
  const Status s = o.sendData(ctx, x.pe, x.token, from, first, 0, x.bytes, x.toGpu, words_.trigger(word));
  if (!s.isOk()) {
    words_.release(word);
    unstage(x, true);
    owner_.refuse(x.pe, x.token);
    owner_.ended(x, s.withContext(call));
    return true;
  }
  inFlight += x.bytes;
  x.landing = word;
  landings_.push_back(&x);
  if (first < x.bytes) {
    x.pieced = true;
    x.pieceOff = 0;
    x.pieceLen = first;
    if (x.gpu) stageNextPiece(x);  // while the first piece is on the wire
  }
  return true;
}

void MsgByData::stageNextPiece(Xfer& x) {
  const size_t off = x.pieceOff + x.pieceLen;
  if (off >= x.bytes || !x.pieceError.isOk()) return;
  const size_t n = std::min(s_.pieceBytes, x.bytes - off);
  x.pieceError = links_.copier->copy(x.pieceNext, static_cast<const char*>(x.src) + off, n, false)
                     .withContext("tether_send");
}

bool MsgByData::nextPiece(Xfer& x) {
  const size_t off = x.pieceOff + x.pieceLen, n = std::min(s_.pieceBytes, x.bytes - off);
  Status s = x.pieceError;
  if (s.isOk()) {
    void* ctx = nullptr;
    const TransportOps& o = links_.ops(x.pe, &ctx);
    const void* from = static_cast<const char*>(x.src) + off;
    if (x.gpu) {
      std::swap(x.pieceAt, x.pieceNext);
      from = x.pieceAt;
    }
    __atomic_store_n(words_.trigger(x.landing), uint64_t{0}, __ATOMIC_RELAXED);
    s = o.sendData(ctx, x.pe, x.token, from, n, off, x.bytes, x.toGpu, words_.trigger(x.landing));
  }
  if (!s.isOk()) {
    landings_.remove(&x);
    landed(x, true);  // nothing under way (a failed sendData never stores the word)
    owner_.refuse(x.pe, x.token);
    owner_.ended(x, s.withContext("tether_send"));
    return false;
  }
  x.pieceOff = off;
  x.pieceLen = n;
  if (x.gpu) stageNextPiece(x);  // while this piece is on the wire
  return true;
}

// x's GPU send buffer, copied into host memory (*from): a pinned stage of hostStages_ (reused, so the copy engine
// writes pinned pages at full speed), else -- TETHER_MSG_PINNED_MAX is 0, the stage would not fit it, or pinned memory
// is refused (logged once) -- host memory of x's own (pageable: 32 MiB GPU to GPU over TCP 0.68 GB/s against 1.7-1.9
// pinned at 4-16 MiB, bench/results/h200/msg_gpu_netns_2026-12-04.txt). About one stage per destination is in use at
// once (TETHER_MSG_REMOTE_INFLIGHT); the budget bounds what stays pinned.
Status MsgByData::stage(const char* call, Xfer& x, const void** from, size_t* first) {
  void* p = nullptr;
  Status pinned = Status::ok();
  if (s_.pinnedMax) {
    pinned = hostStages_.acquire(*links_.gpu, x.bytes, "a pinned stage (TETHER_MSG_PINNED_MAX)", &x.hostStage);
    if (pinned.isOk()) p = x.hostStage->p;
  }
  if (!p && s_.pieceBytes && x.bytes > s_.pieceBytes) {
    // In pieces: two pinned stages of a piece, else a pageable buffer of two pieces.
    const char* what = "a pinned stage of a piece (TETHER_MSG_PINNED_MAX)";
    if (s_.pinnedMax && hostStages_.acquire(*links_.gpu, s_.pieceBytes, what, &x.hostStage).isOk() &&
        hostStages_.acquire(*links_.gpu, s_.pieceBytes, what, &x.nextStage).isOk()) {
      x.pieceAt = static_cast<char*>(x.hostStage->p);
      x.pieceNext = static_cast<char*>(x.nextStage->p);
    } else {
      unstage(x, true);
      if (!pinnedRefused_) {
        pinnedRefused_ = true;
        TETHER_LOG_INFO(LogSys::Core, "%s: PE %d: the pieces of a GPU send buffer to PE %d are staged in pageable host "
                        "memory (no two pinned stages of %zu bytes within TETHER_MSG_PINNED_MAX); said once", call,
                        s_.me, x.pe, s_.pieceBytes);
      }
      x.bounce.reset(new (std::nothrow) char[2 * s_.pieceBytes]);
      if (!x.bounce)
        return Status(TETHER_ERR_NO_MEMORY, strprintf("%s: no host memory to stage two %zu-byte pieces of a GPU send "
                                                      "buffer to PE %d", call, s_.pieceBytes, x.pe));
      x.pieceAt = x.bounce.get();
      x.pieceNext = x.bounce.get() + s_.pieceBytes;
    }
    *from = x.pieceAt;
    *first = s_.pieceBytes;
    return links_.copier->copy(x.pieceAt, x.src, s_.pieceBytes, false).withContext(call);
  }
  if (!p && !pinned.isOk() && !pinnedRefused_) {
    pinnedRefused_ = true;
    TETHER_LOG_INFO(LogSys::Core, "%s: PE %d: a GPU send buffer to PE %d is staged in pageable host memory (%s); "
                    "said once", call, s_.me, x.pe, pinned.message().c_str());
  }
  if (!p) {
    x.bounce.reset(new (std::nothrow) char[x.bytes]);
    if (!x.bounce)
      return Status(TETHER_ERR_NO_MEMORY, strprintf("%s: no host memory to stage the %zu bytes of a GPU send buffer "
                                                    "to PE %d", call, x.bytes, x.pe));
    p = x.bounce.get();
  }
  *from = p;
  return links_.copier->copy(p, x.src, x.bytes, false).withContext(call);
}

// x's staged bytes are no longer needed (reusable), or may still be read by the transport (!reusable: a send given
// up after TETHER_TIMEOUT): then they are left alone -- the stage stays busy, never handed out again.
void MsgByData::unstage(Xfer& x, bool reusable) {
  if (reusable) {
    if (x.hostStage) x.hostStage->release();
    if (x.nextStage) x.nextStage->release();
    x.bounce.reset();
  } else {
    (void)x.bounce.release();
  }
  x.hostStage = x.nextStage = nullptr;
  x.pieceAt = x.pieceNext = nullptr;
}

void MsgByData::landed(Xfer& x, bool wordReusable) {
  if (wordReusable) words_.release(x.landing);
  unstage(x, wordReusable);
  x.landing = kNone;
  if (x.send) inFlight_[static_cast<size_t>(x.pe)] -= x.bytes;
}

// Receives' words: bytes + 1, or kDataFailed; sends': 1, or kDataFailed.
void MsgByData::poll(bool* did) {
  for (auto it = landings_.begin(); it != landings_.end();) {
    Xfer& x = **it;
    const uint64_t v = __atomic_load_n(words_.trigger(x.landing), __ATOMIC_ACQUIRE);
    if (v == 0) {
      ++it;
      continue;
    }
    *did = true;
    const bool piecesLeft = x.send && x.pieced && x.pieceOff + x.pieceLen < x.bytes;
    if (piecesLeft && v != kDataFailed) {
      ++it;  // nextPiece takes x out of landings_ only when it fails (list iterators stay valid)
      (void)nextPiece(x);
      continue;
    }
    it = landings_.erase(it);
    landed(x, true);
    if (piecesLeft) owner_.refuse(x.pe, x.token);  // pieces not sent: the receiver would wait for them
    if (x.send) {
      owner_.ended(x, v == kDataFailed ? Status(TETHER_ERR_SYSTEM, strprintf("tether_send: the %zu bytes to PE %d (tag "
                                                                             "%d) by the transport failed: its log "
                                                                             "says why", x.bytes, x.pe, x.tag))
                                       : Status::ok());
      continue;
    }
    x.moved = v == kDataFailed ? 0 : static_cast<size_t>(v - 1);
    owner_.ended(x, x.moved == x.bytes
                        ? Status::ok()
                        : Status(TETHER_ERR_SYSTEM, strprintf("tether_recv: %zu of the %zu bytes from PE %d (tag %d) "
                                                              "came by the transport (%s)", x.moved, x.bytes, x.pe,
                                                              x.tag, v == kDataFailed ? "it failed: its log says why"
                                                                                      : "a short transfer")));
  }
}

void MsgByData::drop(Xfer& x) {
  SpinWait spin(s_.timeout);
  while (!cancel(x)) {
    if (links_.progress) links_.progress();
    if (!spin.next()) {
      TETHER_LOG_WARN(LogSys::Core, "PE %d: a %s PE %d was dropped while its %zu bytes were still moving", s_.me,
                      x.send ? "send to" : "receive from", x.pe, x.bytes);
      landings_.remove(&x);
      landed(x, false);
      return;
    }
  }
}

bool MsgByData::cancel(Xfer& x) {
  void* ctx = nullptr;
  const TransportOps& o = links_.ops(x.pe, &ctx);
  const bool over = x.send ? false : o.cancelData(ctx, x.pe, x.token);
  if (!over && !__atomic_load_n(words_.trigger(x.landing), __ATOMIC_ACQUIRE)) return false;
  if (x.send && x.pieced && x.pieceOff + x.pieceLen < x.bytes)
    owner_.refuse(x.pe, x.token);  // pieces left unsent: the receiver would wait for them
  landings_.remove(&x);
  landed(x, true);
  return true;
}

bool MsgByData::withdraw(Xfer& x) {
  if (!cancel(x)) return false;
  if (withdrawn_.size() < kWithdrawnMax) withdrawn_.insert(x.token);
  return true;
}

bool MsgByData::withdrawn(uint64_t token) { return withdrawn_.erase(token) > 0; }

}  // namespace tether
