// Messaging: two-sided tagged send/receive (tether/msg.h, issue #20), CPU-synchronous, stream and kernel models,
// built only on the World's one-sided verbs (put, put-with-signal, signal, get, and a transport's flagged put where
// it has one), so it runs on every path they run on (shm, p2p, UCX).
//
// Protocol. Every PE owns, in one symmetric HOST allocation (the region), an inbox ring of K slots from each PE
// (itself included) and an ack word per PE:
//   region = [agreement words | acked[n_pes] | inbox[source][K] slots | unexpected pool]
//   slot   = 64-byte SlotHead (seq first) + payload (eager_bytes rounded up to 64, at least 128: an RTS_DIRECT by
//            CUDA IPC carries the send buffer's GpuIpcRef there).
// The sender of its n-th slot message to PE d writes head + payload into d's inbox[me][n % K] and then sets the
// slot's seq to n + 1, so seq is the flag that the rest has landed: stores and a release store when d's region is
// mapped here; for another host's PE one flagged put of the whole slot (TransportOps::putFlagged: one UCX active
// message whose handler stores seq last; a GPU payload copied into the host slot image first by the copy engine),
// else (no flagged put, a slot over kFlaggedPutMax, a GPU payload to a PE whose ring is mapped here) blocking puts,
// seq by a put-with-signal. It may write slot n only while n - credit < K: d consumes its slots in order, carries
// how many it consumed in the head of every slot it writes back (SlotHead::ack), and publishes the count into the
// sender's acked[d] word (a store, or to another host a posted ADD of the count since the last one) once the sender
// knows of neither for half a ring (a full ring always gets there); credit = the larger of the two (core/msg_credit.h).
// Slot kinds:
//   EAGER {tag, bytes, payload}       a whole message of at most eager_bytes; to a PE written by flagged puts
//                                     (another host) of up to TETHER_MSG_REMOTE_EAGER (64 KiB) in `c` consecutive
//                                     slots, its payload running on over the later slots' heads (one network
//                                     message); the receiver clears those slots' seq words before it credits them,
//                                     so no payload bytes read as a later lap's seq;
//   SKIP  {c}                         the rest of the ring up to its end: the next spanning EAGER starts at slot 0;
//   RTS   {tag, bytes, send id}       a longer message is ready (rendezvous);
//   CTS   {send id, recv id, allowed} the receiver matched it: send min(message, buffer) bytes (as DATA slots, or --
//                                     `how` kByData: PEs on different hosts; a GPU send buffer staged in host
//                                     memory, a GPU receive buffer where the transport writes GPU memory (a
//                                     CUDA-aware UCX) -- by the transport's sendData straight into the receive
//                                     buffer, which expects them: the room core/msg_by_data.h, a few bytes under
//                                     way per destination, the rest queued in order);
//   DATA  {recv id, offset, payload}  a fragment of a rendezvous message, written straight into the posted buffer
//                                     (to a PE written by flagged puts up to kSpanFragmentMax, spanning
//                                     `c` slots as a spanning EAGER does).
//   CANCEL{recv id}                   a withdrawn rendezvous send (its blocking call failed): the receive fails.
// Matching (MPI's; the queues: core/msg_match.h): an arriving EAGER/RTS goes to the first posted receive that fits,
// else to the unexpected list (an EAGER's bytes are copied into the pool, in this PE's region, or into private host
// memory when the pool is full, so its slot frees at once: a ring never stalls, since control and rendezvous traffic
// follow in it). A new receive takes the first fitting unexpected message, else joins the posted list. Slots from one
// source are consumed in order, so messages from one PE never overtake each other. Per destination, outgoing slot
// messages queue in order behind the credit.
// Deadlock freedom: consuming a slot never waits for anything; every completion call (wait, test, ...) progresses
// both directions (drains the inboxes, pushing the queues after each direct read, then pushes them). Posting does
// not drain: isend pushes its destination's queue, irecv only matches the unexpected list or joins the posted list.
//
// Who calls it: the C API (core/api.cpp, tether_msg_* and the send/recv family) through World::messaging(); the
// World owns it from tether_msg_init to tether_msg_finalize (or tether_finalize). Thread-safety: one mutex; waits
// release it between progress passes. Stream model: the region also holds kStreamWords trigger and done words; a
// progress thread (core/progress_thread.h; started by the first stream-ordered call, stopped at destroy) runs passes
// while any stream-ordered request is pending. Prepared sends (started by the host, a stream or a kernel's descriptor)
// and kernel wait descriptors use the same words. Persistent requests (tether_send_init / recv_init) keep one word
// index for their life: a start word (round k starts at base + k: stored by the host or a kernel, incremented by a
// stream) and a done word (base + rounds completed), so stream starts and waits capture no round number (graph
// replay) and a kernel's descriptor serves every round; progress passes poll the start words of the watched ones
// (watch_). GPU bytes move on a sibling GPU context (core/sibling_paths.h), so copies never wait behind a kernel or
// stream wait on the legacy default stream that waits for them.
// Typed messages travel as their packed bytes in a buffer of the request's own; a typed receive is unpacked when it
// completes, before its done words are set (so stream and kernel waits see the user's layout), GPU buffers on a
// non-blocking stream of its own for the same reason (the packed side: core/msg_typed.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/id_table.h"
#include "core/msg_by_data.h"
#include "core/msg_credit.h"
#include "core/msg_direct.h"
#include "core/msg_typed.h"
#include "core/msg_match.h"
#include "core/msg_words.h"
#include "core/op.h"
#include "core/progress_thread.h"
#include "tether/datatype.h"
#include "tether/msg.h"
#include "topology/topology.h"

