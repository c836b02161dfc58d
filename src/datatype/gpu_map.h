// The GPU engine's map from work items to bytes (gpu_pack.h), compiled for kernels (nvcc) and for the host, so the
// same code that the kernels run is tested on CPUs in CI (tests/datatype/test_gpu_map.cpp emulates every lane).
//
// Blocks. One instance of a canonical form (canonical.h) is a sequence of contiguous blocks: segment s repeats its
// pieces; piece p has elements() blocks of p.block bytes. Global block g of a pack of count instances is block
// (g mod blocksPerInst) of instance g / blocksPerInst. DSeg/DPiece add block numbering to the canonical form, exactly
// as packedStart numbers bytes: blockStart = blocks before this segment in an instance / this piece in a repetition.
//
// Schemes (work decomposition; launch shapes come from shapeThread/shapeWarp so kernels and emulation agree):
//  - thread: warp w handles rounds i < K of 32 consecutive blocks starting at G0 + 32*K*w; lane l locates block
//    G0 + 32*(K*w + i) + l, and the warp copies the round's (contiguous) packed bytes together, unit by unit
//    (ownerLane). A lane locates its first block once (divisions, two binary searches) and then advances by 32
//    blocks with carries (divisions only when a dimension wraps by more than one).
//  - warp: item t = block * cpb + chunk (cpb chunks of `chunk` bytes per block, sized by the longest block); warp w
//    handles items [T0 + K*w, T0 + K*(w+1)); the lanes split each chunk.
// Every copy is clipped to the fragment [off, end) of packed bytes.
#pragma once

#include <climits>
#include <cstdint>
#include <utility>
#include <vector>

#include "datatype/canonical.h"

#if defined(__CUDACC__)
#define DT_HD __host__ __device__ __forceinline__
#else
#define DT_HD inline
#endif

