// Transport providers and their registry (DESIGN §2): one Provider per way of reaching a peer's segment (shm, p2p,
// staged; later ucx). The path table (transport/path_table.h) asks every provider of its registry about each
// (peer, segment kind) once at start-up and connects the cheapest one that is available; the hot path only calls the
// chosen ops table.
//
// Contracts:
//  - probe() is a pure function of the topology record and TETHER_PATHS (no GPU or network calls), so the choice is
//    unit-tested on recorded topologies. Its reason is what TETHER_LOG=info:transport prints for the chosen path.
//    The local providers' probes are built from topology's choosePath (the path kind and its reason): a provider is
//    available where choosePath picks a path kind it serves.
//  - connect() runs once per (peer, kind) after its probe said available; the ops/ctx it gives stay valid for the
//    provider's lifetime.
//  - registerSegment() gives the remote-key blob peers need to address this PE's segment through this provider
//    (empty for providers that map memory: shm, p2p, staged). Called at start-up and after a segment grows.
//  - progress() moves the provider's outstanding work on; every bounded host wait and the proxy loop call it, from
//    any thread. No-op for the local providers. idleProgress() and idleWait() are for threads that progress on behalf
//    of a PE computing outside tether (the device-API proxy between descriptors): the first backs off while the PE
//    progresses by itself, the second blocks until the provider has events (UCX: its worker's event fd).
//  - start() runs once, collectively, before any probe or connect: a provider that exchanges something at start-up
//    (ucx: its worker addresses) does it here. Every PE's registry must then hold that provider (the ucx provider is
//    in every World's registry); the local providers do nothing.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "topology/topology.h"
#include "transport/transport.h"

namespace tether {

class GpuContext;

struct ProbeResult {
  bool available = false;
  int cost = 0;                     // lower wins among the available providers
  PathKind path = PathKind::None;   // the path kind the log names ("self", "shm", "p2p", "staged")
  std::string reason;               // why this path (available) or why not
  // Not available, but this provider serves the path kind the pair needs (the network path without a usable UCX):
  // its reason explains the failure better than the first provider's.
  bool serves = false;
};

// What connect() fills for one (peer, kind): the ops table, its context and the peer's segment as mapped here.
struct Connection {
  const TransportOps* ops = nullptr;
  void* ctx = nullptr;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual const char* name() const = 0;
  // Fails only on a request that cannot be met (a TETHER_PATHS override impossible for this pair).
  virtual Status probe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
                       ProbeResult* out) const = 0;
  virtual Status connect(const Topology& topo, int me, int peer, SegKind kind, Connection* out) = 0;
  // This PE's segment [base, base + bytes) of `kind`: *key gets what a peer needs to address it (empty: nothing).
  virtual Status registerSegment(SegKind kind, const void* base, uint64_t bytes, std::vector<char>* key) {
    (void)kind, (void)base, (void)bytes;
    key->clear();
    return Status::ok();
  }
  // Returns true when it did some work (a caller that waits then stays hot: SpinWait::busy).
  virtual bool progress() { return false; }
  // Progress on behalf of a PE that may be computing outside tether (the device-API proxy between descriptors): like
  // progress(), but a provider whose progress contends with the PE's own calls (UCX: one worker lock) skips it while
  // the PE progresses by itself, and this call does not count as the PE's own progress.
  virtual bool idleProgress() { return progress(); }
  // For an idle thread that progresses this provider (the UCX progress thread, the idle device-API proxy): blocks
  // until the provider has something to progress or `maxWait` passes, and returns true; false, at once, when it
  // cannot wait for events (the caller sleeps its period instead). A true return says nothing about which it was:
  // progress next either way.
  virtual bool idleWait(std::chrono::microseconds maxWait) {
    (void)maxWait;
    return false;
  }
  virtual Status start(const Topology& topo, int me, const PathOverrides& ov, Bootstrap& boot) {
    (void)topo, (void)me, (void)ov, (void)boot;
    return Status::ok();
  }
};

// An ordered list of providers (the World builds one at init; no global registry). Order breaks cost ties.
class ProviderRegistry {
 public:
  void add(std::unique_ptr<Provider> p) { providers_.push_back(std::move(p)); }
  size_t size() const { return providers_.size(); }
  Provider& at(size_t i) const { return *providers_[i]; }

  // Pure choice over the registry: the cheapest available provider for (me -> peer, kind) (ties: registry order).
  // When none is available fails with TETHER_ERR_UNREACHABLE ("tether_init: no usable path from PE .. to the ..
  // segment of PE ..: <reason>", the reason of the first provider that serves the path (ProbeResult::serves), else
  // the first provider's); a probe's own error is returned as it is.
  // *chosen: index of the provider; *result: its probe.
  Status choose(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov, size_t* chosen,
                ProbeResult* result) const;

 private:
  std::vector<std::unique_ptr<Provider>> providers_;
};

// The local providers (folders shm/, p2p/, staged/). gpu: this PE's GPU context (connect uses it; probes do not).
std::unique_ptr<Provider> makeShmProvider();
std::unique_ptr<Provider> makeP2pProvider(GpuContext* gpu);
std::unique_ptr<Provider> makeStagedProvider(GpuContext* gpu);

// The registry of the local providers: p2p and staged when this PE has a GPU context, then shm.
ProviderRegistry makeLocalRegistry(GpuContext* gpu);

// The network provider (folder ucx/): HOST and STATIC segments of PEs on other hosts (or of same-host PEs with
// TETHER_PATHS host=ucx) over UCX, and DEVICE segments of PEs on other hosts where both PEs' UCX moves CUDA memory.
// Built without UCX (CMake TETHER_UCX=OFF or no libucx), its probe reports the network path unavailable, naming what
// is missing.
//
// An atomic or signal that a peer asks this PE, the owner of the word, to apply to its own segment (owner-executed
// atomics: DEVICE words always, HOST/STATIC words with TETHER_UCX_AMO=owner). signal: a signal update (value, sigOp)
// instead of the AMO `amo`. The World applies it through its own local path (CPU atomics on HOST words, system-scope
// GPU atomics on DEVICE words), so it is atomic against this PE's kernels and same-host peers; *fetched gets the old
// value of fetching AMOs. Called from whichever thread progresses the UCX worker (a wait, the proxy, the progress
// thread); it must not wait on another PE.
struct OwnerOp {
  SegKind kind = SegKind::Host;
  uint64_t offset = 0;
  bool signal = false;
  AmoArgs amo{TETHER_AMO_FETCH, 8, 0, 0};
  uint64_t value = 0;
  tether_signal_op_t sigOp = TETHER_SIGNAL_SET;
};
using OwnerOpFn = std::function<Status(const OwnerOp& op, uint64_t* fetched)>;

struct UcxOptions {
  double timeoutSeconds = 300;  // TETHER_TIMEOUT: bound on every wait for a UCX request
  int progressUs = 0;           // TETHER_UCX_PROGRESS_US: progress thread period (0: no thread)
  bool wakeup = true;           // TETHER_UCX_WAKEUP: idle threads wait on the worker's event fd (UCP_FEATURE_WAKEUP)
  GpuContext* gpu = nullptr;    // this PE's GPU context (GPU buffers and DEVICE segments need a CUDA-aware UCX)
  bool ownerAmo = true;         // TETHER_UCX_AMO=owner (default): HOST/STATIC words' atomics and signals executed by the owner
  OwnerOpFn applyOwnerOp;       // the owner's side of owner-executed atomics and signals (unset: refused)
};
std::unique_ptr<Provider> makeUcxProvider(const UcxOptions& opts);

}  // namespace tether
