// The stream fuzz: stream-ordered operations under random sequences on several streams per PE (issue #6), against a
// model. Run by tests/mp/mp_stream_fuzz.cpp (the CPU emulation of the stream-op layer, HOST objects) and
// tests/gpu/gpu_stream_fuzz.cu (CUDA streams, DEVICE or HOST objects) through an Env. Every round, each of a PE's
// kStreams streams gets:
//   phase A, nothing that waits: puts, p (1/2/4/8 bytes), gets, typed puts and gets (a vector of bytes on the region
//     side; where the Env allows), put_signal and signal (SET and ADD), atomics (every
//     tether_amo_t on 64-bit words, fetched values kept), quiet and fence, bad calls (must fail at the call, naming
//     it, and enqueue nothing), and runs of these grouped into a prepared set posted with patched offset and signal;
//   then, on one stream per PE (its choice), the round's collective, the same on every PE: barrier_all, sync_all, a
//     prepared BARRIER_ALL, team sync, a team data collective on the stream (fuzz::CollKind: allreduce, broadcast,
//     reduce, allgather, reduce_scatter, alltoall; in place where the kind has a form) on one of fuzz::FuzzTeams by
//     its members, or none; after a barrier or sync, a snapshot of what each PE's collective stream put here;
//   phase B: waits on this PE's signal words with every comparison (and on counter words), alone or in a prepared set
//     with a get, each wait that implies the signaller's last signal followed by a snapshot (a get from this PE) of
//     the bytes that stream put here before that signal (bytes it put after it may or may not have landed: skipped).
// Each stream writes only its own region, signal word and counter word on every PE, so what each PE's memory holds
// is defined. Every PE draws every stream's lists from PE 0's seed, so a model (per target PE and writer stream: the
// region's bytes, the signal word, the counter word) gives what every get, fetched value and snapshot must hold and, at
// the round's end (streams synchronized, a host barrier), every byte and word of this PE's objects. Deadlock-free by
// construction: phase A never waits and phase B waits only for values phase A reaches; a stuck wait ends in the
// emulation's timeout (a stream error) or the GPU test's ctest TIMEOUT. On real CUDA streams (Env::phaseAFirst) each PE
// synchronizes its phase A before it enqueues the collective and phase B: a memop wait of a process can hold back that
// process's work on its other streams (they share hardware queues), so a wait for this PE's own phase A -- or for a
// peer whose phase A is held back so -- could never pass. Prints its seed (TETHER_TEST_SEED repeats a run).
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "mp_util.h"
#include "tether/datatype.h"

