// Persistent requests (tether/msg.h: tether_send_init / tether_recv_init, tether_msg_start(all)(_on_stream),
// tether_msg_persist_desc) with GPU buffers (cudaMalloc, not symmetric), a ring over all PEs, eager and rendezvous
// sizes, contents checked every round (the pattern names the round):
//  1. host model: 10 rounds of startall + waitall; the send buffer filled by a kernel on the legacy default stream
//     (tether_msg_start waits for that stream's earlier work, as tether_isend does);
//  2. stream model: 5 rounds on a stream (a kernel bumps a GPU round counter and fills, startall_on_stream,
//     waitall_on_stream, a kernel checks), then the same work captured ONCE into a CUDA graph and replayed 20 times:
//     each replay must be one more round (the start adds 1 to the start word; the wait compares the done word with
//     it; no round number is captured);
//  3. kernel model: one kernel per size runs 30 rounds with one descriptor per request (msg_start the receive, fill,
//     msg_start the send, msg_wait, check, msg_wait the send), block scope.
//  4. typed persistent requests (tether_send_init_typed / tether_recv_init_typed): every 2nd byte of the send buffer
//     into every 3rd byte of the receive buffer (the bytes between must stay untouched), eager and rendezvous sizes,
//     in the three models as above (host rounds, stream rounds and graph replays, one kernel's rounds): each round
//     packs the send buffer when it begins and unpacks before its done word moves.
// The host completes every request once at the end of a section (tether_msg_waitall), then frees it.
// GPU_MSG_SMALL=1 (ctest gpu_msg_persist_2pe_memcheck) skips the messages over 100000 bytes. GPU_MSG_SERIAL=1 (the
// same ctest): the typed stream rounds wait on the host for the stream's start and the whole round (send and receive)
// before they enqueue the stream wait, and the typed graph replays and the typed kernel model are skipped --
// compute-sanitizer runs a process's GPU work one item at a time, so GPU work of the progress thread issued while a
// polling kernel runs (the pack of a stream- or kernel-started typed send; the CUDA IPC read and the unpack of the
// typed receive) can wait for that kernel, which waits for that work (both PEs timed out at a round's wait, 1 run of
// several: gpu_tests_2026-12-06d.txt for the pack; gpu_tests_2026-12-06f.txt for the receive, when only the send was
// waited for; gpu_tests_2026-12-06g.txt in the typed kernel model, whose kernel waits for its own round's pack).
// Without the sanitizer (gpu_msg_persist_2pe/_4pe) every model runs. gpu_msg's typed stream model did the same
// (gpu_msg.cu).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu_util.h"
#include "tether/datatype.h"
#include "tether/msg.h"
#include "tether/msg_device.cuh"

namespace {

__host__ __device__ unsigned char pattern(int from, uint64_t round, size_t i) {
  return static_cast<unsigned char>(i * 131 + round * 29 + static_cast<size_t>(from) * 7);
}

__global__ void kFill(unsigned char* p, size_t n, int from, uint64_t round) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    p[i] = pattern(from, round, i);
}

__global__ void kCheck(const unsigned char* p, size_t n, int from, uint64_t round, unsigned long long* bad) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    if (p[i] != pattern(from, round, i)) atomicAdd(bad, 1ull);
}

// Graph-replayable forms: the round comes from a GPU counter that kBump advances once per round.
__global__ void kBump(uint64_t* round) { ++*round; }
__global__ void kFillAt(unsigned char* p, size_t n, int from, const uint64_t* round) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    p[i] = pattern(from, *round, i);
}
__global__ void kCheckAt(const unsigned char* p, size_t n, int from, const uint64_t* round, unsigned long long* bad) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    if (p[i] != pattern(from, *round, i)) atomicAdd(bad, 1ull);
}

