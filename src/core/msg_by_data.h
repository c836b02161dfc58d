// MsgByData: the rendezvous messages of two-sided messaging (core/messaging.h) whose bytes the transport moves with
// its own data operations (TransportOps::expectData / sendData / cancelData, transport/transport.h) instead of DATA
// slots through the ring: messages between PEs on different hosts of at least TETHER_MSG_REMOTE_RNDV bytes, into a
// buffer the transport can fill (host memory; GPU memory where the ops carry kCapDataGpu, a CUDA-aware UCX). UCX
// moves each piece as one active message, eager or rendezvous as UCX picks, like its tag messages.
//
// Contracts
//  - A transfer (Xfer) lives in its message's request; owner names that request for the Owner's callbacks. The
//    owner keeps it alive while it is busy() or queued, and drops it early only through cancel / withdraw / drop.
//  - Receive: expect() asks the transport to write the bytes into the buffer; false leaves the ring to carry them.
//    The transfer's landing word (a StreamWords index of the owner's stream area, taken here) says when they are in:
//    bytes + 1, or kDataFailed.
//  - Send (the receiver's CTS said "by data"): send() starts it, or queues it behind the destination's earlier ones
//    (startQueued starts those in order): at most TETHER_MSG_REMOTE_INFLIGHT bytes per destination under way, or one
//    larger message; no stream word free waits too. A GPU send buffer is copied into host memory first (the copy
//    engine of Links::copier): a pinned stage, at most TETHER_MSG_PINNED_MAX bytes of them in all, else host memory
//    of the transfer's own; where no whole pinned stage fits and TETHER_MSG_REMOTE_PIECE is set, in pieces -- one on
//    the wire while the next is copied into the other of two piece buffers (TETHER_MSG_REMOTE_PIECE_HOST: host
//    buffers too, for tests).
//  - Each transfer ends once, reported to the Owner by ended(): from poll() when its word is set, or at once when a
//    send cannot start. A send that fails after the receiver expected its bytes (or leaves pieces unsent) calls
//    refuse(pe, token) first, so the owner tells the receiver (a CANCEL) and its receive fails now, not at its
//    timeout. cancel / withdraw / drop end a transfer without ended().
//  - It knows no World: its settings, the transports and the GPU come in as Settings and Links (tests/unit's
//    test_msg_by_data drives it through a fake transport).
//  - Not thread-safe: the owner's lock guards it (as the StreamWords it shares).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "base/status.h"
#include "core/gpu_stages.h"
#include "core/msg_words.h"

namespace tether {

class GpuContext;
struct TransportOps;

class MsgByData {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;  // no landing word

  struct Xfer {
    void* owner = nullptr;  // the request this transfer belongs to (set by the owner; kept across rounds)
    bool send = false;
    int pe = -1;            // the peer: the send's destination, the receive's source
    int tag = 0;            // the message's tag (errors)
    uint64_t token = 0;     // the receive request's id: the transport's name for the message on both sides
    const void* src = nullptr;  // send: the buffer
    size_t bytes = 0;       // bytes that move
    bool gpu = false;       // send: src is GPU memory
    bool toGpu = false;     // send: the receiver's buffer is GPU memory
    size_t moved = 0;       // receive: bytes that landed (set before ended)
    uint32_t landing = kNone;  // the word the transport sets (kNone unless busy)
    // A GPU send buffer copied to host memory: a pinned stage (and a second one for pieces), else bounce.
    GpuStages::Stage* hostStage = nullptr;
    GpuStages::Stage* nextStage = nullptr;
    std::unique_ptr<char[]> bounce;
    // A send in pieces: the piece on the wire (off, len); for a GPU buffer the piece buffers (at: on the wire, next:
    // being copied) and a failure copying the next one.
    bool pieced = false;
    size_t pieceOff = 0, pieceLen = 0;
    char* pieceAt = nullptr;
    char* pieceNext = nullptr;
    Status pieceError;
    bool busy() const { return landing != kNone; }
  };

  // The owner's side (Messaging): told when a transfer ended, and when a receiver must hear that no (more) data comes.
  class Owner {
   public:
    virtual void ended(Xfer& x, Status result) = 0;
    virtual void refuse(int pe, uint64_t token) = 0;

   protected:
    ~Owner() = default;
  };

