#include "transport/ucx/ucp/ucx_owner.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "base/log.h"

namespace tether {
namespace {

struct OwnerReply {
  uint64_t token;
  uint64_t fetched;
  int32_t status;     // tether_status_t of the owner's local operation
  char message[236];  // its message when it failed
};

// The request for an owner-executed operation; token 0: no reply wanted (a posted signal).
OwnerRequest ownerRequest(const OwnerOp& op, uint64_t token, int from) {
  OwnerRequest rq{};
  rq.token = token;
  rq.offset = op.offset;
  rq.from = from;
  rq.kind = static_cast<uint32_t>(op.kind);
  rq.signal = op.signal ? 1u : 0u;
  rq.op = op.signal ? static_cast<uint32_t>(op.sigOp) : static_cast<uint32_t>(op.amo.op);
  rq.width = op.signal ? 8u : op.amo.width;
  rq.value = op.signal ? op.value : op.amo.value;
  rq.cond = op.amo.cond;
  return rq;
}

// Sends msg as an eager active message that nobody waits for: the message stays on the heap until UCX is done with
// it (the send callback, or at once). Returns UCX's error when the send failed at once.
template <typename Msg>
ucs_status_t sendOwned(ucp_ep_h ep, unsigned id, std::unique_ptr<Msg> msg) {
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.flags = UCP_AM_SEND_FLAG_EAGER;
  prm.cb.send = [](void* request, ucs_status_t, void* user) {
    delete static_cast<Msg*>(user);
    ucp_request_free(request);
  };
  prm.user_data = msg.get();
  ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, nullptr, 0, msg.get(), sizeof(Msg), &prm);
  if (UCS_PTR_IS_PTR(r)) msg.release();  // the callback frees it
  return UCS_PTR_IS_ERR(r) ? UCS_PTR_STATUS(r) : UCS_OK;
}

}  // namespace

UcxOwnerOps::Call::Call(UcxOwnerOps& ops, const OwnerOp& op)
    : ops_(ops), op_(op), rq_(ownerRequest(op, ops.nextToken_.fetch_add(1, std::memory_order_relaxed),
                                           ops.links_.me)) {
  std::lock_guard<std::mutex> lock(ops_.mu_);
  ops_.pending_[rq_.token] = this;
}

UcxOwnerOps::Call::~Call() {
  std::lock_guard<std::mutex> lock(ops_.mu_);
  ops_.pending_.erase(rq_.token);
}

Status UcxOwnerOps::Call::result(int pe, const char* what, uint64_t* fetched) const {
  if (status_ != TETHER_SUCCESS)
    TETHER_FAIL(static_cast<tether_status_t>(status_), "ucx %s executed by PE %d (its %s word at offset 0x%llx) "
                "failed there: %s", what, pe, segKindName(op_.kind), static_cast<unsigned long long>(op_.offset),
                message_.c_str());
  if (fetched) *fetched = fetched_;
  return Status::ok();
}

ucs_status_t UcxOwnerOps::post(ucp_ep_h ep, const OwnerOp& op) {
  return sendOwned(ep, links_.requestId, std::make_unique<OwnerRequest>(ownerRequest(op, 0, links_.me)));
}

// Runs in whichever thread progresses the worker. Applies the request through the World's local path and answers
// without waiting: the reply lives on the heap until its send completes.
ucs_status_t UcxOwnerOps::onRequest(void* arg, const void*, size_t, void* data, size_t len,
                                    const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxOwnerOps*>(arg);
  OwnerRequest rq{};
  if (len == sizeof(OwnerRequest)) std::memcpy(&rq, data, sizeof rq);
  if (len != sizeof(OwnerRequest) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
      (rq.token != 0 && !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP))) {
    TETHER_LOG_ERROR(LogSys::Transport, "ucx: malformed owner-executed request (%zu bytes, attributes 0x%llx) "
                     "dropped; its sender times out", len, static_cast<unsigned long long>(param->recv_attr));
    return UCS_OK;
  }
  self->serve(rq, rq.token ? param->reply_ep : nullptr);
  return UCS_OK;
}

void UcxOwnerOps::serve(const OwnerRequest& rq, ucp_ep_h replyEp) {
  auto reply = std::make_unique<OwnerReply>();
  reply->token = rq.token;
  Status s;
  if (rq.kind >= static_cast<uint32_t>(kSegKinds)) {
    s = Status(TETHER_ERR_INTERNAL, strprintf("unknown segment kind %u", rq.kind));
  } else if (!links_.apply) {
    s = Status(TETHER_ERR_INTERNAL, "this PE applies no owner-executed operations (no World callback)");
  } else {
    OwnerOp o;
    o.kind = static_cast<SegKind>(rq.kind);
    o.offset = rq.offset;
    o.signal = rq.signal != 0;
    o.amo = AmoArgs{static_cast<tether_amo_t>(rq.op), rq.width, rq.value, rq.cond};
    o.value = rq.value;
    o.sigOp = static_cast<tether_signal_op_t>(rq.op);
    s = links_.apply(o, &reply->fetched);
    served_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!replyEp) {  // a posted signal: nobody waits for an answer
    if (!s.isOk())
      TETHER_LOG_ERROR(LogSys::Transport, "ucx: a signal posted by PE %d failed here: %s", rq.from,
                       s.message().c_str());
    return;
  }
  reply->status = static_cast<int32_t>(s.code());
  if (!s.isOk()) {
    std::snprintf(reply->message, sizeof reply->message, "%s", s.message().c_str());
    TETHER_LOG_WARN(LogSys::Transport, "ucx: owner-executed operation from PE %d failed here: %s", rq.from,
                    s.message().c_str());
  }
  const ucs_status_t sent = sendOwned(replyEp, links_.replyId, std::move(reply));
  if (sent != UCS_OK)
    TETHER_LOG_WARN(LogSys::Transport, "ucx: reply to PE %d's owner-executed operation not sent: %s (it fails there)",
                    rq.from, ucs_status_string(sent));
}

ucs_status_t UcxOwnerOps::onReply(void* arg, const void*, size_t, void* data, size_t len,
                                  const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxOwnerOps*>(arg);
  if (len != sizeof(OwnerReply) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
    TETHER_LOG_ERROR(LogSys::Transport, "ucx: malformed owner-executed reply (%zu bytes) dropped", len);
    return UCS_OK;
  }
  OwnerReply rp;
  std::memcpy(&rp, data, sizeof rp);
  std::lock_guard<std::mutex> lock(self->mu_);
  auto it = self->pending_.find(rp.token);
  if (it == self->pending_.end()) return UCS_OK;  // its initiator gave up (timeout, lost peer)
  Call& c = *it->second;
  c.fetched_ = rp.fetched;
  c.status_ = rp.status;
  if (rp.status != TETHER_SUCCESS) c.message_.assign(rp.message, strnlen(rp.message, sizeof rp.message));
  c.done_.store(true, std::memory_order_release);
  return UCS_OK;
}

}  // namespace tether
