// Typed two-sided messages (tether_isend_typed / irecv_typed / send_typed / recv_typed, tether/msg.h) on host memory,
// ring exchange (to next, from prev). Sections:
//  1. a matrix column (vector type) into a column of the receiver's matrix, and the same bytes typed -> untyped
//     and untyped -> typed (only packed bytes match);
//  2. different layouts: a 3-D subarray into a contiguous type; a struct with gaps whose gap bytes at the receiver
//     stay untouched;
//  3. rendezvous sizes (a column of a tall matrix), blocking forms;
//  4. the user's type freed right after posting (the request keeps its own);
//  5. truncation: a shorter typed receive gets the bytes that fit, unpacked, and TETHER_ERR_TRUNCATED;
//  6. random vectors (seed MP_SEED, printed): count, block length and stride drawn per round, same on both sides;
//  7. bad arguments: NULL or uncommitted type, negative count, NULL buffer.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "mp_msg_util.h"
#include "tether/datatype.h"
#include "tether/msg.h"

namespace {

double val(int pe, int64_t i) { return pe * 100000.0 + static_cast<double>(i); }

tether_type_t committed(tether_type_t t) {
  MP_OK(tether_type_commit(t));
  return t;
}

tether_type_t vectorOfDoubles(int64_t count, int64_t block, int64_t stride) {
  tether_type_t d = nullptr, v = nullptr;
  MP_OK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
  MP_OK(tether_type_vector(count, block, stride, d, &v));
  MP_OK(tether_type_free(&d));
  return committed(v);
}

}  // namespace

