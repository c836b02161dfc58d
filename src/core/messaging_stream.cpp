// Messaging (core/messaging.h): the stream and kernel models -- trigger, done and group words, prepared sends and
// their posts, stream waits, the progress thread.
#include "core/messaging_impl.h"

#include <algorithm>
#include <mutex>

#include "base/clock.h"
#include "base/log.h"
#include "core/op.h"
#include "core/stream.h"
#include "core/stream_ops.h"
#include "core/world.h"
#include "gpu/gpu.h"

namespace tether {

// ---- stream model ------------------------------------------------------------------------------------------------

Status Messaging::takeWord(const char* call, uint32_t* index) {
  if (!words_.take(index)) return wordsInUse(call);
  return Status::ok();
}

Status Messaging::wordsInUse(const char* call) const {
  TETHER_FAIL(TETHER_ERR_NO_MEMORY, "%s: the %u stream-area words of PE %d are all in use (stream-ordered, prepared "
              "and persistent requests and direct sends take them); complete some with tether_msg_wait/test, or free "
              "persistent ones, first", call, words_.count(), me_);
}

void Messaging::releaseWords(Req& r) {
  if (r.trig != kNoWord) words_.release(r.trig);
  if (r.xfer.busy()) byData_.drop(r.xfer);  // dropped while its bytes may still come
  direct_.release(r.direct);
  if (r.doneWord != kNoWord) words_.release(r.doneWord);
  r.trig = r.doneWord = kNoWord;
  if (r.armed) {
    armed_.remove(&r);
    --armedTo_[static_cast<size_t>(r.pe)];
  }
  if (r.persist) {
    Persist& p = *r.persist;
    if (p.word != kNoWord) {  // later users of the word take generations above what it held
      words_.passed(p.base + startedRounds(r) + 1);
      words_.release(p.word);
      p.word = kNoWord;
    }
    if (p.watched) watch_.remove(&r);
    p.watched = false;
  }
  if (r.streamed) --streamPending_;
  r.streamed = r.armed = false;
}

void Messaging::fireTriggers(bool* did) {
  std::fill(blocked_.begin(), blocked_.end(), 0);
  for (auto it = armed_.begin(); it != armed_.end();) {
    Req& r = **it;
    const size_t pe = static_cast<size_t>(r.pe);
    if (blocked_[pe] || (r.trig != kNoWord && __atomic_load_n(words_.trigger(r.trig), __ATOMIC_ACQUIRE) < r.trigGen)) {
      blocked_[pe] = 1;  // later sends to pe wait for this one (sends to one PE go in the order they were made)
      ++it;
      continue;
    }
    it = armed_.erase(it);
    r.armed = false;
    --armedTo_[pe];
    if (r.trig != kNoWord) words_.release(r.trig);  // the start was seen: free for reuse
    r.trig = kNoWord;
    *did = true;
    if (r.typed && r.typed->packOnStart) {  // a kernel started it: its stores are visible (msg_send's release)
      r.typed->packOnStart = false;
      const Status ps = typed_.copy("tether::device::msg_send (a typed send)", *r.typed, false, r.typed->bytes);
      if (!ps.isOk()) {
        complete(r, ps);
        continue;
      }
    }
    queueSend(r);
  }
}

Status Messaging::prepare(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) {
  return prepareReq(call, buf, bytes, pe, tag, nullptr, req);
}

Status Messaging::prepareReq(const char* call, const void* buf, size_t bytes, int pe, int tag,
                             std::unique_ptr<Typed>&& typed, uint64_t* req) {
  TETHER_TRY(checkSend(call, buf, bytes, pe, tag, req));
  const bool gpu = isGpu(buf);
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(thread_.error());
  uint32_t word = kNoWord;
  TETHER_TRY(takeWord(call, &word));
  Req& r = newReq(true, pe, tag, const_cast<void*>(buf), bytes, gpu, req);
  r.typed = std::move(typed);
  r.trig = word;
  r.trigGen = words_.next();
  __atomic_store_n(words_.trigger(word), 0, __ATOMIC_RELAXED);  // (generations only grow; this keeps the word tidy)
  r.streamed = true;
  ++streamPending_;
  arm(r);
  return thread_.start();
}

Status Messaging::startable(const char* call, uint64_t req, Req** out) {
  TETHER_TRY(thread_.error());
  Req* r = reqs_.find(req);
  if (r && r->persist)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: request %llu is a persistent request of PE %d: start it with "
                "tether_msg_start / startall / startall_on_stream or a kernel's msg_start", call,
                static_cast<unsigned long long>(req), me_);
  if (!r || !r->send || !r->armed || r->trig == kNoWord || r->posted)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: request %llu is not a prepared send that has not been started on PE %d "
                "(from tether_send_prepare, started at most once)", call, static_cast<unsigned long long>(req), me_);
  *out = r;
  return Status::ok();
}

