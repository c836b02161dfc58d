// GPU backend of the datatype engine (issue #7): stream-ordered pack/unpack of a canonical form (canonical.h) with one
// kernel launch, or a direct copy (cudaMemcpy2D/3DAsync) where the layout is one, chosen by a calibrated cost model.
//
// Schemes (docs/datatype.md "GPU engine"):
//  - thread: lane per contiguous block (blocks of up to ~64 B): each lane locates its first block with a few
//    divisions and two binary searches, then walks forward 32 blocks at a time by carries (no divisions); packed
//    writes of a warp are contiguous. Units of `width` bytes (16/8/4/2/1, also limited by the buffers' alignment).
//  - warp: warp per (block, 2 KiB chunk) item, lanes split the chunk in 16-byte units: long blocks.
//  - elem: thread per unit, its address by 32-bit index math (divisions by precomputed multipliers) over the pack as
//    one strided block of up to 6 dimensions, or through a table of item offsets of one instance (indexed and struct
//    types): no search, every warp access to the packed side coalesced. Packs of < 2^31 units (gpu_map.h).
//  - copy2d / copy3d: one cudaMemcpy2DAsync / cudaMemcpy3DAsync when the whole pack is a pitched 2-D / 3-D array
//    (one piece of <= 1 / exactly 2 dimensions, uniform over repetitions and instances, whole rows).
//  - batch: one cudaMemcpyBatchAsync of the fragment's memory runs (copy engines, no kernel), for packs of at most
//    kBatchMaxRuns runs on a stream other than the legacy default stream (the API refuses that one).
//  - host: both buffers in pageable host memory: the host reference, after the stream's earlier work.
// Every pack is one launch (or one copy) whatever the type: struct and indexed types included.
//
// Cost model: t(scheme) = launch_s + packed_bytes / bw_s(mean block bytes), bw_s interpolated (log-log) from a table
// measured once per device by calibrate() on synthetic vectors (140 ms on an H200), kept for the process and in a file
// (TETHER_DT_CALIBRATION, default $XDG_CACHE_HOME/tether or ~/.cache/tether, one file per GPU UUID) so later processes
// skip the measurement. A scheme is forced per type handle (GpuCache::scheme, tether_type_set_gpu_scheme) or for the
// process by TETHER_DT_SCHEME=thread|warp|copy2d|copy3d|elem, read once at the first pack (an inapplicable one fails).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "base/status.h"
#include "datatype/canonical.h"

namespace tether::dt {

enum class Scheme : int { Auto = 0, Host, Thread, Warp, Copy2D, Copy3D, Elem, Batch };
const char* schemeName(Scheme s);
// Scheme by name ("auto", "host", "thread", "warp", "copy2d", "copy3d", "elem", "batch"); false if unknown.
bool parseScheme(const char* name, Scheme* out);

// Device copy of one canonical form's metadata, for one GPU (made on first GPU use, cached on the type handle).
class GpuMeta {
 public:
  virtual ~GpuMeta() = default;
};
// What a type handle keeps for the GPU engine.
struct GpuCache {
  std::mutex mu;
  std::shared_ptr<GpuMeta> meta;
  std::atomic<int> scheme{0};  // a Scheme forced for this handle (tether_type_set_gpu_scheme); Auto: none
};

struct GpuPackRequest {
  const Canonical* c = nullptr;
  int64_t count = 0;
  const void* src = nullptr;  // pack: the user buffer; unpack: the packed bytes
  void* dst = nullptr;        // pack: the packed bytes; unpack: the user buffer
  int64_t packedOffset = 0;   // fragment [packedOffset, packedOffset + len) of count * size packed bytes
  int64_t len = 0;
  bool unpack = false;
  void* stream = nullptr;     // cudaStream_t; nullptr: the legacy default stream
  Scheme force = Scheme::Auto;  // Auto: the handle's forced scheme, else TETHER_DT_SCHEME, else the cost model
  int device = -1;              // >= 0: make this GPU (ordinal) current on the calling thread first
};

// Enqueues the pack/unpack on the stream (pageable host buffers: completes before returning). *used: the scheme.
// Fails with TETHER_ERR_UNSUPPORTED when this build has no CUDA or no GPU is visible.
Status gpuPack(const GpuPackRequest& r, GpuCache* cache, Scheme* used);
// Waits until the work enqueued on the stream (nullptr: the legacy default stream) is complete; device as in
// GpuPackRequest. Fails with TETHER_ERR_CUDA (naming the CUDA error) or TETHER_ERR_UNSUPPORTED (no CUDA).
Status gpuSync(int device, void* stream);
// The scheme gpuPack would use for a whole pack of count instances between device buffers (for tests/benchmarks);
// forced: the handle's forced scheme (Auto: none).
Status gpuChooseScheme(const Canonical& c, int64_t count, Scheme forced, Scheme* out);
// The cost model's estimate of a whole pack (or unpack) of count instances between buffers in this GPU's memory:
// the scheme it would choose, its time, and the contiguous blocks it moves (blocks per instance x count; runs
// that abut in memory count apart). Builds the handle's metadata if no pack has yet (cache as for gpuPack).
struct GpuEstimate {
  double us = 0;
  int64_t blocks = 0;
  Scheme scheme = Scheme::Auto;
};
Status gpuEstimate(const Canonical& c, GpuCache* cache, int64_t count, int device, GpuEstimate* out);
// Stream-ordered scratch GPU memory (cudaMallocAsync / cudaFreeAsync on `stream` of GPU `device`): usable by work
// enqueued on that stream after the allocation and before the free (typed-to-typed copies on a stream stage here).
Status gpuScratchAlloc(int device, void* stream, int64_t bytes, void** out);
Status gpuScratchFree(int device, void* stream, void* p);
// Makes the engine ready on GPU `device` (-1: the current one) before any work of the program can be waiting
// (tether_init calls it): loads every pack kernel into the context, makes the engine's own streams and reads the
// cost model's table from its file, or measures it now (~140 ms on an H200, once per GPU while no file is kept).
// Under CUDA's lazy loading a kernel's first launch waits for every pending wait of the context (driver 580 on an
// H100: the launch returns, the kernel starts only once the wait has ended, bench/results/h100/
// wait_hold_2026-12-07.txt) -- a stream wait or a proxy call of this PE whose end needs this thread to go on first
// means a hang (a first typed put on a stream while another stream's put_signal waited for the proxy, gpu_stream_fuzz
// on one H100, 2026-12-07; a calibration inside the first typed call, which synchronises its own stream, under a
// stream wait: gpu_typed_under_wait with TETHER_DT_PRELOAD=0). After it no pack call makes a stream, loads a kernel,
// calibrates or calls a synchronising allocator.
// Idempotent.
Status gpuPreload(int device);
// Measures (or reloads) the cost model's table for the current GPU; force: measure even if a file exists.
// *summary (may be null): one line per scheme with the measured bandwidths.
Status gpuCalibrate(bool force, std::string* summary);

}  // namespace tether::dt
