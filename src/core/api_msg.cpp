// The C API of two-sided messaging (tether/msg.h, core/messaging.h): init/finalize, send/recv in the host, stream and
// kernel models, typed and persistent forms.
#include <string>

#include "core/api_support.h"
#include "core/messaging.h"
#include "core/world.h"
#include "tether/msg.h"

using tether::World;
using namespace tether::capi;  // report, guarded, contained, liveWorld, ... (api_support.h)

namespace {

// Runs f(Messaging&) on w's messaging room (TETHER_ERR_INVALID_ARG before tether_msg_init).
template <typename F>
tether_status_t withMsg(tether_t w, const char* call, F&& f) {
  return guarded(w, call, [&](World& x) -> tether::Status {
    if (!x.messaging())
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: messaging is not initialised on PE %d (call tether_msg_init first)",
                  call, x.myPe());
    return f(*x.messaging());
  });
}

}  // namespace

extern "C" {

// ---- two-sided messaging (tether/msg.h, core/messaging.h) ---------------------------

tether_status_t tether_msg_init(tether_t w, const tether_msg_attr_t* attr) {
  const char* call = "tether_msg_init";
  return guarded(w, call, [&](World& x) -> tether::Status {
    if (x.messaging())
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: messaging is initialised already on PE %d", call, x.myPe());
    return tether::Messaging::create(x, call, attr, &x.messaging());
  });
}

tether_status_t tether_msg_finalize(tether_t w) {
  const char* call = "tether_msg_finalize";
  return guarded(w, call, [&](World& x) -> tether::Status {
    if (!x.messaging())
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: messaging is not initialised on PE %d", call, x.myPe());
    tether::Status s = x.messaging()->destroy(call);
    x.messaging().reset();
    return s;
  });
}

tether_status_t tether_isend(tether_t w, const void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  return withMsg(w, "tether_isend", [&](tether::Messaging& m) { return m.isend("tether_isend", buf, bytes, pe, tag, req); });
}

tether_status_t tether_irecv(tether_t w, void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  return withMsg(w, "tether_irecv", [&](tether::Messaging& m) { return m.irecv("tether_irecv", buf, bytes, pe, tag, req); });
}

tether_status_t tether_send(tether_t w, const void* buf, size_t bytes, int pe, int tag) {
  return withMsg(w, "tether_send", [&](tether::Messaging& m) { return m.sendBlocking("tether_send", buf, bytes, pe, tag); });
}

tether_status_t tether_recv(tether_t w, void* buf, size_t bytes, int pe, int tag, tether_msg_status_t* status) {
  return withMsg(w, "tether_recv",
                 [&](tether::Messaging& m) { return m.recvBlocking("tether_recv", buf, bytes, pe, tag, status); });
}

tether_status_t tether_msg_wait(tether_t w, tether_request_t* req, tether_msg_status_t* status) {
  return withMsg(w, "tether_msg_wait", [&](tether::Messaging& m) { return m.wait("tether_msg_wait", req, status); });
}

tether_status_t tether_msg_test(tether_t w, tether_request_t* req, int* done, tether_msg_status_t* status) {
  return withMsg(w, "tether_msg_test", [&](tether::Messaging& m) -> tether::Status {
    if (!done) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_msg_test: done is NULL");
    bool d = false;
    tether::Status s = m.test("tether_msg_test", req, &d, status);
    *done = d ? 1 : 0;
    return s;
  });
}

tether_status_t tether_msg_waitall(tether_t w, size_t n, tether_request_t* reqs, tether_msg_status_t* statuses) {
  return withMsg(w, "tether_msg_waitall", [&](tether::Messaging& m) { return m.waitall("tether_msg_waitall", n, reqs, statuses); });
}

tether_status_t tether_msg_waitany(tether_t w, size_t n, tether_request_t* reqs, size_t* index,
                               tether_msg_status_t* status) {
  return withMsg(w, "tether_msg_waitany",
                 [&](tether::Messaging& m) { return m.waitany("tether_msg_waitany", n, reqs, index, status); });
}

tether_status_t tether_isend_on_stream(tether_t w, const void* buf, size_t bytes, int pe, int tag, void* stream,
                                       tether_request_t* req) {
  return withMsg(w, "tether_isend_on_stream", [&](tether::Messaging& m) {
    return m.isendOnStream("tether_isend_on_stream", buf, bytes, pe, tag, stream, req);
  });
}

tether_status_t tether_send_prepare_typed(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe,
                                          int tag, tether_request_t* req) {
  return withMsg(w, "tether_send_prepare_typed", [&](tether::Messaging& m) {
    return m.prepareTyped("tether_send_prepare_typed", buf, count, type, pe, tag, req);
  });
}

tether_status_t tether_isend_typed_on_stream(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe,
                                             int tag, void* stream, tether_request_t* req) {
  return withMsg(w, "tether_isend_typed_on_stream", [&](tether::Messaging& m) {
    return m.isendTypedOnStream("tether_isend_typed_on_stream", buf, count, type, pe, tag, stream, req);
  });
}

tether_status_t tether_send_typed(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe, int tag) {
  return withMsg(w, "tether_send_typed", [&](tether::Messaging& m) {
    return m.sendTypedBlocking("tether_send_typed", buf, count, type, pe, tag);
  });
}

tether_status_t tether_recv_typed(tether_t w, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                  tether_msg_status_t* status) {
  return withMsg(w, "tether_recv_typed", [&](tether::Messaging& m) {
    return m.recvTypedBlocking("tether_recv_typed", buf, count, type, pe, tag, status);
  });
}

tether_status_t tether_isend_typed(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                   tether_request_t* req) {
  return withMsg(w, "tether_isend_typed", [&](tether::Messaging& m) {
    return m.isendTyped("tether_isend_typed", buf, count, type, pe, tag, req);
  });
}

tether_status_t tether_irecv_typed(tether_t w, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                   tether_request_t* req) {
  return withMsg(w, "tether_irecv_typed", [&](tether::Messaging& m) {
    return m.irecvTyped("tether_irecv_typed", buf, count, type, pe, tag, req);
  });
}

tether_status_t tether_send_prepare(tether_t w, const void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  return withMsg(w, "tether_send_prepare",
                 [&](tether::Messaging& m) { return m.prepare("tether_send_prepare", buf, bytes, pe, tag, req); });
}

tether_status_t tether_msg_post(tether_t w, tether_request_t req) {
  return withMsg(w, "tether_msg_post", [&](tether::Messaging& m) { return m.post("tether_msg_post", req); });
}

tether_status_t tether_msg_post_on_stream(tether_t w, tether_request_t req, void* stream) {
  return withMsg(w, "tether_msg_post_on_stream", [&](tether::Messaging& m) {
    return m.postOnStream("tether_msg_post_on_stream", 1, &req, stream);
  });
}

tether_status_t tether_msg_post_all_on_stream(tether_t w, size_t n, const tether_request_t* reqs, void* stream) {
  return withMsg(w, "tether_msg_post_all_on_stream", [&](tether::Messaging& m) {
    return m.postOnStream("tether_msg_post_all_on_stream", n, reqs, stream);
  });
}

tether_status_t tether_msg_send_desc(tether_t w, tether_request_t req, tether_msg_send_desc_t* desc) {
  return withMsg(w, "tether_msg_send_desc",
                 [&](tether::Messaging& m) { return m.sendDesc("tether_msg_send_desc", req, desc); });
}

tether_status_t tether_msg_wait_desc(tether_t w, tether_request_t req, tether_msg_wait_desc_t* desc) {
  return withMsg(w, "tether_msg_wait_desc",
                 [&](tether::Messaging& m) { return m.waitDesc("tether_msg_wait_desc", req, desc); });
}

tether_status_t tether_msg_wait_on_stream(tether_t w, tether_request_t req, void* stream) {
  return withMsg(w, "tether_msg_wait_on_stream",
                 [&](tether::Messaging& m) { return m.waitOnStream("tether_msg_wait_on_stream", req, stream); });
}

tether_status_t tether_msg_waitall_on_stream(tether_t w, size_t n, const tether_request_t* reqs, void* stream) {
  const char* call = "tether_msg_waitall_on_stream";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.waitallOnStream(call, n, reqs, stream); });
}