namespace tether {

class World;
class SiblingPaths;
struct GpuIpcRef;
struct TransportOps;

class Messaging : private MsgByData::Owner, private MsgDirect::Owner {
 public:
  // Collective over the world: agrees on the attributes (defaults from TETHER_MSG_*), allocates the region.
  static Status create(World& w, const char* call, const tether_msg_attr_t* attr, std::unique_ptr<Messaging>* out);
  ~Messaging();
  // Collective: a barrier, then the region is released. Pending requests are dropped and reported.
  Status destroy(const char* call);

  Status isend(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req);
  // tether_send / tether_recv: post and wait; when the wait fails the request is withdrawn (withdraw below), so the
  // caller's buffer is never touched after the call returns.
  Status sendBlocking(const char* call, const void* buf, size_t bytes, int pe, int tag);
  Status recvBlocking(const char* call, void* buf, size_t bytes, int pe, int tag, tether_msg_status_t* st);
  Status irecv(const char* call, void* buf, size_t bytes, int pe, int tag, uint64_t* req);
  // Typed messages: count elements of type at buf travel as their packed bytes (a contiguous message). A send packs
  // when posted (buf may be reused at once); a receive gets the packed bytes into its own buffer and unpacks them into
  // buf when it is reported complete (wait/test/...). The type is duplicated: the caller may free its handle.
  Status isendTyped(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                    uint64_t* req);
  Status irecvTyped(const char* call, void* buf, int64_t count, tether_type_t type, int pe, int tag, uint64_t* req);
  Status sendTypedBlocking(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag);
  Status recvTypedBlocking(const char* call, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                           tether_msg_status_t* st);
  // *done = whether *req completed; if so *req = 0, *st filled and the request's own result returned.
  Status test(const char* call, uint64_t* req, bool* done, tether_msg_status_t* st);
  Status wait(const char* call, uint64_t* req, tether_msg_status_t* st);
  Status waitall(const char* call, size_t n, uint64_t* reqs, tether_msg_status_t* sts);
  Status waitany(const char* call, size_t n, uint64_t* reqs, size_t* index, tether_msg_status_t* st);