namespace stream_fuzz {

using fuzz::amoApply;
using fuzz::amoFetches;
using fuzz::Draw;
using fuzz::mix;

// Where the fuzz runs: its streams, its local buffers, the segment of its symmetric objects.
class Env {
 public:
  virtual ~Env() = default;
  virtual void* createStream() = 0;
  virtual void destroyStream(void* stream) = 0;
  // Waits for everything enqueued on the stream; "" or the stream's error.
  virtual std::string synchronize(void* stream) = 0;
  // Local memory a stream operation may use (put sources, get destinations, fetched values), and its release.
  virtual unsigned char* allocLocal(size_t bytes) = 0;
  virtual void freeLocal(unsigned char* p) = 0;
  // Copies bytes into (toLocal) or out of (fromLocal) local memory while no stream uses it (memcpy: host memory).
  // bytes may be 0, with a null host pointer.
  virtual void toLocal(void* local, const void* host, size_t bytes) {
    if (bytes) std::memcpy(local, host, bytes);
  }
  virtual void fromLocal(void* host, const void* local, size_t bytes) {
    if (bytes) std::memcpy(host, local, bytes);
  }
  tether_seg_kind_t seg = TETHER_SEG_HOST;  // of the symmetric objects
  bool phaseAFirst = false;                 // synchronize phase A before the collective and phase B (see above)
  bool typedOps = false;                    // typed put/get on the stream with these local buffers (datatype.h)
};

constexpr int kStreams = 3;
constexpr size_t kRegion = 256;  // bytes of each writer stream's region on each PE
constexpr size_t kPad = 512;     // slack before every local arena: a prepared set's patched offset moves below it
constexpr size_t kMaxOps = 12;   // phase A operations of a stream in a round, at most
constexpr size_t kMaxWaits = 4;  // phase B waits of a stream in a round, at most

enum class Kind { Put, P, Get, PutSignal, Signal, Amo, Quiet, Fence, PutTyped, GetTyped, Bad };
const char* kindName(Kind k) {
  static const char* names[] = {"put", "p", "get", "put_signal", "signal", "atomic", "quiet", "fence", "typed put",
                                "typed get", "bad call"};
  return names[static_cast<int>(k)];
}

struct Op {
  Kind kind = Kind::Quiet;
  int pe = 0;
  size_t off = 0, len = 0;  // in the region (put, get, p: len = width)
  uint64_t value = 0;       // p: the value; signals: the value written (SET) or added (ADD); atomics: the operand
  uint64_t cond = 0;        // compare_swap
  tether_signal_op_t sigOp = TETHER_SIGNAL_SET;
  tether_amo_t amo = TETHER_AMO_FETCH;
  int bad = 0;              // which bad call
  int set = -1;             // the prepared set it is posted in (-1: a single call)
  size_t local = 0;         // put: source offset; get: snapshot offset; fetching atomic: fetched index
  uint64_t old = 0;         // atomics: the counter's value before (what a fetching one returns)
  // typed put/get: the region side is dc instances of vector(vc, vb, vs) of bytes at off (len: the packed bytes);
  // the local side len contiguous bytes
  size_t vc = 0, vb = 0, vs = 0, dc = 0;
  // The region offset of packed byte j.
  size_t typedAt(size_t j) const {
    const size_t per = vc * vb, ext = (vc - 1) * vs + vb, i = j / per, x = (j % per) / vb, y = j % vb;
    return off + i * ext + x * vs + y;
  }
};

struct Wait {
  int q = 0, t = 0;         // the writer stream whose signal (or counter) word it waits on
  bool counter = false;
  tether_cmp_t cmp = TETHER_CMP_EQ;
  uint64_t value = 0;
  bool snapshot = false;    // followed by a get of the writer's region here (the wait implies its last signal)
  bool inSet = false;       // the wait and the get as one prepared set
  size_t local = 0;         // snapshot offset
};

// What one writer stream (q, t) did to one target PE's memory, as the model knows it.
struct Cell {
  unsigned char bytes[kRegion] = {};
  bool dirty[kRegion] = {};  // written after the stream's last signal to this PE in the round
  uint64_t sig = 0, sigAtStart = 0, cnt = 0;
  bool signalled = false;    // signalled this round
};

// What a local buffer of this PE must hold at the round's end.
struct Expect {
  std::string what;
  size_t at = 0;                       // offset in the snapshot arena
  std::vector<unsigned char> bytes;
  std::vector<bool> skip;              // bytes that may hold either value (empty: none)
  bool fetched = false;                // instead: fetched value `at` must be `value`
  uint64_t value = 0;
};


// The round's collective: a barrier or sync, or from Data on a data collective of fuzz::CollKind (in its order).
enum class Coll { None, BarrierAll, SyncAll, SetBarrier, TeamSync, Data,
                  Count = Data + static_cast<int>(fuzz::CollKind::Count) };
const char* collName(Coll c) {
  static const char* names[] = {"none", "barrier_all", "sync_all", "prepared barrier", "team_sync"};
  return c < Coll::Data ? names[static_cast<int>(c)]
                        : fuzz::collKindName(static_cast<fuzz::CollKind>(static_cast<int>(c) - int(Coll::Data)));
}
bool collOrders(Coll c) { return c == Coll::BarrierAll || c == Coll::SyncAll || c == Coll::SetBarrier; }

class StreamFuzz {
 public:
  StreamFuzz(tether_t w, Env& env, uint64_t seed)
      : w_(w), env_(env), seed_(seed), me_(tether_my_pe(w)), n_(tether_n_pes(w)),
        cells_(static_cast<size_t>(n_) * n_ * kStreams),
        objs_(w, env.seg, static_cast<size_t>(n_) * kStreams, kRegion), data_(objs_.data), sig_(objs_.sig),
        cnt_(objs_.cnt), coll_(w, env.seg, seed), teams_(w) {
    MP_CHECK(tether_type_basic(TETHER_BASIC_BYTE, &byte_) == TETHER_SUCCESS);
    // Local arenas at their largest (kMaxOps puts or gets, kMaxWaits snapshots, one per PE after the collective).
    srcCap_ = kPad + kMaxOps * kRegion;
    snapCap_ = kPad + (kMaxOps + kMaxWaits + static_cast<size_t>(n_)) * kRegion;
    for (int t = 0; t < kStreams; ++t) {
      streams_[t] = env_.createStream();
      src_[t] = env_.allocLocal(srcCap_);
      snap_[t] = env_.allocLocal(snapCap_);
      fetched_[t] = reinterpret_cast<uint64_t*>(env_.allocLocal(kMaxOps * 8));
    }
  }
  ~StreamFuzz() {
    for (int t = 0; t < kStreams; ++t) {
      env_.destroyStream(streams_[t]);
      env_.freeLocal(src_[t]);
      env_.freeLocal(snap_[t]);
      env_.freeLocal(reinterpret_cast<unsigned char*>(fetched_[t]));
    }
    MP_CHECK(tether_type_free(&byte_) == TETHER_SUCCESS);
  }

  void run(int rounds) {
    for (int r = 0; r < rounds; ++r) round(r);
    if (me_ == 0) {
      std::printf("stream fuzz: %d PEs x %d streams, %d rounds: ok;", n_, kStreams, rounds);
      for (int k = 0; k <= static_cast<int>(Kind::Bad); ++k) std::printf(" %s %d,", kindName(static_cast<Kind>(k)),
                                                                          counts_[k]);
      std::printf(" in prepared sets %d, waits %d (snapshots %d), collectives", inSets_, waits_, snapshots_);
      for (int c = 1; c < static_cast<int>(Coll::Count); ++c)
        std::printf(" %s %d", collName(static_cast<Coll>(c)), colls_[c]);
      std::printf("\n");
    }
  }

 private:
  // A zeroed symmetric object in env_.seg (zeroed by a put to this PE: any segment; the caller's barrier follows).
  Cell& cell(int target, int q, int t) {
    return cells_[(static_cast<size_t>(target) * n_ + q) * kStreams + static_cast<size_t>(t)];
  }
  size_t writer(int q, int t) const { return static_cast<size_t>(q) * kStreams + static_cast<size_t>(t); }
  unsigned char* region(int q, int t) { return data_ + writer(q, t) * kRegion; }
  static unsigned char srcByte(uint64_t key, size_t k) { return static_cast<unsigned char>(mix(key + k) >> 56); }


