// Messaging (core/messaging.h): typed messages -- packed and unpacked through the datatype engine.
#include "core/messaging_impl.h"

#include <algorithm>

#include "core/stream.h"
#include "core/stream_ops.h"
#include "core/world.h"
#include "datatype/canonical.h"
#include "datatype/gpu_pack.h"
#include "datatype/handle.h"
#include "gpu/gpu.h"
#include "tether/datatype.h"

namespace tether {

// ---- typed messages ----------------------------------------------------------------------------------------------

Status Messaging::makeTyped(const char* call, void* buf, int64_t count, tether_type_t type,
                            std::unique_ptr<Typed>* out) {
  if (!type) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: type is NULL", call);
  if (!type->canonical) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: type is not committed (tether_type_commit)", call);
  if (count < 0) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: count %lld is negative", call, static_cast<long long>(count));
  int64_t bytes = 0;
  if (!dt::mulOk(count, type->canonical->size, &bytes))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: count %lld x the type's size %lld overflows int64", call,
                static_cast<long long>(count), static_cast<long long>(type->canonical->size));
  if (!buf && bytes) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: buf is NULL with %lld packed bytes", call,
                                 static_cast<long long>(bytes));
  std::unique_ptr<Typed> t(new Typed);
  t->c = type->canonical;
  t->count = count;
  t->user = buf;
  t->bytes = static_cast<size_t>(bytes);
  if (bytes && isGpu(buf)) {
    {
      std::lock_guard<std::mutex> lock(typesMu_);
      std::unique_ptr<TypeCache>& e = typeCaches_[t->c.get()];
      if (!e) {
        e.reset(new TypeCache);
        e->c = t->c;
      }
      t->gpu = &e->gpu;
    }
    t->force = static_cast<dt::Scheme>(type->gpu.scheme.load(std::memory_order_relaxed));
    TETHER_TRY(stages_.acquire(*w_.gpu(), t->bytes, "the GPU stage of a typed message", &t->stage).withContext(call));
  } else {
    t->host = std::make_shared<std::vector<char>>(t->bytes);
  }
  *out = std::move(t);
  return Status::ok();
}

// The GPU engine between t's user buffer and its stage, enqueued on stream (nullptr: the legacy default stream).
Status Messaging::gpuCopy(const char* call, const Typed& t, bool unpack, size_t bytes, void* stream) {
  if (!bytes) return Status::ok();  // (an empty message into a typed receive)
  dt::GpuPackRequest r;
  r.c = t.c.get();
  r.count = t.count;
  r.src = unpack ? static_cast<const void*>(t.packed()) : t.user;
  r.dst = unpack ? t.user : static_cast<void*>(t.packed());
  r.len = static_cast<int64_t>(bytes);
  r.unpack = unpack;
  r.stream = stream;
  r.force = t.force;
  r.device = w_.gpu()->device();
  dt::Scheme used;
  return dt::gpuPack(r, t.gpu, &used).withContext(call);
}

// A host-posted send: complete on return, after the legacy default stream's earlier work (msg.h).
Status Messaging::pack(const char* call, Typed& t, bool settle) {
  if (!t.gpu) {
    dt::hostPack(*t.c, t.user, 0, static_cast<int64_t>(t.bytes), t.packed());
    return Status::ok();
  }
  TETHER_TRY(gpuCopy(call, t, false, t.bytes, nullptr));
  return settle ? w_.gpu()->settleDefaultStream().withContext(call) : Status::ok();
}

// Runs in progress passes (of the host thread or of the progress thread, mu_ held): a typed receive's unpack when it
// completes, a kernel-started typed send's pack when its start is seen -- while a stream or a kernel may be waiting
// for this very request. So GPU buffers go through the engine on a non-blocking stream of this room's own (never the
// legacy default stream, which a waiting stream may hold), synchronised here.
Status Messaging::engineCopy(const char* call, Typed& t, bool unpack, size_t bytes) {
  const int64_t n = static_cast<int64_t>(bytes);
  if (!n) return Status::ok();
  if (!t.gpu) {
    if (unpack)
      dt::hostUnpack(*t.c, t.packed(), 0, n, t.user);
    else
      dt::hostPack(*t.c, t.user, 0, n, t.packed());
    return Status::ok();
  }
  StreamOps* so = nullptr;
  TETHER_TRY(w_.streams().ops(&so).withContext(call));
  if (!engineStream_) TETHER_TRY(so->createStream(&engineStream_).withContext(call));
  TETHER_TRY(gpuCopy(call, t, unpack, bytes, engineStream_));
  return so->synchronize(engineStream_).withContext(call);
}

// The pack enqueued on stream: the GPU engine into the stage, or the host packer in a stream host call.
Status Messaging::packOnStream(const char* call, Typed& t, void* stream) {
  const int64_t n = static_cast<int64_t>(t.bytes);
  if (!n) return Status::ok();
  StreamOps* so = nullptr;
  TETHER_TRY(w_.streams().ops(&so).withContext(call));
  if (t.gpu) {
    if (!so->gpuAddresses())
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: the send buffer is GPU memory but the streams are CPU-emulated", call);
    return gpuCopy(call, t, false, t.bytes, stream);
  }
  return so->hostCall(stream, [c = t.c, user = t.user, n, host = t.host] { dt::hostPack(*c, user, 0, n, host->data()); });
}

Status Messaging::makeTypedSend(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                uint64_t* req, std::unique_ptr<Typed>* out) {
  TETHER_TRY(checkSend(call, reinterpret_cast<const void*>(1), 0, pe, tag, req));  // buf is checked by makeTyped
  return makeTyped(call, const_cast<void*>(buf), count, type, out);
}

Status Messaging::isendTyped(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                             uint64_t* req) {
  std::unique_ptr<Typed> t;
  TETHER_TRY(makeTypedSend(call, buf, count, type, pe, tag, req, &t));
  TETHER_TRY(pack(call, *t));
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
  wake_.notify_all();
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
  TETHER_TRY(makeTyped(call, buf, count, type, &t));
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
