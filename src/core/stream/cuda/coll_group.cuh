// The GPU kernel of one group of stream collectives (core/stream/stream_coll_call.h: CollGroup) and its launch.
// Included only by the coll_group_*.cu files, each of which instantiates one group (stream_kernels.h declares the
// instantiations; launchCollCall picks one per call).
#pragma once

#include "core/stream/cuda/stream_kernels.h"
#include "core/stream/stream_coll_call.h"

namespace tether {
namespace gpukernels {

using streamdetail::CollGroup;

// A grid of one block is launched plainly (Scope::Grid's barrier is then __syncthreads), a larger one cooperatively.
template <CollGroup G>
__global__ void __launch_bounds__(kCollBlockThreads)
    collGroupKernel(tether_device_handle_t h, tether_device_team_t t, StreamCollCall c) {
  streamdetail::runCollGroup<device::Scope::Grid, G>(h, t, c);
}

// Blocks of collGroupKernel<G> the current device holds resident at once (0 on error): the most a cooperative launch
// takes.
template <CollGroup G>
unsigned residentGridBlocks() {
  int dev = 0, sms = 0, perSm = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, collGroupKernel<G>, kCollBlockThreads, 0) != cudaSuccess)
    return 0;
  return static_cast<unsigned>(sms) * static_cast<unsigned>(perSm);
}

template <CollGroup G>
cudaError_t launchCollGroup(cudaStream_t stream, const tether_device_handle_t& handle, const tether_device_team_t& team,
                            const StreamCollCall& call) {
  unsigned blocks = call.blocks;
  if (blocks > 1) {
    static const unsigned resident = residentGridBlocks<G>();  // one device per process (the PE's GPU)
    blocks = blocks < resident ? blocks : resident;
  }
  if (blocks <= 1) {
    const unsigned threads = call.threads < 1 ? 1 : call.threads < kCollBlockThreads ? call.threads : kCollBlockThreads;
    collGroupKernel<G><<<1, threads, 0, stream>>>(handle, team, call);
    return cudaGetLastError();
  }
  return device::launch_cooperative(collGroupKernel<G>, dim3(blocks), dim3(kCollBlockThreads), 0, stream, handle, team,
                                    call);
}

template <CollGroup G>
const void* collGroupKernelAddress() {
  return reinterpret_cast<const void*>(collGroupKernel<G>);
}

}  // namespace gpukernels
}  // namespace tether
