// Two-sided messaging over the one-sided verbs: protocol and contracts in core/messaging.h.
#include "core/messaging.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

#include "base/clock.h"
#include "base/log.h"
#include "core/collectives.h"
#include "core/op.h"
#include "core/sibling_paths.h"
#include "core/stream.h"
#include "core/stream_ops.h"
#include "core/world.h"
#include "datatype/canonical.h"
#include "datatype/gpu_pack.h"
#include "datatype/handle.h"
#include "gpu/gpu.h"
#include "tether/datatype.h"

namespace tether {

namespace {

enum SlotKind : uint32_t { kEager = 1, kRts = 2, kCts = 3, kData = 4, kCancel = 5, kRtsDirect = 6, kSkip = 7 };
// How the receiver of a kRtsDirect reads the send buffer.
enum DirectHow : uint64_t { kViaGet = 1, kViaCma = 2, kViaIpc = 3 };
// An RTS's `how`: kTransportPayload, the sender can move the send buffer by the transport's sendData (host memory; GPU
// memory through a host copy of its own, startByData).
// A CTS's `how`: kByData, the receiver expects the bytes by the transport's sendData (TransportOps::expectData), not
// as DATA slots; with kByDataToGpu its receive buffer is GPU memory (the sender passes sendData's toGpu).
constexpr uint64_t kTransportPayload = 1, kByData = 1, kByDataToGpu = 2;
// A send's claim word (in the sender's stream area): kClaimOpen until the receiver claims the read or the sender
// withdraws the message, whichever comes first (compare-and-swap on the sender's mapped word); the receiver stores
// kClaimDone once the bytes are in its buffer (the sender's send completes when a progress pass sees it: no ring slot,
// so it never waits for ring credit, nor for the receiver's next messaging call).
constexpr uint64_t kClaimOpen = 0, kClaimRead = 1, kClaimWithdrawn = 2, kClaimDone = 3;
constexpr size_t kAgreeBytes = 128;  // the region's first bytes: 6 words in, 6 words out of the attribute check
constexpr uint32_t kStreamWords = 4096;  // stream-area word indices per PE (trigger, done, group and claim words; 64 KiB)
constexpr uint32_t kNoWord = UINT32_MAX;
// Rendezvous DATA fragments through the ring to another host span slots up to this (or TETHER_MSG_REMOTE_EAGER, if
// less): over TCP 64 KiB fragments took 256-512 KiB messages 1.2-1.3x longer than 32 KiB ones, 1-4 MiB level
// (bench/results/cpu-2core-vm/msg_remote_span_ab.txt).
constexpr size_t kSpanFragmentMax = size_t{32} << 10;
constexpr size_t kStageMax = 1024;  // host payloads up to this go with their head in one put (copied together first)
// The progress thread's idle policy while only persistent requests are pending and none has a start waiting behind
// its round in flight (threadMain): SpinWait's back-off (spin, then yield) for kIdleNs after the last pass that moved
// anything, then one pass per kIdleSleep (a host call's notify ends the sleep early).
constexpr uint64_t kIdleNs = 200000;
constexpr auto kIdleSleep = std::chrono::microseconds(20);

size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

// n values of T, held inline up to N (a wait on a few requests allocates nothing), each starting as v.
template <class T, size_t N>
class SmallArray {
 public:
  SmallArray(size_t n, const T& v) : p_(n <= N ? inline_ : (heap_.resize(n), heap_.data())) {
    for (size_t i = 0; i < n; ++i) p_[i] = v;
  }
  SmallArray(const SmallArray&) = delete;
  SmallArray& operator=(const SmallArray&) = delete;
  T& operator[](size_t i) { return p_[i]; }

 private:
  T inline_[N];
  std::vector<T> heap_;
  T* p_;  // inline_ or heap_'s storage
};

bool fits(int want, int have) { return want < 0 || want == have; }  // TETHER_ANY_PE / TETHER_ANY_TAG are -1

// How an error names request id: reqs[i] of a list, or (i == SIZE_MAX) the call's one request.
std::string reqName(size_t i, uint64_t id) {
  return i == SIZE_MAX ? strprintf("request %llu", static_cast<unsigned long long>(id))
                       : strprintf("reqs[%zu] = %llu", i, static_cast<unsigned long long>(id));
}

}  // namespace

// The first 64 bytes of a slot. seq is written last (the put-with-signal's signal); the rest arrives with the payload.
struct Messaging::SlotHead {
  uint64_t seq;
  uint32_t kind;
  int32_t tag;
  uint64_t bytes;  // EAGER: payload; RTS: message; CTS: allowed; DATA: fragment
  uint64_t a;      // RTS, RTS_DIRECT, CTS: the sender's request id; DATA, CANCEL: the receiver's request id
  uint64_t b;      // CTS: the receiver's request id; DATA: offset in the message; RTS_DIRECT: the send buffer
                   //   (kViaCma, kViaIpc: its address in the sender; kViaGet: its offset in the segment named by
                   //   `how`). A kViaIpc from another PE carries the buffer's GpuIpcRef as its payload.
  uint64_t c;      // RTS_DIRECT: the sender's claim word (offset in the region); EAGER, DATA, SKIP: the slots it
                   //   takes (a spanning EAGER's or DATA's payload runs on through the next slots' memory; 0 reads
                   //   as 1)
  uint64_t how;    // RTS_DIRECT: DirectHow, and for kViaGet the SegKind << 8; RTS: kTransportPayload; CTS: kByData..
  uint32_t pid;    // RTS_DIRECT: the sender's process id (kViaCma)
  uint32_t ack;    // every slot: the low 32 bits of how many of the receiver's slots to the writer it has consumed
};

// A persistent request's rounds (tether_send_init / tether_recv_init). Its word index, kept for its life, has a start
// word (triggers_) and a done word (dones_), both base + rounds: round k (k = 1, 2, ...) starts once the start word
// reaches base + k (stored by the host or a kernel, added to by a stream) and is complete once the done word does.
// Generations only grow: base is a fresh one, and gen_ moves past the start word's value when the request is freed.
struct Messaging::Persist {
  uint32_t word = kNoWord;
  uint64_t base = 0;
  uint64_t started = 0, completed = 0, reported = 0;  // rounds: started by the engine, completed, reported by wait/test
  bool watched = false;  // in watch_: progress polls its start word
  bool pick = false;     // checkStarts' mark (a request listed twice)
  Status failure;        // the first failed round not reported yet
  tether_msg_status_t last{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};  // the last completed round's
};

// What a wait or test saw of one request at its first look (persistent requests).
struct Messaging::Look {
  bool taken = false;
  bool inactive = false;  // no round started and unreported: nothing to wait for (waitany skips it)
  uint64_t rounds = 0;    // the rounds started by then: the wait is over once they are complete
};

struct Messaging::Req {
  uint64_t id = 0;
  bool send = false;
  int pe = 0;    // send: destination; receive: wanted source (or TETHER_ANY_PE)
  int tag = 0;   // send: tag; receive: wanted tag (or TETHER_ANY_TAG)
  const void* src = nullptr;
  void* dst = nullptr;
  size_t cap = 0;  // send: message bytes; receive: buffer bytes
  bool gpu = false;
  bool done = false;
  bool abandoned = false;  // its blocking call failed and returned: its buffer is no longer touched (withdraw)
  Status result;
  int fromPe = 0, fromTag = 0;  // receive: who matched
  size_t msgBytes = 0;          // receive: the message's length
  size_t allowed = 0;           // rendezvous: bytes that move (min of message and buffer)
  size_t moved = 0;             // rendezvous: bytes moved so far
  // Stream model (words in the region's stream area; kNoWord = none).
  bool streamed = false;        // counted in streamPending_
  bool armed = false;           // in armed_: a send not started yet, or started behind one that is not
  bool posted = false;          // a prepared send whose start was requested (post, stream post or descriptor)
  uint32_t trig = kNoWord, doneWord = kNoWord;
  uint64_t trigGen = 0, doneGen = 0;
  std::unique_ptr<Typed> typed;  // a typed message: the buffer above is typed->packed
  std::vector<uint32_t> groups;  // group words (waitall on a stream) this request adds 1 to when it completes
  uint32_t claim = kNoWord;      // a direct rendezvous send: its claim word (an index of the stream area)
  // A request whose bytes the transport moves (a receive expecting them by sendData, a send by sendData): the word
  // the transport sets (kNoWord unless r is in landings_; freed when the bytes moved or the expectation was cancelled).
  uint32_t landing = kNoWord;
  // A send by the transport from GPU memory: the bytes copied to host memory first (stageSend), since a network
  // transport moves host bytes faster than it stages GPU memory itself: into a pinned stage of hostStages_, else (no
  // pinned memory to be had) into host memory of r's own; given back when the transport is done with them (unstage).
  GpuStages::Stage* hostStage = nullptr;
  std::unique_ptr<char[]> bounce;
  // A send by the transport in pieces (startByData: a GPU buffer for which no whole pinned stage fits, or
  // TETHER_MSG_REMOTE_PIECE_HOST): one piece on the wire at a time, in r's landing word; for a GPU buffer the next
  // piece is copied into the other of two piece buffers (two pinned stages: hostStage and nextStage, else the two
  // halves of bounce) meanwhile.
  bool pieced = false;
  uint64_t pieceRecv = 0;  // the receiver's request
  bool pieceToGpu = false;
  size_t pieceOff = 0, pieceLen = 0;  // the piece on the wire
  GpuStages::Stage* nextStage = nullptr;
  char* pieceAt = nullptr;    // GPU: the piece on the wire
  char* pieceNext = nullptr;  // GPU: the next piece
  Status pieceError;          // GPU: copying the next piece failed
  std::unique_ptr<GpuIpcRef> ipc;  // a direct send by CUDA IPC (kViaIpc) to another PE: its RTS_DIRECT's payload
  std::unique_ptr<Persist> persist;  // a persistent request (the fields above: its current or last round)
  // A receive waiting for a message: its links in the posted list (Messaging::Posted), in the order posted.
  bool inPosted = false;
  Req* prevPosted = nullptr;
  Req* nextPosted = nullptr;
};

// A typed message's side (tether_*_typed): the user's layout and the contiguous packed bytes the message carries.
// A send is packed when posted (isendTyped) or when its stream gets there (isendTypedOnStream); a receive is unpacked
// when it completes (complete), before any stream or kernel waiting for it is told. c keeps the type's canonical
// form alive (the user may free their handle at once).
// Where the packed bytes are: for a host buffer in host memory (host), shared with a stream host call that packs
// into it, so a request dropped after that call was enqueued cannot free the bytes under it; for a GPU buffer in a
// GPU stage of the room's (stages_), released with the request -- a send's request is freed only after the send has
// read the stage, a receive's after its unpack (synchronous, in complete) -- and packed / unpacked by the GPU engine
// with the room's cache of the type's device metadata (gpu: one per type, typeCaches_).
struct Messaging::Typed {
  std::shared_ptr<const dt::Canonical> c;
  dt::GpuCache* gpu = nullptr;  // the user's buffer is GPU memory
  dt::Scheme force = dt::Scheme::Auto;  // the handle's forced GPU scheme (tether_type_set_gpu_scheme) at the call
  int64_t count = 0;
  void* user = nullptr;
  size_t bytes = 0;  // packed bytes
  std::shared_ptr<std::vector<char>> host;
  GpuStages::Stage* stage = nullptr;
  bool packOnStart = false;  // a prepared send started by a kernel: packed by the progress pass that sees the start
  char* packed() const { return stage ? static_cast<char*>(stage->p) : host->data(); }
  ~Typed() {
    if (stage) stage->release();
  }
};

// The GPU engine's metadata of one type for this room: made on the type's first GPU message, freed at destroy -- never
// per message, since freeing it is a cudaFree, which waits for the whole GPU, a stream's wait for this room included.
struct Messaging::TypeCache {
  std::shared_ptr<const dt::Canonical> c;  // keeps the key alive
  dt::GpuCache gpu;
};

// An arrived EAGER or RTS that no posted receive took. Its list node is recycled (spare_), so a message that waits
// for its receive allocates nothing when it is small enough to be held here (kTinyBytes) -- the common case of a
// receiver that posts a little after its sender sends.
struct Messaging::Unexpected {
  static constexpr size_t kTinyBytes = 64;
  int src = 0;
  int tag = 0;
  bool rts = false;
  size_t bytes = 0;
  // EAGER, where its bytes are: tiny (at most kTinyBytes), else the pool at poolOff, else (the pool full) heap, in
  // host memory of its own (so the ring never stalls).
  bool inTiny = false;
  uint64_t poolOff = 0;
  std::shared_ptr<char> heap;
  alignas(16) char tiny[kTinyBytes];
  SlotHead head;     // RTS: the head as it came (a, the sender's request id; RTS_DIRECT: where to read)
  GpuIpcRef ipc;     // RTS_DIRECT by CUDA IPC: the region its payload named
};

// A slot message waiting for credit. DATA items stand for the remaining fragments of a rendezvous send.
struct Messaging::Out {
  SlotHead h;
  Req* req;  // EAGER, DATA: the send (payload from its buffer); CTS: null
};

// First-fit allocator over [0, bytes) of the pool, 64-byte granules, coalescing on free.
class Messaging::Pool {
 public:
  explicit Pool(size_t bytes) {
    if (bytes) free_[0] = bytes;
  }
  bool alloc(size_t n, uint64_t* off) {
    n = roundUp(std::max<size_t>(n, 1), 64);
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= n) {
        *off = it->first;
        const uint64_t rest = it->second - n, at = it->first + n;
        free_.erase(it);
        if (rest) free_[at] = rest;
        return true;
      }
    return false;
  }
  void release(uint64_t off, size_t n) {
    n = roundUp(std::max<size_t>(n, 1), 64);
    auto it = free_.emplace(off, n).first;
    auto nx = std::next(it);
    if (nx != free_.end() && it->first + it->second == nx->first) {
      it->second += nx->second;
      free_.erase(nx);
    }
    if (it != free_.begin()) {
      auto pv = std::prev(it);
      if (pv->first + pv->second == it->first) {
        pv->second += it->second;
        free_.erase(it);
      }
    }
  }