namespace tether::dt {

// A flat segment (every piece one block: indexed and struct bodies) keeps its blocks in the compact flat arrays
// (flatOff: user offset; flatPacked: packed start within a repetition) instead of DPiece records: 8 or 16 bytes of
// metadata per block rather than 112, and no search to locate a block. firstPiece then indexes the flat arrays.
struct DSeg {
  int64_t firstPiece, numPieces, repeat, stride, repBytes, packedStart, blocksPerRep, blockStart;
  int64_t block;  // flat segments whose blocks all have this length (flatPacked unused); 0 otherwise
  int32_t flat;   // every piece is one block
  int32_t pad;
};
struct DPiece {
  int64_t offset, block, packedStart, blockStart, elems;
  int64_t count[kMaxDims], stride[kMaxDims];
  int32_t nd, pad;
};
struct DMeta {  // passed to kernels by value; the tables in the kernel's memory
  int64_t size, extent, blocksPerInst, maxBlock;
  int32_t nsegs, width;
  const DSeg* segs;
  const DPiece* pieces;      // blocks of non-flat segments
  const int64_t* flatOff;    // flat segments: user offset of each block
  const int64_t* flatPacked; // flat segments: packed start of each block within its repetition
};

// Host-side tables for a canonical form (uploaded as-is for kernels).
struct MapTables {
  std::vector<DSeg> segs;
  std::vector<DPiece> pieces;
  std::vector<int64_t> flatOff, flatPacked;
  int64_t blocksPerInst = 0, maxBlock = 0;
};
inline MapTables buildTables(const Canonical& c) {
  MapTables t;
  int64_t blockStart = 0;
  for (const Segment& s : c.segments) {
    DSeg d{};
    d.firstPiece = static_cast<int64_t>(t.pieces.size());
    d.numPieces = s.numPieces;
    d.repeat = s.repeat;
    d.stride = s.stride;
    d.repBytes = s.repBytes;
    d.packedStart = s.packedStart;
    d.blockStart = blockStart;
    d.flat = 1;
    int64_t blocks = 0;
    for (int64_t i = s.firstPiece; i < s.firstPiece + s.numPieces; ++i)
      if (c.pieces[static_cast<size_t>(i)].elements() != 1) d.flat = 0;
    if (d.flat) {
      d.firstPiece = static_cast<int64_t>(t.flatOff.size());
      d.block = c.pieces[static_cast<size_t>(s.firstPiece)].block;
      for (int64_t i = s.firstPiece; i < s.firstPiece + s.numPieces; ++i) {
        const Piece& p = c.pieces[static_cast<size_t>(i)];
        t.flatOff.push_back(p.offset);
        t.flatPacked.push_back(p.packedStart);
        if (p.block != d.block) d.block = 0;
        if (p.block > t.maxBlock) t.maxBlock = p.block;
      }
      d.blocksPerRep = s.numPieces;
      t.segs.push_back(d);
      blockStart += s.numPieces * s.repeat;
      continue;
    }
    for (int64_t i = s.firstPiece; i < s.firstPiece + s.numPieces; ++i) {
      const Piece& p = c.pieces[static_cast<size_t>(i)];
      DPiece q{};
      q.offset = p.offset;
      q.block = p.block;
      q.packedStart = p.packedStart;
      q.blockStart = blocks;
      q.elems = p.elements();
      q.nd = p.nd;
      for (int k = 0; k < kMaxDims; ++k) q.count[k] = p.count[k], q.stride[k] = p.stride[k];
      blocks += q.elems;
      if (p.block > t.maxBlock) t.maxBlock = p.block;
      t.pieces.push_back(q);
    }
    d.blocksPerRep = blocks;
    t.segs.push_back(d);
    blockStart += blocks * s.repeat;
  }
  t.blocksPerInst = blockStart;
  return t;
}
// The tables' arrays at the given addresses (host vectors, or their device copies).
inline DMeta metaOf(const Canonical& c, const MapTables& t, const DSeg* segs, const DPiece* pieces,
                    const int64_t* flatOff, const int64_t* flatPacked) {
  DMeta m{};
  m.size = c.size;
  m.extent = c.extent;
  m.blocksPerInst = t.blocksPerInst;
  m.maxBlock = t.maxBlock;
  m.nsegs = static_cast<int32_t>(t.segs.size());
  m.width = c.width;
  m.segs = segs;
  m.pieces = pieces;
  m.flatOff = flatOff;
  m.flatPacked = flatPacked;
  return m;
}

// Global block index of the block holding packed byte b (0 <= b < count * size). Host side (launch set-up).
inline int64_t blockAt(const DMeta& m, int64_t b) {
  const int64_t inst = b / m.size;
  const int64_t r = b - inst * m.size;
  int s = 0;
  for (int lo = 0, hi = m.nsegs - 1; lo <= hi;) {
    const int mid = (lo + hi) / 2;
    if (m.segs[mid].packedStart <= r) s = mid, lo = mid + 1; else hi = mid - 1;
  }
  const DSeg& seg = m.segs[s];
  const int64_t q = r - seg.packedStart;
  const int64_t rep = q / seg.repBytes;
  const int64_t q2 = q - rep * seg.repBytes;
  const int64_t before = inst * m.blocksPerInst + seg.blockStart + rep * seg.blocksPerRep;
  if (seg.flat) {
    if (seg.block) return before + q2 / seg.block;
    int64_t lo = seg.firstPiece, hi = seg.firstPiece + seg.numPieces - 1, f = lo;
    while (lo <= hi) {
      const int64_t mid = (lo + hi) / 2;
      if (m.flatPacked[mid] <= q2) f = mid, lo = mid + 1; else hi = mid - 1;
    }
    return before + (f - seg.firstPiece);
  }
  int64_t pi = seg.firstPiece;
  for (int64_t lo = seg.firstPiece, hi = seg.firstPiece + seg.numPieces - 1; lo <= hi;) {
    const int64_t mid = (lo + hi) / 2;
    if (m.pieces[mid].packedStart <= q2) pi = mid, lo = mid + 1; else hi = mid - 1;
  }
  const DPiece& p = m.pieces[pi];
  return before + p.blockStart + (q2 - p.packedStart) / p.block;
}

// ---- launch shapes --------------------------------------------------------------------------------------------------
struct Shape {
  int64_t warps = 0;  // warps to launch (threads = 32 * warps, rounded up to whole CTAs by the launcher)
  int K = 1;          // rounds (thread) or items (warp) per warp
  int64_t first = 0, last = 0;  // [G0, G1) blocks (thread) or [T0, T1) items (warp)
  int64_t cpb = 1, chunk = 0;   // warp scheme: chunks per block, chunk bytes
};
inline Shape shapeThread(const DMeta& m, int64_t off, int64_t end, int sms) {
  Shape s;
  s.first = blockAt(m, off);
  s.last = blockAt(m, end - 1) + 1;
  // Many short warps: each round's loads wait on the metadata loads before them, so latency is hidden by more warps in
  // flight, not by more rounds per warp (measured on an H200: sms * 512 beat sms * 64 and sms * 4096 overall).
  const int64_t rounds = (s.last - s.first + 31) / 32, target = static_cast<int64_t>(sms) * 512;
  int64_t k = rounds / (target > 0 ? target : 1);
  s.K = static_cast<int>(k < 1 ? 1 : k > 64 ? 64 : k);  // rounds per warp: enough warps to fill the GPU first
  s.warps = (rounds + s.K - 1) / s.K;
  return s;
}
// Units per lane per chunk in the warp scheme: 64 bytes in flight per lane (16 units of 1-2 bytes: registers).
constexpr DT_HD int chunkUnits(int unitBytes) { return unitBytes >= 16 ? 4 : unitBytes >= 4 ? 64 / unitBytes : 16; }
inline Shape shapeWarp(const DMeta& m, int64_t off, int64_t end, int sms, int unitBytes) {
  Shape s;
  s.chunk = 32 * chunkUnits(unitBytes) * static_cast<int64_t>(unitBytes);
  s.cpb = (m.maxBlock + s.chunk - 1) / s.chunk;
  s.first = blockAt(m, off) * s.cpb;
  s.last = (blockAt(m, end - 1) + 1) * s.cpb;
  const int64_t target = static_cast<int64_t>(sms) * 64;
  int64_t k = (s.last - s.first) / (target > 0 ? target : 1);
  s.K = static_cast<int>(k < 1 ? 1 : k > 16 ? 16 : k);
  s.warps = (s.last - s.first + s.K - 1) / s.K;
  return s;
}

// ---- positions ------------------------------------------------------------------------------------------------------
struct Pos {
  int64_t inst, rep, piece, e;
  int64_t idx[kMaxDims];
  int32_t seg;
};

DT_HD void setIdx(const DPiece& pc, int64_t e, int64_t* idx) {
  for (int k = 0; k < kMaxDims; ++k) {
    if (k < pc.nd) {
      const int64_t q = e / pc.count[k];
      idx[k] = e - q * pc.count[k];
      e = q;
    } else {
      idx[k] = 0;
    }
  }
}

DT_HD void locate(const DMeta& m, int64_t g, Pos& p) {
  p.inst = g / m.blocksPerInst;
  int64_t r = g - p.inst * m.blocksPerInst;
  int lo = 0, hi = m.nsegs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (m.segs[mid].blockStart <= r) lo = mid; else hi = mid - 1;
  }
  p.seg = lo;
  const DSeg& s = m.segs[lo];
  r -= s.blockStart;
  p.rep = r / s.blocksPerRep;
  r -= p.rep * s.blocksPerRep;
  if (s.flat) {
    p.piece = s.firstPiece + r;
    p.e = 0;
    for (int k = 0; k < kMaxDims; ++k) p.idx[k] = 0;
    return;
  }
  int64_t a = s.firstPiece, b = s.firstPiece + s.numPieces - 1;
  while (a < b) {
    const int64_t mid = (a + b + 1) >> 1;
    if (m.pieces[mid].blockStart <= r) a = mid; else b = mid - 1;
  }
  p.piece = a;
  p.e = r - m.pieces[a].blockStart;
  setIdx(m.pieces[a], p.e, p.idx);
}