  // Stream model. isendOnStream: the send starts when stream reaches this point (the stream sets the request's
  // trigger word; a progress pass sees it and queues the send). waitOnStream: stream's later work waits until the
  // request completes (a progress pass sets its done word). The host still frees the request with wait/test.
  // While stream-ordered requests are pending, a progress thread runs the passes (the host may be elsewhere).
  Status isendOnStream(const char* call, const void* buf, size_t bytes, int pe, int tag, void* stream, uint64_t* req);
  Status waitOnStream(const char* call, uint64_t req, void* stream);
  // The stream's later work waits until every request of reqs (nulls skipped) completes: ONE wait on a group word.
  Status waitallOnStream(const char* call, size_t n, const uint64_t* reqs, void* stream);

  // Prepared sends: prepare arms a send (a trigger word, like isendOnStream) that starts when its trigger is set:
  // by post (the host, now), postOnStream (each request's trigger set by the stream, in one enqueue) or a kernel's
  // msg_send on sendDesc's descriptor. Each request starts once (startable). Sends to one PE are queued in the order
  // they were made (isend, prepare): a started send waits in armed_ behind an earlier one that has not started.
  Status prepare(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req);
  // A typed prepared send: packed when it starts -- by post (now), postOnStream (in stream order: the GPU engine into
  // its GPU stage, or the host packer in a stream host call) or, started by a kernel, by the progress pass that sees
  // the start (MsgTyped::copy). isendTypedOnStream: prepareTyped + postOnStream.
  Status prepareTyped(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                      uint64_t* req);
  Status isendTypedOnStream(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                            void* stream, uint64_t* req);
  Status post(const char* call, uint64_t req);
  Status postOnStream(const char* call, size_t n, const uint64_t* reqs, void* stream);
  Status sendDesc(const char* call, uint64_t req, tether_msg_send_desc_t* desc);
  // The request's completion word (taken on first use, as for waitOnStream) for a kernel's msg_wait.
  Status waitDesc(const char* call, uint64_t req, tether_msg_wait_desc_t* desc);

  // Persistent requests (tether_send_init / tether_recv_init): one Req kept across rounds, with a word index of its
  // own for its life (Persist below). A round starts when its start word says so: the host stores it (start) and
  // starts the round at once; a stream adds 1 (startOnStream) or a kernel stores it (persistDesc's descriptor), and a
  // progress pass sees it (watch_). Rounds of one request run one at a time: a start seen while a round is in flight
  // begins when it completes. Each round is an ordinary send (queued in the order of sends to its PE as made at its
  // start) or receive (matched or posted at its start). wait/test report every round started by their first look
  // and leave the request inactive (the handle stays); requestFree drops an inactive one.
  Status sendInit(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req);
  Status recvInit(const char* call, void* buf, size_t bytes, int pe, int tag, uint64_t* req);
  // Typed: the request owns the packed bytes for its life (MsgTyped::make). A send's round packs when it begins: a host
  // start packs at the call (start), a stream's or a kernel's start in the progress pass that begins the round
  // (scanStarts, MsgTyped::copy); a receive's round unpacks in complete, as every typed receive does.
  Status sendInitTyped(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                       uint64_t* req);
  Status recvInitTyped(const char* call, void* buf, int64_t count, tether_type_t type, int pe, int tag, uint64_t* req);
  Status start(const char* call, size_t n, const uint64_t* reqs);
  Status startOnStream(const char* call, size_t n, const uint64_t* reqs, void* stream);
  Status persistDesc(const char* call, uint64_t req, tether_msg_persist_desc_t* desc);
  Status requestFree(const char* call, uint64_t* req);

 private:
  struct SlotHead;
  struct Req;
  struct Rts;
  struct Out;
  using Typed = MsgTyped::Typed;  // a typed message's packed side (core/msg_typed.h)
  struct Persist;
  struct Look;

