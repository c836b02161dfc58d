// Two-sided messaging, stream model (tether/msg.h: tether_isend_on_stream, tether_msg_wait_on_stream), through the
// CPU stream emulation (installed by the test hook, as tests/mp/mp_stream.cpp does):
//  1. ring exchange, eager and rendezvous sizes: host-posted receive, send started by the stream, the stream waits for
//     the receive and then sets a flag the host waits for; contents checked;
//  2. a gated send: the stream waits on a word before its isend_on_stream; the receiver must not complete while the
//     gate is shut (30 ms of tether_msg_test), and completes once the sender opens it;
//  3. a busy host: after enqueueing, the host sleeps in neither tether nor the stream; the progress thread must move
//     a rendezvous message so that the stream's flag is set when the host looks;
//  4. bad requests fail with TETHER_ERR_INVALID_ARG;
//  5. prepared sends (tether_send_prepare) posted with one tether_msg_post_all_on_stream behind a gate: nothing moves
//     while the gate is shut; then both neighbours' messages arrive, in the order the sends were prepared (the post
//     lists them in the reverse order; two receives with TETHER_ANY_TAG must see tag 10 before tag 11).
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "mp_cpu_stream.h"
#include "tether/msg.h"
#include "tether/tether_typed.h"

namespace {

unsigned char pattern(int from, size_t size, size_t i) { return static_cast<unsigned char>(from * 29 + size * 3 + i); }

void fillFor(std::vector<unsigned char>* v, int from, size_t size) {
  v->assign(size, 0);
  for (size_t i = 0; i < size; ++i) (*v)[i] = pattern(from, size, i);
}

void expect(const std::vector<unsigned char>& got, int from, size_t size, const char* what) {
  for (size_t i = 0; i < size; ++i)
    if (got[i] != pattern(from, size, i)) {
      char msg[128];
      std::snprintf(msg, sizeof msg, "%s: %zu bytes from PE %d: byte %zu is %u", what, size, from, i, got[i]);
      mp::fail(__FILE__, __LINE__, "contents", msg);
    }
}

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w), next = (me + 1) % n, prev = (me + n - 1) % n;
  tether::StreamOps* so = mp::useCpuStreams(w);
  void* s = nullptr;
  MP_CHECK(so->createStream(&s).isOk());
  tether_msg_attr_t attr{};
  attr.eager_bytes = 1024;
  attr.slots = 4;
  MP_OK(tether_msg_init(w, &attr));
  auto* flag = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  auto* gate = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  MP_OK(tether_barrier_all(w));

  // 1. ring exchange
  uint64_t round = 0;
  for (size_t size : {size_t{0}, size_t{8}, size_t{1024}, size_t{1025}, size_t{200000}}) {
    ++round;
    std::vector<unsigned char> out, in(size + 1, 0);
    fillFor(&out, me, size);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_irecv(w, in.data(), size, prev, 3, &rr));
    MP_OK(tether_isend_on_stream(w, out.data(), size, next, 3, s, &sr));
    const tether_request_t both[2] = {sr, rr};
    MP_OK(tether_msg_waitall_on_stream(w, 2, both, s));
    MP_OK(tether_p_on_stream(w, flag, &round, sizeof round, me, s));
    MP_OK(tether_uint64_wait_until(w, flag, TETHER_CMP_GE, round));
    expect(in, prev, size, "ring");
    tether_msg_status_t st;
    MP_OK(tether_msg_wait(w, &rr, &st));
    MP_CHECK(st.source == prev && st.tag == 3 && st.bytes == size);
    MP_OK(tether_msg_wait(w, &sr, nullptr));
  }
  if (me == 0) std::printf("mp_msg_stream: ring exchange on the stream OK (%d PEs)\n", n);

  // 2. gated send
  {
    const size_t size = 5000;
    std::vector<unsigned char> out, in(size, 0);
    fillFor(&out, me, size);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_irecv(w, in.data(), size, prev, 4, &rr));
    MP_OK(tether_signal_wait_until_on_stream(w, gate, TETHER_CMP_GE, 1, s));
    MP_OK(tether_isend_on_stream(w, out.data(), size, next, 4, s, &sr));
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
    while (std::chrono::steady_clock::now() < until) {
      int done = 0;
      MP_OK(tether_msg_test(w, &rr, &done, nullptr));
      MP_CHECK(done == 0);  // prev's gate is shut: its send has not started
    }
    MP_OK(tether_barrier_all(w));
    MP_OK(tether_signal_op(w, gate, 1, TETHER_SIGNAL_SET, me));
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    expect(in, prev, size, "gated");
  }
  if (me == 0) std::printf("mp_msg_stream: a send gated on the stream starts only when the stream gets there OK\n");

  // 3. busy host: the progress thread moves the rendezvous message
  {
    const size_t size = 300000;
    std::vector<unsigned char> out, in(size, 0);
    fillFor(&out, me, size);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_irecv(w, in.data(), size, prev, 5, &rr));
    MP_OK(tether_isend_on_stream(w, out.data(), size, next, 5, s, &sr));
    MP_OK(tether_msg_wait_on_stream(w, rr, s));
    MP_OK(tether_msg_wait_on_stream(w, sr, s));
    ++round;
    MP_OK(tether_p_on_stream(w, flag, &round, sizeof round, me, s));
    // Sleep outside tether (up to 10 s, checking the flag with plain loads): only the progress thread can make it.
    bool seen = false;
    for (int i = 0; i < 1000 && !seen; ++i) {
      seen = __atomic_load_n(flag, __ATOMIC_ACQUIRE) >= round;
      if (!seen) usleep(10000);
    }
    MP_CHECK(seen);
    expect(in, prev, size, "busy host");
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
  }
  if (me == 0) std::printf("mp_msg_stream: the progress thread moves messages while the host is busy OK\n");

  // 4. bad requests
  MP_CHECK(tether_msg_wait_on_stream(w, 12345678, s) == TETHER_ERR_INVALID_ARG);
  MP_CHECK(tether_isend_on_stream(w, flag, 8, n, 0, s, nullptr) == TETHER_ERR_INVALID_ARG);
  tether_request_t bad = TETHER_REQUEST_NULL;
  MP_CHECK(tether_isend_on_stream(w, nullptr, 8, next, 0, s, &bad) == TETHER_ERR_INVALID_ARG);

  // 5. prepared sends, posted all at once on the stream
  {
    const size_t sizes[2] = {700, 70000};  // one eager, one rendezvous
    std::vector<unsigned char> out[2], in[2];
    tether_request_t sr[2], rr[2];
    for (int k = 0; k < 2; ++k) {
      fillFor(&out[k], me + 100 * k, sizes[k]);
      in[k].assign(sizes[1], 0);
      MP_OK(tether_irecv(w, in[k].data(), sizes[1], prev, TETHER_ANY_TAG, &rr[k]));
    }
    for (int k = 0; k < 2; ++k) MP_OK(tether_send_prepare(w, out[k].data(), sizes[k], next, 10 + k, &sr[k]));
    MP_OK(tether_signal_wait_until_on_stream(w, gate, TETHER_CMP_GE, 2, s));
    const tether_request_t twice[3] = {sr[1], sr[0], sr[1]};  // refused, and changes nothing (both still postable)
    MP_CHECK(tether_msg_post_all_on_stream(w, 3, twice, s) == TETHER_ERR_INVALID_ARG);
    const tether_request_t reversed[2] = {sr[1], sr[0]};
    MP_OK(tether_msg_post_all_on_stream(w, 2, reversed, s));
    MP_CHECK(tether_msg_post_all_on_stream(w, 1, &sr[0], s) == TETHER_ERR_INVALID_ARG);  // posted already
    MP_CHECK(tether_msg_post(w, sr[1]) == TETHER_ERR_INVALID_ARG);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
    while (std::chrono::steady_clock::now() < until) {
      int done = 0;
      MP_OK(tether_msg_test(w, &rr[0], &done, nullptr));
      MP_CHECK(done == 0);
    }
    MP_OK(tether_barrier_all(w));
    MP_OK(tether_signal_op(w, gate, 2, TETHER_SIGNAL_SET, me));
    tether_msg_status_t st[2];
    MP_OK(tether_msg_waitall(w, 2, rr, st));
    MP_OK(tether_msg_waitall(w, 2, sr, nullptr));
    for (int k = 0; k < 2; ++k) {
      MP_CHECK(st[k].tag == 10 + k && st[k].bytes == sizes[k] && st[k].source == prev);
      in[k].resize(sizes[k]);
      expect(in[k], prev + 100 * k, sizes[k], "post_all");
    }
  }
  if (me == 0) std::printf("mp_msg_stream: prepared sends posted at once on the stream, in prepared order OK\n");

  MP_CHECK(so->synchronize(s).isOk());
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_msg_finalize(w));
  MP_CHECK(so->destroyStream(s).isOk());
  if (me == 0) std::printf("mp_msg_stream: OK\n");
  return mp::finish();
}