// Moves p forward by n blocks (callers stop before passing the end of the pack).
DT_HD void advance(const DMeta& m, Pos& p, int64_t n) {
  while (n > 0) {
    const DSeg& s = m.segs[p.seg];
    if (p.e == 0 && p.piece == s.firstPiece) {  // at a repetition (or instance) start: skip whole ones at once
      if (p.rep == 0 && p.seg == 0 && n >= m.blocksPerInst) {
        const int64_t k = n / m.blocksPerInst;
        p.inst += k;
        n -= k * m.blocksPerInst;
        continue;
      }
      if (n >= s.blocksPerRep && p.rep + 1 < s.repeat) {
        int64_t k = n / s.blocksPerRep;
        if (k > s.repeat - 1 - p.rep) k = s.repeat - 1 - p.rep;
        p.rep += k;
        n -= k * s.blocksPerRep;
        continue;
      }
    }
    const int64_t last = s.firstPiece + s.numPieces;
    int64_t next = p.piece + 1;
    if (s.flat) {  // one block per piece: jump over n of them at once
      --n;
      const int64_t jump = n < last - next ? n : last - next;
      next += jump;
      n -= jump;
    } else {
      const DPiece& pc = m.pieces[p.piece];
      const int64_t left = pc.elems - p.e;
      if (n < left) {  // stays in this piece: carry the index
        p.e += n;
        p.idx[0] += n;
        for (int k = 0; k + 1 < kMaxDims; ++k)  // constant bounds: idx stays in registers on the GPU
          if (k + 1 < pc.nd && p.idx[k] >= pc.count[k]) {
            const int64_t carry = p.idx[k] / pc.count[k];
            p.idx[k] -= carry * pc.count[k];
            p.idx[k + 1] += carry;
          }
        return;
      }
      n -= left;
      p.e = 0;
      for (int k = 0; k < kMaxDims; ++k) p.idx[k] = 0;
    }
    if (next < last) {
      p.piece = next;
      continue;
    }
    if (++p.rep == s.repeat) {
      p.rep = 0;
      if (++p.seg == m.nsegs) {
        p.seg = 0;
        ++p.inst;
      }
    }
    p.piece = m.segs[p.seg].firstPiece;
  }
}

