// CUDA implementation of gpu_pack.h: metadata upload, the thread and warp pack kernels, direct copies, the cost model.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "base/log.h"
#include "datatype/gpu_map.h"
#include "datatype/gpu_pack.h"

namespace tether::dt {

namespace {

// The pack as a pitched array of rows (copy2d) or planes of rows (copy3d), when it is one.
struct Pitched {
  bool ok = false;
  int64_t offset = 0, width = 0, rows = 0, pitch = 0, planes = 1, planePitch = 0;
};

// One kernel launch of the thread, warp or elem scheme, planned once per pack decision (planKernel): the kernel, its
// grid and its launch-shape arguments. The buffers and the fragment's bounds are supplied at launch (launchPlan).
struct Plan {
  const void* kernel = nullptr;  // the __global__ function's host address
  CUfunction fn = nullptr;       // its handle in the current context at planning (null: the runtime launches it)
  unsigned blocks = 0;           // of 256 threads
  bool elem = false;
  Shape sh{};                    // thread and warp schemes
  EDesc d{};                     // elem scheme, d.items set
  uint32_t t0 = 0, t1 = 0;       // elem scheme: the fragment's unit range
};

// Host tables + device allocation of one canonical form (gpu_map.h).
// The device copy is stream-ordered pool memory of the engine's setup stream (EngineStreams), released there after
// every recorded use: never by cudaFree, which waits for the whole device -- forever where a stream of this PE waits
// for something this thread has yet to do (tether_type_free with a stream wait pending). Launches reading it record
// their stream's use (noteUse) unless the stream is capturing: a CUDA graph that packs the type must not run after
// the type is freed.
class CudaMeta final : public GpuMeta {
 public:
  explicit CudaMeta(cudaStream_t setup) : setup_(setup) {}
  ~CudaMeta() override {
    for (const auto& u : uses_) {
      cudaStreamWaitEvent(setup_, u.second, 0);
      cudaEventDestroy(u.second);  // (its resources go once the recorded work is done)
    }
    if (dev_) cudaFreeAsync(dev_, setup_);
    if (elemTable) cudaFreeAsync(elemTable, setup_);
  }
  // After a launch on `stream` that reads the device copy: the release waits for it.
  cudaError_t noteUse(cudaStream_t stream) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream, &cs);
    if (e != cudaSuccess || cs != cudaStreamCaptureStatusNone) return e;
    std::lock_guard<std::mutex> lock(useMu_);
    auto it = std::find_if(uses_.begin(), uses_.end(), [stream](const auto& u) { return u.first == stream; });
    if (it == uses_.end()) {
      cudaEvent_t ev = nullptr;
      if ((e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)) != cudaSuccess) return e;
      uses_.emplace_back(stream, ev);
      it = uses_.end() - 1;
    }
    return cudaEventRecord(it->second, stream);
  }
  int device = -1;
  const Canonical* owner = nullptr;
  MapTables tables;
  DMeta meta{};      // device pointers (kernels)
  DMeta hostMeta{};  // host pointers (launch set-up)
  void* dev_ = nullptr;
  ElemForm elem;               // elem scheme (gpu_map.h); its table on the device:
  void* elemTable = nullptr;   // elem.offsets as int32_t (elemWide false) or int64_t
  bool elemWide = false;
  // The last pack's decision (guarded by the owning GpuCache's mutex): an exchange repeated with the same count,
  // fragment, access width and requested scheme skips the cost model and the applicability checks.
  struct Decision {
    int64_t count = -1, off = 0, len = 0;
    int width = 0;
    bool unpack = false, onStream = false;  // onStream: not the legacy default stream (batch needs one)
    Scheme asked = Scheme::Auto, chosen = Scheme::Auto;
    int64_t first = 0;  // the user-buffer displacement of packed byte off (its memory kind is asked there)
    Plan plan;      // chosen == Thread, Warp or Elem: the launch
    Pitched pitch;  // chosen == Copy2D or Copy3D: the rows
  } last;
  // gpuEstimate()'s last answer (whole packs of estimateCount instances; guarded like `last`).
  int64_t estimateCount = -1;
  GpuEstimate estimate;

 private:
  const cudaStream_t setup_;
  std::mutex useMu_;
  std::vector<std::pair<cudaStream_t, cudaEvent_t>> uses_;  // a stream that read the copy, its last read (useMu_)
};

Status cudaFail(cudaError_t e, const char* what) {
  return Status(TETHER_ERR_CUDA, std::string("datatype GPU engine: ") + what + ": " + cudaGetErrorString(e));
}
#define DT_CUDA(x, what)                   \
  do {                                     \
    cudaError_t e_ = (x);                  \
    if (e_ != cudaSuccess) return cudaFail(e_, what); \
  } while (0)

// The streams the engine's own work runs on, one pair per GPU ordinal for the process (like the CUDA runtime's own
// per-device state), non-blocking, never destroyed: `setup` carries metadata allocations, uploads and releases
// (CudaMeta), `calib` the calibration's launches (measure). Made by gpuPreload at tether_init, before any work of
// the program can be waiting, else at first need -- not per use: a type's first pack may come while a stream of
// this PE waits, and only stream-ordered work (no stream made, no synchronising call) is safe then.
struct EngineStreams {
  cudaStream_t setup = nullptr, calib = nullptr;
};
Status engineStreams(int dev, EngineStreams* out) {
  static std::mutex mu;
  static std::map<int, EngineStreams> byDevice;
  std::lock_guard<std::mutex> lock(mu);
  EngineStreams& s = byDevice[dev];
  for (cudaStream_t* p : {&s.setup, &s.calib})
    if (!*p) DT_CUDA(cudaStreamCreateWithFlags(p, cudaStreamNonBlocking), "the engine's streams");
  *out = s;
  return Status::ok();
}

// Host -> device uploads of metadata on the setup stream, complete when finish() returns. Not cudaMemcpy: from
// pageable memory it returns once the bytes are staged, before the DMA lands, and the kernels run on streams that
// do not wait for the legacy stream (a first pack of a type with a large table read it half-written on an H200,
// gpu_datatype seed 89, 2026-11-26).
class Uploader {
 public:
  explicit Uploader(cudaStream_t st) : st_(st) {}
  cudaError_t copy(void* dst, const void* src, size_t n) {
    return cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, st_);
  }
  cudaError_t finish() { return cudaStreamSynchronize(st_); }

 private:
  cudaStream_t st_;
};

