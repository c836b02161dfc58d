// The device fuzz: the device API (include/tether/device.cuh, kernel-initiated) under random sequences, against a
// model. One interpreter (runRound) runs each round's op lists: compiled for the host it is a CPU "block" of CPU
// threads (tests/mp/mp_device_fuzz.cpp, CI), compiled by nvcc it is one CUDA block (tests/gpu/gpu_device_fuzz.cu).
// Each of a PE's kWriters warps is a writer; every round:
//   phase A, nothing that waits: putmem / putmem_nbi / getmem / getmem_nbi at thread or warp scope, p (1/2/4/8 B), g,
//     putmem_signal / putmem_signal_nbi (SET and ADD, thread or warp scope), signal_op, every atomic on 64-bit words
//     (fetched values kept), quiet (thread or warp scope) and fence; the writer's quiet ends it;
//   the round's collective over the block and all PEs (barrier_all, sync_all, the world team's team_sync), or over
//     the members of one of fuzz::FuzzTeams a data collective of fuzz::CollKind -- allreduce (one- or two-shot),
//     broadcast, reduce, allgather, reduce_scatter, alltoall; sums of int64, in place where the kind has a form; a
//     non-member's objects stay as they are --, or none; after a barrier or sync, warp 0 snapshots every writer's
//     region here (all complete then);
//   phase B: waits on this PE's signal words with every comparison (and counter words), each that implies the
//     writer's last signal followed by a warp-scope get of that writer's region here, a signal_fetch and a test of
//     that word; waits and tests over every writer's signal word here at once (wait_until_all/any/some,
//     test_all/any/some; a status array excludes some), their results checked against the words' final values.
// Each writer writes only its own region, signal word and counter word on every PE. Every PE draws every writer's
// lists from PE 0's seed; the model (per target PE and writer: bytes, signal, counter) gives what every get, g and
// fetched value must hold, what each snapshot holds -- the bytes a put_signal carried and those the writer quieted
// before its last signal; bytes put otherwise may or may not have landed (skipped) -- and, at the round's end, every
// byte and word of this PE's objects. A get of the writer's own bytes checks those it quieted since (others may be in
// flight: skipped). Deadlock-free: phase A never waits; phase B waits for values phase A reaches. Prints its seed
// (TETHER_TEST_SEED repeats a run).
#pragma once

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "mp_util.h"
#include "tether/device.cuh"