// Byte offsets of the block at p: in the user buffer (from the type origin) and in the whole pack; its length.
DT_HD void addresses(const DMeta& m, const Pos& p, int64_t* user, int64_t* packed, int64_t* block) {
  const DSeg& s = m.segs[p.seg];
  if (s.flat) {
    const int64_t i = p.piece - s.firstPiece;
    *user = p.inst * m.extent + p.rep * s.stride + m.flatOff[p.piece];
    const int64_t start = s.block ? i * s.block : m.flatPacked[p.piece];
    *packed = p.inst * m.size + s.packedStart + p.rep * s.repBytes + start;
    *block = s.block ? s.block : (i + 1 < s.numPieces ? m.flatPacked[p.piece + 1] : s.repBytes) - start;
    return;
  }
  const DPiece& pc = m.pieces[p.piece];
  int64_t u = p.inst * m.extent + p.rep * s.stride + pc.offset;
  for (int k = 0; k < kMaxDims; ++k) u += p.idx[k] * pc.stride[k];
  *user = u;
  *packed = p.inst * m.size + s.packedStart + p.rep * s.repBytes + pc.packedStart + p.e * pc.block;
  *block = pc.block;
}

// ---- per-lane work ----------------------------------------------------------------------------------------------------
// Thread scheme. Round r of warp w covers the 32 consecutive blocks G = first + 32 * (K * w + r) .. G + 31 (rounds
// with G >= last are skipped; every lane of a warp runs the same rounds). Lane l locates block G + l (Cursor), and the
// warp then copies the round's packed bytes — one contiguous range, since its blocks are consecutive in pack order —
// cooperatively: unit q (width bytes) of the round goes to lane q mod 32, which finds the block holding it with
// ownerLane over the lanes' exclusive prefix sums of clipped block lengths. Packed accesses of a warp are therefore
// contiguous and user accesses within a block are too, whatever the block length.
struct Cursor {
  Pos p;
  int64_t g;   // this lane's block in the current round
  bool live;   // g < last
};
// Cursor of lane `lane` for round 0 of warp `warp`.
DT_HD void cursorStart(const DMeta& m, const Shape& sh, int64_t warp, int lane, Cursor& c) {
  c.g = sh.first + warp * 32 * sh.K + lane;
  c.live = c.g < sh.last;
  if (c.live) locate(m, c.g, c.p);
}
// First block of round r of warp `warp` (the round runs when r < K and this is < last).
DT_HD int64_t roundFirst(const Shape& sh, int64_t warp, int r) { return sh.first + 32 * (sh.K * warp + r); }
// The lane's block clipped to [off, end): user offset of its first byte, its absolute packed offset and length (0 for
// a lane past the end). Blocks in [first, last) are never empty once clipped.
DT_HD void cursorBlock(const DMeta& m, const Cursor& c, int64_t off, int64_t end, int64_t* user, int64_t* packed,
                       int64_t* len) {
  if (!c.live) {
    *user = 0, *packed = 0, *len = 0;
    return;
  }
  int64_t u, pk, bl;
  addresses(m, c.p, &u, &pk, &bl);
  const int64_t lo = pk > off ? pk : off, hi = pk + bl < end ? pk + bl : end;
  *user = u + (lo - pk);
  *packed = lo;
  *len = hi - lo;
}
// Moves the lane to its block of the next round.
DT_HD void cursorNext(const DMeta& m, const Shape& sh, Cursor& c) {
  if (!c.live) return;
  c.g += 32;
  c.live = c.g < sh.last;
  if (c.live) advance(m, c.p, 32);
}
// The lane whose block holds round byte q: the largest l with start(l) <= q, start(l) the exclusive prefix sum of the
// lanes' lengths (start(0) == 0, non-decreasing; lanes past the end start at the round's total). start is called
// exactly five times, unconditionally (on the GPU it is a shuffle every lane must join).
template <typename Start>
DT_HD int ownerLane(Start&& start, int64_t q) {
  int l = 0;
  for (int step = 16; step > 0; step >>= 1) {
    const int64_t s = start(l + step);
    if (s <= q) l += step;
  }
  return l;
}

// Warp scheme, warp `warp` (all lanes call with the same arguments): calls chunk(userOffset, packedOffset, lo, hi) for
// each of its items with a non-empty clipped range; the caller splits [lo, hi) among its lanes.
template <typename Chunk>
DT_HD void warpItems(const DMeta& m, const Shape& sh, int64_t warp, int64_t off, int64_t end, Chunk&& chunk) {
  int64_t t = sh.first + warp * sh.K;
  if (t >= sh.last) return;
  int64_t g = t / sh.cpb, c = t - g * sh.cpb;
  Pos p;
  locate(m, g, p);
  for (int i = 0; i < sh.K && t < sh.last; ++i, ++t) {
    int64_t u, pk, bl;
    addresses(m, p, &u, &pk, &bl);
    int64_t lo = pk + c * sh.chunk, hi = pk + (c + 1) * sh.chunk;
    if (hi > pk + bl) hi = pk + bl;
    if (lo < off) lo = off;
    if (hi > end) hi = end;
    if (lo < hi) chunk(u, pk, lo, hi);
    if (++c == sh.cpb) {
      c = 0;
      if (t + 1 < sh.last) advance(m, p, 1);
    }
  }
}

