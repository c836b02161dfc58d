// The local checks of a team data collective (core/collectives.h step 1), on this PE only: the type, the op of a
// reduction, the root, the sizes (overflow), whether the call is in place, dest and src (and alltoallv's arrays)
// inside symmetric objects, alignment to the elements, no overlap but the in-place forms. What it finds fills the
// call's Plan (core/coll_plan.h): n, me, es, block, destBytes, srcBytes, inPlace and the refs.
//
// Contract: a failure is returned, not raised: Collectives takes part in the agreement marked invalid, so every member
// fails alike. The symmetric check comes in as a function (World::checkSymmetric, or the by-host scratch for the
// by-host steps), so tests/unit's test_coll_check runs it alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "core/coll_plan.h"

namespace tether {

// [addr, addr + n) inside one symmetric object of this PE (*ref: its segment and offset), or the error naming what:
// fn(ctx, ...). A plain function and its context, not a std::function: the check runs twice in every collective,
// and a std::function whose callable does not fit its small buffer allocates (2-core VM, 2 PEs: +9-11 ns on an
// 8-32 B broadcast, +19-22 ns on fcollect; bench/results/cpu-2core-vm/coll_rooms_ab.txt).
struct CollSymCheck {
  Status (*fn)(const void* ctx, const char* what, const void* addr, uint64_t n, SymRef* ref) = nullptr;
  const void* ctx = nullptr;
  Status operator()(const char* what, const void* addr, uint64_t n, SymRef* ref) const {
    return fn(ctx, what, addr, n, ref);
  }
};

// a on a team of n members, this PE its member me: *p filled (p->a = a), or the first argument error.
Status collCheck(const char* call, size_t n, size_t me, const CollArgs& a, const CollSymCheck& symmetric,
                 CollPlan* p);

}  // namespace tether