  // Phase A of writer (q, t) in round r, applied to the model as it is drawn.
  // exp (this PE's own streams only): what each get and fetching atomic must return, the model at that point.
  std::vector<Op> drawPhaseA(int r, int q, int t, size_t* srcBytes, size_t* snapBytes, size_t* fetched, int* sets,
                             std::vector<Expect>* exp) {
    Draw d(seed_ ^ (static_cast<uint64_t>(r) << 32) ^ (writer(q, t) << 8) ^ 0xa);
    std::vector<Op> ops(d.below(kMaxOps + 1));
    int set = -1;
    for (auto& op : ops) {
      const size_t pick = d.below(100);
      op.kind = pick < 22 ? Kind::Put : pick < 32 ? Kind::P : pick < 42 ? Kind::Get : pick < 60 ? Kind::PutSignal
              : pick < 70 ? Kind::Signal : pick < 86 ? Kind::Amo : pick < 90 ? Kind::Quiet : pick < 93 ? Kind::Fence
                                                                                              : Kind::Bad;
      if ((op.kind == Kind::Put || op.kind == Kind::Get) && env_.typedOps && d.chance(30))
        op.kind = op.kind == Kind::Put ? Kind::PutTyped : Kind::GetTyped;
      op.pe = static_cast<int>(d.below(static_cast<size_t>(n_)));
      Cell& c = cell(op.pe, q, t);
      const bool groupable = op.kind == Kind::Put || op.kind == Kind::Get || op.kind == Kind::PutSignal ||
                             op.kind == Kind::Signal || op.kind == Kind::Quiet;
      if (!groupable) set = -1;
      else if (set >= 0 && d.chance(70)) op.set = set;
      else if (d.chance(25)) op.set = set = (*sets)++;
      else set = -1;
      switch (op.kind) {
        case Kind::Put: case Kind::PutSignal: case Kind::Get:
          op.off = d.below(kRegion);
          op.len = d.chance(5) ? 0 : 1 + d.below(kRegion - op.off);
          if (op.kind == Kind::Get) {
            op.local = *snapBytes;
            *snapBytes += op.len;
            if (exp)
              exp->push_back({where(op, exp->size()), kPad + op.local,
                              std::vector<unsigned char>(c.bytes + op.off, c.bytes + op.off + op.len), {}});
            break;
          }
          op.local = *srcBytes;
          *srcBytes += op.len;
          for (size_t k = 0; k < op.len; ++k) {
            c.bytes[op.off + k] = srcByte(opKey(r, q, t, op.local), k);
            c.dirty[op.off + k] = true;
          }
          if (op.kind == Kind::PutSignal) signal(d, c, op);
          break;
        case Kind::P: {
          const size_t width = size_t{1} << d.below(4);
          op.len = width;
          op.off = d.below(kRegion / width) * width;
          op.value = d.next();
          for (size_t k = 0; k < width; ++k) {
            c.bytes[op.off + k] = static_cast<unsigned char>(op.value >> (8 * k));
            c.dirty[op.off + k] = true;
          }
          break;
        }
        case Kind::Signal: signal(d, c, op); break;
        case Kind::Amo:
          op.amo = static_cast<tether_amo_t>(d.below(TETHER_AMO_COUNT));
          op.value = d.chance(50) ? d.below(16) : d.next();
          op.cond = d.chance(50) ? c.cnt : d.next();
          op.cond = op.amo == TETHER_AMO_COMPARE_SWAP ? op.cond : 0;
          op.value = op.amo == TETHER_AMO_FETCH || op.amo == TETHER_AMO_INC || op.amo == TETHER_AMO_FETCH_INC
                         ? 0 : op.value;
          op.old = c.cnt;
          if (amoFetches(op.amo)) {
            op.local = (*fetched)++;
            if (exp) {
              Expect e{where(op, exp->size()) + " fetched", op.local, {}, {}, true, op.old};
              exp->push_back(e);
            }
          }
          c.cnt = amoApply(op.amo, c.cnt, op.value, op.cond);
          break;
        case Kind::PutTyped: case Kind::GetTyped: {
          op.off = d.below(kRegion / 2);
          op.vb = 1 + d.below(8);
          op.vs = op.vb + d.below(9);
          op.vc = 1 + d.below(8);
          op.dc = 1 + d.below(2);
          while (op.off + op.dc * ((op.vc - 1) * op.vs + op.vb) > kRegion) (op.vc > 1 ? op.vc : op.dc)--;
          op.len = op.vc * op.vb * op.dc;
          if (op.kind == Kind::GetTyped) {
            op.local = *snapBytes;
            *snapBytes += op.len;
            if (exp) {
              Expect e{where(op, exp->size()), kPad + op.local, std::vector<unsigned char>(op.len), {}};
              for (size_t j = 0; j < op.len; ++j) e.bytes[j] = c.bytes[op.typedAt(j)];
              exp->push_back(std::move(e));
            }
            break;
          }
          op.local = *srcBytes;
          *srcBytes += op.len;
          for (size_t j = 0; j < op.len; ++j) {
            c.bytes[op.typedAt(j)] = srcByte(opKey(r, q, t, op.local), j);
            c.dirty[op.typedAt(j)] = true;
          }
          break;
        }
        case Kind::Bad: op.bad = static_cast<int>(d.below(8)); break;
        default: break;
      }
    }
    return ops;
  }
  // A signal of op to cell c: SET to a larger value or ADD a small one (every signal word only grows); the bytes put
  // before it are now visible with it.
  static void signal(Draw& d, Cell& c, Op& op) {
    op.sigOp = d.chance(50) ? TETHER_SIGNAL_SET : TETHER_SIGNAL_ADD;
    const uint64_t delta = 1 + d.below(5);
    op.value = op.sigOp == TETHER_SIGNAL_SET ? c.sig + delta : delta;
    c.sig += delta;
    c.signalled = true;
    std::fill(std::begin(c.dirty), std::end(c.dirty), false);
  }
  static std::string where(const Op& op, size_t k) {
    return std::string(kindName(op.kind)) + " (expectation " + std::to_string(k) + ", pe " + std::to_string(op.pe) +
           (op.set >= 0 ? ", in a prepared set" : "") + ")";
  }
  uint64_t opKey(int r, int q, int t, size_t local) const {
    return seed_ ^ (static_cast<uint64_t>(r) << 40) ^ (writer(q, t) << 20) ^ local;
  }