namespace device_fuzz {

using fuzz::amoApply;
using fuzz::amoFetches;
using fuzz::Draw;
using fuzz::mix;

namespace dev = tether::device;

constexpr int kWriters = 4;        // warps of the block, each one writer
constexpr size_t kRegion = 256;    // bytes of each writer's region on each PE
constexpr int kMaxOps = 16;        // phase A operations of a writer in a round, at most
constexpr int kMaxWaits = 4;       // phase B waits of a writer, at most
constexpr int kCollData = 4;       // Round::coll of the first data collective (then in fuzz::CollKind's order)
constexpr int kColls = kCollData + static_cast<int>(fuzz::CollKind::Count);  // Round::coll's values
inline const char* collName(int c) {
  static const char* const sync[kCollData] = {"none", "barrier_all", "sync_all", "team_sync"};
  return c < kCollData ? sync[c] : fuzz::collKindName(static_cast<fuzz::CollKind>(c - kCollData));
}

enum Kind : uint8_t { kPut, kPutNbi, kGet, kGetNbi, kP, kG, kPutSignal, kPutSignalNbi, kSignal, kAmo, kQuiet,
                      kFence, kWaitSig, kWaitCnt, kWaitMulti, kKinds };
// kWaitMulti's forms (Op::amo), over every writer's signal word on this PE with comparison GE.
enum Multi : uint8_t { kWaitAll, kWaitAny, kWaitSome, kTestAll, kTestAny, kTestSome, kMultis };
constexpr size_t kMultiMax = 64;  // writers a kWaitMulti covers at most (its status is a 64-bit mask)

// One operation of a writer (plain data: copied to the GPU).
struct Op {
  uint8_t kind = kQuiet;
  uint8_t warp = 0;     // warp scope (else thread scope: lane 0)
  uint8_t sigOp = 0;    // SignalOp
  uint8_t amo = 0;      // tether_amo_t; kWaitMulti: Multi
  uint8_t cmp = 0;      // Cmp (waits)
  uint8_t snapshot = 0; // waits: a get of the writer's region here follows
  int16_t writer = 0;   // waits: the writer (global index q * kWriters + w) whose word here it waits on
  int32_t pe = 0;
  uint32_t off = 0, len = 0;  // in the region (p/g: len = width)
  uint32_t local = 0;         // put: source offset; get/snapshot: snapshot offset; g/fetching atomic: fetched index
  uint32_t slot = 0;          // waits: the fetched index of their results (2 values)
  uint64_t value = 0, cond = 0;  // kWaitMulti: cond = the excluded writers' mask
};

// A round as the interpreter sees it (plain data, passed by value to the kernel).
struct Round {
  unsigned char* data;   // symmetric: kRegion per (PE, writer) -- region of writer (q, w) at index q * kWriters + w
  uint64_t* sig;         // symmetric: one per (PE, writer)
  uint64_t* cnt;         // symmetric: one per (PE, writer)
  const Op* ops;         // writer w's phase A: [aBegin[w], aBegin[w + 1]), phase B: [bBegin[w], bBegin[w + 1])
  int aBegin[kWriters + 1];
  int bBegin[kWriters + 1];
  unsigned char* src;    // local: writer w's sources at w * srcStride
  unsigned char* snap;   // local: writer w's snapshots at w * snapStride
  uint64_t* fetched;     // local: writer w's fetched values at w * kMaxOps * 2
  unsigned char* scratch;  // local: writer w's getmem_nbi destination at w * kRegion
  uint32_t srcStride, snapStride;
  int coll;              // 0 none, 1 barrier_all, 2 sync_all, 3 team_sync, kCollData + fuzz::CollKind: that one
  tether_device_team_t team;  // the world team's view (team_sync)
  tether_device_team_t dteam; // the data collective's team's view (this PE a member)
  int64_t* csrc;         // symmetric: the data collective's src and dest (fuzz::CollObjects::args), collCount
  int64_t* cdst;         // elements per block
  uint32_t collCount;
  int root;              // broadcast, reduce: a team PE number
  int algo;              // allreduce: ReduceAlgo
  uint32_t collSnap;     // warp 0's snapshot offset of every writer's region after the collective
  int me, npes;
};

TETHER_HD unsigned char* regionOf(const Round& r, int q, int w) {
  return r.data + (static_cast<size_t>(q) * kWriters + static_cast<size_t>(w)) * kRegion;
}

// A kWaitMulti over every writer's signal word here (GE op.value; op.cond: the excluded writers): out[0] = the count
// (all: 1 if test_all holds after the wait or test, else 0; any: 1 or 0 for SIZE_MAX), out[1] = the returned
// indices' mask.
TETHER_HD void runMulti(const dev::Handle& h, const Round& r, const Op& op, uint64_t* out) {
  const size_t n = static_cast<size_t>(r.npes) * kWriters;
  int status[kMultiMax];
  size_t idx[kMultiMax];
  for (size_t i = 0; i < n; ++i) status[i] = static_cast<int>((op.cond >> i) & 1);
  uint64_t count = 0, mask = 0;
  const dev::Cmp ge = dev::Cmp::GE;
  switch (op.amo) {
    case kWaitAll: dev::wait_until_all(h, r.sig, n, status, ge, op.value); count = 1; break;
    case kTestAll: count = dev::test_all(h, r.sig, n, status, ge, op.value); break;
    case kWaitAny: case kTestAny: {
      const size_t i = op.amo == kWaitAny ? dev::wait_until_any(h, r.sig, n, status, ge, op.value)
                                          : dev::test_any(h, r.sig, n, status, ge, op.value);
      if (i != SIZE_MAX) {
        count = 1;
        mask = i < 64 ? uint64_t{1} << i : ~uint64_t{0};
      }
      break;
    }
    default:
      count = op.amo == kWaitSome ? dev::wait_until_some(h, r.sig, n, status, ge, op.value, idx)
                                  : dev::test_some(h, r.sig, n, status, ge, op.value, idx);
      for (size_t k = 0; k < count && k < kMultiMax; ++k) mask |= idx[k] < 64 ? uint64_t{1} << idx[k] : ~uint64_t{0};
  }
  if (op.amo == kWaitAll && !dev::test_all(h, r.sig, n, status, ge, op.value)) count = 0;
  out[0] = count;
  out[1] = mask;
}

// One operation by writer w's warp (lane: its rank in the warp). Thread-scope operations run on lane 0; every
// operation ends with the warp synchronised.
TETHER_HD void runOp(const dev::Handle& h, const Round& r, int w, int lane, const Op& op) {
  using dev::Scope;
  const int me = r.me;
  unsigned char* mine = regionOf(r, me, w) + op.off;  // this writer's region (symmetric address), at op.off
  uint64_t* sig = r.sig + me * kWriters + w;
  uint64_t* cnt = r.cnt + me * kWriters + w;
  unsigned char* src = r.src + static_cast<size_t>(w) * r.srcStride + op.local;
  unsigned char* snap = r.snap + static_cast<size_t>(w) * r.snapStride + op.local;
  uint64_t* fetched = r.fetched + static_cast<size_t>(w) * kMaxOps * 2 + op.local;
  const dev::SignalOp sop = static_cast<dev::SignalOp>(op.sigOp);
  const bool lead = lane == 0;
  switch (op.kind) {
    case kPut:
      if (op.warp) dev::putmem<Scope::Warp>(h, mine, src, op.len, op.pe);
      else if (lead) dev::putmem(h, mine, src, op.len, op.pe);
      break;
    case kPutNbi:
      if (op.warp) dev::putmem_nbi<Scope::Warp>(h, mine, src, op.len, op.pe);
      else if (lead) dev::putmem_nbi(h, mine, src, op.len, op.pe);
      break;
    case kGet:
      if (op.warp) dev::getmem<Scope::Warp>(h, snap, mine, op.len, op.pe);
      else if (lead) dev::getmem(h, snap, mine, op.len, op.pe);
      break;
    case kGetNbi: {  // into scratch, a quiet, then the kernel itself copies scratch to the snapshot (what quiet gave)
      unsigned char* scratch = r.scratch + static_cast<size_t>(w) * kRegion;
      if (op.warp) {
        dev::getmem_nbi<Scope::Warp>(h, scratch, mine, op.len, op.pe);
        dev::quiet<Scope::Warp>(h);
      } else if (lead) {
        dev::getmem_nbi(h, scratch, mine, op.len, op.pe);
        dev::quiet(h);
      }
      dev::detail::groupSync<Scope::Warp>();
      if (lead)
        for (uint32_t k = 0; k < op.len; ++k) snap[k] = scratch[k];
      break;
    }
    case kP:
      if (!lead) break;
      if (op.len == 1) dev::p(h, mine, static_cast<unsigned char>(op.value), op.pe);
      else if (op.len == 2) dev::p(h, reinterpret_cast<uint16_t*>(mine), static_cast<uint16_t>(op.value), op.pe);
      else if (op.len == 4) dev::p(h, reinterpret_cast<uint32_t*>(mine), static_cast<uint32_t>(op.value), op.pe);
      else dev::p(h, reinterpret_cast<uint64_t*>(mine), op.value, op.pe);
      break;
    case kG:
      if (lead) *fetched = dev::g(h, reinterpret_cast<const uint64_t*>(mine), op.pe);
      break;
    case kPutSignal:
      if (op.warp) dev::putmem_signal<Scope::Warp>(h, mine, src, op.len, sig, op.value, sop, op.pe);
      else if (lead) dev::putmem_signal(h, mine, src, op.len, sig, op.value, sop, op.pe);
      break;
    case kPutSignalNbi:
      if (op.warp) dev::putmem_signal_nbi<Scope::Warp>(h, mine, src, op.len, sig, op.value, sop, op.pe);
      else if (lead) dev::putmem_signal_nbi(h, mine, src, op.len, sig, op.value, sop, op.pe);
      break;
    case kSignal:
      if (lead) dev::signal_op(h, sig, op.value, sop, op.pe);
      break;
    case kAmo: {
      if (!lead) break;
      const uint64_t v = op.value;
      uint64_t old = 0;
      switch (static_cast<tether_amo_t>(op.amo)) {
        case TETHER_AMO_FETCH: old = dev::atomic_fetch(h, cnt, op.pe); break;
        case TETHER_AMO_SET: dev::atomic_set(h, cnt, v, op.pe); break;
        case TETHER_AMO_SWAP: old = dev::atomic_swap(h, cnt, v, op.pe); break;
        case TETHER_AMO_COMPARE_SWAP: old = dev::atomic_compare_swap(h, cnt, op.cond, v, op.pe); break;
        case TETHER_AMO_INC: dev::atomic_inc(h, cnt, op.pe); break;
        case TETHER_AMO_FETCH_INC: old = dev::atomic_fetch_inc(h, cnt, op.pe); break;
        case TETHER_AMO_ADD: dev::atomic_add(h, cnt, v, op.pe); break;
        case TETHER_AMO_FETCH_ADD: old = dev::atomic_fetch_add(h, cnt, v, op.pe); break;
        case TETHER_AMO_AND: dev::atomic_and(h, cnt, v, op.pe); break;
        case TETHER_AMO_FETCH_AND: old = dev::atomic_fetch_and(h, cnt, v, op.pe); break;
        case TETHER_AMO_OR: dev::atomic_or(h, cnt, v, op.pe); break;
        case TETHER_AMO_FETCH_OR: old = dev::atomic_fetch_or(h, cnt, v, op.pe); break;
        case TETHER_AMO_XOR: dev::atomic_xor(h, cnt, v, op.pe); break;
        default: old = dev::atomic_fetch_xor(h, cnt, v, op.pe); break;
      }
      *fetched = old;  // (unused for the non-fetching ones)
      break;
    }
    case kQuiet:
      if (op.warp) dev::quiet<Scope::Warp>(h);
      else if (lead) dev::quiet(h);
      break;
    case kFence:
      if (lead) dev::fence(h);
      break;
    case kWaitSig:
      if (lead) (void)dev::signal_wait_until(h, r.sig + op.writer, static_cast<dev::Cmp>(op.cmp), op.value);
      break;
    case kWaitCnt:
      if (lead) (void)dev::wait_until(h, r.cnt + op.writer, static_cast<dev::Cmp>(op.cmp), op.value);
      break;
    case kWaitMulti:
      if (lead) runMulti(h, r, op, r.fetched + static_cast<size_t>(w) * kMaxOps * 2 + op.slot);
      break;
    default: break;
  }
  dev::detail::groupSync<Scope::Warp>();
  if ((op.kind == kWaitSig || op.kind == kWaitCnt) && op.snapshot)
    dev::getmem<Scope::Warp>(h, snap, r.data + static_cast<size_t>(op.writer) * kRegion, kRegion, me);
  if (op.kind == kWaitSig && op.snapshot && lead) {  // the word holds the writer's last signal now
    uint64_t* out = r.fetched + static_cast<size_t>(w) * kMaxOps * 2 + op.slot;
    const uint64_t* word = r.sig + op.writer;
    out[0] = dev::signal_fetch(h, word);
    out[1] = dev::test(h, word, dev::Cmp::EQ, out[0]) && !dev::test(h, word, dev::Cmp::GT, out[0]);
  }
}

// The round's data collective at block scope (sum of int64).
TETHER_HD void dataColl(const dev::Handle& h, const Round& r) {
  using dev::Scope;
  const size_t n = r.collCount, bytes = n * sizeof(int64_t);
  switch (static_cast<fuzz::CollKind>(r.coll - kCollData)) {
    case fuzz::CollKind::Allreduce:
      dev::team_allreduce<Scope::Block>(h, r.dteam, r.cdst, r.csrc, n, dev::RedOp::Sum,
                                        static_cast<dev::ReduceAlgo>(r.algo));
      break;
    case fuzz::CollKind::Broadcast: dev::team_broadcast<Scope::Block>(h, r.dteam, r.cdst, r.csrc, bytes, r.root); break;
    case fuzz::CollKind::Reduce:
      dev::team_reduce<Scope::Block>(h, r.dteam, r.cdst, r.csrc, n, dev::RedOp::Sum, r.root);
      break;
    case fuzz::CollKind::Allgather: dev::team_allgather<Scope::Block>(h, r.dteam, r.cdst, r.csrc, bytes); break;
    case fuzz::CollKind::ReduceScatter:
      dev::team_reduce_scatter<Scope::Block>(h, r.dteam, r.cdst, r.csrc, n, dev::RedOp::Sum);
      break;
    default: dev::team_alltoall<Scope::Block>(h, r.dteam, r.cdst, r.csrc, bytes); break;
  }
}

// The round on one block of kWriters warps (tid: the thread's index in the block; warp = tid / warp size).
TETHER_HD void runRound(const dev::Handle& h, const Round& r) {
  using dev::Scope;
  const int rank = dev::detail::groupRank<Scope::Block>();
  const int lane = dev::detail::groupRank<Scope::Warp>();
  const int w = rank / dev::detail::groupSize<Scope::Warp>();
  for (int i = r.aBegin[w]; i < r.aBegin[w + 1]; ++i) runOp(h, r, w, lane, r.ops[i]);
  dev::quiet<Scope::Warp>(h);  // the writer's phase A is complete everywhere
  if (r.coll) {
    if (r.coll == 1) dev::barrier_all<Scope::Block>(h);
    else if (r.coll == 2) dev::sync_all<Scope::Block>(h);
    else if (r.coll == 3) dev::team_sync<Scope::Block>(h, r.team);
    else
      dataColl(h, r);
    // every writer's region here, in one get (complete everywhere before the collective)
    if (w == 0 && r.coll < kCollData)
      dev::getmem<Scope::Warp>(h, r.snap + r.collSnap, r.data, static_cast<size_t>(r.npes) * kWriters * kRegion, r.me);
  }
  for (int i = r.bBegin[w]; i < r.bBegin[w + 1]; ++i) runOp(h, r, w, lane, r.ops[i]);
}

// ---- the driver (host code): draws, the model, the checks -------------------------------------------------------

// Where the interpreter runs: its local memory and the launch of a round.
class Env {
 public:
  virtual ~Env() = default;
  virtual unsigned char* allocLocal(size_t bytes) = 0;  // memory the interpreter reads and writes
  virtual void freeLocal(unsigned char* p) = 0;
  virtual void toLocal(unsigned char* dst, const void* src, size_t n) = 0;
  virtual void fromLocal(void* dst, const unsigned char* src, size_t n) = 0;
  // The handle the interpreter runs with (tether_device_handle for kernels, tether_device_handle_cpu for CPU threads).
  virtual tether_status_t handle(tether_t w, tether_device_handle_t* h) = 0;
  // Runs runRound(h, r) on one block of kWriters warps to completion: "" or the error.
  virtual std::string launch(const dev::Handle& h, const Round& r) = 0;
  tether_seg_kind_t seg = TETHER_SEG_HOST;  // of the symmetric objects
};

inline const char* kindName(int k) {
  static const char* names[] = {"putmem", "putmem_nbi", "getmem", "getmem_nbi", "p", "g", "putmem_signal",
                                "putmem_signal_nbi", "signal_op", "atomic", "quiet", "fence", "signal_wait_until",
                                "wait_until", "multi-word wait or test"};
  return k >= 0 && k < kKinds ? names[k] : "?";
}

// What one writer did to one target PE's region and words this round, as the model knows it.
struct Cell {
  unsigned char bytes[kRegion] = {};
  bool pendWarp[kRegion] = {};   // written by a warp-scope operation since the writer's last warp quiet
  bool pendLane[kRegion] = {};   // written by lane 0 since the writer's last quiet
  bool afterSig[kRegion] = {};   // written since the writer's last signal to this PE
  bool skipAtSig[kRegion] = {};  // not yet visible with that signal
  uint64_t sig = 0, sigAtStart = 0, cnt = 0;
};

struct Expect {
  std::string what;
  int writer;           // its local arenas
  bool fetched;         // a fetched value (at index `at`) or snapshot bytes (at offset `at`)
  size_t at;
  std::vector<unsigned char> bytes;
  std::vector<bool> skip;
  uint64_t value;
  int multi = -1;       // a kWaitMulti's results at fetched `at` (count) and `at` + 1 (mask): its Multi form
  uint64_t allowed = 0; // kWaitMulti: the writers it may return (included, their words reach its value)
  uint64_t value2 = 0;  // fetched: the value at `at` + 1 too, where `pair`
  bool pair = false;
};

class DeviceFuzz {
 public:
  DeviceFuzz(tether_t w, Env& env, uint64_t seed)
      : w_(w), env_(env), seed_(seed), me_(tether_my_pe(w)), n_(tether_n_pes(w)),
        cells_(static_cast<size_t>(n_) * n_ * kWriters),
        objs_(w, env.seg, static_cast<size_t>(n_) * kWriters, kRegion), coll_(w, env.seg, seed), teams_(w),
        data_(objs_.data),
        sig_(objs_.sig), cnt_(objs_.cnt) {
    const size_t writers = static_cast<size_t>(n_) * kWriters;
    MP_OK(env_.handle(w_, &h_));
    MP_OK(tether_team_device_view(tether_team_world(w_), &h_, &team_));
    for (int i = 0; i < fuzz::FuzzTeams::kCount; ++i)
      if (teams_.get(i) != TETHER_TEAM_INVALID) MP_OK(tether_team_device_view(teams_.get(i), &h_, &views_[i]));
    srcStride_ = kMaxOps * kRegion;
    snapStride_ = (kMaxOps + kMaxWaits) * kRegion + writers * kRegion;  // + writer 0's snapshot after the collective
    src_ = env_.allocLocal(srcStride_ * kWriters);
    snap_ = env_.allocLocal(snapStride_ * kWriters);
    fetched_ = env_.allocLocal(kWriters * kMaxOps * 2 * 8);
    ops_ = env_.allocLocal(sizeof(Op) * kWriters * (kMaxOps + kMaxWaits));
    scratch_ = env_.allocLocal(kWriters * kRegion);
  }
  ~DeviceFuzz() {
    for (unsigned char* p : {src_, snap_, fetched_, ops_, scratch_}) env_.freeLocal(p);
  }

