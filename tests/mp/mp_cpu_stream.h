// The CPU stream emulation for multi-process tests (tests link tether_static): installs it on w before its first
// stream operation and returns it (it stays owned by the World), or fails the test.
#pragma once

#include <memory>

#include "core/stream_ops.h"
#include "mp_util.h"

namespace mp {

// capturing: every stream reports a CUDA graph capture (the library then takes its captured forms).
inline tether::StreamOps* useCpuStreams(tether_t w, bool hostAtomics = true, bool capturing = false) {
  std::unique_ptr<tether::StreamOps> ops = tether::createCpuStreamOps(60, hostAtomics, capturing);
  tether::StreamOps* so = ops.get();
  MP_CHECK(tether::useStreamOpsForTesting(w, std::move(ops)).isOk());
  return so;
}

}  // namespace mp