  void round(int r) {
    for (auto& c : cells_) {
      c.sigAtStart = c.sig;
      c.signalled = false;
      std::fill(std::begin(c.dirty), std::end(c.dirty), false);
    }
    // Every writer's phase A (the model); this PE keeps its own streams' lists.
    std::vector<Op> mine[kStreams];
    size_t srcBytes[kStreams] = {}, snapBytes[kStreams] = {}, fetched[kStreams] = {};
    std::vector<Expect> expects[kStreams];
    for (int q = 0; q < n_; ++q)
      for (int t = 0; t < kStreams; ++t) {
        size_t sb = 0, nb = 0, fb = 0;
        int ns = 0;
        std::vector<Op> ops = drawPhaseA(r, q, t, &sb, &nb, &fb, &ns, q == me_ ? &expects[t] : nullptr);
        if (q != me_) continue;
        mine[t] = std::move(ops);
        srcBytes[t] = sb;
        snapBytes[t] = nb;
        fetched[t] = fb;
      }
    // The round's collective and each PE's stream for it, the same draw everywhere.
    Draw dc(seed_ ^ (static_cast<uint64_t>(r) << 32) ^ 0xc011);
    const Coll coll = static_cast<Coll>(dc.below(static_cast<size_t>(Coll::Count)));
    std::vector<int>& collStream = collStream_;
    collStream.assign(static_cast<size_t>(n_), 0);
    for (auto& s : collStream) s = static_cast<int>(dc.below(kStreams));
    const fuzz::CollObjects::Call call = fuzz::drawCollCall(
        dc, static_cast<fuzz::CollKind>(coll >= Coll::Data ? static_cast<int>(coll) - int(Coll::Data) : 0), teams_,
        n_);
    // This PE's phase B: waits on its own words (the model is complete now).
    std::vector<Wait> waits[kStreams];
    for (int t = 0; t < kStreams; ++t) {
      Draw d(seed_ ^ (static_cast<uint64_t>(r) << 32) ^ (writer(me_, t) << 8) ^ 0xb);
      waits[t].resize(d.below(kMaxWaits + 1));
      for (auto& wt : waits[t]) drawWait(d, wt, &snapBytes[t]);
    }
    const int cs = collStream[static_cast<size_t>(me_)];
    const size_t barrierSnap = snapBytes[cs];
    if (collOrders(coll)) snapBytes[cs] += static_cast<size_t>(n_) * kRegion;

    // Local arenas (pad first): sources filled, snapshots and fetched values poisoned (through host copies: the Env's
    // local memory may be GPU memory); the collective's objects.
    unsigned char* const* src = src_;
    unsigned char* const* snap = snap_;
    uint64_t* const* fetchedOut = fetched_;
    for (int t = 0; t < kStreams; ++t) {
      MP_CHECK(kPad + srcBytes[t] <= srcCap_ && kPad + snapBytes[t] <= snapCap_ && fetched[t] <= kMaxOps);
      std::vector<unsigned char>& hs = hostSnap_[t];
      hs.assign(kPad + snapBytes[t], 0xee);
      env_.toLocal(snap[t], hs.data(), hs.size());
      hostFetched_[t].assign(fetched[t], 0xdeadbeefull);
      env_.toLocal(fetchedOut[t], hostFetched_[t].data(), fetched[t] * 8);
      std::vector<unsigned char> hsrc(kPad + srcBytes[t], 0);
      for (const Op& op : mine[t])
        if (op.kind == Kind::Put || op.kind == Kind::PutSignal || op.kind == Kind::PutTyped)
          for (size_t k = 0; k < op.len; ++k) hsrc[kPad + op.local + k] = srcByte(opKey(r, me_, t, op.local), k);
      env_.toLocal(src[t], hsrc.data(), hsrc.size());
    }
    if (coll >= Coll::Data) coll_.fill(r, call);

    // Enqueue: phase A of every stream (interleaved), the collective on this PE's stream, phase B.
    std::vector<tether_op_set_t> setHandles;
    size_t next[kStreams] = {};
    Draw order(seed_ ^ (static_cast<uint64_t>(r) << 32) ^ (static_cast<uint64_t>(me_) << 8) ^ 0x0d);
    for (;;) {
      int left = 0;
      for (int t = 0; t < kStreams; ++t) left += next[t] < mine[t].size();
      if (!left) break;
      int t = static_cast<int>(order.below(kStreams));
      while (next[t] >= mine[t].size()) t = (t + 1) % kStreams;
      next[t] = enqueueA(r, t, mine[t], next[t], src[t], snap[t], fetchedOut[t], &setHandles, order);
    }
    if (env_.phaseAFirst) drain(r);
    enqueueColl(r, coll, cs, call, barrierSnap, snap[cs], &setHandles);
    for (int t = 0; t < kStreams; ++t)
      for (auto& wt : waits[t]) enqueueWait(r, t, wt, snap[t], &setHandles, order, &expects[t]);
    if (collOrders(coll))
      for (int q = 0; q < n_; ++q) {
        const Cell& c = cell(me_, q, collStream[static_cast<size_t>(q)]);
        expects[cs].push_back({"the region of PE " + std::to_string(q) + " stream " +
                                   std::to_string(collStream[static_cast<size_t>(q)]) + " after the " + collName(coll),
                               kPad + barrierSnap + static_cast<size_t>(q) * kRegion,
                               std::vector<unsigned char>(c.bytes, c.bytes + kRegion), {}});
      }

    // The round's end: streams drained, every PE's too; then every byte and word this PE owns or received.
    drain(r);
    MP_OK(tether_barrier_all(w_));
    for (auto h : setHandles) MP_OK(tether_op_set_free(h));
    for (auto& ty : types_) MP_CHECK(tether_type_free(&ty) == TETHER_SUCCESS);
    types_.clear();
    for (int t = 0; t < kStreams; ++t) {
      env_.fromLocal(hostSnap_[t].data(), snap[t], hostSnap_[t].size());
      env_.fromLocal(hostFetched_[t].data(), fetchedOut[t], hostFetched_[t].size() * 8);
    }
    check(r, expects, coll, call);
    MP_OK(tether_barrier_all(w_));  // nobody writes round r + 1 here before this PE checked round r
    colls_[static_cast<int>(coll)]++;
  }

