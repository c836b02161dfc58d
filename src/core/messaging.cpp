// Two-sided messaging over the one-sided verbs: protocol and contracts in core/messaging.h; this file: set-up,
// posting, matching receives, completion (the other parts: core/messaging_impl.h).
#include "core/messaging_impl.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "core/collectives.h"
#include "core/sibling_paths.h"
#include "core/stream.h"
#include "core/stream_ops.h"
#include "core/world.h"
#include "gpu/gpu.h"

namespace tether {

// ---- set-up ------------------------------------------------------------------------------------------------------

Messaging::Messaging(World& w, size_t eager, size_t slots, size_t unexpected)
    : w_(w),
      eager_(eager),
      slots_(slots),
      payload_(roundUp(std::max<size_t>(eager, sizeof(GpuIpcRef)), 64)),  // (an RTS_DIRECT by IPC carries one)
      slotBytes_(sizeof(SlotHead) + payload_),
      poolBytes_(roundUp(unexpected, 64)),
      n_(w.nPes()),
      me_(w.myPe()),
      credit_(n_, slots),
      out_(static_cast<size_t>(n_)),
      remoteEager_(spanEagerMax(w.config().size("TETHER_MSG_REMOTE_EAGER"))),
      staging_(std::max(slotBytes_, sizeof(SlotHead) + remoteEager_)) {
  static_assert(sizeof(SlotHead) == 64, "slot head is one cache line");
  armedTo_.assign(static_cast<size_t>(n_), 0);
  blocked_.assign(static_cast<size_t>(n_), 0);
}

MsgByData::Settings Messaging::byDataSettings(const World& w) {
  MsgByData::Settings s;
  s.me = w.myPe();
  s.nPes = w.nPes();
  s.timeout = w.timeout();
  s.rndvMin = w.config().size("TETHER_MSG_REMOTE_RNDV");
  s.cap = w.config().size("TETHER_MSG_REMOTE_INFLIGHT");
  s.pinnedMax = w.config().size("TETHER_MSG_PINNED_MAX");
  s.pieceBytes = w.config().size("TETHER_MSG_REMOTE_PIECE");
  s.pieceHost = w.config().flag("TETHER_MSG_REMOTE_PIECE_HOST");
  return s;
}

MsgDirect::Settings Messaging::directSettings(const World& w) {
  MsgDirect::Settings s;
  s.me = w.myPe();
  s.nPes = w.nPes();
  s.on = w.config().flag("TETHER_MSG_DIRECT");
  s.ipc = s.on && w.config().flag("TETHER_MSG_IPC");
  return s;
}

Status Messaging::create(World& w, const char* call, const tether_msg_attr_t* attr, std::unique_ptr<Messaging>* out) {
  uint64_t v[3] = {w.config().size("TETHER_MSG_EAGER"), static_cast<uint64_t>(w.config().integer("TETHER_MSG_SLOTS")),
                   w.config().size("TETHER_MSG_UNEXPECTED")};
  if (attr) {
    if (attr->eager_bytes) v[0] = attr->eager_bytes;
    if (attr->slots) v[1] = attr->slots;
    if (attr->unexpected_bytes) v[2] = attr->unexpected_bytes;
  }
  Status local;
  if (v[0] > (uint64_t{1} << 30) || v[1] < 2 || v[1] > 65536 || v[2] > (uint64_t{1} << 40))
    local = Status(TETHER_ERR_INVALID_ARG,
                   strprintf("%s: eager_bytes %llu (at most 1 GiB), slots %llu (2 .. 65536), unexpected_bytes %llu "
                             "(at most 1 TiB)", call, static_cast<unsigned long long>(v[0]),
                             static_cast<unsigned long long>(v[1]), static_cast<unsigned long long>(v[2])));
  // Agreement: an allreduce MAX over (v, ~v) gives every PE max and min of each value; equal everywhere iff max == min.
  void* agree = nullptr;
  TETHER_TRY(w.allocate(call, TETHER_SEG_HOST, 64, kAgreeBytes, true, &agree));
  auto* words = static_cast<uint64_t*>(agree);
  for (int i = 0; i < 3; ++i) {
    words[i] = local.isOk() ? v[i] : 0;
    words[3 + i] = local.isOk() ? ~v[i] : 0;
  }
  words[6] = local.isOk() ? 0 : 1;  // some PE's values are out of range
  CollArgs a;
  a.kind = CollKind::Allreduce;
  a.dest = words + 8;
  a.src = words;
  a.count = 7;
  a.type = TETHER_UINT64;
  a.op = TETHER_RED_MAX;
  Status s = w.colls().run(call, w.teams().world(), a);
  uint64_t r[7];
  std::memcpy(r, words + 8, sizeof r);
  TETHER_TRY(w.release(call, agree));
  TETHER_TRY(s);
  TETHER_TRY(local);
  if (r[6]) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: another PE passed attributes out of range", call);
  static const char* names[] = {"eager_bytes", "slots", "unexpected_bytes"};
  for (int i = 0; i < 3; ++i)
    if (r[i] != ~r[3 + i])
      TETHER_FAIL(TETHER_ERR_MISMATCH, "%s: the PEs passed different %s (from %llu to %llu; this PE %llu)", call,
                  names[i], static_cast<unsigned long long>(~r[3 + i]), static_cast<unsigned long long>(r[i]),
                  static_cast<unsigned long long>(v[i]));
  std::unique_ptr<Messaging> m(new Messaging(w, v[0], v[1], v[2]));
  TETHER_TRY(m->setUp(call));
  TETHER_LOG_INFO(LogSys::Core, "%s: eager up to %zu bytes, %zu slots per PE pair, %zu-byte unexpected pool", call,
                  m->eager_, m->slots_, m->poolBytes_);
  *out = std::move(m);
  return Status::ok();
}

Status Messaging::setUp(const char* call) {
  const size_t n = static_cast<size_t>(n_);
  const size_t ackBytes = roundUp(n * sizeof(uint64_t), 64), inboxBytes = n * slots_ * slotBytes_;
  const size_t streamBytes = 2 * kStreamWords * sizeof(uint64_t);
  void* p = nullptr;
  TETHER_TRY(w_.allocate(call, TETHER_SEG_HOST, 64, kAgreeBytes + ackBytes + streamBytes + inboxBytes + poolBytes_,
                         true, &p));
  region_ = static_cast<char*>(p);
  acked_ = reinterpret_cast<uint64_t*>(region_ + kAgreeBytes);
  credit_.attach(acked_);
  uint64_t* stream = reinterpret_cast<uint64_t*>(region_ + kAgreeBytes + ackBytes);
  words_.attach(stream, stream + kStreamWords, kStreamWords);
  inbox_ = region_ + kAgreeBytes + ackBytes + streamBytes;
  unexpected_.attach(inbox_ + inboxBytes, poolBytes_);
  TETHER_TRY(SiblingPaths::create(w_, call, &paths_));
  byData_.attach({[this](int pe, void** ctx) -> const TransportOps& { return opsTo(pe, SegKind::Host, ctx); },
                  [this] { w_.paths().progress(); }, w_.gpu(), paths_->gpu()});
  // Peers whose HOST segment this process maps (same host, load/store path): their regions are written directly.
  mapped_.resize(static_cast<size_t>(n_));
  for (int pe = 0; pe < n_; ++pe) mapped_[static_cast<size_t>(pe)] = static_cast<char*>(w_.ptr(region_, pe));
  // Direct reads (core/msg_direct.h): a buffer in a symmetric segment is read by a get (the HOST heap test is inline
  // and builds no error message: a private buffer, the common case, fails it; the full check only for GPU buffers).
  MsgDirect::Links direct;
  direct.region = region_;
  direct.mapped = [this](int pe) { return mapped_[static_cast<size_t>(pe)]; };
  direct.symmetric = [this](const void* buf, size_t bytes, bool gpu, SegKind* kind, uint64_t* at) {
    SymRef ref{SegKind::Host, 0};
    if (!w_.heap().inHostHeap(buf, bytes, &ref) &&
        !(gpu && w_.checkSymmetric("tether_isend", "buf", buf, bytes, &ref).isOk()))
      return false;
    *kind = ref.kind;
    *at = ref.offset;
    return true;
  };
  direct.get = [this](const char* c, void* dst, int src, SegKind kind, uint64_t at, size_t bytes) {
    const char* base = kind == SegKind::Static ? w_.heap().staticLocal() : w_.heap().base(kind);
    return move(c, Op::Get, dst, base + at, bytes, src, nullptr, 0);
  };
  direct.gpu = paths_->gpu();
  direct_.attach(std::move(direct));
  typed_.attach({w_.gpu(), [this](StreamOps** so) { return w_.streams().ops(so); }});
  // Eager sizes per destination: a PE written by one flagged put per slot message (another host) takes eager messages
  // up to remoteEager_ in consecutive slots (one network message, as UCX's own eager tag send), everyone else up to
  // eager_ in one slot.
  // Rendezvous DATA fragments through the ring: one slot's payload, or spanning slots up to kSpanFragmentMax there.
  eagerTo_.assign(static_cast<size_t>(n_), eager_);
  fragTo_.assign(static_cast<size_t>(n_), payload_);
  for (int pe = 0; pe < n_; ++pe) {
    void* ctx = nullptr;
    if (mapped_[static_cast<size_t>(pe)] || !opsTo(pe, SegKind::Host, &ctx).putFlagged) continue;
    eagerTo_[static_cast<size_t>(pe)] = std::max(eager_, remoteEager_);
    fragTo_[static_cast<size_t>(pe)] = std::max(payload_, std::min(remoteEager_, kSpanFragmentMax));
  }
  return Status::ok();
}

// TETHER_MSG_REMOTE_EAGER clamped to what one flagged put carries (head + payload) and to half a ring, so a spanning
// message always fits (after a SKIP to the ring's start) and leaves room for the control slots behind it.
size_t Messaging::spanEagerMax(size_t want) const {
  const size_t ring = slots_ / 2 * slotBytes_ - sizeof(SlotHead);
  return std::min({want, kFlaggedPutMax - sizeof(SlotHead), ring});
}

uint64_t Messaging::spanOf(size_t bytes) const {
  return std::max<uint64_t>(1, (bytes + sizeof(SlotHead) + slotBytes_ - 1) / slotBytes_);
}

Messaging::~Messaging() { thread_.stop(); }

ProgressThread::Hooks Messaging::threadHooks() {
  ProgressThread::Hooks h;
  h.pending = [this] { return streamPending_ != 0; };
  // Only persistent requests pending (the persistent models keep theirs watched for the whole run) and no start
  // waiting behind a round in flight: the thread may idle between rounds.
  h.mayIdle = [this] { return streamPending_ == watch_.size() && !startQueued_; };
  h.pass = [this](bool* did) {
    startQueued_ = false;
    return progress("tether messaging progress thread", did);
  };
  return h;
}

Status Messaging::destroy(const char* call) {
  size_t pending = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reqs_.forEach([&](const Req& r) {
      pending += (r.persist ? active(r) : !r.abandoned) ? 1 : 0;  // (inactive persistent requests go quietly)
    });
  }
  thread_.stop();
  byData_.attach({});
  paths_.reset();  // closes this PE's CUDA IPC mappings of peers' buffers: after the barrier the peers may free them
  typed_.close();
  TETHER_TRY(w_.barrier(call, true));  // nobody writes into a region after this
  TETHER_TRY(w_.release(call, region_));
  region_ = nullptr;
  if (pending)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %zu requests were still pending on PE %d (dropped; wait for every "
                "request, persistent ones included, before tether_msg_finalize)", call, pending, me_);
  return Status::ok();
}

