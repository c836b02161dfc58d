// Two-sided messaging: stream waits are bounded by TETHER_TIMEOUT (the ctest sets it small), through the CPU stream
// emulation (installed by the test hook, as tests/mp/mp_msg_stream.cpp does). Each PE enqueues, on four streams of
// its own, a stream wait on a request that cannot complete yet, followed by a flag store:
//  1. tether_msg_wait_on_stream on a receive nobody sends to;
//  2. tether_msg_waitall_on_stream on a receive that completes and one nobody sends to (the group word);
//  3. tether_msg_wait_on_stream on a rendezvous send whose receive is not posted;
//  4. tether_msg_startall_on_stream + tether_msg_wait_on_stream on a persistent receive whose peer never starts its
//     send (the round wait, StreamOps::waitReach).
// Every stream must then fail with TETHER_ERR_TIMEOUT (its sticky error, reported by synchronize), naming
// TETHER_TIMEOUT, and must not have run the flag store behind the wait (a stream stops at its first error) -- never
// hang. Then the missing sends and receive are made: every request completes on the host (the requests stay pending
// after their stream wait failed), with the right bytes, and the world finalizes cleanly.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mp_cpu_stream.h"
#include "mp_msg_util.h"
#include "tether/msg.h"

namespace {

unsigned char pattern(int from, int tag, size_t i) { return static_cast<unsigned char>(from * 31 + tag * 7 + i); }

void fill(std::vector<unsigned char>* v, int from, int tag) {
  for (size_t i = 0; i < v->size(); ++i) (*v)[i] = pattern(from, tag, i);
}

void expect(const std::vector<unsigned char>& v, size_t bytes, int from, int tag) {
  for (size_t i = 0; i < bytes; ++i)
    if (v[i] != pattern(from, tag, i)) {
      char msg[128];
      std::snprintf(msg, sizeof msg, "tag %d from PE %d: byte %zu is %u", tag, from, i, v[i]);
      mp::fail(__FILE__, __LINE__, "contents", msg);
    }
}

void expectTimedOut(tether::StreamOps* so, void* stream, const char* what) {
  const tether::Status s = so->synchronize(stream);
  if (s.code() != TETHER_ERR_TIMEOUT)
    mp::fail(__FILE__, __LINE__, what, s.isOk() ? "the stream succeeded" : s.message().c_str());
  if (s.message().find("TETHER_TIMEOUT") == std::string::npos)
    mp::fail(__FILE__, __LINE__, "message lacks TETHER_TIMEOUT", s.message().c_str());
}

}  // namespace

