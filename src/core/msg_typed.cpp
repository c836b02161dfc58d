// MsgTyped (core/msg_typed.h): typed messages' packed bytes -- where they live, and their pack and unpack through the
// datatype engine.
#include "core/msg_typed.h"

#include "core/stream_ops.h"
#include "datatype/canonical.h"
#include "datatype/handle.h"
#include "gpu/gpu.h"

namespace tether {

Status MsgTyped::make(const char* call, void* buf, int64_t count, tether_type_t type, std::unique_ptr<Typed>* out) {
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
  if (bytes && links_.gpu && links_.gpu->isDeviceMemory(buf)) {
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
    TETHER_TRY(stages_.acquire(*links_.gpu, t->bytes, "the GPU stage of a typed message", &t->stage)
                   .withContext(call));
  } else {
    t->host = std::make_shared<std::vector<char>>(t->bytes);
  }
  *out = std::move(t);
  return Status::ok();
}

Status MsgTyped::gpuCopy(const char* call, const Typed& t, bool unpack, size_t bytes, void* stream) {
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
  r.device = links_.gpu->device();
  dt::Scheme used;
  return dt::gpuPack(r, t.gpu, &used).withContext(call);
}

Status MsgTyped::pack(const char* call, Typed& t, bool settle) {
  if (!t.gpu) {
    dt::hostPack(*t.c, t.user, 0, static_cast<int64_t>(t.bytes), t.packed());
    return Status::ok();
  }
  TETHER_TRY(gpuCopy(call, t, false, t.bytes, nullptr));
  return settle ? links_.gpu->settleDefaultStream().withContext(call) : Status::ok();
}

Status MsgTyped::copy(const char* call, Typed& t, bool unpack, size_t bytes) {
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
  TETHER_TRY(links_.streams(&so).withContext(call));
  if (!stream_) TETHER_TRY(so->createStream(&stream_).withContext(call));
  TETHER_TRY(gpuCopy(call, t, unpack, bytes, stream_));
  return so->synchronize(stream_).withContext(call);
}

Status MsgTyped::onStream(const char* call, Typed& t, void* stream) {
  const int64_t n = static_cast<int64_t>(t.bytes);
  if (!n) return Status::ok();
  StreamOps* so = nullptr;
  TETHER_TRY(links_.streams(&so).withContext(call));
  if (t.gpu) {
    if (!so->gpuAddresses())
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: the send buffer is GPU memory but the streams are CPU-emulated", call);
    return gpuCopy(call, t, false, t.bytes, stream);
  }
  return so->hostCall(stream,
                      [c = t.c, user = t.user, n, host = t.host] { dt::hostPack(*c, user, 0, n, host->data()); });
}

void MsgTyped::close() {
  if (!stream_) return;
  StreamOps* so = nullptr;
  if (links_.streams && links_.streams(&so).isOk()) (void)so->destroyStream(stream_);
  stream_ = nullptr;
}

}  // namespace tether
