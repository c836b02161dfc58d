// A "kernel" of the device API compiled for the host (tests of the kernel model without a GPU): body(tid) runs on
// `threads` CPU threads that form one block (HostScope<Block>, a HostBarrier as its __syncthreads), so Scope::Block
// device functions work as in a one-block kernel. Returns when every thread has finished.
#pragma once

#include <thread>
#include <vector>

#include "tether/device.cuh"

namespace mp {

template <typename F>
void launchHostBlock(int threads, F body) {
  tether::device::HostBarrier bar(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      tether::device::HostScope<tether::device::Scope::Block> scope(t, threads, &bar);
      body(t);
    });
  for (auto& t : ts) t.join();
}

}  // namespace mp