 private:
  std::map<uint64_t, uint64_t> free_;
};

void Messaging::Posted::push(Req& r) {
  r.inPosted = true;
  r.prevPosted = last;
  r.nextPosted = nullptr;
  (last ? last->nextPosted : first) = &r;
  last = &r;
}

void Messaging::Posted::unlink(Req& r) {
  if (!r.inPosted) return;
  (r.prevPosted ? r.prevPosted->nextPosted : first) = r.nextPosted;
  (r.nextPosted ? r.nextPosted->prevPosted : last) = r.prevPosted;
  r.inPosted = false;
  r.prevPosted = r.nextPosted = nullptr;
}

// ---- set-up ------------------------------------------------------------------------------------------------------

Messaging::Messaging(World& w, size_t eager, size_t slots, size_t unexpected)
    : w_(w),
      eager_(eager),
      slots_(slots),
      payload_(roundUp(std::max<size_t>(eager, sizeof(GpuIpcRef)), 64)),  // (an RTS_DIRECT by IPC carries one)
      slotBytes_(sizeof(SlotHead) + payload_),
      poolBytes_(roundUp(unexpected, 64)),
      n_(w.nPes()),
      me_(w.myPe()),
      pool_(new Pool(poolBytes_)),
      sent_(static_cast<size_t>(n_)),
      next_(static_cast<size_t>(n_)),
      published_(static_cast<size_t>(n_)),
      carried_(static_cast<size_t>(n_)),
      heard_(static_cast<size_t>(n_)),
      out_(static_cast<size_t>(n_)),
      byData_(static_cast<size_t>(n_)),
      byDataInFlight_(static_cast<size_t>(n_)),
      directOn_(w.config().flag("TETHER_MSG_DIRECT")),
      ipcOn_(directOn_ && w.config().flag("TETHER_MSG_IPC")),
      remoteRndvMin_(w.config().size("TETHER_MSG_REMOTE_RNDV")),
      byDataCap_(w.config().size("TETHER_MSG_REMOTE_INFLIGHT")),
      remoteEager_(spanEagerMax(w.config().size("TETHER_MSG_REMOTE_EAGER"))),
      staging_(std::max(slotBytes_, sizeof(SlotHead) + remoteEager_)),
      pinnedMax_(w.config().size("TETHER_MSG_PINNED_MAX")),
      hostStages_(size_t{64} << 10, GpuStages::Memory::PinnedHost, pinnedMax_),
      pieceBytes_(w.config().size("TETHER_MSG_REMOTE_PIECE")),
      pieceHost_(w.config().flag("TETHER_MSG_REMOTE_PIECE_HOST")) {
  static_assert(sizeof(SlotHead) == 64, "slot head is one cache line");
  armedTo_.assign(static_cast<size_t>(n_), 0);
  cmaOk_.assign(static_cast<size_t>(n_), 1);
  ipcOk_.assign(static_cast<size_t>(n_), 1);
  blocked_.assign(static_cast<size_t>(n_), 0);
}

Status Messaging::create(World& w, const char* call, const tether_msg_attr_t* attr, std::unique_ptr<Messaging>* out) {
  uint64_t v[3] = {w.config().size("TETHER_MSG_EAGER"), static_cast<uint64_t>(w.config().integer("TETHER_MSG_SLOTS")),
                   w.config().size("TETHER_MSG_UNEXPECTED")};
  if (attr) {
    if (attr->eager_bytes) v[0] = attr->eager_bytes;
    if (attr->slots) v[1] = attr->slots;
    if (attr->unexpected_bytes) v[2] = attr->unexpected_bytes;
  }
  Status local;
  if (v[0] > (uint64_t{1} << 30) || v[1] < 2 || v[1] > 65536 || v[2] > (uint64_t{1} << 40))
    local = Status(TETHER_ERR_INVALID_ARG,
                   strprintf("%s: eager_bytes %llu (at most 1 GiB), slots %llu (2 .. 65536), unexpected_bytes %llu "
                             "(at most 1 TiB)", call, static_cast<unsigned long long>(v[0]),
                             static_cast<unsigned long long>(v[1]), static_cast<unsigned long long>(v[2])));
  // Agreement: an allreduce MAX over (v, ~v) gives every PE max and min of each value; equal everywhere iff max == min.
  void* agree = nullptr;
  TETHER_TRY(w.allocate(call, TETHER_SEG_HOST, 64, kAgreeBytes, true, &agree));
  auto* words = static_cast<uint64_t*>(agree);
  for (int i = 0; i < 3; ++i) {
    words[i] = local.isOk() ? v[i] : 0;
    words[3 + i] = local.isOk() ? ~v[i] : 0;
  }
  words[6] = local.isOk() ? 0 : 1;  // some PE's values are out of range
  CollArgs a;
  a.kind = CollKind::Allreduce;
  a.dest = words + 8;
  a.src = words;
  a.count = 7;
  a.type = TETHER_UINT64;
  a.op = TETHER_RED_MAX;
  Status s = w.colls().run(call, w.teams().world(), a);
  uint64_t r[7];
  std::memcpy(r, words + 8, sizeof r);
  TETHER_TRY(w.release(call, agree));
  TETHER_TRY(s);
  TETHER_TRY(local);
  if (r[6]) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: another PE passed attributes out of range", call);
  static const char* names[] = {"eager_bytes", "slots", "unexpected_bytes"};
  for (int i = 0; i < 3; ++i)
    if (r[i] != ~r[3 + i])
      TETHER_FAIL(TETHER_ERR_MISMATCH, "%s: the PEs passed different %s (from %llu to %llu; this PE %llu)", call,
                  names[i], static_cast<unsigned long long>(~r[3 + i]), static_cast<unsigned long long>(r[i]),
                  static_cast<unsigned long long>(v[i]));
  std::unique_ptr<Messaging> m(new Messaging(w, v[0], v[1], v[2]));
  TETHER_TRY(m->setUp(call));
  TETHER_LOG_INFO(LogSys::Core, "%s: eager up to %zu bytes, %zu slots per PE pair, %zu-byte unexpected pool", call,
                  m->eager_, m->slots_, m->poolBytes_);
  *out = std::move(m);
  return Status::ok();
}

Status Messaging::setUp(const char* call) {
  const size_t n = static_cast<size_t>(n_);
  const size_t ackBytes = roundUp(n * sizeof(uint64_t), 64), inboxBytes = n * slots_ * slotBytes_;
  const size_t streamBytes = 2 * kStreamWords * sizeof(uint64_t);
  void* p = nullptr;
  TETHER_TRY(w_.allocate(call, TETHER_SEG_HOST, 64, kAgreeBytes + ackBytes + streamBytes + inboxBytes + poolBytes_,
                         true, &p));
  region_ = static_cast<char*>(p);
  acked_ = reinterpret_cast<uint64_t*>(region_ + kAgreeBytes);
  triggers_ = reinterpret_cast<uint64_t*>(region_ + kAgreeBytes + ackBytes);
  dones_ = triggers_ + kStreamWords;
  inbox_ = region_ + kAgreeBytes + ackBytes + streamBytes;
  poolBase_ = inbox_ + inboxBytes;
  for (uint32_t i = kStreamWords; i-- > 0;) freeWords_.push_back(i);
  TETHER_TRY(SiblingPaths::create(w_, call, &paths_));
  // Peers whose HOST segment this process maps (same host, load/store path): their regions are written directly.
  direct_.resize(static_cast<size_t>(n_));
  for (int pe = 0; pe < n_; ++pe) direct_[static_cast<size_t>(pe)] = static_cast<char*>(w_.ptr(region_, pe));
  // Eager sizes per destination: a PE written by one flagged put per slot message (another host) takes eager messages
  // up to remoteEager_ in consecutive slots (one network message, as UCX's own eager tag send), everyone else up to
  // eager_ in one slot.
  // Rendezvous DATA fragments through the ring: one slot's payload, or spanning slots up to kSpanFragmentMax there.
  eagerTo_.assign(static_cast<size_t>(n_), eager_);
  fragTo_.assign(static_cast<size_t>(n_), payload_);
  for (int pe = 0; pe < n_; ++pe) {
    void* ctx = nullptr;
    if (direct_[static_cast<size_t>(pe)] || !opsTo(pe, SegKind::Host, &ctx).putFlagged) continue;
    eagerTo_[static_cast<size_t>(pe)] = std::max(eager_, remoteEager_);
    fragTo_[static_cast<size_t>(pe)] = std::max(payload_, std::min(remoteEager_, kSpanFragmentMax));
  }
  return Status::ok();
}

// TETHER_MSG_REMOTE_EAGER clamped to what one flagged put carries (head + payload) and to half a ring, so a spanning
// message always fits (after a SKIP to the ring's start) and leaves room for the control slots behind it.
size_t Messaging::spanEagerMax(size_t want) const {
  const size_t ring = slots_ / 2 * slotBytes_ - sizeof(SlotHead);
  return std::min({want, kFlaggedPutMax - sizeof(SlotHead), ring});
}

uint64_t Messaging::spanOf(size_t bytes) const {
  return std::max<uint64_t>(1, (bytes + sizeof(SlotHead) + slotBytes_ - 1) / slotBytes_);
}

Messaging::~Messaging() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status Messaging::destroy(const char* call) {
  size_t pending = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reqs_.forEach([&](const Req& r) {
      pending += (r.persist ? active(r) : !r.abandoned) ? 1 : 0;  // (inactive persistent requests go quietly)
    });
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  paths_.reset();  // closes this PE's CUDA IPC mappings of peers' buffers: after the barrier the peers may free them
  if (engineStream_) {
    StreamOps* so = nullptr;
    if (w_.streams().ops(&so).isOk()) (void)so->destroyStream(engineStream_);
    engineStream_ = nullptr;
  }
  TETHER_TRY(w_.barrier(call, true));  // nobody writes into a region after this
  TETHER_TRY(w_.release(call, region_));
  region_ = nullptr;
  if (pending)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %zu requests were still pending on PE %d (dropped; wait for every "
                "request, persistent ones included, before tether_msg_finalize)", call, pending, me_);
  return Status::ok();
}

char* Messaging::slot(int src, uint64_t index) const {
  return inbox_ + (static_cast<size_t>(src) * slots_ + index % slots_) * slotBytes_;
}

bool Messaging::isGpu(const void* p) const { return p && w_.gpu() && w_.gpu()->isDeviceMemory(p); }

// ---- posting -----------------------------------------------------------------------------------------------------

Messaging::Req& Messaging::newReq(bool send, int pe, int tag, void* buf, size_t bytes, bool gpu, uint64_t* id) {
  Req& r = reqs_.make();  // recycled storage: no allocation once warm
  r.send = send;
  r.pe = pe;
  r.tag = tag;
  if (send) r.src = buf;
  else r.dst = buf;
  r.cap = bytes;
  r.gpu = gpu;
  *id = r.id;
  return r;
}

Status Messaging::checkSend(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) const {
  if (!req) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req is NULL", call);
  *req = 0;
  TETHER_TRY(w_.checkPe(call, pe));
  if (tag < 0) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: tag %d is negative (tags are 0 .. TETHER_TAG_MAX)", call, tag);
  if (!buf && bytes) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: buf is NULL with %zu bytes", call, bytes);
  return Status::ok();
}

Status Messaging::isend(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) {
  TETHER_TRY(checkSend(call, buf, bytes, pe, tag, req));
  const bool gpu = isGpu(buf);
  if (gpu) TETHER_TRY(w_.gpu()->settleDefaultStream().withContext(call));  // msg.h: the legacy stream's work lands
  return postSend(call, buf, bytes, pe, tag, gpu, nullptr, req);
}

Status Messaging::postSend(const char* call, const void* buf, size_t bytes, int pe, int tag, bool gpu,
                           std::unique_ptr<Typed> typed, uint64_t* req) {
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(threadError_);
  Req& r = newReq(true, pe, tag, const_cast<void*>(buf), bytes, gpu, req);
  r.typed = std::move(typed);
  enqueueSend(r);
  if (r.armed) return Status::ok();
  bool did = false;
  return push(call, pe, &did);  // an eager send with credit completes here
}

