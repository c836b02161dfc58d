// Messaging (core/messaging.h): persistent requests (tether_send_init / tether_recv_init and their starts).
#include "core/messaging_impl.h"

#include <algorithm>

#include "base/clock.h"
#include "core/stream.h"
#include "core/world.h"
#include "gpu/gpu.h"

namespace tether {

// ---- persistent requests -----------------------------------------------------------------------------------------

Status Messaging::sendInit(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) {
  TETHER_TRY(checkSend(call, buf, bytes, pe, tag, req));
  return makePersistent(call, true, const_cast<void*>(buf), bytes, pe, tag, isGpu(buf), nullptr, req);
}

Status Messaging::recvInit(const char* call, void* buf, size_t bytes, int pe, int tag, uint64_t* req) {
  TETHER_TRY(checkRecv(call, buf, bytes, pe, tag, req));
  return makePersistent(call, false, buf, bytes, pe, tag, isGpu(buf), nullptr, req);
}

Status Messaging::sendInitTyped(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                uint64_t* req) {
  std::unique_ptr<Typed> t;
  TETHER_TRY(makeTypedSend(call, buf, count, type, pe, tag, req, &t));
  return makePersistent(call, true, t->packed(), t->bytes, pe, tag, t->gpu != nullptr, std::move(t), req);
}

Status Messaging::recvInitTyped(const char* call, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                uint64_t* req) {
  TETHER_TRY(checkRecv(call, reinterpret_cast<const void*>(1), 0, pe, tag, req));
  std::unique_ptr<Typed> t;
  TETHER_TRY(typed_.make(call, buf, count, type, &t));
  return makePersistent(call, false, t->packed(), t->bytes, pe, tag, t->gpu != nullptr, std::move(t), req);
}

Status Messaging::makePersistent(const char* call, bool send, void* buf, size_t bytes, int pe, int tag, bool gpu,
                                 std::unique_ptr<Typed>&& typed, uint64_t* req) {
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(thread_.error());
  uint32_t word = kNoWord;
  TETHER_TRY(takeWord(call, &word));
  Req& r = newReq(send, pe, tag, buf, bytes, gpu, req);
  r.typed = std::move(typed);
  r.done = true;  // no round in flight
  r.persist.reset(new Persist);
  Persist& p = *r.persist;
  p.word = word;
  p.base = words_.next();
  __atomic_store_n(words_.trigger(word), p.base, __ATOMIC_RELEASE);
  __atomic_store_n(words_.done(word), p.base, __ATOMIC_RELEASE);
  return Status::ok();
}

Status Messaging::persistent(const char* call, size_t i, uint64_t id, Req** out) {
  Req* rq = reqs_.find(id);
  if (!rq || !rq->persist)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s is not a persistent request of PE %d (one from tether_send_init / "
                "tether_recv_init, not freed)", call, reqName(i, id).c_str(), me_);
  *out = rq;
  return Status::ok();
}

uint64_t Messaging::startedRounds(const Req& r) const {
  const Persist& p = *r.persist;
  const uint64_t word = __atomic_load_n(words_.trigger(p.word), __ATOMIC_ACQUIRE) - p.base;
  return static_cast<int64_t>(word - p.started) > 0 ? word : p.started;
}

bool Messaging::active(const Req& r) const { return startedRounds(r) != r.persist->reported; }

void Messaging::watch(Req& r) {
  Persist& p = *r.persist;
  if (p.watched) return;
  p.watched = true;
  watch_.push_back(&r);
  if (!r.streamed) ++streamPending_;
  r.streamed = true;
}

Status Messaging::checkStarts(const char* call, size_t n, const uint64_t* reqs, bool host, bool* gpu) {
  if (n && !reqs) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs is NULL", call);
  TETHER_TRY(thread_.error());
  *gpu = false;
  std::vector<Req*> picked;
  Status s;
  for (size_t i = 0; i < n && s.isOk(); ++i) {
    const size_t at = n == 1 ? SIZE_MAX : i;
    Req* r = nullptr;
    s = persistent(call, at, reqs[i], &r);
    if (!s.isOk()) break;
    Persist& p = *r->persist;
    if (p.pick) {
      s = Status(TETHER_ERR_INVALID_ARG, strprintf("%s: %s appears twice", call, reqName(at, reqs[i]).c_str()));
    } else if (host && active(*r)) {
      s = Status(TETHER_ERR_INVALID_ARG,
                 strprintf("%s: %s is active on PE %d (round %llu started, not yet reported by tether_msg_wait/test): "
                           "complete it before starting it again", call, reqName(at, reqs[i]).c_str(), me_,
                           static_cast<unsigned long long>(startedRounds(*r))));
    }
    p.pick = true;
    picked.push_back(r);
    *gpu = *gpu || r->gpu;
  }
  for (Req* r : picked) r->persist->pick = false;
  return s;
}

Status Messaging::start(const char* call, size_t n, const uint64_t* reqs) {
  bool gpu = false;
  SmallArray<Typed*, 8> typed(n, nullptr);  // typed sends: packed for this round now (msg.h)
  {
    std::lock_guard<std::mutex> lock(mu_);
    TETHER_TRY(checkStarts(call, n, reqs, true, &gpu));
    for (size_t i = 0; i < n; ++i) {
      Req& r = *reqs_.find(reqs[i]);
      if (r.send && r.typed) typed[i] = r.typed.get();  // (inactive: no round of it reads the packed bytes)
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (typed[i]) TETHER_TRY(typed_.pack(call, *typed[i], false));
  if (gpu) TETHER_TRY(w_.gpu()->settleDefaultStream().withContext(call));  // msg.h: as for tether_isend
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(checkStarts(call, n, reqs, true, &gpu));  // again: another thread may have started or freed one meanwhile
  for (size_t i = 0; i < n; ++i) {
    Req& r = *reqs_.find(reqs[i]);
    Persist& p = *r.persist;
    __atomic_store_n(words_.trigger(p.word), p.base + p.started + 1, __ATOMIC_RELEASE);  // (a watch sees it started)
    TETHER_TRY(startRound(call, r));
  }
  bool did = false;
  return pushAll(call, &did);  // an eager send with credit completes here (as tether_isend: posting does not drain)
}

Status Messaging::startOnStream(const char* call, size_t n, const uint64_t* reqs, void* stream) {
  std::vector<uint64_t*> words(n);
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool gpu = false;
    TETHER_TRY(checkStarts(call, n, reqs, false, &gpu));
    for (size_t i = 0; i < n; ++i) {
      Req& r = *reqs_.find(reqs[i]);
      watch(r);
      words[i] = words_.trigger(r.persist->word);
    }
    if (n) TETHER_TRY(thread_.start());
  }
  thread_.wake();
  // Outside the lock (as postOnStream): enqueueing may wait for the stream layer.
  return incrementOnStream(w_, call, words.data(), n, stream);
}

Status Messaging::persistDesc(const char* call, uint64_t req, tether_msg_persist_desc_t* desc) {
  if (!desc) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: desc is NULL", call);
  {
    std::lock_guard<std::mutex> lock(mu_);
    TETHER_TRY(thread_.error());
    Req* r = nullptr;
    TETHER_TRY(persistent(call, SIZE_MAX, req, &r));
    watch(*r);
    TETHER_TRY(thread_.start());
    const Persist& p = *r->persist;
    desc->start = words_.trigger(p.word);
    desc->done = words_.done(p.word);
    desc->base = p.base + startedRounds(*r);  // round 1 is the next start
  }
  thread_.wake();
  return Status::ok();
}

Status Messaging::requestFree(const char* call, uint64_t* req) {
  if (!req) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req is NULL", call);
  if (*req == 0) return Status::ok();
  std::lock_guard<std::mutex> lock(mu_);
  Req* r = nullptr;
  TETHER_TRY(persistent(call, SIZE_MAX, *req, &r));
  if (active(*r))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: request %llu is active on PE %d (%llu rounds started, %llu reported): "
                "complete it with tether_msg_wait/test before freeing it", call, static_cast<unsigned long long>(*req),
                me_, static_cast<unsigned long long>(startedRounds(*r)),
                static_cast<unsigned long long>(r->persist->reported));
  forget(*r);
  *req = 0;
  return Status::ok();
}

Status Messaging::startRound(const char* call, Req& r, const Status& packed) {
  ++r.persist->started;
  r.done = false;
  r.result = Status::ok();
  r.fromPe = r.fromTag = 0;
  r.msgBytes = r.allowed = r.moved = 0;
  direct_.release(r.direct);  // the last round's direct read is over; the next exports the buffer again (cached)
  if (!packed.isOk()) {  // a typed send that could not pack: the round fails, nothing sent
    complete(r, packed);
    return Status::ok();
  }
  if (!r.send) return matchOrPost(call, r);
  enqueueSend(r);  // pushed by the caller's progress pass
  return Status::ok();
}

Status Messaging::scanStarts(const char* call, bool* did) {
  for (Req* r : watch_) {
    const Persist& p = *r->persist;
    if (startedRounds(*r) == p.started) continue;  // no new start
    if (p.started != p.completed) {                // a round in flight: the new one begins when it completes
      startQueued_ = true;
      continue;
    }
    // A typed send packs now: the stream's earlier work or the kernel's stores before its start are visible (the
    // start word's release), and the previous round no longer reads the packed bytes.
    const bool typedSend = r->send && r->typed;
    TETHER_TRY(startRound(call, *r, typedSend ? typed_.copy(call, *r->typed, false, r->typed->bytes) : Status::ok()));
    *did = true;
  }
  return Status::ok();
}

}  // namespace tether
