// The ucx provider over UCX's UCP API: HOST and STATIC segments of PEs on other hosts (or of same-host PEs with
// TETHER_PATHS host=ucx), and DEVICE segments of PEs on other hosts when both PEs' UCX moves CUDA memory.
//
// One ucp_context and one ucp_worker per World (UCS_THREAD_MODE_MULTI: user threads, the device-API proxy thread and
// the optional progress thread all call it). start() exchanges the worker addresses with one allgather (O(n) data);
// an endpoint to a PE is created on its first operation (no n^2 connections at start-up). This PE's committed
// HOST/STATIC ranges are ucp_mem_map'ped; the key blob peers get is [KeyHeader: remote base, bytes, serial][packed
// rkey], re-made on growth (segmentsGrew); a peer's rkey is unpacked once per serial and cached per (PE, kind).
// CUDA memory: start() asks UCX for its memory types (ucp_context_query); with UCS_MEMORY_TYPE_CUDA and a GPU context
// the DEVICE segment is registered too (memory type CUDA) and GPU buffers are legal sources/destinations. Whether each
// PE can is exchanged with the worker addresses, so the probe (pure, over that record) gives both PEs of a pair the
// same answer: a remote DEVICE segment is served only when both can.
//
// Completion (transport.h's contract): blocking put = ucp_put_nbx + ucp_ep_flush_nbx (remote completion); get and
// every AMO wait for their request (AMOs always carry a reply buffer, so even SET/ADD return remotely done); _nbi
// forms release their request and complete at quiet (ucp_worker_flush_nbx). signal = ucp_worker_fence, then an
// atomic SWAP (SET) or ADD on the word, waited for. fence = ucp_worker_fence.
// quiet flushes the worker only when an nbi put or get was issued since the last completed flush (flush_, a
// FlushTracker: each such operation is numbered once posted, a flush covers the numbers taken before it began), so a
// quiet with nothing issued (the barrier's, back to back) costs no round trip. A quiet in another thread that races
// an nbi operation may flush it or not; one ordered after it (the caller's own, or synchronised) always does.
// Owner-executed atomics and signals (DEVICE words always: UCX's AMOs on CUDA memory are not atomic against GPU
// atomics; HOST/STATIC words unless TETHER_UCX_AMO=native): UcxOwnerOps (ucx_owner.h: the wire format, the calls
// waiting for a reply, the owner's handler applying through UcxOptions::applyOwnerOp and answering at once); this
// provider sends the request [OwnerRequest] with UCP_AM_SEND_FLAG_REPLY and progresses until the reply with its token
// arrives (bounded by TETHER_TIMEOUT; a lost endpoint ends it with TETHER_ERR_PEER_LOST). An owner-executed signal first flushes the endpoint (remote completion of every earlier
// put to that PE: UCX does not order an active message after RMA), so the data is in place before the owner updates
// the signal word; only when an nbi put to that PE was issued since the last flush covering it
// (FlushTracker::peerFlushNeeded; blocking puts are complete already), so a barrier round costs one round trip.
// Every wait progresses the worker and is bounded by TETHER_TIMEOUT; an endpoint error (the peer exited, its
// connection broke) is recorded by the error callback and becomes TETHER_ERR_PEER_LOST naming the PE.
// Two-sided data (TransportOps::expectData/cancelData/sendData, messaging's rendezvous to other hosts): UcxData
// (ucx_data.h), its own room with its own lock, over this provider's worker, endpoints and memory-type check; its
// active-message handler is registered here (kAmData). With CUDA memory the HOST paths carry kCapDataGpu
// (kUcxCudaOps): GPU sources and destinations are legal.
#include <poll.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "gpu/gpu.h"
#include "transport/ucx/flush_tracker.h"
#include "transport/ucx/ucp/ucx_data.h"
#include "transport/ucx/ucp/ucx_owner.h"
#include "transport/ucx/ucx.h"

namespace tether {
namespace {

// Active-message ids of this provider's worker.
constexpr unsigned kAmOwnerRequest = 1;
constexpr unsigned kAmOwnerReply = 2;
constexpr unsigned kAmFlaggedPut = 3;
constexpr unsigned kAmData = 4;

// A flagged put's AM header (its data: the bytes, flag word first).
struct FlaggedPut {
  uint64_t offset;  // in the target's HOST segment
  int32_t from;
  uint32_t pad;
};

// The owner-executed form of a signal on word sig.
OwnerOp signalOp(const RemoteAddr& sig, uint64_t value, tether_signal_op_t op) {
  OwnerOp o;
  o.kind = sig.kind;
  o.offset = sig.offset;
  o.signal = true;
  o.value = value;
  o.sigOp = op;
  return o;
}

struct KeyHeader {
  uint64_t base;    // the owner's segment base address
  uint64_t bytes;   // registered bytes from base
  uint64_t serial;  // registration number (changes at every re-registration)
};

struct Peer {
  std::mutex mu;                 // ep creation and the rkey cache
  ucp_ep_h ep = nullptr;
  std::atomic<int> failed{0};    // the ucs_status_t the endpoint's error callback reported (0: none)
  uint64_t serial[kSegKinds] = {};
  ucp_rkey_h rkey[kSegKinds] = {};
};

// What one operation addresses.
struct Target {
  ucp_ep_h ep;
  uint64_t addr;
  ucp_rkey_h rkey;
};

void onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<Peer*>(arg)->failed.store(static_cast<int>(status));
}

bool peerGone(ucs_status_t s) {
  return s == UCS_ERR_CONNECTION_RESET || s == UCS_ERR_ENDPOINT_TIMEOUT || s == UCS_ERR_UNREACHABLE ||
         s == UCS_ERR_REJECTED || s == UCS_ERR_IO_ERROR || s == UCS_ERR_CANCELED || s == UCS_ERR_NOT_CONNECTED;
}

class UcxProvider final : public Provider {
 public:
  explicit UcxProvider(const UcxOptions& o) : opts_(o) {}
  ~UcxProvider() override;
  const char* name() const override { return "ucx"; }
  Status probe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
               ProbeResult* out) const override {
    return ucxProbe(topo, me, peer, kind, ov, unusable_, cudaPes_, out);
  }
  Status start(const Topology& topo, int me, const PathOverrides& ov, Bootstrap& boot) override;
  Status connect(const Topology& topo, int me, int peer, SegKind kind, Connection* out) override;
  Status registerSegment(SegKind kind, const void* base, uint64_t bytes, std::vector<char>* key) override;
  bool progress() override { return worker_ && userProgress() != 0; }
  // Skips while the PE progresses the worker itself (a tether call since the last look); counted apart, so the
  // progress thread knows the PE is being served.
  bool idleProgress() override;
  // Arms the worker and polls its event fd (TETHER_UCX_WAKEUP); false without one. While the PE progresses the worker
  // itself it sleeps maxWait instead (arming takes the worker lock and finds events at once under traffic).
  bool idleWait(std::chrono::microseconds maxWait) override;
  // ucp_worker_arm + ppoll of the event fd, bounded by maxWait; false without an event fd.
  bool waitEvents(std::chrono::microseconds maxWait);

