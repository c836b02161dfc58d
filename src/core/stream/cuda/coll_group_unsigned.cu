// The stream collectives of group CollGroup::Unsigned: its kernel and launch (core/stream/cuda/coll_group.cuh).
#include "core/stream/cuda/coll_group.cuh"

namespace tether {
namespace gpukernels {
template cudaError_t launchCollGroup<streamdetail::CollGroup::Unsigned>(
    cudaStream_t, const tether_device_handle_t&, const tether_device_team_t&, const StreamCollCall&);
template const void* collGroupKernelAddress<streamdetail::CollGroup::Unsigned>();
}  // namespace gpukernels
}  // namespace tether
