// Non-contiguous put/get (issue #7, "Integration"): source and target each described by a committed datatype and a
// count; the source's packed byte stream (count * size bytes, MPI type-map order) becomes the target's.
//
// Routes, chosen per call from what the target's path allows (docs/datatype.md "Non-contiguous put/get"):
//  - CpuDirect: the remote bytes are host memory mapped here (self/shm/p2p path to a HOST or STATIC segment) and the
//    local buffer is host memory: the host reference packs straight into, or unpacks straight out of, the peer's
//    memory. One side contiguous: no staging copy at all; both sides typed: a bounded host staging buffer
//    (kHostFragment), fragment by fragment (pack and unpack are resumable at any packed byte).
//  - GpuDirect: the remote bytes are GPU-addressable from here (a p2p DEVICE segment, or a HOST segment's GPU alias
//    when the local buffer is GPU memory): the GPU engine's kernels read/write the peer's memory. Local GPU buffer and
//    one side contiguous: one pack or unpack launch; otherwise through the World's GPU staging buffer (kGpuFragment).
//  - Staged: everything else (the staged DEVICE path, future network paths, TETHER_DT_RMA=staged): pack a fragment
//    into a local staging buffer, then one ordinary contiguous put per memory run of the remote type (get: one get per
//    run, then unpack). Works for every path the contiguous put/get serves.
// Choice (TETHER_DT_RMA=auto): direct wherever the peer's bytes are load/store (or kernel) reachable, except that a
// typed-to-typed transfer on the GPU route with a local GPU buffer goes staged when the cost model says it is faster
// (core/typed_route.h: the engine's calibrated estimates for both types, and the link terms measured once per PE by
// TypedRma::measureLink). With one side contiguous the direct route is never slower in the model: it does the same
// pack, overlapped with the link, instead of a pack then a copy. TETHER_DT_RMA=direct / staged force a route.
//
// Completion: the blocking and _nbi forms are complete on return (OpenSHMEM allows an nbi call to complete early).
// The Staged route issues its runs as non-blocking puts/gets and quiets once per fragment, which also completes this
// PE's earlier non-blocking operations (as a quiet may).
// Ordering against this PE's earlier nbi operations to overlapping bytes is not defined (as for put_nbi + put).
// Stream forms (OnStream): checks and route at the call, the transfer in stream order: CpuDirect as a stream host
// call (StreamOps::hostCall) holding shared references to both canonical forms; GpuDirect with a GPU local buffer as
// engine launches on the stream (typed-to-typed through stream-ordered scratch memory); Staged (a PE on another host,
// a same-host pair without a mapping, TETHER_DT_RMA=staged) as stagedOnStream below: the local side packed into (or
// unpacked from) a stage in stream order, and one stream proxy call (core/stream_ops.h) moving every memory run of the
// remote side as nbi transfers, at most kMaxStreamRuns runs. A host local buffer on a GPU stream is refused (GpuDirect and Staged).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/log.h"
#include "core/stream_ops.h"
#include "core/typed_rma.h"
#include "core/world.h"
#include "datatype/canonical.h"
#include "datatype/gpu_pack.h"
#include "datatype/handle.h"

namespace tether {

namespace {

constexpr int64_t kHostFragment = int64_t{1} << 20;  // host staging per fragment (typed-to-typed, Staged route)
// A stream-ordered staged transfer carries a table of the remote side's memory runs (16 bytes each) to its proxy call:
// more runs than this are refused (the blocking form walks any number).
constexpr int64_t kMaxStreamRuns = int64_t{1} << 20;
constexpr int64_t kGpuFragment = int64_t{8} << 20;   // the World's GPU staging buffer

// Address arithmetic on integers: displacements may point before a buffer's origin (negative lb), as in MPI.
char* at(const void* base, int64_t d) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(d));
}

// One side of a transfer after its checks.
struct Side {
  const char* name;  // "dest" or "src" (messages)
  tether_type_s* handle;
  const dt::Canonical* c;
  int64_t count;
  int64_t bytes;  // count * size
};

