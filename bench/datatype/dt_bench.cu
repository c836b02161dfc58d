// Datatype engine benchmark (issue #7), one GPU: every pattern of patterns.h, at each size of --sizes (small: a
// realistic per-exchange size; large: the same layout with 64-256 MiB packed, see patterns.h), packed and unpacked by
//   tether      the engine with the scheme its cost model picks (and each forced scheme, for the model's check),
//   dt          one cudaMemcpyAsync per contiguous block (the HAND paper's "DT"; measured over the first
//               --dt-blocks blocks and scaled to all of them, as the note says),
//   copy2d/3d   cudaMemcpy2DAsync / cudaMemcpy3DAsync where the layout is a pitched array,
//   hand        where the layout is a pitched array: the kernel a programmer writes for that one face (thread per
//               unit of the widest of 16/8/4/2/1 bytes the rows and pitches allow, 32-bit index math; handCopy),
//   roofline    the bytes the layout must move at this GPU's measured device-to-device copy bandwidth (read + write),
//               with reads in whole 32-byte sectors: time = (sum over blocks of 32*ceil(B/32) + B) / copy bandwidth
//               (the issue's formula: the targets are judged against it),
//   roofline_sectors  the same with the sectors the blocks touch at their addresses (the distinct 32 B sectors of
//               the source buffer, cudaMalloc'd, so 256 B aligned): a block that straddles a sector boundary costs
//               both sectors (24 B blocks at a 48 B stride read every sector). A lower bound for any kernel that
//               reads the blocks through L2 (unpacks write them); informational, for explaining the gaps.
//   roofline_fetch64  the same with the distinct 64 B granules the blocks touch: what the H200's L2 fetches from
//               DRAM for an isolated block (Nsight Compute: 64 B of DRAM read per 8 B block, bench/results/h200/
//               README.md); informational.
// Framework rows (CuPy strided copies) come from bench/datatype/cupy_rows.py, run beside this program.
// Checks: the expected packed bytes are a gather of the pattern's block list (built independently of the type
// constructors) by a plain GPU kernel over that list; every pack is compared with them byte for byte, every unpack
// with the source over every block of the list (GPU kernels, also driven by the block list only, never by tether's
// canonical form). At small size the GPU gather is also compared with a host gather, and tether's host reference
// pack of the type with it (the pattern's two descriptions agree). Times: CUDA events, best of --reps after a warm-up
// (fewer when the warm-up shows the repetitions would exceed a time budget; the note says so).
// Output: a table on stdout (with a comment line per pattern: the GPU memory it used) and JSON lines (--json FILE,
// first line a run record).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "../cuda_check.h"
#include "patterns.h"
#include "tether/datatype.h"

using tether_bench::Block;
using tether_bench::Pattern;
using tether_bench::Size;

namespace {

struct Row {
  std::string pattern, family, size, dir, impl, note;
  int64_t packed = 0, blocks = 0;
  double meanBlock = 0, us = 0, gbs = 0, pctRoof = 0;
};

__global__ void fillKernel(unsigned char* p, size_t n, uint32_t salt) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<unsigned char>((i * 2654435761u + salt) >> 13);
}

// ---- The block list on the GPU, for the reference gather and the checks. Run i covers packed bytes
// [runs[i].packed, runs[i + 1].packed) and the source bytes from runs[i].src on; blocks longer than kRunBytes are
// split into runs of kRunBytes (so one warp per run stays short); runs[n] is a sentinel holding the packed size.
constexpr int64_t kRunBytes = 4096;
struct DevRun {
  int64_t src, packed;
};
struct DevList {
  DevRun* runs = nullptr;
  int64_t n = 0;  // runs, sentinel excluded
};

__device__ inline int64_t warpIndex() {
  return (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
}
__device__ inline int64_t warpCount() { return static_cast<int64_t>(gridDim.x) * blockDim.x / 32; }

// dst[packed bytes] = src[the runs' bytes]: one warp per run, lanes over its bytes.
__global__ void gatherRuns(const DevRun* runs, int64_t n, const unsigned char* src, unsigned char* dst) {
  const int lane = threadIdx.x & 31;
  for (int64_t i = warpIndex(); i < n; i += warpCount()) {
    const DevRun r = runs[i];
    const int64_t len = runs[i + 1].packed - r.packed;
    for (int64_t j = lane; j < len; j += 32) dst[r.packed + j] = src[r.src + j];
  }
}
// *bad = min(*bad, packed offset of every byte of the runs where a and b differ).
__global__ void compareRuns(const DevRun* runs, int64_t n, const unsigned char* a, const unsigned char* b,
                            unsigned long long* bad) {
  const int lane = threadIdx.x & 31;
  for (int64_t i = warpIndex(); i < n; i += warpCount()) {
    const DevRun r = runs[i];
    const int64_t len = runs[i + 1].packed - r.packed;
    for (int64_t j = lane; j < len; j += 32)
      if (a[r.src + j] != b[r.src + j]) atomicMin(bad, static_cast<unsigned long long>(r.packed + j));
  }
}
// *bad = min(*bad, every i < n where a[i] != b[i]).
// HAND: a hand-written kernel for one pitched 3-D face (rows of rowUnits units of U, `rows` rows a slice, n units
// in all, n < 2^32): thread per unit, unit i at row i / rowUnits of the face, packed contiguously.
template <typename U>
__global__ void handCopy(unsigned char* user, unsigned char* packed, uint32_t rowUnits, uint32_t rows, uint32_t n,
                         int64_t pitch, int64_t slicePitch, bool unpack) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t r = i / rowUnits, x = i - r * rowUnits, z = r / rows, y = r - z * rows;
  U* u = reinterpret_cast<U*>(user + z * slicePitch + y * pitch) + x;
  U* p = reinterpret_cast<U*>(packed) + i;
  if (unpack)
    *u = *p;
  else
    *p = *u;
}