  // nbi: returns at once (quiet completes it); local: returns at local completion (src reusable; quiet, or a later
  // signal to pe, completes it remotely); neither: remotely complete on return.
  Status put(int pe, const RemoteAddr& dst, const void* src, size_t n, bool nbi, bool local = false);
  Status get(int pe, void* dst, const RemoteAddr& src, size_t n, bool nbi);
  Status getv(const GetItem* items, size_t count);  // TransportOps::getv: ucp_get_nbx each, then wait for each
  Status preconnect(int pe);  // TransportOps::preconnect: the endpoint to pe, made now if not yet
  Status amo(int pe, const RemoteAddr& dst, const AmoArgs& a, uint64_t* fetched);
  Status signal(int pe, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op);
  // A signal the caller does not wait for (TransportOps::signalPost): owner-executed words get a request without a
  // reply (token 0); native words take signal().
  Status signalPost(int pe, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op);
  Status quiet();
  Status fence();
  // TransportOps::putFlagged: one eager active message; the target's handler copies bytes 8.. and then stores the
  // flag word with release order (serveFlaggedPut). Returns at local completion.
  Status putFlagged(int pe, const RemoteAddr& dst, const void* src, size_t n);
  // Two-sided data (TransportOps::expectData / cancelData / sendData): its own room, ucx_data.h.
  UcxData& data() { return data_; }
 private:
  Status makeWorker(int npes);
  Status setAmHandlers();
  void progressLoop();
  // ucp_worker_progress from a tether call (a wait, the proxy): counted, so the progress thread stays out of the way
  // of a PE that is progressing the worker itself. While one runs (inUserProgress_), the idle threads keep off the
  // worker: a thread inside ucp_worker_progress holds the worker's lock, and where threads outnumber cores it is
  // often descheduled there; an idle thread arming or progressing the worker then waits for that lock -- with UCX's
  // default spinlock, spinning for a whole time slice (the proxy of a PE with a device handle: rooted reduces across
  // two netns hosts took 2.5-4.9 ms a call instead of 24-102 us, with 60-80 % of all CPU samples in pthread_spin_lock
  // under ucp_worker_arm; makeWorker's mutex does the rest).
  unsigned userProgress() {
    userProgress_.fetch_add(1, std::memory_order_relaxed);
    inUserProgress_.fetch_add(1, std::memory_order_seq_cst);
    const unsigned did = ucp_worker_progress(worker_);
    inUserProgress_.fetch_sub(1, std::memory_order_release);
    return did;
  }
  // A tether call is inside ucp_worker_progress now (an idle thread would only wait for its lock).
  bool userInside() const { return inUserProgress_.load(std::memory_order_seq_cst) != 0; }
  Status target(int pe, const RemoteAddr& a, size_t n, const char* what, Target* t);
  Status endpoint(Peer& p, int pe, const char* what);  // p.mu held: p.ep made on first use
  Status endpointTo(int pe, const char* what, ucp_ep_h* ep);  // the same, taking p.mu: the endpoint to pe
  Status localBuffer(const void* buf, const char* what, int pe, ucp_request_param_t* prm) const;
  // Owner execution: sends `op` to PE pe (the owner of the word at `at`) and waits for its reply.
  Status ownerExecute(int pe, const RemoteAddr& at, const OwnerOp& op, uint64_t* fetched, const char* what);
  bool ownerExecuted(SegKind kind) const { return kind == SegKind::Device || opts_.ownerAmo; }
  static ucs_status_t onFlaggedPut(void* arg, const void* header, size_t headerLen, void* data, size_t len,
                                   const ucp_am_recv_param_t* param);
  // Waits for r (progressing the worker, bounded by TETHER_TIMEOUT); a completion with status alsoOk counts as done.
  Status wait(ucs_status_ptr_t r, int pe, const char* what, ucs_status_t alsoOk = UCS_OK);
  Status detach(ucs_status_ptr_t r, int pe, const char* what);
  Status failure(int pe, ucs_status_t s, const char* what) const;
  std::string failedPeers() const;

  UcxOptions opts_;
  std::string unusable_;  // why UCX cannot be used on this PE (start-up failed), or empty
  bool cuda_ = false;     // this PE's UCX moves CUDA memory and it has a GPU context
  std::vector<uint8_t> cudaPes_;  // cuda_ of every PE (start-up exchange; empty before)
  int me_ = -1;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_address_t* myAddress_ = nullptr;
  size_t myAddressLen_ = 0;
  std::vector<uint64_t> addressLens_;  // per PE (0: that PE has no worker)
  std::vector<char> addresses_;        // addressStride_ bytes per PE
  size_t addressStride_ = 0;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::mutex regMu_;
  std::vector<ucp_mem_h> memhs_;       // every registration, unmapped at the end (peers may hold older keys)
  std::vector<ucp_rkey_h> retired_;    // replaced rkeys, destroyed at the end
  uint64_t serial_ = 0;
  struct Registration {
    const void* base = nullptr;
    uint64_t bytes = 0;
    std::vector<char> key;
  };
  Registration registered_[kSegKinds];  // the latest registration per kind
  UcxData data_;  // two-sided data (its AM handler's arg: set up with the worker)
  FlushTracker flush_;  // what quiet and a signal's endpoint flush must still complete
  UcxOwnerOps owner_;  // owner-executed atomics and signals (their AM handlers' arg: set up with the worker)
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> userProgress_{0};  // userProgress() calls so far
  std::atomic<int> inUserProgress_{0};     // userProgress() calls running now
  std::atomic<uint64_t> idleProgress_{0};  // idleProgress() calls that progressed (the proxy between descriptors)
  std::atomic<uint64_t> idleSeen_{0};      // userProgress_ at idleProgress's / idleWait's last look
  std::thread progressThread_;
  int efd_ = -1;  // the worker's event fd (UCP_FEATURE_WAKEUP), -1: none (idle threads poll every period)
};

