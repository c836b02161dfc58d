// Proxy: rings and the proxy thread of the device API (contracts in core/proxy.h, slot protocol in tether.h). Ring
// descriptors are decoded into the operation record by decodeProxyDesc, checked by checkProxyDesc and the World-side
// (PE, segment, offset) checks here, then run by runOp, the host calls' execution (core/op.h).
#include "core/proxy.h"

#include <chrono>
#include <cstring>

#include "base/log.h"
#include "core/op.h"
#include "core/world.h"

namespace tether {
namespace {

constexpr uint64_t kFree = 0, kPosted = 1, kDone = 2;  // low two bits of a slot's seq (tether.h)
constexpr int kSpinPolls = 2000, kYieldPolls = 4000;
// Between descriptors, the providers are progressed every kSpinProgress polls while spinning and every kYieldProgress
// yields (a UCX progress over TCP is a system call: more often costs oversubscribed PEs the CPU they wait for).
constexpr int kSpinProgress = 64, kYieldProgress = 16;
constexpr auto kIdleSleep = std::chrono::microseconds(50);

}  // namespace

Status Proxy::checkSlots(int64_t slots) {
  if (slots < 2 || slots > (int64_t{1} << 20) || (slots & (slots - 1)) != 0)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "TETHER_PROXY_SLOTS=%lld: expected a power of two in [2, 1048576]",
                static_cast<long long>(slots));
  return Status::ok();
}

Status Proxy::create(World& world, int64_t slots, std::unique_ptr<Proxy>* out) {
  TETHER_TRY(checkSlots(slots));
  std::unique_ptr<Proxy> p(new Proxy(world));
  p->slots_ = static_cast<uint64_t>(slots);
  TETHER_TRY(SiblingPaths::create(world, "device API proxy", &p->paths_));
  p->gpu_ = p->paths_->gpu();
  *out = std::move(p);
  return Status::ok();
}

Proxy::~Proxy() { TETHER_WARN_ON_FAIL(stop()); }

Status Proxy::ring(bool forGpu, const std::vector<ProxyWindow>& windows, ProxyRingView* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_.load()) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "device API proxy: already stopped (finalize)");
  std::unique_ptr<Ring>& slot = rings_[forGpu ? 1 : 0];
  if (!slot) {
    std::unique_ptr<Ring> r(new Ring());
    r->gpu = forGpu;
    const size_t ringBytes = slots_ * sizeof(tether_proxy_desc_t);
    if (forGpu) {
      if (!gpu_) TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "device API proxy: a GPU ring needs this PE's GPU");
      void *host = nullptr, *dev = nullptr, *ticket = nullptr;
      TETHER_TRY(gpu_->allocHostMapped(ringBytes + sizeof(tether_proxy_state_t), &host, &dev)
                     .withContext("device API proxy ring"));
      TETHER_TRY(gpu_->allocDevice(sizeof(uint64_t), &ticket).withContext("device API proxy ticket"));
      TETHER_TRY(gpu_->memset(ticket, 0, sizeof(uint64_t)).withContext("device API proxy ticket"));
      r->slots = static_cast<tether_proxy_desc_t*>(host);
      r->state = reinterpret_cast<tether_proxy_state_t*>(static_cast<char*>(host) + ringBytes);
      r->view.ring = static_cast<tether_proxy_desc_t*>(dev);
      r->view.state = reinterpret_cast<tether_proxy_state_t*>(static_cast<char*>(dev) + ringBytes);
      r->view.ticket = static_cast<uint64_t*>(ticket);
    } else {
      r->hostSlots.assign(slots_, tether_proxy_desc_t{});
      r->slots = r->view.ring = r->hostSlots.data();
      r->state = r->view.state = &r->hostState;
      r->view.ticket = &r->hostTicket;
    }
    r->view.slots = slots_;
    for (uint64_t i = 0; i < slots_; ++i) __atomic_store_n(&r->slots[i].seq, i << 2 | kFree, __ATOMIC_RELEASE);
    order_[nRings_.load()] = r.get();
    slot = std::move(r);
    nRings_.fetch_add(1, std::memory_order_release);  // publishes the ring to the thread
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    TETHER_LOG_INFO(LogSys::Core, "device API proxy: %s ring of %llu descriptors", forGpu ? "GPU" : "CPU",
                    static_cast<unsigned long long>(slots_));
  }
  slot->windows = windows;
  *out = slot->view;
  return Status::ok();
}

