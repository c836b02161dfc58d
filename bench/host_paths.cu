// host_paths: the ceilings of host-initiated put mechanisms towards a peer GPU (issue #4).
//
//   tether_bench_host_paths [--quick] [--max-size 1G] [--ops ce_sync,mailbox_warp] [--json out.jsonl] ...
//
// One process, GPUs 0 and 1 (the host "belongs" to GPU 0; GPU 1 is the peer). It measures the raw mechanisms a
// host put + quiet could be built on, without libtether, so the library's design can be chosen from numbers and so
// these rows can serve as the "ceiling" rows of the benchmark suite:
//
//   ce_sync            cudaMemcpyAsync of S bytes (pinned host -> GPU1, or GPU0 -> GPU1) + cudaStreamSynchronize
//   memop_sync         cuStreamWriteValue64 of 8 B into GPU1 memory + cudaStreamSynchronize
//   mailbox_warp       a resident warp on GPU0 polls a host-mapped mailbox, stores 8 B into GPU1, acks the host
//   mailbox_rtt        the same mailbox without the peer store (the floor of the mailbox path)
//   host_write_mapped  host store + sfence into host-pinned, GPU-mapped memory (the floor of a HOST-segment put)
//   cudaMemcpyPeer_lat cudaMemcpyPeer 8 B, call alone (how BASELINES measured it) and call + sync
//   ce_peer_uni, ce_peer_bidir, ce_h2d_pinned, ce_d2h_pinned, ce_h2d_pageable, cudaMemcpyPeer   bandwidth rows
//
// Every row validates what it moved (read back and compare, outside the timed region) and exits 1 on wrong data or
// a failed call. Every spin is bounded: the host waits for a mailbox ack until a deadline, the device warp gives up
// after a bounded number of idle polls or seconds and reports why in the mailbox. See bench/README.md.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"

namespace {

using tether_bench::Options;
using tether_bench::Reporter;
using tether_bench::Row;
using tether_bench::TableKind;

// ---- errors --------------------------------------------------------------------------------------------------------

[[noreturn]] void die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char* fmt, ...) {
  std::fflush(stdout);
  std::fputs("host_paths: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::exit(1);
}

void checkCuda(cudaError_t e, const char* call, int line) {
  if (e != cudaSuccess) die("%s failed (line %d): %s: %s", call, line, cudaGetErrorName(e), cudaGetErrorString(e));
}

void checkDriver(CUresult r, const char* call, int line) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  die("%s failed (line %d): %s: %s", call, line, name ? name : "?", text ? text : "?");
}

#define CK(call) checkCuda((call), #call, __LINE__)
#define CKD(call) checkDriver((call), #call, __LINE__)

// ---- data patterns (the same function on host and device) ----------------------------------------------------------

__host__ __device__ inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Word k of a pattern buffer is mix64(seed + k) (little endian; a tail shorter than a word holds the low bytes).
__global__ void fillKernel(uint64_t* p, size_t words, uint64_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < words; k += stride)
    p[k] = mix64(seed + k);
}

// Checks words [0, words): bytes below validBytes must hold the pattern, bytes from validBytes on must be zero (the
// guard after a copy: catches overruns). res[0] = first wrong byte (atomicMin), res[1] = wrong words. Volatile loads
// (strong, system scope): the buffer may be host memory written by a copy engine or by the host.
__global__ void checkKernel(const volatile uint64_t* p, size_t validBytes, size_t words, uint64_t seed,
                            unsigned long long* res) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < words; k += stride) {
    const size_t base = 8 * k;
    uint64_t expect;
    if (base + 8 <= validBytes) {
      expect = mix64(seed + k);
    } else if (base >= validBytes) {
      expect = 0;
    } else {
      const unsigned n = static_cast<unsigned>(validBytes - base);
      expect = mix64(seed + k) & ((1ull << (8 * n)) - 1);
    }
    const uint64_t got = p[k];
    if (got != expect) {
      const int bit = __ffsll(static_cast<long long>(got ^ expect)) - 1;
      const unsigned long long off = base + static_cast<unsigned>(bit) / 8;
      atomicMin(&res[0], off);
      atomicAdd(&res[1], 1ull);
    }
  }
}

// Reads one word through a (host-mapped) pointer on the GPU: shows what a GPU observes.
__global__ void readWordKernel(const volatile uint64_t* src, uint64_t* out) { *out = *src; }

// ---- the mailbox warp -----------------------------------------------------------------------------------------------
//
// Mailbox: one page of host-pinned memory, mapped into the GPUs (cudaHostAllocMapped | Portable). Word indices:
constexpr int kMbTagged = 0;    // [0],[1]: tagged request, 16-byte aligned (variants fence, release, rtt)
constexpr int kMbSeq = 8;       // [8]: sequence word, [9] value, [10] argument (variant acq_seq)
constexpr int kMbVal = 9;
constexpr int kMbArg = 10;
constexpr int kMbAck = 16;      // device -> host: sequence number of the last completed request
constexpr int kMbStatus = 24;   // device -> host: why the server stopped (kSt*)
constexpr int kMbServed = 25;   // device -> host at exit: requests served (quit excluded)
constexpr int kMbXor = 26;      // device -> host at exit: xor of the values received (validates the request path)
constexpr int kMbHostWord = 32; // host_write_mapped target word
constexpr size_t kMailboxBytes = 4096;

enum : int { kVarFence = 0, kVarRelease = 1, kVarAcqSeq = 2, kVarNoStore = 3 };
enum : uint64_t { kStRunning = 0, kStQuit = 1, kStIdleTime = 2, kStIdlePolls = 3, kStBadArg = 4 };
constexpr uint32_t kQuitArg = 0xffffffffu;
constexpr uint32_t kMailboxDstWords = 512;            // the warp's target: 4 KiB on GPU1, offset = seq % 512
constexpr unsigned long long kMaxIdlePolls = 1ull << 26;  // each poll is a PCIe read (>= ~0.5 us): >= ~30 s
constexpr unsigned long long kMaxIdleNs = 20ull * 1000 * 1000 * 1000;  // and at most 20 s without a request
constexpr double kHostAckTimeoutS = 5.0;              // host deadline for one ack (first one: 30 s, module load)

const char* statusName(uint64_t st) {
  switch (st) {
    case kStRunning: return "running";
    case kStQuit: return "quit on request";
    case kStIdleTime: return "idle timeout (no request for 20 s)";
    case kStIdlePolls: return "idle poll bound reached";
    case kStBadArg: return "bad request (offset out of range)";
    default: return "unknown status";
  }
}

