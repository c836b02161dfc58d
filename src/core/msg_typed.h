// MsgTyped: the packed side of two-sided messaging's typed messages (core/messaging.h; tether_*_typed in
// tether/msg.h): the contiguous bytes a typed message carries -- where they live (host memory for a host buffer, a GPU
// stage of this room's for a GPU buffer) -- and their pack and unpack between them and the user's layout through the
// datatype engine (the host packer, or the GPU engine with this room's cache of each type's device metadata).
//
// Contracts
//  - make() checks the type (committed), count and buffer, and returns a Typed owning the packed bytes, which the
//    message's request holds. A GPU stage is released when its Typed goes: the room outlives every Typed it made.
//  - pack(): a host-posted send's pack, complete on return -- a GPU buffer on the legacy default stream, after the
//    program's earlier work there, then settled (unless !settle: the caller settles once after several).
//  - copy(): a pack or unpack in a progress pass, while a stream or a kernel may be waiting for this very request --
//    so GPU buffers go on a non-blocking stream of this room's own (never the legacy default stream, which a waiting
//    stream may hold), synchronised before it returns.
//  - onStream(): a send's pack enqueued on a stream (the GPU engine into the stage; the host packer in a stream host
//    call that shares the packed bytes, so a request dropped after the enqueue cannot free them under it).
//  - close(): its stream goes (the owner's destroy); the type caches stay until the room goes, never per message
//    (freeing them is a cudaFree, which waits for the whole GPU, a stream's wait for a message included).
//  - It knows no World: the GPU context and the stream layer come in as Links (tests/unit's test_msg_typed drives
//    its host paths with the CPU stream emulation).
//  - Thread-safety: make, pack and onStream run outside the owner's lock (on Typeds whose requests cannot complete
//    meanwhile); copy runs in progress passes, under it; close once, at the owner's destroy. The type caches are
//    under a mutex of their own; the stages are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/status.h"
#include "core/gpu_stages.h"
#include "datatype/gpu_pack.h"
#include "tether/datatype.h"

namespace tether {

class GpuContext;
class StreamOps;
namespace dt {
struct Canonical;
}

class MsgTyped {
 public:
  // A typed message's side: the user's layout and the packed bytes.
  struct Typed {
    std::shared_ptr<const dt::Canonical> c;  // keeps the type alive (the user may free their handle at once)
    dt::GpuCache* gpu = nullptr;             // the user's buffer is GPU memory: the room's metadata of the type
    dt::Scheme force = dt::Scheme::Auto;     // the handle's forced GPU scheme (tether_type_set_gpu_scheme) at make
    int64_t count = 0;
    void* user = nullptr;
    size_t bytes = 0;                        // packed bytes
    std::shared_ptr<std::vector<char>> host;  // a host buffer's packed bytes (shared with a stream host call)
    GpuStages::Stage* stage = nullptr;        // a GPU buffer's
    bool packOnStart = false;  // a prepared send started by a kernel: packed by the progress pass that sees the start
    char* packed() const { return stage ? static_cast<char*>(stage->p) : host->data(); }
    ~Typed() {
      if (stage) stage->release();
    }
  };
  struct Links {
    GpuContext* gpu = nullptr;                     // this PE's GPU (null: none; every buffer is host memory)
    std::function<Status(StreamOps**)> streams;    // the stream layer (its first use may fail: no CUDA streams, ...)
  };

  MsgTyped() = default;
  MsgTyped(const MsgTyped&) = delete;
  MsgTyped& operator=(const MsgTyped&) = delete;
  void attach(Links links) { links_ = std::move(links); }  // before the first make

  Status make(const char* call, void* buf, int64_t count, tether_type_t type, std::unique_ptr<Typed>* out);
  Status pack(const char* call, Typed& t, bool settle = true);
  // bytes: how many packed bytes (an unpack of a shorter message unpacks what came).
  Status copy(const char* call, Typed& t, bool unpack, size_t bytes);
  Status onStream(const char* call, Typed& t, void* stream);
  void close();

 private:
  struct TypeCache {
    std::shared_ptr<const dt::Canonical> c;  // keeps the key alive
    dt::GpuCache gpu;
  };
  // The GPU engine between t's user buffer and its stage, enqueued on stream (nullptr: the legacy default stream).
  Status gpuCopy(const char* call, const Typed& t, bool unpack, size_t bytes, void* stream);

  Links links_;
  GpuStages stages_{size_t{64} << 10};
  void* stream_ = nullptr;  // copy()'s stream (GPU buffers), made on first use
  std::mutex typesMu_;
  std::map<const void*, std::unique_ptr<TypeCache>> typeCaches_;  // (typesMu_) by canonical form
};

}  // namespace tether
