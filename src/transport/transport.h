// Transport interface: one ops table plus capability flags per peer path (DESIGN §2, §3).
//
// A path is chosen once per (PE pair) at start-up from the topology record and never on the hot path. The RMA layer
// calls ops through the PeerPath of the target PE and segment kind. Paths today: `self`/`shm` (host memory of a
// same-host PE, direct load/store, no GPU) and `p2p` (GPU present: copy engines, GPU atomics). `proxy` (network via
// UCX) will fill the same table.
//
// Ordering contract every implementation keeps:
//  - put/get: blocking forms complete before returning; nbi forms complete at quiet().
//  - signal(): the signal update becomes visible to the target only after every put this PE issued to that target
//    before it (release); a reader that acquires the signal sees the data.
//  - amo(): atomic with respect to every other amo()/signal() on the same word, from any PE and path.
//  - fence(): orders puts/AMOs/signals to each target; quiet(): completes everything issued so far.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/amo.h"
#include "base/status.h"
#include "tether/tether.h"
#include "topology/topology.h"

namespace tether {

enum TransportCap : uint32_t {
  kCapLoadStore = 1u << 0,     // peer memory is mapped here: tether_ptr works, ops take RemoteAddr::ptr
  kCapAtomics = 1u << 1,       // atomics native on the peer's memory
  kCapHostSegment = 1u << 2,   // serves HOST segments
  kCapDeviceSegment = 1u << 3, // serves DEVICE segments
  // A blocking signal() returns only once every earlier put of the same ctx, nbi ones included, is complete: a
  // blocking put-with-signal whose put and signal share the ctx posts its put and waits once, at the signal.
  kCapSignalCompletesPuts = 1u << 4,
  // expectData and sendData (below) also take this process's GPU memory (a CUDA-aware network transport): a receive
  // buffer in GPU memory is written by the transport's own GPU-aware protocol (sendData's toGpu), never by the CPU.
  kCapDataGpu = 1u << 5,
};

// Target of an operation: the segment kind and symmetric offset (always) and, where the peer's segment is mapped
// here, the translated pointer (CPU-addressable for HOST segments, GPU-addressable for DEVICE segments).
// The peer's remote key for the segment (what its provider's registerSegment gave, exchanged at start-up and on
// heap growth) rides along for providers that address memory by key; null for the local providers.
struct RemoteKey {
  const char* data;
  size_t size;
};
struct RemoteAddr {
  char* ptr;       // CPU-usable (HOST segments) or GPU-usable (DEVICE segments) address, or nullptr
  uint64_t offset;
  SegKind kind;
  char* gpuPtr;    // the GPU-usable address of the same byte (HOST segments registered with CUDA), or nullptr
  const RemoteKey* key = nullptr;  // the peer's key for this segment, or nullptr (local providers)
};

struct TransportOps {
  const char* name;
  uint32_t caps;
  Status (*put)(void* ctx, int pe, const RemoteAddr& dst, const void* src, size_t n, bool nbi);
  Status (*get)(void* ctx, int pe, void* dst, const RemoteAddr& src, size_t n, bool nbi);
  Status (*amo)(void* ctx, int pe, const RemoteAddr& dst, const AmoArgs& args, uint64_t* fetched);
  Status (*signal)(void* ctx, int pe, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op);
  Status (*quiet)(void* ctx);
  Status (*fence)(void* ctx);
  // Optional (nullptr: put, remote completion): a put that returns once src is reusable; quiet (and a later signal
  // to pe) completes it remotely, fence orders it (tether_put_local).
  Status (*putLocal)(void* ctx, int pe, const RemoteAddr& dst, const void* src, size_t n);
  // Optional (nullptr: signal): a signal whose application the caller does not wait for, with no completion of
  // earlier operations first: the barrier's, whose target waits for it (after the barrier's own quiet).
  Status (*signalPost)(void* ctx, int pe, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op);
  // Optional (nullptr: not offered; HOST segments): puts n >= 8 bytes whose first 8 (a flag word, 8-aligned) become
  // visible at the target only after the rest (a reader that acquires the flag sees every byte), in ONE message: src
  // is reusable on return, the put completes at quiet; two flagged puts are not ordered with each other. The
  // messaging room's slots to other hosts (core/messaging.cpp); n at most kFlaggedPutMax (128 KiB: a 64 KiB
  // message spanning slots with its head).
  Status (*putFlagged)(void* ctx, int pe, const RemoteAddr& dst, const void* src, size_t n);
  // Optional (all three or none): a two-sided transfer by the transport's own protocol into memory the receiver names
  // (any host memory of its process, not a segment; GPU memory with kCapDataGpu): the messaging room's rendezvous
  // data to other hosts (core/messaging.cpp). The receiver calls expectData first: the `total` bytes PE pe sends with
  // `token` land in dst (at most n), then *done (a word of the receiver's, 0 until then) is stored with release
  // order: total + 1, or kDataFailed. cancelData withdraws an expectation: true when nothing will be written into dst
  // or *done any more (data that comes later is dropped), false while bytes are being written (*done follows).
  // sendData (the sender, after the receiver said it expects them) starts moving one piece of the message: n bytes
  // from src into the receiver's dst + offset, of a message of `total` bytes (offset 0 and n == total: the whole
  // message; the pieces of one message may be sent one after another or at once, each offset once, offset + n <=
  // total), and returns: *sent (a word of the sender's, 0 until then) is stored with release order once src is
  // reusable and the receiver has taken the piece (or dropped it): 1, or kDataFailed (the log says why). The caller
  // keeps src and *sent until then; an error returned means nothing started and *sent is never written. A piece
  // beyond the receiver's n fails the transfer there. Several may be under way at once, to any PEs. GPU
  // memory (src, dst) only where the ops carry kCapDataGpu; the sender passes toGpu when the receiver's dst is GPU
  // memory (the receiver said so), and the transport then delivers by a protocol that writes dst itself (UCX:
  // rendezvous); bytes that reach a GPU dst otherwise are dropped and *done reports kDataFailed.
  Status (*expectData)(void* ctx, int pe, uint64_t token, void* dst, size_t n, uint64_t* done);
  bool (*cancelData)(void* ctx, int pe, uint64_t token);
  Status (*sendData)(void* ctx, int pe, uint64_t token, const void* src, size_t n, size_t offset, size_t total,
                     bool toGpu, uint64_t* sent);
  // Optional (nullptr: one blocking get per item): count blocking gets, to any PEs, posted together and all complete
  // when it returns (one round trip for the batch; the collectives' pulls from other hosts). Unlike nbi gets and a
  // quiet, it waits for these gets only (a UCX worker flush would flush every endpoint). On failure every get that
  // was posted has completed or been cancelled (no write into a dst after return); the first error is returned.
  Status (*getv)(void* ctx, const struct GetItem* items, size_t count);
  // Optional (nullptr: nothing to prepare): make this PE's connection to pe now, on the calling thread, where the
  // transport otherwise makes it at the first operation (UCX: the endpoint). World::deviceHandle calls it for the PEs
  // its proxy serves, so that the proxy's first operation to a peer does not make it while this PE's kernels wait for
  // the proxy: on one H200 (2026-12-05, two netns hosts of two PEs, barriers by host) a proxy whose first descriptor
  // went to a peer this PE had never contacted never completed it (no endpoint was logged as made).
  Status (*preconnect)(void* ctx, int pe);
};
// One get of TransportOps::getv: n bytes of PE pe's src into dst.
struct GetItem {
  int pe;
  void* dst;
  RemoteAddr src;
  size_t n;
};
constexpr size_t kFlaggedPutMax = size_t{128} << 10;
constexpr uint64_t kDataFailed = ~uint64_t{0};  // expectData's *done, sendData's *sent: the transfer failed

// The shm transport (also serves the self path): direct loads, stores and CPU atomics on mapped host memory.
const TransportOps& shmTransportOps();

class GpuContext;

// The GPU host path (ctx = GpuContext*): serves HOST and DEVICE segments of same-host PEs whose GPUs can address each
// other. Copies that touch device memory go through copy engines; HOST-to-HOST bytes are memcpy'd; atomics and
// signals on DEVICE words run as system-scope GPU atomics (so they are atomic against kernels' atomics), on HOST
// words as CPU atomics.
const TransportOps& p2pTransportOps();

// The staged path: DEVICE segments of a same-host PE whose GPU this PE's GPU cannot address (no peer access). The
// target GPU's own copy engine and kernels are driven from this process (its segment is mapped here with access for
// that GPU); a buffer on this PE's GPU hops through pinned host memory. ctx = StagedGpu* (transport/staged/staged.h,
// which holds the policy).
const TransportOps& stagedTransportOps();

}  // namespace tether