  void run(int rounds) {
    for (int r = 0; r < rounds; ++r) round(r);
    if (me_ == 0) {
      std::printf("device fuzz: %d PEs x %d writers, %d rounds: ok;", n_, kWriters, rounds);
      for (int k = 0; k < kKinds; ++k) std::printf(" %s %d,", kindName(k), counts_[k]);
      std::printf(" warp scope %d, snapshots %d, collectives", warpOps_, snapshots_);
      for (int c = 1; c < kColls; ++c) std::printf(" %s %d", collName(c), colls_[c]);
      std::printf("\n");
    }
  }

 private:
  size_t writer(int q, int w) const { return static_cast<size_t>(q) * kWriters + static_cast<size_t>(w); }
  Cell& cell(int target, size_t wr) { return cells_[static_cast<size_t>(target) * n_ * kWriters + wr]; }
  static unsigned char srcByte(uint64_t key, size_t k) { return static_cast<unsigned char>(mix(key + k) >> 56); }
  uint64_t srcKey(int r, size_t wr, size_t local) const {
    return seed_ ^ (static_cast<uint64_t>(r) << 40) ^ (wr << 24) ^ local;
  }
  std::string where(int r, size_t wr, size_t i, const Op& op) const {
    return std::string(kindName(op.kind)) + (op.warp ? " (warp)" : "") + " #" + std::to_string(i) + " of writer " +
           std::to_string(wr) + " to PE " + std::to_string(op.pe) + ", round " + std::to_string(r);
  }