  void drain(int r) {
    for (int t = 0; t < kStreams; ++t) {
      const std::string err = env_.synchronize(streams_[t]);
      if (!err.empty()) failAt(r, t, "stream error", err);
    }
  }

  // Draws one wait of phase B on this PE's words (the model holds the round's final values).
  void drawWait(Draw& d, Wait& wt, size_t* snapBytes) {
    wt.q = static_cast<int>(d.below(static_cast<size_t>(n_)));
    wt.t = static_cast<int>(d.below(kStreams));
    std::vector<size_t> signalled;  // mostly a writer that signalled here this round (with many PEs, few did)
    for (size_t i = 0; i < static_cast<size_t>(n_) * kStreams; ++i)
      if (cell(me_, static_cast<int>(i / kStreams), static_cast<int>(i % kStreams)).signalled) signalled.push_back(i);
    if (!signalled.empty() && d.chance(70)) {
      const size_t i = signalled[d.below(signalled.size())];
      wt.q = static_cast<int>(i / kStreams);
      wt.t = static_cast<int>(i % kStreams);
    }
    const Cell& c = cell(me_, wt.q, wt.t);
    wt.counter = d.chance(15);
    if (wt.counter) {
      wt.cmp = TETHER_CMP_EQ;  // the final value (it may pass earlier on an equal value: no snapshot)
      wt.value = c.cnt;
      return;
    }
    const uint64_t f = c.sig, f0 = c.sigAtStart;
    const size_t how = d.below(6);
    if (f > f0 && how < 3) {  // implies the last signal: a snapshot follows
      wt.cmp = how == 0 ? TETHER_CMP_GE : how == 1 ? TETHER_CMP_EQ : TETHER_CMP_GT;
      wt.value = how == 2 ? f - 1 : f;
      wt.snapshot = true;
      wt.inSet = d.chance(40);
      wt.local = *snapBytes;
      *snapBytes += kRegion;
    } else if (f > f0 && how == 3) {
      wt.cmp = TETHER_CMP_NE;  // passes at the first signal of the round
      wt.value = f0;
    } else if (how == 4) {
      wt.cmp = TETHER_CMP_LE;  // true from the start
      wt.value = f + d.below(3);
    } else {
      wt.cmp = TETHER_CMP_LT;
      wt.value = f + 1 + d.below(3);
    }
  }

  size_t enqueueA(int r, int t, const std::vector<Op>& ops, size_t i, unsigned char* src, unsigned char* snap,
                  uint64_t* fetchedOut, std::vector<tether_op_set_t>* handles, Draw& d) {
    void* s = streams_[t];
    const Op& op = ops[i];
    if (op.set >= 0) {  // the whole run of this set as one prepared set, patched
      size_t end = i;
      while (end < ops.size() && ops[end].set == op.set) ++end;
      postSet(r, t, ops, i, end, src, snap, handles, d);
      for (size_t k = i; k < end; ++k) counts_[static_cast<int>(ops[k].kind)]++, inSets_++;
      return end;
    }
    counts_[static_cast<int>(op.kind)]++;
    unsigned char* dst = region(me_, t) + op.off;
    uint64_t* sig = &sig_[writer(me_, t)];
    uint64_t* cnt = &cnt_[writer(me_, t)];
    tether_status_t st = TETHER_SUCCESS;
    const char* call = "";
    switch (op.kind) {
      case Kind::Put:
        call = "tether_putmem_on_stream";
        st = tether_putmem_on_stream(w_, dst, &src[kPad + op.local], op.len, op.pe, s);
        break;
      case Kind::PutSignal:
        call = "tether_putmem_signal_on_stream";
        st = tether_putmem_signal_on_stream(w_, dst, &src[kPad + op.local], op.len, sig, op.value, op.sigOp, op.pe,
                                            s);
        break;
      case Kind::Get:
        call = "tether_getmem_on_stream";
        st = tether_getmem_on_stream(w_, &snap[kPad + op.local], dst, op.len, op.pe, s);
        break;
      case Kind::P:
        call = "tether_p_on_stream";
        st = tether_p_on_stream(w_, dst, &op.value, op.len, op.pe, s);
        break;
      case Kind::Signal:
        call = "tether_signal_op_on_stream";
        st = tether_signal_op_on_stream(w_, sig, op.value, op.sigOp, op.pe, s);
        break;
      case Kind::Amo: {
        call = "tether_atomic_on_stream";
        uint64_t* fp = amoFetches(op.amo) ? &fetchedOut[op.local] : nullptr;
        if (op.amo == TETHER_AMO_ADD && d.chance(50)) st = tether_atomic_add_on_stream(w_, cnt, op.value, op.pe, s);
        else if (op.amo == TETHER_AMO_SET && d.chance(50))
          st = tether_atomic_set_on_stream(w_, cnt, op.value, op.pe, s);
        else if (op.amo == TETHER_AMO_FETCH_ADD && d.chance(50))
          st = tether_atomic_fetch_add_on_stream(w_, cnt, op.value, fp, op.pe, s);
        else st = tether_atomic_on_stream(w_, op.amo, TETHER_UINT64, cnt, &op.value, &op.cond, fp, op.pe, s);
        break;
      }
      case Kind::Quiet: call = "tether_quiet_on_stream"; st = tether_quiet_on_stream(w_, s); break;
      case Kind::Fence: call = "tether_fence_on_stream"; st = tether_fence_on_stream(w_, s); break;
      case Kind::PutTyped: case Kind::GetTyped: {
        tether_type_t vec = nullptr;
        if (tether_type_vector(static_cast<int64_t>(op.vc), static_cast<int64_t>(op.vb), static_cast<int64_t>(op.vs),
                               byte_, &vec) != TETHER_SUCCESS ||
            tether_type_commit(vec) != TETHER_SUCCESS)
          failAt(r, t, "tether_type_vector", tether_type_last_error());
        types_.push_back(vec);  // kept until the stream ran the transfer (freed at the round's end)
        unsigned char* at = region(me_, t) + op.off;
        const auto dc = static_cast<int64_t>(op.dc), len = static_cast<int64_t>(op.len);
        if (op.kind == Kind::PutTyped) {
          call = "tether_put_typed_on_stream";
          st = tether_put_typed_on_stream(w_, at, vec, dc, &src[kPad + op.local], byte_, len, op.pe, s);
        } else {
          call = "tether_get_typed_on_stream";
          st = tether_get_typed_on_stream(w_, &snap[kPad + op.local], byte_, len, at, vec, dc, op.pe, s);
        }
        break;
      }
      case Kind::Bad: badCall(r, t, op.bad, s); return i + 1;
    }
    if (st != TETHER_SUCCESS) failAt(r, t, call, tether_last_error());
    return i + 1;
  }