// ---- elem scheme ------------------------------------------------------------------------------------------------------
// Unit per thread, no search: packed unit t (width bytes) of the pack is item n = t / upi, unit j = t mod upi of it;
// the item's user offset is base + table[n mod P] + sum_k idx_k * stride_k, where (n / P) is split over up to
// kElemDims outer dimensions (count_k, stride_k), dimension 0 fastest. Two forms (elemForm):
//  - strided: the whole pack is one strided block (one segment of one piece; repetitions and instances become outer
//    dimensions): items are its blocks, no table (P = 1);
//  - table: one instance is cut into items of L bytes (L = gcd of its contiguous runs) whose user offsets form the
//    table (P = size / L entries); instances are the one outer dimension. Indexed and struct types up to
//    kElemMaxTable items per instance.
// All index math is 32-bit with divisions by precomputed multipliers (FastDiv), so the scheme applies when the pack
// has < 2^31 units and every count fits in 32 bits; the thread and warp schemes cover the rest. Whole unpacks of
// the strided form may iterate in the user buffer's order instead (EDesc::userOrder): a transpose's stores stay
// contiguous.

// q = n / d for 0 <= n < 2^32 as ((n * m) >> 32 + n) >> s, with s = ceil(log2 d) and
// m = floor(2^32 * (2^s - d) / d) + 1 (Granlund and Montgomery, "Division by invariant integers using
// multiplication", PLDI 1994); exact for every such n and d >= 1 (checked in CI on edge and random cases).
struct FastDiv {
  uint32_t d, m, s;
};
inline FastDiv fastDiv(uint32_t d) {  // d >= 1
  FastDiv f{d, 0, 0};
  while ((uint64_t{1} << f.s) < d) ++f.s;
  f.m = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << f.s) - d)) / d + 1);
  return f;
}
DT_HD uint32_t fdiv(const FastDiv& f, uint32_t n) {
#if defined(__CUDA_ARCH__)
  const uint32_t hi = __umulhi(n, f.m);
#else
  const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(n) * f.m) >> 32);
#endif
  return static_cast<uint32_t>((static_cast<uint64_t>(hi) + n) >> f.s);
}

constexpr int kElemDims = 6;
constexpr int64_t kElemMaxTable = int64_t{1} << 26;  // items per instance in the table form (<= 256 MiB as int32)
constexpr int64_t kElemMaxUnits = int64_t{1} << 31;  // units per pack (exclusive)
// Tables of up to kElemInline entries travel inside the descriptor (kernel parameters: no dependent load before the
// data load) when the pack is small enough to be latency-bound (lanes reading different parameter words serialise).
constexpr int kElemInline = 8;
constexpr int64_t kElemInlineUnits = 8192;

// Count-independent part of the scheme, built once per canonical form (host).
struct ElemForm {
  bool ok = false;
  bool table = false;             // table form (else strided)
  int64_t item = 0;               // bytes per item
  int64_t base = 0;               // strided: user offset of the first item
  std::vector<int64_t> dims;      // strided: count, stride pairs of one instance, fastest first
  int64_t entries = 0;            // table: items per instance
  std::vector<int64_t> offsets;   // table: user offset of each item of an instance (the launcher may drop it once
                                  // uploaded: entries stays)
};

// Folds (count, stride) pairs: drops counts of 1, merges a dimension into the next-slower one when it continues it.
inline void foldDims(std::vector<int64_t>& d) {
  std::vector<int64_t> r;
  for (size_t k = 0; k + 1 < d.size(); k += 2) {
    if (d[k] == 1) continue;
    if (!r.empty() && r[r.size() - 2] * r[r.size() - 1] == d[k + 1]) {
      r[r.size() - 2] *= d[k];
      continue;
    }
    r.push_back(d[k]);
    r.push_back(d[k + 1]);
  }
  d.swap(r);
}

