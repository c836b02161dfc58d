// TypedRma: non-contiguous put/get of one World (tether_put_typed & co., docs/datatype.md "Non-contiguous put/get").
//
// Owns: the GPU staging buffer of typed-to-typed transfers through the GPU engine (allocated on first use in the
// World's GPU context, freed with it) and the link terms measured per PE for the route cost model (core/typed_route.h).
// Uses the World it belongs to for everything else: argument checks, paths, the contiguous put/get/quiet of the
// Staged route, the stream-op layer of the stream forms, the GPU context and TETHER_DT_RMA.
// Who calls it: the C API (core/api.cpp) through World::typed(). Implementation: core/rma_typed.cpp.
// Thread-safety: calls may come from several threads; the staging buffer and the link table are used under one mutex
//   (one GPU-staged transfer or link probe at a time).
// Lifetime: a member of World, made with it; holds no resource the World's GPU context does not free.
//
// dest (put) / src (get) is symmetric: the true extent of its count instances must lie in one symmetric segment.
// count * size must match on both sides. Blocking and nbi: complete on return (allowed for nbi). OnStream: enqueued
// on `stream` (stream order; complete when the stream reaches it), for the routes a stream can run (GPU kernels on
// GPU-addressable memory, or the host reference in a stream host call); others fail. route(): checks and the route
// choice only (tether_typed_route); *route gets its name, nothing moves.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "core/gpu_stages.h"
#include "core/typed_route.h"

struct tether_type_s;  // a datatype handle (tether/datatype.h)

namespace tether {

class World;
struct SegPath;
struct RemoteAddr;

class TypedRma {
 public:
  enum class Mode { Blocking, Nbi, OnStream, Route };
  explicit TypedRma(World& world) : w_(world) {}
  TypedRma(const TypedRma&) = delete;
  TypedRma& operator=(const TypedRma&) = delete;

  Status put(const char* call, void* dest, tether_type_s* destType, int64_t destCount, const void* src,
             tether_type_s* srcType, int64_t srcCount, int pe, Mode mode, void* stream = nullptr);
  Status get(const char* call, void* dest, tether_type_s* destType, int64_t destCount, const void* src,
             tether_type_s* srcType, int64_t srcCount, int pe, Mode mode, void* stream = nullptr);
  Status route(const char* call, bool isPut, void* dest, tether_type_s* destType, int64_t destCount, const void* src,
               tether_type_s* srcType, int64_t srcCount, int pe, const char** route);

 private:
  // put moves src (local) to dest (remote), get src (remote) to dest.
  Status transfer(const char* call, bool isPut, void* dest, tether_type_s* destType, int64_t destCount, void* src,
                  tether_type_s* srcType, int64_t srcCount, int pe, Mode mode, void* stream,
                  const char** route = nullptr);
  // Link terms to PE pe (TypedLink), measured on the call's remote span (mu_ held).
  Status measureLink(int pe, const SegPath& p, const RemoteAddr& spanStart, char* spanGpu, int64_t span,
                     TypedLink* out);

  World& w_;
  std::mutex mu_;
  void* gpuStage_ = nullptr;       // kGpuFragment bytes of GPU memory (mu_)
  std::map<int, TypedLink> links_;  // by PE (mu_)
  GpuStages streamStages_{size_t{1} << 20};  // one per stream-ordered staged transfer in flight (core/gpu_stages.h)
};

}  // namespace tether
