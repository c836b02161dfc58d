// Messaging (core/messaging.h): typed messages -- their calls; the packed bytes and the engine are core/msg_typed.h.
#include "core/messaging_impl.h"

#include "core/world.h"
#include "gpu/gpu.h"

namespace tether {

// ---- typed messages ----------------------------------------------------------------------------------------------

Status Messaging::makeTypedSend(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                uint64_t* req, std::unique_ptr<Typed>* out) {
  TETHER_TRY(checkSend(call, reinterpret_cast<const void*>(1), 0, pe, tag, req));  // buf is checked by make
  return typed_.make(call, const_cast<void*>(buf), count, type, out);
}

Status Messaging::isendTyped(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                             uint64_t* req) {
  std::unique_ptr<Typed> t;
  TETHER_TRY(makeTypedSend(call, buf, count, type, pe, tag, req, &t));
  TETHER_TRY(typed_.pack(call, *t));
  return postSend(call, t->packed(), t->bytes, pe, tag, t->gpu != nullptr, std::move(t), req);
}

Status Messaging::prepareTyped(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                               uint64_t* req) {
  std::unique_ptr<Typed> t;
  TETHER_TRY(makeTypedSend(call, buf, count, type, pe, tag, req, &t));
  return prepareReq(call, t->packed(), t->bytes, pe, tag, std::move(t), req);
}

// A typed prepared send posted on the stream (postOnStream packs it there first). If the post fails, a pack may have
// been enqueued: the request is dropped but its packed bytes are not freed under the stream (a GPU stage stays busy,
// host bytes live on in the host call).
Status Messaging::isendTypedOnStream(const char* call, const void* buf, int64_t count, tether_type_t type, int pe,
                                     int tag, void* stream, uint64_t* req) {
  TETHER_TRY(checkSend(call, reinterpret_cast<const void*>(1), 0, pe, tag, req));
  uint64_t id = 0;
  TETHER_TRY(prepareTyped(call, buf, count, type, pe, tag, &id));
  thread_.wake();
  const Status s = postOnStream(call, 1, &id, stream);
  if (!s.isOk()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (Req* r = reqs_.find(id)) {
      r->typed->stage = nullptr;
      forget(*r);
    }
    return s;
  }
  *req = id;
  return Status::ok();
}

Status Messaging::irecvTyped(const char* call, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                             uint64_t* req) {
  std::unique_ptr<Typed> t;
  TETHER_TRY(checkRecv(call, reinterpret_cast<const void*>(1), 0, pe, tag, req));
  TETHER_TRY(typed_.make(call, buf, count, type, &t));
  if (t->gpu) TETHER_TRY(w_.gpu()->settleDefaultStream().withContext(call));  // msg.h: as for irecv
  return postRecv(call, t->packed(), t->bytes, pe, tag, t->gpu != nullptr, std::move(t), req);
}

Status Messaging::sendTypedBlocking(const char* call, const void* buf, int64_t count, tether_type_t type, int pe,
                                    int tag) {
  uint64_t req = 0;
  TETHER_TRY(isendTyped(call, buf, count, type, pe, tag, &req));
  return waitOrWithdraw(call, req, nullptr);
}

Status Messaging::recvTypedBlocking(const char* call, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                    tether_msg_status_t* st) {
  uint64_t req = 0;
  TETHER_TRY(irecvTyped(call, buf, count, type, pe, tag, &req));
  return waitOrWithdraw(call, req, st);
}

}  // namespace tether
