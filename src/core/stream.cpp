// Stream-ordered operations (#6): compile operation descriptors (core/stream.h) into plans of stream-op layer calls
// (core/stream_ops.h) and run them on a stream. Contracts: tether.h ("Stream-ordered operations"); mechanisms:
// docs/architecture.md.
//
// Compilation, per operation: argument checks (same messages as the host calls), then the route of each target --
// DIRECT when the stream can address the target word (GPU: DEVICE segments on the p2p/self path, HOST/STATIC views
// through their registered GPU aliases; CPU emulation: HOST/STATIC views), else PROXY (TETHER_FORCE_PROXY=1, staged
// DEVICE segments, later remote PEs) through the device handle's ring. Direct data moves as copies; SET signals, p of
// 4/8 bytes, EQ/GE/GT waits and barrier rounds become memory operations, and consecutive ones are merged into one
// batch (one cuStreamBatchMemOp); the rest are single stream-op calls (kernels on CUDA).
// Running: each step is enqueued in order; per-post values are patched into a copy of the memop array.
// Barriers take one of three forms (BarrierForm, core/stream_runtime.h; StreamRuntime::barrierForm picks per call):
// memops carrying epochs chosen at the post (Epochs); on a stream being captured into a CUDA graph, where those epochs
// would repeat on every replay, memops with fixed values on two word sets, each word zeroed once its wait passed
// (Resets), or a Sync step, the world team's sync kernel, whose epoch lives in GPU memory (Sync).
#include "core/stream.h"

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <vector>

#include "base/log.h"
#include "core/dtype.h"
#include "core/op.h"
#include "core/world.h"

namespace tether {

namespace {

// Patch kinds of a memop value or a step.
constexpr unsigned kPatchOffset = TETHER_OP_PATCH_OFFSET, kPatchSignal = TETHER_OP_PATCH_SIGNAL;

struct Step {
  enum Kind { Copy, MemRun, Store, Signal, Amo, WaitCmp, Proxy, Sync } kind = Copy;
  unsigned patch = 0;       // kPatch* flags
  uint32_t barrier = 0;     // Proxy round write of barrier #barrier-1 of the plan: value = that barrier's epoch
  void* dst = nullptr;      // Copy
  const void* src = nullptr;
  size_t n = 0;
  size_t first = 0;         // MemRun: memops[first, first + n)
  void* addr = nullptr;     // Store/Signal/Amo/WaitCmp
  uint64_t value = 0;
  unsigned width = 8;
  tether_signal_op_t sigOp = TETHER_SIGNAL_SET;
  AmoArgs amo{TETHER_AMO_ADD, 8, 0, 0};
  void* fetched = nullptr;
  tether_cmp_t cmp = TETHER_CMP_EQ;
  bool isSigned = false;
  bool untimed = false;     // WaitCmp: no TETHER_TIMEOUT (Op::untimed)
  Op call;               // Proxy
};  // (Sync: the world team's sync on the stream, Plan::sync*)

struct MemPatch {
  unsigned patch = 0;    // kPatchSignal: value += patch.signal
  uint32_t barrier = 0;  // value = epoch of barrier #barrier-1 of this post (0: none)
};

struct Plan {
  std::vector<Step> steps;
  std::vector<StreamMemOp> memops;
  std::vector<MemPatch> memPatch;
  bool patched = false;   // some memop needs patching at post
  uint32_t barriers = 0;  // barriers by epochs in the plan (epochs taken per post)
  tether_device_handle_t handle{};  // for Proxy steps (the stream-op layer's address space)
  // Sync steps (barriers by the world team's sync, BarrierForm::Sync): a handle without a ring and the world team's
  // device view with it.
  tether_device_handle_t syncHandle{};
  tether_device_team_t syncTeam{};
  uint64_t viewsEpoch = 0;
};

}  // namespace

// Compiles descriptors against one World (paths, heap control blocks) and its stream-op layer.
class StreamPlanner {
 public:
  // form: what barriers compile to (BarrierForm, core/stream_runtime.h).
  StreamPlanner(World& w, StreamOps& so, const char* call, BarrierForm form = BarrierForm::Epochs)
      : w_(w), so_(so), call_(call), form_(form) {}

