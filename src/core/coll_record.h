// CollRecord: what the members of a team data collective agree on (core/collectives.h, steps 2-3): the kind of call,
// type, op, in place, count, root and where dest and src (and alltoallv's arrays) lie in the symmetric heap, with
// the engine and the by-host choice in the head. Members compare records by a 62-bit hash (hash()); only when two
// differ do they look at the words, and recordMismatch() turns a difference into the error every member returns.
//
// Contracts
//  - A record is a pure value: the same call on every member gives the same words (Collectives::run fills them from
//    the checked arguments; what may differ per member by design -- a broadcast's dest, an in-place side -- is left
//    at 0). An invalid member posts a record without kValid (all zero: CollRecord{}).
//  - recordMismatch() needs nothing but the two records and who holds them: tests/unit's test_coll_record checks
//    its messages alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace tether {

enum class CollKind : uint8_t { Broadcast, Reduce, Allreduce, Allgather, ReduceScatter, Alltoall, Alltoallv, Count };

const char* collKindName(CollKind k);  // "broadcast", ... as the C API names them
inline bool isReduction(CollKind k) {
  return k == CollKind::Reduce || k == CollKind::Allreduce || k == CollKind::ReduceScatter;
}
inline bool hasRoot(CollKind k) { return k == CollKind::Broadcast || k == CollKind::Reduce; }

struct CollRecord {
  enum : size_t { kHead, kCount, kRoot, kDest, kSrc, kScounts, kSdispls, kWords };
  // The head word: kind (bits 0-7), type (8-15), op of a reduction (16-23), in place (24), then these bits.
  static constexpr uint64_t kValid = uint64_t{1} << 25;      // the member's arguments were valid
  static constexpr uint64_t kEager = uint64_t{1} << 26;      // the eager form (broadcast, alltoall)
  static constexpr uint64_t kGpu = uint64_t{1} << 27;        // the data phase runs on the GPU engine,
  static constexpr int kAlgoShift = 28;                      // with this allreduce algorithm (StreamCollCall::Algo)
  static constexpr uint64_t kEngine = kGpu | uint64_t{3} << kAlgoShift;
  static constexpr uint64_t kByHost = uint64_t{1} << 30;     // the call would run by host (TETHER_COLL_BY_HOST)
  static constexpr uint64_t kSrcAtRoot = uint64_t{1} << 31;  // CollArgs::srcAtRoot (src left out)

  uint64_t w[kWords] = {};
  bool valid() const { return (w[kHead] & kValid) != 0; }
  uint64_t hash() const;  // a multiply-xorshift mix of the words, 62 bits
};

// The error that team PE me (world PE mePe), holding record mine, returns when team PE m (world PE mPe) holds theirs:
// TETHER_ERR_INVALID_ARG when theirs is not valid; TETHER_ERR_MISMATCH naming the engine (TETHER_COLL_GPU & co.)
// or the by-host choice (TETHER_COLL_BY_HOST, TETHER_PATHS) when only those differ, else the first differing field
// with both members' values; TETHER_ERR_INTERNAL when the records are equal.
Status recordMismatch(const char* call, int me, int mePe, const CollRecord& mine, size_t m, int mPe,
                      const CollRecord& theirs);

}  // namespace tether
