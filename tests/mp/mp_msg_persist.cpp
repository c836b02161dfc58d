// Persistent requests (tether/msg.h: tether_send_init / tether_recv_init, tether_msg_start / startall /
// startall_on_stream, tether_msg_persist_desc, tether_msg_request_free) in the three models, without a GPU: the
// stream model through the CPU stream emulation (installed by the test hook, as tests/mp/mp_msg_stream.cpp does), the
// kernel model with the device API compiled for the host (a block of CPU threads, as tests/mp/mp_msg_kernel.cpp).
// Every message's bytes name its source, destination and round, so a byte from another round or PE fails the check.
//  1. host model, ring: 30 rounds per size (0 B, eager, eager + 1, rendezvous), tether_msg_start / startall,
//     completed by waitall, wait or a test loop; the handles stay valid (not TETHER_REQUEST_NULL); statuses per round;
//  2. host model, all pairs (self included), sizes by pair, 10 rounds of one startall + one waitall; and n receives
//     with TETHER_ANY_PE / TETHER_ANY_TAG, each round's sources told apart by the status;
//  3. stream model: 12 rounds enqueued at once behind a gate (copy in, startall_on_stream, waitall_on_stream, copy out),
//     nothing started while the gate is shut (the requests stay inactive for the host), then the host makes no tether
//     call until the stream's last flag (the progress thread does it all); every round's bytes checked; a mixed
//     waitall_on_stream (an ordinary receive and a persistent send) and wait_on_stream;
//  4. kernel model: one CPU "kernel" runs 25 rounds with one descriptor per request (msg_start the receive, fill,
//     msg_start the send, msg_wait, check, msg_wait the send), no host call meanwhile; the applications' scheme (two
//     receive requests by round parity, each started one round ahead); descriptors taken again after host rounds
//     (round numbers count from the descriptor);
//  5. misuse: starting an active request (host), a request listed twice, freeing an active one, calls on requests
//     that are not persistent (or freed), persistent requests given to the ordinary calls, bad arguments; waits and
//     tests on an inactive request return at once with an empty status; a truncated round fails only itself;
//  6. random (MP_SEED, printed): a persistent send and receive per ordered pair with a random size, random pairs
//     active per round, started from the host (start / startall, in random order) or the stream, completed by waitall,
//     waits, test loops or waitany.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "mp_cpu_stream.h"
#include "mp_host_kernel.h"
#include "mp_msg_util.h"
#include "tether/msg.h"
#include "tether/msg_device.cuh"
#include "tether/tether_typed.h"

namespace dev = tether::device;