tether_status_t tether_send_init(tether_t w, const void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  const char* call = "tether_send_init";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.sendInit(call, buf, bytes, pe, tag, req); });
}

tether_status_t tether_recv_init(tether_t w, void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  const char* call = "tether_recv_init";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.recvInit(call, buf, bytes, pe, tag, req); });
}

tether_status_t tether_send_init_typed(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                       tether_request_t* req) {
  const char* call = "tether_send_init_typed";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.sendInitTyped(call, buf, count, type, pe, tag, req); });
}

tether_status_t tether_recv_init_typed(tether_t w, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                       tether_request_t* req) {
  const char* call = "tether_recv_init_typed";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.recvInitTyped(call, buf, count, type, pe, tag, req); });
}

tether_status_t tether_msg_start(tether_t w, tether_request_t req) {
  const char* call = "tether_msg_start";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.start(call, 1, &req); });
}

tether_status_t tether_msg_startall(tether_t w, size_t n, const tether_request_t* reqs) {
  const char* call = "tether_msg_startall";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.start(call, n, reqs); });
}

tether_status_t tether_msg_startall_on_stream(tether_t w, size_t n, const tether_request_t* reqs, void* stream) {
  const char* call = "tether_msg_startall_on_stream";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.startOnStream(call, n, reqs, stream); });
}

tether_status_t tether_msg_request_free(tether_t w, tether_request_t* req) {
  const char* call = "tether_msg_request_free";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.requestFree(call, req); });
}

tether_status_t tether_msg_persist_desc(tether_t w, tether_request_t req, tether_msg_persist_desc_t* desc) {
  const char* call = "tether_msg_persist_desc";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.persistDesc(call, req, desc); });
}

}  // extern "C"