Status buildMeta(const Canonical& c, int device, std::shared_ptr<CudaMeta>* out) {
  EngineStreams es;
  TETHER_TRY(engineStreams(device, &es));
  auto m = std::make_shared<CudaMeta>(es.setup);
  Uploader up(es.setup);
  m->device = device;
  m->owner = &c;
  m->tables = buildTables(c);
  const MapTables& t = m->tables;
  // One allocation: segments, pieces, flat offsets, flat packed starts (each 8-byte aligned).
  const size_t segBytes = t.segs.size() * sizeof(DSeg), pieceBytes = t.pieces.size() * sizeof(DPiece),
               flatBytes = t.flatOff.size() * sizeof(int64_t);
  DT_CUDA(cudaMallocAsync(&m->dev_, std::max<size_t>(segBytes + pieceBytes + 2 * flatBytes, 16), es.setup),
          "metadata allocation");
  char* const d = static_cast<char*>(m->dev_);
  const std::pair<const void*, size_t> parts[] = {{t.segs.data(), segBytes}, {t.pieces.data(), pieceBytes},
                                                  {t.flatOff.data(), flatBytes}, {t.flatPacked.data(), flatBytes}};
  size_t at = 0;
  for (const auto& part : parts) {
    if (part.second) DT_CUDA(up.copy(d + at, part.first, part.second), "metadata upload");
    at += part.second;
  }
  m->meta = metaOf(c, t, reinterpret_cast<const DSeg*>(d), reinterpret_cast<const DPiece*>(d + segBytes),
                   reinterpret_cast<const int64_t*>(d + segBytes + pieceBytes),
                   reinterpret_cast<const int64_t*>(d + segBytes + pieceBytes + flatBytes));
  m->hostMeta = metaOf(c, t, t.segs.data(), t.pieces.data(), t.flatOff.data(), t.flatPacked.data());
  m->elem = elemForm(c);
  if (m->elem.ok && m->elem.table) {
    const std::vector<int64_t>& o = m->elem.offsets;
    const auto [lo, hi] = std::minmax_element(o.begin(), o.end());
    m->elemWide = *lo < INT32_MIN || *hi > INT32_MAX;
    auto upload = [&](const auto& v) -> Status {
      const size_t bytes = v.size() * sizeof(v[0]);
      DT_CUDA(cudaMallocAsync(&m->elemTable, bytes, es.setup), "metadata allocation");
      DT_CUDA(up.copy(m->elemTable, v.data(), bytes), "metadata upload");
      DT_CUDA(up.finish(), "metadata upload");  // before v (a temporary for 32-bit offsets) goes
      return Status::ok();
    };
    TETHER_TRY(m->elemWide ? upload(o) : upload(std::vector<int32_t>(o.begin(), o.end())));
    // The device copy is what the kernels use; tiny tables stay for descriptors that carry them inline.
    if (m->elem.entries > kElemInline) std::vector<int64_t>().swap(m->elem.offsets);
  }
  DT_CUDA(up.finish(), "metadata upload");
  *out = std::move(m);
  return Status::ok();
}

// The handle's metadata for GPU dev, built (and cached on the handle) on first use or when the type or GPU changed.
// With `last` non-null, also the handle's last pack decision, read under the same lock.
Status metaFor(const Canonical& c, int dev, GpuCache* cache, std::shared_ptr<CudaMeta>* out,
               CudaMeta::Decision* last = nullptr) {
  std::lock_guard<std::mutex> lock(cache->mu);
  auto meta = std::static_pointer_cast<CudaMeta>(cache->meta);
  if (!meta || meta->device != dev || meta->owner != &c) {
    TETHER_TRY(buildMeta(c, dev, &meta));
    cache->meta = meta;
  }
  if (last) *last = meta->last;
  *out = std::move(meta);
  return Status::ok();
}

// ---- kernels -----------------------------------------------------------------------------------------------------------
// Thread scheme (gpu_map.h Cursor/ownerLane): per round, the lanes' clipped blocks are scanned into exclusive prefix
// sums; lane l then moves units l, l + 32, ... of the round's packed range, kUnroll units loaded before any is stored.
// R holds round offsets: int32_t when a round (32 blocks) cannot reach 2 GiB, halving the search's shuffles.
constexpr int kUnroll = 4;
template <typename U, bool Unpack, typename R>
__global__ void __launch_bounds__(256) packThread(DMeta m, Shape sh, char* __restrict__ user,
                                                  char* __restrict__ packed, int64_t off, int64_t end) {
  constexpr unsigned kAll = 0xffffffffu;
  constexpr int64_t w = sizeof(U);
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  Cursor c;
  cursorStart(m, sh, warp, lane, c);
  for (int r = 0; r < sh.K && roundFirst(sh, warp, r) < sh.last; ++r) {
    int64_t u, pk, len;
    cursorBlock(m, c, off, end, &u, &pk, &len);
    R incl = static_cast<R>(len);
    for (int d = 1; d < 32; d <<= 1) {
      const R x = __shfl_up_sync(kAll, incl, d);
      if (lane >= d) incl += x;
    }
    const R excl = incl - static_cast<R>(len);
    const int64_t total = __shfl_sync(kAll, incl, 31), base = u - excl;  // unit q of block l: user + base_l + q
    char* const out = packed + (__shfl_sync(kAll, pk, 0) - off);  // the round's first packed byte
    for (int64_t q0 = 0; q0 < total; q0 += 32 * w * kUnroll) {
      U v[kUnroll];
      int64_t at[kUnroll];
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        const int64_t q = q0 + (lane + 32 * k) * w;
        const int o = ownerLane([&](int l) { return static_cast<int64_t>(__shfl_sync(kAll, excl, l)); }, q);
        at[k] = __shfl_sync(kAll, base, o) + q;
        if (q < total) v[k] = Unpack ? *reinterpret_cast<const U*>(out + q) : *reinterpret_cast<const U*>(user + at[k]);
      }
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        const int64_t q = q0 + (lane + 32 * k) * w;
        if (q < total) {
          if (Unpack) *reinterpret_cast<U*>(user + at[k]) = v[k];
          else *reinterpret_cast<U*>(out + q) = v[k];
        }
      }
    }
    cursorNext(m, sh, c);
  }
}

// Warp scheme: gpu_map.h warpItems per warp; lane l moves units l, l+32, ... of each chunk (all loads, then stores).
template <typename U, bool Unpack>
__global__ void __launch_bounds__(256) packWarp(DMeta m, Shape sh, char* __restrict__ user,
                                                char* __restrict__ packed, int64_t off, int64_t end) {
  constexpr int kUnits = chunkUnits(sizeof(U));
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  warpItems(m, sh, warp, off, end, [&](int64_t u, int64_t pk, int64_t lo, int64_t hi) {
    char* const src = Unpack ? packed + (lo - off) : user + u + (lo - pk);
    char* const dst = Unpack ? user + u + (lo - pk) : packed + (lo - off);
    const int64_t n = hi - lo;
    U v[kUnits];
#pragma unroll
    for (int k = 0; k < kUnits; ++k) {
      const int64_t at = (lane + 32 * k) * static_cast<int64_t>(sizeof(U));
      if (at < n) v[k] = *reinterpret_cast<const U*>(src + at);
    }
#pragma unroll
    for (int k = 0; k < kUnits; ++k) {
      const int64_t at = (lane + 32 * k) * static_cast<int64_t>(sizeof(U));
      if (at < n) *reinterpret_cast<U*>(dst + at) = v[k];
    }
  });
}