  Messaging(World& w, size_t eager, size_t slots, size_t unexpected);
  // A new pending request (send: buf is the source; receive: the destination); *id names it.
  Req& newReq(bool send, int pe, int tag, void* buf, size_t bytes, bool gpu, uint64_t* id);
  void arm(Req& r);  // r joins armed_ (its destination's later sends queue behind it)
  void enqueueSend(Req& r);  // r is made now: behind an unstarted send to its PE (arm), else into its queue
  // Lock held: a receive request's posting step: the first fitting unexpected message, else the posted list.
  Status matchOrPost(const char* call, Req& r);
  // Persistent requests. Lock held unless said.
  Status makePersistent(const char* call, bool send, void* buf, size_t bytes, int pe, int tag, bool gpu,
                        std::unique_ptr<Typed>&& typed, uint64_t* req);
  // *out = reqs[i], a persistent request of this PE (else TETHER_ERR_INVALID_ARG naming it).
  Status persistent(const char* call, size_t i, uint64_t id, Req** out);
  // The request list of a start: every entry persistent, none twice; for a host start (host) none active.
  Status checkStarts(const char* call, size_t n, const uint64_t* reqs, bool host, bool* gpu);
  uint64_t startedRounds(const Req& r) const;  // by the engine, or by the start word if it says more
  bool active(const Req& r) const;             // a round started and not reported by wait/test
  void watch(Req& r);                          // progress passes poll its start word; the thread runs
  // Its next round begins (the start word says so already); packed: a typed send's pack for it (a failure fails
  // the round, reported by wait/test).
  Status startRound(const char* call, Req& r, const Status& packed = Status::ok());
  Status scanStarts(const char* call, bool* did);  // progress: rounds started by a stream or a kernel
  // wait/test/waitall/waitany: whether request id is ready to report. look: a persistent request's rounds to wait
  // for, taken at the first look (inactive then: ready at once, nothing to report).
  Status ready(const char* call, size_t i, uint64_t id, Look* look, bool* out);
  Status report(uint64_t* req, tether_msg_status_t* st);  // a ready request: finish, or a persistent one's rounds
  // Lock held: *out = the prepared, not yet started send req (else TETHER_ERR_INVALID_ARG; or the thread's failure).
  Status startable(const char* call, uint64_t req, Req** out);
  // Lock held: req's completion word and the value it reaches (taking a word on first use; starts the thread).
  Status doneWord(const char* call, uint64_t req, uint64_t** word, uint64_t* value);
  Status move(const char* call, Op::Kind kind, void* dest, const void* src, size_t n, int pe, uint64_t* sig,
              uint64_t value);
  // *ref: the symmetric word at `at` (a word of the region, as PE pe sees it) for a transport call.
  Status wordRef(const char* call, int pe, void* at, SymRef* ref);
  // isend's argument checks (also isendOnStream's); *req = 0 first.
  Status checkSend(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) const;
  void queueSend(Req& r);  // r joins its destination's queue (EAGER or RTS)
  // The posting steps after the argument checks (typed: the request owns the packed bytes buf points into). Here and
  // in makePersistent / prepareReq typed is an rvalue reference, moved from only inside: a typed call passes
  // t->packed() beside std::move(t).
  Status postSend(const char* call, const void* buf, size_t bytes, int pe, int tag, bool gpu,
                  std::unique_ptr<Typed>&& typed, uint64_t* req);
  Status postRecv(const char* call, void* buf, size_t bytes, int pe, int tag, bool gpu,
                  std::unique_ptr<Typed>&& typed, uint64_t* req);
  Status checkRecv(const char* call, const void* buf, size_t bytes, int pe, int tag, uint64_t* req) const;
  // A typed send call's first steps: the send's argument checks (*req = 0), then MsgTyped::make.
  Status makeTypedSend(const char* call, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                       uint64_t* req, std::unique_ptr<Typed>* out);
  Status setUp(const char* call);
  // prepare's steps; typed: the request owns the packed bytes buf points into.
  Status prepareReq(const char* call, const void* buf, size_t bytes, int pe, int tag, std::unique_ptr<Typed>&& typed,
                    uint64_t* req);

