// The device forms' side of the team data collectives (core/collectives.h: the stream forms, the device views and
// the GPU engine of host forms on GPU memory): the pure decisions, apart from the Collectives that orchestrates them.
//  - streamCollCall: the stream record of a call (core/stream_ops.h StreamCollCall), one encoding for the stream
//    forms and the GPU engine: element and kind, the allreduce algorithm (two-shot from TETHER_COLL_TWO_SHOT on 3+
//    members), the grid (one block per TETHER_COLL_BLOCK_BYTES of dest, at most TETHER_COLL_BLOCKS) and a single
//    block's threads (one per 64 bytes of dest, whole warps, 32 .. kCollBlockThreads). From agreed values only
//    (sizes and kinds), so every member derives the same shape of work.
//  - deviceTeamView: a team as a tether_device_team_t for a device handle of this PE: members at a fixed world-PE
//    stride (start, stride), the team index, its device sync words and reductions' scratch in the handle's barrier
//    segment (HOST control block or DEVICE control area, core/coll_layout.h), host_run for the broadcast by host.
// No World: the settings and the segments' bases come in (tests/unit's test_coll_device checks them alone).
#pragma once

#include <cstddef>

#include "base/status.h"
#include "core/coll_layout.h"
#include "core/coll_record.h"
#include "core/stream_ops.h"
#include "core/teams.h"
#include "tether/tether.h"

namespace tether {

// TETHER_COLL_GPU, _TWO_SHOT, _BLOCKS, _BLOCK_BYTES, _SCRATCH (Collectives::setUp reads them).
struct CollGpuSettings {
  bool host = true;                    // TETHER_COLL_GPU: host forms on GPU memory run on the GPU engine
  size_t twoShot = 256 * 1024;         // TETHER_COLL_TWO_SHOT
  unsigned maxBlocks = 0;              // TETHER_COLL_BLOCKS (0: no limit but the GPU's resident blocks)
  size_t blockBytes = 64 * 1024;       // TETHER_COLL_BLOCK_BYTES
  size_t scratch = kCollScratchBytes;  // TETHER_COLL_SCRATCH: of the device views (tether_device_team_t)
};

// The call's shape from checked, agreed values: n members, block = count * elemBytes bytes per member, destBytes of
// dest on each member. dest, src, count, root and op are a's.
struct CollShape {
  size_t n = 0, block = 0, elemBytes = 0, destBytes = 0;
};
StreamCollCall streamCollCall(CollKind kind, tether_dtype_t type, const void* dest, const void* src, size_t count,
                              int op, int root, const CollShape& shape, const CollGpuSettings& s);

// Where this PE's device team words and scratch lie: the bases of its HOST segment and (null where absent) its
// DEVICE segment, and the offset of the device team words in the HOST control block (ControlBlock::devTeams,
// core/world.h); me and nPes to check that the handle is this instance's.
struct CollViewBases {
  int me = 0, nPes = 0;
  char* host = nullptr;
  char* device = nullptr;
  uint64_t hostSyncOffset = 0;
};
// t's view for handle h (hostRun: Team::hostRun where the team goes by host, else 0). TETHER_ERR_INVALID_ARG for a
// handle of another instance or PE or an unknown barrier segment; TETHER_ERR_UNSUPPORTED for more than
// 2^TETHER_DEVICE_TEAM_ROUNDS members or members not at a fixed world-PE stride.
Status deviceTeamView(const char* call, const Team& t, const tether_device_handle_t& h, int hostRun,
                      const CollGpuSettings& s, const CollViewBases& b, tether_device_team_t* out);

}  // namespace tether