// Elem scheme: gpu_map.h elemUser per unit, Items units per thread (loads first, then stores), 256-unit strides
// between them so each load and store instruction of a warp covers consecutive packed units.
constexpr int kElemItems = 4;
// UserOrder (whole unpacks with d.userOrder): units are visited in the user buffer's order, the packed unit computed.
// The pointers and bounds come before the descriptor in the parameter space (see EDesc's layout).
template <typename U, bool Unpack, typename T, bool UserOrder = false, bool Inline = false, int Items = kElemItems>
__global__ void __launch_bounds__(256) packElem(char* __restrict__ user, char* __restrict__ packed, uint32_t t0,
                                                uint32_t t1, EDesc d) {
  const uint32_t first = t0 + blockIdx.x * (256u * Items) + threadIdx.x;
  U v[Items];
  int64_t at[Items];
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const uint32_t t = first + 256u * k;
    if (t < t1) {
      int64_t pu = t;
      at[k] = elemUser<T, UserOrder, Inline>(d, t, &pu);
      v[k] = Unpack ? reinterpret_cast<const U*>(packed)[pu - t0] : *reinterpret_cast<const U*>(user + at[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const uint32_t t = first + 256u * k;
    if (t < t1) {
      if (Unpack) *reinterpret_cast<U*>(user + at[k]) = v[k];
      else reinterpret_cast<U*>(packed)[t - t0] = v[k];
    }
  }
}

// Elem unpack of 8-byte units in 16-byte pairs (gpu_map.h elemPair: thread q's units in range, and whether they are
// one aligned 16-byte store). Loads before stores, as packElem. T: the table's entry type (table form).
template <typename T>
__global__ void __launch_bounds__(256) unpackElemPair(char* __restrict__ user, char* __restrict__ packed, uint32_t t0,
                                                      uint32_t t1, EDesc d) {
  const PairUnits p = elemPair<T>(d, reinterpret_cast<uint64_t>(user), t0, t1, blockIdx.x * 256u + threadIdx.x);
  const uint2* src = reinterpret_cast<const uint2*>(packed);
  uint2 v0{}, v1{};
  if (p.has[0]) v0 = src[p.unit[0] - t0];
  if (p.has[1]) v1 = src[p.unit[1] - t0];
  if (p.wide) {
    *reinterpret_cast<uint4*>(user + p.at[0]) = make_uint4(v0.x, v0.y, v1.x, v1.y);
    return;
  }
  if (p.has[0]) *reinterpret_cast<uint2*>(user + p.at[0]) = v0;
  if (p.has[1]) *reinterpret_cast<uint2*>(user + p.at[1]) = v1;
}

// ---- launching --------------------------------------------------------------------------------------------------------
int pow2Width(int64_t w, uint64_t x) {  // largest power of two <= w dividing x (x == 0 divides everything)
  int r = 1;
  while (r * 2 <= w && (x % static_cast<uint64_t>(r * 2)) == 0) r *= 2;
  return r;
}

// What planKernel needs of a pack: its metadata, the fragment [off, end) of the packed bytes, the direction and, for
// the elem scheme, the instance count and (when the caller has made it) the descriptor for this width.
struct Launch {
  const CudaMeta* m;
  int64_t off, end;
  bool unpack;
  int64_t count;
  const EDesc* elem = nullptr;
};

// Units per thread of the plain elem variants: gpu_map.h elemItems() (the launch shape), unless TETHER_DT_ELEM_ITEMS=1,
// 2 or 4 forces it (read once; a tuning knob for measurements, not an interface). 0: no force.
int forcedElemItems() {
  static const int items = [] {
    const char* e = std::getenv("TETHER_DT_ELEM_ITEMS");
    const int v = e ? std::atoi(e) : 0;
    return v == 1 || v == 2 || v == 4 ? v : 0;
  }();
  return items;
}
// TETHER_DT_ELEM_PAIR (read once): 1 pairs every plain elem unpack of 8-byte units (the table form too), 0 none;
// unset, gpu_map.h elemPairs() decides. A measuring and testing knob, not an interface. -1: not forced.
int forcedElemPair() {
  static const int v = [] {
    const char* e = std::getenv("TETHER_DT_ELEM_PAIR");
    return e && (e[0] == '0' || e[0] == '1') && !e[1] ? e[0] - '0' : -1;
  }();
  return v;
}
// Sets d->items for a pack of m's form in direction `unpack` (the inlined and userOrder variants keep their 4).
void setElemItems(const CudaMeta& m, bool unpack, EDesc* d) {
  if (d->inlined || d->userOrder) return;
  const int forced = forcedElemItems();
  const int64_t blocks = m.tables.blocksPerInst;
  d->items = forced ? forced
                    : elemItems(m.elem, blocks ? static_cast<double>(m.owner->size) / static_cast<double>(blocks) : 1.0,
                                d->unit, unpack);
}
// The kernel variants, chosen at run time. The launches and preloadWidth() both take them from here, so every kernel a
// launch can pick is one the preload loads.
// The plain elem kernel (no inline table, pack order) for 32- or 64-bit table entries, either direction.
template <typename U, int Items>
auto plainElem(bool wide, bool unpack) {
  if (wide)
    return unpack ? packElem<U, true, int64_t, false, false, Items> : packElem<U, false, int64_t, false, false, Items>;
  return unpack ? packElem<U, true, int32_t, false, false, Items> : packElem<U, false, int32_t, false, false, Items>;
}
// The elem kernel of a descriptor's variant: inline table, user order (whole unpacks of the strided form only, so
// always the unpack kernel), or plain with `items` units per thread (1, 2, else 4).
template <typename U>
auto elemKernel(bool inlined, bool userOrder, int items, bool wide, bool unpack) {
  return inlined ? (unpack ? packElem<U, true, int32_t, false, true> : packElem<U, false, int32_t, false, true>)
         : userOrder ? packElem<U, true, int32_t, true>
         : items == 1 ? plainElem<U, 1>(wide, unpack)
         : items == 2 ? plainElem<U, 2>(wide, unpack)
                      : plainElem<U, kElemItems>(wide, unpack);
}
// The paired unpack kernel for 32- or 64-bit table entries (the entry type is unused by the strided form).
auto pairKernel(bool wide) {
  return wide ? unpackElemPair<int64_t> : unpackElemPair<int32_t>;
}
// The thread kernel with 64-bit round offsets (wide) or 32-bit ones.
template <typename U>
auto threadKernel(bool wide, bool unpack) {
  return wide ? (unpack ? packThread<U, true, int64_t> : packThread<U, false, int64_t>)
              : (unpack ? packThread<U, true, int32_t> : packThread<U, false, int32_t>);
}
template <typename U>
auto warpKernel(bool unpack) {
  return unpack ? packWarp<U, true> : packWarp<U, false>;
}

template <typename U>
cudaError_t planWidth(const Launch& L, Scheme s, int sms, Plan* p) {
  const DMeta& hm = L.m->hostMeta;
  if (s == Scheme::Elem) {
    EDesc& d = p->d;
    if (L.elem) {
      d = *L.elem;
    } else {
      if (!elemDesc(L.m->elem, *L.m->owner, L.count, static_cast<int>(sizeof(U)), L.m->elemTable, &d))
        return cudaErrorInvalidValue;  // callers check applicable() first
      setElemItems(*L.m, L.unpack, &d);
    }
    p->elem = true;
    p->t0 = static_cast<uint32_t>(L.off / static_cast<int64_t>(sizeof(U)));
    p->t1 = static_cast<uint32_t>(L.end / static_cast<int64_t>(sizeof(U)));
    if constexpr (sizeof(U) == 8) {
      const int forced = forcedElemPair();
      const bool pairs = forced < 0 ? elemPairs(L.m->elem, d, L.end - L.off) : forced == 1;
      if (L.unpack && !d.inlined && !d.userOrder && pairs) {
        p->blocks = (elemPairThreads(p->t0, p->t1) + 255) / 256;
        p->kernel = reinterpret_cast<const void*>(pairKernel(L.m->elemWide));
        return cudaSuccess;
      }
    }
    const unsigned per = 256u * static_cast<unsigned>(d.items);  // 4 for the inlined and userOrder variants
    p->blocks = (p->t1 - p->t0 + per - 1) / per;
    p->kernel = reinterpret_cast<const void*>(elemKernel<U>(d.inlined, d.userOrder, d.items, L.m->elemWide, L.unpack));
    return cudaSuccess;
  }
  p->sh = s == Scheme::Thread ? shapeThread(hm, L.off, L.end, sms)
                              : shapeWarp(hm, L.off, L.end, sms, static_cast<int>(sizeof(U)));
  p->blocks = static_cast<unsigned>((p->sh.warps * 32 + 255) / 256);
  p->kernel = s == Scheme::Thread
                  ? reinterpret_cast<const void*>(threadKernel<U>(hm.maxBlock >= (int64_t{1} << 26), L.unpack))
                  : reinterpret_cast<const void*>(warpKernel<U>(L.unpack));  // thread: 32 blocks may reach 2 GiB
  return cudaSuccess;
}

// The driver entry point `name` (CUDA 12.0 ABI), resolved through the runtime (no libcuda link); null if missing.
void* driverEntry(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    p = nullptr;
  }
  return p;
}

// Plans the launch of L's pack at access width `width` (16, 8, 4, 2 or 1 bytes); p->fn is resolved here, in the
// current context.
cudaError_t planKernel(const Launch& L, Scheme s, int width, int sms, Plan* p) {
  *p = Plan{};
  cudaError_t e;
  switch (width) {
    case 16: e = planWidth<uint4>(L, s, sms, p); break;
    case 8: e = planWidth<uint2>(L, s, sms, p); break;
    case 4: e = planWidth<uint32_t>(L, s, sms, p); break;
    case 2: e = planWidth<uint16_t>(L, s, sms, p); break;
    default: e = planWidth<uint8_t>(L, s, sms, p); break;
  }
  if (e != cudaSuccess) return e;
  cudaFunction_t f = nullptr;
  if (cudaGetFuncBySymbol(&f, p->kernel) == cudaSuccess) {
    p->fn = f;
  } else {
    cudaGetLastError();  // the runtime launch will name the problem
  }
  return cudaSuccess;
}

// Starts a planned kernel on `stream` over packed bytes [off, end) (packed points at byte off). Through the driver's
// cuLaunchKernel: on an H200's host it took 3.4-3.6 us per launch against 4.0-4.2 us for the runtime's <<<>>> of the
// same kernel (tether_probe_dt_host, 2026-11-26), and small packs are launch-bound. Without the entry point or the
// function handle, or when the driver refuses, the runtime's cudaLaunchKernel launches it and names any error.
cudaError_t launchPlan(const Plan& p, const CudaMeta& m, char* user, char* packed, int64_t off, int64_t end,
                       cudaStream_t stream) {
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void**, void**);
  static const auto drv = reinterpret_cast<LaunchFn>(driverEntry("cuLaunchKernel"));
  // The kernels' parameters, in order and of their exact types: packElem(user, packed, t0, t1, d);
  // packThread / packWarp(meta, sh, user, packed, off, end).
  DMeta meta = m.meta;
  Shape sh = p.sh;
  EDesc d = p.d;
  uint32_t t0 = p.t0, t1 = p.t1;
  void* elemArgs[] = {&user, &packed, &t0, &t1, &d};
  void* blockArgs[] = {&meta, &sh, &user, &packed, &off, &end};
  void** args = p.elem ? elemArgs : blockArgs;
  if (drv && p.fn && drv(p.fn, p.blocks, 1, 1, 256, 1, 1, 0, stream, args, nullptr) == CUDA_SUCCESS)
    return cudaSuccess;
  return cudaLaunchKernel(p.kernel, dim3(p.blocks), dim3(256), args, 0, stream);
}