Status checkSide(const char* call, const char* name, tether_type_s* t, int64_t count, Side* out) {
  if (!t || !t->type) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s_type is NULL", call, name);
  if (!t->canonical)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s_type is not committed (call tether_type_commit first)", call, name);
  if (count < 0)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s_count is negative (%" PRId64 ")", call, name, count);
  int64_t bytes = 0;
  if (!dt::mulOk(count, t->canonical->size, &bytes))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: %s_count %" PRId64 " x size %" PRId64 " overflows int64", call, name, count,
                t->canonical->size);
  *out = Side{name, t, t->canonical.get(), count, bytes};
  return Status::ok();
}

// Bytes [lo, hi) relative to the buffer that `count` instances of the side's type touch (its true extent, repeated
// at the extent, which may be negative). Only for a non-empty pack.
Status trueSpan(const char* call, const Side& s, int64_t* lo, int64_t* hi) {
  const dt::Bounds& b = s.handle->type->bounds();
  int64_t last = 0;
  if (!dt::mulOk(s.count - 1, b.extent(), &last) || !dt::addOk(b.trueLb, std::min<int64_t>(0, last), lo) ||
      !dt::addOk(b.trueUb, std::max<int64_t>(0, last), hi))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: the true extent of %" PRId64 " x %s_type overflows int64", call, s.count,
                s.name);
  return Status::ok();
}

enum class Route { CpuDirect, GpuDirect, Staged };

const char* const kRouteNames[] = {"direct (CPU)", "direct (GPU)", "staged"};

// A side as memory: its type and count, and its base address as the route addresses it (the type's displacements
// apply relative to it).
struct Mem {
  const Side* side;
  char* base;
};

// Host reference copy of packed bytes [0, n) from one side to the other (CpuDirect): no staging when one side is
// contiguous, else a bounded staging buffer.
void cpuCopy(const Mem& from, const Mem& to, int64_t n) {
  int64_t d = 0;
  if (dt::hostContiguous(*to.side->c, to.side->count, &d)) return dt::hostPack(*from.side->c, from.base, 0, n, at(to.base, d));
  if (dt::hostContiguous(*from.side->c, from.side->count, &d))
    return dt::hostUnpack(*to.side->c, at(from.base, d), 0, n, to.base);
  std::vector<char> stage(static_cast<size_t>(std::min(n, kHostFragment)));
  for (int64_t off = 0; off < n;) {
    const int64_t len = std::min(n - off, kHostFragment);
    dt::hostPack(*from.side->c, from.base, off, len, stage.data());
    dt::hostUnpack(*to.side->c, stage.data(), off, len, to.base);
    off += len;
  }
}

// The GPU engine on `stream` of `device` (nullptr: the legacy default stream, so it follows the caller's
// default-stream work): packs bytes [off, off + len) of `user` into `packed`, or (unpack) the reverse.
Status engine(int device, bool unpack, const Mem& user, int64_t off, int64_t len, void* packed,
              void* stream = nullptr) {
  dt::GpuPackRequest r;
  r.c = user.side->c;
  r.count = user.side->count;
  r.src = unpack ? packed : user.base;
  r.dst = unpack ? static_cast<void*>(user.base) : packed;
  r.packedOffset = off;
  r.len = len;
  r.unpack = unpack;
  r.stream = stream;
  r.device = device;
  dt::Scheme used;
  return dt::gpuPack(r, &user.side->handle->gpu, &used);
}

