// Shared start of the two-sided messaging tests: mp::init, the world, its ring neighbours, tether_msg_init with small
// rings (eager_bytes, slots) so that wrap-around, flow control and rendezvous happen at small sizes.
#pragma once

#include <cstddef>

#include "mp_util.h"
#include "tether/msg.h"

namespace mp {

struct MsgRing {
  tether_t w;
  int me, n, next, prev;
};

inline MsgRing msgRing(size_t eagerBytes, size_t slots) {
  init();
  MsgRing r;
  r.w = world();
  r.me = tether_my_pe(r.w);
  r.n = tether_n_pes(r.w);
  r.next = (r.me + 1) % r.n;
  r.prev = (r.me + r.n - 1) % r.n;
  tether_msg_attr_t attr{};
  attr.eager_bytes = eagerBytes;
  attr.slots = slots;
  MP_OK(tether_msg_init(r.w, &attr));
  return r;
}

}  // namespace mp
