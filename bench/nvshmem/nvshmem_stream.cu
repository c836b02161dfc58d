// tether_bench_nvshmem_stream: the NVSHMEM twin of tether_bench_stream (bench/stream/stream_bench.cu, issue #6) —
// the same rows (same names, sizes, batches, warm-up), with NVSHMEM's on-stream host API (nvshmemx_*_on_stream)
// instead of tether's _on_stream calls. The method — options, the no-GPU agreement, batch timing, statistics,
// validation, the STREAM_BENCH_TIMEOUT watchdog, the tables and the JSON lines — is bench/stream/stream_rows.h's, the
// same code in both programs, and so are the rows themselves; this file holds NVSHMEM's calls for them (NvshmemCalls),
// the preload and the NVSHMEM start-up only. 2 PEs under tetherrun, one GPU each; symmetric buffers from
// nvshmem_malloc (GPU memory).
//
//   tetherrun -n 2 tether_bench_nvshmem_stream [harness options] [--json FILE] [--quick] [--ops a,b]
//
// Rows (the stream_bench row of the same name; see bench/README.md "stream"):
//   put_on_stream        8 B nvshmemx_putmem_on_stream back to back: k enqueued, one synchronisation, per op
//   put_quiet_on_stream  8 B put + nvshmemx_quiet_on_stream, k pairs back to back, one synchronisation, per pair
//   put_quiet_sync       8 B put + quiet_on_stream + cudaStreamSynchronize per op (latency as the host sees it)
//   put_bw, put_bw_bidir sizes --min-size .. --max-size (default 8 B .. 1 GiB): k puts + quiet_on_stream per batch;
//                        bidir = both PEs at once, total of both directions over the slower PE's time
//   put_signal_pingpong  nvshmemx_putmem_signal_on_stream(SET) + nvshmemx_signal_wait_until_on_stream(GE) ping-pong
//                        (8 B, 4 KiB, 64 KiB, 1 MiB), one-way = time / 2k
//   barrier_all          nvshmemx_barrier_all_on_stream, k back to back on both PEs, per barrier
// stream_bench rows NOT measured here:
//   prepared_pingpong, prepared_put4   tether_prepare + tether_post_on_stream: NVSHMEM has no prepared sets
//   fetch_add, fetch_add_sync          stream-ordered atomics: NVSHMEM has no atomic _on_stream call
//   doorbell_pingpong, sm_pingpong,    doorbells (a kernel rings, copy engines send armed puts): no NVSHMEM
//   doorbell_put                       counterpart (sm_pingpong, that group's SM reference, goes with it;
//                                      tether_bench_nvshmem_device has NVSHMEM's device-API ping-pong)
//   halo                               not ported: its three models mix tether's host, stream and device APIs; an
//                                      NVSHMEM version would be a port of its own
// The header's '#' line lists them; --ops accepts their names (one --ops line serves both programs) and measures
// nothing for them; a name neither program knows is an error.
//
// Start-up: nvshmem_boot.h (tether hands out NVSHMEM's unique id; nvshmemx_init_attr with UID bootstrap), as
// tether_bench_nvshmem_device. Host coordination (the barriers around every batch, the bidir time exchange, the
// no-GPU agreement, the validation vote) goes through tether's host API in stream_rows.h, as in tether_bench_stream,
// never inside a timed region; every timed operation is an NVSHMEM call. The put source is cudaMalloc'd like
// stream_bench's and registered with nvshmemx_buffer_register (P2P does not need it; other transports would).
//
// Differences from stream_bench, none inside a timed region: before the first row each NVSHMEM call is made once with
// nothing to wait for (see preload()), so no lazily loaded kernel is loaded while a wait is pending on a stream; the
// watchdog's read-back stream and buffer are made at start-up, and the watchdog also bounds the NVSHMEM start-up (at
// least 120 s) and the preload. NVSHMEM's stream waits have no timeout either.
//
// Exit (stream_rows.h): 0 ok, 1 wrong data, 2 failed call or bad usage, 3 stalled batch or start-up, 77 no GPU.
//
// NVSHMEM's environment (set when unset, every PE the same, printed in the header): NVSHMEM_SYMMETRIC_SIZE =
// --max-size + 64M, NVSHMEM_REMOTE_TRANSPORT=none (one host, P2P only), NVSHMEM_DISABLE_NVLS=1 (never NVLink
// multicast on the shared machines).
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "../cuda_check.h"
#include "../stream/stream_rows.h"
#include "harness.h"
#include "nvshmem_boot.h"

namespace tb = tether_bench;