  // Writer wr's phase A in round r, applied to the model as drawn; exp (this PE's writers): what its gets, g and
  // fetching atomics must return.
  std::vector<Op> drawPhaseA(int r, size_t wr, std::vector<Expect>* exp) {
    Draw d(seed_ ^ (static_cast<uint64_t>(r) << 32) ^ (wr << 8) ^ 0xa);
    std::vector<Op> ops(d.below(kMaxOps + 1));
    uint32_t srcAt = 0, snapAt = 0, fetchAt = 0;
    const int w = static_cast<int>(wr % kWriters);
    for (size_t i = 0; i < ops.size(); ++i) {
      Op& op = ops[i];
      const size_t pick = d.below(100);
      op.kind = pick < 14 ? kPut : pick < 22 ? kPutNbi : pick < 30 ? kGet : pick < 35 ? kGetNbi : pick < 42 ? kP
              : pick < 47 ? kG : pick < 58 ? kPutSignal : pick < 64 ? kPutSignalNbi : pick < 70 ? kSignal
              : pick < 82 ? kAmo : pick < 95 ? kQuiet : kFence;
      op.pe = static_cast<int>(d.below(static_cast<size_t>(n_)));
      op.warp = (op.kind == kPut || op.kind == kPutNbi || op.kind == kGet || op.kind == kGetNbi ||
                 op.kind == kPutSignal || op.kind == kPutSignalNbi || op.kind == kQuiet) && d.chance(50);
      Cell& c = cell(op.pe, wr);
      switch (op.kind) {
        case kPut: case kPutNbi: case kPutSignal: case kPutSignalNbi: case kGet: case kGetNbi:
          op.off = static_cast<uint32_t>(d.below(kRegion));
          op.len = d.chance(5) ? 0 : static_cast<uint32_t>(1 + d.below(kRegion - op.off));
          if (op.kind == kGet || op.kind == kGetNbi) {
            op.local = snapAt;
            snapAt += op.len;
            if (exp) {
              Expect e{where(r, wr, i, op), w, false, op.local,
                       std::vector<unsigned char>(c.bytes + op.off, c.bytes + op.off + op.len),
                       std::vector<bool>(op.len), 0};
              for (size_t k = 0; k < op.len; ++k) e.skip[k] = c.pendWarp[op.off + k] || c.pendLane[op.off + k];
              exp->push_back(std::move(e));
            }
            break;
          }
          op.local = srcAt;
          srcAt += op.len;
          for (size_t k = 0; k < op.len; ++k) {
            c.bytes[op.off + k] = srcByte(srcKey(r, wr, op.local), k);
            (op.warp ? c.pendWarp : c.pendLane)[op.off + k] = true;
            c.afterSig[op.off + k] = true;
          }
          if (op.kind == kPutSignal || op.kind == kPutSignalNbi) signal(d, c, op, true);
          break;
        case kP: {
          const uint32_t width = 1u << d.below(4);
          op.len = width;
          op.off = static_cast<uint32_t>(d.below(kRegion / width) * width);
          op.value = d.next() & (width == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1);
          for (size_t k = 0; k < width; ++k) {
            c.bytes[op.off + k] = static_cast<unsigned char>(op.value >> (8 * k));
            c.pendLane[op.off + k] = c.afterSig[op.off + k] = true;
          }
          break;
        }
        case kG: {
          op.len = 8;
          op.off = static_cast<uint32_t>(d.below(kRegion / 8) * 8);
          op.local = fetchAt++;
          bool settled = true;
          for (size_t k = 0; k < 8; ++k) settled = settled && !c.pendWarp[op.off + k] && !c.pendLane[op.off + k];
          if (exp && settled) {
            uint64_t v;
            std::memcpy(&v, c.bytes + op.off, 8);
            exp->push_back({where(r, wr, i, op), w, true, op.local, {}, {}, v});
          }
          break;
        }
        case kSignal: signal(d, c, op, false); break;
        case kAmo: {
          const auto amo = static_cast<tether_amo_t>(d.below(TETHER_AMO_COUNT));
          op.amo = static_cast<uint8_t>(amo);
          op.value = amo == TETHER_AMO_FETCH || amo == TETHER_AMO_INC || amo == TETHER_AMO_FETCH_INC ? 0
                     : d.chance(50) ? d.below(16) : d.next();
          op.cond = amo == TETHER_AMO_COMPARE_SWAP ? (d.chance(50) ? c.cnt : d.next()) : 0;
          op.local = fetchAt++;
          if (exp && amoFetches(amo)) exp->push_back({where(r, wr, i, op), w, true, op.local, {}, {}, c.cnt});
          c.cnt = amoApply(amo, c.cnt, op.value, op.cond);
          break;
        }
        case kQuiet:  // the writer's operations (warp scope) or lane 0's (thread scope) are complete, to every PE
          for (int x = 0; x < n_; ++x) {
            Cell& cx = cell(x, wr);
            for (size_t k = 0; k < kRegion; ++k) {
              cx.pendLane[k] = false;
              if (op.warp) cx.pendWarp[k] = false;
            }
          }
          break;
        default: break;
      }
      counts_[op.kind] += exp != nullptr;
      warpOps_ += exp != nullptr && op.warp;
    }
    return ops;
  }
  // A signal to cell c (SET to a larger value or ADD a small one: signal words only grow). What it makes visible:
  // bytes the writer quieted before, and for a put_signal its own bytes (op's range).
  static void signal(Draw& d, Cell& c, Op& op, bool carries) {
    op.sigOp = static_cast<uint8_t>(d.chance(50) ? TETHER_SIGNAL_SET : TETHER_SIGNAL_ADD);
    const uint64_t delta = 1 + d.below(5);
    op.value = op.sigOp == TETHER_SIGNAL_SET ? c.sig + delta : delta;
    c.sig += delta;
    for (size_t k = 0; k < kRegion; ++k) {
      const bool own = carries && k >= op.off && k < op.off + op.len;
      c.skipAtSig[k] = !own && (c.pendWarp[k] || c.pendLane[k]);
      c.afterSig[k] = false;
    }
  }

