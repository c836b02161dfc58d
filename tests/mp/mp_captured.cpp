// Stream work on a stream being captured into a CUDA graph, through the CPU stream emulation built to report a
// capture on every stream (core/stream_ops.h, createCpuStreamOps's capturing). The emulation records nothing and runs
// the work once, so this checks the forms the library takes under a capture and its refusals, not replays.
//  1. two-sided messaging: the one-time stream calls (isend_on_stream, isend_typed_on_stream, post_on_stream /
//     post_all_on_stream of a prepared send, wait_on_stream and waitall_on_stream of an ordinary request) are refused
//     with TETHER_ERR_UNSUPPORTED naming the persistent requests and leave nothing behind (the requests complete
//     from the host);
//  2. persistent requests' stream calls (startall_on_stream, waitall_on_stream, wait_on_stream), which replay, run: 10
//     rounds with every byte checked, a stream barrier (its captured form, the world team's sync) between rounds;
//  3. typed RMA on a stream: the staged route (TETHER_DT_RMA=staged, set by the ctest) is refused, the blocking form
//     still moves the data.
// 2+ PEs, ring.
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mp_cpu_stream.h"
#include "tether/msg.h"
#include "tether/datatype.h"

namespace {

constexpr size_t kBytes = 4096;
constexpr int kRounds = 10;

void expectCaptureRefused(tether_status_t s, const char* what) {
  if (s != TETHER_ERR_UNSUPPORTED || std::string(tether_last_error()).find("tether_send_init") == std::string::npos) {
    std::fprintf(stderr, "FAIL: %s under capture returned %d (%s), expected TETHER_ERR_UNSUPPORTED naming the "
                 "persistent requests\n", what, static_cast<int>(s), tether_last_error());
    std::exit(1);
  }
}

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w), next = (me + 1) % n, prev = (me + n - 1) % n;
  tether::StreamOps* so = mp::useCpuStreams(w, true, true);
  MP_OK(tether_msg_init(w, nullptr));
  void* s = nullptr;
  MP_CHECK(so->createStream(&s).isOk());
  std::vector<unsigned char> out(kBytes), in(kBytes);

  // 1. the one-time stream calls are refused; the requests behind them still work from the host
  tether_request_t rreq = TETHER_REQUEST_NULL, sreq = TETHER_REQUEST_NULL;
  expectCaptureRefused(tether_isend_on_stream(w, out.data(), kBytes, next, 1, s, &sreq), "tether_isend_on_stream");
  MP_CHECK(sreq == TETHER_REQUEST_NULL);
  tether_type_t byte = nullptr, bytes = nullptr;
  MP_OK(tether_type_basic(TETHER_BASIC_BYTE, &byte));
  MP_OK(tether_type_contiguous(static_cast<int64_t>(kBytes), byte, &bytes));
  MP_OK(tether_type_free(&byte));
  MP_OK(tether_type_commit(bytes));
  expectCaptureRefused(tether_isend_typed_on_stream(w, out.data(), 1, bytes, next, 1, s, &sreq),
                       "tether_isend_typed_on_stream");
  MP_OK(tether_send_prepare(w, out.data(), kBytes, next, 2, &sreq));
  expectCaptureRefused(tether_msg_post_on_stream(w, sreq, s), "tether_msg_post_on_stream");
  expectCaptureRefused(tether_msg_post_all_on_stream(w, 1, &sreq, s), "tether_msg_post_all_on_stream");
  MP_OK(tether_irecv(w, in.data(), kBytes, prev, 2, &rreq));
  expectCaptureRefused(tether_msg_wait_on_stream(w, rreq, s), "tether_msg_wait_on_stream");
  // A bad request is reported as such under a capture too (its own error first).
  MP_CHECK(tether_msg_wait_on_stream(w, 12345678, s) == TETHER_ERR_INVALID_ARG);
  MP_CHECK(tether_msg_post_on_stream(w, rreq, s) == TETHER_ERR_INVALID_ARG);  // a receive, not a prepared send
  expectCaptureRefused(tether_msg_waitall_on_stream(w, 1, &rreq, s), "tether_msg_waitall_on_stream");
  for (size_t i = 0; i < kBytes; ++i) out[i] = static_cast<unsigned char>(me * 7 + i);
  MP_OK(tether_msg_post(w, sreq));  // the refused posts left the prepared send startable
  tether_request_t both[2] = {sreq, rreq};
  MP_OK(tether_msg_waitall(w, 2, both, nullptr));
  for (size_t i = 0; i < kBytes; ++i) MP_CHECK(in[i] == static_cast<unsigned char>(prev * 7 + i));
  if (me == 0) std::printf("one-time stream calls refused under capture: ok\n");

  // 2. persistent requests replay: their stream calls run (the emulation runs each once), every round checked
  tether_request_t ps = TETHER_REQUEST_NULL, pr = TETHER_REQUEST_NULL;
  MP_OK(tether_send_init(w, out.data(), kBytes, next, 3, &ps));
  MP_OK(tether_recv_init(w, in.data(), kBytes, prev, 3, &pr));
  tether_request_t reqs[2] = {pr, ps};
  for (int r = 0; r < kRounds; ++r) {
    for (size_t i = 0; i < kBytes; ++i) out[i] = static_cast<unsigned char>(me * 7 + r * 3 + i);
    MP_OK(tether_msg_startall_on_stream(w, 2, reqs, s));
    MP_OK(tether_msg_waitall_on_stream(w, 2, reqs, s));
    MP_OK(tether_msg_wait_on_stream(w, pr, s));
    MP_CHECK(so->synchronize(s).isOk());
    for (size_t i = 0; i < kBytes; ++i)
      if (in[i] != static_cast<unsigned char>(prev * 7 + r * 3 + i)) {
        std::fprintf(stderr, "FAIL PE %d: round %d byte %zu is %u\n", me, r, i, in[i]);
        return 1;
      }
    MP_OK(tether_barrier_all_on_stream(w, s));  // nobody refills out before every PE checked its round
    MP_CHECK(so->synchronize(s).isOk());
  }
  MP_OK(tether_msg_waitall(w, 2, reqs, nullptr));
  if (me == 0) std::printf("persistent rounds under capture: ok (%d rounds)\n", kRounds);

  // 3. typed RMA's staged route on a captured stream is refused (its stage would be given back at the first replay)
  auto* sym = static_cast<unsigned char*>(mp::hostZeroed(w, kBytes));
  const char* route = std::getenv("TETHER_DT_RMA");
  if (route && std::string(route) == "staged") {
    const tether_status_t st = tether_put_typed_on_stream(w, sym, bytes, 1, out.data(), bytes, 1, next, s);
    if (st != TETHER_ERR_UNSUPPORTED || std::string(tether_last_error()).find("CUDA graph") == std::string::npos) {
      std::fprintf(stderr, "FAIL: staged tether_put_typed_on_stream under capture returned %d (%s)\n",
                   static_cast<int>(st), tether_last_error());
      return 1;
    }
    MP_OK(tether_put_typed(w, sym, bytes, 1, out.data(), bytes, 1, next));
    MP_OK(tether_barrier_all(w));
    for (size_t i = 0; i < kBytes; ++i)
      MP_CHECK(sym[i] == static_cast<unsigned char>(prev * 7 + (kRounds - 1) * 3 + i));
    if (me == 0) std::printf("staged typed RMA refused under capture: ok\n");
  }
  MP_OK(tether_free(w, sym));
  MP_OK(tether_msg_request_free(w, &ps));
  MP_OK(tether_msg_request_free(w, &pr));
  MP_OK(tether_type_free(&bytes));
  MP_CHECK(so->destroyStream(s).isOk());
  MP_OK(tether_msg_finalize(w));
  return mp::finish();
}