  Status compile(const Op* ops, size_t n, Plan* plan) {
    plan_ = plan;
    *plan = Plan();
    plan->viewsEpoch = w_.heap().viewsEpoch();
    for (size_t i = 0; i < n; ++i) TETHER_TRY(compileOne(ops[i]));
    return Status::ok();
  }

  // The stream-op layer's address of a 64-bit word of this PE's own symmetric memory (sym: as the program names it).
  Status ownWord(const void* sym, void** out) {
    SymRef ref;
    TETHER_TRY(w_.checkSymmetric(call_, "word", sym, sizeof(uint64_t), &ref));
    char* addr = nullptr;
    TETHER_TRY(route(w_.myPe(), ref, &addr));
    if (!addr)
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: this PE's word at %p is not addressable from the stream", call_, sym);
    *out = addr;
    return Status::ok();
  }

  // Checks that shifting the symmetric side of op by `offset` keeps it inside the symmetric heap (prepared sets).
  Status checkPatch(const Op& op, size_t offset) {
    if (!(op.flags & kPatchOffset) || offset == 0) return Status::ok();
    SymRef ref;
    if (op.kind == Op::Put || op.kind == Op::PutSignal)
      return w_.checkSymmetric(call_, "dest + patch offset", static_cast<char*>(op.dest) + offset, op.nbytes, &ref);
    if (op.kind == Op::Get)
      return w_.checkSymmetric(call_, "src + patch offset", static_cast<const char*>(op.src) + offset, op.nbytes,
                               &ref);
    return Status::ok();
  }

 private:
  // Address of (pe, ref) for the stream-op layer, or nullptr: through the proxy.
  Status route(int pe, SymRef ref, char** out) {
    *out = nullptr;
    const SegPath& p = w_.path(pe, ref.kind);
    if (!p.ops)
      TETHER_FAIL(TETHER_ERR_UNREACHABLE, "%s: no path to the %s segment of PE %d", call_, segKindName(ref.kind), pe);
    if (w_.forceProxy() && pe != w_.myPe()) return proxyReady(pe);
    if (so_.gpuAddresses()) {
      if (ref.kind == SegKind::Device)
        *out = p.kind == PathKind::Staged || !p.base ? nullptr : p.base + ref.offset;
      else
        *out = w_.heap().hostGpuAlias(pe, ref);
    } else {
      if (!isHostMemory(ref.kind))
        TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: the CPU stream emulation serves HOST and STATIC segments only",
                    call_);
      if ((p.ops->caps & kCapLoadStore) && p.base) *out = p.base + ref.offset;
    }
    return *out ? Status::ok() : proxyReady(pe);
  }

  // route() for a read-modify-write (AMO, ADD signal) on (pe, ref): where GPU RMWs on host memory are not atomic with
  // the CPU's (no host-native atomics: PCIe without AtomicOps), HOST and STATIC words go through the proxy, whose
  // host path uses CPU atomics, so the RMW stays atomic with the host API's and with other PEs' stream RMWs.
  // *viaRing: set when the word is reachable but diverted (the proxy step must then post to the ring: Op::viaRing).
  Status routeRmw(int pe, SymRef ref, char** out, bool* viaRing) {
    *viaRing = false;
    TETHER_TRY(route(pe, ref, out));
    if (*out && isHostMemory(ref.kind) && !so_.hostAtomics()) {
      *out = nullptr;
      *viaRing = true;
      return proxyReady(pe);
    }
    return Status::ok();
  }

  Status proxyReady(int pe) {
    if (!handleTaken_) {
      TETHER_TRY(w_.deviceHandle(so_.gpuAddresses(), &plan_->handle, true).withContext(call_));
      handleTaken_ = true;
    }
    if (!plan_->handle.proxy_ring)
      TETHER_FAIL(TETHER_ERR_UNREACHABLE, "%s: PE %d is neither addressable from the stream nor served by the proxy",
                  call_, pe);
    return Status::ok();
  }