// Kernel model: `rounds` rounds in one kernel (one block), no host call in between.
__global__ void kRounds(tether_device_handle_t h, tether_msg_persist_desc_t sd, tether_msg_persist_desc_t rd,
                        unsigned char* out, const unsigned char* in, size_t n, int me, int from, uint64_t rounds,
                        unsigned long long* bad) {
  namespace dev = tether::device;
  for (uint64_t k = 1; k <= rounds; ++k) {
    dev::msg_start<dev::Scope::Block>(h, rd, k);  // in is free: round k - 1 was checked
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = pattern(me, k, i);
    dev::msg_start<dev::Scope::Block>(h, sd, k);
    dev::msg_wait<dev::Scope::Block>(h, rd, k);
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
      if (in[i] != pattern(from, k, i)) atomicAdd(bad, 1ull);
    dev::msg_wait<dev::Scope::Block>(h, sd, k);  // out may be refilled
  }
}

// Typed (section 4): the receive buffer after a round: byte 3i is the sender's byte 2i of that round, the rest kUntouched.
constexpr unsigned char kUntouched = 0xEE;
__host__ __device__ bool typedOk(const unsigned char* p, size_t i, int from, uint64_t round) {
  return p[i] == (i % 3 == 0 ? pattern(from, round, i / 3 * 2) : kUntouched);
}
__global__ void kCheckTyped(const unsigned char* p, size_t m, int from, const uint64_t* round, unsigned long long* bad) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < 3 * m; i += size_t{gridDim.x} * blockDim.x)
    if (!typedOk(p, i, from, *round)) atomicAdd(bad, 1ull);
}
__global__ void kRoundsTyped(tether_device_handle_t h, tether_msg_persist_desc_t sd, tether_msg_persist_desc_t rd,
                             unsigned char* out, const unsigned char* in, size_t m, int me, int from, uint64_t rounds,
                             unsigned long long* bad) {
  namespace dev = tether::device;
  for (uint64_t k = 1; k <= rounds; ++k) {
    dev::msg_start<dev::Scope::Block>(h, rd, k);
    for (size_t i = threadIdx.x; i < 2 * m; i += blockDim.x) out[i] = pattern(me, k, i);
    dev::msg_start<dev::Scope::Block>(h, sd, k);  // the progress thread packs out now
    dev::msg_wait<dev::Scope::Block>(h, rd, k);   // unpacked into in before the done word moved
    for (size_t i = threadIdx.x; i < 3 * m; i += blockDim.x)
      if (!typedOk(in, i, from, k)) atomicAdd(bad, 1ull);
    dev::msg_wait<dev::Scope::Block>(h, sd, k);
  }
}

void expectNone(const unsigned long long* bad, const char* what, size_t sz) {
  if (*bad != 0) {
    char msg[128];
    std::snprintf(msg, sizeof msg, "%s, %zu bytes: %llu bytes wrong", what, sz, *bad);
    mp::fail(__FILE__, __LINE__, "contents", msg);
  }
}

void mark(int me, const char* what, size_t sz) {
  static const bool on = std::getenv("GPU_MSG_TRACE") != nullptr;
  static const auto t0 = std::chrono::steady_clock::now();
  if (!on) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "[%d] %8.2f s gpu_msg_persist: %s %zu\n", me, t, what, sz);
  std::fflush(stderr);
}

// The sections' shared state: the ring, GPU send and receive buffers, the mismatch counter (host-mapped).
struct Ctx {
  mp::MsgRing r;
  unsigned char* dSend;
  unsigned char* dRecv;
  unsigned long long* bad;
};

// Message sizes; GPU_MSG_SMALL=1 (ctest gpu_msg_persist_2pe_memcheck) keeps those up to 100000 bytes.
std::vector<size_t> sizes(const std::vector<size_t>& all) {
  static const bool small = std::getenv("GPU_MSG_SMALL") != nullptr;
  std::vector<size_t> v;
  for (size_t sz : all)
    if (!small || sz <= 100000) v.push_back(sz);
  return v;
}
const std::vector<size_t> kSizes = {8, 8192, 8193, size_t{1} << 20};

