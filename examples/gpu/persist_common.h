// Persistent requests in the messaging applications (jacobi2d.cu, halo3d.cu and their CPU twins; docs/msg.md
// "Applications"): the models host-persist, stream-persist and kernel-persist make one persistent send and one
// persistent receive per halo and per iteration parity once per run (tether_send_init / tether_recv_init) and start
// them every iteration from the host, the stream or the kernel (tether_msg_startall, tether_msg_startall_on_stream,
// tether::device::msg_start on descriptors taken once). Plain C++ with J2D_HD device-side parts, so the CPU twins run
// the kernel model's schedule with the device API compiled for the host (the "kernel" is the host thread).
//
// The schedule (roundPlan). Iteration k uses the requests of parity k & 1, their round k / 2 + 1 (each parity's
// requests run every other iteration). Receive buffers alternate with the parity as before, which is what lets the
// stream and kernel models start the receives of iteration k + 1 during iteration k: their buffers were last read by
// iteration k - 1, complete by then in stream order. Iteration 0 also starts its own receives; the last iteration
// starts none (a started receive that no message completes would keep its request active, and the end's wait would
// time out). host-persist starts each iteration's receives at its beginning (it waits for everything every
// iteration). Tags: the halo's tag + kParityTag * parity. In the stream and kernel models the receives of both
// parities may have starts pending at once, and requests that could match the same message must not (tether/msg.h:
// such starts take effect in no defined order), so the two parities never compete for a message.
#pragma once

#include <cstdint>
#include <vector>

#include "jacobi2d_common.h"
#include "tether/msg.h"
#include "tether/msg_device.cuh"

