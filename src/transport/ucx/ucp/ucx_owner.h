// UcxOwnerOps: atomics and signals executed by the word's owner, over UCX active messages -- for DEVICE words always
// (UCX's AMOs on CUDA memory are not atomic against GPU atomics) and HOST/STATIC words unless TETHER_UCX_AMO=native.
//
// Wire: the request [OwnerRequest: token, offset, operand(s), sender, segment kind, signal or AMO, op, width] is the
// data of an active message (Links::requestId) sent by the provider with UCP_AM_SEND_FLAG_REPLY; the owner's handler
// (onRequest) applies it through Links::apply (the World's own local path) and answers [OwnerReply: token, fetched,
// status, message] on the reply endpoint (Links::replyId) without waiting (the reply lives on the heap until its send
// completes). Token 0 (post): no reply (a posted signal; a failure there is logged by the owner).
// Initiator: a Call registers its token before the request is sent and unregisters it when it ends (the reply of a
// call that gave up -- a timeout, a lost peer -- is dropped); the provider sends call.request(), progresses its
// worker until call.done() (bounded by TETHER_TIMEOUT, ending early on a lost endpoint) and takes call.result().
// Thread-safety: calls, posts and both handlers may run in any threads at once (the pending table has its own lock).
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "transport/provider.h"

namespace tether {

// An owner-executed atomic or signal (the request AM's data; no AM header).
struct OwnerRequest {
  uint64_t token;     // the initiator's, echoed in the reply; 0: no reply (a posted signal)
  uint64_t offset;
  uint64_t value;     // AMO operand or signal value
  uint64_t cond;      // COMPARE_SWAP's comparand
  int32_t from;       // the initiator's PE (for messages)
  uint32_t kind;      // SegKind
  uint32_t signal;    // 1: signal (op = tether_signal_op_t), 0: AMO (op = tether_amo_t)
  uint32_t op;
  uint32_t width;     // AMO word width (4 or 8)
  uint32_t pad;
};

class UcxOwnerOps {
 public:
  struct Links {
    int me = -1;             // this PE (the request's sender)
    unsigned requestId = 0;  // the active-message ids the provider registered onRequest / onReply for
    unsigned replyId = 0;
    OwnerOpFn apply;         // the owner's side: the operation on this PE's own word (unset: refused)
  };
  void attach(Links links) { links_ = std::move(links); }

  // One owner-executed operation of this PE, registered while it lives.
  class Call {
   public:
    Call(UcxOwnerOps& ops, const OwnerOp& op);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    const OwnerRequest& request() const { return rq_; }  // the request AM's data
    bool done() const { return done_.load(std::memory_order_acquire); }
    // Once done: ok (and *fetched, when not null) or the owner's error, naming `what`, pe and the word.
    Status result(int pe, const char* what, uint64_t* fetched) const;

   private:
    friend class UcxOwnerOps;
    UcxOwnerOps& ops_;
    OwnerOp op_;
    OwnerRequest rq_;
    std::atomic<bool> done_{false};
    uint64_t fetched_ = 0;
    int32_t status_ = 0;
    std::string message_;
  };

  // Sends op to the owner at ep with no reply wanted (a posted signal); UCX's error when the send failed at once.
  ucs_status_t post(ucp_ep_h ep, const OwnerOp& op);
  // The active-message handlers (arg: this UcxOwnerOps).
  static ucs_status_t onRequest(void* arg, const void* header, size_t headerLen, void* data, size_t len,
                                const ucp_am_recv_param_t* param);
  static ucs_status_t onReply(void* arg, const void* header, size_t headerLen, void* data, size_t len,
                              const ucp_am_recv_param_t* param);
  uint64_t served() const { return served_.load(); }       // applied here for peers
  uint64_t sent() const { return nextToken_.load() - 1; }  // calls of this PE

 private:
  void serve(const OwnerRequest& rq, ucp_ep_h replyEp);

  Links links_;
  std::mutex mu_;
  std::unordered_map<uint64_t, Call*> pending_;  // calls waiting for a reply, by token
  std::atomic<uint64_t> nextToken_{1};
  std::atomic<uint64_t> served_{0};
};

}  // namespace tether