// A persistent receive from the previous PE into dRecv and a persistent send to the next from dSend (reqs[0], [1]).
void makePair(const Ctx& c, size_t sz, int tag, tether_request_t* reqs) {
  MP_OK(tether_recv_init(c.r.w, c.dRecv, sz, c.r.prev, tag, &reqs[0]));
  MP_OK(tether_send_init(c.r.w, c.dSend, sz, c.r.next, tag, &reqs[1]));
}

void freePair(const Ctx& c, tether_request_t* reqs) {
  for (int i = 0; i < 2; ++i) MP_OK(tether_msg_request_free(c.r.w, &reqs[i]));
}

// 1. host model
void hostModel(const Ctx& c) {
  for (size_t sz : sizes(kSizes)) {
    mark(c.r.me, "host model", sz);
    tether_request_t reqs[2];
    makePair(c, sz, 1, reqs);
    *c.bad = 0;
    for (uint64_t round = 1; round <= 10; ++round) {
      kFill<<<64, 256>>>(c.dSend, sz, c.r.me, round);  // legacy stream: the start waits for it
      CK(cudaGetLastError());
      MP_OK(tether_msg_startall(c.r.w, 2, reqs));
      tether_msg_status_t st[2];
      MP_OK(tether_msg_waitall(c.r.w, 2, reqs, st));
      MP_CHECK(st[0].source == c.r.prev && st[0].bytes == sz && st[1].bytes == sz);
      kCheck<<<64, 256>>>(c.dRecv, sz, c.r.prev, round, c.bad);
      CK(cudaGetLastError());
      CK(cudaStreamSynchronize(nullptr));
    }
    expectNone(c.bad, "host model", sz);
    freePair(c, reqs);
  }
}

// 2. stream model, then the same captured into a graph and replayed
void streamModel(const Ctx& c, cudaStream_t s) {
  uint64_t* dRound = nullptr;
  CK(cudaMalloc(&dRound, sizeof *dRound));
  for (size_t sz : sizes(kSizes)) {
    mark(c.r.me, "stream model", sz);
    tether_request_t reqs[2];
    makePair(c, sz, 2, reqs);
    CK(cudaMemsetAsync(dRound, 0, sizeof *dRound, s));
    *c.bad = 0;
    auto round = [&] {
      kBump<<<1, 1, 0, s>>>(dRound);
      kFillAt<<<64, 256, 0, s>>>(c.dSend, sz, c.r.me, dRound);
      MP_OK(tether_msg_startall_on_stream(c.r.w, 2, reqs, s));
      MP_OK(tether_msg_waitall_on_stream(c.r.w, 2, reqs, s));
      kCheckAt<<<64, 256, 0, s>>>(c.dRecv, sz, c.r.prev, dRound, c.bad);
    };
    for (int k = 0; k < 5; ++k) round();
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    expectNone(c.bad, "stream model", sz);
    mark(c.r.me, "graph replay", sz);
    if (sz == sizes(kSizes).front()) {  // a one-time request's stream call refuses the capture (msg.h) and leaves the capture intact
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      tether_request_t once = TETHER_REQUEST_NULL;
      MP_EXPECT_STATUS(tether_isend_on_stream(c.r.w, c.dSend, 8, c.r.next, 99, s, &once), TETHER_ERR_UNSUPPORTED);
      CK(cudaStreamEndCapture(s, &g));
      CK(cudaGraphDestroy(g));
    }
    gpu_test::replay(s, round, 20);
    expectNone(c.bad, "stream model, graph replays", sz);
    uint64_t rounds = 0;
    CK(cudaMemcpy(&rounds, dRound, sizeof rounds, cudaMemcpyDeviceToHost));
    MP_CHECK(rounds == 25);
    tether_msg_status_t st[2];
    MP_OK(tether_msg_waitall(c.r.w, 2, reqs, st));  // the host's view: every round (25) completed, reported now
    MP_CHECK(st[0].source == c.r.prev && st[0].bytes == sz);
    freePair(c, reqs);
  }
  CK(cudaFree(dRound));
}