  void round(int r) {
    for (auto& c : cells_) {
      c.sigAtStart = c.sig;
      for (size_t k = 0; k < kRegion; ++k) c.pendWarp[k] = c.pendLane[k] = c.afterSig[k] = c.skipAtSig[k] = false;
    }
    std::vector<Op> mine[kWriters];
    std::vector<Expect> exp;
    for (int q = 0; q < n_; ++q)
      for (int w = 0; w < kWriters; ++w) {
        std::vector<Op> ops = drawPhaseA(r, writer(q, w), q == me_ ? &exp : nullptr);
        if (q == me_) mine[w] = std::move(ops);
      }
    Draw dc(seed_ ^ (static_cast<uint64_t>(r) << 32) ^ 0xc011);
    const int coll = static_cast<int>(dc.below(kColls));
    const fuzz::CollObjects::Call call =
        fuzz::drawCollCall(dc, static_cast<fuzz::CollKind>(coll >= kCollData ? coll - kCollData : 0), teams_, n_);
    const int algo = static_cast<int>(dc.below(3));
    // Phase B of this PE's writers: waits on its own words (the model is complete now).
    std::vector<Op> waits[kWriters];
    uint32_t snapEnd[kWriters];
    for (int w = 0; w < kWriters; ++w) {
      snapEnd[w] = 0;
      for (const Op& op : mine[w])
        if (op.kind == kGet || op.kind == kGetNbi) snapEnd[w] = op.local + op.len;
      Draw d(seed_ ^ (static_cast<uint64_t>(r) << 32) ^ (writer(me_, w) << 8) ^ 0xb);
      waits[w].resize(d.below(kMaxWaits + 1));
      for (size_t i = 0; i < waits[w].size(); ++i) {
        waits[w][i].slot = static_cast<uint32_t>(kMaxOps + 2 * i);
        drawWait(r, w, d, waits[w][i], &snapEnd[w], &exp);
      }
    }
    Round rd{};
    rd.data = data_;
    rd.sig = sig_;
    rd.cnt = cnt_;
    rd.src = src_;
    rd.snap = snap_;
    rd.fetched = reinterpret_cast<uint64_t*>(fetched_);
    rd.scratch = scratch_;
    rd.srcStride = static_cast<uint32_t>(srcStride_);
    rd.snapStride = static_cast<uint32_t>(snapStride_);
    rd.coll = coll >= kCollData && !call.member() ? 0 : coll;  // a non-member's objects stay as they are
    rd.team = team_;
    if (rd.coll >= kCollData) {
      coll_.args(call, &rd.cdst, &rd.csrc);
      rd.dteam = views_[call.teamIndex];
      rd.root = call.teamRoot();
    }
    rd.collCount = static_cast<uint32_t>(call.count);
    rd.algo = algo;
    if (coll >= kCollData) coll_.fill(r, call);
    rd.collSnap = static_cast<uint32_t>((kMaxOps + kMaxWaits) * kRegion);
    rd.me = me_;
    rd.npes = n_;
    std::vector<Op> all;
    for (int w = 0; w < kWriters; ++w) {
      rd.aBegin[w] = static_cast<int>(all.size());
      all.insert(all.end(), mine[w].begin(), mine[w].end());
    }
    rd.aBegin[kWriters] = static_cast<int>(all.size());
    for (int w = 0; w < kWriters; ++w) {
      rd.bBegin[w] = static_cast<int>(all.size());
      all.insert(all.end(), waits[w].begin(), waits[w].end());
    }
    rd.bBegin[kWriters] = static_cast<int>(all.size());
    rd.ops = reinterpret_cast<const Op*>(ops_);
    env_.toLocal(ops_, all.data(), all.size() * sizeof(Op));
    // Sources filled, snapshots and fetched values poisoned.
    std::vector<unsigned char> src(srcStride_ * kWriters, 0), snap(snapStride_ * kWriters, 0xee);
    std::vector<uint64_t> fetched(kWriters * kMaxOps * 2, 0xdeadbeefull);
    for (int w = 0; w < kWriters; ++w)
      for (const Op& op : mine[w])
        if (op.kind == kPut || op.kind == kPutNbi || op.kind == kPutSignal || op.kind == kPutSignalNbi)
          for (size_t k = 0; k < op.len; ++k)
            src[w * srcStride_ + op.local + k] = srcByte(srcKey(r, writer(me_, w), op.local), k);
    env_.toLocal(src_, src.data(), src.size());
    env_.toLocal(snap_, snap.data(), snap.size());
    env_.toLocal(fetched_, fetched.data(), fetched.size() * 8);
    if (coll >= 1 && coll < kCollData) {
      const size_t nwr = static_cast<size_t>(n_) * kWriters;
      Expect e{std::string("every region after the round's ") + collName(coll) + ", round " + std::to_string(r),
               0, false, rd.collSnap, std::vector<unsigned char>(nwr * kRegion), {}, 0};
      for (size_t wr = 0; wr < nwr; ++wr) std::memcpy(&e.bytes[wr * kRegion], cell(me_, wr).bytes, kRegion);
      exp.push_back(std::move(e));
    }

    const std::string err = env_.launch(h_, rd);
    if (!err.empty()) failAt(r, "the round's kernel", err);
    MP_OK(tether_barrier_all(w_));
    env_.fromLocal(snap.data(), snap_, snap.size());
    env_.fromLocal(fetched.data(), fetched_, fetched.size() * 8);
    check(r, snap, fetched, exp);
    if (coll >= kCollData) {
      const std::string bad = coll_.check(r, call);
      if (!bad.empty()) failAt(r, collName(coll), bad);
    }
    MP_OK(tether_barrier_all(w_));  // nobody writes round r + 1 here before this PE checked round r
    colls_[coll]++;
  }

