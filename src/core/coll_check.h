// The local checks of a team data collective (core/collectives.h step 1), on this PE only: the type, the op of a
// reduction, the root, the sizes (overflow), whether the call is in place, dest and src (and alltoallv's arrays)
// inside symmetric objects, alignment to the elements, no overlap but the in-place forms. What it finds fills the
// call's Plan (core/collectives_plan.h): n, me, es, block, destBytes, srcBytes, inPlace and the refs.
//
// Contract: a failure is returned, not raised: Collectives takes part in the agreement marked invalid, so every member
// fails alike. The symmetric check comes in as a function (World::checkSymmetric, or the by-host scratch for the
// by-host steps), so tests/unit's test_coll_check runs it alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "base/status.h"
#include "core/collectives_plan.h"

namespace tether {

// [addr, addr + n) inside one symmetric object of this PE (*ref: its segment and offset), or the error naming what.
using CollSymCheck = std::function<Status(const char* what, const void* addr, uint64_t n, SymRef* ref)>;

// a on a team of n members, this PE its member me: *p filled (p->a = a), or the first argument error.
Status collCheck(const char* call, size_t n, size_t me, const CollArgs& a, const CollSymCheck& symmetric,
                 Collectives::Plan* p);

}  // namespace tether
