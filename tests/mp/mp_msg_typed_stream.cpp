// Typed two-sided messages in the stream and kernel models (tether_isend_typed_on_stream, tether_send_prepare_typed,
// typed receives waited for by tether_msg_wait_on_stream / waitall_on_stream and by a kernel's msg_wait, tether/msg.h)
// on host memory, through the CPU stream emulation and the device API compiled for the host. Ring exchange (to next,
// from prev). Sections:
//  1. a matrix column sent from a stream: the stream fills the matrix (a host call), packs and sends the column, then
//     overwrites the matrix -- the message must carry what the stream had written at that point; the receiver's
//     stream waits for the typed receive and copies the matrix in its next host call: the column must be there
//     (unpacked before the stream went on). Eager and rendezvous sizes, wait_on_stream and waitall_on_stream;
//  2. a short message into a longer typed receive waited for on the stream: the elements past the message untouched
//     (also an empty one, count 0);
//  3. the type freed right after the call, with the stream gated shut so the pack runs later;
//  4. the kernel model: a CPU "kernel" waits for a typed receive with msg_wait on its descriptor and reads the column;
//  5. typed prepared sends (tether_send_prepare_typed), packed when they start: posted from the host after the buffer
//     changed (the message carries the post-time contents); two posted with one post_all_on_stream (listed in reverse)
//     between two stream writes, matched in the order prepared; started by a CPU "kernel" that fills the buffer and
//     calls msg_send (the progress thread packs);
//  6. bad arguments: NULL or uncommitted type, negative count, NULL buffer or req (TETHER_ERR_INVALID_ARG), a PE out
//     of range (TETHER_ERR_INVALID_PE); nothing left pending (tether_msg_finalize reports pending requests).
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

double val(int pe, int64_t i, int round) { return pe * 1.0e6 + round * 1.0e4 + static_cast<double>(i); }

