// MsgDirect: the rendezvous messages of two-sided messaging (core/messaging.h) that the receiver reads itself, straight
// from the send buffer, instead of taking them as DATA slots through the ring: messages to a PE of this host whose
// region this process maps (RTS_DIRECT). How the receiver reads (How): by the World's get where the send buffer lies
// in a symmetric segment (HOST, DEVICE or STATIC), with process_vm_readv from other host memory (CMA), by CUDA IPC
// from other GPU memory (TETHER_MSG_IPC; a self-send copies from the address).
//
// Contracts
//  - An offer lives in its send request (Offer; owner names that request). offer() decides whether the send goes
//    direct and fills the Ticket the RTS_DIRECT carries; it takes a claim word (a StreamWords index of the owner's
//    stream area, set to kOpen), and for CUDA IPC to another PE exports the buffer (Offer::ipc, the slot's payload).
//  - The claim word decides between the receiver's read and the sender's withdrawal, whichever comes first: the
//    receiver's read() swaps kOpen for kRead, reads, then stores kDone; the sender's withdraw() swaps kOpen for
//    kWithdrawn. poll() reports offers whose word says kDone to the Owner (delivered), each once.
//  - read() answers Ring where it cannot read here (a GPU receive buffer from private host memory, CMA or CUDA IPC
//    refused, no GPU here): the caller answers with a CTS and the bytes come through the ring after all. A refusal is
//    logged once and remembered per source, whose later offers of that kind take the ring at once (without a claim).
//  - release() gives an offer's word back (the request is forgotten, or a persistent request's next round begins);
//    a withdrawn offer's word is never given back (the receiver's late claim must keep failing).
//  - It knows no World: its settings and its ways out (the regions, the symmetric heap, the get, the GPU) come in as
//    Settings and Links (tests/unit's test_msg_direct drives two of them in one process).
//  - Not thread-safe: the owner's lock guards it (as the StreamWords it shares).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "core/msg_words.h"
#include "gpu/gpu.h"
#include "topology/topology.h"

namespace tether {

class MsgDirect {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;  // no claim word
  // The claim word's states.
  static constexpr uint64_t kOpen = 0, kRead = 1, kWithdrawn = 2, kDone = 3;
  // How the receiver reads (the low byte of Ticket::how).
  enum How : uint64_t { kViaGet = 1, kViaCma = 2, kViaIpc = 3 };

  // A send offered for a direct read; lives in its request.
  struct Offer {
    void* owner = nullptr;          // the request (set by the owner; kept across rounds)
    uint32_t claim = kNone;         // the claim word while offered
    std::unique_ptr<GpuIpcRef> ipc;  // by CUDA IPC to another PE: the buffer's region (the RTS_DIRECT's payload)
    bool offered() const { return claim != kNone; }
  };
  // What an RTS_DIRECT tells the receiver.
  struct Ticket {
    uint64_t how = 0;    // How, and for kViaGet the segment's SegKind << 8
    uint64_t at = 0;     // kViaGet: the buffer's offset in that segment; kViaCma, kViaIpc: its address in the sender
    uint64_t claim = 0;  // the claim word's offset in the sender's region
    uint32_t pid = 0;    // the sender's process (kViaCma)
    bool byIpc() const { return (how & 0xff) == kViaIpc; }
  };
  // A direct offer was read: the owner completes the send.
  class Owner {
   public:
    virtual void delivered(Offer& o) = 0;

   protected:
    ~Owner() = default;
  };

  struct Settings {
    int me = 0, nPes = 1;
    bool on = true;   // TETHER_MSG_DIRECT
    bool ipc = true;  // TETHER_MSG_IPC (private GPU send buffers by CUDA IPC)
  };
  struct Links {
    char* region = nullptr;                // this PE's region (claim offsets count from its start)
    std::function<char*(int pe)> mapped;   // PE pe's region as this process maps it, or null (not on this host)
    // Whether [p, p + n) lies in a symmetric segment (*kind: which, *at: its offset there); gpu: p is GPU memory.
    std::function<bool(const void* p, size_t n, bool gpu, SegKind* kind, uint64_t* at)> symmetric;
    // n bytes of PE src's copy of the symmetric object at offset `at` of segment kind into dst (blocking).
    std::function<Status(const char* call, void* dst, int src, SegKind kind, uint64_t at, size_t n)> get;
    GpuContext* gpu = nullptr;  // exports, opens and copies CUDA IPC regions (null: no GPU here)
  };
  MsgDirect(const Settings& s, StreamWords& words, Owner& owner);
  void attach(Links links) { links_ = std::move(links); }  // before the first offer

  // Sender. A send of `bytes` at src (gpu: GPU memory) to PE pe: true when it is offered for a direct read (o holds
  // its claim word; *t what the RTS_DIRECT carries); false: an ordinary RTS (not this host, no word free, off, ...).
  bool offer(Offer& o, int pe, const void* src, size_t bytes, bool gpu, Ticket* t);
  // Offers whose receiver is done are delivered (Owner); *did: one was.
  void poll(bool* did);
  bool any() const { return !offers_.empty(); }
  // The sender gives up an offer whose CTS has not come: true when withdrawn (the receiver's claim will fail; the
  // word is never given back); false when the receiver is reading (kDone, or a CTS, follows).
  bool withdraw(Offer& o);
  void release(Offer& o);  // its word back and out of the list; its IPC export dropped

  // Receiver. The RTS_DIRECT t from PE src (ipc: the region its payload named) for a buffer dst (gpu: GPU memory)
  // taking n bytes: Read (the bytes are in, or *result says why not: the sender's send completes either way),
  // Withdrawn (the sender gave up first: nothing read), Ring (not read here: answer with a CTS).
  enum class Outcome { Read, Withdrawn, Ring };
  Outcome read(const char* call, int src, const Ticket& t, const GpuIpcRef& ipc, void* dst, bool gpu, size_t n,
               Status* result);

 private:
  bool exportIpc(Offer& o, int pe, const void* src, size_t bytes);
  static bool cmaRead(pid_t pid, uint64_t from, void* to, size_t n);

  const Settings s_;
  StreamWords& words_;
  Owner& owner_;
  Links links_;
  std::list<Offer*> offers_;          // offered, until delivered, withdrawn or released
  std::vector<char> cmaOk_;           // per source: process_vm_readv works (cleared at the first refusal)
  std::vector<char> ipcOk_;           // per source: its GPU buffers open by CUDA IPC here (cleared at first refusal)
  std::vector<char> ipcRefused_;      // per source: openRegion refused one of its buffers: 1 cache full, 2 a stale
                                      // mapping over its range (each reason logged once)
  std::set<std::string> ipcRefusals_;  // why send buffers could not be exported (each logged once)
};

}  // namespace tether