inline ElemForm elemForm(const Canonical& c) {
  ElemForm f;
  if (c.size <= 0) return f;
  if (c.segments.size() == 1 && c.segments[0].numPieces == 1) {
    const Segment& s = c.segments[0];
    const Piece& p = c.pieces[static_cast<size_t>(s.firstPiece)];
    f.item = p.block;
    f.base = p.offset;
    for (int k = 0; k < p.nd; ++k) f.dims.push_back(p.count[k]), f.dims.push_back(p.stride[k]);
    f.dims.push_back(s.repeat), f.dims.push_back(s.stride);
    foldDims(f.dims);
    while (!f.dims.empty() && f.dims[1] == f.item) {  // the block continues into the next: longer items
      f.item *= f.dims[0];
      f.dims.erase(f.dims.begin(), f.dims.begin() + 2);
    }
    f.ok = true;
    return f;
  }
  // Table form: the instance's runs in pack order, cut into items of their gcd.
  std::vector<std::pair<int64_t, int64_t>> runs;
  int64_t g = 0;
  (void)hostWalk(c, 0, c.size, [&](int64_t d, int64_t n) {
    runs.push_back({d, n});
    int64_t a = g, b = n;
    while (b) a %= b, std::swap(a, b);
    g = a;
    return Status::ok();
  });
  if (g <= 0 || c.size / g > kElemMaxTable) return f;
  f.table = true;
  f.item = g;
  f.offsets.reserve(static_cast<size_t>(c.size / g));
  for (const auto& r : runs)
    for (int64_t x = 0; x < r.second; x += g) f.offsets.push_back(r.first + x);
  f.entries = static_cast<int64_t>(f.offsets.size());
  f.ok = true;
  return f;
}

// Per-launch descriptor (passed to kernels by value). table: P offsets, int32_t or int64_t (the launcher's choice).
// Unit t is the t-th unit in iteration order; that is pack order unless `userOrder` (elemDesc), where the outer
// dimensions are iterated by increasing user stride and pitem[k] gives dimension k's step in packed items.
// Layout: what a strided pack reads before its first load (base, the divisors, each dimension's count and stride
// side by side) comes first, the table-form and user-order fields after, so a pack of few dimensions touches few
// lines of the kernel's parameter space (a small pack waits on each line its first address needs).
struct EDim {
  FastDiv count;   // the dimension's count, as a divisor
  int32_t pad;
  int64_t stride;  // user bytes per step
};
struct EDesc {
  int64_t base;
  int32_t nd, unit;
  int32_t tabled;     // table form
  int32_t inlined;    // table entries held in `small` (table unused)
  int32_t userOrder;
  int32_t items;      // launch shape: units per thread (1, 2 or 4; elemItems(); host side only)
  FastDiv upi, period;
  EDim dim[kElemDims];
  int32_t small[kElemInline];
  const void* table;          // device table (table form, unless inlined)
  int64_t pitem[kElemDims];   // userOrder only
};

// Units per thread of the elem kernel (its launch shape), from measurements on one H200 (2026-11-24: every layout of
// bench/datatype at 1, 2 and 4; bench/results/h200/items/README.md). meanBlock: packed bytes per contiguous run of the type.
//  - Strided form. Items shorter than 256 B: 1, a thread per element (5-13 % faster than 4 on large 8-40 B items,
//    level with a hand-written kernel). Items of 64 KiB or more: 4 (a contiguous 64 MiB pack: 13 % faster than 1).
//    Rows between: a pack with units narrower than 16 B: 4 (the row loads need the bytes in flight: 18-20 % faster
//    than 1 on 2000-3056 B rows of 8-byte units); otherwise 1 (16-byte units: 3-6 % faster on 2560-6400 B rows;
//    unpacks of 8-byte-unit rows: 4 %).
//  - Table form (each item's offset is a dependent table load). Unpacks: 1 (4-10 % faster). Packs: 4 (more
//    independent table-then-data chains per thread: 5-34 % faster on LAMMPS, SPECFEM3D mt and the N-body layouts),
//    except where every unit is a run of its own (meanBlock <= unit: 6 % faster with 1, SPECFEM3D oc).
inline int elemItems(const ElemForm& f, double meanBlock, int unit, bool unpack) {
  if (f.table) return unpack || meanBlock <= unit ? 1 : 4;
  if (f.item < 256) return 1;
  if (f.item >= (int64_t{64} << 10)) return 4;
  return !unpack && unit < 16 ? 4 : 1;
}