void Messaging::enqueueSend(Req& r) {
  if (armedTo_[static_cast<size_t>(r.pe)])  // behind a prepared send to pe that has not started: keep the order
    arm(r);
  else
    queueSend(r);
}

void Messaging::arm(Req& r) {
  r.armed = true;
  armed_.push_back(&r);
  ++armedTo_[static_cast<size_t>(r.pe)];
}

void Messaging::queueSend(Req& r) {
  Out o{};
  o.h.kind = r.cap <= eagerTo_[static_cast<size_t>(r.pe)] ? kEager : kRts;
  o.h.tag = r.tag;
  o.h.bytes = r.cap;
  o.h.a = r.id;
  o.req = &r;
  if (o.h.kind == kRts) {
    o.h.how = transportTakes(r.pe, false) ? kTransportPayload : 0;  // a GPU buffer is staged (startByData)
    offerDirect(r, &o.h);
  }
  out_[static_cast<size_t>(r.pe)].push_back(o);
}

// A rendezvous send to a PE of this host whose ring this process maps: the receiver may read the buffer itself
// (RTS_DIRECT), through World::get when the buffer is in the symmetric HOST or DEVICE heap, with process_vm_readv
// from other host memory (STATIC program data included), by CUDA IPC from other GPU memory (TETHER_MSG_IPC;
// exportIpc). A claim word decides between the receiver's read and a withdrawal.
void Messaging::offerDirect(Req& r, SlotHead* h) {
  // (No word free: the ring path.)
  if (!directOn_ || !direct_[static_cast<size_t>(r.pe)] || freeWords_.empty()) return;
  SymRef ref;
  uint64_t how = 0;
  // The HOST heap test is inline and builds no error message (a private buffer, the common case, fails it); the full
  // check only for GPU buffers, whose alternative is the ring.
  if (w_.heap().inHostHeap(r.src, r.cap, &ref) ||
      (r.gpu && w_.checkSymmetric("tether_isend", "buf", r.src, r.cap, &ref).isOk()))
    how = kViaGet | static_cast<uint64_t>(ref.kind) << 8;
  else if (!r.gpu)
    how = kViaCma;
  else if (ipcOn_ && exportIpc(r))
    how = kViaIpc;
  if (!how) return;
  r.claim = freeWords_.back();
  freeWords_.pop_back();
  __atomic_store_n(triggers_ + r.claim, kClaimOpen, __ATOMIC_RELEASE);
  h->kind = kRtsDirect;
  h->b = (how & 0xff) == kViaGet ? ref.offset : reinterpret_cast<uint64_t>(r.src);
  h->c = static_cast<uint64_t>(reinterpret_cast<char*>(triggers_ + r.claim) - region_);
  h->how = how;
  h->pid = static_cast<uint32_t>(getpid());
  directs_.push_back(&r);
}

// A private GPU send buffer offered by CUDA IPC: r.ipc names its region for the receiver, which opens it (a mapping it
// caches) and copies from it. A self-send needs none: the receiver is this World and copies from the address
// (cudaIpcOpenMemHandle refuses a handle of its own process). False when the buffer cannot be exported (managed or
// pool memory, ...; logged once per reason): the ring carries the message.
bool Messaging::exportIpc(Req& r) {
  if (r.pe == me_) return true;
  std::unique_ptr<GpuIpcRef> ref(new GpuIpcRef());
  const Status s = paths_->gpu()->exportRegion(r.src, r.cap, ref.get());
  if (!s.isOk()) {
    if (ipcRefusals_.insert(s.message()).second)
      TETHER_LOG_INFO(LogSys::Core, "PE %d: rendezvous sends from such GPU buffers go through the ring (%s)", me_,
                      s.message().c_str());
    return false;
  }
  r.ipc = std::move(ref);
  return true;
}

// Sends whose receiver stored kClaimDone into their claim word are complete.
void Messaging::pollDirect(bool* did) {
  for (auto it = directs_.begin(); it != directs_.end();) {
    Req& r = **it;
    if (r.done || __atomic_load_n(triggers_ + r.claim, __ATOMIC_ACQUIRE) != kClaimDone) {
      ++it;
      continue;
    }
    it = directs_.erase(it);
    complete(r, Status::ok());
    *did = true;
  }
}

// ---- stream model ------------------------------------------------------------------------------------------------

Status Messaging::takeWord(const char* call, uint32_t* index) {
  if (freeWords_.empty())
    TETHER_FAIL(TETHER_ERR_NO_MEMORY, "%s: the %u stream-area words of PE %d are all in use (stream-ordered, prepared "
                "and persistent requests and direct sends take them); complete some with tether_msg_wait/test, or free "
                "persistent ones, first", call, kStreamWords, me_);
  *index = freeWords_.back();
  freeWords_.pop_back();
  return Status::ok();
}

void Messaging::releaseWords(Req& r) {
  if (r.trig != kNoWord) freeWords_.push_back(r.trig);
  if (r.landing != kNoWord) awaitLanding(r);  // dropped while its bytes may still come
  if (r.claim != kNoWord) {
    freeWords_.push_back(r.claim);
    directs_.remove(&r);
  }
  r.claim = kNoWord;
  if (r.doneWord != kNoWord) freeWords_.push_back(r.doneWord);
  r.trig = r.doneWord = kNoWord;
  if (r.armed) {
    armed_.remove(&r);
    --armedTo_[static_cast<size_t>(r.pe)];
  }
  if (r.persist) {
    Persist& p = *r.persist;
    if (p.word != kNoWord) {  // later users of the word take generations above what it held
      gen_ = std::max(gen_, p.base + startedRounds(r) + 1);
      freeWords_.push_back(p.word);
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
    if (blocked_[pe] || (r.trig != kNoWord && __atomic_load_n(triggers_ + r.trig, __ATOMIC_ACQUIRE) < r.trigGen)) {
      blocked_[pe] = 1;  // later sends to pe wait for this one (sends to one PE go in the order they were made)
      ++it;
      continue;
    }
    it = armed_.erase(it);
    r.armed = false;
    --armedTo_[pe];
    if (r.trig != kNoWord) freeWords_.push_back(r.trig);  // the start was seen: free for reuse
    r.trig = kNoWord;
    *did = true;
    if (r.typed && r.typed->packOnStart) {  // a kernel started it: its stores are visible (msg_send's release)
      r.typed->packOnStart = false;
      const Status ps = engineCopy("tether::device::msg_send (a typed send)", *r.typed, false, r.typed->bytes);
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
                             std::unique_ptr<Typed> typed, uint64_t* req) {
  TETHER_TRY(checkSend(call, buf, bytes, pe, tag, req));
  const bool gpu = isGpu(buf);
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(threadError_);
  uint32_t word = kNoWord;
  TETHER_TRY(takeWord(call, &word));
  Req& r = newReq(true, pe, tag, const_cast<void*>(buf), bytes, gpu, req);
  r.typed = std::move(typed);
  r.trig = word;
  r.trigGen = ++gen_;
  __atomic_store_n(triggers_ + word, 0, __ATOMIC_RELAXED);  // (generations only grow; this keeps the word tidy)
  r.streamed = true;
  ++streamPending_;
  arm(r);
  return startThread();
}

Status Messaging::startable(const char* call, uint64_t req, Req** out) {
  TETHER_TRY(threadError_);
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
  Status s = typed ? pack(call, *typed)  // a typed prepared send packs when it starts (msg.h)
                   : gpu ? w_.gpu()->settleDefaultStream().withContext(call) : Status::ok();  // as for tether_isend
  std::lock_guard<std::mutex> lock(mu_);
  if (!s.isOk()) {  // not started: it may be posted again
    if (Req* r = reqs_.find(req)) r->posted = false;
    return s;
  }
  Req* r = reqs_.find(req);
  if (!r) return Status::ok();  // (only a concurrent finalize drops it)
  __atomic_store_n(triggers_ + r->trig, r->trigGen, __ATOMIC_RELEASE);
  bool did = false;
  return progress(call, &did);
}

Status Messaging::postOnStream(const char* call, size_t n, const uint64_t* reqs, void* stream) {
  if (n && !reqs) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs is NULL", call);
  std::vector<Op> ops(n);
  std::vector<Typed*> typed;  // typed sends among them: packed on the stream first (they cannot complete before)
  {
    std::lock_guard<std::mutex> lock(mu_);
    Req* r0 = nullptr;
    for (size_t i = 0; i < n; ++i) TETHER_TRY(startable(call, reqs[i], &r0));
    for (size_t i = 0; i < n; ++i) {
      Req& r = *reqs_.find(reqs[i]);
      if (r.posted)
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: request %llu appears twice", call,
                    static_cast<unsigned long long>(reqs[i]));
      r.posted = true;
      if (r.typed) typed.push_back(r.typed.get());
      ops[i].kind = Op::Signal;
      ops[i].pe = me_;
      ops[i].sig = triggers_ + r.trig;
      ops[i].value = r.trigGen;
      ops[i].sigOp = TETHER_SIGNAL_SET;
    }
  }
  // Outside the lock: enqueueing may wait for the stream layer, whose work may wait for this room's progress. A pack
  // enqueued before a failure may still run: into its request's own packed bytes, which stay while the request does.
  Status s = Status::ok();
  for (size_t i = 0; i < typed.size() && s.isOk(); ++i) s = packOnStream(call, *typed[i], stream);
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
  desc->word = triggers_ + r->trig;
  desc->value = r->trigGen;
  return Status::ok();
}

Status Messaging::doneWord(const char* call, uint64_t req, uint64_t** word, uint64_t* value) {
  TETHER_TRY(threadError_);
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
    r.doneGen = ++gen_;
    if (!r.streamed) ++streamPending_;
    r.streamed = true;
    if (r.done) __atomic_store_n(dones_ + r.doneWord, r.doneGen, __ATOMIC_RELEASE);
  }
  TETHER_TRY(startThread());
  *word = dones_ + r.doneWord;
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
  wake_.notify_all();
  desc->word = word;
  return Status::ok();
}

Status Messaging::isendOnStream(const char* call, const void* buf, size_t bytes, int pe, int tag, void* stream,
                                uint64_t* req) {
  TETHER_TRY(checkSend(call, buf, bytes, pe, tag, req));  // (req first: prepare's is never null)
  uint64_t id = 0;
  TETHER_TRY(prepare(call, buf, bytes, pe, tag, &id));
  wake_.notify_all();
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
  bool persistentWait = false;
  Op op;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Req* r = reqs_.find(req);
    if (r && r->persist) persistentWait = true;
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
  wake_.notify_all();
  return enqueueOnStream(w_, call, &op, 1, stream);
}

// One stream wait for n requests: a group word starts at a fresh generation s (above every value any word held:
// gen_ moves past s + m), each of the m requests adds 1 when it completes (at once if it has), and the stream waits
// for s + m. The word is free again once all m have counted (a later wait on it is satisfied by larger values).
Status Messaging::waitallOnStream(const char* call, size_t n, const uint64_t* reqs, void* stream) {
  if (n && !reqs) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs is NULL", call);
  Op op;
  op.sig = nullptr;
  // Persistent requests: a word comparison per request, done >= start (every round started when the stream gets
  // there is complete), which captures no value (a graph replay waits for the rounds of its own time).
  std::vector<const uint64_t*> reach, target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TETHER_TRY(threadError_);
    size_t m = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!reqs[i]) continue;
      Req* rq = reqs_.find(reqs[i]);
      if (!rq)
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs[%zu] = %llu is not pending on PE %d", call, i,
                    static_cast<unsigned long long>(reqs[i]), me_);
      if (rq->persist) {
        watch(*rq);  // the progress thread completes its rounds while the host is elsewhere
        reach.push_back(dones_ + rq->persist->word);
        target.push_back(triggers_ + rq->persist->word);
      } else {
        ++m;
      }
    }
    if (m) {
      uint32_t g = kNoWord;
      TETHER_TRY(takeWord(call, &g));
      const uint64_t start = gen_ + 1;
      gen_ += m + 1;
      __atomic_store_n(dones_ + g, start, __ATOMIC_RELEASE);
      groupLeft_[g] = m;
      for (size_t i = 0; i < n; ++i) {
        if (!reqs[i]) continue;
        Req& r = *reqs_.find(reqs[i]);
        if (r.persist) continue;
        if (r.done) {
          countIntoGroup(g);
          continue;
        }
        r.groups.push_back(g);
        if (!r.streamed) ++streamPending_;
        r.streamed = true;
      }
      op.sig = dones_ + g;
      op.value = start + m;
    }
    if (m || !reach.empty()) TETHER_TRY(startThread());
  }
  wake_.notify_all();
  if (op.sig) {
    op.kind = Op::Wait;
    op.pe = 0;
    op.cmp = TETHER_CMP_GE;
    op.spinWait = true;  // as in waitOnStream
    TETHER_TRY(enqueueOnStream(w_, call, &op, 1, stream));
  }
  return waitReachOnStream(w_, call, reach.data(), target.data(), reach.size(), stream);
}