  // Appends a memop to the current run (or starts one).
  void memop(const StreamMemOp& m, MemPatch patch = MemPatch()) {
    std::vector<Step>& steps = plan_->steps;
    if (steps.empty() || steps.back().kind != Step::MemRun) {
      Step s;
      s.kind = Step::MemRun;
      s.first = plan_->memops.size();
      s.n = 0;
      steps.push_back(s);
    }
    plan_->memops.push_back(m);
    plan_->memPatch.push_back(patch);
    plan_->patched = plan_->patched || patch.patch || patch.barrier;
    ++steps.back().n;
  }
  static StreamMemOp write(void* addr, uint64_t v, bool release, unsigned width = 8) {
    StreamMemOp m;
    m.kind = StreamMemOp::Write;
    m.addr = addr;
    m.value = v;
    m.release = release;
    m.width = static_cast<uint8_t>(width);
    return m;
  }
  static StreamMemOp wait(void* addr, StreamCond c, uint64_t v) {
    StreamMemOp m;
    m.kind = StreamMemOp::Wait;
    m.addr = addr;
    m.cond = c;
    m.value = v;
    return m;
  }
  void step(const Step& s) { plan_->steps.push_back(s); }

  // A signal on a word the stream addresses directly.
  void directSignal(uint64_t* addr, uint64_t value, tether_signal_op_t op, unsigned patch) {
    if (op == TETHER_SIGNAL_SET) {
      memop(write(addr, value, true), MemPatch{patch & kPatchSignal, 0});
      return;
    }
    Step s;
    s.kind = Step::Signal;
    s.addr = addr;
    s.value = value;
    s.sigOp = op;
    s.patch = patch & kPatchSignal;
    step(s);
  }

  void proxyStep(const Op& c, unsigned patch, uint32_t barrier = 0) {
    Step s;
    s.kind = Step::Proxy;
    s.call = c;
    s.patch = patch;
    s.barrier = barrier;
    step(s);
  }

