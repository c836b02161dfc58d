// UcxData: two-sided data over UCX active messages -- TransportOps::expectData / cancelData / sendData of the ucx
// provider (ucx_ucp.cpp), which messaging's rendezvous to other hosts uses.
//
// One active message (Links::amId) per piece of a transfer: header [token, sender, offset, total], the piece's bytes
// as its data, eager or rendezvous as UCX picks (as for its tag messages). send posts it and returns; its completion
// callback stores the sender's word (1, or kDataFailed; a receiver that withdrew its expectation cancels a rendezvous,
// which counts as sent). The receiver's expectations are kept here by (sender, token) under this room's own mutex;
// the handler (onData, in whichever thread progresses the worker) copies an eager piece into dst + offset or receives
// a rendezvous one there (ucp_am_recv_data_nbx), and once the pieces' bytes reach the total stores *done = total + 1
// (kDataFailed after a failed piece, once none is being written any more) and drops the expectation.
// GPU buffers (a CUDA-aware UCX: Links::localBuffer names the memory type): a GPU destination is filled only by a
// rendezvous (the sender forces it with toGpu), which UCX completes with its own CUDA copies; an eager piece for a
// GPU destination is refused (logged, failed), never memcpy'd.
// Thread-safety: expect, cancel, send and the handler may run in any threads at once.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "base/status.h"

namespace tether {

class UcxData {
 public:
  // What the room needs from its provider, set once (attach) before any transfer.
  struct Links {
    ucp_worker_h worker = nullptr;  // the provider's worker (the handler releases and receives rendezvous data on it)
    int me = -1;                    // this PE (the sender named in the header)
    unsigned amId = 0;              // the active-message id the provider registered onData for
    // The endpoint to pe, made on first use, or the error naming `what`.
    std::function<Status(int pe, const char* what, ucp_ep_h* ep)> endpoint;
    // A local buffer: host memory always; GPU memory only with a CUDA-aware UCX, then *prm names its memory type;
    // otherwise the error naming `what` and pe.
    std::function<Status(const void* buf, const char* what, int pe, ucp_request_param_t* prm)> localBuffer;
    // The status for UCX's failure s of an operation with pe (PEER_LOST where the peer is gone).
    std::function<Status(int pe, ucs_status_t s, const char* what)> failure;
  };
  void attach(Links links) { links_ = std::move(links); }

  // TransportOps::expectData: dst receives n bytes from pe under token (INTERNAL error when expected twice).
  Status expect(int pe, uint64_t token, void* dst, size_t n, uint64_t* done);
  // TransportOps::cancelData: true when nothing will be written into dst any more (the expectation is gone or was
  // dropped now); false while a piece is being written (*done follows).
  bool cancel(int pe, uint64_t token);
  // TransportOps::sendData: a piece of n bytes at offset of a total-byte message, posted; *sent stored later.
  Status send(int pe, uint64_t token, const void* src, size_t n, size_t offset, size_t total, bool toGpu,
              uint64_t* sent);
  // The active-message handler (arg: this UcxData), registered with UCP_AM_FLAG_WHOLE_MSG.
  static ucs_status_t onData(void* arg, const void* header, size_t headerLen, void* data, size_t len,
                             const ucp_am_recv_param_t* param);

 private:
  struct Expected {
    void* dst;
    size_t n;
    uint64_t* done;
    bool gpu;            // dst is GPU memory: only a rendezvous (UCX writes it) may fill it, never the handler's memcpy
    int receiving = 0;   // pieces being written into dst (a copy, or a rendezvous receive under way)
    size_t got = 0;      // bytes of the pieces landed
    bool failed = false;
  };
  // A piece of an expected transfer is over (ok: its bytes are in dst): *done once every byte has landed (total + 1)
  // or, after a failure, once no piece is being written any more (kDataFailed); the expectation is then dropped.
  void pieceLanded(int from, uint64_t token, bool ok, size_t bytes, size_t total);

  Links links_;
  std::mutex mu_;
  std::map<std::pair<int, uint64_t>, Expected> expected_;  // transfers this PE expects, by (sender, token)
};

}  // namespace tether
