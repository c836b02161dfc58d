// Direct rendezvous (TETHER_MSG_DIRECT, docs/msg.md): the receiver reads a rendezvous message straight from the send
// buffer -- with World::get when the buffer is symmetric, with process_vm_readv when it is private host memory.
// Ring exchange over every pairing of symmetric / private send and receive buffers, receive posted before the send
// (matched on arrival) and after it (matched from the unexpected list), a truncating receive, a zero-byte receive
// buffer, and many messages in flight at once (more than the 4096 claim words: the rest take the ring). Run with
// TETHER_MSG_DIRECT=0 too (ctest mp_msg_direct_ring): the same results through the ring.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "mp_msg_util.h"

namespace {

unsigned char pattern(int from, size_t size, size_t i, int k) {
  return static_cast<unsigned char>(from * 31 + size * 7 + i * 13 + k * 5 + (i >> 9));
}

}  // namespace

int main() {
  const mp::MsgRing ring = mp::msgRing(1024, 8);
  const tether_t w = ring.w;
  const int me = ring.me, next = ring.next, prev = ring.prev;
  const size_t maxBytes = size_t{1} << 20;
  auto* symOut = static_cast<unsigned char*>(mp::hostZeroed(w, maxBytes));
  auto* symIn = static_cast<unsigned char*>(mp::hostZeroed(w, maxBytes + 64));
  std::vector<unsigned char> privOut(maxBytes), privIn(maxBytes + 64);
  int tag = 0;
  for (int symSend = 0; symSend < 2; ++symSend)
    for (int symRecv = 0; symRecv < 2; ++symRecv)
      for (int early = 0; early < 2; ++early)
        for (size_t size : {size_t{1025}, size_t{70000}, maxBytes}) {
          ++tag;
          unsigned char* out = symSend ? symOut : privOut.data();
          unsigned char* in = symRecv ? symIn : privIn.data();
          for (size_t i = 0; i < size; ++i) out[i] = pattern(me, size, i, tag);
          for (size_t i = 0; i < size + 64; ++i) in[i] = 0xee;
          tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
          if (early) MP_OK(tether_irecv(w, in, size, prev, tag, &rr));
          MP_OK(tether_isend(w, out, size, next, tag, &sr));
          if (!early) {
            MP_OK(tether_barrier_all(w));  // the request-to-send is (most likely) unexpected by now
            MP_OK(tether_irecv(w, in, size, prev, tag, &rr));
          }
          tether_msg_status_t st;
          MP_OK(tether_msg_wait(w, &rr, &st));
          MP_OK(tether_msg_wait(w, &sr, nullptr));
          MP_CHECK(st.source == prev && st.tag == tag && st.bytes == size);
          for (size_t i = 0; i < size; ++i)
            if (in[i] != pattern(prev, size, i, tag)) {
              char msg[160];
              std::snprintf(msg, sizeof msg, "send %s -> recv %s, %s receive, %zu bytes: byte %zu is %u",
                            symSend ? "symmetric" : "private", symRecv ? "symmetric" : "private",
                            early ? "early" : "late", size, i, in[i]);
              mp::fail(__FILE__, __LINE__, "contents", msg);
            }
          for (size_t i = size; i < size + 64; ++i) MP_CHECK(in[i] == 0xee);
          MP_OK(tether_barrier_all(w));  // nobody rewrites out before every receiver has it
        }
  if (me == 0) std::printf("mp_msg_direct: symmetric/private x symmetric/private, early/late receives OK\n");

  // Truncation and a zero-byte receive buffer: the prefix arrives, TETHER_ERR_TRUNCATED; the sends complete.
  for (int sym = 0; sym < 2; ++sym) {
    unsigned char* out = sym ? symOut : privOut.data();
    const size_t size = 50000;
    for (size_t i = 0; i < size; ++i) out[i] = pattern(me, size, i, 99);
    std::vector<unsigned char> in(size, 0);
    tether_request_t rr[2], sr[2];
    MP_OK(tether_irecv(w, in.data(), 3000, prev, 500 + sym, &rr[0]));
    MP_OK(tether_irecv(w, in.data() + 3000, 0, prev, 600 + sym, &rr[1]));
    MP_OK(tether_isend(w, out, size, next, 500 + sym, &sr[0]));
    MP_OK(tether_isend(w, out, size, next, 600 + sym, &sr[1]));
    tether_msg_status_t st[2];
    MP_CHECK(tether_msg_waitall(w, 2, rr, st) == TETHER_ERR_TRUNCATED);
    MP_CHECK(st[0].error == TETHER_ERR_TRUNCATED && st[0].bytes == 3000);
    MP_CHECK(st[1].error == TETHER_ERR_TRUNCATED && st[1].bytes == 0);
    MP_OK(tether_msg_waitall(w, 2, sr, nullptr));
    for (size_t i = 0; i < 3000; ++i) MP_CHECK(in[i] == pattern(prev, size, i, 99));
    MP_CHECK(in[3000] == 0);
    MP_OK(tether_barrier_all(w));
  }
  if (me == 0) std::printf("mp_msg_direct: truncation, zero-byte receive OK\n");

  // Many at once: 4200 rendezvous sends from private memory (claim words run out), received in reverse order.
  {
    const size_t m = 4200, size = 1100;
    std::vector<unsigned char> out(m * size), in(m * size, 0);
    for (size_t k = 0; k < m; ++k)
      for (size_t i = 0; i < size; ++i) out[k * size + i] = pattern(me, size, i, static_cast<int>(k));
    std::vector<tether_request_t> sr(m), rr(m);
    for (size_t k = 0; k < m; ++k) MP_OK(tether_isend(w, out.data() + k * size, size, next, 1000 + static_cast<int>(k), &sr[k]));
    for (size_t k = m; k-- > 0;)
      MP_OK(tether_irecv(w, in.data() + k * size, size, prev, 1000 + static_cast<int>(k), &rr[k]));
    MP_OK(tether_msg_waitall(w, m, rr.data(), nullptr));
    MP_OK(tether_msg_waitall(w, m, sr.data(), nullptr));
    for (size_t k = 0; k < m; ++k)
      for (size_t i = 0; i < size; ++i) MP_CHECK(in[k * size + i] == pattern(prev, size, i, static_cast<int>(k)));
  }
  if (me == 0) std::printf("mp_msg_direct: 4200 in flight OK\n");

  MP_OK(tether_barrier_all(w));
  MP_OK(tether_msg_finalize(w));
  if (me == 0) std::printf("mp_msg_direct: OK\n");
  return mp::finish();
}