void Messaging::countIntoGroup(uint32_t g) {
  __atomic_fetch_add(dones_ + g, 1, __ATOMIC_RELEASE);
  auto it = groupLeft_.find(g);
  if (--it->second == 0) {
    groupLeft_.erase(it);
    freeWords_.push_back(g);
  }
}

Status Messaging::startThread() {
  if (thread_.joinable()) return Status::ok();
  thread_ = std::thread([this] { threadMain(); });
  return Status::ok();
}

// Runs progress passes while stream-ordered requests are pending (the host thread may be busy elsewhere); sleeps on
// wake_ otherwise. When a pass moves nothing it backs off like every wait (SpinWait: spin, then 4096 yields, then
// short sleeps). While every pending request is a persistent one (the persistent models keep theirs watched for the
// whole run) and no start waits behind a round in flight, the yielding ends kIdleNs after the last pass that moved
// anything, and the thread then sleeps kIdleSleep between passes, instead of yielding for milliseconds after every
// round while it waits for the next start. Starts that come back to back find it still spinning or yielding.
void Messaging::threadMain() {
  SpinWait spin(1e12);
  uint64_t lastBusy = nowNs();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (streamPending_ == 0) {
      wake_.wait_for(lock, std::chrono::milliseconds(100));
      spin.busy();
      lastBusy = nowNs();
      continue;
    }
    bool did = false;
    startQueued_ = false;
    Status s = threadError_.isOk() ? progress("tether messaging progress thread", &did) : Status::ok();
    if (!s.isOk()) {
      threadError_ = s;
      TETHER_LOG_WARN(LogSys::Core, "PE %d: %s", me_, s.message().c_str());
    }
    const uint64_t now = nowNs();
    if (did) {
      spin.busy();
      lastBusy = now;
    }
    if (streamPending_ != watch_.size() || startQueued_ || now - lastBusy < kIdleNs) {
      lock.unlock();
      spin.next();
      lock.lock();
    } else {
      wake_.wait_for(lock, kIdleSleep);
    }
  }
}

// ---- persistent requests -----------------------------------------------------------------------------------------

Status Messaging::sendInit(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) {
  TETHER_TRY(checkSend(call, buf, bytes, pe, tag, req));
  return makePersistent(call, true, const_cast<void*>(buf), bytes, pe, tag, isGpu(buf), nullptr, req);
}

Status Messaging::recvInit(const char* call, void* buf, size_t bytes, int pe, int tag, uint64_t* req) {
  TETHER_TRY(checkRecv(call, buf, bytes, pe, tag, req));
  return makePersistent(call, false, buf, bytes, pe, tag, isGpu(buf), nullptr, req);
}

Status Messaging::sendInitTyped(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                uint64_t* req) {
  std::unique_ptr<Typed> t;
  TETHER_TRY(makeTypedSend(call, buf, count, type, pe, tag, req, &t));
  char* packed = t->packed();  // (before t is moved into the request)
  const size_t bytes = t->bytes;
  const bool gpu = t->gpu != nullptr;
  return makePersistent(call, true, packed, bytes, pe, tag, gpu, std::move(t), req);
}

Status Messaging::recvInitTyped(const char* call, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                uint64_t* req) {
  TETHER_TRY(checkRecv(call, reinterpret_cast<const void*>(1), 0, pe, tag, req));
  std::unique_ptr<Typed> t;
  TETHER_TRY(makeTyped(call, buf, count, type, &t));
  char* packed = t->packed();
  const size_t bytes = t->bytes;
  const bool gpu = t->gpu != nullptr;
  return makePersistent(call, false, packed, bytes, pe, tag, gpu, std::move(t), req);
}

Status Messaging::makePersistent(const char* call, bool send, void* buf, size_t bytes, int pe, int tag, bool gpu,
                                 std::unique_ptr<Typed> typed, uint64_t* req) {
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(threadError_);
  uint32_t word = kNoWord;
  TETHER_TRY(takeWord(call, &word));
  Req& r = newReq(send, pe, tag, buf, bytes, gpu, req);
  r.typed = std::move(typed);
  r.done = true;  // no round in flight
  r.persist.reset(new Persist);
  Persist& p = *r.persist;
  p.word = word;
  p.base = ++gen_;
  __atomic_store_n(triggers_ + word, p.base, __ATOMIC_RELEASE);
  __atomic_store_n(dones_ + word, p.base, __ATOMIC_RELEASE);
  return Status::ok();
}

Status Messaging::persistent(const char* call, size_t i, uint64_t id, Req** out) {
  Req* rq = reqs_.find(id);
  if (!rq || !rq->persist)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s is not a persistent request of PE %d (one from tether_send_init / "
                "tether_recv_init, not freed)", call, reqName(i, id).c_str(), me_);
  *out = rq;
  return Status::ok();
}

uint64_t Messaging::startedRounds(const Req& r) const {
  const Persist& p = *r.persist;
  const uint64_t word = __atomic_load_n(triggers_ + p.word, __ATOMIC_ACQUIRE) - p.base;
  return static_cast<int64_t>(word - p.started) > 0 ? word : p.started;
}

bool Messaging::active(const Req& r) const { return startedRounds(r) != r.persist->reported; }

void Messaging::watch(Req& r) {
  Persist& p = *r.persist;
  if (p.watched) return;
  p.watched = true;
  watch_.push_back(&r);
  if (!r.streamed) ++streamPending_;
  r.streamed = true;
}

Status Messaging::checkStarts(const char* call, size_t n, const uint64_t* reqs, bool host, bool* gpu) {
  if (n && !reqs) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs is NULL", call);
  TETHER_TRY(threadError_);
  *gpu = false;
  std::vector<Req*> picked;
  Status s;
  for (size_t i = 0; i < n && s.isOk(); ++i) {
    const size_t at = n == 1 ? SIZE_MAX : i;
    Req* r = nullptr;
    s = persistent(call, at, reqs[i], &r);
    if (!s.isOk()) break;
    Persist& p = *r->persist;
    if (p.pick) {
      s = Status(TETHER_ERR_INVALID_ARG, strprintf("%s: %s appears twice", call, reqName(at, reqs[i]).c_str()));
    } else if (host && active(*r)) {
      s = Status(TETHER_ERR_INVALID_ARG,
                 strprintf("%s: %s is active on PE %d (round %llu started, not yet reported by tether_msg_wait/test): "
                           "complete it before starting it again", call, reqName(at, reqs[i]).c_str(), me_,
                           static_cast<unsigned long long>(startedRounds(*r))));
    }
    p.pick = true;
    picked.push_back(r);
    *gpu = *gpu || r->gpu;
  }
  for (Req* r : picked) r->persist->pick = false;
  return s;
}

Status Messaging::start(const char* call, size_t n, const uint64_t* reqs) {
  bool gpu = false;
  SmallArray<Typed*, 8> typed(n, nullptr);  // typed sends: packed for this round now (msg.h)
  {
    std::lock_guard<std::mutex> lock(mu_);
    TETHER_TRY(checkStarts(call, n, reqs, true, &gpu));
    for (size_t i = 0; i < n; ++i) {
      Req& r = *reqs_.find(reqs[i]);
      if (r.send && r.typed) typed[i] = r.typed.get();  // (inactive: no round of it reads the packed bytes)
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (typed[i]) TETHER_TRY(pack(call, *typed[i], false));
  if (gpu) TETHER_TRY(w_.gpu()->settleDefaultStream().withContext(call));  // msg.h: as for tether_isend
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(checkStarts(call, n, reqs, true, &gpu));  // again: another thread may have started or freed one meanwhile
  for (size_t i = 0; i < n; ++i) {
    Req& r = *reqs_.find(reqs[i]);
    Persist& p = *r.persist;
    __atomic_store_n(triggers_ + p.word, p.base + p.started + 1, __ATOMIC_RELEASE);  // (a watch sees it started)
    TETHER_TRY(startRound(call, r));
  }
  bool did = false;
  return pushAll(call, &did);  // an eager send with credit completes here (as tether_isend: posting does not drain)
}

Status Messaging::startOnStream(const char* call, size_t n, const uint64_t* reqs, void* stream) {
  std::vector<uint64_t*> words(n);
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool gpu = false;
    TETHER_TRY(checkStarts(call, n, reqs, false, &gpu));
    for (size_t i = 0; i < n; ++i) {
      Req& r = *reqs_.find(reqs[i]);
      watch(r);
      words[i] = triggers_ + r.persist->word;
    }
    if (n) TETHER_TRY(startThread());
  }
  wake_.notify_all();
  // Outside the lock (as postOnStream): enqueueing may wait for the stream layer.
  return incrementOnStream(w_, call, words.data(), n, stream);
}

Status Messaging::persistDesc(const char* call, uint64_t req, tether_msg_persist_desc_t* desc) {
  if (!desc) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: desc is NULL", call);
  {
    std::lock_guard<std::mutex> lock(mu_);
    TETHER_TRY(threadError_);
    Req* r = nullptr;
    TETHER_TRY(persistent(call, SIZE_MAX, req, &r));
    watch(*r);
    TETHER_TRY(startThread());
    const Persist& p = *r->persist;
    desc->start = triggers_ + p.word;
    desc->done = dones_ + p.word;
    desc->base = p.base + startedRounds(*r);  // round 1 is the next start
  }
  wake_.notify_all();
  return Status::ok();
}

Status Messaging::requestFree(const char* call, uint64_t* req) {
  if (!req) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req is NULL", call);
  if (*req == 0) return Status::ok();
  std::lock_guard<std::mutex> lock(mu_);
  Req* r = nullptr;
  TETHER_TRY(persistent(call, SIZE_MAX, *req, &r));
  if (active(*r))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: request %llu is active on PE %d (%llu rounds started, %llu reported): "
                "complete it with tether_msg_wait/test before freeing it", call, static_cast<unsigned long long>(*req),
                me_, static_cast<unsigned long long>(startedRounds(*r)),
                static_cast<unsigned long long>(r->persist->reported));
  forget(*r);
  *req = 0;
  return Status::ok();
}

Status Messaging::startRound(const char* call, Req& r, const Status& packed) {
  ++r.persist->started;
  r.done = false;
  r.result = Status::ok();
  r.fromPe = r.fromTag = 0;
  r.msgBytes = r.allowed = r.moved = 0;
  if (r.claim != kNoWord) {  // the last round's direct read is over: its claim word is free again
    freeWords_.push_back(r.claim);
    directs_.remove(&r);
    r.claim = kNoWord;
  }
  r.ipc.reset();  // offerDirect exports the buffer again for this round (a cached lookup)
  if (!packed.isOk()) {  // a typed send that could not pack: the round fails, nothing sent
    complete(r, packed);
    return Status::ok();
  }
  if (!r.send) return matchOrPost(call, r);
  enqueueSend(r);  // pushed by the caller's progress pass
  return Status::ok();
}

Status Messaging::scanStarts(const char* call, bool* did) {
  for (Req* r : watch_) {
    const Persist& p = *r->persist;
    if (startedRounds(*r) == p.started) continue;  // no new start
    if (p.started != p.completed) {                // a round in flight: the new one begins when it completes
      startQueued_ = true;
      continue;
    }
    // A typed send packs now: the stream's earlier work or the kernel's stores before its start are visible (the
    // start word's release), and the previous round no longer reads the packed bytes.
    const bool typedSend = r->send && r->typed;
    TETHER_TRY(startRound(call, *r, typedSend ? engineCopy(call, *r->typed, false, r->typed->bytes) : Status::ok()));
    *did = true;
  }
  return Status::ok();
}

Status Messaging::irecv(const char* call, void* buf, size_t bytes, int pe, int tag, uint64_t* req) {
  TETHER_TRY(checkRecv(call, buf, bytes, pe, tag, req));
  const bool gpu = isGpu(buf);
  if (gpu) TETHER_TRY(w_.gpu()->settleDefaultStream().withContext(call));  // msg.h: as for a send
  return postRecv(call, buf, bytes, pe, tag, gpu, nullptr, req);
}

Status Messaging::checkRecv(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) const {
  if (!req) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req is NULL", call);
  *req = 0;
  if (pe != TETHER_ANY_PE) TETHER_TRY(w_.checkPe(call, pe));
  if (tag < 0 && tag != TETHER_ANY_TAG)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: tag %d is negative and not TETHER_ANY_TAG", call, tag);
  if (!buf && bytes) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: buf is NULL with %zu bytes", call, bytes);
  return Status::ok();
}

Status Messaging::postRecv(const char* call, void* buf, size_t bytes, int pe, int tag, bool gpu,
                           std::unique_ptr<Typed> typed, uint64_t* req) {
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(threadError_);
  // No progress pass here: a message still in the ring is matched by the next pass (against the posted receives in
  // the order posted, so with the same result as matching it first), and posting stays cheap: a pass here would
  // also make the direct reads of arrived rendezvous messages while the caller still has sends to post (bibw then
  // alternated between the directions: 16 GB/s both ways together against 30 one at a time did, cpu-2core-vm).
  Req& ref = newReq(false, pe, tag, buf, bytes, gpu, req);
  ref.typed = std::move(typed);
  return matchOrPost(call, ref);
}