  // Ops [i, end) of stream t as one prepared set: every op shifted down by the patch's offset where flagged (the post
  // adds it back), every flagged signal value lowered by the patch's signal.
  void postSet(int r, int t, const std::vector<Op>& ops, size_t i, size_t end, unsigned char* src, unsigned char* snap,
               std::vector<tether_op_set_t>* handles, Draw& d) {
    const tether_post_patch_t patch{d.below(kPad + 1), d.next()};
    std::vector<tether_op_desc_t> desc;
    const size_t regionAt = writer(me_, t) * kRegion;  // the region's offset in data_
    for (size_t k = i; k < end; ++k) {
      const Op& op = ops[k];
      tether_op_desc_t o;
      std::memset(&o, 0, sizeof o);
      o.pe = op.pe;
      o.nbytes = op.len;
      o.sig_addr = &sig_[writer(me_, t)];
      o.sig_op = op.sigOp;
      o.signal = op.value;
      unsigned char* dst = region(me_, t) + op.off;
      const bool shift = regionAt + op.off >= patch.offset && d.chance(70);
      const size_t sh = shift ? patch.offset : 0;
      switch (op.kind) {
        case Kind::Put: o.kind = TETHER_OP_PUT; o.dest = dst - sh; o.src = &src[kPad + op.local - sh]; break;
        case Kind::PutSignal:
          o.kind = TETHER_OP_PUT_SIGNAL;
          o.dest = dst - sh;
          o.src = &src[kPad + op.local - sh];
          break;
        case Kind::Get: o.kind = TETHER_OP_GET; o.dest = &snap[kPad + op.local - sh]; o.src = dst - sh; break;
        case Kind::Signal: o.kind = TETHER_OP_SIGNAL; break;
        default: o.kind = TETHER_OP_QUIET; break;
      }
      if (shift) o.flags |= TETHER_OP_PATCH_OFFSET;
      if ((o.kind == TETHER_OP_SIGNAL || o.kind == TETHER_OP_PUT_SIGNAL) && d.chance(60)) {
        o.flags |= TETHER_OP_PATCH_SIGNAL;
        o.signal = op.value - patch.signal;  // (modulo 2^64: the post adds it back)
      }
      desc.push_back(o);
    }
    tether_op_set_t set = nullptr;
    if (tether_prepare(w_, desc.data(), desc.size(), &set) != TETHER_SUCCESS)
      failAt(r, t, "tether_prepare", tether_last_error());
    handles->push_back(set);
    if (tether_post_on_stream(set, streams_[t], &patch) != TETHER_SUCCESS)
      failAt(r, t, "tether_post_on_stream", tether_last_error());
  }

  // A call with one bad argument: fails at the call naming it; nothing is enqueued (the round's checks would see it).
  void badCall(int r, int t, int which, void* s) {
    uint64_t local[2] = {};
    unsigned char* dst = region(me_, t);
    uint64_t* sig = &sig_[writer(me_, t)];
    const uint64_t one = 1;
    tether_status_t st = TETHER_SUCCESS;
    const char* call = "";
    switch (which) {
      case 0: call = "tether_putmem_on_stream"; st = tether_putmem_on_stream(w_, dst, local, 8, n_, s); break;
      case 1: call = "tether_putmem_on_stream"; st = tether_putmem_on_stream(w_, local, dst, 8, me_, s); break;
      case 2: call = "tether_p_on_stream"; st = tether_p_on_stream(w_, dst, &one, 3, me_, s); break;
      case 3:
        call = "tether_signal_op_on_stream";
        st = tether_signal_op_on_stream(w_, reinterpret_cast<uint64_t*>(dst + 4), 1, TETHER_SIGNAL_ADD, me_, s);
        break;
      case 4:
        call = "tether_signal_wait_until_on_stream";
        st = tether_signal_wait_until_on_stream(w_, sig, static_cast<tether_cmp_t>(42), 0, s);
        break;
      case 5:
        call = "tether_atomic_on_stream";
        st = tether_atomic_on_stream(w_, TETHER_AMO_COUNT, TETHER_UINT64, sig, &one, &one, local, me_, s);
        break;
      case 6:
        call = "tether_getmem_on_stream";
        st = tether_getmem_on_stream(w_, local, dst, size_t{1} << 40, me_, s);
        break;
      default:
        call = "tether_putmem_signal_on_stream";
        st = tether_putmem_signal_on_stream(w_, dst, local, 8, sig, 1, static_cast<tether_signal_op_t>(9), me_, s);
        break;
    }
    if (st == TETHER_SUCCESS) failAt(r, t, call, "a bad call succeeded");
    if (std::strstr(tether_last_error(), call) == nullptr)
      failAt(r, t, call, std::string("the error does not name the call: ") + tether_last_error());
  }