namespace {

constexpr size_t kEager = 2048;
constexpr int kThreads = 4;
using Bytes = std::vector<unsigned char>;

struct Ctx {
  tether_t w;
  int me, n, next, prev;
  tether::StreamOps* so;
  void* stream;
  tether_device_handle_t h;
};

unsigned char pattern(int from, int to, uint64_t round, size_t i) {
  return static_cast<unsigned char>(from * 37 + to * 101 + round * 13 + i * 7 + (i >> 8));
}

void fillFor(unsigned char* p, size_t size, int from, int to, uint64_t round) {
  for (size_t i = 0; i < size; ++i) p[i] = pattern(from, to, round, i);
}

void expectFrom(const unsigned char* p, size_t size, int from, int to, uint64_t round, const char* what) {
  for (size_t i = 0; i < size; ++i)
    if (p[i] != pattern(from, to, round, i)) {
      char msg[192];
      std::snprintf(msg, sizeof msg, "%s: round %" PRIu64 ", %zu bytes from PE %d to PE %d: byte %zu is %u, not %u",
                    what, round, size, from, to, i, p[i], pattern(from, to, round, i));
      mp::fail(__FILE__, __LINE__, "contents", msg);
    }
}

bool emptyStatus(const tether_msg_status_t& st) {
  return st.source == TETHER_ANY_PE && st.tag == TETHER_ANY_TAG && st.bytes == 0 && st.error == TETHER_SUCCESS;
}

void freeBoth(tether_t w, tether_request_t* a, tether_request_t* b) {
  MP_OK(tether_msg_request_free(w, a));
  MP_OK(tether_msg_request_free(w, b));
  MP_CHECK(*a == TETHER_REQUEST_NULL && *b == TETHER_REQUEST_NULL);
}

// ---- 1. host model, ring -----------------------------------------------------------------------------------------

void hostRing(const Ctx& c) {
  const tether_t w = c.w;
  for (size_t size : {size_t{0}, size_t{8}, kEager, kEager + 1, size_t{100000}}) {
    Bytes out(size), in(size + 1);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_recv_init(w, in.data(), size, c.prev, 5, &rr));
    MP_OK(tether_send_init(w, out.data(), size, c.next, 5, &sr));
    MP_CHECK(rr != TETHER_REQUEST_NULL && sr != TETHER_REQUEST_NULL && rr != sr);
    for (uint64_t round = 1; round <= 30; ++round) {
      fillFor(out.data(), size, c.me, c.next, round);
      std::memset(in.data(), 0, in.size());
      tether_request_t both[2] = {rr, sr};
      if (round % 3 == 0) {
        MP_OK(tether_msg_start(w, rr));
        MP_OK(tether_msg_start(w, sr));
      } else {
        MP_OK(tether_msg_startall(w, 2, both));
      }
      tether_msg_status_t st[2];
      if (round % 3 == 1) {
        for (int k = 0; k < 2; ++k) {
          int done = 0;
          while (!done) MP_OK(tether_msg_test(w, &both[k], &done, &st[k]));
        }
      } else if (round % 3 == 2) {
        MP_OK(tether_msg_wait(w, &both[0], &st[0]));
        MP_OK(tether_msg_wait(w, &both[1], &st[1]));
      } else {
        MP_OK(tether_msg_waitall(w, 2, both, st));
      }
      MP_CHECK(both[0] == rr && both[1] == sr);  // persistent: the handles stay
      MP_CHECK(st[0].source == c.prev && st[0].tag == 5 && st[0].bytes == size && st[0].error == TETHER_SUCCESS);
      MP_CHECK(st[1].source == c.next && st[1].tag == 5 && st[1].bytes == size && st[1].error == TETHER_SUCCESS);
      expectFrom(in.data(), size, c.prev, c.me, round, "host ring");
      MP_CHECK(in[size] == 0);
    }
    freeBoth(w, &rr, &sr);
  }
  if (c.me == 0) std::printf("mp_msg_persist: host-model ring, 30 rounds per size OK (%d PEs)\n", c.n);
}

// ---- 2. host model, all pairs, and wildcard receives -------------------------------------------------------------

size_t pairBytes(int from, int to) {
  const size_t sizes[] = {16, kEager, 20000};
  return sizes[(from * 7 + to * 3) % 3];
}