Status Messaging::post(const char* call, uint64_t req) {
  bool gpu = false;
  Typed* typed = nullptr;  // (the request cannot complete before its trigger is set below)
  {
    std::lock_guard<std::mutex> lock(mu_);
    Req* r = nullptr;
    TETHER_TRY(startable(call, req, &r));
    r->posted = true;
    gpu = r->gpu;
    typed = r->typed.get();
  }
  Status s = typed ? typed_.pack(call, *typed)  // a typed prepared send packs when it starts (msg.h)
                   : gpu ? w_.gpu()->settleDefaultStream().withContext(call) : Status::ok();  // as for tether_isend
  std::lock_guard<std::mutex> lock(mu_);
  if (!s.isOk()) {  // not started: it may be posted again
    if (Req* r = reqs_.find(req)) r->posted = false;
    return s;
  }
  Req* r = reqs_.find(req);
  if (!r) return Status::ok();  // (only a concurrent finalize drops it)
  __atomic_store_n(words_.trigger(r->trig), r->trigGen, __ATOMIC_RELEASE);
  bool did = false;
  return progress(call, &did);
}

Status Messaging::capturing(const char* call, void* stream, bool* out) const {
  *out = false;
  StreamOps* so = nullptr;
  // No stream layer: nothing captures (the call's own checks and its enqueue report what is wrong, as before).
  if (!w_.streams().ops(&so).isOk()) return Status::ok();
  return so->capturing(stream, out).withContext(call);
}

Status Messaging::capturedError(const char* call) {
  TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: the stream is being captured into a CUDA graph, whose every replay would "
              "repeat this one-time request's stream work; use persistent requests (tether_send_init / "
              "tether_recv_init with tether_msg_startall_on_stream and tether_msg_waitall_on_stream), whose rounds "
              "replay", call);
}

Status Messaging::postOnStream(const char* call, size_t n, const uint64_t* reqs, void* stream) {
  if (n && !reqs) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs is NULL", call);
  bool captured = false;
  TETHER_TRY(capturing(call, stream, &captured));
  std::vector<Op> ops(n);
  std::vector<Typed*> typed;  // typed sends among them: packed on the stream first (they cannot complete before)
  {
    std::lock_guard<std::mutex> lock(mu_);
    Req* r0 = nullptr;
    for (size_t i = 0; i < n; ++i) TETHER_TRY(startable(call, reqs[i], &r0));
    if (captured) return capturedError(call);  // (after the requests' own errors)
    for (size_t i = 0; i < n; ++i) {
      Req& r = *reqs_.find(reqs[i]);
      if (r.posted) {  // listed twice (startable refused any posted before): the call changes nothing
        for (size_t j = 0; j < i; ++j) reqs_.find(reqs[j])->posted = false;
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: request %llu appears twice", call,
                    static_cast<unsigned long long>(reqs[i]));
      }
      r.posted = true;
      if (r.typed) typed.push_back(r.typed.get());
      ops[i].kind = Op::Signal;
      ops[i].pe = me_;
      ops[i].sig = words_.trigger(r.trig);
      ops[i].value = r.trigGen;
      ops[i].sigOp = TETHER_SIGNAL_SET;
    }
  }
  // Outside the lock: enqueueing may wait for the stream layer, whose work may wait for this room's progress. A pack
  // enqueued before a failure may still run: into its request's own packed bytes, which stay while the request does.
  Status s = Status::ok();
  for (size_t i = 0; i < typed.size() && s.isOk(); ++i) s = typed_.onStream(call, *typed[i], stream);
  if (s.isOk() && n) s = enqueueOnStream(w_, call, ops.data(), n, stream);
  if (!s.isOk()) {  // no trigger was enqueued: the requests may be posted again
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < n; ++i) {
      if (Req* r = reqs_.find(reqs[i])) r->posted = false;
    }
  }
  return s;
}

Status Messaging::sendDesc(const char* call, uint64_t req, tether_msg_send_desc_t* desc) {
  if (!desc) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: desc is NULL", call);
  std::lock_guard<std::mutex> lock(mu_);
  Req* r = nullptr;
  TETHER_TRY(startable(call, req, &r));
  r->posted = true;
  if (r->typed) r->typed->packOnStart = true;
  desc->word = words_.trigger(r->trig);
  desc->value = r->trigGen;
  return Status::ok();
}

Status Messaging::doneWord(const char* call, uint64_t req, uint64_t** word, uint64_t* value) {
  TETHER_TRY(thread_.error());
  Req* rq = reqs_.find(req);
  if (!rq)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: request %llu is not pending on PE %d", call,
                static_cast<unsigned long long>(req), me_);
  Req& r = *rq;
  if (r.persist)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: request %llu is a persistent request of PE %d: take its descriptor with "
                "tether_msg_persist_desc", call, static_cast<unsigned long long>(req), me_);
  if (r.doneWord == kNoWord) {
    TETHER_TRY(takeWord(call, &r.doneWord));
    r.doneGen = words_.next();
    if (!r.streamed) ++streamPending_;
    r.streamed = true;
    if (r.done) __atomic_store_n(words_.done(r.doneWord), r.doneGen, __ATOMIC_RELEASE);
  }
  TETHER_TRY(thread_.start());
  *word = words_.done(r.doneWord);
  *value = r.doneGen;
  return Status::ok();
}