  // Lock held: one pass over the inboxes and the outgoing queues; *did = something moved.
  Status progress(const char* call, bool* did);
  Status drain(const char* call, int src, bool* did);
  // Handles the slot at src's next index; *consumed = false when it must stay (the pool is full).
  Status handle(const char* call, int src, const SlotHead& h, const char* payload, bool* consumed);
  Status push(const char* call, int dst, bool* did);
  Status pushAll(const char* call, bool* did);  // push to every destination with slot messages waiting
  // Writes slot message h (+ payload) into dst's ring at credit_.sent(dst), taking `span` consecutive slots (a spanning
  // EAGER or a SKIP; the caller checked credit and that they do not wrap).
  Status writeSlot(const char* call, int dst, const SlotHead& h, const void* payload, size_t n, bool payloadGpu,
                   uint64_t span = 1);
  size_t spanEagerMax(size_t want) const;  // TETHER_MSG_REMOTE_EAGER as the ring and a flagged put allow
  uint64_t spanOf(size_t bytes) const;     // slots an EAGER message of `bytes` takes (1 up to payload_)
  Status publishAck(const char* call, int src);
  // A signal on the region word `at` of PE pe, posted where its transport can (publishAck).
  Status postSignal(const char* call, int pe, void* at, uint64_t value, tether_signal_op_t op);
  // The transport serving pe's `kind` segment, *ctx its context for this room (GPU work on the sibling context).
  const TransportOps& opsTo(int pe, SegKind kind, void** ctx) const;
  // Receives: deliver bytes into r's buffer at off (a GPU buffer through World::get from this PE's region).
  Status deliver(const char* call, Req& r, size_t off, const void* symSrc, size_t n);
  Status deliverHost(const char* call, Req& r, const void* src, size_t n);  // from private host memory, offset 0
  void queueCancel(int dst, uint64_t recvId);  // CANCEL: the send for dst's receive recvId was withdrawn
  // MsgByData::Owner: a transfer of a request ended (complete it); the receiver of token hears no (more) data comes.
  void ended(MsgByData::Xfer& x, Status result) override;
  void refuse(int pe, uint64_t token) override { queueCancel(pe, token); }
  static MsgByData::Settings byDataSettings(const World& w);  // from TETHER_MSG_REMOTE_* and the World
  bool withdraw(uint64_t id);  // true: the receiver is reading the buffer (wait for completion)
  Status waitOrWithdraw(const char* call, uint64_t req, tether_msg_status_t* st);  // lock not held
  void forget(Req& r);  // drops r (and its stream words)
  // h: the RTS / RTS_DIRECT head; ipc: the region an RTS_DIRECT by CUDA IPC named (its payload), else unused.
  Status matchRts(const char* call, Req& r, int src, const SlotHead& h, const GpuIpcRef& ipc);
  // MsgDirect::Owner: a send's direct offer was read (complete it).
  void delivered(MsgDirect::Offer& o) override;
  static MsgDirect::Settings directSettings(const World& w);  // from TETHER_MSG_DIRECT / _IPC and the World
  void complete(Req& r, Status result);
  void fill(const Req& r, tether_msg_status_t* st) const;
  Status finish(uint64_t* req, tether_msg_status_t* st);  // r done: report it, forget it
  Status timeout(const char* call, uint64_t id, double waited);
  // Stream words (the region's stream area, words_): a free index, or TETHER_ERR_NO_MEMORY when all are in use.
  Status takeWord(const char* call, uint32_t* index);
  Status wordsInUse(const char* call) const;  // that error
  // *out: stream is being captured into a CUDA graph. One-time requests refuse it (capturedError,
  // TETHER_ERR_UNSUPPORTED): every replay would write and wait for their trigger and done words again, long after
  // the request (and maybe the words' next owner) is gone. Persistent requests replay (their stream calls capture no
  // value).
  Status capturing(const char* call, void* stream, bool* out) const;
  static Status capturedError(const char* call);
  void releaseWords(Req& r);
  void fireTriggers(bool* did);  // armed sends whose trigger the stream has set join their queue
  ProgressThread::Hooks threadHooks();  // pending: streamPending_; idle: only watched requests, no start queued
  bool isGpu(const void* p) const;
  char* slot(int src, uint64_t index) const;  // this PE's inbox slot (a symmetric address: the same on every PE)