// Whether a planned launch reads the metadata's device copy (so its release must wait for it: CudaMeta::noteUse,
// ~0.3 us of host time per call on an H100, 2026-12-07). The thread and warp kernels read it; the elem kernel takes
// its descriptor by value and reads device memory only through the table of the table form, unless the entries are
// inlined in the descriptor.
bool readsDeviceMeta(const Plan& p) { return !p.elem || (p.d.tabled && !p.d.inlined); }

Pitched pitched(const Canonical& c, int64_t count, bool want3d) {
  Pitched r;
  if (c.segments.size() != 1 || c.segments[0].numPieces != 1) return r;
  const Segment& s = c.segments[0];
  const Piece& p = c.pieces[static_cast<size_t>(s.firstPiece)];
  // Dimensions as (count, stride) pairs from fastest: the piece's, then the segment repetition, then the instances,
  // folded where one continues the next (gpu_map.h foldDims).
  std::vector<int64_t> d;
  for (int k = 0; k < p.nd; ++k) d.push_back(p.count[k]), d.push_back(p.stride[k]);
  d.push_back(s.repeat), d.push_back(s.stride);
  d.push_back(count), d.push_back(c.extent);
  foldDims(d);
  r.offset = p.offset;
  r.width = p.block;
  if (!want3d && d.empty()) {  // one contiguous block: a single row
    r.rows = 1;
    r.pitch = p.block;
    r.ok = true;
  } else if (!want3d && d.size() == 2 && d[1] >= p.block) {
    r.rows = d[0];
    r.pitch = d[1];
    r.ok = true;
  } else if (want3d && d.size() == 4 && d[1] >= p.block && d[3] > 0 && d[3] % d[1] == 0 && d[3] >= d[0] * d[1]) {
    r.rows = d[0];
    r.pitch = d[1];
    r.planes = d[2];
    r.planePitch = d[3];
    r.ok = true;
  }
  return r;
}

// pt: pitched(c, count, s == Scheme::Copy3D), ok (computed once per decision: it allocates).
cudaError_t launchCopy(const Pitched& pt, Scheme s, char* user, char* packed, bool unpack, cudaStream_t stream) {
  char* u = user + pt.offset;
  if (s == Scheme::Copy2D) {
    const size_t w = static_cast<size_t>(pt.width), h = static_cast<size_t>(pt.rows),
                 pitch = static_cast<size_t>(pt.pitch);
    return unpack ? cudaMemcpy2DAsync(u, pitch, packed, w, w, h, cudaMemcpyDefault, stream)
                  : cudaMemcpy2DAsync(packed, w, u, pitch, w, h, cudaMemcpyDefault, stream);
  }
  cudaMemcpy3DParms prm = {};
  const cudaPitchedPtr up = make_cudaPitchedPtr(u, static_cast<size_t>(pt.pitch), static_cast<size_t>(pt.width),
                                                static_cast<size_t>(pt.planePitch / pt.pitch));
  const cudaPitchedPtr pp = make_cudaPitchedPtr(packed, static_cast<size_t>(pt.width), static_cast<size_t>(pt.width),
                                                static_cast<size_t>(pt.rows));
  prm.srcPtr = unpack ? pp : up;
  prm.dstPtr = unpack ? up : pp;
  prm.extent = make_cudaExtent(static_cast<size_t>(pt.width), static_cast<size_t>(pt.rows),
                               static_cast<size_t>(pt.planes));
  prm.kind = cudaMemcpyDefault;
  return cudaMemcpy3DAsync(&prm, stream);
}

// Batch scheme: the fragment's memory runs as one cudaMemcpyBatchAsync (copy engines). The list is built on the host
// per call (batchList, gpu_map.h), reusing this thread's arrays; sources are read in stream order.
constexpr size_t kBatchMaxRuns = 4096;
cudaError_t launchBatch(const Canonical& c, char* user, char* packed, int64_t off, int64_t len, bool unpack,
                        cudaStream_t stream) {
  if (!stream || stream == cudaStreamLegacy) return cudaErrorInvalidValue;  // refused by the API (checked earlier)
  thread_local BatchList list;
  if (!batchList(c, user, packed, off, len, unpack, kBatchMaxRuns, &list)) return cudaErrorInvalidValue;
  if (list.size.empty()) return cudaSuccess;
  cudaMemcpyAttributes attr = {};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t first = 0;
  return cudaMemcpyBatchAsync(list.dst.data(), list.src.data(), list.size.data(), list.size.size(), &attr, &first, 1,
                              stream);
}

