// Typed persistent requests (tether/msg.h: tether_send_init_typed / tether_recv_init_typed) in the three models, on
// host memory: the stream model through the CPU stream emulation, the kernel model with the device API compiled for
// the host. Ring exchange (to next, from prev) of one matrix column per round; every element's value names its PE,
// its index and the round, so a byte from another round, PE or place fails the check. Sections:
//  1. host model: 8 rounds per size (40 B, 800 B eager, 160 KB rendezvous; eager limit 1024) of startall + waitall;
//     the matrix is rewritten between rounds, so each round must carry the contents at ITS start (the pack is per
//     round, not at init); the receive matrix's other columns untouched; the type handle freed right after init;
//     a receive by TETHER_ANY_PE / TETHER_ANY_TAG; a typed send into an untyped persistent receive (packed order);
//  2. stream model: 6 rounds enqueued at once behind a gate (a host call writes the matrix, startall_on_stream,
//     waitall_on_stream, a host call copies the receive matrix out), the host idle until the stream is through;
//  3. kernel model: a CPU "kernel" runs 10 rounds with one descriptor per request (msg_start the receive, write the
//     matrix, msg_start the send, msg_wait the receive and check the column, msg_wait the send);
//  4. a round truncated (a longer ordinary send into the typed persistent receive) fails only itself, with the
//     bytes that arrived unpacked, and the next round passes;
//  5. bad arguments (NULL or uncommitted type, negative count, NULL buffer, negative tag, a PE out of range, NULL req)
//     leave nothing behind; tether_msg_finalize finds nothing pending.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "mp_cpu_stream.h"
#include "mp_host_kernel.h"
#include "mp_msg_util.h"
#include "tether/datatype.h"
#include "tether/msg.h"
#include "tether/msg_device.cuh"
#include "tether/tether_typed.h"

namespace {

namespace dev = tether::device;

constexpr int64_t kCols = 5;   // the matrix: rows x kCols doubles, row-major
constexpr int64_t kSendCol = 3;
constexpr int64_t kRecvCol = 1;

double val(int pe, int64_t i, uint64_t round) { return pe * 1.0e7 + static_cast<double>(round) * 1.0e5 + static_cast<double>(i); }

tether_type_t column(int64_t rows) {
  tether_type_t d = nullptr, v = nullptr;
  MP_OK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
  MP_OK(tether_type_vector(rows, 1, kCols, d, &v));
  MP_OK(tether_type_free(&d));
  MP_OK(tether_type_commit(v));
  return v;
}

void fill(std::vector<double>& a, int me, uint64_t round) {
  for (size_t i = 0; i < a.size(); ++i) a[i] = val(me, static_cast<int64_t>(i), round);
}

// b: the receive matrix after round `round`: column kRecvCol holds prev's column kSendCol of that round, every other
// element -1.
bool expectColumn(const std::vector<double>& b, int64_t rows, int prev, uint64_t round, const char* what, int me) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < kCols; ++c) {
      const double want = c != kRecvCol ? -1.0 : val(prev, r * kCols + kSendCol, round);
      if (b[static_cast<size_t>(r * kCols + c)] != want) {
        std::fprintf(stderr, "PE %d: %s, %lld rows, round %llu: element (%lld, %lld) is %g, expected %g\n", me, what,
                     static_cast<long long>(rows), static_cast<unsigned long long>(round), static_cast<long long>(r),
                     static_cast<long long>(c), b[static_cast<size_t>(r * kCols + c)], want);
        return false;
      }
    }
  return true;
}

}  // namespace

