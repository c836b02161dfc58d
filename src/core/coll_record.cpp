// The records the members of a team collective agree on (core/coll_record.h has the contracts).
#include "core/coll_record.h"

#include <string>

#include "core/dtype.h"
#include "core/reduce_ops.h"
#include "core/stream_ops.h"
#include "topology/topology.h"

namespace tether {

const char* collKindName(CollKind k) {
  static const char* const names[] = {"broadcast", "reduce", "allreduce", "allgather", "reduce_scatter", "alltoall",
                                      "alltoallv"};
  return k < CollKind::Count ? names[static_cast<int>(k)] : "(unknown collective)";
}

uint64_t CollRecord::hash() const {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (uint64_t v : w) {
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  return h & ((uint64_t{1} << 62) - 1);
}

Status recordMismatch(const char* call, int me, int mePe, const CollRecord& mine, size_t m, int mPe,
                      const CollRecord& theirs) {
  using R = CollRecord;
  static const char* const fields[] = {"collective, type, op or in-place form", "count", "root", "dest", "src",
                                       "scounts", "sdispls"};
  if (!theirs.valid())
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: team PE %zu (world PE %d) passed invalid arguments or failed an "
                "earlier step of a collective by host (its own error says which)", call, m, mPe);
  const uint64_t headDiff = theirs.w[R::kHead] ^ mine.w[R::kHead];
  const uint64_t engineDiff = headDiff & R::kEngine;
  if (engineDiff && engineDiff == headDiff) {
    auto engine = [](uint64_t head) {
      const uint64_t algo = (head >> R::kAlgoShift) & 3;
      return !(head & R::kGpu) ? "the CPU"
             : algo == StreamCollCall::TwoShot ? "its GPU, two-shot"
             : algo == StreamCollCall::OneShot ? "its GPU, one-shot"
                                               : "its GPU";
    };
    TETHER_FAIL(TETHER_ERR_MISMATCH, "%s: the same arguments, but team PE %d (world PE %d) runs this call on %s and "
                "team PE %zu (world PE %d) on %s: TETHER_COLL_GPU, TETHER_COLL_TWO_SHOT, TETHER_FORCE_PROXY or the "
                "GPUs' peer access differ between them (they must be the same on every member)", call, me, mePe,
                engine(mine.w[R::kHead]), m, mPe, engine(theirs.w[R::kHead]));
  }
  // The by-host bit follows from the other fields (a broadcast's root) and from settings: a difference in it alone
  // names the settings, next to another difference it is left out.
  const bool byHostOnly = headDiff == R::kByHost;
  bool restEqual = true;
  for (size_t f = 1; f < R::kWords; ++f) restEqual = restEqual && theirs.w[f] == mine.w[f];
  if (byHostOnly && restEqual)
    TETHER_FAIL(TETHER_ERR_MISMATCH, "%s: the same arguments, but team PE %d (world PE %d) runs this call by host and "
                "team PE %zu (world PE %d) %s: TETHER_COLL_BY_HOST, or the paths between PEs of one host "
                "(TETHER_PATHS), differ between them (they must be the same on every member)", call, me, mePe, m, mPe,
                (mine.w[R::kHead] & R::kByHost) ? "does not" : "does");
  for (size_t f = byHostOnly ? 1 : 0; f < R::kWords; ++f) {
    if (theirs.w[f] == mine.w[f]) continue;
    auto show = [&](const R& r) {
      const uint64_t v = r.w[f];
      if (f == R::kHead) {
        const auto type = static_cast<tether_dtype_t>((v >> 8) & 0xff);
        const auto kind = static_cast<CollKind>(v & 0xff);
        return strprintf("%s%s of %s%s%s%s", (v & R::kEager) ? "eager " : "", collKindName(kind),
                         dtypeInfo(type).name, isReduction(kind) ? " op " : "",
                         isReduction(kind) ? redOpName(static_cast<tether_red_op_t>((v >> 16) & 0xff)) : "",
                         ((v >> 24) & 1) ? ", in place" : "");
      }
      if (f >= R::kDest)
        return strprintf("an object at offset %llu of the %s segment", static_cast<unsigned long long>(v >> 2),
                         segKindName(static_cast<SegKind>(v & 3)));
      return strprintf("%llu", static_cast<unsigned long long>(v));
    };
    TETHER_FAIL(TETHER_ERR_MISMATCH, "%s: the members passed different arguments: team PE %d (world PE %d) passed %s "
                "%s, team PE %zu (world PE %d) passed %s %s", call, me, mePe, fields[f], show(mine).c_str(), m, mPe,
                fields[f], show(theirs).c_str());
  }
  TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: team PE %zu (world PE %d) passed the same arguments", call, m, mPe);
}

}  // namespace tether