  Status compileOne(const Op& op) {
    const int me = w_.myPe();
    switch (op.kind) {
      case Op::Put:
      case Op::PutSignal: {
        SymRef ref{SegKind::Host, 0}, sigRef{SegKind::Host, 0};
        TETHER_TRY(checkOp(w_, call_, op, &ref, &sigRef));
        char* sigAddr = nullptr;
        char* addr = nullptr;
        if (op.nbytes) TETHER_TRY(route(op.pe, ref, &addr));
        bool sigViaRing = false;
        if (op.kind == Op::PutSignal)
          TETHER_TRY(op.sigOp == TETHER_SIGNAL_ADD ? routeRmw(op.pe, sigRef, &sigAddr, &sigViaRing)
                                                   : route(op.pe, sigRef, &sigAddr));
        const bool proxied = (op.nbytes && !addr) || (op.kind == Op::PutSignal && !sigAddr);
        if (proxied) {
          Op c = op;
          c.viaRing = sigViaRing;
          proxyStep(c, op.flags);
          return Status::ok();
        }
        if (op.nbytes) {
          Step s;
          s.kind = Step::Copy;
          s.dst = addr;
          s.src = op.src;
          s.n = op.nbytes;
          s.patch = op.flags & kPatchOffset;
          step(s);
        }
        if (op.kind == Op::PutSignal)
          directSignal(reinterpret_cast<uint64_t*>(sigAddr), op.value, op.sigOp, op.flags);
        return Status::ok();
      }
      case Op::Get: {
        SymRef ref;
        TETHER_TRY(checkOp(w_, call_, op, &ref));
        if (!op.nbytes) return Status::ok();
        char* addr = nullptr;
        TETHER_TRY(route(op.pe, ref, &addr));
        if (!addr) {
          proxyStep(op, op.flags);
          return Status::ok();
        }
        Step s;
        s.kind = Step::Copy;
        s.dst = op.dest;
        s.src = addr;
        s.n = op.nbytes;
        s.patch = op.flags & kPatchOffset;
        step(s);
        return Status::ok();
      }
      case Op::P: {
        SymRef ref;
        TETHER_TRY(checkOp(w_, call_, op, &ref));
        const size_t n = op.nbytes;
        char* addr = nullptr;
        TETHER_TRY(route(op.pe, ref, &addr));
        if (!addr) {
          proxyStep(op, 0);
        } else if (n >= 4) {
          memop(write(addr, op.value, false, static_cast<unsigned>(n)));
        } else {
          Step s;
          s.kind = Step::Store;
          s.addr = addr;
          s.value = op.value;
          s.width = static_cast<unsigned>(n);
          step(s);
        }
        return Status::ok();
      }
      case Op::Signal: {
        SymRef ref;
        TETHER_TRY(checkOp(w_, call_, op, nullptr, &ref));
        char* addr = nullptr;
        bool viaRing = false;
        TETHER_TRY(op.sigOp == TETHER_SIGNAL_ADD ? routeRmw(op.pe, ref, &addr, &viaRing) : route(op.pe, ref, &addr));
        if (!addr) {
          Op c = op;
          c.viaRing = viaRing;
          proxyStep(c, op.flags & kPatchSignal);
        } else {
          directSignal(reinterpret_cast<uint64_t*>(addr), op.value, op.sigOp, op.flags);
        }
        return Status::ok();
      }
      case Op::Wait: {
        SymRef ref;
        TETHER_TRY(checkOp(w_, call_, op, &ref));
        char* addr = nullptr;
        TETHER_TRY(route(me, ref, &addr));
        if (!addr)
          TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: this PE's word at %p is not addressable from the stream", call_,
                      static_cast<void*>(op.sig));
        const unsigned patch = op.flags & kPatchSignal;
        const uint64_t top = op.isSigned ? uint64_t{INT64_MAX} : UINT64_MAX;
        // A kernel polls the word (bounded by TETHER_TIMEOUT unless op.untimed): comparisons memops lack (NE, LT,
        // LE), and spinWait.
        auto kernelWait = [&] {
          Step s;
          s.kind = Step::WaitCmp;
          s.addr = addr;
          s.cmp = op.cmp;
          s.value = op.value;
          s.isSigned = op.isSigned;
          s.patch = patch;
          s.untimed = op.spinWait && op.untimed;
          step(s);
          return Status::ok();
        };
        if (op.spinWait) return kernelWait();
        switch (op.cmp) {
          case TETHER_CMP_EQ: memop(wait(addr, StreamCond::Eq, op.value), MemPatch{patch, 0}); return Status::ok();
          case TETHER_CMP_GE: memop(wait(addr, StreamCond::Geq, op.value), MemPatch{patch, 0}); return Status::ok();
          case TETHER_CMP_GT:
            if (op.value == top && !patch)
              TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: GT 0x%llx can never hold", call_,
                          static_cast<unsigned long long>(op.value));
            memop(wait(addr, StreamCond::Geq, op.value + 1), MemPatch{patch, 0});
            return Status::ok();
          default: return kernelWait();
        }
      }
      case Op::Quiet: {
        StreamMemOp m;
        m.kind = StreamMemOp::Barrier;
        memop(m);
        return Status::ok();
      }
      case Op::Barrier: return compileBarrier(op.quietFirst);
      case Op::Amo: return compileAmo(op);
      case Op::PutRuns:
      case Op::GetRuns: break;  // internal proxy calls (core/rma_typed.cpp), never compiled from user operations
    }
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown operation kind %d", call_, static_cast<int>(op.kind));
  }

  Status compileBarrier(bool quietFirst) {
    const int n = w_.nPes();
    StreamMemOp fence;
    fence.kind = StreamMemOp::Barrier;
    if (quietFirst || n == 1) memop(fence);
    if (n == 1) return Status::ok();
    if (form_ == BarrierForm::Sync) {
      if (!syncTaken_) {
        TETHER_TRY(w_.deviceHandle(so_.gpuAddresses(), &plan_->syncHandle).withContext(call_));
        TETHER_TRY(w_.colls().deviceView(call_, w_.teams().world(), plan_->syncHandle, &plan_->syncTeam));
        syncTaken_ = true;
      }
      Step s;
      s.kind = Step::Sync;
      step(s);
      return Status::ok();
    }
    // Round words: DEVICE control block when the stream is a GPU one and every PE has a DEVICE heap, else HOST.
    const bool dev = so_.gpuAddresses() && w_.heap().device();
    if (form_ == BarrierForm::Epochs)
      return barrierRounds(dev, dev ? kDeviceStreamBarrierOffset : offsetof(ControlBlock, streamBarrier),
                           ++plan_->barriers);  // its epoch is taken per post
    // Resets: a barrier over word set 0, then one over set 1, each zeroing a word once its wait passed. A PE writes a
    // set again only one barrier later, after every PE arrived at the barrier between, which each did after zeroing
    // its words of the set; and every barrier takes both sets, so each replay of a graph starts at set 0.
    for (uint64_t set = 0; set < 2; ++set)
      TETHER_TRY(barrierRounds(dev, (dev ? kDeviceStreamResetOffset : offsetof(ControlBlock, streamReset)) +
                                        set * sizeof(tether_device_barrier_t), 0));
    return Status::ok();
  }

  // One barrier's rounds over the round words (a tether_device_barrier_t) at block of the DEVICE (dev) or HOST
  // control block. index > 0 (Epochs): writes carry the epoch of barrier #index-1 of the post and waits are GEQ it;
  // index 0 (Resets): writes store 1, waits are EQ 1 and each own word is zeroed once its wait passed.
  Status barrierRounds(bool dev, uint64_t block, uint32_t index) {
    const int n = w_.nPes(), me = w_.myPe();
    const SegKind kind = dev ? SegKind::Device : SegKind::Host;
    char* symBase = dev ? w_.heap().device()->myBase() : w_.heap().host()->myBase();
    // The device barrier's schedule (tether::device::detail::barrierRounds): up to TETHER_BARRIER_FLAT_MAX PEs one
    // round -- a store into word d - 1 of PE me + d for every d, then the waits on this PE's n - 1 words --, above it
    // dissemination (word r from PE me - 2^r, a store then a wait per round).
    const bool flat = n <= static_cast<int>(w_.config().integer("TETHER_BARRIER_FLAT_MAX"));
    auto wordOff = [&](int r) {
      return block + offsetof(tether_device_barrier_t, round) +
             static_cast<uint64_t>(r) * sizeof(tether_device_barrier_t::round[0]);
    };
    auto waitOwn = [&](int r) {
      char* mine = nullptr;
      TETHER_TRY(route(me, SymRef{kind, wordOff(r)}, &mine));
      if (!mine) TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: own barrier word not addressable from the stream", call_);
      if (index) {
        memop(wait(mine, StreamCond::Geq, 0), MemPatch{0, index});
      } else {
        memop(wait(mine, StreamCond::Eq, 1));
        memop(write(mine, 0, false));  // after the wait (memops run in order); the next set's writes release it
      }
      return Status::ok();
    };
    int round = 0;
    for (int dist = 1; dist < n; dist = flat ? dist + 1 : dist << 1, ++round) {
      if (round >= TETHER_DEVICE_MAX_ROUNDS)
        TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: more than %d barrier rounds", call_, TETHER_DEVICE_MAX_ROUNDS);
      const int to = (me + dist) % n;
      char* toAddr = nullptr;
      TETHER_TRY(route(to, SymRef{kind, wordOff(round)}, &toAddr));
      if (toAddr) {
        memop(write(toAddr, index ? 0 : 1, true), MemPatch{0, index});
      } else {
        Op c;
        c.kind = Op::Signal;
        c.pe = to;
        c.sig = reinterpret_cast<uint64_t*>(symBase + wordOff(round));
        c.sigOp = TETHER_SIGNAL_SET;
        c.value = index ? 0 : 1;
        proxyStep(c, 0, index);
      }
      if (!flat) TETHER_TRY(waitOwn(round));
    }
    for (int r = 0; flat && r < round; ++r) TETHER_TRY(waitOwn(r));
    return Status::ok();
  }

  Status compileAmo(const Op& op) {
    SymRef ref;
    TETHER_TRY(checkOp(w_, call_, op, &ref));
    char* addr = nullptr;
    bool viaRing = false;
    TETHER_TRY(routeRmw(op.pe, ref, &addr, &viaRing));
    Op c = op;
    c.fetched = amoFetches(op.amo) ? op.fetched : nullptr;
    if (!addr) {
      c.viaRing = viaRing;
      proxyStep(c, 0);
      return Status::ok();
    }
    Step s;
    s.kind = Step::Amo;
    s.addr = addr;
    s.amo = AmoArgs{op.amo, static_cast<unsigned>(op.nbytes), op.value, op.cond};
    s.fetched = c.fetched;
    step(s);
    return Status::ok();
  }

  World& w_;
  StreamOps& so_;
  const char* call_;
  Plan* plan_ = nullptr;
  bool handleTaken_ = false;
  const BarrierForm form_;
  bool syncTaken_ = false;
};

