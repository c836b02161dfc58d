// The ucx provider's pieces shared by its two builds (ucp/: over UCX's UCP API; none/: built without UCX, chosen by
// CMake like gpu/none). Path choice is the same in both: only whether UCX is usable differs.
#pragma once

#include <string>

#include "transport/provider.h"

namespace tether {

constexpr int kUcxCost = 100;  // above every local provider: a same-host path always wins unless TETHER_PATHS forces

// Whether any pair of this job is on the network path: PEs on more than one host, or TETHER_PATHS host=ucx with two
// or more PEs. Every PE answers the same from the same topology (so the start-up exchange is collective).
bool ucxJobUsesNetwork(const Topology& topo, const PathOverrides& ov);

// The ucx probe (pure): available for the HOST/STATIC segments of pairs choosePath puts on the network path, and
// for the DEVICE segment of a PE on another host, which it serves with operations that fail TETHER_ERR_UNSUPPORTED
// (a CUDA-aware UCX is not supported yet; the reason says so). `unusable` non-empty (built without UCX, or UCX
// failed to start here): those pairs are unavailable with serves = true and the reason naming it.
Status ucxProbe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
                const std::string& unusable, ProbeResult* out);

}  // namespace tether