char* Messaging::slot(int src, uint64_t index) const {
  return inbox_ + (static_cast<size_t>(src) * slots_ + index % slots_) * slotBytes_;
}

bool Messaging::isGpu(const void* p) const { return p && w_.gpu() && w_.gpu()->isDeviceMemory(p); }

// ---- posting -----------------------------------------------------------------------------------------------------

Messaging::Req& Messaging::newReq(bool send, int pe, int tag, void* buf, size_t bytes, bool gpu, uint64_t* id) {
  Req& r = reqs_.make();  // recycled storage: no allocation once warm
  r.send = send;
  r.pe = pe;
  r.tag = tag;
  if (send) r.src = buf;
  else r.dst = buf;
  r.cap = bytes;
  r.gpu = gpu;
  r.xfer.owner = &r;
  r.direct.owner = &r;
  *id = r.id;
  return r;
}

Status Messaging::checkSend(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) const {
  if (!req) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req is NULL", call);
  *req = 0;
  TETHER_TRY(w_.checkPe(call, pe));
  if (tag < 0) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: tag %d is negative (tags are 0 .. TETHER_TAG_MAX)", call, tag);
  if (!buf && bytes) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: buf is NULL with %zu bytes", call, bytes);
  return Status::ok();
}

Status Messaging::isend(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) {
  TETHER_TRY(checkSend(call, buf, bytes, pe, tag, req));
  const bool gpu = isGpu(buf);
  if (gpu) TETHER_TRY(w_.gpu()->settleDefaultStream().withContext(call));  // msg.h: the legacy stream's work lands
  return postSend(call, buf, bytes, pe, tag, gpu, nullptr, req);
}