  // The round's data collective on stream s (sums of int64), this PE a member of its team.
  tether_status_t dataColl(const fuzz::CollObjects::Call& call, void* s) {
    const tether_team_t team = call.team;
    int64_t *d = nullptr, *src = nullptr;
    coll_.args(call, &d, &src);
    const size_t n = call.count;
    const tether_dtype_t i64 = TETHER_INT64;
    switch (call.kind) {
      case fuzz::CollKind::Allreduce: return tether_team_allreduce_on_stream(team, d, src, n, i64, TETHER_RED_SUM, s);
      case fuzz::CollKind::Broadcast: return tether_team_broadcast_on_stream(team, d, src, n, i64, call.teamRoot(), s);
      case fuzz::CollKind::Reduce:
        return tether_team_reduce_on_stream(team, d, src, n, i64, TETHER_RED_SUM, call.teamRoot(), s);
      case fuzz::CollKind::Allgather: return tether_team_allgather_on_stream(team, d, src, n, i64, s);
      case fuzz::CollKind::ReduceScatter:
        return tether_team_reduce_scatter_on_stream(team, d, src, n, i64, TETHER_RED_SUM, s);
      default: return tether_team_alltoall_on_stream(team, d, src, n, i64, s);
    }
  }

  void enqueueColl(int r, Coll coll, int cs, const fuzz::CollObjects::Call& call, size_t barrierSnap,
                   unsigned char* snap, std::vector<tether_op_set_t>* handles) {
    void* s = streams_[cs];
    tether_team_t world = tether_team_world(w_);
    tether_status_t st = TETHER_SUCCESS;
    switch (coll) {
      case Coll::None: return;
      case Coll::BarrierAll: st = tether_barrier_all_on_stream(w_, s); break;
      case Coll::SyncAll: st = tether_sync_all_on_stream(w_, s); break;
      case Coll::SetBarrier: {
        tether_op_desc_t o;
        std::memset(&o, 0, sizeof o);
        o.kind = TETHER_OP_BARRIER_ALL;
        tether_op_set_t set = nullptr;
        st = tether_prepare(w_, &o, 1, &set);
        if (st == TETHER_SUCCESS) {
          handles->push_back(set);
          st = tether_post_on_stream(set, s, nullptr);
        }
        break;
      }
      case Coll::TeamSync: st = tether_team_sync_on_stream(world, s); break;
      default:
        if (!call.member()) return;  // its objects stay as they are
        st = dataColl(call, s);
        break;
    }
    if (st != TETHER_SUCCESS) failAt(r, cs, collName(coll), tether_last_error());
    if (collOrders(coll))  // everything each PE's collective stream did before it is here now: a snapshot of each
      for (int q = 0; q < n_; ++q)
        if (tether_getmem_on_stream(w_, &snap[kPad + barrierSnap + static_cast<size_t>(q) * kRegion],
                                    region(q, collStream_[static_cast<size_t>(q)]), kRegion, me_, s) != TETHER_SUCCESS)
          failAt(r, cs, "tether_getmem_on_stream (after the collective)", tether_last_error());
  }

  void enqueueWait(int r, int t, const Wait& wt, unsigned char* snap,
                   std::vector<tether_op_set_t>* handles, Draw& d, std::vector<Expect>* expects) {
    void* s = streams_[t];
    waits_++;
    const size_t wi = writer(wt.q, wt.t);
    if (wt.counter) {
      if (tether_wait_until_on_stream(w_, &cnt_[wi], TETHER_UINT64, TETHER_CMP_EQ, &wt.value, s) != TETHER_SUCCESS)
        failAt(r, t, "tether_wait_until_on_stream", tether_last_error());
      return;
    }
    unsigned char* from = region(wt.q, wt.t);
    if (!wt.inSet) {
      if (tether_signal_wait_until_on_stream(w_, &sig_[wi], wt.cmp, wt.value, s) != TETHER_SUCCESS)
        failAt(r, t, "tether_signal_wait_until_on_stream", tether_last_error());
      if (wt.snapshot &&
          tether_getmem_on_stream(w_, &snap[kPad + wt.local], from, kRegion, me_, s) != TETHER_SUCCESS)
        failAt(r, t, "tether_getmem_on_stream (after a wait)", tether_last_error());
    } else {
      const tether_post_patch_t patch{d.below(std::min(kPad, wi * kRegion) + 1), d.next()};
      tether_op_desc_t o[2];
      std::memset(o, 0, sizeof o);
      o[0].kind = TETHER_OP_SIGNAL_WAIT;
      o[0].sig_addr = &sig_[wi];
      o[0].cmp = wt.cmp;
      o[0].signal = wt.value - patch.signal;
      o[0].flags = TETHER_OP_PATCH_SIGNAL;
      o[1].kind = TETHER_OP_GET;
      o[1].pe = me_;
      o[1].dest = &snap[kPad + wt.local - patch.offset];
      o[1].src = from - patch.offset;
      o[1].nbytes = kRegion;
      o[1].flags = TETHER_OP_PATCH_OFFSET;
      tether_op_set_t set = nullptr;
      if (tether_prepare(w_, o, 2, &set) != TETHER_SUCCESS)
        failAt(r, t, "tether_prepare (a wait)", tether_last_error());
      handles->push_back(set);
      if (tether_post_on_stream(set, s, &patch) != TETHER_SUCCESS)
        failAt(r, t, "tether_post_on_stream (a wait)", tether_last_error());
    }
    if (wt.snapshot) {
      snapshots_++;
      const Cell& c = cell(me_, wt.q, wt.t);
      expects->push_back({std::string("the region of PE ") + std::to_string(wt.q) + " stream " + std::to_string(wt.t) +
                              " after a wait (" + std::to_string(wt.cmp) + ", " + std::to_string(wt.value) + ")" +
                              (wt.inSet ? " in a prepared set" : ""),
                          kPad + wt.local, std::vector<unsigned char>(c.bytes, c.bytes + kRegion),
                          std::vector<bool>(c.dirty, c.dirty + kRegion)});
    }
  }