UcxProvider& ucx(void* ctx) { return *static_cast<UcxProvider*>(ctx); }

Status ucxPut(void* ctx, int pe, const RemoteAddr& dst, const void* src, size_t n, bool nbi) {
  return ucx(ctx).put(pe, dst, src, n, nbi);
}
Status ucxPutLocal(void* ctx, int pe, const RemoteAddr& dst, const void* src, size_t n) {
  return ucx(ctx).put(pe, dst, src, n, false, true);
}
Status ucxGet(void* ctx, int pe, void* dst, const RemoteAddr& src, size_t n, bool nbi) {
  return ucx(ctx).get(pe, dst, src, n, nbi);
}
Status ucxAmo(void* ctx, int pe, const RemoteAddr& dst, const AmoArgs& a, uint64_t* fetched) {
  return ucx(ctx).amo(pe, dst, a, fetched);
}
Status ucxPutFlagged(void* ctx, int pe, const RemoteAddr& dst, const void* src, size_t n) {
  return ucx(ctx).putFlagged(pe, dst, src, n);
}
Status ucxExpectData(void* ctx, int pe, uint64_t token, void* dst, size_t n, uint64_t* done) {
  return ucx(ctx).data().expect(pe, token, dst, n, done);
}
bool ucxCancelData(void* ctx, int pe, uint64_t token) { return ucx(ctx).data().cancel(pe, token); }
Status ucxSendData(void* ctx, int pe, uint64_t token, const void* src, size_t n, size_t offset, size_t total,
                   bool toGpu, uint64_t* sent) {
  return ucx(ctx).data().send(pe, token, src, n, offset, total, toGpu, sent);
}
Status ucxSignalPost(void* ctx, int pe, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op) {
  return ucx(ctx).signalPost(pe, sig, value, op);
}
Status ucxSignal(void* ctx, int pe, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op) {
  return ucx(ctx).signal(pe, sig, value, op);
}
Status ucxGetv(void* ctx, const GetItem* items, size_t count) { return ucx(ctx).getv(items, count); }
Status ucxPreconnect(void* ctx, int pe) { return ucx(ctx).preconnect(pe); }
Status ucxQuiet(void* ctx) { return ucx(ctx).quiet(); }
Status ucxFence(void* ctx) { return ucx(ctx).fence(); }

const TransportOps kUcxOps = {
    "ucx", kCapAtomics | kCapHostSegment, ucxPut, ucxGet, ucxAmo, ucxSignal, ucxQuiet, ucxFence, ucxPutLocal,
    ucxSignalPost, ucxPutFlagged, ucxExpectData, ucxCancelData, ucxSendData, ucxGetv, ucxPreconnect,
};
// HOST segments where this PE's UCX moves CUDA memory: the same, and two-sided data from and into GPU buffers.
const TransportOps kUcxCudaOps = {
    "ucx", kCapAtomics | kCapHostSegment | kCapDataGpu, ucxPut, ucxGet, ucxAmo, ucxSignal, ucxQuiet, ucxFence,
    ucxPutLocal, ucxSignalPost, ucxPutFlagged, ucxExpectData, ucxCancelData, ucxSendData, ucxGetv, ucxPreconnect,
};

// DEVICE segments (a CUDA-aware UCX on both PEs): the same operations; no native atomics (owner-executed).
const TransportOps kUcxDeviceOps = {
    "ucx", kCapDeviceSegment, ucxPut, ucxGet, ucxAmo, ucxSignal, ucxQuiet, ucxFence, ucxPutLocal,
    ucxSignalPost, nullptr, nullptr, nullptr, nullptr, nullptr, ucxPreconnect,
};

// ---- start-up and teardown --------------------------------------------------------------------------------------

Status UcxProvider::makeWorker(int npes) {
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) TETHER_FAIL(TETHER_ERR_SYSTEM, "ucp_config_read: %s", ucs_status_string(s));
  // The worker's lock a mutex, not UCX's default spinlock, unless UCX_USE_MT_MUTEX says otherwise: this PE's threads
  // (its own, the proxy, the progress thread) share the worker, and where threads outnumber cores a holder is often
  // descheduled, when a spinning waiter burns a whole time slice (2-core VM, two netns hosts, rooted reduces at 4 and
  // 8 PEs: 0.05-0.84x the time with the mutex, the spinlock's runs swinging up to 4.6 ms a call; 8 B at 8 PEs 1.29x;
  // uncontended 2-PE p, g, put_signal 0.90-0.99x; bench/results/cpu-2core-vm/ucx_worker_lock_ab.txt).
  if (!std::getenv("UCX_USE_MT_MUTEX")) {
    const ucs_status_t m = ucp_config_modify(config, "USE_MT_MUTEX", "y");
    if (m != UCS_OK)
      TETHER_LOG_INFO(LogSys::Transport, "ucx: this UCX takes no USE_MT_MUTEX (%s): its worker lock stays a spinlock",
                      ucs_status_string(m));
  }
  ucp_params_t p{};
  p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  p.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_AM;
  if (opts_.wakeup) p.features |= UCP_FEATURE_WAKEUP;
  p.estimated_num_eps = static_cast<size_t>(npes);
  s = ucp_init(&p, config, &context_);
  ucp_config_release(config);
  if (s != UCS_OK) TETHER_FAIL(TETHER_ERR_SYSTEM, "ucp_init: %s", ucs_status_string(s));
  ucp_context_attr_t ca{};
  ca.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  s = ucp_context_query(context_, &ca);
  if (s != UCS_OK) TETHER_FAIL(TETHER_ERR_SYSTEM, "ucp_context_query: %s", ucs_status_string(s));
  const bool cudaMemory = (ca.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  cuda_ = cudaMemory && opts_.gpu;
  TETHER_LOG_INFO(LogSys::Transport, "ucx: CUDA memory %s", cuda_ ? "supported (GPU buffers and DEVICE segments)"
                  : cudaMemory ? "supported by UCX, but this PE has no GPU context" : "not supported by this UCX");
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  s = ucp_worker_create(context_, &wp, &worker_);
  if (s != UCS_OK) TETHER_FAIL(TETHER_ERR_SYSTEM, "ucp_worker_create: %s", ucs_status_string(s));
  ucp_worker_attr_t wa{};
  wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  s = ucp_worker_query(worker_, &wa);
  if (s != UCS_OK || wa.thread_mode != UCS_THREAD_MODE_MULTI)
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "this UCX gives no thread-safe worker (UCS_THREAD_MODE_MULTI): rebuild UCX "
                "with --enable-mt");
  UcxData::Links links;
  links.worker = worker_;
  links.me = me_;
  links.amId = kAmData;
  links.endpoint = [this](int pe, const char* what, ucp_ep_h* ep) { return endpointTo(pe, what, ep); };
  links.localBuffer = [this](const void* buf, const char* what, int pe, ucp_request_param_t* prm) {
    return localBuffer(buf, what, pe, prm);
  };
  links.failure = [this](int pe, ucs_status_t st, const char* what) { return failure(pe, st, what); };
  data_.attach(std::move(links));
  owner_.attach(UcxOwnerOps::Links{me_, kAmOwnerRequest, kAmOwnerReply, opts_.applyOwnerOp});
  TETHER_TRY(setAmHandlers());
  if (opts_.wakeup) {
    s = ucp_worker_get_efd(worker_, &efd_);
    if (s != UCS_OK) {
      efd_ = -1;
      TETHER_LOG_WARN(LogSys::Transport, "ucx: no worker event fd (%s): idle threads poll every period instead",
                      ucs_status_string(s));
    }
  }
  s = ucp_worker_get_address(worker_, &myAddress_, &myAddressLen_);
  if (s != UCS_OK) TETHER_FAIL(TETHER_ERR_SYSTEM, "ucp_worker_get_address: %s", ucs_status_string(s));
  return Status::ok();
}