__device__ __forceinline__ void ldRelaxedSysV2(const uint64_t* p, uint64_t& a, uint64_t& b) {
  asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
__device__ __forceinline__ uint64_t ldRelaxedSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ldAcquireSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void stRelaxedSys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void stReleaseSys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The server. One warp is launched; lane 0 serves (the other lanes are free for larger payloads later).
//
// Request n (n = 1, 2, ...; one outstanding at a time) carries a 64-bit value and a 32-bit argument (word offset
// into dst, or kQuitArg).
//  * Tagged form (variants fence, release, rtt): two 64-bit words, each carrying the 16-bit tag n mod 2^16:
//      w0 = value[31:0] << 32 | arg[15:0] << 16 | tag,   w1 = value[63:32] << 32 | arg[31:16] << 16 | tag.
//    The warp reads both with ONE 16-byte relaxed.sys load (one PCIe read). An aligned 64-bit access is
//    single-copy atomic, so a word whose tag is n was written for request n, whole; the request is taken only when
//    both tags are n. The 16-byte load may tear between the two words; a torn read shows one old tag and is simply
//    polled again. No ordering between the two words is needed, so no second (dependent) read is needed.
//  * Sequence form (variant acq_seq, the textbook protocol): value and arg in their own words, then the sequence
//    word written last with release; the warp polls the sequence word with ld.acquire.sys and then reads value and
//    arg (a second, dependent PCIe read).
// Completion: the value is stored (plain store) into dst[arg] on the peer GPU, then the ack word (host memory) gets
// n, ordered after the store either by fence.sc.sys (__threadfence_system) + relaxed.sys store (variant fence) or
// by st.release.sys alone (variants release and acq_seq). The host reads the ack with an acquire load, so seeing
// ack == n means the store to dst happens-before everything the host does next.
__global__ void mailboxServer(uint64_t* mb, uint64_t* dst, uint32_t dstWords, int variant,
                              unsigned long long maxIdlePolls, unsigned long long maxIdleNs) {
  if (threadIdx.x != 0) return;
  uint64_t expect = 1, xorAcc = 0, status = kStRunning;
  unsigned long long idle = 0;
  uint64_t idleSince = 0;
  for (;;) {
    uint64_t value = 0;
    uint32_t arg = 0;
    bool got = false;
    if (variant == kVarAcqSeq) {
      if (ldAcquireSys(mb + kMbSeq) == expect) {
        value = ldRelaxedSys(mb + kMbVal);
        arg = static_cast<uint32_t>(ldRelaxedSys(mb + kMbArg));
        got = true;
      }
    } else {
      uint64_t w0, w1;
      ldRelaxedSysV2(mb + kMbTagged, w0, w1);
      const uint64_t tag = expect & 0xffffu;
      if ((w0 & 0xffffu) == tag && (w1 & 0xffffu) == tag) {
        value = (w0 >> 32) | (w1 & 0xffffffff00000000ull);
        arg = static_cast<uint32_t>(((w0 >> 16) & 0xffffu) | (((w1 >> 16) & 0xffffu) << 16));
        got = true;
      }
    }
    if (!got) {
      ++idle;
      if (idle > maxIdlePolls) {
        status = kStIdlePolls;
        break;
      }
      if (idle == 1024) idleSince = globalTimerNs();  // the timer is read only while idle, never on the hot path
      if ((idle & 1023) == 0 && idle > 1024 && globalTimerNs() - idleSince > maxIdleNs) {
        status = kStIdleTime;
        break;
      }
      continue;
    }
    idle = 0;
    if (arg == kQuitArg) {
      status = kStQuit;
      break;
    }
    if (arg >= dstWords) {
      status = kStBadArg;
      break;
    }
    xorAcc ^= value;
    if (variant == kVarNoStore) {
      stReleaseSys(mb + kMbAck, expect);
    } else {
      dst[arg] = value;  // the put: a plain 8-byte store into the peer GPU's memory (NVLink)
      if (variant == kVarFence) {
        __threadfence_system();  // fence.sc.sys: the store is performed at system scope before what follows
        stRelaxedSys(mb + kMbAck, expect);
      } else {
        stReleaseSys(mb + kMbAck, expect);
      }
    }
    ++expect;
  }
  // Publish the results, then the status with release (the host reads the status with acquire), then ack the quit.
  stRelaxedSys(mb + kMbServed, expect - 1);
  stRelaxedSys(mb + kMbXor, xorAcc);
  stReleaseSys(mb + kMbStatus, status);
  if (status == kStQuit) stReleaseSys(mb + kMbAck, expect);
}

// ---- host helpers --------------------------------------------------------------------------------------------------

inline void hostStoreFence() {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("sfence" ::: "memory");
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

size_t roundUp8(size_t n) { return (n + 7) & ~size_t{7}; }

constexpr size_t kGuardBytes = 256;     // checked to be zero after each copy (overrun detection)
constexpr size_t kCapacitySlack = 4096;  // every big buffer has this much beyond roundUp8(max size)

struct Ctx {
  Options opts;
  Reporter* rep = nullptr;
  int ngpu = 0;
  bool peer = false;          // 2 GPUs with peer access enabled both ways
  size_t maxSize = 0;
  size_t cap = 0;             // bytes of each big buffer
  double sampleMs = 20;       // bandwidth rows: minimum time per sample
  int sms[2] = {0, 0};
  cudaStream_t s0[4] = {}, s1[4] = {};
  // big buffers (pattern sources are filled once with their seed)
  uint8_t* a0 = nullptr;  // GPU0, source, seedA
  uint8_t* d0 = nullptr;  // GPU0, destination
  uint8_t* b1 = nullptr;  // GPU1, destination
  uint8_t* c1 = nullptr;  // GPU1, source, seedC
  uint8_t* hs = nullptr;  // pinned host (mapped, portable), source, seedH
  uint8_t* hd = nullptr;  // pinned host (mapped, portable), destination
  uint8_t* pg = nullptr;  // pageable host (malloc), source, seedH (copied from hs), allocated lazily
  uint64_t seedA = 0, seedC = 0, seedH = 0;
  uint64_t* small1 = nullptr;  // GPU1, 64 KiB: mailbox target [0, 4K), memop words at 4K and 4K + 64
  uint64_t* mb = nullptr;      // pinned host mailbox page
  uint64_t* mbDev[2] = {nullptr, nullptr};  // its device address per GPU (== mb under UVA)
  unsigned long long* res[2] = {nullptr, nullptr};  // check results per GPU
  uint64_t* tmp[2] = {nullptr, nullptr};            // one word per GPU for readWordKernel
  std::vector<std::pair<std::string, double>> summary;  // 8 B put+quiet medians, printed at the end
};

void setDev(int d) { CK(cudaSetDevice(d)); }

void syncDev(int d) {
  setDev(d);
  CK(cudaDeviceSynchronize());
}

int gridFor(const Ctx& c, int dev) { return std::max(1, c.sms[dev] * 4); }

void fillPattern(Ctx& c, int dev, void* devPtr, size_t bytes, uint64_t seed) {
  setDev(dev);
  fillKernel<<<gridFor(c, dev), 256>>>(static_cast<uint64_t*>(devPtr), bytes / 8, seed);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
}

// Zeroes the part of a destination that a check at size S reads. dev < 0: host memory.
size_t checkSpan(const Ctx& c, size_t S) { return std::min(c.cap, roundUp8(S) + kGuardBytes); }

void clearDst(Ctx& c, int dev, void* p, size_t S) {
  const size_t n = checkSpan(c, S);
  if (dev < 0) {
    std::memset(p, 0, n);
    return;
  }
  setDev(dev);
  CK(cudaMemset(p, 0, n));
  CK(cudaDeviceSynchronize());
}

// Compares p[0, S) with the pattern of `seed` and the guard after it with zeros, on GPU `dev` (p must be addressable
// there: its memory, a peer's, or mapped host memory). Exits 1 on any difference.
void verify(Ctx& c, int dev, const void* p, size_t S, uint64_t seed, const std::string& what) {
  setDev(dev);
  unsigned long long init[2] = {~0ull, 0ull};
  CK(cudaMemcpy(c.res[dev], init, sizeof(init), cudaMemcpyHostToDevice));
  const size_t words = checkSpan(c, S) / 8;
  checkKernel<<<gridFor(c, dev), 256>>>(static_cast<const volatile uint64_t*>(p), S, words, seed, c.res[dev]);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  unsigned long long out[2];
  CK(cudaMemcpy(out, c.res[dev], sizeof(out), cudaMemcpyDeviceToHost));
  if (out[1] != 0)
    die("data validation FAILED: %s: byte %llu of %zu (+%zu guard) differs, %llu wrong words", what.c_str(),
        out[0], S, checkSpan(c, S) - S, out[1]);
}

std::string label(const std::string& op, const std::string& path, size_t S) {
  return op + " [" + path + "] " + std::to_string(S) + " B";
}

void addRow(Ctx& c, const std::string& op, const std::string& path, const std::string& kinds, size_t bytes,
            long iters, const std::vector<double>& samples, double bwBytes) {
  Row row;
  row.op = op;
  row.model = "host";
  row.path = path;
  row.kinds = kinds;
  row.bytes = bytes;
  row.iters = iters;
  row.latUs = tether_bench::computeStats(samples);
  if (bwBytes > 0 && row.latUs.median > 0) row.bwGBps = bwBytes / (row.latUs.median * 1e3);
  c.rep->addRow(row);
}

void note(Ctx& c, const std::string& text) {
  std::fprintf(c.rep->tableStream(), "\n# %s\n", text.c_str());
  std::fflush(c.rep->tableStream());
}

// ---- latency rows ---------------------------------------------------------------------------------------------------

// ce_sync: cudaMemcpyAsync(dst <- src, S) on a non-blocking stream, then cudaStreamSynchronize; every op.
void runCeSync(Ctx& c) {
  struct Variant {
    const char* path;
    const char* kinds;
    int streamDev;
    const uint8_t* src;
    uint8_t* dst;
    cudaMemcpyKind kind;
    uint64_t seed;
    const char* what;
  };
  const Variant variants[] = {
      {"ce/stream@gpu1", "H->D", 1, c.hs, c.b1, cudaMemcpyHostToDevice, c.seedH,
       "pinned host -> GPU1 memory, stream on GPU1 (the target's copy engine)"},
      {"ce/stream@gpu0", "H->D", 0, c.hs, c.b1, cudaMemcpyHostToDevice, c.seedH,
       "pinned host -> GPU1 memory, stream on GPU0 (the host's own GPU)"},
      {"ce/stream@gpu0", "D->D", 0, c.a0, c.b1, cudaMemcpyDeviceToDevice, c.seedA,
       "GPU0 memory -> GPU1 memory (peer copy), stream on GPU0"},
  };
  for (const Variant& v : variants) {
    c.rep->beginTable(std::string("ce_sync: cudaMemcpyAsync ") + v.what +
                          ", non-blocking stream, + cudaStreamSynchronize per op (put + quiet); ops back to back",
                      TableKind::Latency);
    cudaStream_t st = v.streamDev == 0 ? c.s0[0] : c.s1[0];
    for (size_t S : tether_bench::messageSizes(c.opts)) {
      clearDst(c, 1, v.dst, S);
      setDev(v.streamDev);
      const int ops = tether_bench::opsPerBatch(c.opts, S);
      std::vector<double> samples;
      tether_bench::measure(c.opts.warmup, c.opts.batches, ops, [&](int k) {
        for (int i = 0; i < k; ++i) {
          CK(cudaMemcpyAsync(v.dst, v.src, S, v.kind, st));
          CK(cudaStreamSynchronize(st));
        }
        return true;
      }, &samples);
      verify(c, 1, v.dst, S, v.seed, label("ce_sync", std::string(v.path) + " " + v.kinds, S));
      addRow(c, "ce_sync", v.path, v.kinds, S, static_cast<long>(ops) * c.opts.batches, samples,
             static_cast<double>(S));
      if (S == 8)
        c.summary.emplace_back(std::string("ce_sync ") + v.kinds + " " + v.path,
                               tether_bench::computeStats(samples).median);
    }
  }
}

// memop_sync: cuStreamWriteValue64(GPU1 word, ++v) + cudaStreamSynchronize.
void runMemopSync(Ctx& c) {
  struct Variant {
    const char* path;
    int streamDev;
    uint64_t* target;
    const char* what;
  };
  const Variant variants[] = {
      {"memop/stream@gpu0", 0, c.small1 + 512, "stream on GPU0 writes GPU1 memory through peer access"},
      {"memop/stream@gpu1", 1, c.small1 + 520, "stream on GPU1 writes its own memory (the target's queue)"},
  };
  for (const Variant& v : variants) {
    int ok = 0;
    CKD(cuDeviceGetAttribute(&ok, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, v.streamDev));
    if (!ok) {
      note(c, std::string("memop_sync [") + v.path + "]: SKIPPED: GPU" + std::to_string(v.streamDev) +
                  " reports no 64-bit stream memory operations");
      continue;
    }
    c.rep->beginTable(std::string("memop_sync: cuStreamWriteValue64 (8 B, value from the command) + "
                                  "cudaStreamSynchronize per op; ") + v.what,
                      TableKind::Latency);
    clearDst(c, 1, v.target, 8);
    setDev(v.streamDev);
    cudaStream_t st = v.streamDev == 0 ? c.s0[0] : c.s1[0];
    const int ops = tether_bench::opsPerBatch(c.opts, 8);
    uint64_t value = 0x6d656d6f00000000ull;
    std::vector<double> samples;
    tether_bench::measure(c.opts.warmup, c.opts.batches, ops, [&](int k) {
      for (int i = 0; i < k; ++i) {
        CKD(cuStreamWriteValue64(reinterpret_cast<CUstream>(st), reinterpret_cast<CUdeviceptr>(v.target), ++value,
                                 CU_STREAM_WRITE_VALUE_DEFAULT));
        CK(cudaStreamSynchronize(st));
      }
      return true;
    }, &samples);
    uint64_t got = 0;
    CK(cudaMemcpy(&got, v.target, 8, cudaMemcpyDeviceToHost));
    if (got != value)
      die("data validation FAILED: memop_sync [%s]: GPU1 word is 0x%016" PRIx64 ", expected 0x%016" PRIx64, v.path,
          got, value);
    addRow(c, "memop_sync", v.path, "H->D", 8, static_cast<long>(ops) * c.opts.batches, samples, 0);
    c.summary.emplace_back(std::string("memop_sync ") + v.path, tether_bench::computeStats(samples).median);
  }
}

// Host side of the mailbox protocol (see mailboxServer).
void postTagged(uint64_t* mb, uint64_t seq, uint64_t value, uint32_t arg) {
  const uint64_t tag = seq & 0xffffu;
  const uint64_t w0 = (value << 32) | (static_cast<uint64_t>(arg & 0xffffu) << 16) | tag;
  const uint64_t w1 = (value & 0xffffffff00000000ull) | (static_cast<uint64_t>(arg >> 16) << 16) | tag;
  __atomic_store_n(mb + kMbTagged, w0, __ATOMIC_RELAXED);
  __atomic_store_n(mb + kMbTagged + 1, w1, __ATOMIC_RELEASE);
}

void postSeq(uint64_t* mb, uint64_t seq, uint64_t value, uint32_t arg) {
  __atomic_store_n(mb + kMbVal, value, __ATOMIC_RELAXED);
  __atomic_store_n(mb + kMbArg, static_cast<uint64_t>(arg), __ATOMIC_RELAXED);
  __atomic_store_n(mb + kMbSeq, seq, __ATOMIC_RELEASE);  // published last
}

[[noreturn]] void mailboxFail(Ctx& c, uint64_t seq, const char* why) {
  const uint64_t st = __atomic_load_n(c.mb + kMbStatus, __ATOMIC_ACQUIRE);
  // Best effort: ask a still-running server to stop (it expects the request after the last one it acked; both
  // request forms); exiting the process ends the kernel anyway.
  const uint64_t next = __atomic_load_n(c.mb + kMbAck, __ATOMIC_ACQUIRE) + 1;
  postTagged(c.mb, next, 0, kQuitArg);
  postSeq(c.mb, next, 0, kQuitArg);
  die("mailbox: %s for request %" PRIu64 " (ack word %" PRIu64 ", server status: %s, served %" PRIu64 ")", why, seq,
      __atomic_load_n(c.mb + kMbAck, __ATOMIC_ACQUIRE), statusName(st),
      __atomic_load_n(c.mb + kMbServed, __ATOMIC_ACQUIRE));
}

inline void waitAck(Ctx& c, uint64_t seq, double timeoutS) {
  unsigned spins = 0;
  double t0 = 0;
  while (__atomic_load_n(c.mb + kMbAck, __ATOMIC_ACQUIRE) != seq) {
    if ((++spins & 4095u) == 0) {
      const uint64_t st = __atomic_load_n(c.mb + kMbStatus, __ATOMIC_ACQUIRE);
      if (st != kStRunning && st != kStQuit) mailboxFail(c, seq, "the server stopped");
      const double t = tether_bench::nowSeconds();
      if (t0 == 0) {
        t0 = t;
      } else if (t - t0 > timeoutS) {
        char why[96];
        std::snprintf(why, sizeof(why), "no ack within %.0f s", timeoutS);
        mailboxFail(c, seq, why);
      }
    }
  }
}

void runMailbox(Ctx& c, int variant) {
  const bool store = variant != kVarNoStore;
  const char* op = store ? "mailbox_warp" : "mailbox_rtt";
  const char* path = variant == kVarFence     ? "warp/tagged+fence.sc.sys"
                     : variant == kVarRelease ? "warp/tagged+st.release.sys"
                     : variant == kVarAcqSeq  ? "warp/ld.acquire.seq+st.release.sys"
                                              : "warp/tagged, no store";
  std::string title;
  switch (variant) {
    case kVarFence:
      title = "mailbox_warp (a): resident warp on GPU0 polls a host-mapped tagged 16 B request (one ld.relaxed.sys."
              "v2 = one PCIe read), stores 8 B to GPU1 (peer pointer), __threadfence_system, st.relaxed.sys ack; "
              "host posts and spins on the ack (put + quiet)";
      break;
    case kVarRelease:
      title = "mailbox_warp (b): as (a) but the ack is st.release.sys without a separate fence";
      break;
    case kVarAcqSeq:
      title = "mailbox_warp (seq): textbook protocol: host writes value, offset, then seq (release); warp polls seq "
              "with ld.acquire.sys then reads the payload (2nd PCIe read), stores 8 B to GPU1, st.release.sys ack";
      break;
    default:
      title = "mailbox_rtt: the tagged mailbox round trip alone (no peer store; ack st.release.sys): the floor of "
              "the mailbox path";
      break;
  }
  c.rep->beginTable(title, TableKind::Latency);

  uint64_t* dst = store ? c.small1 : nullptr;  // kMailboxDstWords words on GPU1 (none for mailbox_rtt)
  if (store) {
    setDev(1);
    CK(cudaMemset(dst, 0, kMailboxDstWords * 8));
    CK(cudaDeviceSynchronize());
  }
  std::vector<uint64_t> shadow(kMailboxDstWords, 0);
  for (int w : {kMbTagged, kMbTagged + 1, kMbSeq, kMbVal, kMbArg, kMbAck, kMbStatus, kMbServed, kMbXor})
    __atomic_store_n(c.mb + w, uint64_t{0}, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);

  setDev(0);
  mailboxServer<<<1, 32, 0, c.s0[0]>>>(c.mbDev[0], dst, kMailboxDstWords, variant, kMaxIdlePolls,
                                       kMaxIdleNs);
  CK(cudaGetLastError());

  uint64_t seq = 0, xorAcc = 0;
  auto request = [&](double timeoutS) {
    ++seq;
    const uint64_t value = mix64(seq ^ 0x6d61696c626f78ull) ^ (static_cast<uint64_t>(variant) << 60);
    const uint32_t arg = static_cast<uint32_t>(seq % kMailboxDstWords);
    if (variant == kVarAcqSeq)
      postSeq(c.mb, seq, value, arg);
    else
      postTagged(c.mb, seq, value, arg);
    waitAck(c, seq, timeoutS);
    if (store) shadow[arg] = value;
    xorAcc ^= value;
  };
  request(30.0);  // handshake, untimed: the kernel has started (and its module is loaded)

  const int ops = tether_bench::opsPerBatch(c.opts, 8);
  std::vector<double> samples;
  tether_bench::measure(c.opts.warmup, c.opts.batches, ops, [&](int k) {
    for (int i = 0; i < k; ++i) request(kHostAckTimeoutS);
    return true;
  }, &samples);

  // Quit, then wait (bounded) for the kernel to end.
  ++seq;
  if (variant == kVarAcqSeq)
    postSeq(c.mb, seq, 0, kQuitArg);
  else
    postTagged(c.mb, seq, 0, kQuitArg);
  waitAck(c, seq, kHostAckTimeoutS);
  const double t0 = tether_bench::nowSeconds();
  cudaError_t q;
  while ((q = cudaStreamQuery(c.s0[0])) == cudaErrorNotReady) {
    if (tether_bench::nowSeconds() - t0 > 10.0) die("mailbox: the server kernel did not end within 10 s of quit");
  }
  CK(q);
  const uint64_t status = __atomic_load_n(c.mb + kMbStatus, __ATOMIC_ACQUIRE);
  const uint64_t served = __atomic_load_n(c.mb + kMbServed, __ATOMIC_RELAXED);
  const uint64_t devXor = __atomic_load_n(c.mb + kMbXor, __ATOMIC_RELAXED);
  if (status != kStQuit) die("mailbox [%s]: server ended with status '%s'", path, statusName(status));
  if (served != seq - 1 || devXor != xorAcc)
    die("data validation FAILED: %s [%s]: server saw %" PRIu64 " requests (xor 0x%016" PRIx64 "), host sent %" PRIu64
        " (xor 0x%016" PRIx64 ")", op, path, served, devXor, seq - 1, xorAcc);
  if (store) {
    std::vector<uint64_t> got(kMailboxDstWords);
    CK(cudaMemcpy(got.data(), dst, kMailboxDstWords * 8, cudaMemcpyDeviceToHost));
    for (uint32_t i = 0; i < kMailboxDstWords; ++i) {
      if (got[i] != shadow[i])
        die("data validation FAILED: %s [%s]: GPU1 word %u is 0x%016" PRIx64 ", expected 0x%016" PRIx64, op, path,
            i, got[i], shadow[i]);
    }
  }
  addRow(c, op, path, store ? "H->D" : "H->H", 8, static_cast<long>(ops) * c.opts.batches, samples, 0);
  c.summary.emplace_back(std::string(op) + " " + path + (store ? "" : " (no put: floor)"),
                         tether_bench::computeStats(samples).median);
}

// host_write_mapped: the target word is host-pinned memory mapped into the GPUs; a put is a store + sfence.
void runHostWriteMapped(Ctx& c) {
  c.rep->beginTable("host_write_mapped: host store (8 B) + sfence into host-pinned memory mapped into the GPUs "
                    "(cudaHostAllocMapped): the floor of a put to a HOST segment",
                    TableKind::Latency);
  uint64_t* word = c.mb + kMbHostWord;
  __atomic_store_n(word, uint64_t{0}, __ATOMIC_RELAXED);
  const int ops = tether_bench::opsPerBatch(c.opts, 8);
  uint64_t value = 0x686f737400000000ull;
  std::vector<double> samples;
  tether_bench::measure(c.opts.warmup, c.opts.batches, ops, [&](int k) {
    for (int i = 0; i < k; ++i) {
      __atomic_store_n(word, ++value, __ATOMIC_RELAXED);
      hostStoreFence();
    }
    return true;
  }, &samples);
  // Read back on a GPU through the mapping (GPU1 when there is one: the peer that would read the segment).
  const int dev = c.ngpu >= 2 ? 1 : 0;
  setDev(dev);
  readWordKernel<<<1, 1>>>(reinterpret_cast<const volatile uint64_t*>(c.mbDev[dev] + kMbHostWord), c.tmp[dev]);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  uint64_t got = 0;
  CK(cudaMemcpy(&got, c.tmp[dev], 8, cudaMemcpyDeviceToHost));
  if (got != value)
    die("data validation FAILED: host_write_mapped: GPU%d read 0x%016" PRIx64 ", expected 0x%016" PRIx64, dev, got,
        value);
  addRow(c, "host_write_mapped", "store+sfence", "H->H", 8, static_cast<long>(ops) * c.opts.batches, samples, 0);
  c.summary.emplace_back("host_write_mapped (host segment, reference)", tether_bench::computeStats(samples).median);
}

// cudaMemcpyPeer 8 B: the API call alone (as BASELINES measured it: the copy is asynchronous to the host for
// device memory), and call + cudaDeviceSynchronize (a real put + quiet).
void runMemcpyPeerLat(Ctx& c) {
  for (int withSync = 0; withSync < 2; ++withSync) {
    const char* path = withSync ? "api/call+cudaDeviceSynchronize" : "api/call";
    c.rep->beginTable(withSync ? "cudaMemcpyPeer_lat: cudaMemcpyPeer(GPU1 <- GPU0, 8 B) + cudaDeviceSynchronize "
                                 "(GPU0 current) per op (put + quiet)"
                               : "cudaMemcpyPeer_lat: cudaMemcpyPeer(GPU1 <- GPU0, 8 B) per op, back to back, one "
                                 "cudaDeviceSynchronize per batch (the call alone, as in BASELINES.md)",
                      TableKind::Latency);
    clearDst(c, 1, c.b1, 8);
    setDev(0);
    const int ops = tether_bench::opsPerBatch(c.opts, 8);
    std::vector<double> samples;
    tether_bench::measure(c.opts.warmup, c.opts.batches, ops, [&](int k) {
      for (int i = 0; i < k; ++i) {
        CK(cudaMemcpyPeer(c.b1, 1, c.a0, 0, 8));
        if (withSync) CK(cudaDeviceSynchronize());
      }
      if (!withSync) CK(cudaDeviceSynchronize());
      return true;
    }, &samples);
    syncDev(1);
    verify(c, 1, c.b1, 8, c.seedA, label("cudaMemcpyPeer_lat", path, 8));
    addRow(c, "cudaMemcpyPeer_lat", path, "D->D", 8, static_cast<long>(ops) * c.opts.batches, samples, 0);
    c.summary.emplace_back(std::string("cudaMemcpyPeer_lat ") + path +
                               (withSync ? "" : " (issue only, no completion per op)"),
                           tether_bench::computeStats(samples).median);
  }
}

// ---- bandwidth rows -------------------------------------------------------------------------------------------------

// Bandwidth sizes: 1M, 4M, 16M, ... (factors of 4, from max(--min-size, 1M)) up to --max-size, plus --max-size
// itself; a factor of 4 (not 2) keeps the default run, every sample >= 20 ms, within about a minute.
std::vector<size_t> bandwidthSizes(const Ctx& c) {
  const size_t lo = std::max(c.opts.minSize, size_t{1} << 20);
  if (lo > c.maxSize) return {c.maxSize};  // --quick or a small --max-size: one size, the largest
  std::vector<size_t> sizes;
  for (size_t s = lo; s <= c.maxSize; s *= 4) {
    sizes.push_back(s);
    if (s > c.maxSize / 4) break;
  }
  if (sizes.back() != c.maxSize) sizes.push_back(c.maxSize);
  return sizes;
}

struct BwSpec {
  std::string op, path, kinds, title;
  int factor = 1;                          // bytes moved per op = factor * S (2 for bidirectional)
  std::function<void(size_t)> prepare;     // clear destinations for size S
  std::function<void(size_t)> issue;       // issue one op of size S
  std::function<void()> complete;          // wait for everything issued
  std::function<void(size_t)> check;       // validate after the timed batches
};

void runBandwidth(Ctx& c, const BwSpec& b) {
  c.rep->beginTable(b.title + "; Latency = per-op time in a batch of R back-to-back ops closed by one sync, R chosen "
                              "so a batch takes >= " + std::to_string(static_cast<int>(c.sampleMs)) + " ms" +
                        (b.factor > 1 ? "; Size = bytes moved per op in both directions together" : ""),
                    TableKind::Bandwidth);
  for (size_t S : bandwidthSizes(c)) {
    b.prepare(S);
    auto batch = [&](int n) {
      for (int i = 0; i < n; ++i) b.issue(S);
      b.complete();
      return true;
    };
    // Calibrate R: batches of 1, 2, 4, ... until one takes >= 1/8 of the target, then scale to the target.
    const double target = c.sampleMs * 1e-3;
    long k = 1;
    double dt = 0;
    for (;;) {
      const double t0 = tether_bench::nowSeconds();
      batch(static_cast<int>(k));
      dt = std::max(1e-9, tether_bench::nowSeconds() - t0);
      if (dt >= target / 8 || k >= (1L << 20)) break;
      k *= 2;
    }
    const long r = std::min<long>(1L << 22, std::max<long>(1, static_cast<long>(std::ceil(1.05 * target * k / dt))));
    std::vector<double> samples;
    tether_bench::measure(c.opts.warmup, c.opts.batches, static_cast<int>(r), batch, &samples);
    b.check(S);
    const double moved = static_cast<double>(b.factor) * static_cast<double>(S);
    addRow(c, b.op, b.path, b.kinds, static_cast<size_t>(b.factor) * S, r * c.opts.batches, samples, moved);
  }
}

void runCePeerUni(Ctx& c, int nStreams) {
  BwSpec b;
  b.op = "ce_peer_uni";
  b.path = "ce/" + std::to_string(nStreams) + (nStreams == 1 ? " stream@gpu0" : " streams@gpu0");
  b.kinds = "D->D";
  b.title = "ce_peer_uni: cudaMemcpyAsync GPU0 -> GPU1 (peer, D->D), " +
            (nStreams == 1 ? std::string("one stream on GPU0")
                           : "each op split in " + std::to_string(nStreams) + " chunks on " +
                                 std::to_string(nStreams) + " streams on GPU0");
  b.prepare = [&c](size_t S) { clearDst(c, 1, c.b1, S); };
  b.issue = [&c, nStreams](size_t S) {
    setDev(0);
    for (int j = 0; j < nStreams; ++j) {
      const size_t lo = S * static_cast<size_t>(j) / static_cast<size_t>(nStreams);
      const size_t hi = S * static_cast<size_t>(j + 1) / static_cast<size_t>(nStreams);
      if (hi > lo) CK(cudaMemcpyAsync(c.b1 + lo, c.a0 + lo, hi - lo, cudaMemcpyDeviceToDevice, c.s0[j]));
    }
  };
  b.complete = [&c, nStreams]() {
    for (int j = 0; j < nStreams; ++j) CK(cudaStreamSynchronize(c.s0[j]));
  };
  b.check = [&c, lbl = b.op + " [" + b.path + "]"](size_t S) {
    verify(c, 1, c.b1, S, c.seedA, lbl + " " + std::to_string(S) + " B");
  };
  runBandwidth(c, b);
}

void runCePeerBidir(Ctx& c) {
  BwSpec b;
  b.op = "ce_peer_bidir";
  b.path = "ce/stream@gpu0 + stream@gpu1";
  b.kinds = "D->D";
  b.factor = 2;
  b.title = "ce_peer_bidir: GPU0 -> GPU1 on a GPU0 stream and GPU1 -> GPU0 on a GPU1 stream at once "
            "(cudaMemcpyAsync D->D, S each way); Bandwidth = total of both directions";
  b.prepare = [&c](size_t S) {
    clearDst(c, 1, c.b1, S);
    clearDst(c, 0, c.d0, S);
  };
  b.issue = [&c](size_t S) {
    setDev(0);
    CK(cudaMemcpyAsync(c.b1, c.a0, S, cudaMemcpyDeviceToDevice, c.s0[0]));
    setDev(1);
    CK(cudaMemcpyAsync(c.d0, c.c1, S, cudaMemcpyDeviceToDevice, c.s1[0]));
  };
  b.complete = [&c]() {
    CK(cudaStreamSynchronize(c.s0[0]));
    CK(cudaStreamSynchronize(c.s1[0]));
  };
  b.check = [&c](size_t S) {
    verify(c, 1, c.b1, S, c.seedA, label("ce_peer_bidir", "0->1", S));
    verify(c, 0, c.d0, S, c.seedC, label("ce_peer_bidir", "1->0", S));
  };
  runBandwidth(c, b);
}

void runCeHost(Ctx& c, const std::string& op) {
  BwSpec b;
  b.op = op;
  b.path = "ce/stream@gpu0";
  const std::string lbl = op + " [" + b.path + "]";
  if (op == "ce_h2d_pinned") {
    b.kinds = "H->D";
    b.title = "ce_h2d_pinned: cudaMemcpyAsync pinned host -> GPU0, one stream on GPU0";
    b.prepare = [&c](size_t S) { clearDst(c, 0, c.d0, S); };
    b.issue = [&c](size_t S) { CK(cudaMemcpyAsync(c.d0, c.hs, S, cudaMemcpyHostToDevice, c.s0[0])); };
    b.check = [&c, lbl](size_t S) { verify(c, 0, c.d0, S, c.seedH, lbl + " " + std::to_string(S) + " B"); };
  } else if (op == "ce_d2h_pinned") {
    b.kinds = "D->H";
    b.title = "ce_d2h_pinned: cudaMemcpyAsync GPU0 -> pinned host, one stream on GPU0";
    b.prepare = [&c](size_t S) { clearDst(c, -1, c.hd, S); };
    b.issue = [&c](size_t S) { CK(cudaMemcpyAsync(c.hd, c.a0, S, cudaMemcpyDeviceToHost, c.s0[0])); };
    b.check = [&c, lbl](size_t S) { verify(c, 0, c.hd, S, c.seedA, lbl + " " + std::to_string(S) + " B"); };
  } else {
    if (c.pg == nullptr) {
      c.pg = static_cast<uint8_t*>(std::aligned_alloc(4096, c.cap));
      if (c.pg == nullptr) die("cannot allocate %zu bytes of pageable memory", c.cap);
      std::memcpy(c.pg, c.hs, c.cap);  // same pattern as the pinned source (and touches every page)
    }
    b.kinds = "H->D";
    b.title = "ce_h2d_pageable: cudaMemcpyAsync pageable host (aligned_alloc) -> GPU0, one stream on GPU0";
    b.prepare = [&c](size_t S) { clearDst(c, 0, c.d0, S); };
    b.issue = [&c](size_t S) { CK(cudaMemcpyAsync(c.d0, c.pg, S, cudaMemcpyHostToDevice, c.s0[0])); };
    b.check = [&c, lbl](size_t S) { verify(c, 0, c.d0, S, c.seedH, lbl + " " + std::to_string(S) + " B"); };
  }
  b.prepare = [prep = b.prepare](size_t S) {
    prep(S);
    setDev(0);
  };
  b.complete = [&c]() { CK(cudaStreamSynchronize(c.s0[0])); };
  runBandwidth(c, b);
}

void runMemcpyPeerBw(Ctx& c) {
  BwSpec b;
  b.op = "cudaMemcpyPeer";
  b.path = "api/sync";
  b.kinds = "D->D";
  b.title = "cudaMemcpyPeer: the synchronous-API peer copy GPU0 -> GPU1 (GPU0 current), R calls then "
            "cudaDeviceSynchronize on both GPUs";
  b.prepare = [&c](size_t S) {
    clearDst(c, 1, c.b1, S);
    setDev(0);
  };
  b.issue = [&c](size_t S) { CK(cudaMemcpyPeer(c.b1, 1, c.a0, 0, S)); };
  b.complete = [&c]() {
    CK(cudaDeviceSynchronize());
    setDev(1);
    CK(cudaDeviceSynchronize());
    setDev(0);
  };
  b.check = [&c](size_t S) { verify(c, 1, c.b1, S, c.seedA, label("cudaMemcpyPeer", "api/sync", S)); };
  runBandwidth(c, b);
}

// ---- set-up --------------------------------------------------------------------------------------------------------

const char* const kOps[] = {"ce_sync",        "memop_sync",     "mailbox_warp",   "mailbox_rtt",
                            "host_write_mapped", "cudaMemcpyPeer_lat", "ce_peer_uni", "ce_peer_bidir",
                            "ce_h2d_pinned",  "ce_d2h_pinned",  "ce_h2d_pageable", "cudaMemcpyPeer"};

std::string describeGpus(Ctx& c) {
  std::string s;
  char buf[512];
  int drv = 0, rt = 0;
  CK(cudaDriverGetVersion(&drv));
  CK(cudaRuntimeGetVersion(&rt));
  std::snprintf(buf, sizeof(buf), "CUDA driver %d, runtime %d; GPUs visible: %d (using %s)\n", drv, rt, c.ngpu,
                c.ngpu >= 2 ? "0 and 1; GPU0 is the host's GPU, GPU1 the peer" : "0 only");
  s += buf;
  for (int d = 0; d < std::min(c.ngpu, 2); ++d) {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, d));
    char bus[32] = {0};
    CK(cudaDeviceGetPCIBusId(bus, sizeof(bus), d));
    int memops64 = 0;
    CKD(cuDeviceGetAttribute(&memops64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, d));
    int hostAtomics = 0;
    CK(cudaDeviceGetAttribute(&hostAtomics, cudaDevAttrHostNativeAtomicSupported, d));
    std::snprintf(buf, sizeof(buf),
                  "GPU%d: %s, PCI %s, sm_%d%d, %d SMs, %.1f GiB; 64-bit stream memops %s, map host memory %s, "
                  "native atomics to host memory %s\n",
                  d, p.name, bus, p.major, p.minor, p.multiProcessorCount,
                  static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), memops64 ? "yes" : "no",
                  p.canMapHostMemory ? "yes" : "no", hostAtomics ? "yes" : "no");
    s += buf;
  }
  if (c.ngpu >= 2) {
    for (int a = 0; a < 2; ++a) {
      const int b = 1 - a;
      int can = 0, atom = 0, rank = -1;
      CK(cudaDeviceCanAccessPeer(&can, a, b));
      CK(cudaDeviceGetP2PAttribute(&atom, cudaDevP2PAttrNativeAtomicSupported, a, b));
      CK(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, a, b));
      std::snprintf(buf, sizeof(buf), "peer GPU%d -> GPU%d: access %s, native atomics %s, performance rank %d\n", a,
                    b, can ? "yes" : "no", atom ? "yes" : "no", rank);
      s += buf;
    }
  }
  return s;
}