void allPairs(const Ctx& c) {
  const tether_t w = c.w;
  const size_t n = static_cast<size_t>(c.n);
  std::vector<Bytes> out(n), in(n);
  std::vector<tether_request_t> reqs(2 * n);  // receives first, then sends
  for (int p = 0; p < c.n; ++p) {
    const size_t i = static_cast<size_t>(p);
    out[i].resize(pairBytes(c.me, p));
    in[i].resize(pairBytes(p, c.me));
    MP_OK(tether_recv_init(w, in[i].data(), in[i].size(), p, 7, &reqs[i]));
    MP_OK(tether_send_init(w, out[i].data(), out[i].size(), p, 7, &reqs[n + i]));
  }
  std::vector<tether_msg_status_t> st(2 * n);
  for (uint64_t round = 1; round <= 10; ++round) {
    for (int p = 0; p < c.n; ++p) fillFor(out[static_cast<size_t>(p)].data(), out[static_cast<size_t>(p)].size(), c.me, p, round);
    MP_OK(tether_msg_startall(w, 2 * n, reqs.data()));
    MP_OK(tether_msg_waitall(w, 2 * n, reqs.data(), st.data()));
    for (int p = 0; p < c.n; ++p) {
      const size_t i = static_cast<size_t>(p);
      MP_CHECK(st[i].source == p && st[i].bytes == in[i].size());
      expectFrom(in[i].data(), in[i].size(), p, c.me, round, "all pairs");
    }
  }
  for (tether_request_t& r : reqs) MP_OK(tether_msg_request_free(w, &r));

  // n receives from any PE with any tag; every PE sends one message (tag = its PE) to every PE each round.
  std::vector<Bytes> any(n, Bytes(64)), mine(n, Bytes(64));
  for (size_t i = 0; i < n; ++i) {
    MP_OK(tether_recv_init(w, any[i].data(), 64, TETHER_ANY_PE, TETHER_ANY_TAG, &reqs[i]));
    MP_OK(tether_send_init(w, mine[i].data(), 64, static_cast<int>(i), c.me, &reqs[n + i]));
  }
  for (uint64_t round = 1; round <= 8; ++round) {
    for (size_t i = 0; i < n; ++i) fillFor(mine[i].data(), 64, c.me, static_cast<int>(i), round);
    MP_OK(tether_msg_startall(w, n, reqs.data()));  // the receives first: every message finds one posted or waits
    MP_OK(tether_barrier_all(w));
    MP_OK(tether_msg_startall(w, n, reqs.data() + n));
    MP_OK(tether_msg_waitall(w, 2 * n, reqs.data(), st.data()));
    std::vector<int> seen(n, 0);
    for (size_t i = 0; i < n; ++i) {
      MP_CHECK(st[i].source >= 0 && st[i].source < c.n && st[i].tag == st[i].source && st[i].bytes == 64);
      ++seen[static_cast<size_t>(st[i].source)];
      expectFrom(any[i].data(), 64, st[i].source, c.me, round, "wildcard");
    }
    for (int s : seen) MP_CHECK(s == 1);
    MP_OK(tether_barrier_all(w));  // no PE's next round reaches a receive of this one
  }
  for (tether_request_t& r : reqs) MP_OK(tether_msg_request_free(w, &r));
  if (c.me == 0) std::printf("mp_msg_persist: all pairs and wildcard receives OK\n");
}

// ---- 3. stream model ---------------------------------------------------------------------------------------------