Status Messaging::matchOrPost(const char* call, Req& ref) {
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (!fits(ref.pe, it->src) || !fits(ref.tag, it->tag)) continue;
    std::list<Unexpected> taken;  // the node, out of the list while it is handled (no allocation), then spare
    taken.splice(taken.end(), unexpected_, it);
    const Unexpected& u = taken.front();
    Status s;
    if (u.rts) {
      s = matchRts(call, ref, u.src, u.head, u.ipc);
    } else {
      ref.fromPe = u.src;
      ref.fromTag = u.tag;
      ref.msgBytes = u.bytes;
      const size_t n = std::min(u.bytes, ref.cap);
      Status d;
      if (u.inTiny) {
        d = deliverHost(call, ref, u.tiny, n);
      } else if (u.heap) {
        d = deliverHost(call, ref, u.heap.get(), n);
      } else {
        d = deliver(call, ref, 0, poolBase_ + u.poolOff, n);
        pool_->release(u.poolOff, u.bytes);
      }
      complete(ref, d);
    }
    taken.front().heap.reset();
    spare_.splice(spare_.end(), taken);
    return s;
  }
  posted_.push(ref);
  return Status::ok();
}

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
  const void* packed = t->packed();
  const size_t bytes = t->bytes;
  const bool gpu = t->gpu != nullptr;
  return postSend(call, packed, bytes, pe, tag, gpu, std::move(t), req);
}