namespace {

bool hasBarrier(const Op* ops, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (ops[i].kind == Op::Barrier) return true;
  return false;
}

// Enqueues plan on stream with the per-post values (offset, signal, barrier epochs from epochBase).
Status runPlan(StreamOps& so, const Plan& plan, void* stream, size_t offset, uint64_t signal, uint64_t epochBase,
               uint64_t timeoutNs) {
  std::vector<StreamMemOp> patched;
  for (const Step& s : plan.steps) {
    const uint64_t add = (s.patch & kPatchSignal) ? signal : 0;
    const size_t off = (s.patch & kPatchOffset) ? offset : 0;
    switch (s.kind) {
      case Step::Copy:
        TETHER_TRY(so.copy(stream, static_cast<char*>(s.dst) + off, static_cast<const char*>(s.src) + off, s.n));
        break;
      case Step::MemRun: {
        const StreamMemOp* ops = &plan.memops[s.first];
        if (plan.patched) {
          patched.assign(ops, ops + s.n);
          for (size_t i = 0; i < s.n; ++i) {
            const MemPatch& p = plan.memPatch[s.first + i];
            if (p.barrier) patched[i].value = epochBase + p.barrier - 1;
            if (p.patch & kPatchSignal) patched[i].value += signal;
          }
          ops = patched.data();
        }
        TETHER_TRY(so.memOps(stream, ops, s.n));
        break;
      }
      case Step::Store: TETHER_TRY(so.store(stream, s.addr, s.value, s.width)); break;
      case Step::Signal:
        TETHER_TRY(so.signal(stream, static_cast<uint64_t*>(s.addr), s.value + add, s.sigOp));
        break;
      case Step::Amo: TETHER_TRY(so.amo(stream, s.addr, s.amo, s.fetched)); break;
      case Step::WaitCmp:
        TETHER_TRY(so.waitCmp(stream, static_cast<const uint64_t*>(s.addr), s.cmp, s.value + add, s.isSigned,
                              s.untimed ? 0 : timeoutNs));
        break;
      case Step::Proxy: {
        Op c = s.call;
        if (s.barrier) c.value = epochBase + s.barrier - 1;
        c.value += add;
        if (off) {
          if (c.kind == Op::Get)
            c.src = static_cast<const char*>(c.src) + off;
          else
            c.src = c.src ? static_cast<const char*>(c.src) + off : nullptr;
          c.dest = static_cast<char*>(c.dest) + off;
        }
        TETHER_TRY(so.proxy(stream, plan.handle, c));
        break;
      }
      case Step::Sync: TETHER_TRY(so.coll(stream, plan.syncHandle, plan.syncTeam, StreamCollCall())); break;
    }
  }
  return Status::ok();
}

}  // namespace