  // Checks the round; the local arenas' bytes and fetched values are in hostSnap_ and hostFetched_.
  void check(int r, const std::vector<Expect>* expects, Coll coll, const fuzz::CollObjects::Call& call) {
    // This PE's objects, read by gets from itself (any segment).
    std::vector<unsigned char> data;
    std::vector<uint64_t> sig, cnt;
    objs_.read(&data, &sig, &cnt);
    for (int q = 0; q < n_; ++q)
      for (int t = 0; t < kStreams; ++t) {
        const Cell& c = cell(me_, q, t);
        const unsigned char* got = &data[writer(q, t) * kRegion];
        for (size_t k = 0; k < kRegion; ++k)
          if (got[k] != c.bytes[k])
            failAt(r, t, "the round's end", "byte " + std::to_string(k) + " of the region of PE " + std::to_string(q) +
                                                " stream " + std::to_string(t) + " is " + std::to_string(got[k]) +
                                                ", expected " + std::to_string(c.bytes[k]));
        if (sig[writer(q, t)] != c.sig || cnt[writer(q, t)] != c.cnt)
          failAt(r, t, "the round's end", "PE " + std::to_string(q) + " stream " + std::to_string(t) + ": signal " +
                                              std::to_string(sig[writer(q, t)]) + " (expected " +
                                              std::to_string(c.sig) + "), counter " +
                                              std::to_string(cnt[writer(q, t)]) + " (expected " +
                                              std::to_string(c.cnt) + ")");
      }
    for (int t = 0; t < kStreams; ++t)
      for (const Expect& e : expects[t]) {
        if (e.fetched) {
          const uint64_t got = hostFetched_[t][e.at];
          if (got != e.value)
            failAt(r, t, e.what, "fetched " + std::to_string(got) + ", expected " + std::to_string(e.value));
          continue;
        }
        for (size_t k = 0; k < e.bytes.size(); ++k)
          if ((e.skip.empty() || !e.skip[k]) && hostSnap_[t][e.at + k] != e.bytes[k])
            failAt(r, t, e.what, "byte " + std::to_string(k) + " is " + std::to_string(hostSnap_[t][e.at + k]) +
                                     ", expected " + std::to_string(e.bytes[k]));
      }
    if (coll >= Coll::Data) {
      const std::string bad = coll_.check(r, call);
      if (!bad.empty()) failAt(r, -1, collName(coll), bad);
    }
  }

  [[noreturn]] void failAt(int r, int t, const std::string& what, const std::string& why) {
    std::fprintf(stderr, "FAIL PE %d (seed %" PRIu64 ") round %d stream %d: %s: %s\n", me_, seed_, r, t, what.c_str(),
                 why.c_str());
    std::exit(1);
  }

  tether_t w_;
  Env& env_;
  const uint64_t seed_;
  const int me_, n_;
  std::vector<Cell> cells_;
  std::vector<int> collStream_;  // the round's stream of each PE for the collective
  tether_type_t byte_ = nullptr;           // TETHER_BASIC_BYTE
  std::vector<tether_type_t> types_;       // the round's typed transfers' types
  void* streams_[kStreams] = {};
  unsigned char* src_[kStreams] = {};
  unsigned char* snap_[kStreams] = {};
  uint64_t* fetched_[kStreams] = {};
  std::vector<unsigned char> hostSnap_[kStreams];  // the round's snapshot arena, as copied in and out
  std::vector<uint64_t> hostFetched_[kStreams];    // the round's fetched values, as copied in and out
  size_t srcCap_ = 0, snapCap_ = 0;
  fuzz::WriterObjects objs_;
  unsigned char* const data_;
  uint64_t* const sig_;
  uint64_t* const cnt_;
  fuzz::CollObjects coll_;
  fuzz::FuzzTeams teams_;
  int counts_[static_cast<int>(Kind::Bad) + 1] = {};
  int colls_[static_cast<int>(Coll::Count)] = {};
  int inSets_ = 0, waits_ = 0, snapshots_ = 0;
};

// The fuzz on env after tether_init (every PE): PE 0's seed (printed as `name seed N`) on all; STREAM_FUZZ_ROUNDS
// rounds (default `rounds`).
inline void run(tether_t w, Env& env, const char* name, int rounds) {
  StreamFuzz f(w, env, fuzz::agreedSeed(w, name));
  f.run(fuzz::rounds("STREAM_FUZZ_ROUNDS", rounds));
}

}  // namespace stream_fuzz