// GpuDirect on a stream: one engine launch when one side is contiguous, else pack and unpack through stream-ordered
// scratch memory in fragments (all on `stream`, so they stay in order with the stream's other work).
Status typedOnGpuStream(int dev, const Mem& from, const Mem& to, int64_t n, void* stream) {
  int64_t off = 0;
  if (dt::hostContiguous(*to.side->c, to.side->count, &off)) return engine(dev, false, from, 0, n, at(to.base, off), stream);
  if (dt::hostContiguous(*from.side->c, from.side->count, &off))
    return engine(dev, true, to, 0, n, at(from.base, off), stream);
  void* scratch = nullptr;
  const int64_t frag = std::min(n, kGpuFragment);
  TETHER_TRY(dt::gpuScratchAlloc(dev, stream, frag, &scratch));
  Status st = Status::ok();
  for (off = 0; off < n && st.isOk(); off += frag) {
    const int64_t len = std::min(n - off, frag);
    st = engine(dev, false, from, off, len, scratch, stream);
    if (st.isOk()) st = engine(dev, true, to, off, len, scratch, stream);
  }
  Status fr = dt::gpuScratchFree(dev, stream, scratch);
  return st.isOk() ? fr : st;
}

// Staged in stream order: the local side <-> a stage of n bytes (on a GPU stream, whose local buffer is GPU memory:
// stream-ordered GPU scratch and engine launches; on the CPU emulation: host memory, packed and unpacked by stream
// host calls that hold the stage and the canonical form), and one stream proxy call (PutRuns / GetRuns, core/op.h)
// moving every memory run of the remote side between the stage and the peer as nbi transfers with one quiet. Proxy
// calls complete before the next stream operation starts (core/stream_ops.h), so the stage and the run table are
// released after it: on a GPU, the table's scratch freed in stream order (the caller releases the stage); host memory
// held by the last host call.
// gpuStage: n bytes of GPU memory for a GPU stream (the caller's stage, core/gpu_stages.h), unused on the CPU emulation.
Status stagedOnStream(World& w, StreamOps& so, const char* call, bool isPut, int pe, const Side& localSide,
                      char* localBase, const Side& remoteSide, void* remoteAddr, int64_t n, void* gpuStage,
                      void* stream) {
  auto table = std::make_shared<std::vector<int64_t>>();  // {displacement from remoteAddr, bytes} per run
  TETHER_TRY(dt::hostWalk(*remoteSide.c, 0, n, [&](int64_t disp, int64_t bytes) -> Status {
    if (static_cast<int64_t>(table->size() / 2) >= kMaxStreamRuns)
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: the %s side has more than %" PRId64 " memory runs: too many for a "
                  "stream-ordered staged transfer to PE %d (its run table); use the blocking form or a type with "
                  "fewer, longer blocks", call, remoteSide.name, kMaxStreamRuns, pe);
    table->push_back(disp);
    table->push_back(bytes);
    return Status::ok();
  }));
  tether_device_handle_t h{};
  TETHER_TRY(w.deviceHandle(so.gpuAddresses(), &h, true).withContext(call));
  const bool gpu = so.gpuAddresses();  // the caller refuses a host local buffer on a GPU stream
  const int dev = gpu ? w.gpu()->device() : -1;
  const size_t tableBytes = table->size() * sizeof(int64_t);
  std::shared_ptr<std::vector<char>> hostStage;
  char* stage = nullptr;
  const int64_t* runs = table->data();
  void* scratch = nullptr;  // GPU: the run table, stream-ordered (only the proxy-call kernel reads it)
  if (gpu) {
    stage = static_cast<char*>(gpuStage);
    // Copied in from pageable memory, which the copy stages at the call: `table` may go when this returns.
    TETHER_TRY(dt::gpuScratchAlloc(dev, stream, static_cast<int64_t>(tableBytes), &scratch));
    runs = static_cast<const int64_t*>(scratch);
    Status cp = so.copy(stream, scratch, table->data(), tableBytes);
    if (!cp.isOk()) {
      TETHER_WARN_ON_FAIL(dt::gpuScratchFree(dev, stream, scratch));
      return cp;
    }
  } else {
    hostStage = std::make_shared<std::vector<char>>(static_cast<size_t>(n));
    stage = hostStage->data();
  }
  const Mem local{&localSide, localBase};
  auto hostSide = [&](bool unpack) {  // pack (put) or unpack (get) on the host, in stream order
    return so.hostCall(stream, [unpack, n, hostStage, c = localSide.handle->canonical, base = localBase] {
      if (unpack)
        dt::hostUnpack(*c, hostStage->data(), 0, n, base);
      else
        dt::hostPack(*c, base, 0, n, hostStage->data());
    });
  };
  Status st = Status::ok();
  if (isPut) st = gpu ? engine(dev, false, local, 0, n, stage, stream) : hostSide(false);
  if (st.isOk()) {
    Op c;
    c.kind = isPut ? Op::PutRuns : Op::GetRuns;
    c.pe = pe;
    c.nbytes = table->size() / 2;
    c.runs = runs;
    if (isPut) {
      c.dest = remoteAddr;
      c.src = stage;
    } else {
      c.dest = stage;
      c.src = remoteAddr;
    }
    st = so.proxy(stream, h, c);
  }
  if (st.isOk() && !isPut) st = gpu ? engine(dev, true, local, 0, n, stage, stream) : hostSide(true);
  if (gpu) {
    const Status fr = dt::gpuScratchFree(dev, stream, scratch);
    return st.isOk() ? fr : st;
  }
  // The host stage and table live as long as the host calls holding them: one last call keeps them until the proxy
  // call (after the pack's host call has run and released its copy) is done.
  const Status kept = so.hostCall(stream, [hostStage, table] {});
  return st.isOk() ? kept : st;
}

}  // namespace