Status Messaging::prepareTyped(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                               uint64_t* req) {
  std::unique_ptr<Typed> t;
  TETHER_TRY(makeTypedSend(call, buf, count, type, pe, tag, req, &t));
  char* packed = t->packed();  // (before t is moved into the request)
  const size_t bytes = t->bytes;
  return prepareReq(call, packed, bytes, pe, tag, std::move(t), req);
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
  void* packed = t->packed();
  const size_t bytes = t->bytes;
  const bool gpu = t->gpu != nullptr;
  return postRecv(call, packed, bytes, pe, tag, gpu, std::move(t), req);
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

// A receive r matched an RTS: ask for min(message, buffer) bytes (a CTS through this PE's ring to src).
Status Messaging::matchRts(const char* call, Req& r, int src, const SlotHead& h, const GpuIpcRef& ipc) {
  r.fromPe = src;
  r.fromTag = h.tag;
  r.msgBytes = h.bytes;
  r.allowed = std::min<size_t>(h.bytes, r.cap);
  if (h.kind == kRtsDirect) {
    bool viaRing = false;
    TETHER_TRY(readDirect(call, r, src, h, ipc, &viaRing));
    if (!viaRing) return Status::ok();
  }
  Out o{};
  o.h.kind = kCts;
  o.h.bytes = r.allowed;
  o.h.a = h.a;
  o.h.b = r.id;
  if (h.kind == kRts && (h.how & kTransportPayload) && expectByData(call, r, src))
    o.h.how = kByData | (r.gpu ? kByDataToGpu : 0);
  out_[static_cast<size_t>(src)].push_back(o);
  if (r.allowed == 0) complete(r, Status::ok());
  bool did = false;
  return push(call, src, &did);
}

// Whether this PE's transport to pe can move a buffer of this process by sendData/expectData: host memory where it
// has them, GPU memory where it also carries kCapDataGpu (a CUDA-aware UCX).
bool Messaging::transportTakes(int pe, bool gpu) const {
  void* ctx = nullptr;
  return takes(opsTo(pe, SegKind::Host, &ctx), gpu);
}

bool Messaging::takes(const TransportOps& ops, bool gpu) {
  return ops.expectData && ops.cancelData && ops.sendData && (!gpu || (ops.caps & kCapDataGpu));
}

// A rendezvous message from another host's PE (whose transport can send its buffer: the RTS's kTransportPayload),
// of at least TETHER_MSG_REMOTE_RNDV bytes, into a buffer here that this PE's transport can fill (host memory; GPU
// memory with a CUDA-aware UCX): the transport's own protocol moves it straight into r's buffer (UCX: one active
// message, eager or rendezvous as UCX picks, like its tag messages; rendezvous into GPU memory) instead of DATA slots
// through the ring. r takes a landing word, which the transport sets when the bytes are in (pollLandings completes
// r). False: the ring carries it.
bool Messaging::expectByData(const char* call, Req& r, int src) {
  if (direct_[static_cast<size_t>(src)] || r.allowed == 0 || remoteRndvMin_ == 0 || r.allowed < remoteRndvMin_ ||
      freeWords_.empty())
    return false;
  void* ctx = nullptr;
  const TransportOps& ops = opsTo(src, SegKind::Host, &ctx);
  if (!takes(ops, r.gpu)) return false;
  const uint32_t word = freeWords_.back();
  __atomic_store_n(triggers_ + word, uint64_t{0}, __ATOMIC_RELAXED);
  const Status s = ops.expectData(ctx, src, r.id, r.dst, r.allowed, triggers_ + word);
  if (!s.isOk()) {
    TETHER_LOG_INFO(LogSys::Core, "%s: PE %d: the rendezvous message from PE %d comes through the ring (%s)", call,
                    me_, src, s.message().c_str());
    return false;
  }
  freeWords_.pop_back();
  r.landing = word;
  landings_.push_back(&r);
  return true;
}

// A send whose receiver expects the bytes by the transport (a CTS by data, for its request recvId; toGpu: into GPU
// memory): sendData started, its completion in r's landing word (r joins landings_). A GPU send buffer is copied into
// host memory first (stageSend: a copy-engine copy on the sibling context into a pinned stage; at most
// TETHER_MSG_REMOTE_INFLIGHT bytes per destination, or one larger message, are under way, so as many are held). False:
// not now, nothing started (the caller queues it in byData_): every stream word is in use, or
// TETHER_MSG_REMOTE_INFLIGHT bytes to dst are under way already. A staging copy or a transport that fails to start
// fails r and sends the receiver a CANCEL (its receive fails too).
bool Messaging::startByData(const char* call, int dst, Req& r, uint64_t recvId, bool toGpu) {
  void* ctx = nullptr;
  const TransportOps& ops = opsTo(dst, SegKind::Host, &ctx);
  if (!ops.sendData) {
    complete(r, Status(TETHER_ERR_INTERNAL, strprintf("%s: PE %d expects data by a transport operation the path "
                                                      "from PE %d lacks", call, dst, me_)));
    return true;
  }
  size_t& inFlight = byDataInFlight_[static_cast<size_t>(dst)];
  if (freeWords_.empty() || (inFlight && inFlight + r.allowed > byDataCap_)) return false;
  r.pieced = false;  // (a persistent request's earlier round may have gone in pieces)
  r.pieceError = Status::ok();
  const void* from = r.src;
  size_t first = r.allowed;  // the first piece's bytes (all of them: one piece)
  if (r.gpu) {
    const Status c = stageSend(call, r, dst, &from, &first);
    if (!c.isOk()) {
      unstage(r, true);
      queueCancel(dst, recvId);  // the receiver's receive fails now, not at its timeout
      complete(r, c);
      return true;
    }
  } else if (pieceHost_ && pieceBytes_ && r.allowed > pieceBytes_) {
    first = pieceBytes_;
  }
  const uint32_t word = freeWords_.back();
  __atomic_store_n(triggers_ + word, uint64_t{0}, __ATOMIC_RELAXED);
  const Status s = ops.sendData(ctx, dst, recvId, from, first, 0, r.allowed, toGpu, triggers_ + word);
  if (!s.isOk()) {
    unstage(r, true);
    queueCancel(dst, recvId);
    complete(r, s.withContext(call));
    return true;
  }
  freeWords_.pop_back();
  inFlight += r.allowed;
  r.landing = word;
  landings_.push_back(&r);
  if (first < r.allowed) {
    r.pieced = true;
    r.pieceRecv = recvId;
    r.pieceToGpu = toGpu;
    r.pieceOff = 0;
    r.pieceLen = first;
    if (r.gpu) stageNextPiece(r);  // while the first piece is on the wire
  }
  return true;
}

void Messaging::stageNextPiece(Req& r) {
  const size_t off = r.pieceOff + r.pieceLen;
  if (off >= r.allowed || !r.pieceError.isOk()) return;
  const size_t n = std::min(pieceBytes_, r.allowed - off);
  r.pieceError = paths_->gpu()->copy(r.pieceNext, static_cast<const char*>(r.src) + off, n, false)
                     .withContext("tether_send");
}

bool Messaging::nextPiece(Req& r) {
  const size_t off = r.pieceOff + r.pieceLen, n = std::min(pieceBytes_, r.allowed - off);
  Status s = r.pieceError;
  if (s.isOk()) {
    void* ctx = nullptr;
    const TransportOps& ops = opsTo(r.pe, SegKind::Host, &ctx);
    const void* from = static_cast<const char*>(r.src) + off;
    if (r.gpu) {
      std::swap(r.pieceAt, r.pieceNext);
      from = r.pieceAt;
    }
    __atomic_store_n(triggers_ + r.landing, uint64_t{0}, __ATOMIC_RELAXED);
    s = ops.sendData(ctx, r.pe, r.pieceRecv, from, n, off, r.allowed, r.pieceToGpu, triggers_ + r.landing);
  }
  if (!s.isOk()) {
    landings_.remove(&r);
    landed(r, true);  // nothing under way (a failed sendData never stores the word)
    queueCancel(r.pe, r.pieceRecv);
    complete(r, s.withContext("tether_send"));
    return false;
  }
  r.pieceOff = off;
  r.pieceLen = n;
  if (r.gpu) stageNextPiece(r);  // while this piece is on the wire
  return true;
}

// r's GPU send buffer, copied into host memory (*from): a pinned stage of hostStages_ (reused, so the copy engine
// writes pinned pages at full speed), else -- TETHER_MSG_PINNED_MAX is 0, the stage would not fit it, or pinned memory
// is refused (logged once) -- host memory of r's own (pageable: 32 MiB GPU to GPU over TCP 0.68 GB/s against 1.7-1.9
// pinned at 4-16 MiB, bench/results/h200/msg_gpu_netns_2026-12-04.txt). About one stage per destination is in use at
// once (TETHER_MSG_REMOTE_INFLIGHT); the budget bounds what stays pinned.
Status Messaging::stageSend(const char* call, Req& r, int dst, const void** from, size_t* first) {
  void* p = nullptr;
  Status pinned = Status::ok();
  if (pinnedMax_) {
    pinned = hostStages_.acquire(*w_.gpu(), r.allowed, "a pinned stage (TETHER_MSG_PINNED_MAX)", &r.hostStage);
    if (pinned.isOk()) p = r.hostStage->p;
  }
  if (!p && pieceBytes_ && r.allowed > pieceBytes_) {
    // In pieces: two pinned stages of a piece, else a pageable buffer of two pieces.
    const char* what = "a pinned stage of a piece (TETHER_MSG_PINNED_MAX)";
    if (pinnedMax_ && hostStages_.acquire(*w_.gpu(), pieceBytes_, what, &r.hostStage).isOk() &&
        hostStages_.acquire(*w_.gpu(), pieceBytes_, what, &r.nextStage).isOk()) {
      r.pieceAt = static_cast<char*>(r.hostStage->p);
      r.pieceNext = static_cast<char*>(r.nextStage->p);
    } else {
      unstage(r, true);
      if (!pinnedRefused_) {
        pinnedRefused_ = true;
        TETHER_LOG_INFO(LogSys::Core, "%s: PE %d: the pieces of a GPU send buffer to PE %d are staged in pageable host "
                        "memory (no two pinned stages of %zu bytes within TETHER_MSG_PINNED_MAX); said once", call,
                        me_, dst, pieceBytes_);
      }
      r.bounce.reset(new (std::nothrow) char[2 * pieceBytes_]);
      if (!r.bounce)
        return Status(TETHER_ERR_NO_MEMORY, strprintf("%s: no host memory to stage two %zu-byte pieces of a GPU send "
                                                      "buffer to PE %d", call, pieceBytes_, dst));
      r.pieceAt = r.bounce.get();
      r.pieceNext = r.bounce.get() + pieceBytes_;
    }
    *from = r.pieceAt;
    *first = pieceBytes_;
    return paths_->gpu()->copy(r.pieceAt, r.src, pieceBytes_, false).withContext(call);
  }
  if (!p && !pinned.isOk() && !pinnedRefused_) {
    pinnedRefused_ = true;
    TETHER_LOG_INFO(LogSys::Core, "%s: PE %d: a GPU send buffer to PE %d is staged in pageable host memory (%s); "
                    "said once", call, me_, dst, pinned.message().c_str());
  }
  if (!p) {
    r.bounce.reset(new (std::nothrow) char[r.allowed]);
    if (!r.bounce)
      return Status(TETHER_ERR_NO_MEMORY, strprintf("%s: no host memory to stage the %zu bytes of a GPU send buffer "
                                                    "to PE %d", call, r.allowed, dst));
    p = r.bounce.get();
  }
  *from = p;
  return paths_->gpu()->copy(p, r.src, r.allowed, false).withContext(call);
}

// r's staged bytes are no longer needed (reusable), or may still be read by the transport (!reusable: a send given
// up after TETHER_TIMEOUT): then they are left alone -- the stage stays busy, never handed out again.
void Messaging::unstage(Req& r, bool reusable) {
  if (reusable) {
    if (r.hostStage) r.hostStage->release();
    if (r.nextStage) r.nextStage->release();
    r.bounce.reset();
  } else {
    (void)r.bounce.release();
  }
  r.hostStage = r.nextStage = nullptr;
  r.pieceAt = r.pieceNext = nullptr;
}

// r, just taken out of landings_, is done with the transport: its word is free again (unless the transport may still
// store it: wordReusable false), and a send's bytes are no longer under way.
void Messaging::landed(Req& r, bool wordReusable) {
  if (wordReusable) freeWords_.push_back(r.landing);
  unstage(r, wordReusable);
  r.landing = kNoWord;
  if (r.send) byDataInFlight_[static_cast<size_t>(r.pe)] -= r.allowed;
}

// Requests whose bytes the transport has moved complete: receives (the landing word: bytes + 1, or kDataFailed) and
// sends (1, or kDataFailed).
void Messaging::pollLandings(bool* did) {
  for (auto it = landings_.begin(); it != landings_.end();) {
    Req& r = **it;
    const uint64_t v = __atomic_load_n(triggers_ + r.landing, __ATOMIC_ACQUIRE);
    if (v == 0) {
      ++it;
      continue;
    }
    *did = true;
    if (r.send && r.pieced && v != kDataFailed && r.pieceOff + r.pieceLen < r.allowed) {
      ++it;  // nextPiece takes r out of landings_ only when it fails (list iterators stay valid)
      (void)nextPiece(r);
      continue;
    }
    it = landings_.erase(it);
    landed(r, true);
    if (r.send && r.pieced && v == kDataFailed && r.pieceOff + r.pieceLen < r.allowed)
      queueCancel(r.pe, r.pieceRecv);  // pieces not sent: the receiver would wait for them
    if (r.send) {
      complete(r, v == kDataFailed ? Status(TETHER_ERR_SYSTEM, strprintf("tether_send: the %zu bytes to PE %d (tag %d) "
                                                                         "by the transport failed: its log says why",
                                                                         r.allowed, r.pe, r.tag))
                                   : Status::ok());
      continue;
    }
    r.moved = v == kDataFailed ? 0 : static_cast<size_t>(v - 1);
    complete(r, r.moved == r.allowed
                    ? Status::ok()
                    : Status(TETHER_ERR_SYSTEM, strprintf("tether_recv: %zu of the %zu bytes from PE %d (tag %d) came "
                                                          "by the transport (%s)", r.moved, r.allowed, r.fromPe,
                                                          r.fromTag, v == kDataFailed ? "it failed: its log says why"
                                                                                      : "a short transfer")));
  }
}

// A request dropped while the transport moves its bytes (destroy, a failed round): a receive's expectation withdrawn,
// or (its bytes landing now) waited for, as a send is; bounded by TETHER_TIMEOUT while progressing the transport (after
// which its word is never reused: the transport may still store it).
void Messaging::awaitLanding(Req& r) {
  SpinWait spin(w_.timeout());
  while (!cancelLanding(r)) {
    w_.paths().progress();
    if (!spin.next()) {
      TETHER_LOG_WARN(LogSys::Core, "PE %d: a %s PE %d was dropped while its %zu bytes were still moving", me_,
                      r.send ? "send to" : "receive from", r.send ? r.pe : r.fromPe, r.allowed);
      landings_.remove(&r);
      landed(r, false);
      return;
    }
  }
}

// A request whose bytes the transport moves gives that up: true when its buffer is no longer touched (it left
// landings_, its word is free again), false while the bytes are moving (its landing word follows). A receive's
// expectation is withdrawn; a send cannot be: it is over when its word is set.
bool Messaging::cancelLanding(Req& r) {
  void* ctx = nullptr;
  const TransportOps& ops = opsTo(r.send ? r.pe : r.fromPe, SegKind::Host, &ctx);
  const bool over = r.send ? false : ops.cancelData(ctx, r.fromPe, r.id);
  if (!over && !__atomic_load_n(triggers_ + r.landing, __ATOMIC_ACQUIRE)) return false;
  if (r.send && r.pieced && r.pieceOff + r.pieceLen < r.allowed)
    queueCancel(r.pe, r.pieceRecv);  // pieces left unsent: the receiver would wait for them
  landings_.remove(&r);
  landed(r, true);
  return true;
}

// The receiver's side of RTS_DIRECT: claim the read (compare-and-swap on the sender's claim word), read the bytes
// straight into r's buffer, tell the sender (kClaimDone in the same word). A claim lost to a withdrawal fails r; a read that cannot be made
// here (a GPU buffer from private host memory, process_vm_readv refused, CUDA IPC refused or no GPU here) leaves
// *viaRing set: the caller answers with a CTS and the data comes through the ring after all. A refusal is logged
// once and remembered per source: its later messages of that kind take the ring at once.
Status Messaging::readDirect(const char* call, Req& r, int src, const SlotHead& h, const GpuIpcRef& ipc,
                             bool* viaRing) {
  *viaRing = false;
  const uint64_t how = h.how & 0xff;
  const bool viaGet = how == kViaGet;
  const size_t from = static_cast<size_t>(src);
  const bool canRead = viaGet || (how == kViaCma && !r.gpu && cmaOk_[from]) ||
                       (how == kViaIpc && paths_->gpu() && (src == me_ || ipcOk_[from]));
  if (!canRead) {
    *viaRing = true;
    return Status::ok();
  }
  auto* claim = reinterpret_cast<uint64_t*>(direct_[static_cast<size_t>(src)] + h.c);
  uint64_t open = kClaimOpen;
  if (!__atomic_compare_exchange_n(claim, &open, kClaimRead, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    complete(r, Status(TETHER_ERR_TIMEOUT, strprintf("tether_recv: PE %d withdrew its message of %zu bytes (tag %d): "
                                                     "its blocking send failed (timed out)", src, r.msgBytes,
                                                     r.fromTag)));
    return Status::ok();
  }
  Status s;
  if (r.allowed && viaGet) {  // the same object in this PE's copy of the segment, read from src's
    const auto kind = static_cast<SegKind>(h.how >> 8);
    const char* base = kind == SegKind::Static ? w_.heap().staticLocal() : w_.heap().base(kind);
    s = move(call, Op::Get, r.dst, base + h.b, r.allowed, src, nullptr, 0);
  } else if (r.allowed && how == kViaIpc) {  // on the sibling context, into GPU or host memory
    const char* bytes = reinterpret_cast<const char*>(h.b);  // a self-send: the buffer itself
    if (src != me_) {
      char* mapped = nullptr;
      const Status o = paths_->gpu()->openRegion(static_cast<uint64_t>(src), ipc, &mapped);
      if (!o.isOk()) {
        ipcOk_[from] = 0;
        TETHER_LOG_INFO(LogSys::Core, "PE %d: cannot open PE %d's GPU buffers by CUDA IPC (%s): its rendezvous "
                        "messages from private GPU buffers come through the ring", me_, src, o.message().c_str());
        *viaRing = true;  // claimed: the sender streams it when the CTS comes
        return Status::ok();
      }
      bytes = mapped + ipc.offset;
    }
    s = paths_->gpu()->copy(r.dst, bytes, r.allowed, false).withContext(call);  // blocking: the mapping is free again
  } else if (r.allowed && !cmaRead(static_cast<pid_t>(h.pid), h.b, r.dst, r.allowed)) {
    cmaOk_[from] = 0;
    TETHER_LOG_INFO(LogSys::Core, "PE %d: process_vm_readv from PE %d (pid %llu) refused (%s): its rendezvous "
                    "messages come through the ring", me_, src, static_cast<unsigned long long>(h.pid),
                    std::strerror(errno));
    *viaRing = true;  // claimed: the sender streams it when the CTS comes
    return Status::ok();
  }
  __atomic_store_n(claim, kClaimDone, __ATOMIC_RELEASE);  // the sender's send is complete
  complete(r, s);
  return Status::ok();
}

bool Messaging::cmaRead(pid_t pid, uint64_t from, void* to, size_t n) {
  size_t done = 0;
  while (done < n) {
    iovec local{static_cast<char*>(to) + done, n - done};
    iovec remote{reinterpret_cast<void*>(from + done), n - done};
    const ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

void Messaging::complete(Req& r, Status result) {
  r.done = true;
  if (result.isOk() && !r.send && r.msgBytes > r.cap)
    result = Status(TETHER_ERR_TRUNCATED,
                    strprintf("tether_recv: a message of %zu bytes from PE %d (tag %d) was truncated to the "
                              "receive buffer's %zu bytes", r.msgBytes, r.fromPe, r.fromTag, r.cap));
  // A typed receive's bytes reach the user's layout now, before a stream or a kernel waiting for it is told (also a
  // truncated one: the bytes that arrived).
  if (r.typed && !r.send && !r.abandoned && result.code() != TETHER_ERR_TIMEOUT) {
    Status u = engineCopy("tether_irecv_typed", *r.typed, true, std::min(r.msgBytes, r.cap));
    if (!u.isOk() && result.isOk()) result = u;
  }
  r.result = result;
  if (r.doneWord != kNoWord) __atomic_store_n(dones_ + r.doneWord, r.doneGen, __ATOMIC_RELEASE);  // the stream goes on
  if (r.persist) {  // a round of a persistent request: its done word counts it (a stream or kernel may wait on it)
    Persist& p = *r.persist;
    ++p.completed;
    fill(r, &p.last);
    if (!result.isOk() && p.failure.isOk()) p.failure = result;
    __atomic_store_n(dones_ + p.word, p.base + p.completed, __ATOMIC_RELEASE);
  }
  for (uint32_t g : r.groups) countIntoGroup(g);
  r.groups.clear();
  if (r.abandoned) forget(r);  // nobody will wait for it (callers do not touch r after complete)
}

// ---- progress ----------------------------------------------------------------------------------------------------

Status Messaging::progress(const char* call, bool* did) {
  TETHER_TRY(threadError_);  // the progress thread failed (a lost peer, ...): every later call says so
  if (w_.paths().progress()) *did = true;  // network providers move what arrived
  if (!watch_.empty()) TETHER_TRY(scanStarts(call, did));
  if (!armed_.empty()) fireTriggers(did);
  if (!directs_.empty()) pollDirect(did);
  if (!landings_.empty()) pollLandings(did);
  for (int k = 0; k < n_; ++k) TETHER_TRY(drain(call, (drainStart_ + k) % n_, did));
  drainStart_ = (drainStart_ + 1) % n_;
  return pushAll(call, did);
}

Status Messaging::pushAll(const char* call, bool* did) {
  for (int d = 0; d < n_; ++d) {
    auto& q = byData_[static_cast<size_t>(d)];
    while (!q.empty() && startByData(call, d, *q.front().req, q.front().h.a, q.front().h.how & kByDataToGpu)) {
      q.pop_front();
      *did = true;
    }
    if (!out_[static_cast<size_t>(d)].empty()) TETHER_TRY(push(call, d, did));
  }
  return Status::ok();
}

Status Messaging::drain(const char* call, int src, bool* did) {
  uint64_t& next = next_[static_cast<size_t>(src)];
  for (;;) {
    const char* s = slot(src, next);
    const uint64_t seq = __atomic_load_n(reinterpret_cast<const uint64_t*>(s), __ATOMIC_ACQUIRE);
    if (seq != next + 1) break;
    SlotHead h;
    std::memcpy(&h, s, sizeof h);
    // The count src carries of this PE's slots it consumed: slots from src are read in the order written, so the
    // counts only grow; from the low 32 bits, a step of 2^32 or more would read smaller (credit under-counted: safe).
    uint64_t& heard = heard_[static_cast<size_t>(src)];
    heard += static_cast<uint32_t>(h.ack - static_cast<uint32_t>(heard));
    const uint64_t span = (h.kind == kEager || h.kind == kData || h.kind == kSkip) && h.c > 1 ? h.c : 1;
    if (span > slots_ - next % slots_)
      TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: slot %llu from PE %d says it takes %llu slots; %llu are left before the "
                  "ring's end", call, static_cast<unsigned long long>(next), src, static_cast<unsigned long long>(span),
                  static_cast<unsigned long long>(slots_ - next % slots_));
    bool consumed = false;
    TETHER_TRY(handle(call, src, h, s + sizeof(SlotHead), &consumed));
    if (!consumed) break;  // the pool is full: this source waits for a receive
    // A spanning message's payload overwrote the seq words of the slots after its first: clear them before the
    // credit for them can reach the sender (below, or in the next slot written back), so no payload bytes can ever
    // read as the seq of a later lap.
    for (uint64_t k = 1; k < span; ++k)
      __atomic_store_n(reinterpret_cast<uint64_t*>(slot(src, next + k)), uint64_t{0}, __ATOMIC_RELAXED);
    next += span;
    *did = true;
    if (next - std::max(published_[static_cast<size_t>(src)], carried_[static_cast<size_t>(src)]) >= slots_ / 2)
      TETHER_TRY(publishAck(call, src));
    // A direct rendezvous read (an RTS_DIRECT), or a send by the transport (a CTS by data), takes a while: send what
    // waits for credit before the next one, so the peers get this PE's own RTS while it reads theirs (else, both
    // directions at once, each side's RTS wait for its reads to end, the other side runs dry, and the two directions
    // alternate: bibw at unidirectional rate).
    if (h.kind == kRtsDirect || (h.kind == kCts && (h.how & kByData))) TETHER_TRY(pushAll(call, did));
  }
  return Status::ok();
}

Status Messaging::publishAck(const char* call, int src) {
  const uint64_t v = next_[static_cast<size_t>(src)];
  const uint64_t delta = v - published_[static_cast<size_t>(src)];
  published_[static_cast<size_t>(src)] = v;
  if (char* d = direct_[static_cast<size_t>(src)]) {
    __atomic_store_n(reinterpret_cast<uint64_t*>(d + (reinterpret_cast<char*>(acked_ + me_) - region_)), v,
                     __ATOMIC_RELEASE);
    return Status::ok();
  }
  // Another host: ADD what was consumed since the last publish, posted (no wait for the owner's reply: a round trip
  // here stalled the drain for every half ring). ADDs commute, so acks applied out of order still sum to v.
  return postSignal(call, src, acked_ + me_, delta, TETHER_SIGNAL_ADD);
}

Status Messaging::postSignal(const char* call, int pe, void* at, uint64_t value, tether_signal_op_t op) {
  SymRef ref;
  TETHER_TRY(wordRef(call, pe, at, &ref));
  void* ctx = nullptr;
  const TransportOps& ops = opsTo(pe, ref.kind, &ctx);
  return (ops.signalPost ? ops.signalPost : ops.signal)(ctx, pe, w_.remote(pe, ref), value, op).withContext(call);
}

const TransportOps& Messaging::opsTo(int pe, SegKind kind, void** ctx) const {
  const SegPath& p = w_.path(pe, kind);
  *ctx = paths_ ? paths_->ctx(p) : p.ctx;
  return *p.ops;
}

Status Messaging::handle(const char* call, int src, const SlotHead& h, const char* payload, bool* consumed) {
  *consumed = true;
  switch (h.kind) {
    case kEager:
    case kRts:
    case kRtsDirect: {
      Req* r = posted_.first;
      while (r && !(fits(r->pe, src) && fits(r->tag, h.tag))) r = r->nextPosted;
      if (r) posted_.unlink(*r);
      GpuIpcRef ipc{};  // an RTS_DIRECT by CUDA IPC from another PE names the region in its payload
      if (h.kind == kRtsDirect && (h.how & 0xff) == kViaIpc && src != me_) std::memcpy(&ipc, payload, sizeof ipc);
      if (!r) {
        if (spare_.empty()) unexpected_.emplace_back();
        else unexpected_.splice(unexpected_.end(), spare_, spare_.begin());
        Unexpected& u = unexpected_.back();
        u.src = src;
        u.tag = h.tag;
        u.rts = h.kind != kEager;
        u.bytes = static_cast<size_t>(h.bytes);
        u.inTiny = !u.rts && u.bytes <= Unexpected::kTinyBytes;  // (heap is null: a new node, or reset when spared)
        if (u.rts) {
          u.head = h;
          u.ipc = ipc;
        } else if (u.inTiny) {
          std::memcpy(u.tiny, payload, u.bytes);
        } else if (pool_->alloc(u.bytes, &u.poolOff)) {
          std::memcpy(poolBase_ + u.poolOff, payload, u.bytes);
        } else {  // the pool is full: never stall the ring (control and rendezvous traffic follow in it)
          u.heap.reset(new char[std::max<size_t>(u.bytes, 1)], std::default_delete<char[]>());
          std::memcpy(u.heap.get(), payload, u.bytes);
        }
        return Status::ok();
      }
      if (h.kind != kEager) return matchRts(call, *r, src, h, ipc);
      r->fromPe = src;
      r->fromTag = h.tag;
      r->msgBytes = h.bytes;
      complete(*r, deliver(call, *r, 0, payload, std::min<size_t>(h.bytes, r->cap)));
      return Status::ok();
    }
    case kCts: {
      Req* rq = reqs_.find(h.a);
      if (!rq || !rq->send)
        TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: PE %d answered send request %llu, which PE %d does not have", call, src,
                    static_cast<unsigned long long>(h.a), me_);
      Req& r = *rq;
      r.allowed = h.bytes;
      if (r.abandoned) {  // the blocking send returned: tell the receiver there is nothing coming
        if (r.allowed) queueCancel(src, h.b);
        forget(r);
        return Status::ok();
      }
      if (r.allowed == 0) {
        complete(r, Status::ok());
        return Status::ok();
      }
      Out o{};
      o.h.kind = kData;
      o.h.a = h.b;
      o.req = &r;
      if (h.how & kByData) {  // the receiver expects the bytes by the transport's protocol (expectByData)
        o.h.how = h.how;
        auto& q = byData_[static_cast<size_t>(src)];
        if (q.empty() && startByData(call, src, r, h.b, h.how & kByDataToGpu)) return Status::ok();
        q.push_back(o);  // started by pushAll in its turn (startByData)
        return Status::ok();
      }
      out_[static_cast<size_t>(src)].push_back(o);
      return Status::ok();
    }
    case kCancel: {
      Req* rq = reqs_.find(h.a);
      if (!rq && withdrawnLandings_.erase(h.a)) return Status::ok();  // a receive withdrawn after its CTS by data
      if (!rq || rq->send)
        TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: PE %d withdrew data for receive request %llu, which PE %d does not have",
                    call, src, static_cast<unsigned long long>(h.a), me_);
      Req& r = *rq;
      if (r.landing != kNoWord) cancelLanding(r);  // nothing comes (the sender never sends it)
      complete(r, Status(TETHER_ERR_TIMEOUT, strprintf("tether_recv: PE %d withdrew its message of %zu bytes (tag %d) "
                                                       "after %zu bytes: its send failed (a blocking send that timed "
                                                       "out, or bytes its transport could not start: see PE %d's log)",
                                                       src, r.msgBytes, r.fromTag, r.moved, src)));
      return Status::ok();
    }
    case kSkip:  // the sender's next message did not fit before the ring's end
      return Status::ok();
    case kData: {
      Req* rq = reqs_.find(h.a);
      if (!rq || rq->send)
        TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: PE %d sent data for receive request %llu, which PE %d does not have",
                    call, src, static_cast<unsigned long long>(h.a), me_);
      Req& r = *rq;
      Status s = deliver(call, r, h.b, payload, h.bytes);
      r.moved += h.bytes;
      if (!s.isOk() || r.moved >= r.allowed) complete(r, s);
      return Status::ok();
    }
    default:
      TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: slot %llu from PE %d has unknown kind %u", call,
                  static_cast<unsigned long long>(next_[static_cast<size_t>(src)]), src, h.kind);
  }
}