void enablePeer(Ctx& c) {
  int can01 = 0, can10 = 0;
  CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
  CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
  if (!can01 || !can10) return;
  for (int d = 0; d < 2; ++d) {
    setDev(d);
    cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
    } else {
      CK(e);
    }
  }
  c.peer = true;
}

void* devAlloc(int dev, size_t bytes, const char* what) {
  setDev(dev);
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess)
    die("cudaMalloc of %zu bytes on GPU%d (%s) failed: %s; lower --max-size", bytes, dev, what,
        cudaGetErrorString(e));
  return p;
}

void* hostAlloc(size_t bytes, const char* what) {
  void* p = nullptr;
  cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess)
    die("cudaHostAlloc of %zu bytes (%s) failed: %s; lower --max-size", bytes, what, cudaGetErrorString(e));
  return p;
}

void setUp(Ctx& c) {
  c.cap = roundUp8(c.maxSize) + kCapacitySlack;
  for (int d = 0; d < std::min(c.ngpu, 2); ++d) {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, d));
    c.sms[d] = p.multiProcessorCount;
    setDev(d);
    cudaStream_t* s = d == 0 ? c.s0 : c.s1;
    for (int j = 0; j < 4; ++j) CK(cudaStreamCreateWithFlags(&s[j], cudaStreamNonBlocking));
    c.res[d] = static_cast<unsigned long long*>(devAlloc(d, 2 * sizeof(unsigned long long), "check result"));
    c.tmp[d] = static_cast<uint64_t*>(devAlloc(d, 64, "scratch word"));
  }
  c.seedA = mix64(0xa0);
  c.seedC = mix64(0xc1);
  c.seedH = mix64(0x4853);
  c.a0 = static_cast<uint8_t*>(devAlloc(0, c.cap, "GPU0 source"));
  c.d0 = static_cast<uint8_t*>(devAlloc(0, c.cap, "GPU0 destination"));
  c.hs = static_cast<uint8_t*>(hostAlloc(c.cap, "pinned source"));
  c.hd = static_cast<uint8_t*>(hostAlloc(c.cap, "pinned destination"));
  c.mb = static_cast<uint64_t*>(hostAlloc(kMailboxBytes, "mailbox"));
  std::memset(c.mb, 0, kMailboxBytes);
  std::memset(c.hd, 0, c.cap);
  for (int d = 0; d < std::min(c.ngpu, 2); ++d) {
    setDev(d);
    void* p = nullptr;
    CK(cudaHostGetDevicePointer(&p, c.mb, 0));
    c.mbDev[d] = static_cast<uint64_t*>(p);
  }
  fillPattern(c, 0, c.a0, c.cap, c.seedA);
  void* hsDev = nullptr;
  setDev(0);
  CK(cudaHostGetDevicePointer(&hsDev, c.hs, 0));
  fillPattern(c, 0, hsDev, c.cap, c.seedH);  // GPU writes the pinned source through the mapping (fast)
  if (c.ngpu >= 2) {
    c.b1 = static_cast<uint8_t*>(devAlloc(1, c.cap, "GPU1 destination"));
    c.c1 = static_cast<uint8_t*>(devAlloc(1, c.cap, "GPU1 source"));
    c.small1 = static_cast<uint64_t*>(devAlloc(1, 65536, "GPU1 small words"));
    fillPattern(c, 1, c.c1, c.cap, c.seedC);
    setDev(1);
    CK(cudaMemset(c.small1, 0, 65536));
    CK(cudaDeviceSynchronize());
  }
  setDev(0);
}

