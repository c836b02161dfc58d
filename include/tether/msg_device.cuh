// tether two-sided messaging, kernel model (issue #20; docs/msg.md): a kernel starts prepared sends and waits for
// requests in the middle of its work, with the descriptors the host got from tether_msg_send_desc /
// tether_msg_wait_desc (tether/msg.h), and starts and waits for the rounds of persistent requests with one descriptor
// each (tether_msg_persist_desc; msg_start / msg_wait / msg_test with a round number, at the end of this file). Header-only, on top of the device API (tether/device.cuh): include it from CUDA
// code for kernels, or from plain C++ for CPU threads (with a CPU handle), exactly like device.cuh.
//
//   host:   tether_irecv(w, rbuf, n, left, 0, &rreq);   tether_msg_wait_desc(w, rreq, &wd);
//           tether_send_prepare(w, sbuf, n, right, 0, &sreq); tether_msg_send_desc(w, sreq, &sd);
//           kernel<<<g, b, 0, stream>>>(h, sd, wd, ...);
//           tether_msg_wait(w, &sreq, NULL); tether_msg_wait(w, &rreq, NULL);   // frees them (the GPU may be done)
//   kernel: fill sbuf; msg_send<Scope::Block>(h, sd); interior work; msg_wait<Scope::Block>(h, wd); use rbuf;
//
// Contracts (both are collective over the calling group, like every Scope-templated device function):
//  - msg_send<S>(h, d): every thread of the group fences at system scope (its stores to the send buffer are visible
//    to the copy that moves it), the group synchronises, the leader stores d.value into the trigger word (release,
//    system scope). Call it once per descriptor (the send starts once; a second store changes nothing). It returns
//    at once: the send buffer must stay unchanged until a msg_wait on the send's own wait descriptor (or the host's
//    tether_msg_wait) reports it complete.
//  - msg_wait<S>(h, d): the leader polls the completion word (acquire, system scope) until it reaches d.value, then
//    fences and the group synchronises: every thread of the group sees the received bytes after it. Bounded by
//    TETHER_TIMEOUT (h.timeout_ns): on expiry it prints the word and traps (GPU) / aborts (CPU).
//  - msg_test(h, d): one acquire load; true when the request is complete (any single thread).
//  - h: a device handle of the same world as the descriptors (GPU handle in kernels, CPU handle on CPU threads).
//  - Progress is made by the PE's progress thread (tether/msg.h), not by the kernel: a kernel that waits for a
//    message whose send is started by a later kernel on the same stream waits forever (until the timeout).
#pragma once

#include "tether/device.cuh"
#include "tether/msg.h"

namespace tether {
namespace device {

template <Scope S = Scope::Thread>
TETHER_HD void msg_send(const Handle& h, const tether_msg_send_desc_t& d) {
  detail::fenceSc();
  detail::groupSync<S>();
  if (detail::groupRank<S>() == 0) detail::storeRelease(detail::local(h, d.word), d.value);
}

TETHER_HD bool msg_test(const Handle& h, const tether_msg_wait_desc_t& d) {
  return detail::loadAcquire(detail::local(h, d.word)) >= d.value;
}

template <Scope S = Scope::Thread>
TETHER_HD void msg_wait(const Handle& h, const tether_msg_wait_desc_t& d) {
  if (detail::groupRank<S>() == 0) detail::waitValue(h, d.word, Cmp::GE, d.value, "msg_wait");
  detail::groupSync<S>();
  detail::fenceAcqRel();
}

// Persistent requests (tether_msg_persist_desc, tether/msg.h): one descriptor for every round; `round` counts the
// request's starts after the descriptor was taken (1, 2, ...).
//  - msg_start<S>(h, d, round): starts round `round` of the request (a send begins, a receive is posted, once the
//    progress thread sees it; a round started while the previous one is in flight begins when it completes). Fences
//    and synchronises the group as msg_send does (the group's stores to a send buffer are visible to the copy), then
//    the leader stores d.base + round into the start word (release, system scope). Start the rounds of one request
//    in order, from one place at a time (the store is not atomic against other starters).
//  - msg_wait<S>(h, d, round): the leader polls the done word until round `round` is complete (acquire), then the
//    group synchronises: a receive's bytes are visible to the group after it; a send's buffer may be rewritten.
//    Bounded by TETHER_TIMEOUT as msg_wait above.
//  - msg_test(h, d, round): one acquire load; true when round `round` is complete.
template <Scope S = Scope::Thread>
TETHER_HD void msg_start(const Handle& h, const tether_msg_persist_desc_t& d, uint64_t round) {
  detail::fenceSc();
  detail::groupSync<S>();
  if (detail::groupRank<S>() == 0) detail::storeRelease(detail::local(h, d.start), d.base + round);
}

TETHER_HD bool msg_test(const Handle& h, const tether_msg_persist_desc_t& d, uint64_t round) {
  return detail::loadAcquire(detail::local(h, d.done)) >= d.base + round;
}

template <Scope S = Scope::Thread>
TETHER_HD void msg_wait(const Handle& h, const tether_msg_persist_desc_t& d, uint64_t round) {
  if (detail::groupRank<S>() == 0) detail::waitValue(h, d.done, Cmp::GE, d.base + round, "msg_wait (persistent)");
  detail::groupSync<S>();
  detail::fenceAcqRel();
}

}  // namespace device
}  // namespace tether