Status UcxProvider::setAmHandlers() {
  for (unsigned id : {kAmOwnerRequest, kAmOwnerReply, kAmFlaggedPut, kAmData}) {
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id = id;
    hp.cb = id == kAmOwnerRequest ? UcxOwnerOps::onRequest
            : id == kAmOwnerReply ? UcxOwnerOps::onReply
            : id == kAmFlaggedPut ? onFlaggedPut
                                  : UcxData::onData;
    hp.arg = id == kAmData ? static_cast<void*>(&data_)
             : id == kAmFlaggedPut ? static_cast<void*>(this)
                                   : static_cast<void*>(&owner_);
    if (id == kAmData) {  // one callback per message (eager data of many fragments assembled first)
      hp.field_mask |= UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
      hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    }
    ucs_status_t s = ucp_worker_set_am_recv_handler(worker_, &hp);
    if (s != UCS_OK) TETHER_FAIL(TETHER_ERR_SYSTEM, "ucp_worker_set_am_recv_handler: %s", ucs_status_string(s));
  }
  return Status::ok();
}

Status UcxProvider::start(const Topology& topo, int me, const PathOverrides& ov, Bootstrap& boot) {
  me_ = me;
  if (!ucxJobUsesNetwork(topo, ov)) return Status::ok();  // the same answer on every PE: no exchange at all
  const int n = topo.size();
  Status made = makeWorker(n);
  if (!made.isOk()) {
    unusable_ = "UCX failed to start on PE " + std::to_string(me) + ": " + made.message();
    TETHER_LOG_WARN(LogSys::Transport, "%s", unusable_.c_str());
  }
  // One allgather of (address length, CUDA memory) records, one of the addresses padded to the longest (a PE without
  // a worker sends length 0).
  struct Record {
    uint64_t addressLen;
    uint64_t cuda;
  };
  if (!made.isOk()) cuda_ = false;
  const Record mine{made.isOk() ? myAddressLen_ : 0, cuda_ ? 1u : 0u};
  std::vector<Record> all(static_cast<size_t>(n));
  TETHER_TRY(boot.allgather(&mine, all.data(), sizeof mine).withContext("UCX worker addresses"));
  addressLens_.assign(static_cast<size_t>(n), 0);
  cudaPes_.assign(static_cast<size_t>(n), 0);
  for (size_t pe = 0; pe < all.size(); ++pe) {
    addressLens_[pe] = all[pe].addressLen;
    cudaPes_[pe] = all[pe].cuda != 0;
  }
  addressStride_ = *std::max_element(addressLens_.begin(), addressLens_.end());
  if (addressStride_ == 0) return Status::ok();
  std::vector<char> padded(addressStride_, 0);
  if (mine.addressLen) std::memcpy(padded.data(), myAddress_, mine.addressLen);
  addresses_.assign(addressStride_ * static_cast<size_t>(n), 0);
  TETHER_TRY(boot.allgather(padded.data(), addresses_.data(), addressStride_).withContext("UCX worker addresses"));
  if (!worker_) return Status::ok();
  peers_.resize(static_cast<size_t>(n));
  flush_.reset(static_cast<size_t>(n));
  for (auto& p : peers_) p.reset(new Peer);
  TETHER_LOG_INFO(LogSys::Transport, "ucx: worker up (%zu-byte address); endpoints are made on first use",
                  myAddressLen_);
  if (opts_.progressUs > 0) progressThread_ = std::thread([this] { progressLoop(); });
  return Status::ok();
}

// The progress thread serves a PE that computes outside tether (over TCP a remote put lands only when the target's
// worker progresses): it waits for the worker's events (TETHER_UCX_WAKEUP, the default; else it sleeps
// TETHER_UCX_PROGRESS_US) and empties the worker, unless a tether call progressed the worker in the last period:
// then the PE is inside tether and progresses it itself, a second thread on the worker lock only competes with it
// (on 2 cores it cost 8 B puts ~50 % and 1 MiB put_nbi ~1/3 of their bandwidth), and the thread sleeps the period.
// The drain itself stops as soon as a tether call progresses (re-checked after every ucp_worker_progress) and after
// kDrainCalls calls: under steady traffic it would otherwise keep the worker lock for as long as events arrive,
// while the PE's own calls (and the device-API proxy) spin on that lock.
// While the PE stays active the sleep between looks doubles, up to kMaxSleepPeriods periods but no longer than
// kMaxBackOff (or one period, if longer: shutdown joins this thread after its sleep), and it is one period again once
// a look finds the PE gone (so a PE that starts computing is served within 32 ms at the default, then on events):
// each look wakes this thread, which on a host with no idle core takes a core from a spinning PE. On the 2-core VM
// (two namespace hosts, 1 MiB ping-pong one-way over TCP, 2026-12-04) a look every 1 ms gave 330-570 us, none or
// one every 16 ms 176-186 us.
void UcxProvider::progressLoop() {
  constexpr int kDrainCalls = 64;
  constexpr int kMaxSleepPeriods = 16;
  constexpr auto kMaxBackOff = std::chrono::milliseconds(16);
  const auto period = std::chrono::microseconds(opts_.progressUs);
  const auto longest = std::max<std::chrono::microseconds>(period, kMaxBackOff);
  // Someone else progresses the worker: a tether call, or the proxy between descriptors.
  auto others = [this] {
    return userProgress_.load(std::memory_order_relaxed) + idleProgress_.load(std::memory_order_relaxed);
  };
  uint64_t seen = others();
  bool userActive = false;
  int sleepPeriods = 1;
  while (!stop_.load(std::memory_order_relaxed)) {
    // While the PE is served otherwise, sleep (longer each time); if not, wait for events (or the period).
    if (userActive) {
      std::this_thread::sleep_for(std::min<std::chrono::microseconds>(period * sleepPeriods, longest));
      sleepPeriods = std::min(2 * sleepPeriods, kMaxSleepPeriods);
    } else if (userInside() || !waitEvents(period)) {
      std::this_thread::sleep_for(period);
    }
    uint64_t now = others();
    userActive = now != seen || userInside();
    seen = now;
    if (!userActive) sleepPeriods = 1;
    for (int i = 0; !userActive && i < kDrainCalls; ++i) {
      if (ucp_worker_progress(worker_) == 0) break;
      now = others();
      userActive = now != seen || userInside();
      seen = now;
    }
  }
}