void tearDown(Ctx& c) {
  for (int d = 0; d < std::min(c.ngpu, 2); ++d) syncDev(d);
  std::free(c.pg);
  CK(cudaFreeHost(c.mb));
  CK(cudaFreeHost(c.hd));
  CK(cudaFreeHost(c.hs));
  CK(cudaFree(c.a0));
  CK(cudaFree(c.d0));
  if (c.ngpu >= 2) {
    CK(cudaFree(c.b1));
    CK(cudaFree(c.c1));
    CK(cudaFree(c.small1));
  }
  for (int d = 0; d < std::min(c.ngpu, 2); ++d) {
    CK(cudaFree(c.res[d]));
    CK(cudaFree(c.tmp[d]));
    for (int j = 0; j < 4; ++j) CK(cudaStreamDestroy(d == 0 ? c.s0[j] : c.s1[j]));
  }
}

const char* const kExtraUsage =
    "single process (no tetherrun): GPU0 is the host's GPU, GPU1 the peer; 1 GPU: local rows only; 0: SKIP\n"
    "  --sample-ms N    bandwidth rows: minimum time per sample in ms (default 20; --quick: 2)\n"
    "default --max-size here is 1G (--quick: 64K); ce_sync: 8 B..max; bandwidth rows: 1M, 4M, ... (x4), max\n"
    "rows (--ops): ce_sync memop_sync mailbox_warp mailbox_rtt host_write_mapped cudaMemcpyPeer_lat\n"
    "              ce_peer_uni ce_peer_bidir ce_h2d_pinned ce_d2h_pinned ce_h2d_pageable cudaMemcpyPeer\n"
    "memory: 2 buffers of max-size on each GPU, 2 pinned host buffers (+1 pageable for ce_h2d_pageable)\n";

}  // namespace