void streamRounds(const Ctx& c, uint64_t* gate, uint64_t* flag) {
  const tether_t w = c.w;
  uint64_t gateValue = 0, flagValue = 0;
  for (size_t size : {size_t{700}, size_t{70000}}) {
    constexpr int kRounds = 12;
    Bytes sendBuf(size), recvBuf(size, 0);
    std::vector<Bytes> stage(kRounds, Bytes(size)), result(kRounds, Bytes(size, 0));
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_recv_init(w, recvBuf.data(), size, c.prev, 9, &rr));
    MP_OK(tether_send_init(w, sendBuf.data(), size, c.next, 9, &sr));
    const tether_request_t both[2] = {rr, sr};
    MP_OK(tether_signal_wait_until_on_stream(w, gate, TETHER_CMP_GE, ++gateValue, c.stream));
    for (int k = 0; k < kRounds; ++k) {
      fillFor(stage[static_cast<size_t>(k)].data(), size, c.me, c.next, static_cast<uint64_t>(k + 1));
      MP_CHECK(c.so->copy(c.stream, sendBuf.data(), stage[static_cast<size_t>(k)].data(), size).isOk());  // "pack"
      MP_OK(tether_msg_startall_on_stream(w, 2, both, c.stream));
      MP_OK(tether_msg_waitall_on_stream(w, 2, both, c.stream));
      MP_CHECK(c.so->copy(c.stream, result[static_cast<size_t>(k)].data(), recvBuf.data(), size).isOk());  // "unpack"
    }
    ++flagValue;
    MP_OK(tether_p_on_stream(w, flag, &flagValue, sizeof flagValue, c.me, c.stream));
    // The gate is shut: nothing has started, so for the host the requests are inactive (an empty status at once).
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
    while (std::chrono::steady_clock::now() < until) {
      tether_request_t probe = rr;
      int done = 0;
      tether_msg_status_t st;
      MP_OK(tether_msg_test(w, &probe, &done, &st));
      MP_CHECK(done == 1 && probe == rr && emptyStatus(st));
    }
    MP_CHECK(recvBuf[0] == 0 && recvBuf[size - 1] == 0);
    MP_OK(tether_barrier_all(w));
    MP_OK(tether_signal_op(w, gate, gateValue, TETHER_SIGNAL_SET, c.me));
    // No tether call until the stream is through: the progress thread starts and completes every round.
    bool seen = false;
    for (int i = 0; i < 3000 && !seen; ++i) {
      seen = __atomic_load_n(flag, __ATOMIC_ACQUIRE) >= flagValue;
      if (!seen) usleep(10000);
    }
    MP_CHECK(seen);
    for (int k = 0; k < kRounds; ++k)
      expectFrom(result[static_cast<size_t>(k)].data(), size, c.prev, c.me, static_cast<uint64_t>(k + 1), "stream");
    tether_request_t done2[2] = {rr, sr};
    tether_msg_status_t st[2];
    MP_OK(tether_msg_waitall(w, 2, done2, st));  // reports the 12 rounds: the last one's status
    MP_CHECK(st[0].source == c.prev && st[0].bytes == size && st[1].source == c.next && st[1].bytes == size);
    MP_OK(tether_msg_wait(w, &done2[0], &st[0]));  // inactive now
    MP_CHECK(emptyStatus(st[0]) && done2[0] == rr);
    freeBoth(w, &rr, &sr);
  }

  // An ordinary receive and a persistent send in one waitall_on_stream, and wait_on_stream on the send.
  {
    uint64_t out = 0, in = 0;
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_send_init(w, &out, sizeof out, c.next, 10, &sr));
    for (uint64_t round = 1; round <= 3; ++round) {
      out = 1000 * round + static_cast<uint64_t>(c.me);
      MP_OK(tether_irecv(w, &in, sizeof in, c.prev, 10, &rr));
      MP_OK(tether_msg_startall_on_stream(w, 1, &sr, c.stream));
      const tether_request_t mixed[2] = {rr, sr};
      MP_OK(tether_msg_waitall_on_stream(w, 2, mixed, c.stream));
      MP_OK(tether_msg_wait_on_stream(w, sr, c.stream));
      ++flagValue;
      MP_OK(tether_p_on_stream(w, flag, &flagValue, sizeof flagValue, c.me, c.stream));
      MP_OK(tether_uint64_wait_until(w, flag, TETHER_CMP_GE, flagValue));
      MP_CHECK(in == 1000 * round + static_cast<uint64_t>(c.prev));
      MP_OK(tether_msg_wait(w, &rr, nullptr));
      MP_OK(tether_msg_wait(w, &sr, nullptr));
      MP_CHECK(rr == TETHER_REQUEST_NULL && sr != TETHER_REQUEST_NULL);
    }
    MP_OK(tether_msg_request_free(w, &sr));
  }
  MP_CHECK(c.so->synchronize(c.stream).isOk());
  if (c.me == 0) std::printf("mp_msg_persist: stream model, rounds enqueued at once, progress thread only OK\n");
}

// ---- 4. kernel model ---------------------------------------------------------------------------------------------