  struct Settings {
    int me = 0, nPes = 1;
    double timeout = 0;       // TETHER_TIMEOUT, seconds (drop's wait)
    size_t rndvMin = 0;       // TETHER_MSG_REMOTE_RNDV: from these bytes (0: never)
    size_t cap = 0;           // TETHER_MSG_REMOTE_INFLIGHT: bytes under way per destination
    size_t pinnedMax = 0;     // TETHER_MSG_PINNED_MAX (0: no pinned stages)
    size_t pieceBytes = 0;    // TETHER_MSG_REMOTE_PIECE (0: never in pieces)
    bool pieceHost = false;   // TETHER_MSG_REMOTE_PIECE_HOST
  };
  // Its ways out: the transport to a PE's HOST segment with its context for this room, progress of every transport
  // (drop's wait), and -- with a GPU -- the context whose pinned memory stages GPU send buffers and the one that
  // copies into them (without, no transfer may be a GPU one).
  struct Links {
    std::function<const TransportOps&(int pe, void** ctx)> ops;
    std::function<void()> progress;
    GpuContext* gpu = nullptr;
    GpuContext* copier = nullptr;
  };
  // words: the owner's stream area (landing words are taken from it).
  MsgByData(const Settings& s, StreamWords& words, Owner& owner);
  void attach(Links links) { links_ = std::move(links); }  // before the first transfer

  // Whether this PE's transport to pe moves a buffer of this process by sendData/expectData (gpu: GPU memory).
  bool takes(int pe, bool gpu) const;
  // Receive of `bytes` from PE src into dst (gpu: GPU memory), the receive request named token: true when the
  // transport will write them (x busy); false: the ring carries them.
  bool expect(const char* call, Xfer& x, int src, void* dst, size_t bytes, bool gpu, uint64_t token, int tag);
  // Send of `bytes` at src to PE dst whose receive token expects them by data: started, or queued in order.
  void send(const char* call, Xfer& x, int dst, const void* src, size_t bytes, bool gpu, int tag, uint64_t token,
            bool toGpu);
  // Queued sends that may start now do; *did: one did.
  void startQueued(const char* call, bool* did);
  bool unqueue(Xfer& x);  // a queued send never started leaves the queue: true if it was there
  // Busy transfers whose word is set end (or a send's next piece starts); *did: one did.
  void poll(bool* did);
  bool any() const { return !landings_.empty(); }
  // Give up a busy transfer: true when its buffer is no longer touched (it left the busy list, its word is free),
  // false while bytes are moving (its word follows). A receive's expectation is withdrawn; a send cannot be.
  bool cancel(Xfer& x);
  // A receive given up after its CTS (the owner forgets the request): cancel, and on success its token is kept
  // (bounded) so a CANCEL its sender may still send is recognised by withdrawn().
  bool withdraw(Xfer& x);
  bool withdrawn(uint64_t token);  // a token withdraw() kept (now forgotten)
  // A busy transfer dropped (destroy, a failed round): cancel, else wait for its word, progressing the transport,
  // for at most TETHER_TIMEOUT; after that its word is never reused (the transport may still set it).
  void drop(Xfer& x);

 private:
  bool start(const char* call, Xfer& x);  // false: not now (queue it)
  // x's GPU bytes into host memory (*from): all of them, or its first piece (*first bytes) into pieceAt.
  Status stage(const char* call, Xfer& x, const void** from, size_t* first);
  void unstage(Xfer& x, bool reusable);
  void stageNextPiece(Xfer& x);
  bool nextPiece(Xfer& x);       // false: it failed (x ended)
  void landed(Xfer& x, bool wordReusable);  // x out of landings_: word, stages and in-flight bytes given back
  static bool takes(const TransportOps& ops, bool gpu);

  const Settings s_;
  StreamWords& words_;
  Owner& owner_;
  Links links_;
  GpuStages hostStages_;
  bool pinnedRefused_ = false;  // logged once
  std::vector<std::deque<Xfer*>> queue_;  // per destination: sends waiting for their turn
  std::vector<size_t> inFlight_;          // per destination: bytes of sends under way
  std::list<Xfer*> landings_;             // busy transfers
  std::set<uint64_t> withdrawn_;          // (bounded by kWithdrawnMax)
  static constexpr size_t kWithdrawnMax = 4096;
};

}  // namespace tether