// Runs of a fragment are at most (instances it touches) x (blocks per instance): the batch scheme's bound, without
// walking the fragment.
bool batchFits(const Canonical& c, int64_t off, int64_t len) {
  if (c.size == 0 || len == 0) return true;
  const int64_t limit = static_cast<int64_t>(kBatchMaxRuns);
  const int64_t instances = (off % c.size + len + c.size - 1) / c.size;
  if (instances > limit) return false;
  int64_t blocks = 0;  // per instance
  for (const Segment& g : c.segments) {
    int64_t e = 0;
    for (int64_t i = g.firstPiece; i < g.firstPiece + g.numPieces; ++i)
      e += c.pieces[static_cast<size_t>(i)].elements();
    if (e > limit || g.repeat > limit || (blocks += e * g.repeat) > limit) return false;
  }
  return blocks * instances <= limit;
}

// ---- cost model ---------------------------------------------------------------------------------------------------------
// Calibration table: per scheme, bandwidth (GB/s of packed bytes) at mean block sizes 2^k bytes, and launch cost.
constexpr int kSizes = 15;  // 4 B .. 64 KiB
constexpr int kSchemes = static_cast<int>(Scheme::Batch) + 1;  // indexed by Scheme (auto and host unused)
constexpr int kTableVersion = 4;  // 2: elem scheme added; 3: elem at its launch-shape rule (elemItems); 4: batch
struct Table {
  double launchUs[kSchemes] = {};
  double gbs[kSchemes][kSizes] = {};
  bool have = false;
};
int64_t sizeAt(int i) { return int64_t{4} << i; }

double interp(const double* t, double block) {
  const double x = std::log2(std::max(4.0, block)) - 2.0;
  const int i = std::min(kSizes - 2, static_cast<int>(x));
  const double f = std::min(1.0, x - i);
  const double a = std::log(std::max(t[i], 1e-3)), b = std::log(std::max(t[i + 1], 1e-3));
  return std::exp(a + (b - a) * f);
}

// The process keeps one table per GPU ordinal. Guarded by its mutex; measured at most once per GPU per process.
struct Calibrations {
  std::mutex mu;
  std::map<int, Table> byDevice;
};
Calibrations& calibrations() {
  static Calibrations c;  // a cache of per-device measurements, like the CUDA runtime's own per-device state
  return c;
}

std::string calibrationPath(int device) {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "";
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x%02x%02x%02x%02x", static_cast<unsigned char>(prop.uuid.bytes[0]),
                static_cast<unsigned char>(prop.uuid.bytes[1]), static_cast<unsigned char>(prop.uuid.bytes[2]),
                static_cast<unsigned char>(prop.uuid.bytes[3]), static_cast<unsigned char>(prop.uuid.bytes[4]),
                static_cast<unsigned char>(prop.uuid.bytes[5]), static_cast<unsigned char>(prop.uuid.bytes[6]),
                static_cast<unsigned char>(prop.uuid.bytes[7]));
  if (const char* p = std::getenv("TETHER_DT_CALIBRATION")) return std::string(p) + "/dt-" + uuid + ".txt";
  std::string dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) dir = x;
  else if (const char* h = std::getenv("HOME")) dir = std::string(h) + "/.cache";
  else return "";
  return dir + "/tether/dt-" + uuid + ".txt";
}

bool loadTable(const std::string& path, Table* t) {
  std::ifstream f(path);
  if (!f) return false;
  std::string tag;
  int version = 0;
  if (!(f >> tag >> version) || tag != "tether-dt-calibration" || version != kTableVersion) return false;
  for (int s = 0; s < kSchemes; ++s) {
    f >> t->launchUs[s];
    for (int i = 0; i < kSizes; ++i) f >> t->gbs[s][i];
  }
  t->have = static_cast<bool>(f);
  return t->have;
}
void saveTable(const std::string& path, const Table& t) {
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos) {
    const std::string dir = path.substr(0, slash);
    mkdir(dir.substr(0, dir.rfind('/')).c_str(), 0755);
    mkdir(dir.c_str(), 0755);
  }
  std::ofstream f(path + ".tmp");
  f << "tether-dt-calibration " << kTableVersion << "\n";
  for (int s = 0; s < kSchemes; ++s) {
    f << t.launchUs[s];
    for (int i = 0; i < kSizes; ++i) f << ' ' << t.gbs[s][i];
    f << '\n';
  }
  f.close();
  if (f) std::rename((path + ".tmp").c_str(), path.c_str());
}

Status measure(Table* t, std::string* summary);

Status tableFor(int device, bool force, Table* out, std::string* summary) {
  Calibrations& cal = calibrations();
  std::lock_guard<std::mutex> lock(cal.mu);
  Table& t = cal.byDevice[device];
  if (!force && t.have) {
    *out = t;
    return Status::ok();
  }
  const std::string path = calibrationPath(device);
  if (!force && !path.empty() && loadTable(path, &t)) {
    TETHER_LOG_INFO(LogSys::Core, "datatype cost model: loaded %s", path.c_str());
    *out = t;
    return Status::ok();
  }
  TETHER_TRY(measure(&t, summary));
  if (!path.empty()) saveTable(path, t);
  *out = t;
  return Status::ok();
}

double estimateUs(const Table& t, Scheme s, int64_t bytes, double meanBlock) {
  const int i = static_cast<int>(s);
  return t.launchUs[i] + static_cast<double>(bytes) / (interp(t.gbs[i], meanBlock) * 1e3);
}

// elem: the form (elemForm) when known; unit: the access width of the launch.
bool applicable(const Canonical& c, int64_t count, Scheme s, int64_t off, int64_t len, const ElemForm* elem,
                int unit) {
  const bool whole = off == 0 && len == count * c.size;
  EDesc d;
  switch (s) {
    case Scheme::Thread:
    case Scheme::Warp: return true;
    case Scheme::Elem: return elem && elemDesc(*elem, c, count, unit, nullptr, &d);
    case Scheme::Copy2D: return whole && pitched(c, count, false).ok;
    case Scheme::Copy3D: return whole && pitched(c, count, true).ok;
    case Scheme::Batch: return batchFits(c, off, len);
    default: return false;
  }
}

// meanBlock: packed bytes per contiguous block (size / blocks per instance; the metadata tables have the count).
// The elem scheme's table form also reads one table entry (tableEntry bytes) per item: its time grows by that share.
// onStream: the pack runs on a stream other than the legacy default stream (batch needs one). *us (may be null): the
// chosen scheme's estimate.
Scheme choose(const Table& t, const Canonical& c, double meanBlock, int64_t count, int64_t off, int64_t len,
              const ElemForm& elem, int tableEntry, int unit, bool onStream, double* estimate = nullptr) {
  const double mean = meanBlock > 0 ? meanBlock : 1.0;
  Scheme best = Scheme::Thread;
  double bestUs = 1e300;
  // The thread scheme's calibration (a regular vector) overstates it on irregular layouts, where each round searches
  // its metadata: measured on an H200 it ran 3.5-5x slower than the elem table form on LAMMPS and SPECFEM3D layouts
  // (bench/results/h200). So where the table form applies, the model weighs elem against warp and the copies only.
  const bool elemOk = applicable(c, count, Scheme::Elem, off, len, &elem, unit);
  for (Scheme s : {Scheme::Thread, Scheme::Warp, Scheme::Copy2D, Scheme::Copy3D, Scheme::Elem, Scheme::Batch}) {
    if (s == Scheme::Thread && elemOk && elem.table) continue;
    if (s == Scheme::Batch && (!onStream || t.gbs[static_cast<int>(s)][0] <= 0)) continue;
    if (s == Scheme::Elem ? !elemOk : !applicable(c, count, s, off, len, &elem, unit)) continue;
    double us = estimateUs(t, s, len, mean);
    if (s == Scheme::Elem && elem.table) us *= 1.0 + static_cast<double>(tableEntry) / static_cast<double>(elem.item);
    if (us < bestUs) bestUs = us, best = s;
  }
  if (estimate) *estimate = bestUs;
  return best;
}