// Link terms for PE pe (see world.h), measured with reads only, into the GPU staging buffer: the probe is the up to
// 8 MiB of the peer's segment that end where the call's remote span ends (symmetric bytes of the target, mapped here
// since the span is). 16 non-blocking 8-byte gets and a quiet give runUs; the best of 3 gets of the probe gives
// ceGbs (its runUs taken off); engine packs of 64 KiB and of the whole probe, read from the peer's memory (best of
// 2 after a warm-up each), give kernelGbs (the difference of the two, so the launch does not count). Measured under
// mu_ (the caller holds it), once per PE unless a later call allows an 8x larger probe.
Status TypedRma::measureLink(int pe, const SegPath& p, const RemoteAddr& spanStart, char* spanGpu, int64_t span,
                             TypedLink* out) {
  const int64_t end = static_cast<int64_t>(spanStart.offset) + span;
  const int64_t bytes = std::min(end, kGpuFragment);
  auto it = links_.find(pe);
  if (it != links_.end() && (it->second.bytes >= kGpuFragment || bytes < 8 * it->second.bytes)) {
    *out = it->second;
    return Status::ok();
  }
  if (!gpuStage_) TETHER_TRY(w_.gpu()->allocDevice(static_cast<size_t>(kGpuFragment), &gpuStage_));
  char* stage = static_cast<char*>(gpuStage_);
  RemoteAddr probe = spanStart;  // the probe's first byte, in the route's addressing
  probe.offset = static_cast<uint64_t>(end - bytes);
  const int64_t back = static_cast<int64_t>(spanStart.offset) - (end - bytes);  // probe start is this far below
  if (probe.ptr) probe.ptr -= back;
  if (probe.gpuPtr) probe.gpuPtr -= back;
  char* probeGpu = spanGpu - back;
  using Clock = std::chrono::steady_clock;
  auto us = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  };
  const size_t small = static_cast<size_t>(std::min<int64_t>(bytes, 8));
  TETHER_TRY(p.ops->get(p.ctx, pe, stage, probe, small, false));  // warm-up
  const int k = 16;
  auto t0 = Clock::now();
  for (int i = 0; i < k; ++i) TETHER_TRY(p.ops->get(p.ctx, pe, stage, probe, small, true));
  TETHER_TRY(w_.quiet());
  auto t1 = Clock::now();
  double whole = 1e300;  // the best of 3 gets of the probe (the first moves it once more than needed: a warm-up)
  for (int i = 0; i < 3; ++i) {
    auto a = Clock::now();
    TETHER_TRY(p.ops->get(p.ctx, pe, stage, probe, static_cast<size_t>(bytes), false));
    whole = std::min(whole, us(a, Clock::now()));
  }
  TypedLink l;
  l.bytes = bytes;
  l.runUs = us(t0, t1) / k;
  l.ceGbs = static_cast<double>(bytes) / std::max(1e-3, whole - l.runUs) / 1e3;
  // The engine reading the probe from the peer, as a count of bytes (one dense run).
  tether_type_t byte = nullptr;
  if (tether_type_basic(TETHER_BASIC_BYTE, &byte) != TETHER_SUCCESS || tether_type_commit(byte) != TETHER_SUCCESS)
    TETHER_FAIL(TETHER_ERR_INTERNAL, "typed put/get: the link probe's byte type: %s", tether_type_last_error());
  Side side{"probe", byte, byte->canonical.get(), bytes, bytes};
  const Mem m{&side, probeGpu};
  const int dev = w_.gpu()->device();
  const int64_t part = std::min<int64_t>(bytes, 65536);
  double t[2] = {1e300, 1e300};  // best of 2 each, after a warm-up of each size (metadata, the calibration table)
  Status st = Status::ok();
  for (int i = 0; i < 6 && st.isOk(); ++i) {
    auto a = Clock::now();
    st = engine(dev, false, m, 0, i % 2 == 0 ? part : bytes, stage);
    if (st.isOk()) st = dt::gpuSync(dev, nullptr);
    if (i >= 2) t[i % 2] = std::min(t[i % 2], us(a, Clock::now()));
  }
  tether_type_free(&byte);
  TETHER_TRY(st);
  l.kernelGbs = bytes >= 4 * part ? static_cast<double>(bytes - part) / std::max(1e-3, t[1] - t[0]) / 1e3
                                  : static_cast<double>(bytes) / std::max(1e-3, t[1]) / 1e3;
  TETHER_LOG_DEBUG(LogSys::Core,
                   "typed put/get: link to PE %d (%" PRId64 " B probe): %.2f us per copy, copy %.1f GB/s, kernel %.1f GB/s",
                   pe, bytes, l.runUs, l.ceGbs, l.kernelGbs);
  links_[pe] = l;
  *out = l;
  return Status::ok();
}

