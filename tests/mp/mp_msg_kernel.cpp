// Two-sided messaging: prepared sends started from the host (tether_msg_post) and the kernel model (descriptors,
// tether/msg_device.cuh) with the device API compiled for the host: a "kernel" is a group of kThreads CPU threads
// acting as one block (HostScope<Block>), using the CPU device handle. Sections:
//  1. host post: a prepared send moves only once posted; a plain isend made after it to the same PE waits behind it
//     and the receiver (two TETHER_ANY_TAG receives) sees the prepared one first;
//  2. kernel model, iterations of a ring exchange (eager and rendezvous sizes): the host posts the receive and
//     prepares the send, takes the descriptors and starts the "kernel"; the kernel fills the send buffer, msg_send,
//     msg_wait on the receive, checks the bytes, msg_wait on the send; the host makes no tether call until the kernel
//     has finished (only the progress thread moves the messages), then frees the requests;
//  3. msg_test: false while the neighbour's send has not started, true after;
//  4. bad requests fail with TETHER_ERR_INVALID_ARG (never a crash).
// With the argument `timeout` (`timeout-persist`), the kernel's msg_wait on a receive nobody sends to (on round 1 of
// a persistent receive whose peer never starts its send) must end the PE within TETHER_TIMEOUT, naming the wait: the
// device API's waits abort on a CPU thread (trap on a GPU). The ctest expects that failure (expect_fail.sh).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "mp_host_kernel.h"
#include "mp_msg_util.h"
#include "tether/msg.h"
#include "tether/msg_device.cuh"

namespace dev = tether::device;

namespace {

constexpr int kThreads = 4;

unsigned char pattern(int from, int iter, size_t i) { return static_cast<unsigned char>(from * 37 + iter * 11 + i); }

// Runs body(tid) on kThreads CPU threads forming one block.
template <typename F>
void launch(F body) {
  mp::launchHostBlock(kThreads, body);
}

// A kernel's wait on a message that never comes: returns only if the wait does (the test then fails).
void neverSent(const mp::MsgRing& ring, const tether_device_handle_t& h, bool persistent) {
  uint64_t word = 0;
  tether_request_t rr = TETHER_REQUEST_NULL;
  if (persistent) {
    tether_msg_persist_desc_t d;
    MP_OK(tether_recv_init(ring.w, &word, sizeof word, ring.prev, 99, &rr));
    MP_OK(tether_msg_persist_desc(ring.w, rr, &d));
    launch([&](int) {
      dev::msg_start<dev::Scope::Block>(h, d, 1);
      dev::msg_wait<dev::Scope::Block>(h, d, 1);
    });
  } else {
    tether_msg_wait_desc_t d;
    MP_OK(tether_irecv(ring.w, &word, sizeof word, ring.prev, 99, &rr));
    MP_OK(tether_msg_wait_desc(ring.w, rr, &d));
    launch([&](int) { dev::msg_wait<dev::Scope::Block>(h, d); });
  }
  std::fprintf(stderr, "mp_msg_kernel: msg_wait returned on a message that was never sent\n");
}

}  // namespace