// Descriptor for packed units [off / unit, end / unit) of count instances; false when the scheme does not apply
// (too many units or dimensions). `table` is the device copy of f.offsets (ignored for the strided form).
// userOrder (whole packs of the strided form only; ignored otherwise): iterate in the user buffer's order when that
// differs from pack order (a transpose), so an unpack's stores, not its loads, are the contiguous side.
inline bool elemDesc(const ElemForm& f, const Canonical& c, int64_t count, int unit, const void* table, EDesc* out,
                     bool userOrder = false) {
  if (!f.ok || count * c.size / unit >= kElemMaxUnits || f.item % unit || (f.table && f.entries < 1)) return false;
  std::vector<int64_t> dims = f.table ? std::vector<int64_t>{} : f.dims;
  dims.push_back(count), dims.push_back(c.extent);
  foldDims(dims);
  if (dims.size() > 2 * static_cast<size_t>(kElemDims)) return false;
  EDesc d{};
  d.base = f.table ? 0 : f.base;
  d.unit = unit;
  d.items = 4;  // the inlined and userOrder variants; the plain ones take elemItems() (set by the launcher)
  d.upi = fastDiv(static_cast<uint32_t>(f.item / unit));
  d.period = fastDiv(f.table ? static_cast<uint32_t>(f.entries) : 1u);
  d.table = f.table ? table : nullptr;
  d.tabled = f.table;
  if (f.table && f.entries <= kElemInline && static_cast<int64_t>(f.offsets.size()) == f.entries &&
      count * c.size / unit <= kElemInlineUnits) {
    bool fits = true;
    for (int64_t o : f.offsets) fits = fits && o >= INT32_MIN && o <= INT32_MAX;
    if (fits) {
      d.inlined = 1;
      for (size_t i = 0; i < f.offsets.size(); ++i) d.small[i] = static_cast<int32_t>(f.offsets[i]);
    }
  }
  d.nd = static_cast<int32_t>(dims.size() / 2);
  // Pack-order item steps, then the iteration order: by increasing |user stride| when asked (stable).
  int64_t pstep[kElemDims] = {};
  int order[kElemDims] = {0, 1, 2, 3, 4, 5};
  for (int k = 0, step = 1; k < d.nd; ++k) {
    pstep[k] = step;
    step *= static_cast<int>(dims[2 * static_cast<size_t>(k)]);  // < 2^31: the units are
  }
  auto mag = [&](int k) {
    const int64_t x = dims[2 * static_cast<size_t>(k) + 1];
    return x < 0 ? -x : x;
  };
  if (userOrder && !f.table)
    for (int k = 1; k < d.nd; ++k)
      for (int j = k; j > 0 && mag(order[j]) < mag(order[j - 1]); --j) std::swap(order[j], order[j - 1]);
  for (int k = 0; k < d.nd; ++k) d.userOrder |= order[k] != k;
  for (int k = 0; k < kElemDims; ++k) {
    const bool used = k < d.nd;
    const size_t o = static_cast<size_t>(used ? order[k] : 0);
    d.dim[k].count = fastDiv(used ? static_cast<uint32_t>(dims[2 * o]) : 1u);
    d.dim[k].stride = used ? dims[2 * o + 1] : 0;
    d.pitem[k] = used ? pstep[o] : 0;
  }
  *out = d;
  return true;
}

// User offset (from the type origin) of unit t in iteration order; with UserOrder (for descriptors with userOrder
// set) also its packed unit (*packedUnit; in pack order it is t itself). T: the table's entry type (ignored
// without a table). Inline: for descriptors with `inlined` set (a compile-time choice: a runtime select would read
// the parameter words on every unit, serialising lanes that want different entries).
template <typename T, bool UserOrder = false, bool Inline = false>
DT_HD int64_t elemUser(const EDesc& d, uint32_t t, int64_t* packedUnit = nullptr) {
  const uint32_t n = fdiv(d.upi, t);
  const uint32_t j = t - n * d.upi.d;
  int64_t u = d.base + static_cast<int64_t>(j) * d.unit, pk = 0;
  uint32_t m = n;
  if (d.tabled) {
    const uint32_t q = fdiv(d.period, n);
    const uint32_t i = n - q * d.period.d;
    u += Inline ? d.small[i] : static_cast<const T*>(d.table)[i];
    m = q;
  }
  for (int k = 0; k < kElemDims; ++k) {  // constant bounds: unrolled on the GPU
    if (k < d.nd) {
      const uint32_t q = k + 1 < d.nd ? fdiv(d.dim[k].count, m) : 0;
      const int64_t idx = static_cast<int64_t>(m - q * d.dim[k].count.d);
      u += idx * d.dim[k].stride;
      if (UserOrder) pk += idx * d.pitem[k];
      m = q;
    }
  }
  if (UserOrder) *packedUnit = pk * d.upi.d + j;
  return u;
}