class OpSet {
 public:
  OpSet(World& w, std::vector<Op> descs)
      : w_(w), descs_(std::move(descs)), barriers_(hasBarrier(descs_.data(), descs_.size())) {}

  // tether_prepare: the plan with barriers by epochs (its checks report bad operations at once).
  Status prepare(StreamOps& so) {
    TETHER_TRY(build(so, BarrierForm::Epochs));
    built_[static_cast<int>(BarrierForm::Epochs)] = true;
    return Status::ok();
  }

  // The set's plan with its barriers in the given form.
  Status build(StreamOps& so, BarrierForm form) {
    StreamPlanner planner(w_, so, "tether_prepare", form);
    return planner.compile(descs_.data(), descs_.size(), &plans_[static_cast<int>(form)]);
  }

  Status post(void* stream, const tether_post_patch_t* patch) {
    const char* call = "tether_post_on_stream";
    StreamOps* so = nullptr;
    TETHER_TRY(w_.streams().ops(&so).withContext(call));
    const size_t offset = patch ? patch->offset : 0;
    const uint64_t signal = patch ? patch->signal : 0;
    StreamPlanner planner(w_, *so, call);
    for (const Op& d : descs_) TETHER_TRY(planner.checkPatch(d, offset));
    BarrierForm form = BarrierForm::Epochs;
    if (barriers_) TETHER_TRY(w_.streams().barrierForm(*so, stream, &form).withContext(call));
    std::lock_guard<std::mutex> lock(mu_);
    bool& built = built_[static_cast<int>(form)];
    Plan& plan = plans_[static_cast<int>(form)];
    if (built && plan.viewsEpoch != w_.heap().viewsEpoch()) {  // a heap grew: GPU views moved, translate again
      TETHER_LOG_DEBUG(LogSys::Core, "%s: heap views changed since tether_prepare: rebuilding the set", call);
      built = false;
    }
    if (!built) {  // (the other forms' plans: made at the first post that needs them)
      TETHER_TRY(build(*so, form).withContext(call));
      built = true;
    }
    const uint64_t epochBase = plan.barriers ? w_.streams().nextBarrierEpochs(plan.barriers) : 0;
    return runPlan(*so, plan, stream, offset, signal, epochBase, timeoutNs(w_));
  }