Status TypedRma::route(const char* call, bool isPut, void* dest, tether_type_s* destType, int64_t destCount,
                       const void* src, tether_type_s* srcType, int64_t srcCount, int pe, const char** route) {
  if (!route) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: route is NULL", call);
  *route = "none";
  return transfer(call, isPut, dest, destType, destCount, const_cast<void*>(src), srcType, srcCount, pe, Mode::Route,
                  nullptr, route);
}

Status TypedRma::put(const char* call, void* dest, tether_type_s* destType, int64_t destCount, const void* src,
                     tether_type_s* srcType, int64_t srcCount, int pe, Mode mode, void* stream) {
  return transfer(call, true, dest, destType, destCount, const_cast<void*>(src), srcType, srcCount, pe, mode, stream);
}

Status TypedRma::get(const char* call, void* dest, tether_type_s* destType, int64_t destCount, const void* src,
                     tether_type_s* srcType, int64_t srcCount, int pe, Mode mode, void* stream) {
  return transfer(call, false, dest, destType, destCount, const_cast<void*>(src), srcType, srcCount, pe, mode, stream);
}

// Blocking and nbi forms complete on return; OnStream enqueues (typedOnStream below).
Status TypedRma::transfer(const char* call, bool isPut, void* dest, tether_type_s* destType, int64_t destCount,
                          void* src, tether_type_s* srcType, int64_t srcCount, int pe, Mode mode, void* stream,
                          const char** routeOut) {
  TETHER_TRY(w_.checkPe(call, pe));
  Side d, s;
  TETHER_TRY(checkSide(call, "dest", destType, destCount, &d));
  TETHER_TRY(checkSide(call, "src", srcType, srcCount, &s));
  if (d.bytes != s.bytes)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG,
                "%s: packed sizes differ: dest %" PRId64 " x dest_type (size %" PRId64 ") = %" PRId64
                " bytes, src %" PRId64 " x src_type (size %" PRId64 ") = %" PRId64 " bytes",
                call, d.count, d.c->size, d.bytes, s.count, s.c->size, s.bytes);
  const int64_t n = d.bytes;
  if (n == 0) return Status::ok();  // (a route query answers "none")
  const Side& remoteSide = isPut ? d : s;
  const Side& localSide = isPut ? s : d;
  void* remoteAddr = isPut ? dest : src;
  void* localBuf = isPut ? src : dest;
  if (!localBuf)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s is NULL (%" PRId64 " packed bytes %s PE %d)", call, localSide.name, n,
                isPut ? "to" : "from", pe);

  // The remote side's whole true extent must lie in one symmetric segment of this PE (as checkSymmetric checks a
  // contiguous range); a negative true lb reaches below remoteAddr.
  int64_t lo = 0, hi = 0;
  TETHER_TRY(trueSpan(call, remoteSide, &lo, &hi));
  const uintptr_t a = reinterpret_cast<uintptr_t>(remoteAddr);
  char what[160];
  std::snprintf(what, sizeof what, "%s (true extent of %" PRId64 " x %s_type: bytes [%" PRId64 ", %" PRId64 ") of %p)",
                remoteSide.name, remoteSide.count, remoteSide.name, lo, hi, remoteAddr);
  if ((lo < 0 && a < static_cast<uintptr_t>(-(lo + 1)) + 1) || (lo > 0 && a + static_cast<uintptr_t>(lo) < a))
    TETHER_FAIL(TETHER_ERR_NOT_SYMMETRIC, "%s: %s is outside the address space", call, what);
  int64_t span = 0;
  if (__builtin_sub_overflow(hi, lo, &span))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: %s: the span overflows int64", call, what);
  SymRef ref;
  TETHER_TRY(w_.checkSymmetric(call, what, at(remoteAddr, lo), static_cast<uint64_t>(span), &ref));

  // Route (see the file comment).
  const std::string routeMode = w_.config().str("TETHER_DT_RMA");
  if (routeMode != "auto" && routeMode != "direct" && routeMode != "staged")
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: TETHER_DT_RMA='%s': expected auto, direct or staged", call,
                routeMode.c_str());
  const SegPath& p = w_.path(pe, ref.kind);
  const RemoteAddr r = w_.remote(pe, ref);
  // The local buffer's memory kind, asked of its lowest touched byte, not of its origin: the origin may lie outside
  // the allocation (a positive true lb, or data only below the origin), where CUDA reports no memory at all and a GPU
  // buffer would be taken for pageable host memory.
  int64_t localLo = 0, localHi = 0;
  TETHER_TRY(trueSpan(call, localSide, &localLo, &localHi));
  const bool localOnGpu = w_.gpu() && w_.gpu()->isDeviceMemory(at(localBuf, localLo));
  const bool loadStore = p.ops && (p.ops->caps & kCapLoadStore);
  Route route = Route::Staged;
  char* remoteBase = nullptr;  // the remote side's buffer origin as addressed by the route (CPU or GPU address)
  if (routeMode != "staged" && loadStore) {
    if (isHostMemory(r.kind) && !localOnGpu && r.ptr) {
      route = Route::CpuDirect;
      remoteBase = at(r.ptr, -lo);
    } else if (w_.gpu() && (r.kind == SegKind::Device ? r.ptr : r.gpuPtr)) {
      route = Route::GpuDirect;
      remoteBase = at(r.kind == SegKind::Device ? r.ptr : r.gpuPtr, -lo);
    }
  }
  int64_t contigAt = 0;
  const bool oneContiguous =
      dt::hostContiguous(*d.c, d.count, &contigAt) || dt::hostContiguous(*s.c, s.count, &contigAt);
  if (route == Route::GpuDirect && routeMode == "auto" && localOnGpu && !oneContiguous && mode != Mode::OnStream) {
    // The cost model (file comment): both types' engine estimates and the link terms to this PE.
    const int dev = w_.gpu()->device();
    dt::GpuEstimate le, re;
    TETHER_TRY(dt::gpuEstimate(*localSide.c, &localSide.handle->gpu, localSide.count, dev, &le));
    TETHER_TRY(dt::gpuEstimate(*remoteSide.c, &remoteSide.handle->gpu, remoteSide.count, dev, &re));
    TypedLink link;
    {
      std::lock_guard<std::mutex> lock(mu_);
      TETHER_TRY(measureLink(pe, p, r, remoteBase + lo, hi - lo, &link));
    }
    const RouteCosts rc = typedRouteCosts(le.us, re.us, re.blocks, n, link);
    TETHER_LOG_DEBUG(LogSys::Core, "%s: cost model: direct %.1f us, staged %.1f us (%" PRId64 " remote blocks)", call,
                     rc.directUs, rc.stagedUs, re.blocks);
    if (rc.stagedUs < rc.directUs) route = Route::Staged;
  }
  TETHER_LOG_DEBUG(LogSys::Core, "%s: %" PRId64 " packed bytes %s PE %d, %s", call, n, isPut ? "to" : "from", pe,
                   kRouteNames[static_cast<int>(route)]);
  if (mode == Mode::Route) {
    *routeOut = kRouteNames[static_cast<int>(route)];
    return Status::ok();
  }

  const Mem local{&localSide, static_cast<char*>(localBuf)};
  const int dev = w_.gpu() ? w_.gpu()->device() : -1;

  if (mode == Mode::OnStream) {
    StreamOps* so = nullptr;
    TETHER_TRY(w_.streams().ops(&so).withContext(call));
    if (route == Route::CpuDirect) {
      // The host reference in a stream host call. The canonical forms are shared, so freeing the handles after the
      // call cannot pull them from under it.
      return so->hostCall(stream, [isPut, n, ls = localSide, lbase = local.base, rs = remoteSide, remoteBase,
                                   lc = localSide.handle->canonical, rc = remoteSide.handle->canonical]() mutable {
        ls.c = lc.get();
        rs.c = rc.get();
        const Mem lm{&ls, lbase}, rm{&rs, remoteBase};
        cpuCopy(isPut ? lm : rm, isPut ? rm : lm, n);
      });
    }
    if (route == Route::GpuDirect && so->gpuAddresses() && localOnGpu) {
      const Mem rem{&remoteSide, remoteBase};
      return typedOnGpuStream(dev, isPut ? local : rem, isPut ? rem : local, n, stream);
    }
    // (A GPU stream's proxy calls may reach a mapped peer by loads and stores in the kernel: their stage must be GPU
    // memory, so a host local buffer is refused there.)
    if (route == Route::Staged && (localOnGpu || !so->gpuAddresses())) {
      // Not capturable: the stage and the run table are taken now and given back once the stream passes them, which
      // every replay of a CUDA graph would repeat (a stage given back at the first replay is another transfer's by
      // the next one).
      bool captured = false;
      TETHER_TRY(so->capturing(stream, &captured).withContext(call));
      if (captured)
        TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: the staged route to PE %d on a stream being captured into a CUDA "
                    "graph: its stage is taken at the call and given back once the stream passes it, which every "
                    "replay would repeat; capture only direct routes (a load/store-reachable peer) or issue this "
                    "transfer outside the graph", call, pe);
      GpuStages::Stage* stage = nullptr;
      if (so->gpuAddresses())
        TETHER_TRY(streamStages_.acquire(*w_.gpu(), static_cast<size_t>(n), "a GPU stage for a stream-ordered staged "
                                         "transfer", &stage).withContext(call));
      Status st = stagedOnStream(w_, *so, call, isPut, pe, localSide, local.base, remoteSide, remoteAddr, n,
                                 stage ? stage->p : nullptr, stream);
      // Free again once the stream is past the transfer. (If enqueueing failed part-way, the stage stays busy: the
      // stream may still run what was enqueued.)
      if (stage && st.isOk()) st = so->hostCall(stream, [stage] { stage->release(); });
      return st;
    }
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED,
                "%s: no stream-ordered route to PE %d (%s route; a stream runs GPU kernels on GPU-addressable memory "
                "with a local buffer in GPU memory, or the host reference on host-mapped memory with a host local "
                "buffer): synchronise the stream and use the blocking form",
                call, pe, kRouteNames[static_cast<int>(route)]);
  }

  if (route == Route::CpuDirect) {
    const Mem rem{&remoteSide, remoteBase};
    cpuCopy(isPut ? local : rem, isPut ? rem : local, n);
    return Status::ok();
  }

  if (route == Route::GpuDirect) {
    const Mem rem{&remoteSide, remoteBase};
    const Mem& from = isPut ? local : rem;
    const Mem& to = isPut ? rem : local;
    int64_t off = 0;
    if (localOnGpu && dt::hostContiguous(*to.side->c, to.side->count, &off)) {
      TETHER_TRY(engine(dev, false, from, 0, n, at(to.base, off)));
      return dt::gpuSync(dev, nullptr);
    }
    if (localOnGpu && dt::hostContiguous(*from.side->c, from.side->count, &off)) {
      TETHER_TRY(engine(dev, true, to, 0, n, at(from.base, off)));
      return dt::gpuSync(dev, nullptr);
    }
    // Through the GPU staging buffer: both kernels on one stream keep the fragments in order.
    std::lock_guard<std::mutex> lock(mu_);
    if (!gpuStage_) TETHER_TRY(w_.gpu()->allocDevice(static_cast<size_t>(kGpuFragment), &gpuStage_));
    for (off = 0; off < n;) {
      const int64_t len = std::min(n - off, kGpuFragment);
      TETHER_TRY(engine(dev, false, from, off, len, gpuStage_));
      TETHER_TRY(engine(dev, true, to, off, len, gpuStage_));
      off += len;
    }
    return dt::gpuSync(dev, nullptr);
  }

  // Staged: a local staging buffer (GPU memory when the local buffer is GPU memory, so the engine can fill it) and
  // one ordinary contiguous put/get per memory run of the remote side's type.
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  std::vector<char> hostStage;
  char* stage = nullptr;
  int64_t frag = kHostFragment;
  if (localOnGpu) {
    lock.lock();
    if (!gpuStage_) TETHER_TRY(w_.gpu()->allocDevice(static_cast<size_t>(kGpuFragment), &gpuStage_));
    stage = static_cast<char*>(gpuStage_);
    frag = kGpuFragment;
  } else {
    hostStage.resize(static_cast<size_t>(std::min(n, kHostFragment)));
    stage = hostStage.data();
  }
  for (int64_t off = 0; off < n;) {
    const int64_t len = std::min(n - off, frag);
    if (isPut) {
      if (localOnGpu) {
        TETHER_TRY(engine(dev, false, local, off, len, stage));
        TETHER_TRY(dt::gpuSync(dev, nullptr));
      } else {
        dt::hostPack(*local.side->c, local.base, off, len, stage);
      }
    }
    // One non-blocking put/get per run, then one quiet: the runs' copies overlap (one synchronisation per fragment,
    // not per run), and the stage is not reused, unpacked or freed before they complete.
    int64_t pos = 0;  // packed bytes of this fragment moved so far
    Status walked = dt::hostWalk(*remoteSide.c, off, len, [&](int64_t disp, int64_t runBytes) -> Status {
      void* sym = at(remoteAddr, disp);
      const size_t nb = static_cast<size_t>(runBytes);
      Status st = isPut ? w_.put(call, sym, stage + pos, nb, pe, true) : w_.get(call, stage + pos, sym, nb, pe, true);
      pos += runBytes;
      return st;
    });
    const Status quieted = w_.quiet();  // also after a failed run: nothing may still read or write the stage
    TETHER_TRY(walked);
    TETHER_TRY(quieted);
    if (!isPut) {
      if (localOnGpu) {
        TETHER_TRY(engine(dev, true, local, off, len, stage));
        TETHER_TRY(dt::gpuSync(dev, nullptr));
      } else {
        dt::hostUnpack(*local.side->c, stage, off, len, local.base);
      }
    }
    off += len;
  }
  return Status::ok();
}

}  // namespace tether