// ---- elem unpacks in 16-byte pairs ----------------------------------------------------------------------------------
// An unpack of 8-byte units stores 8 bytes per unit, and rows that start 8 bytes off a 16-byte boundary make every
// warp's stores straddle sectors: on an H200 a hand-written unpack of COSMO-north-like 2000 B rows at byte 24 took
// 71.3 us with 8-byte stores and 64.0 us with paired 16-byte stores (bench/results/h200/experiments/
// unpack_width_2026-11-26.txt). The paired variant gives thread q units s + 2q and s + 2q + 1 of [t0, t1), with
// s = t0 - phase and phase 1 when unit t0's user address is 8 mod 16, so a unit at a 16-byte-aligned address starts
// a pair: one 16-byte store where both units are in range, adjacent in the user buffer and aligned, else one 8-byte
// store per unit in range. userAddr: the user buffer's address (the type origin). Fixed slots, no compaction (a
// runtime index would put the arrays in local memory on the GPU).
struct PairUnits {
  bool has[2];     // unit slot k is in [t0, t1)
  uint32_t unit[2];
  int64_t at[2];   // user offsets of the units in range
  bool wide;       // both in range, adjacent and 16-byte aligned: one store
};
template <typename T>
DT_HD PairUnits elemPair(const EDesc& d, uint64_t userAddr, uint32_t t0, uint32_t t1, uint32_t q) {
  const int64_t phase = static_cast<int64_t>(((userAddr + static_cast<uint64_t>(elemUser<T>(d, t0))) >> 3) & 1);
  const int64_t s = static_cast<int64_t>(t0) - phase + 2 * static_cast<int64_t>(q);
  PairUnits p{};
  p.has[0] = s >= t0 && s < t1;
  p.has[1] = s + 1 < t1;  // s + 1 >= t0 always
  p.unit[0] = static_cast<uint32_t>(s);
  p.unit[1] = static_cast<uint32_t>(s + 1);
  p.at[0] = p.has[0] ? elemUser<T>(d, p.unit[0]) : 0;
  p.at[1] = p.has[1] ? elemUser<T>(d, p.unit[1]) : 0;
  p.wide = p.has[0] && p.has[1] && p.at[1] == p.at[0] + 8 && ((userAddr + static_cast<uint64_t>(p.at[0])) & 15) == 0;
  return p;
}
// Threads a paired launch over [t0, t1) needs (whatever the phase).
DT_HD uint32_t elemPairThreads(uint32_t t0, uint32_t t1) { return (t1 - t0) / 2 + 1; }
// Whether an unpack of `bytes` packed bytes with descriptor d (made from form f) takes the paired variant, unless
// forced (TETHER_DT_ELEM_PAIR): 8-byte units of the strided form, rows of at least 256 B and an even number of units,
// every dimension's stride a multiple of 16 (so every row starts at the same address mod 16 and a row's pairs line up
// like the first's), and at least kElemPairMinBytes. Measured on an H200 (bench/results/h200/experiments/
// pair_2026-11-26/): 64-100 MB unpacks of such rows 0-5 % faster (Stencil3D y 67.6 -> 64.5 us, COSMO north 70.0 ->
// 69.4, Stencil2D north level); ~1 MB ones slower (Stencil3D y 5.4 -> 6.0 us, Stencil2D north 4.2 -> 6.5: a launch of
// half the threads, each with a longer chain), hence the size floor.
constexpr int64_t kElemPairMinBytes = int64_t{16} << 20;
inline bool elemPairs(const ElemForm& f, const EDesc& d, int64_t bytes) {
  if (d.unit != 8 || d.tabled || d.inlined || d.userOrder || f.item < 256 || (f.item / 8) % 2 != 0 ||
      bytes < kElemPairMinBytes)
    return false;
  for (int k = 0; k < d.nd; ++k)
    if (d.dim[k].stride % 16 != 0) return false;
  return true;
}

// ---- batch scheme (host side) -------------------------------------------------------------------------------------
// The copy list of packed bytes [off, off + len): one entry per memory run (hostWalk's runs, adjacent ones merged),
// in pack order. Pack: from user + displacement to packed + (run's first packed byte - off); unpack the reverse.
// packed points at packed byte off (as for the kernels). Returns false, with a partial list, beyond maxRuns runs.
struct BatchList {
  std::vector<void*> dst;
  std::vector<const void*> src;
  std::vector<size_t> size;
};
inline bool batchList(const Canonical& c, char* user, char* packed, int64_t off, int64_t len, bool unpack,
                      size_t maxRuns, BatchList* out) {
  out->dst.clear();
  out->src.clear();
  out->size.clear();
  int64_t pos = 0;  // packed bytes of the fragment listed so far
  const Status st = hostWalk(c, off, len, [&](int64_t d, int64_t n) -> Status {
    if (out->size.size() == maxRuns) return Status(TETHER_ERR_UNSUPPORTED, "batch: too many runs");
    char* u = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(user) + static_cast<uintptr_t>(d));
    out->dst.push_back(unpack ? u : packed + pos);
    out->src.push_back(unpack ? packed + pos : u);
    out->size.push_back(static_cast<size_t>(n));
    pos += n;
    return Status::ok();
  });
  return st.isOk();
}

}  // namespace tether::dt