  static uint64_t timeoutNs(const World& w) {
    return w.timeout() > 0 ? static_cast<uint64_t>(w.timeout() * 1e9) : 0;
  }

 private:
  World& w_;
  std::vector<Op> descs_;
  const bool barriers_;  // some operation is a barrier
  std::mutex mu_;
  Plan plans_[3];  // by BarrierForm; built_: made (prepareOpSet builds the Epochs plan at once)
  bool built_[3] = {false, false, false};
};

Status enqueueOnStream(World& w, const char* call, const Op* ops, size_t n, void* stream) {
  StreamOps* so = nullptr;
  TETHER_TRY(w.streams().ops(&so).withContext(call));
  // (Only calls with a barrier ask whether the stream is being captured: the other stream operations' enqueue path
  // stays free of that query.)
  BarrierForm form = BarrierForm::Epochs;
  if (hasBarrier(ops, n)) TETHER_TRY(w.streams().barrierForm(*so, stream, &form).withContext(call));
  Plan plan;
  StreamPlanner planner(w, *so, call, form);
  TETHER_TRY(planner.compile(ops, n, &plan));
  const uint64_t epochBase = plan.barriers ? w.streams().nextBarrierEpochs(plan.barriers) : 0;
  return runPlan(*so, plan, stream, 0, 0, epochBase, OpSet::timeoutNs(w));
}

namespace {

// The stream-op layer's addresses of this PE's words (each list: n words, as the program names them).
Status ownWords(World& w, StreamOps& so, const char* call, size_t n, std::initializer_list<const void* const*> lists,
                std::vector<std::vector<void*>>* out) {
  StreamPlanner planner(w, so, call);
  for (const void* const* list : lists) {
    out->emplace_back(n);
    for (size_t i = 0; i < n; ++i) TETHER_TRY(planner.ownWord(list[i], &out->back()[i]));
  }
  return Status::ok();
}

}  // namespace

Status incrementOnStream(World& w, const char* call, uint64_t* const* words, size_t n, void* stream) {
  StreamOps* so = nullptr;
  TETHER_TRY(w.streams().ops(&so).withContext(call));
  std::vector<std::vector<void*>> a;
  TETHER_TRY(ownWords(w, *so, call, n, {reinterpret_cast<const void* const*>(words)}, &a));
  return n ? so->increment(stream, reinterpret_cast<uint64_t* const*>(a[0].data()), n).withContext(call)
           : Status::ok();
}

Status waitReachOnStream(World& w, const char* call, const uint64_t* const* reach, const uint64_t* const* target,
                         size_t n, void* stream) {
  StreamOps* so = nullptr;
  TETHER_TRY(w.streams().ops(&so).withContext(call));
  std::vector<std::vector<void*>> a;
  TETHER_TRY(ownWords(w, *so, call, n,
                      {reinterpret_cast<const void* const*>(reach), reinterpret_cast<const void* const*>(target)}, &a));
  return n ? so->waitReach(stream, reinterpret_cast<const uint64_t* const*>(a[0].data()),
                           reinterpret_cast<const uint64_t* const*>(a[1].data()), n, OpSet::timeoutNs(w))
                 .withContext(call)
           : Status::ok();
}

Status prepareOpSet(World& w, const tether_op_desc_t* ops, size_t n, OpSet** out) {
  const char* call = "tether_prepare";
  if (!out) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: set is NULL", call);
  if (n && !ops) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: ops is NULL (%zu operations)", call, n);
  std::vector<Op> descs(n);
  for (size_t i = 0; i < n; ++i) TETHER_TRY(opFromDesc(call, i, ops[i], &descs[i]));
  StreamOps* so = nullptr;
  TETHER_TRY(w.streams().ops(&so).withContext(call));
  std::unique_ptr<OpSet> set(new OpSet(w, std::move(descs)));
  TETHER_TRY(set->prepare(*so));
  *out = set.release();
  return Status::ok();
}

Status postOpSet(OpSet& set, void* stream, const tether_post_patch_t* patch) { return set.post(stream, patch); }

void destroyOpSet(OpSet* set) { delete set; }

}  // namespace tether