// 3. kernel model
void kernelModel(const Ctx& c, cudaStream_t s) {
  tether_device_handle_t h;
  MP_OK(tether_device_handle(c.r.w, &h));
  for (size_t sz : sizes(kSizes)) {
    mark(c.r.me, "kernel model", sz);
    tether_request_t reqs[2];
    makePair(c, sz, 3, reqs);
    tether_msg_persist_desc_t rd, sd;
    MP_OK(tether_msg_persist_desc(c.r.w, reqs[0], &rd));
    MP_OK(tether_msg_persist_desc(c.r.w, reqs[1], &sd));
    *c.bad = 0;
    kRounds<<<1, 256, 0, s>>>(h, sd, rd, c.dSend, c.dRecv, sz, c.r.me, c.r.prev, 30, c.bad);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    expectNone(c.bad, "kernel model", sz);
    MP_OK(tether_msg_waitall(c.r.w, 2, reqs, nullptr));
    freePair(c, reqs);
  }
}

// A vector of m bytes, one every `stride`.
tether_type_t byteVector(size_t m, int64_t stride) {
  tether_type_t b = nullptr, v = nullptr;
  MP_OK(tether_type_basic(TETHER_BASIC_BYTE, &b));
  MP_OK(tether_type_vector(static_cast<int64_t>(m), 1, stride, b, &v));
  MP_OK(tether_type_free(&b));
  MP_OK(tether_type_commit(v));
  return v;
}