tether_type_t column(int64_t rows, int64_t cols) {
  tether_type_t d = nullptr, v = nullptr;
  MP_OK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
  MP_OK(tether_type_vector(rows, 1, cols, d, &v));
  MP_OK(tether_type_free(&d));
  MP_OK(tether_type_commit(v));
  return v;
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
  MP_OK(tether_barrier_all(w));

  // 1. columns from and into the stream's view of the matrices
  int round = 0;
  for (int64_t rows : {int64_t{5}, int64_t{100}, int64_t{20000}}) {  // 40 B, 800 B (eager), 160 KB (rendezvous)
    for (bool all : {false, true}) {
      ++round;
      const int64_t C = 7;
      tether_type_t col = column(rows, C);
      std::vector<double> a(rows * C, -2.0), b(rows * C, -1.0), seen(rows * C, 0.0);
      tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
      MP_OK(tether_irecv_typed(w, b.data() + 2, 1, col, prev, 10 + round, &rr));  // into column 2
      MP_CHECK(so->hostCall(s, [&a, me, round] {
                   for (size_t i = 0; i < a.size(); ++i) a[i] = val(me, static_cast<int64_t>(i), round);
                 }).isOk());
      MP_OK(tether_isend_typed_on_stream(w, a.data() + 5, 1, col, next, 10 + round, s, &sr));  // column 5
      MP_CHECK(so->hostCall(s, [&a] {
                   for (double& x : a) x = -3.0;  // the pack came before: the message must not see this
                 }).isOk());
      if (all) {
        const tether_request_t both[2] = {sr, rr};
        MP_OK(tether_msg_waitall_on_stream(w, 2, both, s));
      } else {
        MP_OK(tether_msg_wait_on_stream(w, rr, s));
      }
      MP_CHECK(so->hostCall(s, [&b, &seen] { seen = b; }).isOk());
      MP_CHECK(so->synchronize(s).isOk());
      MP_OK(tether_type_free(&col));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < C; ++c) {
          const double want = c == 2 ? val(prev, r * C + 5, round) : -1.0;
          if (seen[r * C + c] != want) {
            std::fprintf(stderr, "PE %d: rows %lld round %d: element (%lld, %lld) is %g, expected %g\n", me,
                         static_cast<long long>(rows), round, static_cast<long long>(r), static_cast<long long>(c),
                         seen[r * C + c], want);
            MP_CHECK(false);
          }
        }
      tether_msg_status_t st;
      MP_OK(tether_msg_wait(w, &rr, &st));
      MP_CHECK(st.source == prev && st.tag == 10 + round && st.bytes == static_cast<size_t>(rows) * sizeof(double));
      MP_OK(tether_msg_wait(w, &sr, &st));
      MP_CHECK(st.bytes == static_cast<size_t>(rows) * sizeof(double));
    }
  }
  if (me == 0) std::printf("mp_msg_typed_stream: columns packed and unpacked in stream order OK (%d PEs)\n", n);

  // 2. a short message: 30 elements into a typed receive of 50; the rest untouched when the stream goes on
  {
    const int64_t C = 3;
    tether_type_t longCol = column(50, C), shortCol = column(30, C);
    std::vector<double> a(30 * C), b(50 * C, -1.0), seen;
    for (size_t i = 0; i < a.size(); ++i) a[i] = val(me, static_cast<int64_t>(i), 99);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_irecv_typed(w, b.data(), 1, longCol, prev, 40, &rr));
    MP_OK(tether_isend_typed_on_stream(w, a.data() + 1, 1, shortCol, next, 40, s, &sr));
    MP_OK(tether_msg_wait_on_stream(w, rr, s));
    MP_CHECK(so->hostCall(s, [&b, &seen] { seen = b; }).isOk());
    MP_CHECK(so->synchronize(s).isOk());
    for (int64_t r = 0; r < 50; ++r)
      for (int64_t c = 0; c < C; ++c)
        MP_CHECK(seen[r * C + c] == (c == 0 && r < 30 ? val(prev, r * C + 1, 99) : -1.0));
    tether_msg_status_t st;
    MP_OK(tether_msg_wait(w, &rr, &st));
    MP_CHECK(st.bytes == 30 * sizeof(double));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    MP_OK(tether_type_free(&longCol));
    MP_OK(tether_type_free(&shortCol));
  }
  // an empty typed message (count 0) into a typed receive of 4 elements, waited for on the stream
  {
    tether_type_t col = column(4, 2);
    std::vector<double> a(8, 1.0), b(8, -1.0);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_irecv_typed(w, b.data(), 1, col, prev, 41, &rr));
    MP_OK(tether_isend_typed_on_stream(w, a.data(), 0, col, next, 41, s, &sr));
    MP_OK(tether_msg_wait_on_stream(w, rr, s));
    MP_CHECK(so->synchronize(s).isOk());
    tether_msg_status_t st;
    MP_OK(tether_msg_wait(w, &rr, &st));
    MP_CHECK(st.bytes == 0 && st.source == prev);
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    for (double x : b) MP_CHECK(x == -1.0);
    MP_OK(tether_type_free(&col));
  }
  if (me == 0) std::printf("mp_msg_typed_stream: a short message unpacks only its bytes (also an empty one) OK\n");

  // 3. the type freed at once, the stream gated shut until after
  {
    const int64_t R = 300, C = 4;
    tether_type_t col = column(R, C);
    std::vector<double> a(R * C), b(R * C, -1.0);
    for (size_t i = 0; i < a.size(); ++i) a[i] = val(me, static_cast<int64_t>(i), 77);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_irecv_typed(w, b.data() + 3, 1, col, prev, 50, &rr));
    MP_OK(tether_signal_wait_until_on_stream(w, gate, TETHER_CMP_GE, 1, s));
    MP_OK(tether_isend_typed_on_stream(w, a.data(), 1, col, next, 50, s, &sr));
    MP_OK(tether_type_free(&col));
    MP_OK(tether_barrier_all(w));
    MP_OK(tether_signal_op(w, gate, 1, TETHER_SIGNAL_SET, me));
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    MP_CHECK(so->synchronize(s).isOk());
    for (int64_t r = 0; r < R; ++r) MP_CHECK(b[r * C + 3] == val(prev, r * C, 77) && b[r * C] == -1.0);
  }
  if (me == 0) std::printf("mp_msg_typed_stream: the type freed before the stream packs OK\n");

  // 4. kernel model: msg_wait on a typed receive's descriptor sees the unpacked column
  {
    tether_device_handle_t h;
    MP_OK(tether_device_handle_cpu(w, &h));
    for (int64_t R : {int64_t{9}, int64_t{5000}}) {
      const int64_t C = 5;
      tether_type_t col = column(R, C);
      std::vector<double> a(R * C), b(R * C, -1.0);
      for (size_t i = 0; i < a.size(); ++i) a[i] = val(me, static_cast<int64_t>(i), 55);
      tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
      MP_OK(tether_irecv_typed(w, b.data() + 4, 1, col, prev, 60, &rr));
      tether_msg_wait_desc_t d;
      MP_OK(tether_msg_wait_desc(w, rr, &d));
      MP_OK(tether_isend_typed(w, a.data() + 1, 1, col, next, 60, &sr));
      int bad = 0;
      mp::launchHostBlock(4, [&](int t) {
        dev::msg_wait<dev::Scope::Block>(h, d);
        if (t == 0)
          for (int64_t r = 0; r < R; ++r)
            if (b[r * C + 4] != val(prev, r * C + 1, 55) || b[r * C + 3] != -1.0) ++bad;
      });
      MP_CHECK(bad == 0);
      MP_OK(tether_msg_wait(w, &rr, nullptr));
      MP_OK(tether_msg_wait(w, &sr, nullptr));
      MP_OK(tether_type_free(&col));
    }
  }
  if (me == 0) std::printf("mp_msg_typed_stream: a kernel's msg_wait on a typed receive sees the unpacked bytes OK\n");

  // 5. typed prepared sends
  {
    const int64_t R = 150, C = 3;  // 1200 packed bytes: rendezvous (eager 1024)
    tether_type_t col = column(R, C);
    auto check = [&](const std::vector<double>& b, int rnd, const char* what) {
      for (int64_t r = 0; r < R; ++r)
        if (b[r * C + 1] != val(prev, r * C + 2, rnd) || b[r * C] != -1.0) {
          std::fprintf(stderr, "PE %d: %s: row %lld is %g, expected %g\n", me, what, static_cast<long long>(r),
                       b[r * C + 1], val(prev, r * C + 2, rnd));
          MP_CHECK(false);
        }
    };
    // (a) host post, after the buffer changed
    std::vector<double> a(R * C, -5.0), b(R * C, -1.0);
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_irecv_typed(w, b.data() + 1, 1, col, prev, 80, &rr));
    MP_OK(tether_send_prepare_typed(w, a.data() + 2, 1, col, next, 80, &sr));
    for (size_t i = 0; i < a.size(); ++i) a[i] = val(me, static_cast<int64_t>(i), 81);
    MP_OK(tether_msg_post(w, sr));
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    check(b, 81, "posted from the host");
    // (b) two on one post_all_on_stream, between stream writes; receives by TETHER_ANY_TAG see them in prepared order
    std::vector<double> a2(R * C, -5.0), b2(R * C, -1.0);
    std::fill(b.begin(), b.end(), -1.0);
    tether_request_t rq[2], sq[2];
    tether_msg_status_t st[2];
    MP_OK(tether_irecv_typed(w, b.data() + 1, 1, col, prev, TETHER_ANY_TAG, &rq[0]));
    MP_OK(tether_irecv_typed(w, b2.data() + 1, 1, col, prev, TETHER_ANY_TAG, &rq[1]));
    MP_OK(tether_send_prepare_typed(w, a.data() + 2, 1, col, next, 82, &sq[0]));
    MP_OK(tether_send_prepare_typed(w, a2.data() + 2, 1, col, next, 83, &sq[1]));
    MP_CHECK(so->hostCall(s, [&] {
                 for (size_t i = 0; i < a.size(); ++i) a[i] = val(me, static_cast<int64_t>(i), 82);
                 for (size_t i = 0; i < a2.size(); ++i) a2[i] = val(me, static_cast<int64_t>(i), 83);
               }).isOk());
    const tether_request_t reversed[2] = {sq[1], sq[0]};
    MP_OK(tether_msg_post_all_on_stream(w, 2, reversed, s));
    MP_CHECK(so->hostCall(s, [&] {
                 std::fill(a.begin(), a.end(), -3.0);
                 std::fill(a2.begin(), a2.end(), -3.0);
               }).isOk());
    MP_OK(tether_msg_waitall(w, 2, rq, st));
    MP_CHECK(st[0].tag == 82 && st[1].tag == 83);
    MP_OK(tether_msg_waitall(w, 2, sq, nullptr));
    MP_CHECK(so->synchronize(s).isOk());
    check(b, 82, "posted on the stream (first)");
    check(b2, 83, "posted on the stream (second)");
    // (c) started by a kernel
    tether_device_handle_t h;
    MP_OK(tether_device_handle_cpu(w, &h));
    std::fill(a.begin(), a.end(), -5.0);
    std::fill(b.begin(), b.end(), -1.0);
    MP_OK(tether_irecv_typed(w, b.data() + 1, 1, col, prev, 84, &rr));
    MP_OK(tether_send_prepare_typed(w, a.data() + 2, 1, col, next, 84, &sr));
    tether_msg_send_desc_t sd;
    MP_OK(tether_msg_send_desc(w, sr, &sd));
    MP_CHECK(tether_msg_post(w, sr) == TETHER_ERR_INVALID_ARG);  // started once only
    mp::launchHostBlock(4, [&](int t) {
      for (size_t i = static_cast<size_t>(t); i < a.size(); i += 4) a[i] = val(me, static_cast<int64_t>(i), 84);
      dev::msg_send<dev::Scope::Block>(h, sd);
    });
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    check(b, 84, "started by a kernel");
    MP_OK(tether_type_free(&col));
  }
  if (me == 0) std::printf("mp_msg_typed_stream: typed prepared sends packed when started (host, stream, kernel) OK\n");

  // 6. bad arguments
  {
    double x[4] = {0, 0, 0, 0};
    tether_type_t col = column(2, 2), raw = nullptr, d = nullptr;
    MP_OK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
    MP_OK(tether_type_contiguous(2, d, &raw));  // not committed
    tether_request_t r = TETHER_REQUEST_NULL;
    MP_CHECK(tether_isend_typed_on_stream(w, x, 1, nullptr, next, 1, s, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_isend_typed_on_stream(w, x, 1, raw, next, 1, s, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_isend_typed_on_stream(w, x, -1, col, next, 1, s, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_isend_typed_on_stream(w, nullptr, 1, col, next, 1, s, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_isend_typed_on_stream(w, x, 1, col, n, 1, s, &r) == TETHER_ERR_INVALID_PE);
    MP_CHECK(tether_isend_typed_on_stream(w, x, 1, col, next, 1, s, nullptr) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_send_prepare_typed(w, x, 1, raw, next, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_send_prepare_typed(w, x, -2, col, next, 1, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_send_prepare_typed(w, x, 1, col, -1, 1, &r) == TETHER_ERR_INVALID_PE);
    MP_CHECK(r == TETHER_REQUEST_NULL);
    MP_OK(tether_type_free(&col));
    MP_OK(tether_type_free(&raw));
    MP_OK(tether_type_free(&d));
  }
  MP_CHECK(so->synchronize(s).isOk());
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_msg_finalize(w));  // fails if a refused call left a request behind
  if (me == 0) std::printf("mp_msg_typed_stream: bad arguments refused, nothing left pending OK\n");
  MP_CHECK(so->destroyStream(s).isOk());
  return mp::finish();
}