namespace {

using streambench::barrier;
using streambench::benchTimeout;
using streambench::clearDev;
using streambench::Ctx;
using streambench::syncStream;
using streambench::watchRow;

constexpr const char* kProgram = "tether_bench_nvshmem_stream";

// The rows here, and stream_bench's rows (--ops names) that have no NVSHMEM counterpart here (file comment).
const char* const kRows[] = {"put_on_stream", "put_quiet_on_stream", "put_quiet_sync",     "put_bw",
                             "put_bw_bidir",  "put_signal_pingpong", "barrier_all"};
const char* const kNotHere[] = {"prepared_pingpong", "prepared_put4",     "fetch_add",   "fetch_add_sync",
                                "doorbell_pingpong", "sm_pingpong",       "doorbell_put", "halo"};

// ---- rows ---------------------------------------------------------------------------------------------------------

// Every NVSHMEM call of the rows once, with nothing to wait for (puts to this PE, a wait on a word already set, then
// one barrier on both PEs), synchronised: CUDA loads kernels lazily, and a kernel loaded while a wait is pending on a
// stream may have to wait for it. Untimed, watched as a start-up step; the buffers are cleared again afterwards, and
// then the batches begin (c.rows).
void preload(Ctx& c) {
  watchRow(c, "preload (each NVSHMEM on-stream call once)", {{"own signal word", c.words}});
  c.dog->arm(benchTimeout());
  nvshmemx_putmem_on_stream(c.buf, c.local, 8, c.me, c.s);
  nvshmemx_quiet_on_stream(c.s);
  nvshmemx_putmem_signal_on_stream(c.buf, c.local, 8, c.words, 1, NVSHMEM_SIGNAL_SET, c.me, c.s);
  nvshmemx_signal_wait_until_on_stream(c.words, NVSHMEM_CMP_GE, 1, c.s);
  nvshmemx_barrier_all_on_stream(c.s);
  CK(cudaGetLastError());
  syncStream(c);
  c.dog->disarm();
  clearDev(c, c.buf, 8);
  clearDev(c, c.words, 4096);
  barrier(c);
  c.rows = true;
}

// NVSHMEM's calls for stream_rows.h's rows (put_on_stream .. barrier_all); no ping-pong variant.
struct NvshmemCalls : streambench::NoVariant {
  void put(Ctx& c, void* dest, const void* src, size_t nb, int pe) {
    nvshmemx_putmem_on_stream(dest, src, nb, pe, c.s);
  }
  void quiet(Ctx& c) { nvshmemx_quiet_on_stream(c.s); }
  void putSignal(Ctx& c, void* dest, const void* src, size_t nb, uint64_t* sig, uint64_t v, int pe) {
    nvshmemx_putmem_signal_on_stream(dest, src, nb, sig, v, NVSHMEM_SIGNAL_SET, pe, c.s);
  }
  void signalWait(Ctx& c, uint64_t* sig, uint64_t v) {
    nvshmemx_signal_wait_until_on_stream(sig, NVSHMEM_CMP_GE, v, c.s);
  }
  void barrierAll(Ctx& c) { nvshmemx_barrier_all_on_stream(c.s); }
};

// --ops: stream_bench's names that are not rows here are accepted (the same --ops serves both programs; the header
// lists them as not measured); a name neither program knows is an error.
bool checkOps(const Ctx& c) {
  bool ok = true;
  for (const std::string& op : c.o.ops) {
    bool known = false;
    for (const char* r : kRows) known = known || op == r;
    for (const char* r : kNotHere) known = known || op == r;
    if (!known) {
      if (c.me == 0) std::fprintf(stderr, "%s: unknown row '%s' in --ops (see --help)\n", kProgram, op.c_str());
      ok = false;
    }
  }
  return ok;
}

const char* kExtraUsage =
    "tether_bench_nvshmem_stream: NVSHMEM's on-stream API, the twin of tether_bench_stream (issue #6), 2 PEs, one GPU\n"
    "  each; --max-size defaults to 1G here\n"
    "  rows (--ops): put_on_stream, put_quiet_on_stream, put_quiet_sync, put_bw, put_bw_bidir, put_signal_pingpong,\n"
    "  barrier_all; tether_bench_stream's other row names are accepted and measure nothing (no NVSHMEM counterpart)\n"
    "  env: NVSHMEM_SYMMETRIC_SIZE (default max-size + 64M), NVSHMEM_REMOTE_TRANSPORT (none),\n"
    "  NVSHMEM_DISABLE_NVLS (1), STREAM_BENCH_TIMEOUT (60 s per batch)\n"
    "  exit: 0 ok, 1 wrong data, 2 failed call or bad usage, 3 stalled batch, 77 no GPU\n";

}  // namespace

