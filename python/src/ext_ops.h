// The element-wise calls and the team collectives on symmetric arrays: atomics, wait_until/test, signal words, and
// one team collective in its host or stream form (python/tether/_api.py).
#pragma once

#include <cstdint>

#include "ext_array.h"
#include "ext_common.h"
#include "ext_team.h"

namespace tether_py {

// tether_atomic on the one element of `a` at `pe` (op: tether_amo_t); returns what it fetched as a Python number of
// the element type (0 where the op fetches nothing).
nb::object atomic(const ArrayBase& a, int op, nb::handle value, nb::handle cond, int pe);

// tether_wait_until (wait: true; the GIL released meanwhile) or tether_test on the one element of `a`.
bool waitOrTest(const ArrayBase& a, int cmp, nb::handle value, bool wait);

// The uint64 signal word `s` names (one element); raises for another dtype or size.
uint64_t* signalWord(const char* call, const ArrayBase& s);

// One team collective on symmetric arrays (contiguous, same dtype, of the team's instance). The count comes from the
// arrays: broadcast/reduce/allreduce dest.size (src the same size), allgather src.size (dest n_pes times it),
// reduce_scatter dest.size (src n_pes times it), alltoall src.size / n_pes (dest the same size). The host forms
// release the GIL while they wait on the other members; the stream forms return once enqueued.
// A problem only these arrays show (shapes, dtypes, layout) still takes part in the host form's agreement, as a call
// with an invalid element type, so that every member fails (the others with "team PE k passed invalid arguments")
// instead of waiting for this one until TETHER_TIMEOUT; this PE then raises the problem itself. The stream forms are
// not agreed (docs/collectives.md): their errors are this PE's alone, as in the C API.
void teamColl(const Team& team, int kind, const ArrayBase& dest, const ArrayBase& src, int op, int root,
              uintptr_t stream, bool onStream);

}  // namespace tether_py