  // One wait of writer w's phase B on this PE's words.
  void drawWait(int r, int w, Draw& d, Op& op, uint32_t* snapEnd, std::vector<Expect>* exp) {
    const size_t writers = static_cast<size_t>(n_) * kWriters;
    size_t wr = d.below(writers);
    std::vector<size_t> signalled;  // mostly a writer that signalled here this round
    for (size_t i = 0; i < writers; ++i)
      if (cell(me_, i).sig != cell(me_, i).sigAtStart) signalled.push_back(i);
    if (!signalled.empty() && d.chance(70)) wr = signalled[d.below(signalled.size())];
    op.writer = static_cast<int16_t>(wr);
    const Cell& c = cell(me_, wr);
    if (c.sig != c.sigAtStart && writers <= kMultiMax && d.chance(25)) return drawMulti(r, w, d, op, wr, exp);
    if (d.chance(15)) {
      counts_[kWaitCnt]++;
      op.kind = kWaitCnt;
      op.cmp = static_cast<uint8_t>(TETHER_CMP_EQ);  // the final value (may pass earlier on an equal one: no snapshot)
      op.value = c.cnt;
      return;
    }
    counts_[kWaitSig]++;
    op.kind = kWaitSig;
    const uint64_t f = c.sig, f0 = c.sigAtStart;
    const size_t how = d.below(6);
    if (f > f0 && how < 3) {
      op.cmp = static_cast<uint8_t>(how == 0 ? TETHER_CMP_GE : how == 1 ? TETHER_CMP_EQ : TETHER_CMP_GT);
      op.value = how == 2 ? f - 1 : f;
      op.snapshot = 1;
      op.local = *snapEnd;
      *snapEnd += kRegion;
      snapshots_++;
      Expect e{std::string("the region of writer ") + std::to_string(wr) + " after signal_wait_until (cmp " +
                   std::to_string(op.cmp) + ", " + std::to_string(op.value) + "), round " + std::to_string(r),
               w, false, op.local, std::vector<unsigned char>(c.bytes, c.bytes + kRegion), std::vector<bool>(kRegion),
               0};
      for (size_t k = 0; k < kRegion; ++k) e.skip[k] = c.skipAtSig[k] || c.afterSig[k];
      exp->push_back(std::move(e));
      Expect fe{std::string("signal_fetch and test (EQ, not GT) of writer ") + std::to_string(wr) +
                    "'s word after its wait, round " + std::to_string(r),
                w, true, op.slot, {}, {}, f};
      fe.pair = true;
      fe.value2 = 1;
      exp->push_back(std::move(fe));
    } else if (f > f0 && how == 3) {
      op.cmp = static_cast<uint8_t>(TETHER_CMP_NE);  // passes at the first signal of the round
      op.value = f0;
    } else if (how == 4) {
      op.cmp = static_cast<uint8_t>(TETHER_CMP_LE);  // true from the start
      op.value = f + d.below(3);
    } else {
      op.cmp = static_cast<uint8_t>(TETHER_CMP_LT);
      op.value = f + 1 + d.below(3);
    }
  }