Status Messaging::deliver(const char* call, Req& r, size_t off, const void* symSrc, size_t n) {
  if (n == 0 || r.abandoned) return Status::ok();  // an abandoned receive's buffer belongs to its caller again
  char* to = static_cast<char*>(r.dst) + off;
  if (!r.gpu) {
    std::memcpy(to, symSrc, n);
    return Status::ok();
  }
  return move(call, Op::Get, to, symSrc, n, me_, nullptr, 0);  // from this PE's region into GPU memory
}

// Bytes of an unexpected message kept in this process's own memory (not symmetric) into the start of r's buffer.
Status Messaging::deliverHost(const char* call, Req& r, const void* src, size_t n) {
  if (n == 0 || r.abandoned) return Status::ok();
  if (!r.gpu) {
    std::memcpy(r.dst, src, n);
    return Status::ok();
  }
  return paths_->gpu()->copy(r.dst, src, n, false).withContext(call);
}

void Messaging::queueCancel(int dst, uint64_t recvId) {
  Out o{};
  o.h.kind = kCancel;
  o.h.a = recvId;
  out_[static_cast<size_t>(dst)].push_back(o);
}

void Messaging::forget(Req& r) {
  releaseWords(r);
  posted_.unlink(r);
  reqs_.erase(r.id);  // (last: r's storage is reset)
}

