// PathTable: how this PE reaches every segment of every PE. Owns the provider registry the World built, one
// PeerPath per PE (a SegPath per segment kind: the chosen provider's ops, context, the peer's mapped base and its
// remote key), the distinct (ops, ctx) pairs in use (quiet/fence visit each once) and the providers in use
// (progress). It lives in transport/ because it needs nothing above the transport layer: the World hands it the
// topology, the bootstrap and where each PE's segment is mapped, and reads paths back.
//
// Contracts: setUp and segmentsGrew are collective (bootstrap allgathers; every PE calls them in the same order).
// path(), quiet(), fence() and progress() may be called from any thread once setUp returned; segmentsGrew replaces
// keys and must not race with operations on the segment that grew (heap growth is a collective call).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "topology/topology.h"
#include "transport/provider.h"
#include "transport/transport.h"

namespace tether {

// How this PE reaches one segment kind of one PE.
struct SegPath {
  PathKind kind = PathKind::None;
  const TransportOps* ops = nullptr;
  void* ctx = nullptr;
  char* base = nullptr;  // the peer's segment as mapped here (CPU- or GPU-addressable), or nullptr
  std::string reason;
  Provider* provider = nullptr;     // the provider that connected this path
  const RemoteKey* key = nullptr;   // the peer's remote key for this segment, or nullptr (empty: local providers)
};

struct PeerPath {
  SegPath seg[kSegKinds];  // indexed by SegKind
};

// One segment kind as the path table sees it: this PE's own range (registered with the providers) and where PE
// pe's segment is mapped here (asked only for PEs a provider connects).
struct SegmentMap {
  bool present = false;
  const void* myBase = nullptr;
  uint64_t myBytes = 0;
  std::function<char*(int pe)> peerBase;
};

class PathTable {
 public:
  // For every PE and each present segment kind (HOST, DEVICE): the registry's cheapest available provider, connected
  // and logged at TETHER_LOG=info:transport ("path to the HOST segment of PE 1: shm via shm (...)"); then the remote
  // keys of every present kind are exchanged (one allgather per kind, even when every key is empty).
  // Errors carry the "tether_init" context (an unreachable PE: TETHER_ERR_UNREACHABLE).
  Status setUp(const Topology& topo, int me, const PathOverrides& ov, ProviderRegistry registry,
               const SegmentMap (&segs)[kSegKinds], Bootstrap& boot);

  const SegPath& path(int pe, SegKind kind) const {
    return paths_[static_cast<size_t>(pe)].seg[static_cast<int>(kind)];
  }
  int size() const { return static_cast<int>(paths_.size()); }

  // Gives segment kind `to` the paths of kind `from` (same PEs, same providers) with bases from peerBase (the STATIC
  // segment reaches the same memory as the HOST heap). Keys of `to` start empty: exchange them with segmentsGrew.
  void mirror(SegKind from, SegKind to, const std::function<char*(int pe)>& peerBase);

  // True when some PE's provider registered a non-empty key at start-up (the same answer on every PE): only then
  // does a segment's growth need segmentsGrew.
  bool hasRemoteKeys() const { return hasKeys_; }
  // Collective: re-registers this PE's segment of `kind` ([myBase, +myBytes), after it grew or appeared) with every
  // provider and exchanges the keys again.
  Status segmentsGrew(SegKind kind, const void* myBase, uint64_t myBytes, Bootstrap& boot);

  // Blocking gets posted together: item i from PE items[i].pe's segment kinds[i]; one TransportOps::getv per
  // (ops, ctx) in use (one round trip each), one blocking get per item where the transport has no getv. All complete
  // at return; the first error is returned (with every posted get complete or cancelled: getv's contract).
  Status getMany(const SegKind* kinds, const GetItem* items, size_t count) const;

  Status quiet() const;
  Status fence() const;
  // Lets every provider in use move its work on; cheap (one virtual call per provider in use; no-ops for the local
  // ones). True when some provider did work.
  bool progress() const {
    bool did = false;
    for (Provider* p : active_) did |= p->progress();
    return did;
  }
  // Provider::idleProgress of every provider in use (the proxy between descriptors).
  bool idleProgress() const {
    bool did = false;
    for (Provider* p : active_) did |= p->idleProgress();
    return did;
  }
  // An idle progressing thread's pause (Provider::idleWait): waits on the first provider in use that can wait for
  // events, else sleeps maxWait. Providers without events (shm, p2p, staged) need no progress from idle threads.
  void idleWait(std::chrono::microseconds maxWait) const {
    for (Provider* p : active_)
      if (p->idleWait(maxWait)) return;
    std::this_thread::sleep_for(maxWait);
  }

 private:
  void addInUse(const SegPath& p);
  Status exchangeKeys(SegKind kind, const void* myBase, uint64_t myBytes, Bootstrap& boot);

  ProviderRegistry registry_;
  std::vector<PeerPath> paths_;
  std::vector<std::pair<const TransportOps*, void*>> opsInUse_;  // distinct (ops, ctx) over all paths
  std::vector<Provider*> active_;                                 // distinct providers over all paths
  // Remote keys by segment kind and PE (bytes, and the RemoteKey a SegPath points at; sized once in setUp).
  std::vector<std::vector<char>> keyBytes_[kSegKinds];
  std::vector<RemoteKey> keys_[kSegKinds];
  bool hasKeys_ = false;
};

}  // namespace tether
