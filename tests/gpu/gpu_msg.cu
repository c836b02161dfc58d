// Two-sided messaging (issue #20, tether/msg.h) with GPU buffers: every pairing of host (pageable) and GPU memory
// (cudaMalloc, not symmetric) on the sending and receiving side, eager and rendezvous sizes, a ring exchange over all
// PEs, then a truncated rendezvous receive into GPU memory. Contents checked byte by byte (pattern from size, source
// and position).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "gpu_util.h"
#include "tether/msg.h"

namespace {

unsigned char pattern(size_t size, int from, size_t i) { return static_cast<unsigned char>(i * 131 + size * 7 + from); }

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w), to = (me + 1) % n, from = (me + n - 1) % n;
  MP_OK(tether_msg_init(w, nullptr));
  const size_t sizes[] = {0, 8, 8192, 8193, 100000, size_t{16} << 20};
  const size_t maxBytes = size_t{16} << 20;
  void* dSend = nullptr;
  void* dRecv = nullptr;
  CK(cudaMalloc(&dSend, maxBytes));
  CK(cudaMalloc(&dRecv, maxBytes));
  std::vector<unsigned char> hSend(maxBytes), hRecv(maxBytes), check(maxBytes);
  int tag = 0;
  for (int sendGpu = 0; sendGpu < 2; ++sendGpu)
    for (int recvGpu = 0; recvGpu < 2; ++recvGpu)
      for (size_t sz : sizes) {
        ++tag;
        for (size_t i = 0; i < sz; ++i) hSend[i] = pattern(sz, me, i);
        if (sendGpu) CK(cudaMemcpy(dSend, hSend.data(), sz, cudaMemcpyHostToDevice));
        CK(cudaMemset(dRecv, 0, sz + 1 <= maxBytes ? sz + 1 : sz));
        std::fill(hRecv.begin(), hRecv.begin() + static_cast<long>(sz), 0);
        tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
        MP_OK(tether_irecv(w, recvGpu ? dRecv : hRecv.data(), sz, from, tag, &rr));
        MP_OK(tether_isend(w, sendGpu ? dSend : hSend.data(), sz, to, tag, &sr));
        tether_msg_status_t st;
        MP_OK(tether_msg_wait(w, &sr, nullptr));
        MP_OK(tether_msg_wait(w, &rr, &st));
        MP_CHECK(st.source == from && st.tag == tag && st.bytes == sz && st.error == TETHER_SUCCESS);
        const unsigned char* got = hRecv.data();
        if (recvGpu) {
          CK(cudaMemcpy(check.data(), dRecv, sz, cudaMemcpyDeviceToHost));
          got = check.data();
        }
        for (size_t i = 0; i < sz; ++i)
          if (got[i] != pattern(sz, from, i)) {
            char msg[160];
            std::snprintf(msg, sizeof msg, "send %s -> recv %s, %zu bytes: byte %zu is %u, expected %u",
                          sendGpu ? "GPU" : "host", recvGpu ? "GPU" : "host", sz, i, got[i], pattern(sz, from, i));
            mp::fail(__FILE__, __LINE__, "contents", msg);
          }
      }
  // A rendezvous message into a shorter GPU buffer: the prefix arrives, the receive reports TETHER_ERR_TRUNCATED.
  {
    const size_t sz = 1 << 20, cap = 50000;
    for (size_t i = 0; i < sz; ++i) hSend[i] = pattern(sz, me, i);
    CK(cudaMemcpy(dSend, hSend.data(), sz, cudaMemcpyHostToDevice));
    tether_request_t rr = TETHER_REQUEST_NULL, sr = TETHER_REQUEST_NULL;
    MP_OK(tether_irecv(w, dRecv, cap, from, 999, &rr));
    MP_OK(tether_isend(w, dSend, sz, to, 999, &sr));
    MP_OK(tether_msg_wait(w, &sr, nullptr));
    tether_msg_status_t st;
    MP_CHECK(tether_msg_wait(w, &rr, &st) == TETHER_ERR_TRUNCATED);
    MP_CHECK(st.bytes == cap && st.error == TETHER_ERR_TRUNCATED);
    CK(cudaMemcpy(check.data(), dRecv, cap, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < cap; ++i) MP_CHECK(check[i] == pattern(sz, from, i));
  }
  MP_OK(tether_msg_finalize(w));
  CK(cudaFree(dSend));
  CK(cudaFree(dRecv));
  if (me == 0) std::printf("gpu_msg: %d PEs: host/GPU send x host/GPU receive, eager and rendezvous, truncation OK\n", n);
  return mp::finish();
}