// Synthetic calibration: a vector of nblocks blocks of B bytes at stride 2B (16-byte aligned), packed once to warm up
// and then timed (best of 3) for each scheme; launch cost from a 64-byte pack.
Status measure(Table* t, std::string* summary) {
  const int64_t packedBytes = int64_t{64} << 20;
  int dev = 0, sms = 0;
  DT_CUDA(cudaGetDevice(&dev), "calibration");
  // Stream-ordered buffers on the engine's calibration stream: a calibration may run while a stream of this PE waits
  // (a type's first pack), where cudaMalloc/cudaFree's synchronisation could wait for that wait.
  EngineStreams es;
  TETHER_TRY(engineStreams(dev, &es));
  const cudaStream_t st = es.calib;
  char *src = nullptr, *dst = nullptr;
  DT_CUDA(cudaMallocAsync(&src, static_cast<size_t>(packedBytes * 2), st), "calibration buffers");
  cudaError_t ae = cudaMallocAsync(&dst, static_cast<size_t>(packedBytes), st);
  if (ae != cudaSuccess) {
    cudaFreeAsync(src, st);
    return cudaFail(ae, "calibration buffers");
  }
  cudaEvent_t e0, e1;
  DT_CUDA(cudaEventCreate(&e0), "calibration events");
  DT_CUDA(cudaEventCreate(&e1), "calibration events");
  DT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "calibration");
  std::ostringstream sum;
  cudaError_t bad = cudaSuccess;
  auto timeOnce = [&](const Canonical& c, Scheme s, int64_t len, float* ms) -> cudaError_t {
    std::shared_ptr<CudaMeta> m;
    Status st2 = buildMeta(c, dev, &m);
    if (!st2.isOk()) return cudaErrorUnknown;
    const bool kernel = s == Scheme::Thread || s == Scheme::Warp || s == Scheme::Elem;
    Plan plan;
    if (kernel) {
      const cudaError_t e = planKernel({m.get(), 0, len, false, 1}, s, c.width, sms, &plan);
      if (e != cudaSuccess) return e;
    }
    float best = 1e30f;
    for (int rep = 0; rep < 4; ++rep) {
      cudaEventRecord(e0, st);
      cudaError_t e = (s == Scheme::Copy2D || s == Scheme::Copy3D)
                          ? launchCopy(pitched(c, 1, s == Scheme::Copy3D), s, src, dst, false, st)
                      : s == Scheme::Batch ? launchBatch(c, src, dst, 0, len, false, st)
                                           : launchPlan(plan, *m, src, dst, 0, len, st);
      if (e != cudaSuccess) return e;
      cudaEventRecord(e1, st);
      if ((e = cudaEventSynchronize(e1)) != cudaSuccess) return e;
      float x = 0;
      cudaEventElapsedTime(&x, e0, e1);
      if (rep) best = std::min(best, x);
    }
    *ms = best;
    return cudaSuccess;
  };
  auto vectorForm = [](int64_t block, int64_t n) {
    Canonical c;
    Piece p;
    p.block = block;
    p.nd = n > 1 ? 1 : 0;
    p.count[0] = n;
    p.stride[0] = 2 * block;
    c.pieces.push_back(p);
    Segment s;
    s.numPieces = 1;
    s.repBytes = block * n;
    c.segments.push_back(s);
    c.size = block * n;
    c.extent = 2 * block * n;
    c.width = pow2Width(16, static_cast<uint64_t>(block));
    return c;
  };
  for (Scheme s : {Scheme::Thread, Scheme::Warp, Scheme::Copy2D, Scheme::Elem, Scheme::Batch}) {
    const int si = static_cast<int>(s);
    float ms = 0;
    const Canonical tiny = vectorForm(16, 4);
    cudaError_t e = timeOnce(tiny, s, 64, &ms);
    if (e != cudaSuccess) {
      bad = e;
      break;
    }
    t->launchUs[si] = ms * 1e3;
    sum << schemeName(s) << ": launch " << t->launchUs[si] << " us; GB/s";
    for (int i = 0; i < kSizes; ++i) {
      const int64_t B = sizeAt(i);
      // batch: 256 blocks per point. Its cost is per run (~3 us on an H200), so more blocks add time, not
      // information (4096 per point would add an estimated 15 x 4 x 4096 x 3 us = 0.7 s).
      const Canonical c = vectorForm(B, s == Scheme::Batch ? std::min<int64_t>(packedBytes / B, 256) : packedBytes / B);
      if ((e = timeOnce(c, s, c.size, &ms)) != cudaSuccess) {
        bad = e;
        break;
      }
      t->gbs[si][i] = static_cast<double>(c.size) / (ms * 1e-3) / 1e9;
      sum << ' ' << B << ":" << static_cast<int>(t->gbs[si][i]);
    }
    sum << '\n';
    if (bad != cudaSuccess) break;
  }
  // copy3d behaves like copy2d on the same rows (measured as such).
  for (int i = 0; i < kSizes; ++i) t->gbs[static_cast<int>(Scheme::Copy3D)][i] = t->gbs[static_cast<int>(Scheme::Copy2D)][i];
  t->launchUs[static_cast<int>(Scheme::Copy3D)] = t->launchUs[static_cast<int>(Scheme::Copy2D)];
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFreeAsync(src, st);
  cudaFreeAsync(dst, st);
  const cudaError_t fe = cudaStreamSynchronize(st);
  if (bad == cudaSuccess) bad = fe;
  t->have = bad == cudaSuccess;
  if (summary) *summary = sum.str();
  return bad == cudaSuccess ? Status::ok() : cudaFail(bad, "calibration");
}

enum class Mem { Device, Host };  // Host: pageable host memory the GPU cannot address
// The driver's cuPointerGetAttributes for the one attribute needed, resolved once (no libcuda link): on the H200's
// host it took 0.07 us against 0.12-0.13 us for cudaPointerGetAttributes (device and pinned memory; .deps probe,
// 2026-11-23). Null where the entry point is missing: the runtime call then, as after a failed driver call.
using PtrAttrsFn = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
PtrAttrsFn ptrAttrs() {
  static const auto fn = reinterpret_cast<PtrAttrsFn>(driverEntry("cuPointerGetAttributes"));
  return fn;
}
Mem kindOf(const void* p) {
  if (PtrAttrsFn fn = ptrAttrs()) {
    CUpointer_attribute what = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    unsigned type = 0;  // 0: not known to CUDA (pageable); else CU_MEMORYTYPE_HOST/DEVICE/ARRAY/UNIFIED
    void* out = &type;
    if (fn(1, &what, &out, reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS)
      return type == 0 ? Mem::Host : Mem::Device;
  }  // a failure (no context bound to this thread, say): the runtime's answer
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return Mem::Host;
  }
  return a.type == cudaMemoryTypeUnregistered ? Mem::Host : Mem::Device;
}

// TETHER_DT_SCHEME, read once per process (a getenv per pack cost 0.14 us on the H200's host). Unset, empty or
// "auto": Auto. An unknown name fails every call that would use it, naming it.
Status envScheme(Scheme* out) {
  struct Env {
    Scheme s = Scheme::Auto;
    bool bad = false;
    std::string text;
  };
  static const Env env = [] {
    Env e;
    const char* f = std::getenv("TETHER_DT_SCHEME");
    if (f && *f && (!parseScheme(f, &e.s) || e.s == Scheme::Host)) e.s = Scheme::Auto, e.bad = true, e.text = f;
    return e;
  }();
  if (env.bad)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG,
                "TETHER_DT_SCHEME=%s: expected thread, warp, copy2d, copy3d, elem, batch or auto",
                env.text.c_str());
  *out = env.s;
  return Status::ok();
}

