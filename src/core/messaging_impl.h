// The private parts of Messaging (core/messaging.h) shared by its translation units: the wire format of a slot,
// the protocol's constants and the request records. Private to core/messaging*.cpp (nothing else includes it):
//   messaging.cpp             set-up, posting, matching receives, completion (wait/test and their family)
//   messaging_stream.cpp      the stream and kernel models: trigger/done/group words, prepared sends, the progress
//                             thread
//   messaging_persistent.cpp  persistent requests (tether_send_init / recv_init, start, start on a stream)
//   messaging_typed.cpp       typed messages' calls (their packed side and the engine: core/msg_typed.h)
//   messaging_rendezvous.cpp  rendezvous: a direct read (core/msg_direct.h), else a CTS (by data where
//                             core/msg_by_data.h moves the bytes)
//   messaging_progress.cpp    progress passes: draining the inboxes, handling slots, credit, writing slots
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/messaging.h"
#include "gpu/gpu.h"

namespace tether {


enum SlotKind : uint32_t { kEager = 1, kRts = 2, kCts = 3, kData = 4, kCancel = 5, kRtsDirect = 6, kSkip = 7 };
// An RTS's `how`: kTransportPayload, the sender can move the send buffer by the transport's sendData (host memory; GPU
// memory through a host copy of its own, startByData).
// A CTS's `how`: kByData, the receiver expects the bytes by the transport's sendData (TransportOps::expectData), not
// as DATA slots; with kByDataToGpu its receive buffer is GPU memory (the sender passes sendData's toGpu).
constexpr uint64_t kTransportPayload = 1, kByData = 1, kByDataToGpu = 2;
constexpr size_t kAgreeBytes = 128;  // the region's first bytes: 6 words in, 6 words out of the attribute check
// Stream-area word indices per PE (trigger, done, group, claim and landing words; 64 KiB).
constexpr uint32_t kStreamWords = 4096;
constexpr uint32_t kNoWord = UINT32_MAX;
// Rendezvous DATA fragments through the ring to another host span slots up to this (or TETHER_MSG_REMOTE_EAGER, if
// less): over TCP 64 KiB fragments took 256-512 KiB messages 1.2-1.3x longer than 32 KiB ones, 1-4 MiB level
// (bench/results/cpu-2core-vm/msg_remote_span_ab.txt).
constexpr size_t kSpanFragmentMax = size_t{32} << 10;
constexpr size_t kStageMax = 1024;  // host payloads up to this go with their head in one put (copied together first)

inline size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

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

// How an error names request id: reqs[i] of a list, or (i == SIZE_MAX) the call's one request.
inline std::string reqName(size_t i, uint64_t id) {
  return i == SIZE_MAX ? strprintf("request %llu", static_cast<unsigned long long>(id))
                       : strprintf("reqs[%zu] = %llu", i, static_cast<unsigned long long>(id));
}


// The first 64 bytes of a slot. seq is written last (the put-with-signal's signal); the rest arrives with the payload.
struct Messaging::SlotHead {
  uint64_t seq;
  uint32_t kind;
  int32_t tag;
  uint64_t bytes;  // EAGER: payload; RTS: message; CTS: allowed; DATA: fragment
  uint64_t a;      // RTS, RTS_DIRECT, CTS: the sender's request id; DATA, CANCEL: the receiver's request id
  uint64_t b;      // CTS: the receiver's request id; DATA: offset in the message; RTS_DIRECT: MsgDirect::Ticket::at
                   //   (the send buffer). A kViaIpc from another PE carries the buffer's GpuIpcRef as its payload.
  uint64_t c;      // RTS_DIRECT: Ticket::claim (the claim word's offset in the sender's region); EAGER, DATA, SKIP:
                   //   the slots it takes (a spanning EAGER's or DATA's payload runs on through the next slots'
                   //   memory; 0 reads as 1)
  uint64_t how;    // RTS_DIRECT: Ticket::how (MsgDirect::How, the SegKind); RTS: kTransportPayload; CTS: kByData..
  uint32_t pid;    // RTS_DIRECT: Ticket::pid (the sender's process, for kViaCma)
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
  // A typed message (core/msg_typed.h): the buffer above is typed->packed(). A send is packed when posted or when its
  // stream gets there; a receive is unpacked when it completes (complete), before any stream or kernel waiting for it
  // is told. A GPU stage is released with the request: a send's request is freed only after the send has read the
  // stage, a receive's after its unpack (synchronous, in complete).
  std::unique_ptr<Typed> typed;
  std::vector<uint32_t> groups;  // group words (waitall on a stream) this request adds 1 to when it completes
  // A rendezvous whose bytes the transport moves (core/msg_by_data.h: a receive expecting them by sendData, a send by
  // sendData, staged from GPU memory, in pieces); busy() while they move. owner: this request (newReq).
  MsgByData::Xfer xfer;
  // A rendezvous send the receiver reads itself (core/msg_direct.h: RTS_DIRECT, its claim word, a CUDA IPC export);
  // offered() while it is. owner: this request (newReq).
  MsgDirect::Offer direct;
  std::unique_ptr<Persist> persist;  // a persistent request (the fields above: its current or last round)
  // A receive waiting for a message: its links in posted_ (PostedQueue, core/msg_match.h), in the order posted.
  bool inPosted = false;
  Req* prevPosted = nullptr;
  Req* nextPosted = nullptr;
};

// What an unexpected RTS / RTS_DIRECT keeps for its receive (the queue's Meta, core/msg_match.h): the head as it came
// (a, the sender's request id; RTS_DIRECT: where to read) and, for an RTS_DIRECT by CUDA IPC, the region its payload
// named.
struct Messaging::Rts {
  SlotHead head;
  GpuIpcRef ipc;
};

// A slot message waiting for credit. DATA items stand for the remaining fragments of a rendezvous send.
struct Messaging::Out {
  SlotHead h;
  Req* req;  // EAGER, DATA: the send (payload from its buffer); CTS: null
};

}  // namespace tether
