// Collectives::Plan: one call's checked arguments on this PE, shared by the host engine's translation units
// (collectives.cpp, collectives_by_host.cpp); private to core/collectives*.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "core/collectives.h"
#include "core/stream/stream_coll_call.h"
#include "core/symmetric_heap.h"

namespace tether {

// The checked arguments of one call on this PE.
struct Collectives::Plan {
  CollArgs a;
  size_t n = 0, me = 0, es = 0;
  size_t block = 0;                 // count * es
  size_t destBytes = 0, srcBytes = 0;
  bool inPlace = false;
  // dest and src as checked (where block != 0): the data phases address every member's copy by these and an offset
  // (the heaps are symmetric), with no second check per copy.
  SymRef dref{SegKind::Host, 0}, sref{SegKind::Host, 0};
  SymRef scRef{SegKind::Host, 0}, sdRef{SegKind::Host, 0};  // alltoallv: scounts, sdispls
  Status local;                     // this PE's argument error (ok when valid)
  uint64_t tokenCall = 0;           // one-shot from the tokens of call tokenCall - 1 (0: from the staging buffers)
  uint64_t ringCall = 0;            // one-shot from the members' staging rings (the offsets in their tokens of call
                                    // ringCall - 1): contributions over kCollStageBytes, token teams, crowded host
  bool gpu = false;                 // the GPU engine runs the data phase (gpuPlan): this record with this handle and
  StreamCollCall gcall;             // view on this stream
  tether_device_handle_t gh{};
  tether_device_team_t gv{};
  StreamOps* gops = nullptr;
  void* gstream = nullptr;
};

}  // namespace tether