// 4. typed persistent requests in the three models
void typedModels(const Ctx& c, cudaStream_t s) {
  static const bool serial = std::getenv("GPU_MSG_SERIAL") != nullptr;  // (GPU work serialised: memcheck)
  tether_device_handle_t h;
  MP_OK(tether_device_handle(c.r.w, &h));
  uint64_t* dRound = nullptr;
  CK(cudaMalloc(&dRound, sizeof *dRound));
  for (size_t m : sizes({8, 8193, 300000})) {  // packed bytes: eager, rendezvous
    mark(c.r.me, "typed", m);
    tether_type_t st2 = byteVector(m, 2), st3 = byteVector(m, 3);
    tether_request_t reqs[2];
    MP_OK(tether_recv_init_typed(c.r.w, c.dRecv, 1, st3, c.r.prev, 4, &reqs[0]));
    MP_OK(tether_send_init_typed(c.r.w, c.dSend, 1, st2, c.r.next, 4, &reqs[1]));
    MP_OK(tether_type_free(&st2));  // the requests keep the types
    MP_OK(tether_type_free(&st3));
    CK(cudaMemset(c.dRecv, kUntouched, 3 * m));
    CK(cudaMemset(dRound, 0, sizeof *dRound));
    *c.bad = 0;
    // host model: the fill on the legacy stream comes first; the start packs after it
    for (uint64_t round = 1; round <= 5; ++round) {
      kBump<<<1, 1>>>(dRound);
      kFill<<<64, 256>>>(c.dSend, 2 * m, c.r.me, round);
      CK(cudaGetLastError());
      MP_OK(tether_msg_startall(c.r.w, 2, reqs));
      kFill<<<64, 256>>>(c.dSend, 2 * m, c.r.me, 999);  // after the start: the round must not carry this
      tether_msg_status_t st[2];
      MP_OK(tether_msg_waitall(c.r.w, 2, reqs, st));
      MP_CHECK(st[0].source == c.r.prev && st[0].bytes == m && st[1].bytes == m);
      kCheckTyped<<<64, 256>>>(c.dRecv, m, c.r.prev, dRound, c.bad);
      CK(cudaGetLastError());
      CK(cudaStreamSynchronize(nullptr));
    }
    expectNone(c.bad, "typed, host model", m);
    // stream model, then captured once and replayed (not under GPU_MSG_SERIAL: see the header)
    auto round = [&] {
      kBump<<<1, 1, 0, s>>>(dRound);
      kFillAt<<<64, 256, 0, s>>>(c.dSend, 2 * m, c.r.me, dRound);
      MP_OK(tether_msg_startall_on_stream(c.r.w, 2, reqs, s));
      if (serial) {  // the start is in, the round complete (reported: the stream wait then finds it done)
        CK(cudaStreamSynchronize(s));
        MP_OK(tether_msg_waitall(c.r.w, 2, reqs, nullptr));
      }
      MP_OK(tether_msg_waitall_on_stream(c.r.w, 2, reqs, s));
      kCheckTyped<<<64, 256, 0, s>>>(c.dRecv, m, c.r.prev, dRound, c.bad);
    };
    for (int k = 0; k < 5; ++k) round();
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    expectNone(c.bad, "typed, stream model", m);
    if (!serial) {
      gpu_test::replay(s, round, 10);
      expectNone(c.bad, "typed, stream model, graph replays", m);
    }
    uint64_t rounds = 0;
    CK(cudaMemcpy(&rounds, dRound, sizeof rounds, cudaMemcpyDeviceToHost));
    MP_CHECK(rounds == (serial ? 10u : 20u));
    MP_OK(tether_msg_waitall(c.r.w, 2, reqs, nullptr));
    // kernel model (not under GPU_MSG_SERIAL: see the header)
    if (!serial) {
      tether_msg_persist_desc_t rd, sd;
      MP_OK(tether_msg_persist_desc(c.r.w, reqs[0], &rd));
      MP_OK(tether_msg_persist_desc(c.r.w, reqs[1], &sd));
      kRoundsTyped<<<1, 256, 0, s>>>(h, sd, rd, c.dSend, c.dRecv, m, c.r.me, c.r.prev, 10, c.bad);
      CK(cudaGetLastError());
      CK(cudaStreamSynchronize(s));
      expectNone(c.bad, "typed, kernel model", m);
      MP_OK(tether_msg_waitall(c.r.w, 2, reqs, nullptr));
    }
    freePair(c, reqs);
  }
  CK(cudaFree(dRound));
}

}  // namespace

int main() {
  Ctx c{};
  if (!gpu_test::msgRingWithGpu(&c.r)) return 77;
  gpu_test::loadKernels({reinterpret_cast<const void*>(kFill), reinterpret_cast<const void*>(kCheck),
                         reinterpret_cast<const void*>(kBump), reinterpret_cast<const void*>(kFillAt),
                         reinterpret_cast<const void*>(kCheckAt), reinterpret_cast<const void*>(kRounds),
                         reinterpret_cast<const void*>(kCheckTyped), reinterpret_cast<const void*>(kRoundsTyped)});
  const size_t maxBytes = size_t{1} << 20;
  CK(cudaMalloc(&c.dSend, maxBytes));
  CK(cudaMalloc(&c.dRecv, maxBytes));
  CK(cudaHostAlloc(reinterpret_cast<void**>(&c.bad), sizeof *c.bad, cudaHostAllocMapped));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  hostModel(c);
  streamModel(c, s);
  kernelModel(c, s);
  typedModels(c, s);
  CK(cudaStreamDestroy(s));
  CK(cudaFreeHost(c.bad));
  MP_OK(tether_msg_finalize(c.r.w));
  CK(cudaFree(c.dSend));
  CK(cudaFree(c.dRecv));
  if (c.r.me == 0)
    std::printf("gpu_msg_persist: %d PEs: host model, stream model, 20 graph replays, kernel model with GPU buffers, "
                "typed %s OK\n", c.r.n, std::getenv("GPU_MSG_SERIAL") ? "host and stream rounds (serial)" :
                "in the three models");
  return mp::finish();
}