Status Messaging::waitDesc(const char* call, uint64_t req, tether_msg_wait_desc_t* desc) {
  if (!desc) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: desc is NULL", call);
  uint64_t* word = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TETHER_TRY(doneWord(call, req, &word, &desc->value));
  }
  thread_.wake();
  desc->word = word;
  return Status::ok();
}

Status Messaging::isendOnStream(const char* call, const void* buf, size_t bytes, int pe, int tag, void* stream,
                                uint64_t* req) {
  TETHER_TRY(checkSend(call, buf, bytes, pe, tag, req));  // (req first: prepare's is never null)
  uint64_t id = 0;
  TETHER_TRY(prepare(call, buf, bytes, pe, tag, &id));
  thread_.wake();
  Status s = postOnStream(call, 1, &id, stream);
  if (!s.isOk()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (Req* r = reqs_.find(id)) forget(*r);
    return s;
  }
  *req = id;
  return Status::ok();
}

Status Messaging::waitOnStream(const char* call, uint64_t req, void* stream) {
  bool persistentWait = false, captured = false;
  TETHER_TRY(capturing(call, stream, &captured));
  Op op;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Req* r = reqs_.find(req);
    if (r && r->persist) persistentWait = true;
    else if (captured && r) return capturedError(call);  // (an unknown request: doneWord's error)
    else TETHER_TRY(doneWord(call, req, &op.sig, &op.value));
  }
  if (persistentWait) return waitallOnStream(call, 1, &req, stream);  // (its rounds: a word comparison)
  op.kind = Op::Wait;
  op.pe = 0;
  op.cmp = TETHER_CMP_GE;
  // A polling kernel, not a memop wait: the word is released after copies this process makes on its sibling
  // streams, and a pending memop wait can hold back this process's work on other streams (core/stream_ops.h,
  // GpuStreamOpsOptions::kernelWaits; seen here: gpu_msg's stream model hung on one H200, 2026-12-02). Bounded by
  // TETHER_TIMEOUT like the stream's other kernel waits: a request that never completes fails the stream.
  op.spinWait = true;
  thread_.wake();
  return enqueueOnStream(w_, call, &op, 1, stream);
}

// One stream wait for n requests: a group word (StreamWords::openGroup) starts at a fresh generation s, each of the m
// requests adds 1 when it completes (at once if it has), and the stream waits for s + m. The word is free again once
// all m have counted (a later wait on it is satisfied by larger values).
Status Messaging::waitallOnStream(const char* call, size_t n, const uint64_t* reqs, void* stream) {
  if (n && !reqs) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs is NULL", call);
  bool captured = false;
  TETHER_TRY(capturing(call, stream, &captured));
  Op op;
  op.sig = nullptr;
  // Persistent requests: a word comparison per request, done >= start (every round started when the stream gets
  // there is complete), which captures no value (a graph replay waits for the rounds of its own time).
  std::vector<const uint64_t*> reach, target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TETHER_TRY(thread_.error());
    size_t m = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!reqs[i]) continue;
      Req* rq = reqs_.find(reqs[i]);
      if (!rq)
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs[%zu] = %llu is not pending on PE %d", call, i,
                    static_cast<unsigned long long>(reqs[i]), me_);
      if (rq->persist) {
        watch(*rq);  // the progress thread completes its rounds while the host is elsewhere
        reach.push_back(words_.done(rq->persist->word));
        target.push_back(words_.trigger(rq->persist->word));
      } else {
        ++m;
      }
    }
    if (m && captured) return capturedError(call);
    if (m) {
      uint32_t g = kNoWord;
      uint64_t until = 0;  // the group word's value once all m completed
      if (!words_.openGroup(m, &g, &until)) return wordsInUse(call);
      for (size_t i = 0; i < n; ++i) {
        if (!reqs[i]) continue;
        Req& r = *reqs_.find(reqs[i]);
        if (r.persist) continue;
        if (r.done) {
          words_.count(g);
          continue;
        }
        r.groups.push_back(g);
        if (!r.streamed) ++streamPending_;
        r.streamed = true;
      }
      op.sig = words_.done(g);
      op.value = until;
    }
    if (m || !reach.empty()) TETHER_TRY(thread_.start());
  }
  thread_.wake();
  if (op.sig) {
    op.kind = Op::Wait;
    op.pe = 0;
    op.cmp = TETHER_CMP_GE;
    op.spinWait = true;  // as in waitOnStream
    TETHER_TRY(enqueueOnStream(w_, call, &op, 1, stream));
  }
  return waitReachOnStream(w_, call, reach.data(), target.data(), reach.size(), stream);
}

}  // namespace tether