// The scheme asked for: the request's, else the handle's (tether_type_set_gpu_scheme), else TETHER_DT_SCHEME's.
Status askedScheme(Scheme request, const GpuCache& cache, Scheme* out) {
  *out = request;
  if (*out == Scheme::Auto) *out = static_cast<Scheme>(cache.scheme.load(std::memory_order_relaxed));
  if (*out == Scheme::Auto) TETHER_TRY(envScheme(out));
  return Status::ok();
}

// Packs where a buffer is pageable host memory (mu, mp: the kinds of the user and packed buffers): the host
// reference after the stream's earlier work, staging through host memory when the packed bytes are on the GPU.
Status hostPath(const GpuPackRequest& r, Mem mu, Mem mp, cudaStream_t stream, Scheme* used) {
  const Canonical& c = *r.c;
  // (mu == Device with pageable packed bytes goes through GPU scratch instead: pageablePacked.)
  DT_CUDA(cudaStreamSynchronize(stream), "stream");
  if (mp == Mem::Device) {  // user data on the host, packed bytes on the GPU: host pack + one copy
    std::vector<char> tmp(static_cast<size_t>(r.len));
    if (r.unpack) {
      DT_CUDA(cudaMemcpy(tmp.data(), r.src, tmp.size(), cudaMemcpyDefault), "staging copy");
      hostUnpack(c, tmp.data(), r.packedOffset, r.len, r.dst);
    } else {
      hostPack(c, r.src, r.packedOffset, r.len, tmp.data());
      // In stream order: cudaMemcpy's DMA from pageable memory may land after it returns, unseen by `stream`.
      DT_CUDA(cudaMemcpyAsync(r.dst, tmp.data(), tmp.size(), cudaMemcpyDefault, stream), "staging copy");
    }
  } else if (r.unpack) {
    hostUnpack(c, r.src, r.packedOffset, r.len, r.dst);
  } else {
    hostPack(c, r.src, r.packedOffset, r.len, r.dst);
  }
  *used = Scheme::Host;
  return Status::ok();
}

// The cost model's choice for a fragment; blocksPerInst from the metadata tables, elem/tableEntry/unit/onStream as
// choose().
Status modelScheme(int dev, const Canonical& c, int64_t blocksPerInst, int64_t count, int64_t off, int64_t len,
                   const ElemForm& elem, int tableEntry, int unit, bool onStream, Scheme* out) {
  Table t;
  TETHER_TRY(tableFor(dev, false, &t, nullptr));
  *out = choose(t, c, blocksPerInst ? static_cast<double>(c.size) / static_cast<double>(blocksPerInst) : 1.0, count,
                off, len, elem, tableEntry, unit, onStream);
  return Status::ok();
}

// Loads every pack kernel of one access width into the current context (cudaFuncGetAttributes loads a kernel under
// CUDA's lazy loading), so none is loaded by a later first launch (tether.h, doorbells: a load may synchronise the
// context).
template <typename U>
cudaError_t preloadWidth() {
  cudaError_t e = cudaSuccess;
  auto load = [&e](auto* kernel) {
    cudaFuncAttributes a;
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(kernel));
  };
  if constexpr (sizeof(U) == 8)
    for (bool wide : {false, true}) load(pairKernel(wide));
  for (bool unpack : {false, true}) {
    load(warpKernel<U>(unpack));
    load(elemKernel<U>(true, false, 0, false, unpack));  // inline table
    load(elemKernel<U>(false, true, 0, false, unpack));  // user order
    for (bool wide : {false, true}) {
      load(threadKernel<U>(wide, unpack));
      for (int items : {1, 2, kElemItems}) load(elemKernel<U>(false, false, items, wide, unpack));
    }
  }
  return e;
}

}  // namespace

// ---- entry points -------------------------------------------------------------------------------------------------------
// Every pack kernel loaded into the current context, and the engine's streams of GPU dev made.
static Status loadEngine(int dev) {
  cudaError_t bad = cudaSuccess;
  for (cudaError_t e : {preloadWidth<uint4>(), preloadWidth<uint2>(), preloadWidth<uint32_t>(), preloadWidth<uint16_t>(),
                        preloadWidth<uint8_t>()})
    if (bad == cudaSuccess) bad = e;
  if (bad != cudaSuccess) return cudaFail(bad, "loading the pack kernels");
  EngineStreams es;
  return engineStreams(dev, &es);
}

Status gpuPreload(int device) {
  int prev = -1;
  DT_CUDA(cudaGetDevice(&prev), "no usable GPU");
  if (device >= 0 && device != prev) DT_CUDA(cudaSetDevice(device), "cudaSetDevice");
  const int dev = device >= 0 ? device : prev;
  Table t;  // the cost model's table too (read from its file, else measured now rather than in a typed call)
  const Status s = [&] {
    TETHER_TRY(loadEngine(dev));
    return tableFor(dev, false, &t, nullptr);
  }();
  if (dev != prev) cudaSetDevice(prev);
  return s;
}

Status gpuCalibrate(bool force, std::string* summary) {
  int dev = 0;
  DT_CUDA(cudaGetDevice(&dev), "no usable GPU");
  TETHER_TRY(loadEngine(dev));
  Table t;
  return tableFor(dev, force, &t, summary);
}

Status gpuChooseScheme(const Canonical& c, int64_t count, Scheme forced, Scheme* out) {
  int dev = 0;
  DT_CUDA(cudaGetDevice(&dev), "no usable GPU");
  *out = forced;
  if (*out == Scheme::Auto) TETHER_TRY(envScheme(out));
  if (*out != Scheme::Auto) return Status::ok();
  // A query, not the pack path: the tables are built here once (block count, elem form); buffers assumed aligned.
  const ElemForm elem = elemForm(c);
  return modelScheme(dev, c, buildTables(c).blocksPerInst, count, 0, count * c.size, elem, 4, c.width, true, out);
}

Status gpuEstimate(const Canonical& c, GpuCache* cache, int64_t count, int device, GpuEstimate* out) {
  if (device >= 0) DT_CUDA(cudaSetDevice(device), "cudaSetDevice");
  int dev = 0;
  DT_CUDA(cudaGetDevice(&dev), "no usable GPU");
  std::shared_ptr<CudaMeta> meta;
  TETHER_TRY(metaFor(c, dev, cache, &meta));  // the pack path's metadata, made here if no pack made it yet
  {
    std::lock_guard<std::mutex> lock(cache->mu);  // an exchange repeats its count: the last estimate is reused
    if (meta->estimateCount == count) {
      *out = meta->estimate;
      return Status::ok();
    }
  }
  const int64_t len = count * c.size, bpi = meta->tables.blocksPerInst;
  Table t;
  TETHER_TRY(tableFor(dev, false, &t, nullptr));
  const double mean = bpi ? static_cast<double>(c.size) / static_cast<double>(bpi) : 1.0;
  GpuEstimate e;
  e.scheme = choose(t, c, mean, count, 0, len, meta->elem, meta->elemWide ? 8 : 4, c.width, false, &e.us);
  e.blocks = bpi * count;
  std::lock_guard<std::mutex> lock(cache->mu);
  meta->estimate = e;
  meta->estimateCount = count;
  *out = e;
  return Status::ok();
}

Status gpuScratchAlloc(int device, void* stream, int64_t bytes, void** out) {
  if (device >= 0) DT_CUDA(cudaSetDevice(device), "cudaSetDevice");
  DT_CUDA(cudaMallocAsync(out, static_cast<size_t>(bytes), static_cast<cudaStream_t>(stream)), "scratch allocation");
  return Status::ok();
}