  // A wait or test over every writer's signal word here (GE value), some excluded: value in (start, final] of writer
  // wr's word (it signalled this round); included: wr, others at random (for a wait_until_all only those whose words
  // reach value: it would wait forever on the others).
  void drawMulti(int r, int w, Draw& d, Op& op, size_t wr, std::vector<Expect>* exp) {
    const size_t writers = static_cast<size_t>(n_) * kWriters;
    const Cell& c = cell(me_, wr);
    counts_[kWaitMulti]++;
    op.kind = kWaitMulti;
    op.amo = static_cast<uint8_t>(d.below(kMultis));
    op.value = c.sigAtStart + 1 + d.below(c.sig - c.sigAtStart);
    uint64_t excluded = 0, allowed = 0;
    for (size_t i = 0; i < writers; ++i) {
      const bool reaches = cell(me_, i).sig >= op.value;
      const bool in = i == wr || ((reaches || op.amo != kWaitAll) && d.chance(60));
      if (!in) excluded |= uint64_t{1} << i;
      if (in && reaches) allowed |= uint64_t{1} << i;
    }
    op.cond = excluded;
    static const char* const forms[kMultis] = {"wait_until_all", "wait_until_any", "wait_until_some", "test_all",
                                               "test_any", "test_some"};
    Expect e{std::string(forms[op.amo]) + " (GE " + std::to_string(op.value) + ", excluded mask " +
                 std::to_string(excluded) + "), round " + std::to_string(r),
             w, true, op.slot, {}, {}, 0};
    e.multi = op.amo;
    e.allowed = allowed;
    exp->push_back(std::move(e));
  }