bool UcxProvider::idleProgress() {
  if (!worker_) return false;
  const uint64_t now = userProgress_.load(std::memory_order_relaxed);
  // The PE progresses by itself (since the last look, or now)
  if (idleSeen_.exchange(now, std::memory_order_relaxed) != now || userInside()) return false;
  if (ucp_worker_progress(worker_) == 0) return false;
  idleProgress_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool UcxProvider::idleWait(std::chrono::microseconds maxWait) {
  if (!worker_ || efd_ < 0) return false;
  const uint64_t now = userProgress_.load(std::memory_order_relaxed);
  if (idleSeen_.exchange(now, std::memory_order_relaxed) != now || userInside()) {  // the PE progresses by itself
    std::this_thread::sleep_for(maxWait);
    return true;
  }
  return waitEvents(maxWait);
}

// ucp_worker_arm reports BUSY while events wait to be progressed (the caller progresses at once); otherwise the fd
// becomes readable on the next event. The wait is bounded by maxWait (ppoll: microsecond resolution).
bool UcxProvider::waitEvents(std::chrono::microseconds maxWait) {
  if (!worker_ || efd_ < 0) return false;
  const ucs_status_t s = ucp_worker_arm(worker_);
  if (s == UCS_ERR_BUSY) return true;
  if (s != UCS_OK) return false;
  pollfd pfd{efd_, POLLIN, 0};
  const long long us = maxWait.count();
  const timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
  (void)ppoll(&pfd, 1, &ts, nullptr);  // EINTR or a timeout: the caller progresses anyway
  return true;
}

Status UcxProvider::connect(const Topology&, int me, int peer, SegKind kind, Connection* out) {
  if (!worker_) TETHER_FAIL(TETHER_ERR_UNREACHABLE, "ucx: PE %d has no UCX worker (%s)", me, unusable_.c_str());
  if (addressLens_[static_cast<size_t>(peer)] == 0)
    TETHER_FAIL(TETHER_ERR_UNREACHABLE, "ucx: PE %d has no UCX worker (UCX failed to start there: its log says why)",
                peer);
  *out = Connection{kind == SegKind::Device ? &kUcxDeviceOps : cuda_ ? &kUcxCudaOps : &kUcxOps, this};
  return Status::ok();
}

Status UcxProvider::registerSegment(SegKind kind, const void* base, uint64_t bytes, std::vector<char>* key) {
  key->clear();
  if (!worker_ || (kind == SegKind::Device && !cuda_) || bytes == 0) return Status::ok();
  std::lock_guard<std::mutex> lock(regMu_);
  Registration& last = registered_[static_cast<int>(kind)];
  if (last.base == base && last.bytes == bytes) {  // a commit that did not change the range: same key
    *key = last.key;
    return Status::ok();
  }
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = const_cast<void*>(base);
  mp.length = bytes;
  if (kind == SegKind::Device) {  // GPU memory: tell UCX rather than have it detect the type
    mp.field_mask |= UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.memory_type = UCS_MEMORY_TYPE_CUDA;
  }
  ucp_mem_h memh = nullptr;
  ucs_status_t s = ucp_mem_map(context_, &mp, &memh);
  if (s != UCS_OK)
    TETHER_FAIL(TETHER_ERR_SYSTEM, "ucp_mem_map of the %s segment %p + %llu bytes: %s", segKindName(kind), base,
                static_cast<unsigned long long>(bytes), ucs_status_string(s));
  memhs_.push_back(memh);
  void* packed = nullptr;
  size_t packedLen = 0;
  s = ucp_rkey_pack(context_, memh, &packed, &packedLen);
  if (s != UCS_OK) TETHER_FAIL(TETHER_ERR_SYSTEM, "ucp_rkey_pack: %s", ucs_status_string(s));
  const KeyHeader h{reinterpret_cast<uint64_t>(base), bytes, ++serial_};
  key->resize(sizeof h + packedLen);
  std::memcpy(key->data(), &h, sizeof h);
  std::memcpy(key->data() + sizeof h, packed, packedLen);
  ucp_rkey_buffer_release(packed);
  last = Registration{base, bytes, *key};
  TETHER_LOG_DEBUG(LogSys::Transport, "ucx: %s segment %p + %llu bytes registered (key %zu bytes, serial %llu)",
                   segKindName(kind), base, static_cast<unsigned long long>(bytes), key->size(),
                   static_cast<unsigned long long>(h.serial));
  return Status::ok();
}

UcxProvider::~UcxProvider() {
  stop_.store(true);
  if (progressThread_.joinable()) progressThread_.join();
  if (worker_)
    TETHER_LOG_INFO(LogSys::Transport, "ucx: owner-executed operations: served %llu for peers, sent %llu",
                    static_cast<unsigned long long>(owner_.served()),
                    static_cast<unsigned long long>(owner_.sent()));
  for (auto& p : peers_) {
    for (ucp_rkey_h r : p->rkey)
      if (r) ucp_rkey_destroy(r);
  }
  for (ucp_rkey_h r : retired_) ucp_rkey_destroy(r);
  // Endpoints are closed by force: finalize's closing barrier has completed every operation between the PEs.
  ucp_request_param_t cp{};
  cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  cp.flags = UCP_EP_CLOSE_FLAG_FORCE;
  for (auto& p : peers_) {
    if (!p->ep) continue;
    ucs_status_ptr_t r = ucp_ep_close_nbx(p->ep, &cp);
    if (UCS_PTR_IS_PTR(r)) {
      Deadline d(std::min(opts_.timeoutSeconds, 5.0));
      while (ucp_request_check_status(r) == UCS_INPROGRESS && !d.expired()) ucp_worker_progress(worker_);
      ucp_request_free(r);
    }
  }
  for (ucp_mem_h m : memhs_) ucp_mem_unmap(context_, m);
  if (myAddress_) ucp_worker_release_address(worker_, myAddress_);
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
}

// ---- operations ---------------------------------------------------------------------------------------------------

Status UcxProvider::failure(int pe, ucs_status_t s, const char* what) const {
  if (pe >= 0 && (peerGone(s) || peers_[static_cast<size_t>(pe)]->failed.load()))
    TETHER_FAIL(TETHER_ERR_PEER_LOST, "ucx %s with PE %d failed: %s (PE %d exited or its connection broke)", what, pe,
                ucs_status_string(s), pe);
  if (pe < 0 && peerGone(s)) {
    const std::string gone = failedPeers();
    TETHER_FAIL(TETHER_ERR_PEER_LOST, "ucx %s failed: %s (%s)", what, ucs_status_string(s),
                gone.empty() ? "a PE exited or its connection broke" : gone.c_str());
  }
  if (pe < 0) TETHER_FAIL(TETHER_ERR_SYSTEM, "ucx %s failed: %s", what, ucs_status_string(s));
  TETHER_FAIL(TETHER_ERR_SYSTEM, "ucx %s with PE %d failed: %s", what, pe, ucs_status_string(s));
}

std::string UcxProvider::failedPeers() const {
  std::string out;
  for (size_t pe = 0; pe < peers_.size(); ++pe) {
    const int f = peers_[pe]->failed.load();
    if (!f) continue;
    out += (out.empty() ? "lost: PE " : ", PE ") + std::to_string(pe) + " (" +
           ucs_status_string(static_cast<ucs_status_t>(f)) + ")";
  }
  return out;
}

Status UcxProvider::wait(ucs_status_ptr_t r, int pe, const char* what, ucs_status_t alsoOk) {
  if (r == nullptr) return Status::ok();
  if (UCS_PTR_IS_ERR(r)) return failure(pe, UCS_PTR_STATUS(r), what);
  SpinWait spin(opts_.timeoutSeconds);
  ucs_status_t s;
  while ((s = ucp_request_check_status(r)) == UCS_INPROGRESS) {
    if (userProgress() != 0) continue;
    if (!spin.next()) {
      ucp_request_cancel(worker_, r);
      ucp_request_free(r);
      const std::string gone = failedPeers();
      if (pe >= 0)
        TETHER_FAIL(TETHER_ERR_TIMEOUT, "ucx %s with PE %d: no completion after %.1f s (TETHER_TIMEOUT); is PE %d "
                    "alive and calling tether (or is TETHER_UCX_PROGRESS_US 0 while it computes)?%s%s",
                    what, pe, opts_.timeoutSeconds, pe, gone.empty() ? "" : " ", gone.c_str());
      TETHER_FAIL(TETHER_ERR_TIMEOUT, "ucx %s: no completion after %.1f s (TETHER_TIMEOUT)%s%s", what,
                  opts_.timeoutSeconds, gone.empty() ? "" : "; ", gone.c_str());
    }
  }
  ucp_request_free(r);
  if (s != UCS_OK && s != alsoOk) return failure(pe, s, what);
  return Status::ok();
}

Status UcxProvider::detach(ucs_status_ptr_t r, int pe, const char* what) {
  if (UCS_PTR_IS_ERR(r)) return failure(pe, UCS_PTR_STATUS(r), what);
  if (r) ucp_request_free(r);  // released when done; completion (and any error) shows at quiet
  return Status::ok();
}

// A local source/destination: host memory always; GPU memory only with a CUDA-aware UCX (then *prm names the memory
// type, sparing UCX its detection).
Status UcxProvider::localBuffer(const void* buf, const char* what, int pe, ucp_request_param_t* prm) const {
  if (!opts_.gpu || !opts_.gpu->isDeviceMemory(buf)) return Status::ok();
  if (!cuda_)
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "ucx %s with PE %d: the local buffer %p is GPU memory and %s (or use a host "
                "buffer)", what, pe, buf, kUcxNoCudaFix);
  prm->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  prm->memory_type = UCS_MEMORY_TYPE_CUDA;
  return Status::ok();
}