Status Messaging::postSend(const char* call, const void* buf, size_t bytes, int pe, int tag, bool gpu,
                           std::unique_ptr<Typed>&& typed, uint64_t* req) {
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(thread_.error());
  Req& r = newReq(true, pe, tag, const_cast<void*>(buf), bytes, gpu, req);
  r.typed = std::move(typed);
  enqueueSend(r);
  if (r.armed) return Status::ok();
  bool did = false;
  return push(call, pe, &did);  // an eager send with credit completes here
}

void Messaging::enqueueSend(Req& r) {
  if (armedTo_[static_cast<size_t>(r.pe)])  // behind a prepared send to pe that has not started: keep the order
    arm(r);
  else
    queueSend(r);
}

void Messaging::arm(Req& r) {
  r.armed = true;
  armed_.push_back(&r);
  ++armedTo_[static_cast<size_t>(r.pe)];
}

void Messaging::queueSend(Req& r) {
  Out o{};
  o.h.kind = r.cap <= eagerTo_[static_cast<size_t>(r.pe)] ? kEager : kRts;
  o.h.tag = r.tag;
  o.h.bytes = r.cap;
  o.h.a = r.id;
  o.req = &r;
  if (o.h.kind == kRts) {
    o.h.how = byData_.takes(r.pe, false) ? kTransportPayload : 0;  // a GPU buffer is staged (MsgByData)
    // To a PE of this host whose ring this process maps: the receiver may read the buffer itself (RTS_DIRECT).
    MsgDirect::Ticket t;
    if (direct_.offer(r.direct, r.pe, r.src, r.cap, r.gpu, &t)) {
      o.h.kind = kRtsDirect;
      o.h.how = t.how;
      o.h.b = t.at;
      o.h.c = t.claim;
      o.h.pid = t.pid;
    }
  }
  out_[static_cast<size_t>(r.pe)].push_back(o);
}

