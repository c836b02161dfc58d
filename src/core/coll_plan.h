// CollArgs and CollPlan: one team data collective's arguments as the C API passes them (core/api.cpp, the by-host
// steps), and as the local checks found them on this PE (collCheck, core/coll_check.h). Shared by the host engine
// (core/collectives.cpp) and its rooms (coll_by_host, coll_check); plain data, no behaviour.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "core/coll_record.h"
#include "core/stream_ops.h"
#include "core/symmetric_heap.h"
#include "tether/tether.h"

namespace tether {

struct CollArgs {
  CollKind kind = CollKind::Broadcast;
  void* dest = nullptr;
  const void* src = nullptr;
  size_t count = 0;                    // elements (per member block for allgather, reduce_scatter, alltoall)
  tether_dtype_t type = TETHER_UINT8;  // an enumerator (the C API checks before it stores it)
  tether_red_op_t op = TETHER_RED_SUM; // reductions only; an enumerator
  int root = 0;                        // broadcast, reduce
  bool eager = false;                  // broadcast, alltoall: the eager form (core/collectives.h)
  // Eager broadcast on a token team only (internal: the last step of a broadcast by host): the members' src is
  // neither compared (left out of the record) nor read; readers that pull take the root's from its token.
  bool srcAtRoot = false;
  // Internal (the by-host steps): dest and src may lie in this PE's by-host scratch (kByHostScratchOffset), which
  // the heap's checks refuse as part of the control area.
  bool scratch = false;
  Status invalid;  // an argument error the caller found (a bad enum: type and op then hold safe values); agreed on
  // alltoallv: n_pes entries each, in elements; scounts and sdispls symmetric (the receivers read them).
  const size_t* rcounts = nullptr;
  const size_t* rdispls = nullptr;
  const size_t* scounts = nullptr;
  const size_t* sdispls = nullptr;
};

// The checked arguments of one call on this PE.
struct CollPlan {
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