// A blocking send or receive whose wait failed: the caller gets its buffer back and has no request to wait for, so the
// request is withdrawn. Not started yet: dropped. A receive already matched to a rendezvous: its data is discarded as
// it arrives. A send whose request-to-send went out: the receiver is told (CANCEL) instead of getting data; one whose
// RTS_DIRECT went out takes its claim word (the receiver's later claim fails) -- unless the receiver claimed it
// first and is reading the buffer: then it returns true and the caller must wait for the request to complete.
bool Messaging::withdraw(uint64_t id) {
  Req* rq = reqs_.find(id);
  if (!rq) return false;
  Req& r = *rq;
  if (r.done) {
    forget(r);
    return false;
  }
  auto& q = out_[static_cast<size_t>(r.pe)];
  if (!r.send) {
    if (r.inPosted) {
      forget(r);
    } else if (r.landing != kNoWord) {
      if (!cancelLanding(r)) return true;  // the bytes are landing in the buffer now: wait for them
      // Nothing more reaches the buffer (the transport drops the bytes if they come); the sender may still answer
      // with a CANCEL, which then finds no request.
      if (withdrawnLandings_.size() < kWithdrawnMax) withdrawnLandings_.insert(r.id);
      forget(r);
    } else {
      r.abandoned = true;
    }
    return false;
  }
  if (r.landing != kNoWord) return true;  // the transport is reading the buffer (startByData): wait for it
  auto& bq = byData_[static_cast<size_t>(r.pe)];
  for (auto o = bq.begin(); o != bq.end(); ++o) {  // by data, not started: the receiver is told instead
    if (o->req != &r) continue;
    queueCancel(r.pe, o->h.a);
    bq.erase(o);
    forget(r);
    return false;
  }
  for (auto o = q.begin(); o != q.end(); ++o) {
    if (o->req != &r) continue;
    if (o->h.kind == kEager || o->h.kind == kRts || o->h.kind == kRtsDirect) {  // never written: nobody knows of it
      q.erase(o);
      forget(r);
      return false;
    }
    const uint64_t recvId = o->h.a;  // DATA under way: the rest is withdrawn
    q.erase(o);
    queueCancel(r.pe, recvId);
    forget(r);
    return false;
  }
  if (r.claim != kNoWord && r.allowed == 0) {  // RTS_DIRECT out, no CTS yet
    uint64_t open = kClaimOpen;
    if (!__atomic_compare_exchange_n(triggers_ + r.claim, &open, kClaimWithdrawn, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      return true;  // the receiver is reading: kClaimDone (or a CTS) follows
    directs_.remove(&r);
    r.claim = kNoWord;  // never reused: the receiver's claim may still come, and must keep failing
    forget(r);
    return false;
  }
  r.abandoned = true;  // its request-to-send is out, no answer yet: the CTS handler withdraws it
  return false;
}

// How many of this PE's slots to dst dst has consumed, as far as this PE knows: the larger of its ack word (dst's
// posted ADDs or stores) and the count dst carried in its last slot here (heard_). Both only grow and never exceed
// the truth, so neither can free a slot dst still has to read.
uint64_t Messaging::credit(int dst) const {
  return std::max(__atomic_load_n(acked_ + dst, __ATOMIC_ACQUIRE), heard_[static_cast<size_t>(dst)]);
}

// Writes what credit allows from dst's queue.
Status Messaging::push(const char* call, int dst, bool* did) {
  auto& q = out_[static_cast<size_t>(dst)];
  const uint64_t& sent = sent_[static_cast<size_t>(dst)];
  while (!q.empty() && sent - credit(dst) < slots_) {
    Out& o = q.front();
    Req* r = o.req;
    if (o.h.kind == kEager || o.h.kind == kData) {  // they may span slots: free ones, without wrapping
      const bool data = o.h.kind == kData;  // the next fragment of a rendezvous send through the ring
      const size_t n = data ? std::min(fragTo_[static_cast<size_t>(dst)], r->allowed - r->moved) : r->cap;
      const uint64_t span = spanOf(n), at = sent % slots_, free = slots_ - (sent - credit(dst));
      if (at + span > slots_) {  // the ring ends first: one SKIP takes its rest, the message then starts at slot 0
        if (free < slots_ - at) break;
        SlotHead skip{};
        skip.kind = kSkip;
        TETHER_TRY(writeSlot(call, dst, skip, nullptr, 0, false, slots_ - at));
        *did = true;
        continue;
      }
      if (free < span) break;
      SlotHead h = o.h;
      const char* from = static_cast<const char*>(r->src);
      if (data) {
        h.bytes = n;
        h.b = r->moved;
        from += r->moved;
      }
      TETHER_TRY(writeSlot(call, dst, h, from, n, r->gpu, span));
      *did = true;
      if (data && (r->moved += n) < r->allowed) continue;
      complete(*r, Status::ok());
      q.pop_front();
      continue;
    }
    *did = true;
    switch (o.h.kind) {
      case kRtsDirect:  // by CUDA IPC to another PE: the region's GpuIpcRef as the payload
        TETHER_TRY(writeSlot(call, dst, o.h, r->ipc.get(), r->ipc ? sizeof(GpuIpcRef) : 0, false));
        q.pop_front();
        break;
      case kRts:
      case kCts:
      case kCancel:
        TETHER_TRY(writeSlot(call, dst, o.h, nullptr, 0, false));
        q.pop_front();
        break;
      default:
        q.pop_front();
    }
  }
  return Status::ok();
}

// One blocking put, get (from this PE's own region) or put-with-signal (SET) through the World's paths, GPU work on the
// sibling context (core/sibling_paths.h): it must move while a kernel or a stream waits for this room.
Status Messaging::move(const char* call, Op::Kind kind, void* dest, const void* src, size_t n, int pe, uint64_t* sig,
                       uint64_t value) {
  Op op = rmaOp(kind, dest, src, n, pe);
  op.sig = sig;
  op.value = value;
  op.sigOp = TETHER_SIGNAL_SET;
  SymRef ref{SegKind::Host, 0}, sigRef{SegKind::Host, 0};
  TETHER_TRY(checkOp(w_, call, op, &ref, sig ? &sigRef : nullptr));
  return runOp(w_, op, ref, sig ? sigRef : ref, false, nullptr, paths_.get());
}

Status Messaging::wordRef(const char* call, int pe, void* at, SymRef* ref) {
  Op o = rmaOp(Op::Signal, nullptr, nullptr, 0, pe);
  o.sig = static_cast<uint64_t*>(at);
  return checkOp(w_, call, o, nullptr, ref);
}

Status Messaging::writeSlot(const char* call, int dst, const SlotHead& head, const void* payload, size_t n,
                            bool payloadGpu, uint64_t span) {
  SlotHead h = head;
  if (span > 1) h.c = span;
  const uint64_t consumed = next_[static_cast<size_t>(dst)];  // of dst's slots to this PE: carried back (its credit)
  h.ack = static_cast<uint32_t>(consumed);
  uint64_t& sent = sent_[static_cast<size_t>(dst)];
  char* remote = slot(me_, sent);  // my ring at dst: the same symmetric address on every PE
  auto* sig = reinterpret_cast<uint64_t*>(remote);
  const size_t body = sizeof(SlotHead) - sizeof(uint64_t);  // the head after seq
  const bool cpuPayload = !(payloadGpu && n);
  char* direct = direct_[static_cast<size_t>(dst)];
  void* ctx = nullptr;
  const TransportOps& ops = opsTo(dst, SegKind::Host, &ctx);
  if (direct && cpuPayload) {  // a mapped peer and a CPU payload: stores, then seq with release order
    direct += remote - region_;
    std::memcpy(direct + sizeof(uint64_t), reinterpret_cast<const char*>(&h) + sizeof(uint64_t), body);
    if (n) std::memcpy(direct + sizeof(SlotHead), payload, n);
    __atomic_store_n(reinterpret_cast<uint64_t*>(direct), sent + 1, __ATOMIC_RELEASE);
  } else if (!direct && ops.putFlagged && sizeof(SlotHead) + n <= kFlaggedPutMax) {
    // Another host: the whole slot as one flagged put (one message, seq visible last), built in staging_; a GPU
    // payload is copied there first by the copy engine (sibling context: never behind the legacy stream), since a
    // network transport moves host bytes much faster than it stages GPU memory itself (UCX over TCP, measured in
    // docs/msg.md).
    const uint64_t seq = sent + 1;
    std::memcpy(staging_.data(), &h, sizeof h);
    std::memcpy(staging_.data(), &seq, sizeof seq);
    if (!cpuPayload) TETHER_TRY(paths_->gpu()->copy(staging_.data() + sizeof h, payload, n, false).withContext(call));
    else if (n) std::memcpy(staging_.data() + sizeof h, payload, n);
    SymRef ref;
    TETHER_TRY(wordRef(call, dst, remote, &ref));
    TETHER_TRY(ops.putFlagged(ctx, dst, w_.remote(dst, ref), staging_.data(), sizeof(SlotHead) + n).withContext(call));
  } else if (!cpuPayload) {
    TETHER_TRY(move(call, Op::Put, remote + sizeof(uint64_t), reinterpret_cast<const char*>(&h) + sizeof(uint64_t),
                    body, dst, nullptr, 0));
    TETHER_TRY(move(call, Op::PutSignal, remote + sizeof(SlotHead), payload, n, dst, sig, sent + 1));
  } else if (n > kStageMax) {  // a large host payload straight into the slot (no staging copy), then head + seq
    TETHER_TRY(move(call, Op::Put, remote + sizeof(SlotHead), payload, n, dst, nullptr, 0));
    TETHER_TRY(move(call, Op::PutSignal, remote + sizeof(uint64_t), reinterpret_cast<const char*>(&h) + sizeof(uint64_t),
                    body, dst, sig, sent + 1));
  } else {
    std::memcpy(staging_.data(), &h, sizeof h);
    if (n) std::memcpy(staging_.data() + sizeof h, payload, n);
    TETHER_TRY(move(call, Op::PutSignal, remote + sizeof(uint64_t), staging_.data() + sizeof(uint64_t), body + n, dst,
                    sig, sent + 1));
  }
  sent += span;
  carried_[static_cast<size_t>(dst)] = consumed;
  return Status::ok();
}

// ---- completion --------------------------------------------------------------------------------------------------

void Messaging::fill(const Req& r, tether_msg_status_t* st) const {
  if (!st) return;
  st->source = r.send ? r.pe : r.fromPe;
  st->tag = r.send ? r.tag : r.fromTag;
  st->bytes = r.send ? r.cap : std::min(r.msgBytes, r.cap);
  st->error = r.result.code();
}

Status Messaging::finish(uint64_t* req, tether_msg_status_t* st) {
  Req& r = *reqs_.find(*req);
  fill(r, st);
  Status s = r.result;
  releaseWords(r);
  reqs_.erase(r.id);
  *req = 0;
  return s;
}

Status Messaging::test(const char* call, uint64_t* req, bool* done, tether_msg_status_t* st) {
  if (!req || !done) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req or done is NULL", call);
  *done = false;
  if (*req == 0) {
    *done = true;
    if (st) *st = tether_msg_status_t{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
    return Status::ok();
  }
  std::lock_guard<std::mutex> lock(mu_);
  Look look;
  bool ok = false, did = false;
  TETHER_TRY(ready(call, SIZE_MAX, *req, &look, &ok));
  if (!ok) TETHER_TRY(progress(call, &did));
  if (!ok) TETHER_TRY(ready(call, SIZE_MAX, *req, &look, &ok));
  if (!ok) return Status::ok();
  *done = true;
  return report(req, st);
}

Status Messaging::ready(const char* call, size_t i, uint64_t id, Look* look, bool* out) {
  Req* rq = reqs_.find(id);
  if (!rq)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s is not pending on PE %d (completed already, or not a request of this "
                "world)", call, reqName(i, id).c_str(), me_);
  const Req& r = *rq;
  if (!r.persist) {
    *out = r.done;
    return Status::ok();
  }
  if (!look->taken) {
    look->taken = true;
    look->rounds = startedRounds(r);
    look->inactive = look->rounds == r.persist->reported;
  }
  *out = static_cast<int64_t>(r.persist->completed - look->rounds) >= 0;
  return Status::ok();
}

Status Messaging::report(uint64_t* req, tether_msg_status_t* st) {
  Req& r = *reqs_.find(*req);
  if (!r.persist) return finish(req, st);
  Persist& p = *r.persist;
  if (p.completed == p.reported) {  // inactive: an empty status, as MPI's
    if (st) *st = tether_msg_status_t{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
    return Status::ok();
  }
  p.reported = p.completed;
  const Status s = p.failure;
  p.failure = Status::ok();
  if (st) {
    *st = p.last;
    st->error = s.code();
  }
  return s;
}

Status Messaging::timeout(const char* call, uint64_t id, double waited) {
  Req* rq = reqs_.find(id);
  const Req& r = *rq;
  if (r.send)
    TETHER_FAIL(TETHER_ERR_TIMEOUT, "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d: a send of %zu bytes to PE "
                "%d, tag %d (%s)", call, waited, me_, r.cap, r.pe, r.tag,
                r.cap <= eagerTo_[static_cast<size_t>(r.pe)]
                    ? "eager: waiting for free slots in the destination's ring"
                : r.allowed == 0 && r.moved == 0 ? "rendezvous: the receiver has not posted a matching receive"
                                                 : "rendezvous: moving the data");
  const std::string from = r.pe < 0 ? std::string("any PE") : strprintf("PE %d", r.pe);
  const std::string tag = r.tag < 0 ? std::string("any tag") : strprintf("tag %d", r.tag);
  TETHER_FAIL(TETHER_ERR_TIMEOUT, "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d: a receive of up to %zu bytes "
              "from %s, %s: %s", call, waited, me_, r.cap, from.c_str(), tag.c_str(),
              r.msgBytes ? "the rendezvous data did not arrive" : "no matching message arrived");
}

Status Messaging::waitall(const char* call, size_t n, uint64_t* reqs, tether_msg_status_t* sts) {
  if (n && !reqs) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs is NULL", call);
  Status first;
  SpinWait spin(w_.timeout());
  SmallArray<char, 8> left(n, 1);
  SmallArray<Look, 8> looks(n, Look());
  size_t remaining = n;
  bool expired = false;  // the deadline passed (SpinWait::next reads the clock every 64 calls, not every pass)
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      bool did = false;
      Status ps = progress(call, &did);
      if (!ps.isOk()) return ps;
      for (size_t i = 0; i < n; ++i) {
        if (!left[i]) continue;
        if (reqs[i] == 0) {
          if (sts) sts[i] = tether_msg_status_t{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
          left[i] = false, --remaining;
          continue;
        }
        bool ok = false;
        TETHER_TRY(ready(call, i, reqs[i], &looks[i], &ok));
        if (!ok) continue;
        Status s = report(&reqs[i], sts ? &sts[i] : nullptr);
        if (!s.isOk() && first.isOk()) first = s;
        left[i] = false, --remaining;
      }
      if (remaining == 0) return first;
      if (did) spin.busy();
      if (expired)
        for (size_t i = 0; i < n; ++i)
          if (left[i]) return timeout(call, reqs[i], spin.elapsedSeconds());
    }
    expired = !spin.next();  // outside the lock: other threads of this PE progress meanwhile
  }
}

Status Messaging::wait(const char* call, uint64_t* req, tether_msg_status_t* st) {
  if (!req) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: req is NULL", call);
  tether_msg_status_t tmp{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
  Status s = waitall(call, 1, req, &tmp);
  if (!s.isOk() && tmp.error == TETHER_SUCCESS) tmp.error = s.code();  // not completed (a timeout): no fields to give
  if (st) *st = tmp;
  return s;
}

Status Messaging::waitOrWithdraw(const char* call, uint64_t req, tether_msg_status_t* st) {
  Status s = wait(call, &req, st);
  if (s.isOk() || !req) return s;
  bool reading = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reading = withdraw(req);
  }
  if (!reading) return s;
  // The receiver claimed the buffer and is reading it: the message is delivered after all once it says so.
  Status again = wait(call, &req, st);
  return again.isOk() ? again : s;
}

Status Messaging::sendBlocking(const char* call, const void* buf, size_t bytes, int pe, int tag) {
  uint64_t req = 0;
  TETHER_TRY(isend(call, buf, bytes, pe, tag, &req));
  return waitOrWithdraw(call, req, nullptr);
}

Status Messaging::recvBlocking(const char* call, void* buf, size_t bytes, int pe, int tag, tether_msg_status_t* st) {
  uint64_t req = 0;
  TETHER_TRY(irecv(call, buf, bytes, pe, tag, &req));
  return waitOrWithdraw(call, req, st);
}

Status Messaging::waitany(const char* call, size_t n, uint64_t* reqs, size_t* index, tether_msg_status_t* st) {
  if (!index || (n && !reqs)) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: reqs or index is NULL", call);
  *index = SIZE_MAX;
  SpinWait spin(w_.timeout());
  SmallArray<Look, 8> looks(n, Look());
  bool expired = false;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    bool did = false, any = false;
    TETHER_TRY(progress(call, &did));
    for (size_t i = 0; i < n; ++i) {
      if (reqs[i] == 0) continue;
      bool ok = false;
      TETHER_TRY(ready(call, i, reqs[i], &looks[i], &ok));
      if (looks[i].inactive) continue;  // an inactive persistent request counts as a null one (MPI)
      any = true;
      if (!ok) continue;
      *index = i;
      return report(&reqs[i], st);
    }
    if (!any) {
      if (st) *st = tether_msg_status_t{TETHER_ANY_PE, TETHER_ANY_TAG, 0, TETHER_SUCCESS};
      return Status::ok();
    }
    if (did) spin.busy();
    if (expired)
      for (size_t i = 0; i < n; ++i)
        if (reqs[i] && !looks[i].inactive) return timeout(call, reqs[i], spin.elapsedSeconds());
    lock.unlock();
    expired = !spin.next();
  }
}

}  // namespace tether