int main() {
  const mp::MsgRing ring = mp::msgRing(1024, 4);
  const tether_t w = ring.w;
  const int me = ring.me, n = ring.n, next = ring.next, prev = ring.prev;
  tether::StreamOps* so = mp::useCpuStreams(w);  // before the first stream operation
  void* s[4] = {};
  for (void*& x : s) MP_CHECK(so->createStream(&x).isOk());
  auto* flags = static_cast<uint64_t*>(mp::hostZeroed(w, 4 * sizeof(uint64_t)));
  MP_OK(tether_barrier_all(w));

  const size_t small = 100, big = 50000;  // eager; rendezvous (eager_bytes 1024)
  std::vector<unsigned char> in1(small, 0), in2a(small, 0), in2b(small, 0), out2a(small), in3(big, 0), out3(big),
      in4(small, 0);
  fill(&out2a, me, 21);
  fill(&out3, me, 30);
  const uint64_t one = 1;

  // 1. a receive nobody sends to (tag 10)
  tether_request_t r1 = TETHER_REQUEST_NULL;
  MP_OK(tether_irecv(w, in1.data(), in1.size(), prev, 10, &r1));
  MP_OK(tether_msg_wait_on_stream(w, r1, s[0]));
  MP_OK(tether_p_on_stream(w, &flags[0], &one, sizeof one, me, s[0]));

  // 2. waitall on a receive that completes (tag 21: sent below) and one nobody sends to (tag 20)
  tether_request_t r2[3] = {};
  MP_OK(tether_irecv(w, in2a.data(), in2a.size(), prev, 21, &r2[0]));
  MP_OK(tether_irecv(w, in2b.data(), in2b.size(), prev, 20, &r2[1]));
  MP_OK(tether_isend(w, out2a.data(), out2a.size(), next, 21, &r2[2]));
  MP_OK(tether_msg_waitall_on_stream(w, 3, r2, s[1]));
  MP_OK(tether_p_on_stream(w, &flags[1], &one, sizeof one, me, s[1]));

  // 3. a rendezvous send (tag 30) whose receive is not posted
  tether_request_t r3 = TETHER_REQUEST_NULL;
  MP_OK(tether_isend_on_stream(w, out3.data(), out3.size(), next, 30, s[2], &r3));
  MP_OK(tether_msg_wait_on_stream(w, r3, s[2]));
  MP_OK(tether_p_on_stream(w, &flags[2], &one, sizeof one, me, s[2]));

  // 4. a persistent receive (tag 40), round started by the stream; the peer's send is not started
  tether_request_t p4 = TETHER_REQUEST_NULL;
  MP_OK(tether_recv_init(w, in4.data(), in4.size(), prev, 40, &p4));
  MP_OK(tether_msg_startall_on_stream(w, 1, &p4, s[3]));
  MP_OK(tether_msg_wait_on_stream(w, p4, s[3]));
  MP_OK(tether_p_on_stream(w, &flags[3], &one, sizeof one, me, s[3]));

  expectTimedOut(so, s[0], "1. wait_on_stream, receive");
  expectTimedOut(so, s[1], "2. waitall_on_stream");
  expectTimedOut(so, s[2], "3. wait_on_stream, rendezvous send");
  expectTimedOut(so, s[3], "4. wait_on_stream, persistent receive");
  for (int k = 0; k < 4; ++k) MP_CHECK(__atomic_load_n(&flags[k], __ATOMIC_ACQUIRE) == 0);
  if (me == 0) std::printf("mp_msg_stream_timeout: 4 stream waits failed with TETHER_ERR_TIMEOUT (%d PEs)\n", n);

  // The missing halves: every request completes on the host.
  MP_OK(tether_barrier_all(w));
  std::vector<unsigned char> out1(small), out2b(small), out4(small);
  fill(&out1, me, 10);
  fill(&out2b, me, 20);
  fill(&out4, me, 40);
  tether_request_t late[4] = {};
  MP_OK(tether_isend(w, out1.data(), out1.size(), next, 10, &late[0]));
  MP_OK(tether_isend(w, out2b.data(), out2b.size(), next, 20, &late[1]));
  MP_OK(tether_irecv(w, in3.data(), in3.size(), prev, 30, &late[2]));
  MP_OK(tether_isend(w, out4.data(), out4.size(), next, 40, &late[3]));
  tether_msg_status_t st;
  MP_OK(tether_msg_wait(w, &r1, &st));
  MP_CHECK(st.source == prev && st.tag == 10 && st.bytes == small);
  MP_OK(tether_msg_waitall(w, 3, r2, nullptr));
  MP_OK(tether_msg_wait(w, &r3, nullptr));
  MP_OK(tether_msg_wait(w, &p4, &st));  // the round the stream started
  MP_CHECK(st.source == prev && st.tag == 40 && st.bytes == small);
  MP_OK(tether_msg_waitall(w, 4, late, nullptr));
  expect(in1, small, prev, 10);
  expect(in2a, small, prev, 21);
  expect(in2b, small, prev, 20);
  expect(in3, big, prev, 30);
  expect(in4, small, prev, 40);
  MP_OK(tether_msg_request_free(w, &p4));
  if (me == 0) std::printf("mp_msg_stream_timeout: the requests completed on the host afterwards\n");

  MP_OK(tether_barrier_all(w));
  MP_OK(tether_msg_finalize(w));
  for (void* x : s) MP_CHECK(so->destroyStream(x).code() == TETHER_ERR_TIMEOUT);  // (it reports the sticky error)
  if (me == 0) std::printf("mp_msg_stream_timeout: OK\n");
  return mp::finish();
}
