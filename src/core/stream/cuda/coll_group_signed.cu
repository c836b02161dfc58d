// The stream collectives of group CollGroup::Signed: its kernel and launch (core/stream/cuda/coll_group.cuh).
#include "core/stream/cuda/coll_group.cuh"

namespace tether {
namespace gpukernels {
template cudaError_t launchCollGroup<streamdetail::CollGroup::Signed>(
    cudaStream_t, const tether_device_handle_t&, const tether_device_team_t&, const StreamCollCall&);
template const void* collGroupKernelAddress<streamdetail::CollGroup::Signed>();
}  // namespace gpukernels
}  // namespace tether