int main(int argc, char** argv) {
  const double tStart = tether_bench::nowSeconds();
  // Our own option (--sample-ms) is taken out before the harness parses the rest.
  std::vector<char*> rest;
  double sampleMs = -1;
  bool gotMax = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (i > 0 && (a == "--sample-ms" || a.rfind("--sample-ms=", 0) == 0)) {
      std::string v;
      if (a == "--sample-ms") {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "host_paths: --sample-ms needs a value\n");
          return 2;
        }
        v = argv[++i];
      } else {
        v = a.substr(std::strlen("--sample-ms="));
      }
      char* end = nullptr;
      sampleMs = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(sampleMs > 0)) {
        std::fprintf(stderr, "host_paths: --sample-ms '%s': not a positive number\n", v.c_str());
        return 2;
      }
      continue;
    }
    if (a == "--max-size" || a.rfind("--max-size=", 0) == 0) gotMax = true;
    rest.push_back(argv[i]);
  }
  Options opts;
  std::string error;
  if (!tether_bench::parseOptions(static_cast<int>(rest.size()), rest.data(), &opts, &error)) {
    std::fprintf(stderr, "host_paths: %s\n", error.c_str());
    return 2;
  }
  opts.argv.assign(argv, argv + argc);
  if (opts.help) {
    std::printf("%s", tether_bench::usage("tether_bench_host_paths", kExtraUsage).c_str());
    return 0;
  }
  for (const std::string& op : opts.ops) {
    bool known = false;
    for (const char* k : kOps) known = known || op == k;
    if (!known) {
      std::fprintf(stderr, "host_paths: unknown row '%s' in --ops (see --help)\n", op.c_str());
      return 2;
    }
  }
  if (!gotMax && !opts.quick) opts.maxSize = size_t{1} << 30;
  if (opts.minSize > opts.maxSize) {
    std::fprintf(stderr, "host_paths: --min-size is larger than --max-size\n");
    return 2;
  }

  Ctx c;
  c.opts = opts;
  c.maxSize = opts.maxSize;
  c.sampleMs = sampleMs > 0 ? sampleMs : (opts.quick ? 2.0 : 20.0);
  {
    const cudaError_t e = cudaGetDeviceCount(&c.ngpu);
    if (e != cudaSuccess || c.ngpu == 0) {
      std::printf("SKIP: host_paths needs a CUDA GPU (%s)\n",
                  e != cudaSuccess ? cudaGetErrorString(e) : "no device visible");
      return 0;
    }
  }
  CKD(cuInit(0));
  if (c.ngpu >= 2) enablePeer(c);

  Reporter rep(tether_bench::collectRunInfo("host_paths", opts, 1), opts, true);
  c.rep = &rep;
  if (!rep.open(&error)) die("%s", error.c_str());
  std::string notes = describeGpus(c);
  notes += "model host: one host thread issues and times every op; every row validates the data it moved once per "
           "size, outside the timed region\n";
  notes += "latency rows: ops back to back, completion (sync / ack) inside every op; bandwidth rows: sizes 1M, 4M, "
           "16M, ... (x4) up to max, samples >= " + std::to_string(static_cast<int>(c.sampleMs)) + " ms\n";
  notes += "mailbox variant (c), the mailbox in GPU0 memory written by host stores, is not measured: the CPU cannot "
           "map GPU memory for stores without GDRCopy (BAR1 mapping)\n";
  if (c.ngpu < 2)
    notes += "ONE GPU: peer rows (ce_sync, memop_sync, mailbox_warp, cudaMemcpyPeer*, ce_peer_*) skipped; local "
             "rows only";
  else if (!c.peer)
    notes += "NO PEER ACCESS between GPU0 and GPU1: memop_sync and mailbox_warp skipped; peer copies are staged";
  rep.printHeader(notes);

  setUp(c);
  const bool two = c.ngpu >= 2;
  using tether_bench::wantsOp;
  // Latency rows (8 B put + quiet mechanisms first, then the size sweep).
  if (two && c.peer && wantsOp(opts, "mailbox_warp")) {
    runMailbox(c, kVarFence);
    runMailbox(c, kVarRelease);
    runMailbox(c, kVarAcqSeq);
  }
  if (wantsOp(opts, "mailbox_rtt")) runMailbox(c, kVarNoStore);
  if (two && c.peer && wantsOp(opts, "memop_sync")) runMemopSync(c);
  if (two && wantsOp(opts, "cudaMemcpyPeer_lat")) runMemcpyPeerLat(c);
  if (wantsOp(opts, "host_write_mapped")) runHostWriteMapped(c);
  if (two && wantsOp(opts, "ce_sync")) runCeSync(c);
  // Bandwidth rows.
  if (two && wantsOp(opts, "ce_peer_uni")) {
    runCePeerUni(c, 1);
    runCePeerUni(c, 2);
    runCePeerUni(c, 4);
  }
  if (two && wantsOp(opts, "ce_peer_bidir")) runCePeerBidir(c);
  if (two && wantsOp(opts, "cudaMemcpyPeer")) runMemcpyPeerBw(c);
  if (wantsOp(opts, "ce_h2d_pinned")) runCeHost(c, "ce_h2d_pinned");
  if (wantsOp(opts, "ce_d2h_pinned")) runCeHost(c, "ce_d2h_pinned");
  if (wantsOp(opts, "ce_h2d_pageable")) runCeHost(c, "ce_h2d_pageable");

  FILE* f = rep.tableStream();
  if (!c.summary.empty()) {
    std::fprintf(f, "\n# summary: 8 B host put + completion to GPU1 memory unless noted, median per op (us)\n");
    for (const auto& s : c.summary) std::fprintf(f, "#   %-72s %8.3f\n", s.first.c_str(), s.second);
  }
  std::fprintf(f, "\n# done in %.1f s; all data validated\n", tether_bench::nowSeconds() - tStart);
  rep.flush();
  tearDown(c);
  return 0;
}