Status UcxProvider::target(int pe, const RemoteAddr& a, size_t n, const char* what, Target* t) {
  if (!a.key || a.key->size < sizeof(KeyHeader))
    TETHER_FAIL(TETHER_ERR_INTERNAL, "ucx %s with PE %d: no UCX key for its %s segment (not registered)", what, pe,
                segKindName(a.kind));
  KeyHeader h;
  std::memcpy(&h, a.key->data, sizeof h);
  if (a.offset > h.bytes || n > h.bytes - a.offset)
    TETHER_FAIL(TETHER_ERR_INTERNAL, "ucx %s with PE %d: offset 0x%llx + %zu bytes outside its registered %s segment "
                "(%llu bytes)", what, pe, static_cast<unsigned long long>(a.offset), n, segKindName(a.kind),
                static_cast<unsigned long long>(h.bytes));
  Peer& p = *peers_[static_cast<size_t>(pe)];
  const int k = static_cast<int>(a.kind);
  std::lock_guard<std::mutex> lock(p.mu);
  TETHER_TRY(endpoint(p, pe, what));
  if (p.serial[k] != h.serial || !p.rkey[k]) {
    if (p.rkey[k]) retired_.push_back(p.rkey[k]);  // an nbi operation may still use it
    p.rkey[k] = nullptr;
    ucs_status_t s = ucp_ep_rkey_unpack(p.ep, a.key->data + sizeof h, &p.rkey[k]);
    if (s != UCS_OK) return failure(pe, s, "remote key unpack");
    p.serial[k] = h.serial;
  }
  *t = Target{p.ep, h.base + a.offset, p.rkey[k]};
  return Status::ok();
}

