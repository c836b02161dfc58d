#include "transport/ucx/ucp/ucx_data.h"

#include <cstring>

#include "base/log.h"
#include "transport/transport.h"

namespace tether {
namespace {

// A piece's active-message header (its data: the piece's bytes; eager or rendezvous as UCX chooses).
struct DataHeader {
  uint64_t token;
  int32_t from;
  uint32_t pad;
  uint64_t offset;  // the piece's place in the message
  uint64_t total;   // the message's bytes (all its pieces)
};

// A send under way: its header (UCX reads it until the send completes: a queued send goes out later) and the
// caller's word, stored by the send's callback.
struct DataSend {
  DataHeader h;
  const UcxData::Links* links;
  int pe;
  uint64_t* sent;
};

}  // namespace

Status UcxData::expect(int pe, uint64_t token, void* dst, size_t n, uint64_t* done) {
  ucp_request_param_t prm{};
  TETHER_TRY(links_.localBuffer(dst, "data receive", pe, &prm));  // GPU memory only with a CUDA-aware UCX
  const bool gpu = (prm.op_attr_mask & UCP_OP_ATTR_FIELD_MEMORY_TYPE) != 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (!expected_.emplace(std::make_pair(pe, token), Expected{dst, n, done, gpu}).second)
    TETHER_FAIL(TETHER_ERR_INTERNAL, "ucx: data with token %llu from PE %d is expected twice",
                static_cast<unsigned long long>(token), pe);
  return Status::ok();
}

bool UcxData::cancel(int pe, uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = expected_.find(std::make_pair(pe, token));
  if (it == expected_.end()) return true;  // landed already (or never expected)
  if (it->second.receiving) return false;  // a piece is being written: *done follows
  expected_.erase(it);
  return true;
}

Status UcxData::send(int pe, uint64_t token, const void* src, size_t n, size_t offset, size_t total, bool toGpu,
                     uint64_t* sent) {
  if (offset > total || n > total - offset)
    TETHER_FAIL(TETHER_ERR_INTERNAL, "ucx: data piece of %zu bytes at %zu passes the message's %zu", n, offset, total);
  ucp_request_param_t prm{};
  TETHER_TRY(links_.localBuffer(src, "data send", pe, &prm));
  if (toGpu) {  // the receiver's buffer is GPU memory: UCX's rendezvous writes it (the handler never copies into it)
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = UCP_AM_SEND_FLAG_RNDV;
  }
  ucp_ep_h ep = nullptr;
  TETHER_TRY(links_.endpoint(pe, "data send", &ep));
  auto* d = new DataSend{DataHeader{token, links_.me, 0, offset, total}, &links_, pe, sent};
  prm.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = [](void* request, ucs_status_t status, void* user) {
    auto* ds = static_cast<DataSend*>(user);
    // CANCELED: the receiver dropped a rendezvous (its receive was withdrawn, cancel): the send is over as well.
    const bool ok = status == UCS_OK || status == UCS_ERR_CANCELED;
    if (!ok)
      TETHER_LOG_ERROR(LogSys::Transport, "%s", ds->links->failure(ds->pe, status, "data send").message().c_str());
    __atomic_store_n(ds->sent, ok ? uint64_t{1} : kDataFailed, __ATOMIC_RELEASE);
    delete ds;
    ucp_request_free(request);
  };
  prm.user_data = d;
  const ucs_status_ptr_t r = ucp_am_send_nbx(ep, links_.amId, &d->h, sizeof d->h, src, n, &prm);
  if (UCS_PTR_IS_PTR(r)) return Status::ok();  // the callback finishes it
  delete d;
  if (UCS_PTR_IS_ERR(r)) return links_.failure(pe, UCS_PTR_STATUS(r), "data send");
  __atomic_store_n(sent, uint64_t{1}, __ATOMIC_RELEASE);
  return Status::ok();
}

// *done is stored under the lock: once cancel finds no expectation, the word is no longer written (its owner may
// reuse it).
void UcxData::pieceLanded(int from, uint64_t token, bool ok, size_t bytes, size_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = expected_.find(std::make_pair(from, token));
  if (it == expected_.end()) return;
  Expected& e = it->second;
  --e.receiving;
  if (ok)
    e.got += bytes;
  else
    e.failed = true;
  if (e.receiving > 0 || (!e.failed && e.got < total)) return;  // more to come
  __atomic_store_n(e.done, e.failed ? kDataFailed : e.got + 1, __ATOMIC_RELEASE);
  expected_.erase(it);
}

// Runs in whichever thread progresses the worker. An eager piece is copied at once; a rendezvous one is received into
// the expected buffer at its offset (UCX fetches the bytes; the callback, or an immediate completion, counts it).
// Data nobody expects (its receive withdrawn, or failed) is dropped: a rendezvous descriptor released, so the sender's
// send completes.
ucs_status_t UcxData::onData(void* arg, const void* header, size_t headerLen, void* data, size_t len,
                             const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxData*>(arg);
  ucp_worker_h worker = self->links_.worker;
  DataHeader h{};
  if (headerLen != sizeof h) return UCS_OK;
  std::memcpy(&h, header, sizeof h);
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  Expected e{};
  bool fits = false;
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    auto it = self->expected_.find(std::make_pair(static_cast<int>(h.from), h.token));
    if (it == self->expected_.end() || it->second.failed) {
      if (rndv) ucp_am_data_release(worker, data);
      return UCS_OK;
    }
    e = it->second;
    ++it->second.receiving;  // cancel now waits for *done: bytes are being written into dst
    fits = h.offset <= e.n && len <= e.n - h.offset && h.total <= e.n && len <= h.total;
  }
  if (!fits || (!rndv && e.gpu)) {
    if (!fits)
      TETHER_LOG_ERROR(LogSys::Transport, "ucx: PE %d sent a piece of %zu bytes at %llu of %llu (token %llu) for a "
                       "receive buffer of %zu bytes: dropped", h.from, len, static_cast<unsigned long long>(h.offset),
                       static_cast<unsigned long long>(h.total), static_cast<unsigned long long>(h.token), e.n);
    else  // a sender that did not ask for the rendezvous (send's toGpu): refused, not memcpy'd
      TETHER_LOG_ERROR(LogSys::Transport, "ucx: PE %d sent %zu bytes eagerly into a GPU receive buffer (token %llu); "
                       "a GPU destination takes the rendezvous protocol only: dropped", h.from, len,
                       static_cast<unsigned long long>(h.token));
    if (rndv) ucp_am_data_release(worker, data);
    self->pieceLanded(h.from, h.token, false, 0, h.total);
    return UCS_OK;
  }
  char* at = static_cast<char*>(e.dst) + h.offset;
  if (!rndv) {
    std::memcpy(at, data, len);
    self->pieceLanded(h.from, h.token, true, len, h.total);
    return UCS_OK;
  }
  struct Landing {
    UcxData* self;
    int from;
    uint64_t token;
    size_t n, total;
  };
  auto* l = new Landing{self, h.from, h.token, len, h.total};
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.recv_am = [](void* request, ucs_status_t status, size_t, void* user) {
    auto* done = static_cast<Landing*>(user);
    done->self->pieceLanded(done->from, done->token, status == UCS_OK, done->n, done->total);
    delete done;
    ucp_request_free(request);
  };
  prm.user_data = l;
  if (e.gpu) {  // named, sparing UCX its detection
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    prm.memory_type = UCS_MEMORY_TYPE_CUDA;
  }
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker, data, at, len, &prm);
  if (UCS_PTR_IS_PTR(r)) return UCS_OK;  // the callback finishes it
  self->pieceLanded(h.from, h.token, !UCS_PTR_IS_ERR(r), len, h.total);
  delete l;
  return UCS_OK;
}

}  // namespace tether