  // What a kWaitMulti returned (count, mask), against its form and the writers it may return; "" or what is wrong.
  static std::string checkMulti(const Expect& e, uint64_t count, uint64_t mask) {
    int bits = 0;
    for (uint64_t m = mask; m; m &= m - 1) ++bits;
    const bool within = (mask & ~e.allowed) == 0;
    bool ok = false;
    switch (e.multi) {
      case kWaitAll: ok = count == 1 && mask == 0; break;
      case kTestAll: ok = count <= 1 && mask == 0; break;
      case kWaitAny: ok = count == 1 && bits == 1 && within; break;
      case kTestAny: ok = count <= 1 && bits == static_cast<int>(count) && within; break;
      case kWaitSome: ok = count >= 1 && bits == static_cast<int>(count) && within; break;
      default: ok = bits == static_cast<int>(count) && within; break;
    }
    return ok ? std::string() : "count " + std::to_string(count) + ", indices mask " + std::to_string(mask) +
                                    " (may return mask " + std::to_string(e.allowed) + ")";
  }

  void check(int r, const std::vector<unsigned char>& snap, const std::vector<uint64_t>& fetched,
             const std::vector<Expect>& exp) {
    const size_t writers = static_cast<size_t>(n_) * kWriters;
    std::vector<unsigned char> data;
    std::vector<uint64_t> sig, cnt;
    objs_.read(&data, &sig, &cnt);
    for (size_t wr = 0; wr < writers; ++wr) {
      const Cell& c = cell(me_, wr);
      for (size_t k = 0; k < kRegion; ++k)
        if (data[wr * kRegion + k] != c.bytes[k])
          failAt(r, "the round's end", "byte " + std::to_string(k) + " of writer " + std::to_string(wr) +
                                           "'s region is " + std::to_string(data[wr * kRegion + k]) + ", expected " +
                                           std::to_string(c.bytes[k]));
      if (sig[wr] != c.sig || cnt[wr] != c.cnt)
        failAt(r, "the round's end", "writer " + std::to_string(wr) + ": signal " + std::to_string(sig[wr]) +
                                         " (expected " + std::to_string(c.sig) + "), counter " +
                                         std::to_string(cnt[wr]) + " (expected " + std::to_string(c.cnt) + ")");
    }
    for (const Expect& e : exp) {
      if (e.fetched) {
        const size_t at = static_cast<size_t>(e.writer) * kMaxOps * 2 + e.at;
        const uint64_t got = fetched[at];
        if (e.multi >= 0) {
          const std::string bad = checkMulti(e, got, fetched[at + 1]);
          if (!bad.empty()) failAt(r, e.what, bad);
          continue;
        }
        if (got != e.value)
          failAt(r, e.what, "returned " + std::to_string(got) + ", expected " + std::to_string(e.value));
        if (e.pair && fetched[at + 1] != e.value2)
          failAt(r, e.what, "then " + std::to_string(fetched[at + 1]) + ", expected " + std::to_string(e.value2));
        continue;
      }
      const unsigned char* got = &snap[static_cast<size_t>(e.writer) * snapStride_ + e.at];
      for (size_t k = 0; k < e.bytes.size(); ++k)
        if ((e.skip.empty() || !e.skip[k]) && got[k] != e.bytes[k])
          failAt(r, e.what, "byte " + std::to_string(k) + " is " + std::to_string(got[k]) + ", expected " +
                                std::to_string(e.bytes[k]));
    }
  }

  [[noreturn]] void failAt(int r, const std::string& what, const std::string& why) {
    std::fprintf(stderr, "FAIL PE %d (seed %" PRIu64 ") round %d: %s: %s\n", me_, seed_, r, what.c_str(), why.c_str());
    std::exit(1);
  }

  tether_t w_;
  Env& env_;
  const uint64_t seed_;
  const int me_, n_;
  std::vector<Cell> cells_;
  tether_device_handle_t h_{};
  tether_device_team_t team_{};
  fuzz::WriterObjects objs_;
  fuzz::CollObjects coll_;
  fuzz::FuzzTeams teams_;
  tether_device_team_t views_[fuzz::FuzzTeams::kCount] = {};  // of the teams this PE is a member of
  unsigned char* const data_;
  uint64_t* const sig_;
  uint64_t* const cnt_;
  size_t srcStride_ = 0, snapStride_ = 0;
  unsigned char *src_ = nullptr, *snap_ = nullptr, *fetched_ = nullptr, *ops_ = nullptr, *scratch_ = nullptr;
  int counts_[kKinds] = {};
  int colls_[kColls] = {};
  int warpOps_ = 0, snapshots_ = 0;
};

// The fuzz on env after tether_init (every PE): PE 0's seed (printed as `name seed N`) on all; DEVICE_FUZZ_ROUNDS
// rounds (default `rounds`).
inline void run(tether_t w, Env& env, const char* name, int rounds) {
  DeviceFuzz f(w, env, fuzz::agreedSeed(w, name));
  f.run(fuzz::rounds("DEVICE_FUZZ_ROUNDS", rounds));
}

}  // namespace device_fuzz