Status UcxProvider::endpoint(Peer& p, int pe, const char* what) {
  if (const int f = p.failed.load()) return failure(pe, static_cast<ucs_status_t>(f), what);
  if (p.ep) return Status::ok();
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(addresses_.data() + static_cast<size_t>(pe) * addressStride_);
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = onEndpointError;
  ep.err_handler.arg = &p;
  ucs_status_t s = ucp_ep_create(worker_, &ep, &p.ep);
  if (s != UCS_OK) {
    p.ep = nullptr;
    return failure(pe, s, "endpoint creation");
  }
  TETHER_LOG_DEBUG(LogSys::Transport, "ucx: endpoint to PE %d made on first use", pe);
  return Status::ok();
}

Status UcxProvider::endpointTo(int pe, const char* what, ucp_ep_h* ep) {
  Peer& p = *peers_[static_cast<size_t>(pe)];
  std::lock_guard<std::mutex> lock(p.mu);
  TETHER_TRY(endpoint(p, pe, what));
  *ep = p.ep;
  return Status::ok();
}

Status UcxProvider::put(int pe, const RemoteAddr& dst, const void* src, size_t n, bool nbi, bool local) {
  ucp_request_param_t prm{};
  TETHER_TRY(localBuffer(src, "put", pe, &prm));
  Target t;
  TETHER_TRY(target(pe, dst, n, "put", &t));
  ucs_status_ptr_t r = ucp_put_nbx(t.ep, src, n, t.addr, t.rkey, &prm);
  if (nbi || local) flush_.issued(pe);  // quiet, and the next signal to pe, must flush it
  if (nbi) return detach(r, pe, "put_nbi");
  TETHER_TRY(wait(r, pe, "put"));
  if (local) return Status::ok();  // the request's completion: src reusable (the remote side at the next flush)
  ucp_request_param_t flush{};
  return wait(ucp_ep_flush_nbx(t.ep, &flush), pe, "put (remote completion)");
}

Status UcxProvider::get(int pe, void* dst, const RemoteAddr& src, size_t n, bool nbi) {
  ucp_request_param_t prm{};
  TETHER_TRY(localBuffer(dst, "get", pe, &prm));
  Target t;
  TETHER_TRY(target(pe, src, n, "get", &t));
  ucs_status_ptr_t r = ucp_get_nbx(t.ep, dst, n, t.addr, t.rkey, &prm);
  if (!nbi) return wait(r, pe, "get");
  flush_.issued(-1);
  return detach(r, pe, "get_nbi");
}

Status UcxProvider::preconnect(int pe) {
  if (pe < 0 || static_cast<size_t>(pe) >= peers_.size() || !peers_[static_cast<size_t>(pe)]) return Status::ok();
  ucp_ep_h ep = nullptr;
  return endpointTo(pe, "endpoint (made ahead of the proxy)", &ep);
}

Status UcxProvider::getv(const GetItem* items, size_t count) {
  std::vector<std::pair<ucs_status_ptr_t, int>> posted;  // in flight (request, PE)
  posted.reserve(count);
  Status err;
  for (size_t i = 0; i < count && err.isOk(); ++i) {
    const GetItem& g = items[i];
    ucp_request_param_t prm{};
    Target t;
    err = localBuffer(g.dst, "get", g.pe, &prm);
    if (err.isOk()) err = target(g.pe, g.src, g.n, "get", &t);
    if (!err.isOk()) break;
    ucs_status_ptr_t r = ucp_get_nbx(t.ep, g.dst, g.n, t.addr, t.rkey, &prm);
    if (UCS_PTR_IS_ERR(r)) err = failure(g.pe, UCS_PTR_STATUS(r), "get");
    else if (r) posted.emplace_back(r, g.pe);
  }
  for (const auto& [r, pe] : posted) {  // the first wait's progress completes the others too
    const Status s = wait(r, pe, "get");
    if (err.isOk()) err = s;
  }
  return err;
}

Status UcxProvider::amo(int pe, const RemoteAddr& dst, const AmoArgs& a, uint64_t* fetched) {
  ucp_atomic_op_t op = UCP_ATOMIC_OP_ADD;
  uint64_t operand = a.value, reply = 0;
  switch (a.op) {
    case TETHER_AMO_FETCH: operand = 0; break;  // fetch = add 0
    case TETHER_AMO_SET:
    case TETHER_AMO_SWAP: op = UCP_ATOMIC_OP_SWAP; break;
    case TETHER_AMO_COMPARE_SWAP:  // UCP: compare with `buffer`, write the reply buffer's value, reply = old
      op = UCP_ATOMIC_OP_CSWAP;
      operand = a.cond;
      reply = a.value;
      break;
    case TETHER_AMO_INC:
    case TETHER_AMO_FETCH_INC: operand = 1; break;
    case TETHER_AMO_ADD:
    case TETHER_AMO_FETCH_ADD: break;
    case TETHER_AMO_AND:
    case TETHER_AMO_FETCH_AND: op = UCP_ATOMIC_OP_AND; break;
    case TETHER_AMO_OR:
    case TETHER_AMO_FETCH_OR: op = UCP_ATOMIC_OP_OR; break;
    case TETHER_AMO_XOR:
    case TETHER_AMO_FETCH_XOR: op = UCP_ATOMIC_OP_XOR; break;
    case TETHER_AMO_COUNT:
    case TETHER_AMO_MAX_ENUM_:
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "ucx atomic with PE %d: unknown operation %d", pe, static_cast<int>(a.op));
  }
  if (a.width != 4 && a.width != 8)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "ucx atomic with PE %d: %u-byte words (4 or 8)", pe, a.width);
  if (ownerExecuted(dst.kind)) {
    OwnerOp o;
    o.kind = dst.kind;
    o.offset = dst.offset;
    o.amo = a;
    return ownerExecute(pe, dst, o, fetched, "atomic");
  }
  Target t;
  TETHER_TRY(target(pe, dst, a.width, "atomic", &t));
  // Operands in the word's width (little-endian: the low bytes of the 64-bit values).
  uint32_t operand32 = static_cast<uint32_t>(operand), reply32 = static_cast<uint32_t>(reply);
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  prm.datatype = ucp_dt_make_contig(a.width);
  prm.reply_buffer = a.width == 4 ? static_cast<void*>(&reply32) : static_cast<void*>(&reply);
  const void* buf = a.width == 4 ? static_cast<const void*>(&operand32) : static_cast<const void*>(&operand);
  TETHER_TRY(wait(ucp_atomic_op_nbx(t.ep, op, buf, 1, t.addr, t.rkey, &prm), pe, "atomic"));
  if (fetched) *fetched = a.width == 4 ? reply32 : reply;
  return Status::ok();
}