Status Proxy::drain(double timeoutSeconds) {
  for (int i = 0; i < nRings_.load(std::memory_order_acquire); ++i) {
    Ring& r = *order_[i];
    uint64_t taken = 0;
    if (r.gpu)
      TETHER_TRY(gpu_->copy(&taken, r.view.ticket, sizeof taken, false).withContext("device API proxy: quiet"));
    else
      taken = __atomic_load_n(r.view.ticket, __ATOMIC_ACQUIRE);
    const auto start = std::chrono::steady_clock::now();
    uint64_t done;
    for (int n = 0; (done = __atomic_load_n(&r.state->done, __ATOMIC_ACQUIRE)) < taken; ++n) {
      if (timeoutSeconds > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeoutSeconds)
        TETHER_FAIL(TETHER_ERR_TIMEOUT, "device API proxy: quiet timed out after %.1f s (TETHER_TIMEOUT): %s ring at "
                    "ticket %llu of %llu (a producer took a ticket and never posted, or the proxy is stuck)",
                    timeoutSeconds, r.gpu ? "GPU" : "CPU", static_cast<unsigned long long>(done),
                    static_cast<unsigned long long>(taken));
      world_.paths().progress();
      if (n > 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    const uint64_t err = __atomic_load_n(&r.state->error, __ATOMIC_ACQUIRE);
    if (err)
      TETHER_FAIL(TETHER_ERR_INTERNAL, "device API proxy: descriptor %llu of the %s ring could not be executed (the "
                  "log has the reason)", static_cast<unsigned long long>(err - 1), r.gpu ? "GPU" : "CPU");
  }
  return Status::ok();
}

Status Proxy::stop() {
  if (stop_.exchange(true)) return Status::ok();
  if (thread_.joinable()) thread_.join();
  return Status::ok();
}

void Proxy::run() {
  int idle = 0;
  for (;;) {
    const bool stopping = stop_.load(std::memory_order_acquire);
    bool any = false;
    const int n = nRings_.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) any = serve(*order_[i]) || any;
    if (any) {
      world_.paths().progress();  // the providers behind the paths the descriptors use (nbi writes in flight)
      idle = 0;
      continue;
    }
    if (stopping) return;  // everything posted before stop() was executed (and completed: serve closes batches)
    ++idle;
    // Between descriptors the providers are progressed too (every kSpinProgress polls while spinning, every
    // kYieldProgress yields): a peer's request to this PE (a network signal, a get) is served by this thread while
    // the PE's own threads wait outside tether (and the UCX progress thread stays asleep while this one progresses).
    // Without it a put_signal ping-pong over UCX across two namespaces took 0.6-0.75 ms one-way on 4xH100.
    if (idle < kSpinPolls) {
      if (idle % kSpinProgress == 0) world_.paths().idleProgress();
      continue;
    }
    if (idle < kYieldPolls) {
      if (idle % kYieldProgress == 0) world_.paths().idleProgress();
      std::this_thread::yield();
    } else {
      // Idle: progress once per pause (a PE whose threads are outside tether still serves its peers), not on every
      // poll. The pause ends early when the network provider has events (TETHER_UCX_WAKEUP): a peer's request is
      // served when it arrives. idleProgress: not while the PE's own threads progress (they would contend for the
      // worker lock).
      world_.paths().idleProgress();
      world_.paths().idleWait(kIdleSleep);  // wakes early when a network provider has events
    }
  }
}

void Proxy::fail(Ring& r, uint64_t ticket, const Status& s, const char* what) {
  TETHER_LOG_ERROR(LogSys::Core, "device API proxy, %s ring, %s: %s", r.gpu ? "GPU" : "CPU", what,
                   s.message().c_str());
  uint64_t none = 0;
  __atomic_compare_exchange_n(&r.state->error, &none, ticket + 1, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

void Proxy::closeBatch(Ring& r) {
  Batch& b = r.batch;
  if (!b.writes) return;
  b.writes = 0;
  Status s = b.ops->quiet(b.ctx);
  if (!s.isOk())
    fail(r, b.first, s, strprintf("completing the nbi writes from ticket %llu on", static_cast<unsigned long long>(
                                  b.first)).c_str());
}

void Proxy::complete(Ring& r) {
  closeBatch(r);
  // The writes' effects (memcpy'd bytes included, which may be weakly ordered stores) before done.
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  r.published = r.next;
  __atomic_store_n(&r.state->done, r.next, __ATOMIC_RELEASE);
}

bool Proxy::serve(Ring& r) {
  const uint64_t t = r.next;
  tether_proxy_desc_t* slot = &r.slots[t & (slots_ - 1)];
  if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != (t << 2 | kPosted)) {
    if (r.published == t) return false;
    complete(r);  // nothing further posted: complete the open batch and publish it
    return true;
  }
  tether_proxy_desc_t d;
  std::memcpy(&d, slot, sizeof d);  // the producer does not touch the slot until we hand it back
  uint64_t result = 0;
  ProxyOp pt;
  decodeProxyDesc(d, &result, &pt);
  Status s = execute(r, t, pt, &result);
  if (!s.isOk())
    fail(r, t, s, strprintf("ticket %llu (op word 0x%x, PE %d, offset 0x%llx, %llu bytes)",
                            static_cast<unsigned long long>(t), d.op, d.pe, static_cast<unsigned long long>(d.offset),
                            static_cast<unsigned long long>(d.size)).c_str());
  // Hand the slot back: the effects of a blocking descriptor (memcpy'd bytes included) before the slot (an nbi
  // write's effects are ordered before done by complete()).
  const bool nbiWrite = s.isOk() && (pt.code == TETHER_PROXY_OP_PUT || pt.code == TETHER_PROXY_OP_PUT_INLINE);
  if (!nbiWrite) __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (pt.fetch) {
    __atomic_store_n(&slot->result, result, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->seq, t << 2 | kDone, __ATOMIC_RELEASE);  // the producer reads result and frees the slot
  } else {
    __atomic_store_n(&slot->seq, (t + slots_) << 2 | kFree, __ATOMIC_RELEASE);
  }
  r.next = t + 1;
  if (!r.batch.writes) {  // no nbi write open: every ticket <= t is complete
    r.published = r.next;
    __atomic_store_n(&r.state->done, r.next, __ATOMIC_RELEASE);
  } else if (r.batch.writes >= kBatch) {
    complete(r);
  }
  return true;
}

Status Proxy::target(const char* what, int pe, unsigned kind, uint64_t offset, uint64_t n, SymRef* ref) {
  TETHER_TRY(world_.checkPe(what, pe));
  if (kind >= static_cast<unsigned>(kSegKinds))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown segment kind %u", what, kind);
  const SegKind k = static_cast<SegKind>(kind);
  const uint64_t bytes = world_.heap().segmentBytes(k);
  if (offset > bytes || n > bytes - offset)
    TETHER_FAIL(TETHER_ERR_NOT_SYMMETRIC, "%s: offset 0x%llx + %llu bytes lies outside the %s segment (%llu bytes)",
                what, static_cast<unsigned long long>(offset), static_cast<unsigned long long>(n), segKindName(k),
                static_cast<unsigned long long>(bytes));
  if (!world_.path(pe, k).ops)
    TETHER_FAIL(TETHER_ERR_UNREACHABLE, "%s: no host path to the %s segment of PE %d", what, segKindName(k), pe);
  *ref = SymRef{k, offset};
  return Status::ok();
}

const void* Proxy::localAddr(Ring& r, uint64_t addr) {
  if (!r.gpu) return reinterpret_cast<const void*>(addr);
  std::lock_guard<std::mutex> lock(mu_);
  for (const ProxyWindow& w : r.windows)
    if (addr - w.handleAddr < w.bytes) return reinterpret_cast<const void*>(addr - w.handleAddr + w.cpuAddr);
  return reinterpret_cast<const void*>(addr);
}

Status Proxy::execute(Ring& r, uint64_t t, ProxyOp& d, uint64_t* result) {
  const char* what = "device API proxy";
  Op& op = d.op;
  SymRef ref{SegKind::Host, 0}, sigRef{SegKind::Host, 0};
  TETHER_TRY(checkProxyDesc(what, d));
  TETHER_TRY(target(what, op.pe, d.segKind, d.offset, d.n, &ref));
  const unsigned code = d.code;
  if (code < TETHER_PROXY_OP_PUT || code > TETHER_PROXY_OP_PUT_SIGNAL)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown operation %u", what, code);
  // The local buffer, in the ring's address space, as this thread addresses it.
  const bool needLocal = code == TETHER_PROXY_OP_PUT || code == TETHER_PROXY_OP_GET || code == TETHER_PROXY_OP_PUT_SIGNAL;
  if (needLocal && op.nbytes) {
    const void* local = code == TETHER_PROXY_OP_GET ? op.dest : op.src;
    if (!local) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: local buffer is NULL", what);
    const void* cpu = localAddr(r, reinterpret_cast<uint64_t>(local));
    if (code == TETHER_PROXY_OP_GET)
      op.dest = const_cast<void*>(cpu);
    else
      op.src = cpu;
  }
  if (code == TETHER_PROXY_OP_AMO && d.amoCode >= TETHER_AMO_COUNT)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown AMO %u", what, d.amoCode);
  if (code == TETHER_PROXY_OP_SIGNAL) sigRef = ref;
  if (code == TETHER_PROXY_OP_PUT_SIGNAL) {
    if (d.sigOffset % 8) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: signal word at offset 0x%llx is not 8-byte aligned",
                                     what, static_cast<unsigned long long>(d.sigOffset));
    TETHER_TRY(target(what, op.pe, d.sigKind, d.sigOffset, 8, &sigRef));
  }
  return issue(r, t, d, ref, sigRef, result);
}

Status Proxy::issue(Ring& r, uint64_t t, ProxyOp& d, const SymRef& ref, const SymRef& sigRef, uint64_t* result) {
  Op& op = d.op;
  Batch& b = r.batch;
  const SegPath& p = world_.path(op.pe, ref.kind);
  void* const pctx = paths_->ctx(p);
  const bool sameCtx = b.writes && b.ops == p.ops && b.ctx == pctx;
  if (d.code == TETHER_PROXY_OP_PUT || d.code == TETHER_PROXY_OP_PUT_INLINE) {
    if (b.writes && !sameCtx) closeBatch(r);  // another context: the batch lands first
    if (b.writes && (b.pe == op.pe || b.pe == kManyPes)) TETHER_TRY(p.ops->fence(pctx));  // per-target order
    if (d.code == TETHER_PROXY_OP_PUT_INLINE) {  // the transport may read the bytes after the nbi put returns
      b.inlineBytes[b.writes] = op.value;
      op.kind = Op::Put;
      op.src = &b.inlineBytes[b.writes];
    }
    if (!b.writes) {
      b.ops = p.ops;
      b.ctx = pctx;
      b.pe = op.pe;
      b.first = t;
    } else if (b.pe != op.pe) {
      b.pe = kManyPes;
    }
    ++b.writes;
    return runOp(world_, op, ref, sigRef, true, result, paths_.get());
  }
  // A signal ordered by the transport after the batch's writes (same context, the only PE written to); anything else
  // waits for the batch to complete.
  bool ordered = false;
  if ((d.code == TETHER_PROXY_OP_SIGNAL || d.code == TETHER_PROXY_OP_PUT_SIGNAL) && sameCtx && b.pe == op.pe) {
    const SegPath& sp = world_.path(op.pe, sigRef.kind);
    ordered = sp.ops == b.ops && paths_->ctx(sp) == b.ctx;
  }
  if (!ordered) closeBatch(r);
  return runOp(world_, op, ref, sigRef, false, result, paths_.get());
}

}  // namespace tether