void Messaging::delivered(MsgDirect::Offer& o) {
  Req& r = *static_cast<Req*>(o.owner);
  if (!r.done) complete(r, Status::ok());
}


Status Messaging::irecv(const char* call, void* buf, size_t bytes, int pe, int tag, uint64_t* req) {
  TETHER_TRY(checkRecv(call, buf, bytes, pe, tag, req));
  const bool gpu = isGpu(buf);
  if (gpu) TETHER_TRY(w_.gpu()->settleDefaultStream().withContext(call));  // msg.h: as for a send
  return postRecv(call, buf, bytes, pe, tag, gpu, nullptr, req);
}

Status Messaging::checkRecv(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) const {
  if (!req) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req is NULL", call);
  *req = 0;
  if (pe != TETHER_ANY_PE) TETHER_TRY(w_.checkPe(call, pe));
  if (tag < 0 && tag != TETHER_ANY_TAG)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: tag %d is negative and not TETHER_ANY_TAG", call, tag);
  if (!buf && bytes) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: buf is NULL with %zu bytes", call, bytes);
  return Status::ok();
}

Status Messaging::postRecv(const char* call, void* buf, size_t bytes, int pe, int tag, bool gpu,
                           std::unique_ptr<Typed>&& typed, uint64_t* req) {
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(thread_.error());
  // No progress pass here: a message still in the ring is matched by the next pass (against the posted receives in
  // the order posted, so with the same result as matching it first), and posting stays cheap: a pass here would
  // also make the direct reads of arrived rendezvous messages while the caller still has sends to post (bibw then
  // alternated between the directions: 16 GB/s both ways together against 30 one at a time did, cpu-2core-vm).
  Req& ref = newReq(false, pe, tag, buf, bytes, gpu, req);
  ref.typed = std::move(typed);
  return matchOrPost(call, ref);
}