Status UcxProvider::signal(int pe, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op) {
  if (ownerExecuted(sig.kind)) return ownerExecute(pe, sig, signalOp(sig, value, op), nullptr, "signal");
  TETHER_TRY(fence());  // earlier puts (nbi included) to this PE land before the signal word changes
  const AmoArgs a{op == TETHER_SIGNAL_SET ? TETHER_AMO_SET : TETHER_AMO_ADD, 8, value, 0};
  return amo(pe, sig, a, nullptr).withContext("signal");
}

// ---- owner-executed atomics and signals ----------------------------------------------------------------------------

Status UcxProvider::signalPost(int pe, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op) {
  if (!ownerExecuted(sig.kind)) return signal(pe, sig, value, op);
  Target t;
  TETHER_TRY(target(pe, sig, 8, "signal", &t));
  const ucs_status_t sent = owner_.post(t.ep, signalOp(sig, value, op));
  return sent == UCS_OK ? Status::ok() : failure(pe, sent, "signal");
}

Status UcxProvider::putFlagged(int pe, const RemoteAddr& dst, const void* src, size_t n) {
  if (dst.kind != SegKind::Host || n < sizeof(uint64_t) || n > kFlaggedPutMax || dst.offset % sizeof(uint64_t))
    TETHER_FAIL(TETHER_ERR_INTERNAL, "ucx flagged put to PE %d: %zu bytes at offset 0x%llx of its %s segment (HOST, "
                "8 .. %zu bytes, 8-aligned)", pe, n, static_cast<unsigned long long>(dst.offset),
                segKindName(dst.kind), kFlaggedPutMax);
  Target t;  // the endpoint (and the bounds check against the owner's registered range)
  TETHER_TRY(target(pe, dst, n, "flagged put", &t));
  const FlaggedPut h{dst.offset, me_, 0};
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = UCP_AM_SEND_FLAG_EAGER;  // the handler gets the bytes at once (no rendezvous to serve)
  return wait(ucp_am_send_nbx(t.ep, kAmFlaggedPut, &h, sizeof h, src, n, &prm), pe, "flagged put");
}

// Runs in whichever thread progresses the worker: the bytes after the flag word, then the flag (release), into this
// PE's registered HOST segment.
ucs_status_t UcxProvider::onFlaggedPut(void* arg, const void* header, size_t headerLen, void* data, size_t len,
                                       const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxProvider*>(arg);
  FlaggedPut h{};
  if (headerLen == sizeof h) std::memcpy(&h, header, sizeof h);
  char* base = nullptr;
  uint64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(self->regMu_);
    const Registration& r = self->registered_[static_cast<int>(SegKind::Host)];
    base = static_cast<char*>(const_cast<void*>(r.base));
    bytes = r.bytes;
  }
  if (headerLen != sizeof h || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || len < sizeof(uint64_t) || !base ||
      h.offset % sizeof(uint64_t) || h.offset > bytes || len > bytes - h.offset) {
    TETHER_LOG_ERROR(LogSys::Transport, "ucx: malformed flagged put from PE %d (%zu bytes at offset 0x%llx, HOST "
                     "segment %llu bytes) dropped", h.from, len, static_cast<unsigned long long>(h.offset),
                     static_cast<unsigned long long>(bytes));
    return UCS_OK;
  }
  char* at = base + h.offset;
  std::memcpy(at + sizeof(uint64_t), static_cast<const char*>(data) + sizeof(uint64_t), len - sizeof(uint64_t));
  uint64_t flag;
  std::memcpy(&flag, data, sizeof flag);
  __atomic_store_n(reinterpret_cast<uint64_t*>(at), flag, __ATOMIC_RELEASE);
  return UCS_OK;
}

Status UcxProvider::ownerExecute(int pe, const RemoteAddr& at, const OwnerOp& op, uint64_t* fetched,
                                 const char* what) {
  const unsigned width = op.signal ? 8u : op.amo.width;
  Target t;  // the endpoint (and the bounds check against the owner's registered range)
  TETHER_TRY(target(pe, at, width, what, &t));
  if (op.signal && flush_.peerFlushNeeded(pe)) {  // remote completion of the earlier nbi puts to this PE
    const uint64_t mark = flush_.mark();
    ucp_request_param_t flush{};
    TETHER_TRY(wait(ucp_ep_flush_nbx(t.ep, &flush), pe, "signal (completing earlier puts)"));
    flush_.peerFlushed(pe, mark);
  }
  UcxOwnerOps::Call call(owner_, op);  // registered until it returns (a late reply is dropped)
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
  TETHER_TRY(wait(ucp_am_send_nbx(t.ep, kAmOwnerRequest, nullptr, 0, &call.request(), sizeof(OwnerRequest), &prm),
                  pe, what));
  SpinWait spin(opts_.timeoutSeconds);
  Peer& peer = *peers_[static_cast<size_t>(pe)];
  while (!call.done()) {
    if (userProgress() != 0) continue;
    if (const int f = peer.failed.load()) return failure(pe, static_cast<ucs_status_t>(f), what);
    if (!spin.next())
      TETHER_FAIL(TETHER_ERR_TIMEOUT, "ucx %s with PE %d (executed by its owner): no reply after %.1f s "
                  "(TETHER_TIMEOUT); is PE %d alive and calling tether (or is TETHER_UCX_PROGRESS_US 0 while it "
                  "computes)?", what, pe, opts_.timeoutSeconds, pe);
  }
  return call.result(pe, what, fetched);
}

Status UcxProvider::quiet() {
  if (!worker_) return Status::ok();
  const uint64_t mark = flush_.mark();  // operations posted before the flush begins
  if (!flush_.workerFlushNeeded(mark)) return Status::ok();
  ucp_request_param_t prm{};
  TETHER_TRY(wait(ucp_worker_flush_nbx(worker_, &prm), -1, "quiet (worker flush)"));
  flush_.workerFlushed(mark);
  return Status::ok();
}

Status UcxProvider::fence() {
  if (!worker_) return Status::ok();
  ucs_status_t s = ucp_worker_fence(worker_);
  if (s != UCS_OK) return failure(-1, s, "fence");
  return Status::ok();
}

}  // namespace

std::unique_ptr<Provider> makeUcxProvider(const UcxOptions& opts) {
  return std::unique_ptr<Provider>(new UcxProvider(opts));
}

}  // namespace tether
