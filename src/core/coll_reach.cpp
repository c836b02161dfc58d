// CollReach (core/coll_reach.h): reading members' memory for the host collectives, and the reductions over it.
#include "core/coll_reach.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/reduce_ops.h"

namespace tether {

Status CollReach::Gets::add(void* dst, int pe, const SymRef& ref, size_t bytes) {
  if (bytes == 0) return Status::ok();
  if (const char* m = r_.mapped(pe, ref)) {
    std::memcpy(dst, m, bytes);
    return Status::ok();
  }
  if (!isHostMemory(ref.kind)) return r_.copyFrom(call_, dst, ref, bytes, pe);
  queued_.push_back(Fetch{pe, dst, ref, bytes});
  return Status::ok();
}

Status CollReach::Gets::finish() {
  if (queued_.empty()) return Status::ok();
  const Status s = r_.links_.getAll(queued_);
  queued_.clear();
  return s.withContext(call_);
}

Status CollReach::copyFrom(const char* call, void* dst, const SymRef& ref, size_t bytes, int pe) const {
  if (bytes == 0) return Status::ok();
  return links_.get(pe, dst, ref, bytes).withContext(call);
}

Status CollReach::writeLocal(const char* call, void* dst, const void* src, size_t bytes, bool dstDevice) const {
  if (bytes == 0) return Status::ok();
  if (dstDevice) return links_.putDevice(call, dst, src, bytes);
  std::memcpy(dst, src, bytes);
  return Status::ok();
}

Status CollReach::reduceSlice(const char* call, const std::vector<int>& pes, int myPe, const CollPlan& p,
                              size_t srcElem, size_t len, char* out, bool outDevice) const {
  const size_t es = p.es, chunk = std::max<size_t>(1, kChunkBytes / es), bufBytes = std::min(chunk, len) * es;
  // Accumulate straight into out, unless out is GPU memory or this PE's own elements being read (in place: each
  // chunk is read before it is overwritten, through the accumulator).
  const uintptr_t o = reinterpret_cast<uintptr_t>(out);
  const uintptr_t r = reinterpret_cast<uintptr_t>(static_cast<const char*>(p.a.src) + srcElem * es);
  const bool viaAcc = outDevice || (o < r + len * es && r < o + len * es);
  std::unique_ptr<char[]> acc(viaAcc ? new char[bufBytes] : nullptr), in;
  // A team of two copies the other member's mapped chunk into a buffer of its own before combining (memcpy) instead
  // of combining from it in place: lines its owner has just rewritten come faster by a copy than by the combining
  // loop's loads (2-core VM, osh_bench --touch-src, 2 PEs, 8-64 KiB: 0.81-0.88x the time; unchanged src: level; at
  // 4 PEs, 3 such copies per window, 64 KiB was 1.07x slower, so only pairs: coll_reduce_copy_ab.txt).
  const bool copyPeer = p.n == 2;
  const void* from[kGetWindow];
  for (size_t off = 0; off < len; off += chunk) {
    const size_t c = std::min(chunk, len - off), bytes = c * es;
    const SymRef src = p.sref.plus((srcElem + off) * es);
    char* a = viaAcc ? acc.get() : out + off * es;
    for (size_t k0 = 0; k0 < p.n; k0 += kGetWindow) {
      const size_t k1 = std::min(p.n, k0 + kGetWindow);
      Gets gets(*this, call);
      for (size_t k = k0; k < k1; ++k) {
        // Mapped HOST memory is read in place, except the other member of a pair (copyPeer: copied first).
        const char* direct = mapped(pes[k], src);
        if (direct && !(copyPeer && pes[k] != myPe)) {
          from[k - k0] = direct;
          continue;
        }
        // Member 0's elements start the accumulator: copied or fetched straight into it (CPU memory, which no mapped
        // source of this chunk overlaps: the in-place case accumulates in acc).
        char* slot = a;
        if (k != 0) {
          if (!in) in.reset(new char[kGetWindow * bufBytes]);
          slot = in.get() + (k - k0) * bufBytes;
        }
        if (direct) std::memcpy(slot, direct, bytes);
        else TETHER_TRY(gets.add(slot, pes[k], src, bytes));
        from[k - k0] = slot;
      }
      TETHER_TRY(gets.finish());
      size_t k = k0;
      if (k0 == 0 && k1 == 1) {  // a team of one
        if (from[0] != a) std::memcpy(a, from[0], bytes);
        k = 1;
      } else if (k0 == 0) {  // a = member 0's op member 1's (from[0] may be a itself: then a op= member 1's)
        if (from[0] == a) reduceInto(p.a.type, p.a.op, a, from[1], c);
        else reduceTo(p.a.type, p.a.op, a, from[0], from[1], c);
        k = 2;
      }
      for (; k < k1; ++k) reduceInto(p.a.type, p.a.op, a, from[k - k0], c);
    }
    if (viaAcc) TETHER_TRY(writeLocal(call, out + off * es, a, bytes, outDevice));
  }
  return Status::ok();
}

}  // namespace tether
