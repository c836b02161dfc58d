// Canonical form of a committed datatype: what pack/unpack (host now, GPU kernels later) execute.
//
// One instance of the type, in MPI type-map (= pack) order, is a list of segments; segment s is its body (a list of
// pieces) repeated s.repeat times at s.stride bytes; a piece is a strided block of up to kMaxDims dimensions.
// Instance i of a pack of count instances sits at i * extent. Every piece and segment carries the packed-byte offset
// at which it starts, so packed byte b maps to memory with two binary searches and a few divisions:
//   inst = b / size; r = b % size; seg = last s with s.packedStart <= r; rep = (r - seg.packedStart) / seg.repBytes;
//   q = (r - seg.packedStart) % seg.repBytes; piece = last p in seg with p.packedStart <= q;
//   e = (q - piece.packedStart) / piece.block (then e split over piece.count[0..nd), dim 0 fastest);
//   address = inst * extent + rep * seg.stride + piece.offset + sum_k idx_k * piece.stride[k] + (q - ...) % block.
// docs/datatype.md defines the normal form (merging rules, uniqueness, size bound) in full.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "datatype/type.h"

namespace tether::dt {

constexpr int kMaxDims = 4;

// A strided block: for idx[nd-1] .. idx[0] (idx[0] fastest), `block` contiguous bytes at
// offset + sum_k idx[k] * stride[k]. Dimensions beyond nd are unused (count 1, stride 0).
struct Piece {
  int64_t offset = 0;
  int64_t block = 0;
  int32_t nd = 0;
  int64_t count[kMaxDims] = {1, 1, 1, 1};
  int64_t stride[kMaxDims] = {0, 0, 0, 0};
  int64_t packedStart = 0;  // packed bytes before this piece within one repetition of its segment

  int64_t elements() const;  // product of count[0..nd)
  int64_t bytes() const { return block * elements(); }
  // Same block and dimensions (offset and packedStart aside).
  bool sameShape(const Piece& o) const;
};

struct Segment {
  int64_t firstPiece = 0;  // index into Canonical::pieces
  int64_t numPieces = 0;
  int64_t repeat = 1;
  int64_t stride = 0;       // bytes between repetitions
  int64_t repBytes = 0;     // packed bytes of one repetition
  int64_t packedStart = 0;  // packed bytes before this segment within one instance
};

struct Canonical {
  std::vector<Piece> pieces;
  std::vector<Segment> segments;  // segments with no bytes are dropped
  int64_t size = 0;               // packed bytes per instance (= type size)
  int64_t extent = 0;             // bytes between instances
  int width = 1;                  // widest access (16/8/4/2/1) dividing every offset, length and stride, extent too
  bool exact = false;             // built through the exact (expanded) path: unique per byte layout
};

// Limits (docs/datatype.md "Size bound"): types with at most kExactBlocks contiguous blocks per instance are
// canonicalised exactly; the structural form never holds more than kMaxPieces pieces (commit fails beyond).
constexpr int64_t kExactBlocks = 1 << 14;
constexpr int64_t kMaxPieces = 1 << 22;

// Builds the canonical form of `type`. Fails with TETHER_ERR_UNSUPPORTED beyond kMaxPieces, TETHER_ERR_OVERFLOW on
// 64-bit overflow.
Status canonicalize(const Type& type, Canonical* out);

// Human-readable one-line form (tests, logs): "w8 ext 16 size 12 | x1000 @16 { [0+4] [8+8] }" etc.
std::string describe(const Canonical& c);

// Host reference copy between a user buffer (type layout) and packed bytes [packedOffset, packedOffset + len) of
// `count` instances. Pack: user -> packed; unpack: packed -> user. Preconditions (checked by the caller):
// 0 <= packedOffset, packedOffset + len <= count * size.
void hostPack(const Canonical& c, const void* user, int64_t packedOffset, int64_t len, void* packed);
void hostUnpack(const Canonical& c, const void* packed, int64_t packedOffset, int64_t len, void* user);

// Visits the memory runs behind packed bytes [packedOffset, packedOffset + len) of `count` instances, in pack order:
// visit(displacement, n) for each run of n bytes at `displacement` (relative to the user buffer, may be negative);
// runs that continue each other in memory are merged. Stops at, and returns, the first failing visit. Same
// preconditions as hostPack. (The staged non-contiguous put/get issues one contiguous transfer per run.)
Status hostWalk(const Canonical& c, int64_t packedOffset, int64_t len,
                const std::function<Status(int64_t displacement, int64_t n)>& visit);
// True when the whole pack of `count` instances is one contiguous run: packed byte b sits at *displacement + b
// (always true for an empty pack, *displacement = 0). Conservative: may say false for exotic spellings of a
// contiguous layout (callers then take the general path).
bool hostContiguous(const Canonical& c, int64_t count, int64_t* displacement);

}  // namespace tether::dt