void kernelRounds(const Ctx& c) {
  const tether_t w = c.w;
  constexpr uint64_t kRounds = 25;
  for (size_t size : {size_t{0}, size_t{8}, kEager, kEager + 1, size_t{100000}}) {
    Bytes out(size + 1, 0), in(size + 1, 0);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_recv_init(w, in.data(), size, c.prev, 11, &rr));
    MP_OK(tether_send_init(w, out.data(), size, c.next, 11, &sr));
    tether_msg_persist_desc_t rd, sd;
    MP_OK(tether_msg_persist_desc(w, rr, &rd));
    MP_OK(tether_msg_persist_desc(w, sr, &sd));
    int bad = 0;
    auto kernel = [&](uint64_t rounds) {
      mp::launchHostBlock(kThreads, [&](int tid) {
        for (uint64_t k = 1; k <= rounds; ++k) {
          dev::msg_start<dev::Scope::Block>(c.h, rd, k);  // in is free: round k - 1 was checked
          for (size_t i = static_cast<size_t>(tid); i < size; i += kThreads) out[i] = pattern(c.me, c.next, k, i);
          dev::msg_start<dev::Scope::Block>(c.h, sd, k);
          dev::msg_wait<dev::Scope::Block>(c.h, rd, k);
          for (size_t i = static_cast<size_t>(tid); i < size; i += kThreads)
            if (in[i] != pattern(c.prev, c.me, k, i)) __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
          dev::msg_wait<dev::Scope::Block>(c.h, sd, k);  // out may be refilled
        }
      });
    };
    kernel(kRounds);
    MP_CHECK(bad == 0);
    MP_CHECK(dev::msg_test(c.h, rd, kRounds) && !dev::msg_test(c.h, rd, kRounds + 1));
    tether_request_t both[2] = {rr, sr};
    tether_msg_status_t st[2];
    MP_OK(tether_msg_waitall(w, 2, both, st));
    MP_CHECK(st[0].source == c.prev && st[0].tag == 11 && st[0].bytes == size && st[1].bytes == size);
    // Two host rounds, then new descriptors: their round 1 is the next start.
    for (uint64_t round = 1; round <= 2; ++round) {
      fillFor(out.data(), size, c.me, c.next, 500 + round);
      MP_OK(tether_msg_startall(w, 2, both));
      MP_OK(tether_msg_waitall(w, 2, both, nullptr));
      expectFrom(in.data(), size, c.prev, c.me, 500 + round, "host rounds between kernels");
    }
    tether_msg_persist_desc_t rd2, sd2;
    MP_OK(tether_msg_persist_desc(w, rr, &rd2));
    MP_OK(tether_msg_persist_desc(w, sr, &sd2));
    MP_CHECK(rd2.base == rd.base + kRounds + 2 && rd2.start == rd.start && rd2.done == rd.done);
    rd = rd2;
    sd = sd2;
    kernel(3);
    MP_CHECK(bad == 0 && dev::msg_test(c.h, rd, 3));
    MP_OK(tether_msg_waitall(w, 2, both, nullptr));
    freeBoth(w, &rr, &sr);
  }

  // The applications' scheme: requests by round parity (receive buffers by parity; tag 12 + parity, so that the two
  // receives, whose starts may be pending at once, never compete for a message), each receive started one round
  // ahead. Round j (0-based) uses the requests of parity j & 1, their round j / 2 + 1.
  {
    const size_t size = 3000;
    constexpr int kIters = 20;
    Bytes out(size), in[2] = {Bytes(size), Bytes(size)};
    tether_request_t rr[2], sr[2];
    tether_msg_persist_desc_t rd[2], sd[2];
    for (int p = 0; p < 2; ++p) {
      MP_OK(tether_recv_init(w, in[p].data(), size, c.prev, 12 + p, &rr[p]));
      MP_OK(tether_send_init(w, out.data(), size, c.next, 12 + p, &sr[p]));
      MP_OK(tether_msg_persist_desc(w, rr[p], &rd[p]));
      MP_OK(tether_msg_persist_desc(w, sr[p], &sd[p]));
    }
    int bad = 0;
    mp::launchHostBlock(kThreads, [&](int tid) {
      dev::msg_start<dev::Scope::Block>(c.h, rd[0], 1);
      for (int j = 0; j < kIters; ++j) {
        const int p = j & 1;
        const uint64_t r = static_cast<uint64_t>(j / 2 + 1), iter = static_cast<uint64_t>(j);
        if (j + 1 < kIters) dev::msg_start<dev::Scope::Block>(c.h, rd[1 - p], static_cast<uint64_t>((j + 1) / 2 + 1));
        for (size_t i = static_cast<size_t>(tid); i < size; i += kThreads) out[i] = pattern(c.me, c.next, iter, i);
        dev::msg_start<dev::Scope::Block>(c.h, sd[p], r);
        dev::msg_wait<dev::Scope::Block>(c.h, rd[p], r);
        for (size_t i = static_cast<size_t>(tid); i < size; i += kThreads)
          if (in[p][i] != pattern(c.prev, c.me, iter, i)) __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
        dev::msg_wait<dev::Scope::Block>(c.h, sd[p], r);
      }
    });
    MP_CHECK(bad == 0);
    tether_request_t all[4] = {rr[0], rr[1], sr[0], sr[1]};
    MP_OK(tether_msg_waitall(w, 4, all, nullptr));
    for (tether_request_t& r : all) MP_OK(tether_msg_request_free(w, &r));
  }
  if (c.me == 0) std::printf("mp_msg_persist: kernel model (CPU device API), one descriptor for every round OK\n");
}

// ---- 5. misuse ---------------------------------------------------------------------------------------------------

