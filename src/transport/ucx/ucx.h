// The ucx provider's pieces shared by its two builds (ucp/: over UCX's UCP API; none/: built without UCX, chosen by
// CMake like gpu/none). Path choice is the same in both: only whether UCX is usable differs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/provider.h"

namespace tether {

constexpr int kUcxCost = 100;  // above every local provider: a same-host path always wins unless TETHER_PATHS forces

// Whether any pair of this job is on the network path: PEs on more than one host, or TETHER_PATHS host=ucx with two
// or more PEs. Every PE answers the same from the same topology (so the start-up exchange is collective).
bool ucxJobUsesNetwork(const Topology& topo, const PathOverrides& ov);

// The fix named when a DEVICE segment across hosts meets a UCX without CUDA memory support.
extern const char* const kUcxNoCudaFix;

// The ucx probe (pure): available for the HOST/STATIC segments of pairs choosePath puts on the network path, and
// for the DEVICE segment of a PE on another host when both PEs' UCX moves CUDA memory with a GPU context there
// (cudaPes[pe] != 0: what start() exchanged; empty: nobody's). A remote DEVICE segment without that support on either
// side is unavailable with serves = true and a reason naming the PE and the fix (kUcxNoCudaFix), so every PE of the
// pair fails tether_init with TETHER_ERR_UNREACHABLE instead of meeting a path that cannot move its data.
// `unusable` non-empty (built without UCX, or UCX failed to start here): those pairs are unavailable with
// serves = true and the reason naming it.
Status ucxProbe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
                const std::string& unusable, const std::vector<uint8_t>& cudaPes, ProbeResult* out);

}  // namespace tether