__global__ void compareBytes(const unsigned char* a, const unsigned char* b, int64_t n, unsigned long long* bad) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (a[i] != b[i]) atomicMin(bad, static_cast<unsigned long long>(i));
}

struct Timer {
  cudaStream_t st;
  cudaEvent_t e0, e1;
  int reps;
  double budgetMs = 2000;  // timed runs of one row stop short of reps beyond this (at least one)
  int lastReps = 0;        // timed runs of the last bestUs
  float once(const std::function<void()>& f) {
    CK(cudaEventRecord(e0, st));
    f();
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms;
  }
  // Best time (us) of min(reps, budgetMs / warm-up time, at least 1) runs after one warm-up run.
  double bestUs(const std::function<void()>& f) {
    const float warm = once(f);
    lastReps = warm * reps > budgetMs ? std::max(1, static_cast<int>(budgetMs / warm)) : reps;
    float best = 1e30f;
    for (int r = 0; r < lastReps; ++r) best = std::min(best, once(f));
    return best * 1e3;
  }
  std::string repsNote() const {
    return lastReps < reps ? "; best of " + std::to_string(lastReps) + " (time budget)" : std::string();
  }
};

// One run of the benchmark: the timer, the roofline's basis, the rows so far and the failed checks.
struct Bench {
  Timer T;
  double copyBw = 0;      // device-to-device copy bandwidth, read + write bytes per second
  int64_t dtBlocks = 0;   // blocks the dt row copies
  int grid = 0;           // blocks of 256 threads for the check kernels
  unsigned long long* bad = nullptr;  // device: first differing packed byte of a check
  std::vector<Row> rows;
  int failures = 0;

  void report(Row r, double roofUs) {
    r.gbs = r.us > 0 ? static_cast<double>(r.packed) / (r.us * 1e3) : 0;
    r.pctRoof = r.us > 0 ? 100.0 * roofUs / r.us : 0;
    std::printf("%-16s %-5s %-6s %-10s %12lld %10.1f %11.2f %9.1f %6.1f%%  %s\n", r.pattern.c_str(), r.size.c_str(),
                r.dir.c_str(), r.impl.c_str(), static_cast<long long>(r.packed), r.meanBlock, r.us, r.gbs, r.pctRoof,
                r.note.c_str());
    std::fflush(stdout);
    rows.push_back(r);
  }
  void fail(const Pattern& p, const char* what, const std::string& msg) {
    std::printf("  FAIL %s %s %s: %s\n", p.name.c_str(), p.size.c_str(), what, msg.c_str());
    ++failures;
  }

  DevList upload(const Pattern& p) {
    DevList l;
    for (const Block& b : p.blocks) l.n += (b.bytes + kRunBytes - 1) / kRunBytes;
    CK(cudaMalloc(&l.runs, static_cast<size_t>(l.n + 1) * sizeof(DevRun)));
    std::vector<DevRun> stage;  // staged in slices: the host never holds the whole run list
    const size_t slice = size_t{1} << 20;
    stage.reserve(slice);
    int64_t at = 0, pk = 0;
    auto flush = [&] {
      CK(cudaMemcpy(l.runs + at, stage.data(), stage.size() * sizeof(DevRun), cudaMemcpyHostToDevice));
      at += static_cast<int64_t>(stage.size());
      stage.clear();
    };
    for (const Block& b : p.blocks) {
      for (int64_t o = 0; o < b.bytes; o += kRunBytes) {
        stage.push_back({b.offset + o, pk + o});
        if (stage.size() == slice) flush();
      }
      pk += b.bytes;
    }
    stage.push_back({0, pk});
    flush();
    CK(cudaDeviceSynchronize());  // pageable copies may still be in flight; T.st does not wait for them
    return l;
  }
  // First differing packed byte (-1: none) after `launch` ran the comparison into *bad.
  template <typename F>
  int64_t firstBad(F&& launch) {
    const unsigned long long none = ULLONG_MAX;
    CK(cudaMemcpyAsync(bad, &none, sizeof none, cudaMemcpyHostToDevice, T.st));
    launch();
    CK(cudaGetLastError());
    unsigned long long got = 0;
    CK(cudaMemcpyAsync(&got, bad, sizeof got, cudaMemcpyDeviceToHost, T.st));
    CK(cudaStreamSynchronize(T.st));
    return got == none ? -1 : static_cast<int64_t>(got);
  }