Status Messaging::matchOrPost(const char* call, Req& ref) {
  UnexpectedQueue<Rts>::Taken u;  // (its bytes go back and its node to the queue on return)
  if (!unexpected_.take(ref.pe, ref.tag, &u)) {
    posted_.push(ref);
    return Status::ok();
  }
  if (!u->eager) return matchRts(call, ref, u->src, u->meta.head, u->meta.ipc);
  ref.fromPe = u->src;
  ref.fromTag = u->tag;
  ref.msgBytes = u->bytes;
  const size_t n = std::min(u->bytes, ref.cap);
  // Bytes in the pool lie in this PE's region (symmetric: a GPU buffer gets them through World::get); others in
  // private host memory.
  complete(ref, u->inPool() ? deliver(call, ref, 0, u->data(), n) : deliverHost(call, ref, u->data(), n));
  return Status::ok();
}

// ---- completion --------------------------------------------------------------------------------------------------

void Messaging::complete(Req& r, Status result) {
  r.done = true;
  if (result.isOk() && !r.send && r.msgBytes > r.cap)
    result = Status(TETHER_ERR_TRUNCATED,
                    strprintf("tether_recv: a message of %zu bytes from PE %d (tag %d) was truncated to the "
                              "receive buffer's %zu bytes", r.msgBytes, r.fromPe, r.fromTag, r.cap));
  // A typed receive's bytes reach the user's layout now, before a stream or a kernel waiting for it is told (also a
  // truncated one: the bytes that arrived).
  if (r.typed && !r.send && !r.abandoned && result.code() != TETHER_ERR_TIMEOUT) {
    Status u = typed_.copy("tether_irecv_typed", *r.typed, true, std::min(r.msgBytes, r.cap));
    if (!u.isOk() && result.isOk()) result = u;
  }
  r.result = result;
  if (r.doneWord != kNoWord)
    __atomic_store_n(words_.done(r.doneWord), r.doneGen, __ATOMIC_RELEASE);  // the stream goes on
  if (r.persist) {  // a round of a persistent request: its done word counts it (a stream or kernel may wait on it)
    Persist& p = *r.persist;
    ++p.completed;
    fill(r, &p.last);
    if (!result.isOk() && p.failure.isOk()) p.failure = result;
    __atomic_store_n(words_.done(p.word), p.base + p.completed, __ATOMIC_RELEASE);
  }
  for (uint32_t g : r.groups) words_.count(g);
  r.groups.clear();
  if (r.abandoned) forget(r);  // nobody will wait for it (callers do not touch r after complete)
}