Status gpuScratchFree(int device, void* stream, void* p) {
  if (device >= 0) DT_CUDA(cudaSetDevice(device), "cudaSetDevice");
  DT_CUDA(cudaFreeAsync(p, static_cast<cudaStream_t>(stream)), "scratch free");
  return Status::ok();
}

Status gpuSync(int device, void* stream) {
  if (device >= 0) DT_CUDA(cudaSetDevice(device), "cudaSetDevice");
  DT_CUDA(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "stream synchronize");
  return Status::ok();
}

// A GPU-addressable user buffer with packed bytes in pageable host memory: the kernels pack into (or unpack out of)
// stream-ordered scratch GPU memory, which one copy joins to the pageable bytes. A copy from pageable memory is staged
// before cudaMemcpyAsync returns, and one to pageable memory completes before it returns, so the call ends with the
// packed bytes in place (as the host path does) and the scratch is freed in stream order.
Status pageablePacked(const GpuPackRequest& r, GpuCache* cache, cudaStream_t stream, Scheme* used) {
  void* scratch = nullptr;
  DT_CUDA(cudaMallocAsync(&scratch, static_cast<size_t>(r.len), stream), "scratch allocation");
  GpuPackRequest q = r;
  q.device = -1;  // current already
  cudaError_t e = cudaSuccess;
  if (r.unpack) {
    e = cudaMemcpyAsync(scratch, r.src, static_cast<size_t>(r.len), cudaMemcpyHostToDevice, stream);
    q.src = scratch;
  } else {
    q.dst = scratch;
  }
  const Status st = e == cudaSuccess ? gpuPack(q, cache, used) : cudaFail(e, "staging copy");
  if (st.isOk() && !r.unpack)
    e = cudaMemcpyAsync(r.dst, scratch, static_cast<size_t>(r.len), cudaMemcpyDeviceToHost, stream);
  const cudaError_t fe = cudaFreeAsync(scratch, stream);
  if (!st.isOk()) return st;
  if (e != cudaSuccess) return cudaFail(e, "staging copy");
  return fe == cudaSuccess ? Status::ok() : cudaFail(fe, "scratch free");
}

Status gpuPack(const GpuPackRequest& r, GpuCache* cache, Scheme* used) {
  const Canonical& c = *r.c;
  cudaStream_t stream = static_cast<cudaStream_t>(r.stream);
  if (r.len == 0) {
    *used = Scheme::Auto;
    return Status::ok();
  }
  if (r.device >= 0) DT_CUDA(cudaSetDevice(r.device), "cudaSetDevice");
  int dev = 0;
  DT_CUDA(cudaGetDevice(&dev), "no usable GPU");
  const void* user = r.unpack ? r.dst : r.src;
  const void* packedPtr = r.unpack ? r.src : r.dst;
  char* userBuf = const_cast<char*>(static_cast<const char*>(user));
  char* packedBuf = const_cast<char*>(static_cast<const char*>(packedPtr));
  // Access width of the kernels: the type's, limited by the buffers' alignment and the fragment's bounds.
  const uint64_t align = reinterpret_cast<uint64_t>(userBuf) | reinterpret_cast<uint64_t>(packedBuf) |
                         static_cast<uint64_t>(r.packedOffset) | static_cast<uint64_t>(r.len);
  const int w = pow2Width(c.width, align);
  Scheme asked = Scheme::Auto;
  TETHER_TRY(askedScheme(r.force, *cache, &asked));

  // The small-pack path is host-bound (a 1 KiB pack is one launch plus about a microsecond): an exchange repeated with
  // the same count, fragment, width and asked scheme reuses the last decision (scheme, first byte, launch descriptor).
  std::shared_ptr<CudaMeta> meta;
  CudaMeta::Decision dec;
  TETHER_TRY(metaFor(c, dev, cache, &meta, &dec));
  const bool onStream = stream != nullptr && stream != cudaStreamLegacy;
  const bool hit = dec.count == r.count && dec.off == r.packedOffset && dec.len == r.len && dec.width == w &&
                   dec.asked == asked && dec.unpack == r.unpack && dec.onStream == onStream;
  if (!hit) {
    dec = CudaMeta::Decision{};
    dec.count = r.count, dec.off = r.packedOffset, dec.len = r.len, dec.width = w, dec.asked = asked;
    dec.unpack = r.unpack;
    dec.onStream = onStream;
    // Ask about a byte the fragment touches: the type's origin may lie outside the user's allocation.
    TETHER_TRY(hostWalk(c, r.packedOffset, 1, [&](int64_t d, int64_t) {
      dec.first = d;
      return Status::ok();
    }));
  }
  // Buffers the GPU cannot address: pack on the host (after the stream's earlier work), staging device data. Asked
  // every call: a cached answer would go stale when the memory is freed and the address reused.
  const Mem mu = kindOf(userBuf + dec.first), mp = kindOf(packedPtr);
  if (mu == Mem::Device && mp == Mem::Host) return pageablePacked(r, cache, stream, used);
  if (mu == Mem::Host || mp == Mem::Host) return hostPath(r, mu, mp, stream, used);

  if (!hit) {
    Scheme s = asked;
    // The block count and elem form are cached with the metadata: no walk over the pieces per call.
    if (s == Scheme::Auto)
      TETHER_TRY(modelScheme(dev, c, meta->tables.blocksPerInst, r.count, r.packedOffset, r.len, meta->elem,
                             meta->elemWide ? 8 : 4, w, onStream, &s));
    if (s == Scheme::Batch && !onStream)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG,
                  "datatype GPU engine: scheme batch needs a stream other than the legacy default stream "
                  "(cudaMemcpyBatchAsync refuses it)");
    if (!applicable(c, r.count, s, r.packedOffset, r.len, &meta->elem, w))
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "datatype GPU engine: scheme %s does not apply to this pack (%s)",
                  schemeName(s), describe(c).c_str());
    dec.chosen = s;
    if (s == Scheme::Thread || s == Scheme::Warp || s == Scheme::Elem) {
      EDesc d;
      // A whole unpack of a transposing layout iterates in the user buffer's order: contiguous stores.
      if (s == Scheme::Elem) {
        elemDesc(meta->elem, c, r.count, w, meta->elemTable, &d,
                 r.unpack && r.packedOffset == 0 && r.len == r.count * c.size);
        setElemItems(*meta, r.unpack, &d);
      }
      int sms = 0;
      DT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "device query");
      DT_CUDA(planKernel({meta.get(), r.packedOffset, r.packedOffset + r.len, r.unpack, r.count,
                          s == Scheme::Elem ? &d : nullptr},
                         s, w, sms, &dec.plan),
              schemeName(s));
    }
    if (s == Scheme::Copy2D || s == Scheme::Copy3D) dec.pitch = pitched(c, r.count, s == Scheme::Copy3D);
    std::lock_guard<std::mutex> lock(cache->mu);
    meta->last = dec;
  }
  const Scheme s = dec.chosen;
  cudaError_t e;
  if (s == Scheme::Copy2D || s == Scheme::Copy3D) {
    e = launchCopy(dec.pitch, s, userBuf, packedBuf, r.unpack, stream);
  } else if (s == Scheme::Batch) {
    e = launchBatch(c, userBuf, packedBuf, r.packedOffset, r.len, r.unpack, stream);
  } else {
    // packed points at fragment byte 0; the kernels index it with (pack byte - off).
    e = launchPlan(dec.plan, *meta, userBuf, packedBuf, r.packedOffset, r.packedOffset + r.len, stream);
    if (e == cudaSuccess && readsDeviceMeta(dec.plan)) e = meta->noteUse(stream);
  }
  DT_CUDA(e, schemeName(s));
  *used = s;
  return Status::ok();
}

}  // namespace tether::dt