  // Small size: the GPU gather against a host gather, and tether's host reference pack against it.
  void hostReference(const Pattern& p, const unsigned char* src, const unsigned char* want) {
    std::vector<unsigned char> hsrc(static_cast<size_t>(p.span)), hwant(static_cast<size_t>(p.packed)),
        got(static_cast<size_t>(p.packed));
    CK(cudaMemcpy(hsrc.data(), src, hsrc.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got.data(), want, got.size(), cudaMemcpyDeviceToHost));
    int64_t o = 0;
    for (const Block& b : p.blocks) {
      std::memcpy(hwant.data() + o, hsrc.data() + b.offset, static_cast<size_t>(b.bytes));
      o += b.bytes;
    }
    if (got != hwant) fail(p, "reference", "the GPU gather of the block list differs from the host gather");
    int64_t done = 0;
    DTK(tether_type_pack(p.type, p.count, hsrc.data() + p.base, 0, p.packed, got.data(), &done));
    if (done != p.packed || got != hwant) fail(p, "reference", "tether's host pack differs from the block list");
  }

  void run(Pattern& p, Size z);
};

// Bytes of the distinct `g`-byte granules (g <= 256) that the pattern's blocks touch, the source buffer's base being
// 256 B aligned.
double touchedBytes(const Pattern& p, int64_t g) {
  std::vector<std::pair<int64_t, int64_t>> r;  // [first, end) granule of each block
  r.reserve(p.blocks.size());
  for (const Block& b : p.blocks)
    if (b.bytes > 0) r.emplace_back((p.base + b.offset) / g, (p.base + b.offset + b.bytes + g - 1) / g);
  if (!std::is_sorted(r.begin(), r.end())) std::sort(r.begin(), r.end());
  int64_t sectors = 0, end = INT64_MIN;
  for (const auto& [a, e] : r) {
    if (e <= end) continue;
    sectors += e - std::max(a, end);
    end = e;
  }
  return static_cast<double>(g) * static_cast<double>(sectors);
}