int main() {
  const mp::MsgRing ring = mp::msgRing(1024, 4);
  const tether_t w = ring.w;
  const int me = ring.me, n = ring.n, next = ring.next, prev = ring.prev;

  // 1. a column of an R x C row-major matrix
  {
    const int64_t R = 37, C = 11;
    std::vector<double> a(R * C), b(R * C, -1.0), flat(R, 0.0);
    for (int64_t i = 0; i < R * C; ++i) a[i] = val(me, i);
    tether_type_t col = vectorOfDoubles(R, 1, C);
    tether_request_t rr, sr;
    MP_OK(tether_irecv_typed(w, b.data(), 1, col, prev, 1, &rr));  // into column 0
    MP_OK(tether_isend_typed(w, a.data() + (C - 1), 1, col, next, 1, &sr));  // column C - 1
    tether_msg_status_t st;
    MP_OK(tether_msg_wait(w, &rr, &st));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    MP_CHECK(st.bytes == static_cast<size_t>(R) * sizeof(double) && st.source == prev);
    for (int64_t r = 0; r < R; ++r) {
      MP_CHECK(b[r * C] == val(prev, r * C + C - 1));
      for (int64_t c = 1; c < C; ++c) MP_CHECK(b[r * C + c] == -1.0);  // outside the type map: untouched
    }
    // typed -> untyped, untyped -> typed
    MP_OK(tether_irecv(w, flat.data(), R * sizeof(double), prev, 2, &rr));
    MP_OK(tether_isend_typed(w, a.data(), 1, col, next, 2, &sr));
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    for (int64_t r = 0; r < R; ++r) MP_CHECK(flat[r] == val(prev, r * C));
    std::vector<double> mine(R);
    for (int64_t r = 0; r < R; ++r) mine[r] = val(me, r) + 0.5;
    std::fill(b.begin(), b.end(), -1.0);
    MP_OK(tether_irecv_typed(w, b.data() + 3, 1, col, prev, 3, &rr));
    MP_OK(tether_isend(w, mine.data(), R * sizeof(double), next, 3, &sr));
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    for (int64_t r = 0; r < R; ++r) MP_CHECK(b[r * C + 3] == val(prev, r) + 0.5);
    MP_OK(tether_type_free(&col));
  }
  if (me == 0) std::printf("mp_msg_typed: columns, typed <-> untyped OK (%d PEs)\n", n);

  // 2. a 3-D subarray into a contiguous type; a struct with gaps
  {
    const int64_t sizes[3] = {6, 7, 8}, sub[3] = {3, 4, 5}, starts[3] = {1, 2, 3};
    std::vector<double> cube(6 * 7 * 8);
    for (size_t i = 0; i < cube.size(); ++i) cube[i] = val(me, static_cast<int64_t>(i));
    tether_type_t d = nullptr, block = nullptr, line = nullptr;
    MP_OK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
    MP_OK(tether_type_subarray(3, sizes, sub, starts, TETHER_ORDER_C, d, &block));
    MP_OK(tether_type_contiguous(3 * 4 * 5, d, &line));
    committed(block);
    committed(line);
    std::vector<double> got(60, 0.0);
    tether_request_t rr, sr;
    MP_OK(tether_irecv_typed(w, got.data(), 1, line, prev, 4, &rr));
    MP_OK(tether_isend_typed(w, cube.data(), 1, block, next, 4, &sr));
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    int k = 0;
    for (int64_t x = 0; x < 3; ++x)
      for (int64_t y = 0; y < 4; ++y)
        for (int64_t z = 0; z < 5; ++z)
          MP_CHECK(got[k++] == val(prev, ((x + 1) * 7 + (y + 2)) * 8 + (z + 3)));
    MP_OK(tether_type_free(&block));
    MP_OK(tether_type_free(&line));

    struct Rec {
      int32_t id;
      int32_t gap;  // not in the type map
      double x;
    };
    tether_type_t i32 = nullptr, rec = nullptr;
    MP_OK(tether_type_basic(TETHER_BASIC_INT32, &i32));
    const int64_t lens[2] = {1, 1}, disp[2] = {0, 8};
    tether_type_t parts[2] = {i32, d};
    MP_OK(tether_type_struct(2, lens, disp, parts, &rec));
    committed(rec);
    std::vector<Rec> out(50), in(50);
    for (int i = 0; i < 50; ++i) out[i] = Rec{me * 1000 + i, 7, val(me, i)}, in[i] = Rec{-1, -9, -1.0};
    MP_OK(tether_irecv_typed(w, in.data(), 50, rec, prev, 5, &rr));
    MP_OK(tether_isend_typed(w, out.data(), 50, rec, next, 5, &sr));
    tether_msg_status_t st;
    MP_OK(tether_msg_wait(w, &rr, &st));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    MP_CHECK(st.bytes == 50 * 12);
    for (int i = 0; i < 50; ++i) MP_CHECK(in[i].id == prev * 1000 + i && in[i].gap == -9 && in[i].x == val(prev, i));
    MP_OK(tether_type_free(&rec));
    MP_OK(tether_type_free(&i32));
    MP_OK(tether_type_free(&d));
  }
  if (me == 0) std::printf("mp_msg_typed: subarray -> contiguous, struct with gaps OK\n");

  // 3 + 4. rendezvous, blocking forms, the user's type freed after posting
  {
    const int64_t R = 5000, C = 3;
    std::vector<double> a(R * C), b(R * C, 0.0);
    for (int64_t i = 0; i < R * C; ++i) a[i] = val(me, i);
    tether_type_t col = vectorOfDoubles(R, 1, C);
    if (me % 2 == 0) {
      MP_OK(tether_send_typed(w, a.data() + 1, 1, col, next, 6));
      MP_OK(tether_recv_typed(w, b.data() + 2, 1, col, prev, 6, nullptr));
    } else {
      MP_OK(tether_recv_typed(w, b.data() + 2, 1, col, prev, 6, nullptr));
      MP_OK(tether_send_typed(w, a.data() + 1, 1, col, next, 6));
    }
    for (int64_t r = 0; r < R; ++r) MP_CHECK(b[r * C + 2] == val(prev, r * C + 1) && b[r * C] == 0.0);
    tether_request_t rr, sr;
    std::fill(b.begin(), b.end(), 0.0);
    MP_OK(tether_irecv_typed(w, b.data(), 1, col, prev, 7, &rr));
    MP_OK(tether_isend_typed(w, a.data(), 1, col, next, 7, &sr));
    MP_OK(tether_type_free(&col));  // both requests hold their own
    MP_OK(tether_msg_wait(w, &rr, nullptr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    for (int64_t r = 0; r < R; ++r) MP_CHECK(b[r * C] == val(prev, r * C));
  }
  if (me == 0) std::printf("mp_msg_typed: rendezvous, blocking forms, type freed after posting OK\n");

  // 5. truncation
  {
    const int64_t R = 300, C = 4;
    std::vector<double> a(R * C), b(R * C, 0.0);
    for (int64_t i = 0; i < R * C; ++i) a[i] = val(me, i);
    tether_type_t col = vectorOfDoubles(R, 1, C), shortCol = vectorOfDoubles(R / 2, 1, C);
    tether_request_t rr, sr;
    MP_OK(tether_irecv_typed(w, b.data(), 1, shortCol, prev, 8, &rr));
    MP_OK(tether_isend_typed(w, a.data(), 1, col, next, 8, &sr));
    tether_msg_status_t st;
    MP_CHECK(tether_msg_wait(w, &rr, &st) == TETHER_ERR_TRUNCATED);
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    MP_CHECK(st.bytes == static_cast<size_t>(R / 2) * sizeof(double));
    for (int64_t r = 0; r < R / 2; ++r) MP_CHECK(b[r * C] == val(prev, r * C));
    for (int64_t r = R / 2; r < R; ++r) MP_CHECK(b[r * C] == 0.0);
    MP_OK(tether_type_free(&col));
    MP_OK(tether_type_free(&shortCol));
  }
  if (me == 0) std::printf("mp_msg_typed: truncation OK\n");

  // 6. random vectors
  {
    const char* env = std::getenv("MP_SEED");
    const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : 1;
    if (me == 0) std::printf("mp_msg_typed: random vectors, seed %llu (MP_SEED)\n", static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);  // the same draws on every PE
    for (int round = 0; round < 40; ++round) {
      const int64_t count = 1 + static_cast<int64_t>(rng() % 200), block = 1 + static_cast<int64_t>(rng() % 5);
      const int64_t stride = block + static_cast<int64_t>(rng() % 4), instances = 1 + static_cast<int64_t>(rng() % 3);
      tether_type_t v = vectorOfDoubles(count, block, stride);
      int64_t lb = 0, extent = 0;
      MP_OK(tether_type_extent(v, &lb, &extent));
      const size_t elems = static_cast<size_t>(extent / 8 * instances);
      std::vector<double> a(elems), b(elems, -1.0);
      for (size_t i = 0; i < elems; ++i) a[i] = val(me, static_cast<int64_t>(i)) + round;
      tether_request_t rr, sr;
      MP_OK(tether_irecv_typed(w, b.data(), instances, v, prev, 100 + round, &rr));
      MP_OK(tether_isend_typed(w, a.data(), instances, v, next, 100 + round, &sr));
      MP_OK(tether_msg_wait(w, &rr, nullptr));
      MP_OK(tether_msg_wait(w, &sr, nullptr));
      for (int64_t k = 0; k < instances; ++k)
        for (int64_t c = 0; c < count; ++c)
          for (int64_t j = 0; j < block; ++j) {
            const size_t i = static_cast<size_t>(k * (extent / 8) + c * stride + j);
            if (b[i] != val(prev, static_cast<int64_t>(i)) + round) {
              char msg[160];
              std::snprintf(msg, sizeof msg, "seed %llu round %d: element %zu is %g", static_cast<unsigned long long>(seed),
                            round, i, b[i]);
              mp::fail(__FILE__, __LINE__, "random vector", msg);
            }
          }
      MP_OK(tether_type_free(&v));
    }
  }
  if (me == 0) std::printf("mp_msg_typed: random vectors OK\n");

  // 7. bad arguments
  {
    double x = 1.0;
    tether_request_t r = TETHER_REQUEST_NULL;
    tether_type_t d = nullptr, raw = nullptr;
    MP_OK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
    MP_OK(tether_type_contiguous(2, d, &raw));  // never committed
    MP_CHECK(tether_isend_typed(w, &x, 1, nullptr, next, 0, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_isend_typed(w, &x, 1, raw, next, 0, &r) == TETHER_ERR_INVALID_ARG && r == TETHER_REQUEST_NULL);
    MP_CHECK(tether_irecv_typed(w, &x, 1, raw, prev, 0, &r) == TETHER_ERR_INVALID_ARG);
    committed(d);
    MP_CHECK(tether_isend_typed(w, &x, -1, d, next, 0, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_isend_typed(w, nullptr, 1, d, next, 0, &r) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_irecv_typed(w, &x, 1, d, prev, 0, nullptr) == TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_isend_typed(w, &x, 1, d, n, 0, &r) != TETHER_SUCCESS);
    MP_OK(tether_type_free(&raw));
    MP_OK(tether_type_free(&d));
  }
  if (me == 0) std::printf("mp_msg_typed: bad arguments rejected OK\n");

  MP_OK(tether_barrier_all(w));
  MP_OK(tether_msg_finalize(w));
  if (me == 0) std::printf("mp_msg_typed: OK\n");
  return mp::finish();
}
