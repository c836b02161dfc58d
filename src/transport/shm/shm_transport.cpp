// shm transport: the target's host segment is mapped into this process, so every operation is a CPU load, store or
// atomic on RemoteAddr::ptr. Cross-process atomicity comes from the hardware: lock-free atomics on shared memory.
// The shm provider serves the self and shm paths (HOST and STATIC segments of same-host PEs) when this PE has no GPU
// (with a GPU, a user buffer may be device memory: the p2p provider serves those paths).
#include <atomic>
#include <cstring>

#include "transport/provider.h"
#include "transport/transport.h"

namespace tether {
namespace {

template <typename U>
uint64_t amoOn(U* p, const AmoArgs& a) {
  const U v = static_cast<U>(a.value), c = static_cast<U>(a.cond);
  switch (a.op) {
    case TETHER_AMO_FETCH: return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    case TETHER_AMO_SET: __atomic_store_n(p, v, __ATOMIC_SEQ_CST); return 0;
    case TETHER_AMO_SWAP: return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
    case TETHER_AMO_COMPARE_SWAP: {
      U expected = c;
      __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      return expected;  // the old value either way
    }
    case TETHER_AMO_INC:
    case TETHER_AMO_FETCH_INC: return __atomic_fetch_add(p, U(1), __ATOMIC_SEQ_CST);
    case TETHER_AMO_ADD:
    case TETHER_AMO_FETCH_ADD: return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    case TETHER_AMO_AND:
    case TETHER_AMO_FETCH_AND: return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
    case TETHER_AMO_OR:
    case TETHER_AMO_FETCH_OR: return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
    case TETHER_AMO_XOR:
    case TETHER_AMO_FETCH_XOR: return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
    case TETHER_AMO_COUNT:
    case TETHER_AMO_MAX_ENUM_: break;
  }
  return 0;
}

Status shmPut(void*, int, const RemoteAddr& dst, const void* src, size_t n, bool) {
  std::memcpy(dst.ptr, src, n);
  return Status::ok();
}

Status shmGet(void*, int, void* dst, const RemoteAddr& src, size_t n, bool) {
  std::memcpy(dst, src.ptr, n);
  return Status::ok();
}

Status shmAmo(void*, int, const RemoteAddr& dst, const AmoArgs& a, uint64_t* fetched) {
  uint64_t old = a.width == 4 ? amoOn(reinterpret_cast<uint32_t*>(dst.ptr), a)
                              : amoOn(reinterpret_cast<uint64_t*>(dst.ptr), a);
  if (fetched) *fetched = old;
  return Status::ok();
}

Status shmSignal(void*, int, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op) {
  // Full fence first: large memcpy may use weakly ordered (non-temporal) stores, which a release store alone does
  // not order on x86.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto* p = reinterpret_cast<uint64_t*>(sig.ptr);
  if (op == TETHER_SIGNAL_SET)
    __atomic_store_n(p, value, __ATOMIC_RELEASE);
  else
    __atomic_fetch_add(p, value, __ATOMIC_RELEASE);
  return Status::ok();
}

Status shmFence(void*) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return Status::ok();
}

const TransportOps kShmOps = {
    "shm", kCapLoadStore | kCapAtomics | kCapHostSegment | kCapSignalCompletesPuts,
    shmPut, shmGet, shmAmo, shmSignal, shmFence, shmFence,
};

}  // namespace

const TransportOps& shmTransportOps() { return kShmOps; }

namespace {

constexpr int kShmCost = 20;

class ShmProvider final : public Provider {
 public:
  const char* name() const override { return "shm"; }
  Status probe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
               ProbeResult* out) const override {
    PathChoice c;
    TETHER_TRY(choosePath(topo, me, peer, kind, ov, &c));
    *out = ProbeResult{false, kShmCost, c.kind, c.reason};
    if (c.kind != PathKind::Self && c.kind != PathKind::Shm) return Status::ok();
    if (topo.pes[static_cast<size_t>(me)].gpu.present) {
      out->reason = strprintf("PE %d has a GPU: its buffers may be GPU memory (the p2p provider serves this path)", me);
      return Status::ok();
    }
    out->available = true;
    return Status::ok();
  }
  Status connect(const Topology&, int, int, SegKind, Connection* out) override {
    *out = Connection{&shmTransportOps(), nullptr};
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Provider> makeShmProvider() { return std::unique_ptr<Provider>(new ShmProvider); }

}  // namespace tether