void Bench::run(Pattern& p, Size z) {
  size_t free0 = 0, free1 = 0, total = 0;
  CK(cudaMemGetInfo(&free0, &total));
  const int64_t nb = static_cast<int64_t>(p.blocks.size());
  double roofBytes = 0;
  for (const Block& b : p.blocks) roofBytes += 32.0 * ((b.bytes + 31) / 32) + b.bytes;
  const double roofUs = roofBytes / copyBw * 1e6;
  const double sectorUs = (touchedBytes(p, 32) + static_cast<double>(p.packed)) / copyBw * 1e6;
  const double fetchUs = (touchedBytes(p, 64) + static_cast<double>(p.packed)) / copyBw * 1e6;
  Row base;
  base.pattern = p.name;
  base.family = p.family;
  base.size = p.size;
  base.packed = p.packed;
  base.blocks = nb;
  base.meanBlock = nb ? static_cast<double>(p.packed) / nb : 0;
  const size_t span = static_cast<size_t>(p.span), pbytes = static_cast<size_t>(p.packed);
  cudaStream_t st = T.st;

  unsigned char *src, *packed, *want, *back;
  CK(cudaMalloc(&src, span));
  CK(cudaMalloc(&back, span));
  CK(cudaMalloc(&packed, pbytes));
  CK(cudaMalloc(&want, pbytes));
  const DevList list = upload(p);
  fillKernel<<<grid, 256, 0, st>>>(src, span, 0x9e37u);
  CK(cudaGetLastError());
  CK(cudaMemsetAsync(back, 0, span, st));
  CK(cudaMemsetAsync(packed, 0, pbytes, st));
  gatherRuns<<<grid, 256, 0, st>>>(list.runs, list.n, src, want);
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(st));
  if (z == Size::small) hostReference(p, src, want);

  const char* chosen = "";
  DTK(tether_type_gpu_scheme(p.type, p.count, &chosen));
  auto ourPack = [&](bool unpack) {
    int64_t done = 0;
    return unpack ? tether_type_unpack_async(p.type, p.count, packed, 0, p.packed, back + p.base, &done, st)
                  : tether_type_pack_async(p.type, p.count, src + p.base, 0, p.packed, packed, &done, st);
  };
  auto check = [&](bool unpack, const std::string& what) {
    if (unpack) {
      const int64_t d = firstBad([&] { compareRuns<<<grid, 256, 0, st>>>(list.runs, list.n, back, src, bad); });
      if (d >= 0) fail(p, what.c_str(), "unpacked bytes differ (first at packed byte " + std::to_string(d) + ")");
      CK(cudaMemsetAsync(back, 0, span, st));
    } else {
      const int64_t d = firstBad([&] { compareBytes<<<grid, 256, 0, st>>>(packed, want, p.packed, bad); });
      if (d >= 0) fail(p, what.c_str(), "packed bytes differ (first at byte " + std::to_string(d) + ")");
      CK(cudaMemsetAsync(packed, 0, pbytes, st));
    }
    CK(cudaStreamSynchronize(st));
  };
  // A cudaMemcpy2D/3D row: one trial call first, so that a layout the call refuses is a note, not an exit.
  auto copyRow = [&](const Row& r, bool unpack, const char* impl, const char* call,
                     const std::function<cudaError_t()>& copy) {
    const cudaError_t e = copy();
    if (e != cudaSuccess) {
      cudaGetLastError();
      std::printf("# %s %s %s: %s refused this layout (%s): no row\n", p.name.c_str(), p.size.c_str(), r.dir.c_str(),
                  call, cudaGetErrorString(e));
      return;
    }
    CK(cudaStreamSynchronize(st));
    Row d = r;
    d.impl = impl;
    d.us = T.bestUs([&] { CK(copy()); });
    d.note = std::string(call) + T.repsNote();
    check(unpack, impl);
    report(d, roofUs);
  };

  for (int dir = 0; dir < 2; ++dir) {
    const bool unpack = dir == 1;
    // Unpack rows read the packed bytes: put the expected ones there (the pack rows' checks clear the buffer).
    if (unpack) CK(cudaMemcpyAsync(packed, want, pbytes, cudaMemcpyDeviceToDevice, st));
    Row r = base;
    r.dir = unpack ? "unpack" : "pack";
    // tether, the cost model's choice.
    DTK(tether_type_set_gpu_scheme(p.type, "auto"));
    if (ourPack(unpack) != TETHER_SUCCESS) {
      fail(p, r.dir.c_str(), std::string("tether (auto) failed: ") + tether_type_last_error());
      cudaGetLastError();  // a failed CUDA call inside must not fail the next check's launch
      continue;
    }
    CK(cudaStreamSynchronize(st));
    r.impl = "tether";
    r.us = T.bestUs([&] { DTK(ourPack(unpack)); });
    r.note = std::string("auto: ") + chosen + T.repsNote();
    check(unpack, "tether");
    report(r, roofUs);
    // Each scheme forced (the cost model's check).
    for (const char* s : {"thread", "warp", "elem", "copy2d", "copy3d", "batch"}) {
      DTK(tether_type_set_gpu_scheme(p.type, s));
      const char* c = nullptr;
      if (tether_type_gpu_scheme(p.type, p.count, &c) != TETHER_SUCCESS) continue;
      if (unpack) CK(cudaMemcpyAsync(packed, want, pbytes, cudaMemcpyDeviceToDevice, st));
      if (ourPack(unpack) != TETHER_SUCCESS) {  // not applicable to this layout
        cudaGetLastError();
        continue;
      }
      CK(cudaStreamSynchronize(st));
      Row f = r;
      f.impl = std::string("t:") + s;
      f.us = T.bestUs([&] { DTK(ourPack(unpack)); });
      f.note = "forced" + T.repsNote();
      check(unpack, s);
      report(f, roofUs);
      // Experiment for short blocks: the elem scheme again with the device's L2 fetch granularity limited to 32 B
      // (cudaLimitMaxL2FetchGranularity, a hint; restored after): does DRAM over-fetch bound the sparse rows?
      if (!std::strcmp(s, "elem") && r.meanBlock <= 64) {
        size_t was = 0;
        CK(cudaDeviceGetLimit(&was, cudaLimitMaxL2FetchGranularity));
        CK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 32));
        if (unpack) CK(cudaMemcpyAsync(packed, want, pbytes, cudaMemcpyDeviceToDevice, st));
        DTK(ourPack(unpack));
        CK(cudaStreamSynchronize(st));
        Row x = r;
        x.impl = "t:elem,l2f32";
        x.us = T.bestUs([&] { DTK(ourPack(unpack)); });
        x.note = "forced; cudaLimitMaxL2FetchGranularity 32 (was " + std::to_string(was) + ")" + T.repsNote();
        check(unpack, x.impl);
        report(x, roofUs);
        CK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, was));
      }
    }
    DTK(tether_type_set_gpu_scheme(p.type, "auto"));
    // DT: one cudaMemcpyAsync per block, over the first dtBlocks blocks (bounded time at any size), scaled.
    {
      if (unpack) CK(cudaMemcpyAsync(packed, want, pbytes, cudaMemcpyDeviceToDevice, st));
      const int64_t k = std::min(nb, dtBlocks);
      int64_t kb = 0;
      for (int64_t i = 0; i < k; ++i) kb += p.blocks[static_cast<size_t>(i)].bytes;
      Row d = r;
      d.impl = "dt";
      const double us = T.bestUs([&] {
        int64_t o = 0;
        for (int64_t i = 0; i < k; ++i) {
          const Block& b = p.blocks[static_cast<size_t>(i)];
          if (unpack)
            CK(cudaMemcpyAsync(back + b.offset, packed + o, static_cast<size_t>(b.bytes), cudaMemcpyDeviceToDevice,
                               st));
          else
            CK(cudaMemcpyAsync(packed + o, src + b.offset, static_cast<size_t>(b.bytes), cudaMemcpyDeviceToDevice,
                               st));
          o += b.bytes;
        }
      });
      d.us = kb ? us * static_cast<double>(p.packed) / static_cast<double>(kb) : us;
      d.note = (k < nb ? "per-block cudaMemcpyAsync; measured on " + std::to_string(k) + " of " +
                             std::to_string(nb) + " blocks, scaled"
                       : std::string("per-block cudaMemcpyAsync")) +
               T.repsNote();
      if (k == nb) {
        check(unpack, "dt");
      } else {
        CK(cudaMemsetAsync(unpack ? back : packed, 0, unpack ? span : pbytes, st));
        CK(cudaStreamSynchronize(st));
      }
      report(d, roofUs);
    }
    // cudaMemcpy2D/3D where the layout is one.
    if (p.copy2d.ok) {
      const tether_bench::Copy2D& c = p.copy2d;
      if (unpack) CK(cudaMemcpyAsync(packed, want, pbytes, cudaMemcpyDeviceToDevice, st));
      copyRow(r, unpack, "memcpy2d", "cudaMemcpy2DAsync", [&] {
        return unpack ? cudaMemcpy2DAsync(back + c.offset, c.pitch, packed, c.width, c.width, c.height,
                                          cudaMemcpyDeviceToDevice, st)
                      : cudaMemcpy2DAsync(packed, c.width, src + c.offset, c.pitch, c.width, c.height,
                                          cudaMemcpyDeviceToDevice, st);
      });
    }
    if (p.copy3d.ok) {
      const tether_bench::Copy3D& c = p.copy3d;
      if (unpack) CK(cudaMemcpyAsync(packed, want, pbytes, cudaMemcpyDeviceToDevice, st));
      cudaMemcpy3DParms prm = {};
      const cudaPitchedPtr user = make_cudaPitchedPtr(unpack ? back + c.offset : src + c.offset, c.pitch, c.width,
                                                      c.slicePitch / c.pitch);
      const cudaPitchedPtr pk = make_cudaPitchedPtr(packed, c.width, c.width, c.height);
      prm.srcPtr = unpack ? pk : user;
      prm.dstPtr = unpack ? user : pk;
      prm.extent = make_cudaExtent(c.width, c.height, c.depth);
      prm.kind = cudaMemcpyDeviceToDevice;
      copyRow(r, unpack, "memcpy3d", "cudaMemcpy3DAsync", [&] { return cudaMemcpy3DAsync(&prm, st); });
    }
    // HAND: the pitched face by a hand-written kernel (copy3d's description, else copy2d's as one slice).
    if (p.copy3d.ok || p.copy2d.ok) {
      const bool three = p.copy3d.ok;
      const int64_t off = three ? p.copy3d.offset : p.copy2d.offset, width = three ? p.copy3d.width : p.copy2d.width,
                    height = three ? p.copy3d.height : p.copy2d.height, depth = three ? p.copy3d.depth : 1,
                    pitch = three ? p.copy3d.pitch : p.copy2d.pitch,
                    slice = three ? p.copy3d.slicePitch : p.copy2d.pitch * p.copy2d.height;
      int w = 16;
      const uint64_t a = static_cast<uint64_t>(width | pitch | slice | off);
      while (w > 1 && (a & static_cast<uint64_t>(w - 1))) w /= 2;
      const int64_t n = width / w * height * depth;
      if (n > 0 && n < (int64_t{1} << 32)) {
        unsigned char* user = (unpack ? back : src) + off;
        const uint32_t blocks = static_cast<uint32_t>((n + 255) / 256);
        auto launch = [&] {
          const uint32_t ru = static_cast<uint32_t>(width / w), rows = static_cast<uint32_t>(height),
                         nn = static_cast<uint32_t>(n);
          switch (w) {
            case 16: handCopy<uint4><<<blocks, 256, 0, st>>>(user, packed, ru, rows, nn, pitch, slice, unpack); break;
            case 8: handCopy<uint2><<<blocks, 256, 0, st>>>(user, packed, ru, rows, nn, pitch, slice, unpack); break;
            case 4: handCopy<uint32_t><<<blocks, 256, 0, st>>>(user, packed, ru, rows, nn, pitch, slice, unpack); break;
            case 2: handCopy<uint16_t><<<blocks, 256, 0, st>>>(user, packed, ru, rows, nn, pitch, slice, unpack); break;
            default: handCopy<uint8_t><<<blocks, 256, 0, st>>>(user, packed, ru, rows, nn, pitch, slice, unpack);
          }
          CK(cudaGetLastError());
        };
        if (unpack) CK(cudaMemcpyAsync(packed, want, pbytes, cudaMemcpyDeviceToDevice, st));
        launch();
        CK(cudaStreamSynchronize(st));
        Row h = r;
        h.impl = "hand";
        h.us = T.bestUs(launch);
        h.note = "hand-written kernel, thread per " + std::to_string(w) + " B unit" + T.repsNote();
        check(unpack, "hand");
        report(h, roofUs);
      }
    }
    Row roof = r;
    roof.impl = "roofline";
    roof.note = "32 B sectors read + bytes written at the device copy bandwidth";
    roof.us = roofUs;
    report(roof, roofUs);
    Row sect = r;
    sect.impl = "roofline_sectors";
    sect.note = "the 32 B sectors the blocks touch (alignment included) + bytes written, at the device copy bandwidth";
    sect.us = sectorUs;
    report(sect, roofUs);
    Row fetch = r;
    fetch.impl = "roofline_fetch64";
    fetch.note = "the 64 B granules the blocks touch (the L2's DRAM fetch) + bytes written, at the device copy bandwidth";
    fetch.us = fetchUs;
    report(fetch, roofUs);
  }
  CK(cudaMemGetInfo(&free1, &total));
  const double mib = 1024.0 * 1024.0;
  std::printf("# %s %s: %.0f MiB of GPU memory in use: source and unpack target 2 x %.0f, packed and reference "
              "2 x %.1f, block list %.1f, the rest tether's device metadata and CUDA's\n",
              p.name.c_str(), p.size.c_str(),
              static_cast<double>(static_cast<int64_t>(free0) - static_cast<int64_t>(free1)) / mib, p.span / mib,
              p.packed / mib, static_cast<double>(list.n + 1) * sizeof(DevRun) / mib);
  CK(cudaFree(src));
  CK(cudaFree(back));
  CK(cudaFree(packed));
  CK(cudaFree(want));
  CK(cudaFree(list.runs));
}