  World& w_;
  const size_t eager_, slots_, payload_, slotBytes_, poolBytes_;
  const int n_, me_;
  std::mutex mu_;
  char* region_ = nullptr;
  uint64_t* acked_ = nullptr;  // acked_[d]: slots of my ring at d that d consumed (written by d)
  char* inbox_ = nullptr;
  std::vector<char*> mapped_;  // per PE: its region as this process maps it (same-host load/store path), or null
  RingCredit credit_;  // the rings' slot accounting (core/msg_credit.h): written, consumed, heard, published
  std::vector<std::deque<Out>> out_;  // per destination: slot messages waiting for credit, in order
  const size_t remoteEager_;          // TETHER_MSG_REMOTE_EAGER (clamped): eager bytes to PEs written by flagged puts
  std::vector<size_t> eagerTo_;       // per destination: the largest eager message (eager_, or remoteEager_ above)
  std::vector<size_t> fragTo_;        // per destination: the largest DATA fragment (payload_, or spanning slots)
  std::vector<char> staging_;  // head + payload of one slot message (another host's: one put, or one flagged put)
  // Typed messages' packed bytes and their pack / unpack (core/msg_typed.h). Declared before reqs_: requests dropped
  // at destruction release their GPU stages into it.
  MsgTyped typed_;
  IdTable<Req> reqs_;  // every pending request (and persistent one) by id; storage recycled
  // Matching (core/msg_match.h): receives waiting for a message, in the order posted, linked through the requests
  // (posting and matching allocate nothing; a withdrawn receive unlinks in O(1)); messages no receive took, in arrival
  // order, an eager one's bytes held in the pool at the region's end (attached by setUp).
  PostedQueue<Req> posted_;
  UnexpectedQueue<Rts> unexpected_;
  int drainStart_ = 0;
  // Stream model: per word index a trigger and a done word in the region (core/msg_words.h); generations only grow,
  // so a word can be reused as soon as its request is forgotten (a late stream wait on it is satisfied by a newer
  // value).
  StreamWords words_;
  // Rendezvous bytes to and from other hosts moved by the transport's data operations (core/msg_by_data.h): its
  // transfers live in the requests (Req::xfer); it reports their ends through ended / refuse below.
  MsgByData byData_{byDataSettings(w_), words_, *this};
  // Rendezvous messages to PEs of this host read by the receiver from the send buffer (core/msg_direct.h): its offers
  // live in the requests (Req::direct); it reports a read one through delivered below.
  MsgDirect direct_{directSettings(w_), words_, *this};
  std::list<Req*> armed_;     // sends not started yet, and those behind one to the same PE, in the order made
  std::vector<uint32_t> armedTo_;  // per destination: sends of it in armed_
  std::vector<char> blocked_;      // fireTriggers' scratch: per destination, an earlier send has not started
  std::list<Req*> watch_;          // persistent requests whose start word progress polls, in the order watched
  bool startQueued_ = false;       // scanStarts saw a start behind a round in flight (the thread's idle policy)
  std::unique_ptr<SiblingPaths> paths_;  // GPU data movement on a sibling context (core/sibling_paths.h)
  size_t streamPending_ = 0;  // requests with a stream trigger or done word, not yet forgotten
  // Progress passes while stream-ordered requests are pending (core/progress_thread.h): started by the first
  // stream-ordered call, stopped at destroy; its first failure is returned by every later call. Declared last: it
  // stops before the members its passes use go.
  ProgressThread thread_{mu_, threadHooks(), "PE " + std::to_string(me_)};
};

}  // namespace tether