int main(int argc, char** argv) {
  Ctx c;
  c.program = kProgram;
  c.impl = "nvshmem";
  c.memory = "NVSHMEM heap (nvshmem_malloc)";
  int rc = 0;
  if (!streambench::parseArgs(c, argc, argv, kExtraUsage, &rc)) return rc;

  // NVSHMEM's environment, before any NVSHMEM call; every PE computes the same values.
  const size_t heapNeed = c.o.maxSize + (size_t{64} << 20);  // buf + words (+ NVSHMEM's own)
  std::string envNvls, envTransport, envHeap;
  if (!tether_nvshmem::envDefault("NVSHMEM_DISABLE_NVLS", "1", &envNvls) ||
      !tether_nvshmem::envDefault("NVSHMEM_REMOTE_TRANSPORT", "none", &envTransport) ||
      !tether_nvshmem::envDefault("NVSHMEM_SYMMETRIC_SIZE", std::to_string(heapNeed), &envHeap)) {
    std::fprintf(stderr, "%s: setenv failed\n", kProgram);
    return 2;
  }

  if (!streambench::startPes(c)) return 2;
  if (!checkOps(c)) {
    TK(tether_finalize(c.w));
    return 2;
  }
  if (!streambench::startGpu(c)) return 77;  // no GPU on some PE: every PE skips
  if (c.me == 0) {
    size_t given = 0;
    if (tb::parseSize(envHeap, &given) && given < heapNeed)
      std::fprintf(stderr, "%s: warning: NVSHMEM_SYMMETRIC_SIZE=%s is below the %zu bytes this run allocates "
                   "(--max-size + 64M); nvshmem_malloc may fail\n", kProgram, envHeap.c_str(), heapNeed);
  }
  // The stream, events and the watchdog's probe before NVSHMEM starts, so the watchdog also bounds the start-up.
  CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
  CK(cudaEventCreate(&c.e0));
  CK(cudaEventCreate(&c.e1));
  CK(streambench::makeProbe(c));
  streambench::startWatchdog(c);  // armed for each batch and each start-up step

  // Bootstrap: NVSHMEM's unique id from PE 0 to every PE through tether (nvshmem_boot.h). Bounded by the watchdog
  // (at least 120 s: NVSHMEM maps its whole heap here).
  watchRow(c, "start-up (unique-id exchange through tether, nvshmemx_init_attr, nvshmem_malloc)");
  c.dog->arm(std::max(benchTimeout(), 120.0));
  std::string error;
  if (!tether_nvshmem::bootNvshmem(c.w, &error)) {
    std::fprintf(stderr, "%s[PE %d]: %s\n", kProgram, c.me, error.c_str());
    std::fflush(nullptr);
    std::_Exit(2);  // not exit(): teardown could wait on the peer
  }
  c.buf = static_cast<char*>(nvshmem_malloc(c.o.maxSize));
  c.words = static_cast<uint64_t*>(nvshmem_malloc(4096));
  c.dog->disarm();
  if (c.buf == nullptr || c.words == nullptr) {
    std::fprintf(stderr, "%s[PE %d]: nvshmem_malloc of %zu bytes (+ 4096) failed: NVSHMEM_SYMMETRIC_SIZE=%s; set it "
                 "to at least %zu or lower --max-size\n", kProgram, c.me, c.o.maxSize, envHeap.c_str(), heapNeed);
    std::fflush(nullptr);
    std::_Exit(2);
  }
  if (!nvshmem_ptr(c.buf, c.peer)) {
    std::fprintf(stderr, "%s[PE %d]: no p2p path between the two GPUs (nvshmem_ptr == NULL): not the path "
                 "tether_bench_stream measures on this machine\n", kProgram, c.me);
    std::fflush(nullptr);
    std::_Exit(2);
  }
  c.path = "p2p";
  CK(cudaMalloc(&c.local, c.o.maxSize));
  CK(cudaMalloc(&c.bad, sizeof(unsigned long long)));
  const bool registered = nvshmemx_buffer_register(c.local, c.o.maxSize) == 0;
  if (!registered)
    std::fprintf(stderr, "%s[PE %d]: warning: nvshmemx_buffer_register(local, %zu) failed; going on (P2P reads the "
                 "local buffer directly)\n", kProgram, c.me, c.o.maxSize);
  c.detail = "NVSHMEM " + tether_nvshmem::nvshmemVersion() + " on-stream API, NVSHMEM_SYMMETRIC_SIZE=" + envHeap +
             " NVSHMEM_REMOTE_TRANSPORT=" + envTransport + " NVSHMEM_DISABLE_NVLS=" + envNvls + ", local buffer " +
             (registered ? "registered" : "NOT registered") + "; bootstrap: unique id handed out through tether";
  streambench::fillLocal(c);
  clearDev(c, c.words, 4096);
  CK(cudaDeviceSynchronize());
  streambench::openJson(c);
  barrier(c);
  streambench::printHeader(c);
  if (c.me == 0)
    std::printf("# not measured here (no NVSHMEM counterpart): prepared_pingpong, prepared_put4 (prepared sets), "
                "fetch_add (stream atomics), doorbell_pingpong, sm_pingpong, doorbell_put (doorbells), halo (not "
                "ported)\n");

  preload(c);
  NvshmemCalls calls;
  streambench::rowPutLatency(c, calls);
  streambench::rowBandwidth(c, calls);
  streambench::rowPingPong(c, calls);
  streambench::rowBarrier(c, calls);

  const bool ok = streambench::vote(c);
  std::fflush(stdout);
  CK(cudaStreamSynchronize(c.s));
  barrier(c);  // the peer is done with this PE's buffers before they go
  if (registered && nvshmemx_buffer_unregister(c.local) != 0)
    std::fprintf(stderr, "%s[PE %d]: nvshmemx_buffer_unregister failed\n", kProgram, c.me);
  nvshmem_free(c.words);
  nvshmem_free(c.buf);
  nvshmem_finalize();
  streambench::freeCuda(c);
  TK(tether_finalize(c.w));
  return ok ? 0 : 1;
}