// Small objects: a 1 KiB struct packed in one launch vs an empty launch; commit times of <= 3-level types.
void latencyRows(Bench& B) {
  Timer& T = B.T;
  tether_type_t d, f, st;
  DTK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
  DTK(tether_type_basic(TETHER_BASIC_FLOAT, &f));
  const int64_t bl[2] = {96, 64}, disp[2] = {0, 1024};
  const tether_type_t ts[2] = {d, f};
  DTK(tether_type_struct(2, bl, disp, ts, &st));
  DTK(tether_type_commit(st));
  int64_t size = 0;
  DTK(tether_type_size(st, &size));
  unsigned char *a, *b;
  CK(cudaMalloc(&a, 4096));
  CK(cudaMalloc(&b, 4096));
  // Microsecond rows: many samples, alternating, so both see the same machine state.
  const int reps = T.reps;
  T.reps = 1;
  double empty = 1e30, us = 1e30;
  for (int i = 0; i < 200; ++i) {
    empty = std::min(empty, T.bestUs([&] { fillKernel<<<1, 32, 0, T.st>>>(b, 0, 0); }));
    us = std::min(us, T.bestUs([&] {
      int64_t done = 0;
      DTK(tether_type_pack_async(st, 1, a, 0, size, b, &done, T.st));
    }));
  }
  T.reps = reps;
  // Host side alone: the calling thread's time per call (mean of 1000 enqueued back to back, best of 5), for the
  // empty launch and for the pack: what tether adds on the CPU, apart from the kernel's run on the GPU.
  auto hostUs = [&](auto&& call) {
    double best = 1e30;
    for (int k = 0; k < 5; ++k) {
      CK(cudaStreamSynchronize(T.st));
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 1000; ++i) call();
      best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                                1000.0);
    }
    CK(cudaStreamSynchronize(T.st));
    return best;
  };
  const double hostEmpty = hostUs([&] { fillKernel<<<1, 32, 0, T.st>>>(b, 0, 0); });
  const double hostPack = hostUs([&] {
    int64_t done = 0;
    DTK(tether_type_pack_async(st, 1, a, 0, size, b, &done, T.st));
  });
  CK(cudaFree(a));
  CK(cudaFree(b));
  Row r;
  r.pattern = "small_struct";
  r.family = "latency";
  r.size = tether_bench::sizeName(Size::small);
  r.dir = "pack";
  r.impl = "tether";
  r.packed = size;
  r.blocks = 2;
  r.meanBlock = size / 2.0;
  r.us = us;
  char note[256];
  std::snprintf(note, sizeof note, "%lld B struct; an empty kernel launch measured %.2f us the same way (best of 200 "
                "each, alternating); host time per call: pack %.2f us, empty launch %.2f us",
                static_cast<long long>(size), empty, hostPack, hostEmpty);
  r.note = note;
  B.report(r, 0);
  auto commitUs = [&](auto&& make) {
    double best = 1e30;
    for (int i = 0; i < 20; ++i) {
      tether_type_t t = make();
      const auto t0 = std::chrono::steady_clock::now();
      DTK(tether_type_commit(t));
      best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      tether_type_free(&t);
    }
    return best;
  };
  struct C {
    const char* name;
    double us;
  };
  std::vector<C> commits;
  commits.push_back({"vector", commitUs([&] {
                       tether_type_t t;
                       DTK(tether_type_vector(1000, 3, 7, d, &t));
                       return t;
                     })});
  commits.push_back({"subarray3d", commitUs([&] {
                       tether_type_t t;
                       const int64_t sz[3] = {256, 256, 256}, sub[3] = {250, 250, 3}, stt[3] = {3, 3, 250};
                       DTK(tether_type_subarray(3, sz, sub, stt, TETHER_ORDER_C, d, &t));
                       return t;
                     })});
  commits.push_back({"struct(vector,hvector)", commitUs([&] {
                       tether_type_t v, hv, t;
                       DTK(tether_type_vector(100, 2, 5, d, &v));
                       DTK(tether_type_hvector(10, 1, 40000, v, &hv));
                       const int64_t b2[2] = {1, 1}, d2[2] = {0, 400000};
                       const tether_type_t t2[2] = {v, hv};
                       DTK(tether_type_struct(2, b2, d2, t2, &t));
                       tether_type_free(&v);
                       tether_type_free(&hv);
                       return t;
                     })});
  // Irregular bodies: commit is linear in the blocks (each becomes a piece of the exact form, docs/datatype.md).
  for (int n : {100, 1000}) {
    std::vector<int64_t> disp(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) disp[static_cast<size_t>(i)] = 7 * i + (i * i) % 5;  // sorted, irregular gaps
    commits.push_back({n == 100 ? "indexed_block(100)" : "indexed_block(1000)", commitUs([&] {
                         tether_type_t t;
                         DTK(tether_type_indexed_block(n, 2, disp.data(), d, &t));
                         return t;
                       })});
  }
  for (const C& c : commits) {
    Row cr;
    cr.pattern = std::string("commit:") + c.name;
    cr.family = "commit";
    cr.size = tether_bench::sizeName(Size::small);
    cr.dir = "commit";
    cr.impl = "tether";
    cr.us = c.us;
    cr.note = "tether_type_commit, host, best of 20";
    B.report(cr, 0);
  }
  tether_type_free(&d);
  tether_type_free(&f);
  tether_type_free(&st);
}