namespace j2d {

constexpr int kParityTag = 64;  // above every halo tag of both applications (jacobi2d 0..3, halo3d 0..26)

// What iteration k of `total` uses and starts.
struct RoundPlan {
  int parity;          // the requests of this iteration
  uint64_t round;      // their round
  bool startOwn;       // start this iteration's receives here (k == 0; later ones were started an iteration ahead)
  bool startNext;      // start the next iteration's receives (parity 1 - parity) here: k + 1 < total
  uint64_t nextRound;  // their round
};

J2D_HD inline RoundPlan roundPlan(int k, int total) {
  RoundPlan p;
  p.parity = k & 1;
  p.round = static_cast<uint64_t>(k / 2 + 1);
  p.startOwn = k == 0;
  p.startNext = k + 1 < total;
  p.nextRound = static_cast<uint64_t>((k + 1) / 2 + 1);
  return p;
}

// The persistent requests of one run of a model: reqs[p] holds parity p's receives (halo order), then its sends.
struct PersistentExchange {
  std::vector<tether_request_t> reqs[2];
  size_t nh = 0;
  tether_request_t* recvs(int p) { return reqs[p].data(); }
  tether_request_t* sends(int p) { return reqs[p].data() + nh; }
};

// Makes them; buffers[p] are the exchange's buffers of parity p (sendPtr / recvPtr are found next to the halo type).
template <class HaloT, class BuffersT>
PersistentExchange persistentExchange(tether_t w, const std::vector<HaloT>& halos, const BuffersT* buffers) {
  PersistentExchange x;
  x.nh = halos.size();
  for (int p = 0; p < 2; ++p) {
    x.reqs[p].resize(2 * x.nh);
    for (size_t i = 0; i < x.nh; ++i) {
      const HaloT& h = halos[i];
      const int shift = kParityTag * p;
      J2D_CHECK(tether_recv_init(w, recvPtr(h, buffers[p]), h.bytes(), h.peer, h.recvTag() + shift, x.recvs(p) + i));
      J2D_CHECK(tether_send_init(w, sendPtr(h, buffers[p]), h.bytes(), h.peer, h.sendTag() + shift, x.sends(p) + i));
    }
  }
  return x;
}

// The end of a run (after the stream or kernel is through): one host wait completes every round the requests ran
// (the stream and kernel models never wait on the host in their loop), then they are freed.
inline void freePersistent(tether_t w, PersistentExchange* x) {
  for (std::vector<tether_request_t>& r : x->reqs) {
    J2D_CHECK(tether_msg_waitall(w, r.size(), r.data(), nullptr));
    for (tether_request_t& q : r) J2D_CHECK(tether_msg_request_free(w, &q));
    r.clear();
  }
}

// Model::begin of the persistent models (State: halos, buffers(p), persist, total): the requests of both parities and
// the run's length for roundPlan.
template <class State>
void beginPersist(tether_t w, State& g, int total) {
  using B = decltype(g.buffers(0));
  const B b[2] = {g.buffers(0), g.buffers(1)};
  g.persist = persistentExchange(w, g.halos, b);
  g.total = total;
}

// host-persist, iteration k: ONE startall of its receives; pack() (GPU: up to the stream synchronised); ONE startall
// of its sends; overlap() (work that needs no halo); ONE waitall of both (the requests stay, inactive); finish()
// (unpack and the rest). calls: J2D_MSG's counter.
template <class Pack, class Overlap, class Finish>
void persistentHostIteration(tether_t w, PersistentExchange& x, int k, long* calls, Pack pack, Overlap overlap,
                             Finish finish) {
  const int p = k & 1;
  J2D_MSG(calls, tether_msg_startall(w, x.nh, x.recvs(p)));
  pack();
  J2D_MSG(calls, tether_msg_startall(w, x.nh, x.sends(p)));
  overlap();
  J2D_MSG(calls, tether_msg_waitall(w, 2 * x.nh, x.reqs[p].data(), nullptr));
  finish();
}

// stream-persist: the requests that iteration k's ONE tether_msg_startall_on_stream (after its pack) starts: its sends
// and the receives the plan starts.
inline void streamStarts(PersistentExchange& x, const RoundPlan& plan, std::vector<tether_request_t>* out) {
  out->assign(x.sends(plan.parity), x.sends(plan.parity) + x.nh);
  if (plan.startOwn) out->insert(out->end(), x.recvs(plan.parity), x.recvs(plan.parity) + x.nh);
  if (plan.startNext) out->insert(out->end(), x.recvs(1 - plan.parity), x.recvs(1 - plan.parity) + x.nh);
}

// kernel-persist: the descriptors of one halo's requests (tether_msg_persist_desc), by parity. Taken once per run,
// before any of them starts, so a descriptor's round r is the request's r-th round of the run.
struct PersistMsgs {
  tether_msg_persist_desc_t recv[2], send[2];
};

inline std::vector<PersistMsgs> persistMsgs(tether_t w, PersistentExchange& x) {
  std::vector<PersistMsgs> m(x.nh);
  for (int p = 0; p < 2; ++p)
    for (size_t i = 0; i < x.nh; ++i) {
      J2D_CHECK(tether_msg_persist_desc(w, x.recvs(p)[i], &m[i].recv[p]));
      J2D_CHECK(tether_msg_persist_desc(w, x.sends(p)[i], &m[i].send[p]));
    }
  return m;
}

// The CPU twins' kernel-persist begin and end: the descriptors in host memory (g.msgs), for the host thread.
template <class State>
void beginKernelPersistHost(tether_t w, State& g, int total) {
  beginPersist(w, g, total);
  g.msgs = persistMsgs(w, g.persist);
}
template <class State>
void endPersistHost(tether_t w, State& g) {
  freePersistent(w, &g.persist);
  g.msgs.clear();
}

// The CPU twins' models, in the order --model all runs them: the application's host step and its two persistent steps.
template <class State>
std::vector<Model<State>> cpuModels(void (*host)(tether_t, State&, int, Pending*),
                                    void (*hostPersist)(tether_t, State&, int, Pending*),
                                    void (*kernelPersist)(tether_t, State&, int, Pending*)) {
  return {{"host", host, nullptr, nullptr},
          {"host-persist", hostPersist, beginPersist<State>, endPersistHost<State>},
          {"kernel-persist", kernelPersist, beginKernelPersistHost<State>, endPersistHost<State>}};
}

// The CPU twins' run of model m on State s (its `calls` counter): reset() puts the fields back, m.begin, warmup + iters
// steps (the last iters timed: timeHostIterations), m.end.
template <class State, class Reset>
Timing runHostModel(tether_t w, State& s, const Model<State>& m, const Options& o, Reset reset) {
  reset();
  if (m.begin) m.begin(w, s, o.warmup + o.iters);
  const Timing t = timeHostIterations(o.warmup, o.iters, &s.calls, [&](int k) { m.step(w, s, k, nullptr); });
  if (m.end) m.end(w, s);
  return t;
}

// The kernel's side of kernel-persist, for group scope S (on the GPU block 0 of the kernel; in the CPU twins the host
// thread with Scope::Thread): the receives the plan starts (at the iteration's beginning: their buffers are free),
// the iteration's sends (after the pack: msg_start makes the group's stores visible to the copy), and the wait for
// the iteration's receives (their bytes) and sends (their buffers may be rewritten).
template <tether::device::Scope S>
J2D_HD void startReceives(const tether::device::Handle& h, const PersistMsgs* m, int nh, const RoundPlan& plan) {
  for (int i = 0; i < nh; ++i) {
    if (plan.startOwn) tether::device::msg_start<S>(h, m[i].recv[plan.parity], plan.round);
    if (plan.startNext) tether::device::msg_start<S>(h, m[i].recv[1 - plan.parity], plan.nextRound);
  }
}

template <tether::device::Scope S>
J2D_HD void startSends(const tether::device::Handle& h, const PersistMsgs* m, int nh, const RoundPlan& plan) {
  for (int i = 0; i < nh; ++i) tether::device::msg_start<S>(h, m[i].send[plan.parity], plan.round);
}

template <tether::device::Scope S>
J2D_HD void waitRound(const tether::device::Handle& h, const PersistMsgs* m, int nh, const RoundPlan& plan) {
  for (int i = 0; i < nh; ++i) {
    tether::device::msg_wait<S>(h, m[i].recv[plan.parity], plan.round);
    tether::device::msg_wait<S>(h, m[i].send[plan.parity], plan.round);
  }
}

}  // namespace j2d