int main() {
  const mp::MsgRing ring = mp::msgRing(1024, 4);
  const tether_t w = ring.w;
  const int me = ring.me, n = ring.n, next = ring.next, prev = ring.prev;
  tether::StreamOps* so = mp::useCpuStreams(w);  // before the first stream operation
  void* s = nullptr;
  MP_CHECK(so->createStream(&s).isOk());
  auto* gate = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  auto* flag = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  MP_OK(tether_barrier_all(w));

  // 1. host model
  for (int64_t rows : {int64_t{5}, int64_t{100}, int64_t{20000}}) {
    tether_type_t col = column(rows);
    std::vector<double> a(static_cast<size_t>(rows * kCols), -5.0), b(a.size(), -1.0);
    tether_request_t both[2];
    const bool wild = rows == 100;
    MP_OK(tether_recv_init_typed(w, b.data() + kRecvCol, 1, col, wild ? TETHER_ANY_PE : prev,
                                 wild ? TETHER_ANY_TAG : 20, &both[0]));
    MP_OK(tether_send_init_typed(w, a.data() + kSendCol, 1, col, next, 20, &both[1]));
    MP_OK(tether_type_free(&col));  // the requests keep the type
    for (uint64_t round = 1; round <= 8; ++round) {
      fill(a, me, round);  // after init, before the start: the round packs at its start
      MP_OK(tether_msg_startall(w, 2, both));
      fill(a, me, 900);  // after the start: the message must not see this
      tether_msg_status_t st[2];
      MP_OK(tether_msg_waitall(w, 2, both, st));
      MP_CHECK(st[0].source == prev && st[0].tag == 20 && st[0].bytes == static_cast<size_t>(rows) * sizeof(double));
      MP_CHECK(expectColumn(b, rows, prev, round, "host rounds", me));
    }
    for (tether_request_t& r : both) MP_OK(tether_msg_request_free(w, &r));
  }
  {  // typed send -> untyped persistent receive: the packed bytes, in type-map order
    const int64_t rows = 40;
    tether_type_t col = column(rows);
    std::vector<double> a(static_cast<size_t>(rows * kCols)), packed(static_cast<size_t>(rows), -1.0);
    tether_request_t both[2];
    MP_OK(tether_recv_init(w, packed.data(), packed.size() * sizeof(double), prev, 21, &both[0]));
    MP_OK(tether_send_init_typed(w, a.data() + kSendCol, 1, col, next, 21, &both[1]));
    for (uint64_t round = 1; round <= 3; ++round) {
      fill(a, me, round);
      MP_OK(tether_msg_startall(w, 2, both));
      MP_OK(tether_msg_waitall(w, 2, both, nullptr));
      for (int64_t r = 0; r < rows; ++r) MP_CHECK(packed[static_cast<size_t>(r)] == val(prev, r * kCols + kSendCol, round));
    }
    for (tether_request_t& r : both) MP_OK(tether_msg_request_free(w, &r));
    MP_OK(tether_type_free(&col));
  }
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_msg_persist_typed: host rounds, each packed at its start, OK (%d PEs)\n", n);

  // 2. stream model: the rounds enqueued at once behind a gate; the host makes no tether call until the stream is
  // through (the progress thread packs, sends, receives and unpacks every round).
  uint64_t flagValue = 0;
  for (int64_t rows : {int64_t{100}, int64_t{20000}}) {
    constexpr uint64_t kRounds = 6;
    tether_type_t col = column(rows);
    std::vector<double> a(static_cast<size_t>(rows * kCols), -5.0), b(a.size(), -1.0);
    std::vector<std::vector<double>> seen(kRounds);
    tether_request_t both[2];
    MP_OK(tether_recv_init_typed(w, b.data() + kRecvCol, 1, col, prev, 22, &both[0]));
    MP_OK(tether_send_init_typed(w, a.data() + kSendCol, 1, col, next, 22, &both[1]));
    MP_OK(tether_type_free(&col));
    MP_OK(tether_signal_wait_until_on_stream(w, gate, TETHER_CMP_GE, static_cast<uint64_t>(rows), s));
    for (uint64_t k = 1; k <= kRounds; ++k) {
      MP_CHECK(so->hostCall(s, [&a, me, k] { fill(a, me, k); }).isOk());
      MP_OK(tether_msg_startall_on_stream(w, 2, both, s));
      MP_OK(tether_msg_waitall_on_stream(w, 2, both, s));
      MP_CHECK(so->hostCall(s, [&b, &seen, k] { seen[k - 1] = b; }).isOk());
    }
    ++flagValue;
    MP_OK(tether_p_on_stream(w, flag, &flagValue, sizeof flagValue, me, s));
    MP_OK(tether_barrier_all(w));
    MP_OK(tether_signal_op(w, gate, static_cast<uint64_t>(rows), TETHER_SIGNAL_SET, me));
    bool through = false;
    for (int i = 0; i < 3000 && !through; ++i) {
      through = __atomic_load_n(flag, __ATOMIC_ACQUIRE) >= flagValue;
      if (!through) usleep(10000);
    }
    MP_CHECK(through);
    for (uint64_t k = 1; k <= kRounds; ++k) MP_CHECK(expectColumn(seen[k - 1], rows, prev, k, "stream rounds", me));
    tether_msg_status_t st[2];
    MP_OK(tether_msg_waitall(w, 2, both, st));  // reports the rounds
    MP_CHECK(st[0].source == prev && st[0].bytes == static_cast<size_t>(rows) * sizeof(double));
    for (tether_request_t& r : both) MP_OK(tether_msg_request_free(w, &r));
  }
  MP_CHECK(so->synchronize(s).isOk());
  if (me == 0) std::printf("mp_msg_persist_typed: stream rounds packed and unpacked by the progress thread OK\n");

  // 3. kernel model
  {
    tether_device_handle_t h;
    MP_OK(tether_device_handle_cpu(w, &h));
    for (int64_t rows : {int64_t{100}, int64_t{20000}}) {
      constexpr uint64_t kRounds = 10;
      constexpr int kThreads = 4;
      tether_type_t col = column(rows);
      std::vector<double> a(static_cast<size_t>(rows * kCols), -5.0), b(a.size(), -1.0);
      tether_request_t both[2];
      MP_OK(tether_recv_init_typed(w, b.data() + kRecvCol, 1, col, prev, 23, &both[0]));
      MP_OK(tether_send_init_typed(w, a.data() + kSendCol, 1, col, next, 23, &both[1]));
      MP_OK(tether_type_free(&col));
      tether_msg_persist_desc_t rd, sd;
      MP_OK(tether_msg_persist_desc(w, both[0], &rd));
      MP_OK(tether_msg_persist_desc(w, both[1], &sd));
      int bad = 0;
      mp::launchHostBlock(kThreads, [&](int t) {
        for (uint64_t k = 1; k <= kRounds; ++k) {
          dev::msg_start<dev::Scope::Block>(h, rd, k);
          for (size_t i = static_cast<size_t>(t); i < a.size(); i += kThreads)
            a[i] = val(me, static_cast<int64_t>(i), k);
          dev::msg_start<dev::Scope::Block>(h, sd, k);
          dev::msg_wait<dev::Scope::Block>(h, rd, k);  // unpacked before the done word moved
          for (int64_t r = t; r < rows; r += kThreads)
            if (b[static_cast<size_t>(r * kCols + kRecvCol)] != val(prev, r * kCols + kSendCol, k) ||
                b[static_cast<size_t>(r * kCols)] != -1.0)
              __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
          dev::msg_wait<dev::Scope::Block>(h, sd, k);  // a may be rewritten
        }
      });
      if (bad) std::fprintf(stderr, "PE %d: kernel rounds, %lld rows: %d bad rows\n", me, static_cast<long long>(rows), bad);
      MP_CHECK(bad == 0);
      MP_OK(tether_msg_waitall(w, 2, both, nullptr));
      for (tether_request_t& r : both) MP_OK(tether_msg_request_free(w, &r));
    }
  }
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_msg_persist_typed: kernel rounds (msg_start / msg_wait) OK\n");

  // 4. a truncated round fails only itself
  {
    const int64_t rows = 30;
    tether_type_t col = column(rows);
    std::vector<double> a(static_cast<size_t>(rows * kCols)), b(a.size(), -1.0);
    std::vector<double> longer(static_cast<size_t>(rows + 10));
    for (size_t i = 0; i < longer.size(); ++i) longer[i] = val(me, static_cast<int64_t>(i) * kCols + kSendCol, 7);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL, big = TETHER_REQUEST_NULL;
    MP_OK(tether_recv_init_typed(w, b.data() + kRecvCol, 1, col, prev, 24, &rr));
    MP_OK(tether_send_init_typed(w, a.data() + kSendCol, 1, col, next, 24, &sr));
    MP_OK(tether_msg_start(w, rr));
    MP_OK(tether_isend(w, longer.data(), longer.size() * sizeof(double), next, 24, &big));
    tether_msg_status_t st;
    MP_CHECK(tether_msg_wait(w, &rr, &st) == TETHER_ERR_TRUNCATED);
    MP_CHECK(st.error == TETHER_ERR_TRUNCATED && st.bytes == static_cast<size_t>(rows) * sizeof(double));  // delivered
    MP_CHECK(expectColumn(b, rows, prev, 7, "a truncated round (the bytes that arrived)", me));
    MP_OK(tether_msg_wait(w, &big, nullptr));
    fill(a, me, 8);
    tether_request_t both[2] = {rr, sr};
    MP_OK(tether_msg_startall(w, 2, both));
    MP_OK(tether_msg_waitall(w, 2, both, nullptr));
    MP_CHECK(expectColumn(b, rows, prev, 8, "the round after a truncated one", me));
    MP_OK(tether_msg_request_free(w, &rr));
    MP_OK(tether_msg_request_free(w, &sr));
    MP_OK(tether_type_free(&col));
  }
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_msg_persist_typed: a truncated round fails only itself OK\n");

  // 5. bad arguments
  {
    double x[4] = {0, 0, 0, 0};
    tether_type_t col = column(2), raw = nullptr, d = nullptr;
    MP_OK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
    MP_OK(tether_type_contiguous(2, d, &raw));  // not committed
    tether_request_t r = 77;
    MP_CHECK(tether_send_init_typed(w, x, 1, nullptr, next, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(r == TETHER_REQUEST_NULL);
    MP_CHECK(tether_send_init_typed(w, x, 1, raw, next, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_send_init_typed(w, x, -1, col, next, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_send_init_typed(w, nullptr, 1, col, next, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_send_init_typed(w, x, 1, col, next, -3, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_send_init_typed(w, x, 1, col, n, 1, &r) == TETHER_ERR_INVALID_PE);
    MP_CHECK(tether_send_init_typed(w, x, 1, col, TETHER_ANY_PE, 1, &r) == TETHER_ERR_INVALID_PE);
    MP_CHECK(tether_send_init_typed(w, x, 1, col, next, 1, nullptr) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_recv_init_typed(w, x, 1, nullptr, prev, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_recv_init_typed(w, x, 1, raw, prev, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_recv_init_typed(w, x, -2, col, prev, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_recv_init_typed(w, nullptr, 1, col, prev, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_recv_init_typed(w, x, 1, col, prev, -5, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_recv_init_typed(w, x, 1, col, n + 1, 1, &r) == TETHER_ERR_INVALID_PE);
    MP_CHECK(tether_recv_init_typed(w, x, 1, col, prev, 1, nullptr) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(r == TETHER_REQUEST_NULL);
    // count 0 with a NULL buffer is a valid (empty) request
    tether_request_t e[2];
    MP_OK(tether_recv_init_typed(w, nullptr, 0, col, prev, 25, &e[0]));
    MP_OK(tether_send_init_typed(w, nullptr, 0, col, next, 25, &e[1]));
    tether_msg_status_t st[2];
    MP_OK(tether_msg_startall(w, 2, e));
    MP_OK(tether_msg_waitall(w, 2, e, st));
    MP_CHECK(st[0].source == prev && st[0].bytes == 0);
    for (tether_request_t& q : e) MP_OK(tether_msg_request_free(w, &q));
    MP_OK(tether_type_free(&col));
    MP_OK(tether_type_free(&raw));
    MP_OK(tether_type_free(&d));
  }
  MP_CHECK(so->synchronize(s).isOk());
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_msg_finalize(w));  // fails if anything was left pending
  if (me == 0) std::printf("mp_msg_persist_typed: bad arguments refused, nothing left pending OK\n");
  MP_CHECK(so->destroyStream(s).isOk());
  return mp::finish();
}