// "small,large" -> sizes (in that order); false on an unknown name or an empty list.
bool parseSizes(const std::string& list, std::vector<Size>* out) {
  out->clear();
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string w = list.substr(at, comma - at);
    if (w == "small") out->push_back(Size::small);
    else if (w == "large") out->push_back(Size::large);
    else return false;
    at = comma + 1;
  }
  return !out->empty();
}

}  // namespace

int main(int argc, char** argv) {
  const char* json = nullptr;
  int scale = 1, reps = 20;
  int64_t dtBlocks = 20000;
  std::string onlyArg, sizeList = "small,large";
  std::vector<Size> sizes;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!std::strcmp(argv[i], "--scale") && i + 1 < argc) scale = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--sizes") && i + 1 < argc) sizeList = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--dt-blocks") && i + 1 < argc) dtBlocks = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) onlyArg = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--sizes small,large] [--scale N (small size)] [--reps N] [--dt-blocks N] "
                   "[--only NAME[,NAME...]] [--json FILE]\n",
                   argv[0]);
      return 2;
    }
  }
  const std::vector<tether_bench::Recipe> recipes = tether_bench::recipes();
  // --only: a comma-separated list of pattern names, small_struct or commit (the latency rows); empty: everything.
  std::vector<std::string> only;
  for (size_t at = 0; at < onlyArg.size();) {
    const size_t comma = std::min(onlyArg.find(',', at), onlyArg.size());
    only.push_back(onlyArg.substr(at, comma - at));
    at = comma + 1;
  }
  auto named = [&](const std::string& n) {
    return only.empty() || std::find(only.begin(), only.end(), n) != only.end();
  };
  const bool latency = named("small_struct") || named("commit");
  bool known = true;
  for (const std::string& n : only)
    known = known && (n == "small_struct" || n == "commit" ||
                      std::any_of(recipes.begin(), recipes.end(),
                                  [&](const tether_bench::Recipe& r) { return r.name == n; }));
  if (!parseSizes(sizeList, &sizes) || scale < 1 || reps < 1 || dtBlocks < 1 || !known) {
    std::fprintf(stderr, "tether_bench_datatype: bad argument (--sizes takes small and/or large; --only pattern "
                         "names, small_struct or commit; numbers >= 1)\n");
    return 2;
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "tether_bench_datatype: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  Bench B;
  B.T.reps = reps;
  B.dtBlocks = dtBlocks;
  B.grid = prop.multiProcessorCount * 8;
  CK(cudaStreamCreateWithFlags(&B.T.st, cudaStreamNonBlocking));
  CK(cudaEventCreate(&B.T.e0));
  CK(cudaEventCreate(&B.T.e1));
  CK(cudaMalloc(&B.bad, sizeof(unsigned long long)));

  // Calibration (or its cached table) first, so no row pays for it.
  char calib[2048] = "";
  const auto c0 = std::chrono::steady_clock::now();
  DTK(tether_type_gpu_calibrate(0, calib, sizeof calib));
  const double calibMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();

  // This GPU's device-to-device copy bandwidth (read + write bytes per second), the roofline's basis.
  {
    const size_t big = size_t{1} << 30;
    void *a, *b;
    CK(cudaMalloc(&a, big));
    CK(cudaMalloc(&b, big));
    const double us = B.T.bestUs([&] { CK(cudaMemcpyAsync(b, a, big, cudaMemcpyDeviceToDevice, B.T.st)); });
    B.copyBw = 2.0 * big / (us * 1e-6);
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  // The elem tuning experiment's knob, when set (the library reads it once), is part of the record.
  const char* items = std::getenv("TETHER_DT_ELEM_ITEMS");
  const std::string env = items ? std::string("TETHER_DT_ELEM_ITEMS=") + items : std::string();
  std::printf("# tether_bench_datatype: %s, sizes %s (small at scale %d), best of %d; device copy %.0f GB/s "
              "(read+write); cost model ready in %.0f ms%s%s\n# %s",
              prop.name, sizeList.c_str(), scale, reps, B.copyBw / 1e9, calibMs, items ? "; " : "", env.c_str(), calib);
  std::printf("%-16s %-5s %-6s %-10s %12s %10s %11s %9s %7s  %s\n", "pattern", "size", "dir", "impl", "packed B",
              "mean blk", "us", "GB/s", "%roof", "note");

  const auto t0 = std::chrono::steady_clock::now();
  for (const tether_bench::Recipe& rc : recipes) {
    if (!named(rc.name)) continue;
    for (Size z : sizes) {
      Pattern p;
      try {
        p = rc.make(z, scale);
      } catch (const std::exception& e) {
        std::printf("  FAIL %s %s: pattern construction: %s\n", rc.name.c_str(), tether_bench::sizeName(z), e.what());
        ++B.failures;
        continue;
      }
      B.run(p, z);
      tether_bench::freePattern(p);
    }
  }
  if (latency && std::find(sizes.begin(), sizes.end(), Size::small) != sizes.end()) latencyRows(B);
  std::printf("# %zu rows in %.0f s\n", B.rows.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  if (json) {
    FILE* out = std::fopen(json, "w");
    if (!out) {
      std::perror(json);
      return 2;
    }
    const std::string date = tether_bench::utcDate();
    std::string command;  // the exact command line, for the record (JSON-escaped)
    for (int i = 0; i < argc; ++i) {
      if (i) command += ' ';
      for (const char* ch = argv[i]; *ch; ++ch) {
        if (*ch == '"' || *ch == '\\') command += '\\';
        command += *ch;
      }
    }
    std::fprintf(out, "{\"run\":\"tether_bench_datatype\",\"device\":\"%s\",\"date\":\"%s\",\"command\":\"%s\","
                 "\"sizes\":\"%s\",\"scale\":%d,\"copy_gbs\":%.1f,\"env\":\"%s\"}\n", prop.name, date.c_str(),
                 command.c_str(), sizeList.c_str(), scale, B.copyBw / 1e9, env.c_str());
    for (const Row& r : B.rows)
      std::fprintf(out,
                   "{\"pattern\":\"%s\",\"family\":\"%s\",\"size\":\"%s\",\"dir\":\"%s\",\"impl\":\"%s\","
                   "\"packed\":%lld,\"blocks\":%lld,\"mean_block\":%.2f,\"us\":%.3f,\"gbs\":%.2f,"
                   "\"pct_roofline\":%.1f,\"note\":\"%s\"}\n",
                   r.pattern.c_str(), r.family.c_str(), r.size.c_str(), r.dir.c_str(), r.impl.c_str(),
                   static_cast<long long>(r.packed), static_cast<long long>(r.blocks), r.meanBlock, r.us, r.gbs,
                   r.pctRoof, r.note.c_str());
    std::fclose(out);
  }
  if (B.failures) std::printf("FAIL: %d checks failed\n", B.failures);
  return B.failures ? 1 : 0;
}
