// Host reference pack/unpack over the canonical form: the specification the GPU backend is checked against.
#include <algorithm>
#include <cstring>

#include "datatype/canonical.h"

namespace tether::dt {

namespace {

// Position of one packed byte in the canonical form, advanced block by block (see canonical.h for the mapping).
class Cursor {
 public:
  Cursor(const Canonical& c, int64_t packedOffset) : c_(c) {
    inst_ = packedOffset / c.size;
    int64_t r = packedOffset % c.size;
    auto segIt = std::upper_bound(c.segments.begin(), c.segments.end(), r,
                                  [](int64_t v, const Segment& s) { return v < s.packedStart; });
    seg_ = static_cast<size_t>(segIt - c.segments.begin()) - 1;
    const Segment& s = c.segments[seg_];
    r -= s.packedStart;
    rep_ = r / s.repBytes;
    r %= s.repBytes;
    auto first = c.pieces.begin() + s.firstPiece;
    auto pIt = std::upper_bound(first, first + s.numPieces, r,
                                [](int64_t v, const Piece& p) { return v < p.packedStart; });
    piece_ = static_cast<size_t>(pIt - c.pieces.begin()) - 1;
    const Piece& p = c.pieces[piece_];
    r -= p.packedStart;
    int64_t e = r / p.block;
    inBlock_ = r % p.block;
    for (int k = 0; k < p.nd; ++k) idx_[k] = e % p.count[k], e /= p.count[k];
  }

  // Byte displacement (relative to the user buffer) of the current byte, and bytes left in its block.
  int64_t displacement() const {
    const Segment& s = c_.segments[seg_];
    const Piece& p = c_.pieces[piece_];
    int64_t d = inst_ * c_.extent + rep_ * s.stride + p.offset + inBlock_;
    for (int k = 0; k < p.nd; ++k) d += idx_[k] * p.stride[k];
    return d;
  }
  int64_t leftInBlock() const { return c_.pieces[piece_].block - inBlock_; }

  // Advances by n <= leftInBlock() bytes.
  void advance(int64_t n) {
    const Piece& p = c_.pieces[piece_];
    inBlock_ += n;
    if (inBlock_ < p.block) return;
    inBlock_ = 0;
    for (int k = 0; k < p.nd; ++k) {
      if (++idx_[k] < p.count[k]) return;
      idx_[k] = 0;
    }
    const Segment& s = c_.segments[seg_];
    if (++piece_ < static_cast<size_t>(s.firstPiece + s.numPieces)) return;
    if (++rep_ < s.repeat) {
      piece_ = static_cast<size_t>(s.firstPiece);
      return;
    }
    rep_ = 0;
    if (++seg_ == c_.segments.size()) {
      seg_ = 0;
      ++inst_;
    }
    piece_ = static_cast<size_t>(c_.segments[seg_].firstPiece);
  }

 private:
  const Canonical& c_;
  int64_t inst_ = 0, rep_ = 0, inBlock_ = 0;
  size_t seg_ = 0, piece_ = 0;
  int64_t idx_[kMaxDims] = {0, 0, 0, 0};
};

// Address arithmetic on integers: displacements may point before the buffer origin (negative lb), as in MPI.
char* at(const void* base, int64_t d) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(d));
}

// True when one instance is one block; *displacement: its first byte.
bool oneBlock(const Canonical& c, int64_t* displacement) {
  Cursor cur(c, 0);
  *displacement = cur.displacement();
  return cur.leftInBlock() == c.size;
}

// True when instances are dense single blocks (one block per instance, extent == size): packed byte b then sits at
// *displacement + b for every count, and a pack is one copy instead of one per instance (a count of n bytes would
// otherwise cost one cursor step per byte: 0.2 GB/s).
bool dense(const Canonical& c, int64_t* displacement) { return c.extent == c.size && oneBlock(c, displacement); }

template <bool kPack>
void copy(const Canonical& c, const void* user, int64_t packedOffset, int64_t len, void* packed) {
  if (len <= 0 || c.size == 0) return;
  int64_t d0 = 0;
  if (dense(c, &d0)) {
    char* u = at(user, d0 + packedOffset);
    if (kPack) std::memcpy(packed, u, static_cast<size_t>(len));
    else std::memmove(u, packed, static_cast<size_t>(len));
    return;
  }
  Cursor cur(c, packedOffset);
  char* out = static_cast<char*>(packed);
  while (len > 0) {
    int64_t n = std::min(len, cur.leftInBlock());
    char* u = at(user, cur.displacement());
    if (kPack) std::memcpy(out, u, static_cast<size_t>(n));
    else std::memmove(u, out, static_cast<size_t>(n));
    out += n;
    len -= n;
    cur.advance(n);
  }
}

}  // namespace

void hostPack(const Canonical& c, const void* user, int64_t packedOffset, int64_t len, void* packed) {
  copy<true>(c, user, packedOffset, len, packed);
}

void hostUnpack(const Canonical& c, const void* packed, int64_t packedOffset, int64_t len, void* user) {
  copy<false>(c, user, packedOffset, len, const_cast<void*>(packed));
}

Status hostWalk(const Canonical& c, int64_t packedOffset, int64_t len,
                const std::function<Status(int64_t displacement, int64_t n)>& visit) {
  if (len <= 0 || c.size == 0) return Status::ok();
  int64_t d0 = 0;
  if (dense(c, &d0)) return visit(d0 + packedOffset, len);
  Cursor cur(c, packedOffset);
  int64_t runStart = 0, runLen = 0;  // the pending (merged) run
  while (len > 0) {
    const int64_t n = std::min(len, cur.leftInBlock());
    const int64_t d = cur.displacement();
    if (runLen > 0 && d == runStart + runLen) {
      runLen += n;
    } else {
      if (runLen > 0) TETHER_TRY(visit(runStart, runLen));
      runStart = d;
      runLen = n;
    }
    len -= n;
    cur.advance(n);
  }
  return visit(runStart, runLen);
}

bool hostContiguous(const Canonical& c, int64_t count, int64_t* displacement) {
  *displacement = 0;
  if (count == 0 || c.size == 0) return true;
  return count == 1 ? oneBlock(c, displacement) : dense(c, displacement);
}

}  // namespace tether::dt