int main(int argc, char** argv) {
  const mp::MsgRing ring = mp::msgRing(2048, 4);
  const tether_t w = ring.w;
  const int me = ring.me, n = ring.n, next = ring.next, prev = ring.prev;
  tether_device_handle_t h;
  MP_OK(tether_device_handle_cpu(w, &h));
  if (argc > 1) {
    const bool persistent = std::strcmp(argv[1], "timeout-persist") == 0;
    MP_CHECK(persistent || std::strcmp(argv[1], "timeout") == 0);
    neverSent(ring, h, persistent);
    return 1;
  }

  // 1. host post, and the order of sends to one PE
  {
    std::vector<unsigned char> a(3000, static_cast<unsigned char>(me)), b(10, static_cast<unsigned char>(me + 1));
    std::vector<unsigned char> in0(3000, 0), in1(3000, 0);
    tether_request_t rr[2], sa = TETHER_REQUEST_NULL, sb = TETHER_REQUEST_NULL;
    MP_OK(tether_irecv(w, in0.data(), in0.size(), prev, TETHER_ANY_TAG, &rr[0]));
    MP_OK(tether_irecv(w, in1.data(), in1.size(), prev, TETHER_ANY_TAG, &rr[1]));
    MP_OK(tether_send_prepare(w, a.data(), a.size(), next, 20, &sa));
    MP_OK(tether_isend(w, b.data(), b.size(), next, 21, &sb));  // made after sa: queued behind it
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
    while (std::chrono::steady_clock::now() < until) {
      int done = 0;
      MP_OK(tether_msg_test(w, &rr[0], &done, nullptr));
      MP_CHECK(done == 0);  // prev's sends have not started
    }
    MP_OK(tether_barrier_all(w));
    MP_OK(tether_msg_post(w, sa));
    MP_CHECK(tether_msg_post(w, sa) == TETHER_ERR_INVALID_ARG);  // once only
    tether_msg_status_t st[2];
    MP_OK(tether_msg_waitall(w, 2, rr, st));
    MP_CHECK(st[0].tag == 20 && st[0].bytes == 3000 && st[1].tag == 21 && st[1].bytes == 10);
    MP_CHECK(in0[0] == static_cast<unsigned char>(prev) && in0[2999] == static_cast<unsigned char>(prev));
    MP_CHECK(in1[0] == static_cast<unsigned char>(prev + 1) && in1[9] == static_cast<unsigned char>(prev + 1));
    MP_OK(tether_msg_wait(w, &sa, nullptr));
    MP_OK(tether_msg_wait(w, &sb, nullptr));
  }
  if (me == 0) std::printf("mp_msg_kernel: prepared send posted from the host, order kept OK (%d PEs)\n", n);

  // 2. kernel model
  const size_t sizes[] = {0, 8, 2048, 2049, 100000};
  for (int iter = 0; iter < 10; ++iter) {
    const size_t size = sizes[iter % 5];
    std::vector<unsigned char> out(size + 1, 0), in(size + 1, 0);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    tether_msg_send_desc_t sd;
    tether_msg_wait_desc_t rd, sw;
    MP_OK(tether_irecv(w, in.data(), size, prev, iter, &rr));
    MP_OK(tether_send_prepare(w, out.data(), size, next, iter, &sr));
    MP_OK(tether_msg_send_desc(w, sr, &sd));
    MP_OK(tether_msg_wait_desc(w, rr, &rd));
    MP_OK(tether_msg_wait_desc(w, sr, &sw));
    int bad = 0;
    launch([&](int tid) {
      for (size_t i = static_cast<size_t>(tid); i < size; i += kThreads) out[i] = pattern(me, iter, i);
      dev::msg_send<dev::Scope::Block>(h, sd);
      dev::msg_wait<dev::Scope::Block>(h, rd);
      for (size_t i = static_cast<size_t>(tid); i < size; i += kThreads)
        if (in[i] != pattern(prev, iter, i)) __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
      dev::msg_wait<dev::Scope::Block>(h, sw);
    });
    MP_CHECK(bad == 0);
    MP_CHECK(dev::msg_test(h, rd) && dev::msg_test(h, sw));
    tether_msg_status_t st;
    MP_OK(tether_msg_wait(w, &rr, &st));
    MP_CHECK(st.source == prev && st.tag == iter && st.bytes == size);
    MP_OK(tether_msg_wait(w, &sr, nullptr));
  }
  if (me == 0) std::printf("mp_msg_kernel: kernel-model ring exchange (CPU device API) OK\n");

  // 3. msg_test before and after the neighbour's start
  {
    uint64_t v = 0, got = 0;
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    tether_msg_wait_desc_t rd;
    tether_msg_send_desc_t sd;
    MP_OK(tether_irecv(w, &got, sizeof got, prev, 77, &rr));
    MP_OK(tether_msg_wait_desc(w, rr, &rd));
    v = 1000 + static_cast<uint64_t>(me);
    MP_OK(tether_send_prepare(w, &v, sizeof v, next, 77, &sr));
    MP_OK(tether_msg_send_desc(w, sr, &sd));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    MP_CHECK(!dev::msg_test(h, rd));  // nobody started prev's send yet
    MP_OK(tether_barrier_all(w));
    dev::msg_send(h, sd);
    dev::msg_wait(h, rd);
    MP_CHECK(dev::msg_test(h, rd) && got == 1000 + static_cast<uint64_t>(prev));
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
  }
  if (me == 0) std::printf("mp_msg_kernel: msg_test OK\n");

  // 4. bad requests
  {
    uint64_t word = 0;
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL, bad = TETHER_REQUEST_NULL;
    tether_msg_send_desc_t sd;
    tether_msg_wait_desc_t wd;
    MP_OK(tether_irecv(w, &word, sizeof word, prev, 88, &rr));
    MP_CHECK(tether_msg_send_desc(w, rr, &sd) == TETHER_ERR_INVALID_ARG);  // a receive
    MP_CHECK(tether_msg_post(w, rr) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_msg_post_on_stream(w, rr, nullptr) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_msg_send_desc(w, 987654321, &sd) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_msg_wait_desc(w, 987654321, &wd) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_msg_wait_desc(w, rr, nullptr) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_send_prepare(w, &word, sizeof word, n, 0, &bad) != TETHER_SUCCESS && bad == TETHER_REQUEST_NULL);
    MP_CHECK(tether_send_prepare(w, &word, sizeof word, next, -3, &bad) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_send_prepare(w, &word, sizeof word, next, 0, nullptr) == TETHER_ERR_INVALID_ARG);
    uint64_t v = 5;
    MP_OK(tether_send_prepare(w, &v, sizeof v, next, 88, &sr));
    MP_CHECK(tether_msg_send_desc(w, sr, nullptr) == TETHER_ERR_INVALID_ARG);
    MP_OK(tether_msg_send_desc(w, sr, &sd));
    MP_CHECK(tether_msg_send_desc(w, sr, &sd) == TETHER_ERR_INVALID_ARG);  // started once (by the descriptor)
    MP_CHECK(tether_msg_post(w, sr) == TETHER_ERR_INVALID_ARG);
    dev::msg_send(h, sd);
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    MP_CHECK(word == 5);
  }
  if (me == 0) std::printf("mp_msg_kernel: bad requests rejected OK\n");

  MP_OK(tether_barrier_all(w));
  MP_OK(tether_msg_finalize(w));
  if (me == 0) std::printf("mp_msg_kernel: OK\n");
  return mp::finish();
}
