// Where the team data collectives keep their words and buffers (core/collectives.h has the protocols that use them):
// the per-team-slot words of the dissemination agreement (ControlBlock::coll), the device team sync words, and the
// regions of every PE's HOST segment inside kControlBytes (core/symmetric_heap.h) -- the one-shot staging buffers,
// the token rings (core/coll_tokens.h), the staging rings, the reductions' scratch and the by-host scratch -- each
// at the same offset in every PE's segment, so a member finds another's by its own layout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/teams.h"
#include "tether/tether.h"

namespace tether {

constexpr size_t kCollRounds = 16;  // rounds per barrier: teams of up to 2^16 members
static_assert(kCollRounds >= static_cast<size_t>(kTeamScheduleWords), "a team's barrier schedule fits the words");
constexpr size_t kCollValueWords = 8;
constexpr size_t kCollWords = 2 * kCollRounds + kCollValueWords;  // two word sets (barrier parity), then the record

// The device team sync words (tether_device_team_t::sync) of each team slot: 1 epoch word + TETHER_DEVICE_TEAM_ROUNDS
// round words + the device broadcast's by-host flag (device.cuh team_broadcast), padded to whole cache lines; in the
// HOST control block (ControlBlock::devTeams) for CPU handles and GPU handles without a DEVICE heap, else in the
// DEVICE control block at kDeviceTeamSyncOffset. All reset when the team is destroyed (Collectives::resetDeviceWords).
constexpr size_t kDeviceTeamWords = 24;
static_assert(2 + TETHER_DEVICE_TEAM_ROUNDS <= kDeviceTeamWords, "device team sync words and the by-host flag");
static_assert(TETHER_DEVICE_TEAM_ROUNDS == kCollRounds, "host and device team collectives take the same team sizes");
constexpr uint64_t kDeviceTeamSyncOffset = 8192;
// Staging buffers of the one-shot path: two (used alternately) of kCollStageBytes per team slot, in the HOST segment
// at kCollStageOffset (after the ControlBlock, inside kControlBytes).
constexpr uint64_t kCollStageOffset = 64 * 1024;
constexpr size_t kCollStageBytes = 2048;
// Token rings (core/coll_tokens.h; the protocol in core/collectives.h "Tokens"): per team slot a 64-byte line whose
// first word is this PE's done count (the second its close word: CollTokens::closeCall), then
// kEagerDepth slots of kEagerSlotBytes (a 24-byte head, up to kEagerDataBytes of inline data right after it, the full
// record in the last cache line; kEagerHeadBytes is what is not data), in the HOST segment at kEagerOffset (after the
// staging buffers, inside kControlBytes).
constexpr uint64_t kEagerOffset = kCollStageOffset + 64 * 2 * kCollStageBytes;
// 64 deep: an eager root runs up to 64 calls ahead of its readers, which then take many calls per time slice where
// PEs share cores (4 PEs on 2 cores, eager broadcast of 8 B: 0.77 us with 16, 0.48 with 32, 0.33 with 64;
// bench/results/cpu-2core-vm/coll_token_depth_ab.txt). 64 KiB per team index.
constexpr size_t kEagerDepth = 64;
constexpr size_t kEagerSlotBytes = 1024;
constexpr size_t kEagerHeadBytes = 128;
constexpr size_t kEagerDataBytes = kEagerSlotBytes - kEagerHeadBytes;
constexpr size_t kEagerTeamBytes = 64 + kEagerDepth * kEagerSlotBytes;
// Staging rings (core/collectives.h "Tokens": the eager broadcast's sizes over kEagerDataBytes, and on crowded hosts
// the one-shot contributions over kCollStageBytes): per team slot kEagerStageTeamBytes, in the HOST segment at
// kEagerStageOffset (after the token rings, inside kControlBytes). What an eager root stages: up to
// kEagerStagePairBytes on teams of two, kEagerStageBytes on larger ones, ringBlockMax on larger ones of a crowded
// host; a one-shot contribution: up to kRingStageBytes on a crowded host, of blocks up to ringBlockMax. (Half a ring
// at most: two calls' copies fit, so a call rarely waits for the one before it.)
constexpr uint64_t kEagerStageOffset = kEagerOffset + kTeamSlots * kEagerTeamBytes;
constexpr size_t kEagerStageTeamBytes = 64 * 1024;
constexpr size_t kEagerStagePairBytes = 2048;
constexpr size_t kEagerStageBytes = 4096;
constexpr size_t kRingStageBytes = kEagerStageTeamBytes / 2;
// Reduction scratch (tether_device_team_t::scratch): where the device and stream reductions pull the elements of
// members they cannot load (device.cuh, detail::teamReduceStaged), kCollScratchBytes per team slot, this PE's own
// (nothing remote writes it but its own gets). In the HOST segment at kCollScratchOffset (after the staging rings,
// inside kControlBytes) for CPU handles and GPU handles without a DEVICE heap, else in the DEVICE control block at
// kDeviceCollScratchOffset (after the team sync words; not zeroed at start-up).
constexpr uint64_t kCollScratchOffset = kEagerStageOffset + kTeamSlots * kEagerStageTeamBytes;
constexpr size_t kCollScratchBytes = 16 * 1024;
constexpr uint64_t kDeviceCollScratchOffset = 64 * 1024;
// The rooted reduce by host's partials (core/collectives.h "By host"): kByHostScratchBytes per team slot, this PE's
// own, in the HOST segment at kByHostScratchOffset (after the reductions' scratch, inside kControlBytes). Only the
// host forms' by-host steps use it (the device views' scratch above can be in use by a stream or device form of the
// same team at the same time), as dest and src of their subteam collectives (CollArgs::scratch).
constexpr uint64_t kByHostScratchOffset = kCollScratchOffset + kTeamSlots * kCollScratchBytes;
constexpr size_t kByHostScratchBytes = 32 * 1024;

}  // namespace tether