void Messaging::fill(const Req& r, tether_msg_status_t* st) const {
  if (!st) return;
  st->source = r.send ? r.pe : r.fromPe;
  st->tag = r.send ? r.tag : r.fromTag;
  st->bytes = r.send ? r.cap : std::min(r.msgBytes, r.cap);
  st->error = r.result.code();
}

Status Messaging::finish(uint64_t* req, tether_msg_status_t* st) {
  Req& r = *reqs_.find(*req);
  fill(r, st);
  Status s = r.result;
  releaseWords(r);
  reqs_.erase(r.id);
  *req = 0;
  return s;
}

Status Messaging::test(const char* call, uint64_t* req, bool* done, tether_msg_status_t* st) {
  if (!req || !done) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req or done is NULL", call);
  *done = false;
  if (*req == 0) {
    *done = true;
    if (st) *st = tether_msg_status_t{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
    return Status::ok();
  }
  std::lock_guard<std::mutex> lock(mu_);
  Look look;
  bool ok = false, did = false;
  TETHER_TRY(ready(call, SIZE_MAX, *req, &look, &ok));
  if (!ok) TETHER_TRY(progress(call, &did));
  if (!ok) TETHER_TRY(ready(call, SIZE_MAX, *req, &look, &ok));
  if (!ok) return Status::ok();
  *done = true;
  return report(req, st);
}

Status Messaging::ready(const char* call, size_t i, uint64_t id, Look* look, bool* out) {
  Req* rq = reqs_.find(id);
  if (!rq)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s is not pending on PE %d (completed already, or not a request of this "
                "world)", call, reqName(i, id).c_str(), me_);
  const Req& r = *rq;
  if (!r.persist) {
    *out = r.done;
    return Status::ok();
  }
  if (!look->taken) {
    look->taken = true;
    look->rounds = startedRounds(r);
    look->inactive = look->rounds == r.persist->reported;
  }
  *out = static_cast<int64_t>(r.persist->completed - look->rounds) >= 0;
  return Status::ok();
}

Status Messaging::report(uint64_t* req, tether_msg_status_t* st) {
  Req& r = *reqs_.find(*req);
  if (!r.persist) return finish(req, st);
  Persist& p = *r.persist;
  if (p.completed == p.reported) {  // inactive: an empty status, as MPI's
    if (st) *st = tether_msg_status_t{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
    return Status::ok();
  }
  p.reported = p.completed;
  const Status s = p.failure;
  p.failure = Status::ok();
  if (st) {
    *st = p.last;
    st->error = s.code();
  }
  return s;
}

Status Messaging::timeout(const char* call, uint64_t id, double waited) {
  Req* rq = reqs_.find(id);
  const Req& r = *rq;
  if (r.send)
    TETHER_FAIL(TETHER_ERR_TIMEOUT, "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d: a send of %zu bytes to PE "
                "%d, tag %d (%s)", call, waited, me_, r.cap, r.pe, r.tag,
                r.cap <= eagerTo_[static_cast<size_t>(r.pe)]
                    ? "eager: waiting for free slots in the destination's ring"
                : r.allowed == 0 && r.moved == 0 ? "rendezvous: the receiver has not posted a matching receive"
                                                 : "rendezvous: moving the data");
  const std::string from = r.pe < 0 ? std::string("any PE") : strprintf("PE %d", r.pe);
  const std::string tag = r.tag < 0 ? std::string("any tag") : strprintf("tag %d", r.tag);
  TETHER_FAIL(TETHER_ERR_TIMEOUT, "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d: a receive of up to %zu bytes "
              "from %s, %s: %s", call, waited, me_, r.cap, from.c_str(), tag.c_str(),
              r.msgBytes ? "the rendezvous data did not arrive" : "no matching message arrived");
}

Status Messaging::waitall(const char* call, size_t n, uint64_t* reqs, tether_msg_status_t* sts) {
  if (n && !reqs) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs is NULL", call);
  Status first;
  SpinWait spin(w_.timeout(), w_.wakeups().mine());
  SmallArray<char, 8> left(n, 1);
  SmallArray<Look, 8> looks(n, Look());
  size_t remaining = n;
  bool expired = false;  // the deadline passed (SpinWait::next reads the clock every 64 calls, not every pass)
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      bool did = false;
      Status ps = progress(call, &did);
      if (!ps.isOk()) return ps;
      for (size_t i = 0; i < n; ++i) {
        if (!left[i]) continue;
        if (reqs[i] == 0) {
          if (sts) sts[i] = tether_msg_status_t{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
          left[i] = false, --remaining;
          continue;
        }
        bool ok = false;
        TETHER_TRY(ready(call, i, reqs[i], &looks[i], &ok));
        if (!ok) continue;
        Status s = report(&reqs[i], sts ? &sts[i] : nullptr);
        if (!s.isOk() && first.isOk()) first = s;
        left[i] = false, --remaining;
      }
      if (remaining == 0) return first;
      if (did) spin.busy();
      if (expired)
        for (size_t i = 0; i < n; ++i)
          if (left[i]) return timeout(call, reqs[i], spin.elapsedSeconds());
    }
    expired = !spin.next();  // outside the lock: other threads of this PE progress meanwhile
  }
}

Status Messaging::wait(const char* call, uint64_t* req, tether_msg_status_t* st) {
  if (!req) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req is NULL", call);
  tether_msg_status_t tmp{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
  Status s = waitall(call, 1, req, &tmp);
  if (!s.isOk() && tmp.error == TETHER_SUCCESS) tmp.error = s.code();  // not completed (a timeout): no fields to give
  if (st) *st = tmp;
  return s;
}

Status Messaging::waitOrWithdraw(const char* call, uint64_t req, tether_msg_status_t* st) {
  Status s = wait(call, &req, st);
  if (s.isOk() || !req) return s;
  bool reading = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reading = withdraw(req);
  }
  if (!reading) return s;
  // The receiver claimed the buffer and is reading it: the message is delivered after all once it says so.
  Status again = wait(call, &req, st);
  return again.isOk() ? again : s;
}

Status Messaging::sendBlocking(const char* call, const void* buf, size_t bytes, int pe, int tag) {
  uint64_t req = 0;
  TETHER_TRY(isend(call, buf, bytes, pe, tag, &req));
  return waitOrWithdraw(call, req, nullptr);
}

Status Messaging::recvBlocking(const char* call, void* buf, size_t bytes, int pe, int tag, tether_msg_status_t* st) {
  uint64_t req = 0;
  TETHER_TRY(irecv(call, buf, bytes, pe, tag, &req));
  return waitOrWithdraw(call, req, st);
}

Status Messaging::waitany(const char* call, size_t n, uint64_t* reqs, size_t* index, tether_msg_status_t* st) {
  if (!index || (n && !reqs)) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs or index is NULL", call);
  *index = SIZE_MAX;
  SpinWait spin(w_.timeout(), w_.wakeups().mine());
  SmallArray<Look, 8> looks(n, Look());
  bool expired = false;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    bool did = false, any = false;
    TETHER_TRY(progress(call, &did));
    for (size_t i = 0; i < n; ++i) {
      if (reqs[i] == 0) continue;
      bool ok = false;
      TETHER_TRY(ready(call, i, reqs[i], &looks[i], &ok));
      if (looks[i].inactive) continue;  // an inactive persistent request counts as a null one (MPI)
      any = true;
      if (!ok) continue;
      *index = i;
      return report(&reqs[i], st);
    }
    if (!any) {
      if (st) *st = tether_msg_status_t{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
      return Status::ok();
    }
    if (did) spin.busy();
    if (expired)
      for (size_t i = 0; i < n; ++i)
        if (reqs[i] && !looks[i].inactive) return timeout(call, reqs[i], spin.elapsedSeconds());
    lock.unlock();
    expired = !spin.next();
  }
}

}  // namespace tether