void misuse(const Ctx& c) {
  const tether_t w = c.w;
  uint64_t out = 7, in = 0, word = 0;
  tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL, bad = 12345;
  MP_OK(tether_recv_init(w, &in, sizeof in, c.prev, 20, &rr));
  MP_OK(tether_send_init(w, &out, sizeof out, c.next, 20, &sr));

  // Inactive: waits and tests return at once with an empty status; waitany skips it.
  tether_msg_status_t st;
  tether_request_t probe = rr;
  MP_OK(tether_msg_wait(w, &probe, &st));
  MP_CHECK(probe == rr && emptyStatus(st));
  int done = 0;
  MP_OK(tether_msg_test(w, &probe, &done, &st));
  MP_CHECK(done == 1 && emptyStatus(st));
  tether_request_t pair[2] = {rr, sr};
  size_t index = 0;
  MP_OK(tether_msg_waitany(w, 2, pair, &index, &st));
  MP_CHECK(index == SIZE_MAX && emptyStatus(st) && pair[0] == rr);

  // Starting an active request; a request listed twice; freeing an active one.
  MP_OK(tether_msg_start(w, rr));
  MP_EXPECT_STATUS(tether_msg_start(w, rr), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("is active");
  MP_MSG_HAS("tether_msg_start");
  const tether_request_t twice[2] = {sr, sr};
  MP_EXPECT_STATUS(tether_msg_startall(w, 2, twice), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("appears twice");
  MP_EXPECT_STATUS(tether_msg_startall_on_stream(w, 2, twice, c.stream), TETHER_ERR_INVALID_ARG);
  const tether_request_t withActive[2] = {sr, rr};
  MP_EXPECT_STATUS(tether_msg_startall(w, 2, withActive), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("reqs[1]");
  MP_EXPECT_STATUS(tether_msg_request_free(w, &rr), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("is active");
  MP_CHECK(rr != TETHER_REQUEST_NULL);
  MP_OK(tether_msg_start(w, sr));  // sr was not started by the failed startall
  MP_OK(tether_msg_wait(w, &rr, &st));
  MP_CHECK(st.source == c.prev && st.bytes == sizeof in && in == 7 && rr != TETHER_REQUEST_NULL);
  MP_OK(tether_msg_wait(w, &sr, nullptr));

  // The persistent requests in the ordinary calls; the ordinary and unknown ones in the persistent calls.
  tether_msg_send_desc_t sdesc;
  tether_msg_wait_desc_t wdesc;
  tether_msg_persist_desc_t pdesc;
  MP_EXPECT_STATUS(tether_msg_post(w, sr), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("persistent");
  MP_EXPECT_STATUS(tether_msg_send_desc(w, sr, &sdesc), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_msg_wait_desc(w, rr, &wdesc), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("tether_msg_persist_desc");
  tether_request_t ordinary = TETHER_REQUEST_NULL;
  MP_OK(tether_irecv(w, &word, sizeof word, c.prev, 21, &ordinary));
  MP_EXPECT_STATUS(tether_msg_start(w, ordinary), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("not a persistent request");
  MP_EXPECT_STATUS(tether_msg_startall_on_stream(w, 1, &ordinary, c.stream), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_msg_persist_desc(w, ordinary, &pdesc), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_msg_request_free(w, &ordinary), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_msg_start(w, bad), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_msg_persist_desc(w, rr, nullptr), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_msg_startall(w, 1, nullptr), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_msg_request_free(w, nullptr), TETHER_ERR_INVALID_ARG);
  tether_request_t null = TETHER_REQUEST_NULL;
  MP_OK(tether_msg_request_free(w, &null));  // nothing to do
  MP_OK(tether_msg_startall(w, 0, nullptr));

  // Bad arguments at init: *req stays TETHER_REQUEST_NULL.
  tether_request_t r = 99;
  MP_EXPECT_STATUS(tether_send_init(w, &out, sizeof out, c.n, 0, &r), TETHER_ERR_INVALID_PE);
  MP_CHECK(r == TETHER_REQUEST_NULL);
  MP_EXPECT_STATUS(tether_send_init(w, &out, sizeof out, TETHER_ANY_PE, 0, &r), TETHER_ERR_INVALID_PE);
  MP_EXPECT_STATUS(tether_send_init(w, &out, sizeof out, c.next, -1, &r), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_send_init(w, nullptr, 8, c.next, 0, &r), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_recv_init(w, &in, sizeof in, c.prev, -5, &r), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_recv_init(w, &in, sizeof in, c.prev, 0, nullptr), TETHER_ERR_INVALID_ARG);
  MP_CHECK(r == TETHER_REQUEST_NULL);

  // A truncated round fails that round only; the next one is fine.
  {
    Bytes big(300), small(100);
    tether_request_t tr = TETHER_REQUEST_NULL, ts = TETHER_REQUEST_NULL;
    MP_OK(tether_recv_init(w, small.data(), small.size(), c.prev, 22, &tr));
    MP_OK(tether_send_init(w, big.data(), 0, c.next, 22, &ts));  // round 2 sends 0 bytes: set below
    tether_request_t tbig = TETHER_REQUEST_NULL;
    MP_OK(tether_send_init(w, big.data(), big.size(), c.next, 22, &tbig));
    fillFor(big.data(), big.size(), c.me, c.next, 1);
    MP_OK(tether_msg_start(w, tr));
    MP_OK(tether_msg_start(w, tbig));
    MP_EXPECT_STATUS(tether_msg_wait(w, &tr, &st), TETHER_ERR_TRUNCATED);
    MP_CHECK(st.error == TETHER_ERR_TRUNCATED && st.bytes == small.size() && tr != TETHER_REQUEST_NULL);
    expectFrom(small.data(), small.size(), c.prev, c.me, 1, "truncated");
    MP_OK(tether_msg_wait(w, &tbig, &st));
    MP_OK(tether_msg_start(w, tr));
    MP_OK(tether_msg_start(w, ts));
    MP_OK(tether_msg_wait(w, &tr, &st));  // the failure was reported: this round is clean
    MP_CHECK(st.error == TETHER_SUCCESS && st.bytes == 0);
    MP_OK(tether_msg_wait(w, &ts, nullptr));
    for (tether_request_t* q : {&tr, &ts, &tbig}) MP_OK(tether_msg_request_free(w, q));
  }

  MP_OK(tether_msg_request_free(w, &rr));
  MP_EXPECT_STATUS(tether_msg_start(w, pair[0]), TETHER_ERR_INVALID_ARG);  // freed
  MP_OK(tether_barrier_all(w));
  // The ordinary receive of tag 21 gets its message now.
  const uint64_t v = 21;
  MP_OK(tether_send(w, &v, sizeof v, c.next, 21));
  MP_OK(tether_msg_wait(w, &ordinary, nullptr));
  MP_CHECK(word == 21);
  MP_OK(tether_msg_request_free(w, &sr));
  if (c.me == 0) std::printf("mp_msg_persist: misuse rejected, inactive waits return at once OK\n");
}

// ---- 6. random ---------------------------------------------------------------------------------------------------

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void random(const Ctx& c, uint64_t seed) {
  const tether_t w = c.w;
  const size_t n = static_cast<size_t>(c.n);
  auto key = [&](uint64_t a, uint64_t b, uint64_t d) { return mix(seed ^ mix(a * 1000003u ^ mix(b * 7919u ^ d))); };
  auto bytes = [&](int from, int to) { return static_cast<size_t>(key(1, static_cast<uint64_t>(from), static_cast<uint64_t>(to)) % (3 * kEager)); };
  auto activeIn = [&](uint64_t round, int from, int to) {
    return key(2 + round, static_cast<uint64_t>(from), static_cast<uint64_t>(to)) % 10 < 6;
  };
  std::vector<Bytes> out(n), in(n);
  std::vector<tether_request_t> send(n), recv(n);
  for (int p = 0; p < c.n; ++p) {
    const size_t i = static_cast<size_t>(p);
    out[i].resize(bytes(c.me, p));
    in[i].resize(bytes(p, c.me));
    MP_OK(tether_send_init(w, out[i].data(), out[i].size(), p, 30, &send[i]));
    MP_OK(tether_recv_init(w, in[i].data(), in[i].size(), p, 30, &recv[i]));
  }
  std::vector<uint64_t> rounds(n, 0);  // per peer: rounds received from it (what its pattern names)
  std::vector<uint64_t> sent(n, 0);
  for (uint64_t round = 1; round <= 15; ++round) {
    uint64_t g = key(100 + round, static_cast<uint64_t>(c.me), 0);
    std::vector<tether_request_t> list;
    std::vector<int> recvFrom;
    for (int p = 0; p < c.n; ++p) {
      const size_t i = static_cast<size_t>(p);
      if (activeIn(round, p, c.me)) {
        list.push_back(recv[i]);
        recvFrom.push_back(p);
      }
      if (activeIn(round, c.me, p)) {
        fillFor(out[i].data(), out[i].size(), c.me, p, ++sent[i]);
        list.push_back(send[i]);
      }
    }
    for (size_t i = list.size(); i > 1; --i) std::swap(list[i - 1], list[(g = mix(g)) % i]);  // a random order
    const int how = static_cast<int>((g = mix(g)) % 3);
    if (how == 0) {
      MP_OK(tether_msg_startall(w, list.size(), list.data()));
    } else if (how == 1) {
      for (tether_request_t r : list) MP_OK(tether_msg_start(w, r));
    } else {
      MP_OK(tether_msg_startall_on_stream(w, list.size(), list.data(), c.stream));
      MP_CHECK(c.so->synchronize(c.stream).isOk());  // the host's wait sees the rounds the stream started
    }
    const int complete = static_cast<int>((g = mix(g)) % 4);
    std::vector<tether_request_t> left = list;
    if (complete == 0) {
      MP_OK(tether_msg_waitall(w, left.size(), left.data(), nullptr));
    } else if (complete == 1) {
      for (tether_request_t& r : left) MP_OK(tether_msg_wait(w, &r, nullptr));
    } else if (complete == 2) {
      for (tether_request_t& r : left) {
        int done = 0;
        while (!done) MP_OK(tether_msg_test(w, &r, &done, nullptr));
      }
    } else {
      for (size_t k = 0; k < left.size(); ++k) {  // each reported request goes inactive: waitany then skips it
        size_t index = SIZE_MAX;
        MP_OK(tether_msg_waitany(w, left.size(), left.data(), &index, nullptr));
        MP_CHECK(index < left.size());
      }
      size_t index = 0;
      MP_OK(tether_msg_waitany(w, left.size(), left.data(), &index, nullptr));
      MP_CHECK(index == SIZE_MAX);
    }
    MP_CHECK(left == list);
    for (int p : recvFrom) {
      const size_t i = static_cast<size_t>(p);
      expectFrom(in[i].data(), in[i].size(), p, c.me, ++rounds[i], "random");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    MP_OK(tether_msg_request_free(w, &send[i]));
    MP_OK(tether_msg_request_free(w, &recv[i]));
  }
  if (c.me == 0) std::printf("mp_msg_persist: random rounds OK (MP_SEED=%" PRIu64 ")\n", seed);
}

}  // namespace

int main() {
  const mp::MsgRing ring = mp::msgRing(kEager, 4);
  Ctx c{};
  c.w = ring.w;
  c.so = mp::useCpuStreams(c.w);  // before the first stream operation
  c.me = ring.me;
  c.n = ring.n;
  c.next = ring.next;
  c.prev = ring.prev;
  MP_CHECK(c.so->createStream(&c.stream).isOk());
  MP_OK(tether_device_handle_cpu(c.w, &c.h));
  auto* gate = static_cast<uint64_t*>(mp::hostZeroed(c.w, 64));
  auto* flag = static_cast<uint64_t*>(mp::hostZeroed(c.w, 64));
  const uint64_t seed = mp::agreeSeed(c.w, "mp_msg_persist");

  hostRing(c);
  allPairs(c);
  streamRounds(c, gate, flag);
  kernelRounds(c);
  misuse(c);
  random(c, seed);

  MP_CHECK(c.so->synchronize(c.stream).isOk());
  MP_OK(tether_barrier_all(c.w));
  MP_OK(tether_msg_finalize(c.w));
  MP_CHECK(c.so->destroyStream(c.stream).isOk());
  if (c.me == 0) std::printf("mp_msg_persist: OK\n");
  return mp::finish();
}
