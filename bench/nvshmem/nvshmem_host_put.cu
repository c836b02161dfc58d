// tether_bench_nvshmem: NVSHMEM's host-initiated RMA between two PEs, one GPU each — the peer rows of issue #4,
// printed through tether's bench harness so they line up with tether_bench_put_get rows (JSON "path":"nvshmem").
//
//   tetherrun -n 2 tether_bench_nvshmem [--max-size 1G] [--json out.jsonl] [--ops put,get] [--timeout 300] ...
//
// tether is used for one thing only: handing NVSHMEM's unique id from PE 0 to every PE (bootstrap below). Every
// measured call is an NVSHMEM host call (nvshmem_putmem, nvshmem_putmem_nbi, nvshmem_getmem, nvshmem_quiet).
//
// Bootstrap: tether_init; cudaSetDevice(tether_local_pe % device count) (tether binds the same GPU by default);
// PE 0 calls nvshmemx_get_uniqueid and tether_puts the id into a HOST symmetric buffer of every PE; tether_barrier_all;
// every PE calls nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID) with rank = tether_my_pe, n = tether_n_pes.
//
// PE 0 issues and times; PE 1 is the target (in put_bidir both send). PEs beyond 1, if any, only join barriers and
// votes. Only PE 0 prints results; any PE prints its own errors and exits non-zero (tetherrun then ends the job).
// Data is validated once per row and size after the timed batches (read back with cudaMemcpy on the receiving PE and
// compared with the sender's pattern); every PE votes and one wrong byte fails the run.
//
// Bounded waits: this program has no spin loops of its own; NVSHMEM's waits (init, barriers, quiet) are bounded by a
// watchdog thread: when a PE makes no progress for --timeout seconds (default 300) it names the step and exits 3.
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cuda_runtime.h>
#include <tether/tether.h>

#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "nvshmem_boot.h"

namespace {

using tether_bench::Options;
using tether_bench::Reporter;
using tether_bench::TableKind;

const char* const kOps[] = {"put", "put_nbi", "put_window", "get", "put_bidir"};
constexpr const char* kPath = "nvshmem";
constexpr size_t kMetaBytes = 128;  // per-PE GPU description (PCI bus id, name) exchanged for the header

int gPe = -1;  // this PE (for messages before Bench exists)

[[noreturn]] void die(const char* fmt, ...) {
  std::fprintf(stderr, "nvshmem_bench[PE %d]: ", gPe);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::fflush(nullptr);
  // _Exit, not exit: NVSHMEM's and CUDA's teardown could wait on the peer that is already gone.
  std::_Exit(1);
}

#define CUDA_OK(call)                                                                                          \
  do {                                                                                                         \
    cudaError_t e_ = (call);                                                                                   \
    if (e_ != cudaSuccess)                                                                                     \
      die("%s failed: %s (%s) at %s:%d", #call, cudaGetErrorName(e_), cudaGetErrorString(e_), __FILE__, __LINE__); \
  } while (0)

#define TETHER_OK(call)                                                                                  \
  do {                                                                                                   \
    tether_status_t st_ = (call);                                                                        \
    if (st_ != TETHER_SUCCESS) die("%s failed: %s: %s", #call, tether_status_string(st_), tether_last_error()); \
  } while (0)

// ---- watchdog ----------------------------------------------------------------------------------------------------

// Exits the process (status 3) when beat() has not been called for limitS seconds; names the last step.
class Watchdog {
 public:
  explicit Watchdog(double limitS) : limitS_(limitS), last_(tether_bench::nowSeconds()), thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void beat(const std::string& step) {
    std::lock_guard<std::mutex> g(m_);
    step_ = step;
    last_ = tether_bench::nowSeconds();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lk(m_);
    while (!stop_) {
      cv_.wait_for(lk, std::chrono::milliseconds(200));
      if (stop_) break;
      const double idle = tether_bench::nowSeconds() - last_;
      if (idle > limitS_) {
        std::fprintf(stderr,
                     "nvshmem_bench[PE %d]: no progress for %.0f s during '%s' (--timeout %g): a peer PE may have "
                     "exited or NVSHMEM is stuck; exiting\n",
                     gPe, idle, step_.c_str(), limitS_);
        std::fflush(nullptr);
        std::_Exit(3);
      }
    }
  }

  double limitS_;
  std::mutex m_;
  std::condition_variable cv_;
  std::string step_ = "start-up";
  double last_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members above are initialised
};

// ---- state -------------------------------------------------------------------------------------------------------

struct Bench {
  tether_t w = nullptr;
  int me = 0;
  int npes = 0;
  Options opts;
  Reporter* rep = nullptr;
  Watchdog* dog = nullptr;
  uint8_t* dst = nullptr;    // NVSHMEM symmetric (GPU), opts.maxSize: where puts land; D->D get destination on PE 0
  uint8_t* src = nullptr;    // NVSHMEM symmetric (GPU), opts.maxSize: D source of puts; get source on PE 1
  int64_t* votes = nullptr;  // NVSHMEM symmetric (GPU), npes entries: validation votes
  uint8_t* host = nullptr;   // pinned host, opts.maxSize, registered with NVSHMEM: H source of puts, get destination
  uint8_t* stage = nullptr;  // pinned host, opts.maxSize: pattern staging and read-back (never given to NVSHMEM)
  bool hostRegistered = false;  // nvshmemx_buffer_register(host) succeeded on this PE (agreed by all PEs)
  int64_t round = 0;         // validation round (same on every PE)
};

enum class Mem { Device, Host };

const char* memLetter(Mem m) { return m == Mem::Device ? "D" : "H"; }

// ---- data patterns -----------------------------------------------------------------------------------------------

uint64_t scramble(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One seed per row, kinds and sender; the pattern is position-dependent, so a prefix of it checks any size.
uint64_t rowSeed(const std::string& op, const std::string& kinds, int sender) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over "op kinds"
  for (char c : op + " " + kinds) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return scramble(h + static_cast<uint64_t>(sender) * 0x1000193ull);
}

uint64_t patternWord(uint64_t seed, size_t k) {
  return scramble(seed ^ (static_cast<uint64_t>(k) * 0xd6e8feb86659fd93ull));
}

void writePattern(uint8_t* p, size_t n, uint64_t seed) {
  const size_t words = n / 8;
  for (size_t k = 0; k < words; ++k) {
    const uint64_t v = patternWord(seed, k);
    std::memcpy(p + 8 * k, &v, 8);
  }
  if (n % 8 != 0) {
    const uint64_t v = patternWord(seed, words);
    std::memcpy(p + 8 * words, &v, n % 8);
  }
}

// First byte of p[0..n) that differs from the pattern, or n when all match.
size_t firstMismatch(const uint8_t* p, size_t n, uint64_t seed) {
  for (size_t off = 0; off < n; off += 8) {
    const uint64_t v = patternWord(seed, off / 8);
    const size_t len = n - off < 8 ? n - off : 8;
    if (std::memcmp(p + off, &v, len) != 0) {
      const uint8_t* vb = reinterpret_cast<const uint8_t*>(&v);
      size_t j = 0;
      while (j < len && p[off + j] == vb[j]) ++j;
      return off + j;
    }
  }
  return n;
}

// ---- buffers -----------------------------------------------------------------------------------------------------

// Writes the pattern into p[0..n) (host memory directly; GPU memory through the pinned stage).
void fillBuffer(Bench& b, uint8_t* p, Mem mem, size_t n, uint64_t seed) {
  if (mem == Mem::Host) {
    writePattern(p, n, seed);
    return;
  }
  writePattern(b.stage, n, seed);
  CUDA_OK(cudaMemcpy(p, b.stage, n, cudaMemcpyHostToDevice));
}

void clearBuffer(uint8_t* p, Mem mem, size_t n) {
  if (mem == Mem::Host) {
    std::memset(p, 0, n);
    return;
  }
  CUDA_OK(cudaMemset(p, 0, n));
  CUDA_OK(cudaDeviceSynchronize());
}

// Reads p[0..n) back (GPU memory: cudaMemcpy into the stage) and compares it with the pattern.
bool checkBuffer(Bench& b, const uint8_t* p, Mem mem, size_t n, uint64_t seed, const std::string& what) {
  const uint8_t* view = p;
  if (mem == Mem::Device) {
    CUDA_OK(cudaMemcpy(b.stage, p, n, cudaMemcpyDeviceToHost));
    view = b.stage;
  }
  const size_t bad = firstMismatch(view, n, seed);
  if (bad == n) return true;
  std::fprintf(stderr, "nvshmem_bench[PE %d]: wrong data after %s: byte %zu of %zu differs (got 0x%02x)\n", b.me,
               what.c_str(), bad, n, view[bad]);
  return false;
}

// ---- collective helpers ------------------------------------------------------------------------------------------

void barrier(Bench& b, const std::string& step) {
  b.dog->beat(step);
  nvshmem_barrier_all();
}

// Every PE votes for `what`; returns only when all voted ok, else every PE exits 1 (PE 0 names the PEs that saw
// wrong data; those PEs have printed the details).
void agree(Bench& b, bool localOk, const std::string& what) {
  ++b.round;
  const int64_t vote = localOk ? b.round : -b.round;
  for (int pe = 0; pe < b.npes; ++pe) nvshmem_int64_p(&b.votes[b.me], vote, pe);
  barrier(b, "validation vote for " + what);  // barrier_all completes the p's first
  std::vector<int64_t> seen(static_cast<size_t>(b.npes));
  CUDA_OK(cudaMemcpy(seen.data(), b.votes, sizeof(int64_t) * seen.size(), cudaMemcpyDeviceToHost));
  bool allOk = true;
  for (int pe = 0; pe < b.npes; ++pe) {
    if (seen[static_cast<size_t>(pe)] == b.round) continue;
    allOk = false;
    if (b.me == 0)
      std::fprintf(stderr, "nvshmem_bench: data validation FAILED for %s on PE %d (vote %" PRId64 ", round %" PRId64
                   ")\n", what.c_str(), pe, seen[static_cast<size_t>(pe)], b.round);
  }
  if (allOk) return;
  std::fflush(nullptr);
  std::_Exit(1);
}

// Surfaces an asynchronous CUDA error (outside every timed region).
void syncAndCheck(const std::string& what) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess) die("CUDA error after %s: %s (%s)", what.c_str(), cudaGetErrorName(e), cudaGetErrorString(e));
}

std::string label(const std::string& op, const std::string& kinds, size_t bytes) {
  return op + " " + kinds + " " + std::to_string(bytes) + " B";
}

void report(Bench& b, const std::string& op, const std::string& kinds, size_t bytes, long iters,
            const std::vector<double>& samples, bool bandwidth) {
  if (b.me == 0) b.rep->addRow(tether_bench::makeRow(op, kPath, kinds, bytes, iters, samples, bandwidth));
}

// Window actually used at `ops` operations per batch, and the operations per batch it yields (a multiple of it).
void windowing(const Options& opts, int ops, int* window, int* windows) {
  *window = ops < opts.window ? ops : opts.window;
  *windows = ops / *window;  // >= 1
}

// ---- one-way rows ------------------------------------------------------------------------------------------------

// One table: the sender fills its buffer `from` once per row; for each size the receiver clears `to`, PE 0 times
// the batches (body(S, k) runs k operations and their completion), the receiver checks `to`, all PEs vote.
struct OneWay {
  std::string op, kinds, title;
  TableKind table = TableKind::Latency;
  bool windowed = false;  // ops per batch rounded down to whole windows
  int sender = 0;
  uint8_t* from = nullptr;
  Mem fromMem = Mem::Device;
  int receiver = 1;
  uint8_t* to = nullptr;
  Mem toMem = Mem::Device;
  std::function<void(size_t S, int k)> body;
};

void runOneWay(Bench& b, const OneWay& r) {
  if (b.me == 0) b.rep->beginTable(r.title, r.table);
  const uint64_t seed = rowSeed(r.op, r.kinds, r.sender);
  if (b.me == r.sender) {
    b.dog->beat("filling the source of " + r.op + " " + r.kinds);
    fillBuffer(b, r.from, r.fromMem, b.opts.maxSize, seed);
  }
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    int ops = tether_bench::opsPerBatch(b.opts, S);
    if (r.windowed) {
      int window = 0, windows = 0;
      windowing(b.opts, ops, &window, &windows);
      ops = window * windows;
    }
    const std::string what = label(r.op, r.kinds, S);
    if (b.me == r.receiver) clearBuffer(r.to, r.toMem, S);
    barrier(b, "set-up of " + what);
    std::vector<double> samples;
    if (b.me == 0) {
      b.dog->beat("timed batches of " + what);
      tether_bench::measure(b.opts.warmup, b.opts.batches, ops, [&](int k) {
        r.body(S, k);
        return true;
      }, &samples);
      syncAndCheck(what);
    }
    barrier(b, "end of " + what);
    bool ok = true;
    if (b.me == r.receiver) {
      b.dog->beat("validating " + what);
      ok = checkBuffer(b, r.to, r.toMem, S, seed, what);
    }
    agree(b, ok, what);
    report(b, r.op, r.kinds, S, static_cast<long>(ops) * b.opts.batches, samples, r.table == TableKind::Bandwidth);
  }
}

uint8_t* localBuf(Bench& b, Mem m) { return m == Mem::Device ? b.src : b.host; }

// put: nvshmem_putmem + nvshmem_quiet per operation (tether_put's guarantee: complete at the target on return).
void runPut(Bench& b, Mem local) {
  OneWay r;
  r.op = "put";
  r.kinds = std::string(memLetter(local)) + "->D";
  r.title = "put: nvshmem_putmem of S bytes + nvshmem_quiet per operation, PE 0 -> PE 1 (" + r.kinds +
            ", source in " + (local == Mem::Device ? "GPU memory, symmetric" : "pinned host memory, registered") +
            "); ops back to back";
  r.from = localBuf(b, local);
  r.fromMem = local;
  r.to = b.dst;
  uint8_t* dst = b.dst;
  const uint8_t* from = r.from;
  r.body = [dst, from](size_t S, int k) {
    for (int i = 0; i < k; ++i) {
      nvshmem_putmem(dst, from, S, 1);
      nvshmem_quiet();
    }
  };
  runOneWay(b, r);
}

// put_nbi: windows of nvshmem_putmem_nbi closed by one nvshmem_quiet (tether_put_nbi's row).
// put_window: the same windows with the blocking nvshmem_putmem (returns when the source is reusable).
void runPutWindows(Bench& b, Mem local, bool nbi) {
  OneWay r;
  r.op = nbi ? "put_nbi" : "put_window";
  r.kinds = std::string(memLetter(local)) + "->D";
  r.title = r.op + " bandwidth: windows of " + std::to_string(b.opts.window) + (nbi ? " nvshmem_putmem_nbi" :
            " blocking nvshmem_putmem") + " PE 0 -> PE 1 then one nvshmem_quiet (window shrinks where a batch would "
            "exceed --batch-bytes), " + r.kinds + "; Latency = time per operation";
  r.table = TableKind::Bandwidth;
  r.windowed = true;
  r.from = localBuf(b, local);
  r.fromMem = local;
  r.to = b.dst;
  uint8_t* dst = b.dst;
  const uint8_t* from = r.from;
  const Options& opts = b.opts;
  r.body = [dst, from, nbi, &opts](size_t S, int k) {
    int window = 0, windows = 0;
    windowing(opts, k, &window, &windows);
    for (int wi = 0; wi < windows; ++wi) {
      if (nbi) {
        for (int i = 0; i < window; ++i) nvshmem_putmem_nbi(dst, from, S, 1);
      } else {
        for (int i = 0; i < window; ++i) nvshmem_putmem(dst, from, S, 1);
      }
      nvshmem_quiet();
    }
  };
  runOneWay(b, r);
}

// get: blocking nvshmem_getmem from PE 1's symmetric GPU buffer into PE 0's local buffer; one quiet per batch.
void runGet(Bench& b, Mem local) {
  OneWay r;
  r.op = "get";
  r.kinds = std::string("D->") + memLetter(local);
  r.title = "get: blocking nvshmem_getmem of S bytes from PE 1 into PE 0 (" + r.kinds + ", destination in " +
            (local == Mem::Device ? "GPU memory, symmetric" : "pinned host memory, registered") +
            "); ops back to back, nvshmem_quiet once per batch";
  r.sender = 1;
  r.from = b.src;
  r.fromMem = Mem::Device;
  r.receiver = 0;
  r.to = local == Mem::Device ? b.dst : b.host;
  r.toMem = local;
  uint8_t* to = r.to;
  const uint8_t* src = b.src;
  r.body = [to, src](size_t S, int k) {
    for (int i = 0; i < k; ++i) nvshmem_getmem(to, src, S, 1);
    nvshmem_quiet();
  };
  runOneWay(b, r);
}

// ---- bidirectional -----------------------------------------------------------------------------------------------

// PE 0 and PE 1 at once: windows of nvshmem_putmem_nbi to each other, each window closed by nvshmem_quiet. Each
// batch starts after an untimed nvshmem_barrier_all and ends with a timed one (so it lasts until both are done).
// Size and GB/s are totals of both directions (bytes = 2 S), like host_paths' ce_peer_bidir.
void runBidir(Bench& b) {
  const std::string op = "put_bidir", kinds = "D->D";
  if (b.me == 0)
    b.rep->beginTable("put_bidir bandwidth: PE 0 and PE 1 at once each issue windows of " +
                      std::to_string(b.opts.window) + " nvshmem_putmem_nbi (D->D) to the other, each window "
                      "closed by nvshmem_quiet; batch = untimed nvshmem_barrier_all, the windows, timed "
                      "nvshmem_barrier_all; Size and GB/s are TOTALS of both directions (2 S)", TableKind::Bandwidth);
  const bool active = b.me < 2;
  const int peer = 1 - b.me;
  if (active) {
    b.dog->beat("filling the source of put_bidir");
    fillBuffer(b, b.src, Mem::Device, b.opts.maxSize, rowSeed(op, kinds, b.me));
  }
  for (size_t S : tether_bench::messageSizes(b.opts)) {
    int window = 0, windows = 0;
    windowing(b.opts, tether_bench::opsPerBatch(b.opts, S), &window, &windows);
    const std::string what = label(op, kinds, S);
    if (active) clearBuffer(b.dst, Mem::Device, S);
    barrier(b, "set-up of " + what);
    b.dog->beat("timed batches of " + what);
    std::vector<double> samples;
    for (int i = 0; i < b.opts.warmup + b.opts.batches; ++i) {
      nvshmem_barrier_all();
      const double t0 = tether_bench::nowSeconds();
      if (active) {
        for (int wi = 0; wi < windows; ++wi) {
          for (int j = 0; j < window; ++j) nvshmem_putmem_nbi(b.dst, b.src, S, peer);
          nvshmem_quiet();
        }
      }
      nvshmem_barrier_all();
      const double t1 = tether_bench::nowSeconds();
      if (i >= b.opts.warmup) samples.push_back((t1 - t0) * 1e6 / (window * windows));
    }
    syncAndCheck(what);
    barrier(b, "end of " + what);
    bool ok = true;
    if (active) {
      b.dog->beat("validating " + what);
      ok = checkBuffer(b, b.dst, Mem::Device, S, rowSeed(op, kinds, peer), what);
    }
    agree(b, ok, what);
    report(b, op, kinds, 2 * S, static_cast<long>(window) * windows * b.opts.batches, samples, true);
  }
}

// ---- set-up ------------------------------------------------------------------------------------------------------

// Sets name=value unless the environment already has name; returns the effective value.
std::string envDefault(const char* name, const std::string& value) {
  std::string effective;
  if (!tether_nvshmem::envDefault(name, value, &effective)) die("setenv(%s) failed", name);
  return effective;
}

// Pulls "--timeout S" / "--timeout=S" out of argv (the harness rejects unknown options). false on a bad value.
bool takeTimeout(int argc, char** argv, std::vector<char*>* rest, double* timeoutS, std::string* error) {
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (i > 0 && (a == "--timeout" || a.rfind("--timeout=", 0) == 0)) {
      std::string v;
      if (a == "--timeout") {
        if (i + 1 >= argc) {
          *error = "--timeout needs a value (seconds)";
          return false;
        }
        v = argv[++i];
      } else {
        v = a.substr(std::strlen("--timeout="));
      }
      char* end = nullptr;
      const double t = std::strtod(v.c_str(), &end);
      if (v.empty() || end == nullptr || *end != '\0' || !(t > 0)) {
        *error = "--timeout '" + v + "': not a positive number of seconds";
        return false;
      }
      *timeoutS = t;
      continue;
    }
    rest->push_back(argv[i]);
  }
  return true;
}

std::string describeGpu(int device) {
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, device));
  char bus[32] = {0};
  CUDA_OK(cudaDeviceGetPCIBusId(bus, static_cast<int>(sizeof(bus)), device));
  return "GPU " + std::to_string(device) + " " + bus + " " + prop.name;
}

}  // namespace

int main(int argc, char** argv) {
  double timeoutS = 300;
  std::vector<char*> args;
  std::string error;
  if (!takeTimeout(argc, argv, &args, &timeoutS, &error)) {
    std::fprintf(stderr, "nvshmem_bench: %s\n", error.c_str());
    return 2;
  }
  Options opts;
  if (!tether_bench::parseOptions(static_cast<int>(args.size()), args.data(), &opts, &error)) {
    std::fprintf(stderr, "nvshmem_bench: %s\n", error.c_str());
    return 2;
  }
  opts.argv.assign(argv, argv + argc);  // the exact command line, --timeout included
  if (opts.help) {
    std::printf("%s", tether_bench::usage(
                          "tether_bench_nvshmem",
                          "  --timeout S      a PE that makes no progress for S seconds exits 3 (default 300)\n"
                          "rows (--ops): put put_nbi put_window get put_bidir (NVSHMEM host API; JSON path "
                          "\"nvshmem\")\nrun as: tetherrun -n 2 tether_bench_nvshmem; NVSHMEM_SYMMETRIC_SIZE must "
                          "hold 2 x --max-size + 64M (set to that when unset)\n")
                          .c_str());
    return 0;
  }
  for (const std::string& op : opts.ops) {
    bool known = false;
    for (const char* k : kOps) known = known || op == k;
    if (!known) {
      std::fprintf(stderr, "nvshmem_bench: unknown row '%s' in --ops (see --help)\n", op.c_str());
      return 2;
    }
  }

  // NVSHMEM's environment, before any NVSHMEM call. Every PE computes the same values.
  const size_t heapNeed = 2 * opts.maxSize + (size_t{64} << 20);
  const std::string envNvls = envDefault("NVSHMEM_DISABLE_NVLS", "1");  // never NVLink multicast on shared machines
  const std::string envTransport = envDefault("NVSHMEM_REMOTE_TRANSPORT", "none");  // one host: P2P only
  const std::string envHeap = envDefault("NVSHMEM_SYMMETRIC_SIZE", std::to_string(heapNeed));

  Bench b;
  b.opts = opts;
  {
    const tether_status_t st = tether_init(&b.w);
    if (st != TETHER_SUCCESS) {
      std::fprintf(stderr, "nvshmem_bench: tether_init failed: %s: %s\n", tether_status_string(st),
                   tether_last_error());
      return 1;
    }
  }
  b.me = tether_my_pe(b.w);
  b.npes = tether_n_pes(b.w);
  gPe = b.me;
  if (b.npes < 2) {
    std::fprintf(stderr, "nvshmem_bench: needs 2 PEs (PE 0 -> PE 1); run it as: tetherrun -n 2 %s\n", argv[0]);
    (void)tether_finalize(b.w);
    return 2;
  }
  Watchdog dog(timeoutS);
  b.dog = &dog;

  // One GPU per PE, the one tether binds by default.
  int devices = 0;
  const cudaError_t ce = cudaGetDeviceCount(&devices);
  if (ce != cudaSuccess || devices == 0) {
    if (b.me == 0)
      std::printf("SKIP: tether_bench_nvshmem needs a GPU per PE (cudaGetDeviceCount: %s, %d devices)\n",
                  ce == cudaSuccess ? "ok" : cudaGetErrorString(ce), devices);
    (void)tether_finalize(b.w);
    return 0;
  }
  const int device = tether_local_pe(b.w) % devices;
  CUDA_OK(cudaSetDevice(device));
  if (b.me == 0) {
    size_t need = 0;
    if (tether_bench::parseSize(envHeap, &need) && need < heapNeed)
      std::fprintf(stderr, "nvshmem_bench: warning: NVSHMEM_SYMMETRIC_SIZE=%s is below the %zu bytes this run "
                   "allocates (2 x --max-size + 64M); nvshmem_malloc may fail\n", envHeap.c_str(), heapNeed);
    if (tether_local_size(b.w) > devices)
      std::fprintf(stderr, "nvshmem_bench: warning: %d PEs on this host share %d GPUs\n", tether_local_size(b.w),
                   devices);
  }

  // Bootstrap: NVSHMEM's unique id from PE 0 to every PE through tether (nvshmem_boot.h).
  dog.beat("unique-id exchange (tether) and nvshmemx_init_attr (UID bootstrap)");
  if (!tether_nvshmem::bootNvshmem(b.w, &error)) die("%s", error.c_str());

  // Buffers. Symmetric allocations are collective (same order and sizes everywhere).
  dog.beat("allocation");
  b.dst = static_cast<uint8_t*>(nvshmem_malloc(opts.maxSize));
  b.src = static_cast<uint8_t*>(nvshmem_malloc(opts.maxSize));
  b.votes = static_cast<int64_t*>(nvshmem_calloc(static_cast<size_t>(b.npes), sizeof(int64_t)));
  uint8_t* meta = static_cast<uint8_t*>(nvshmem_calloc(2, kMetaBytes));
  if (b.dst == nullptr || b.src == nullptr || b.votes == nullptr || meta == nullptr)
    die("nvshmem_malloc of 2 x %zu bytes (+ small) failed: NVSHMEM_SYMMETRIC_SIZE=%s; set it to at least %zu "
        "(2 x --max-size + 64M) or lower --max-size", opts.maxSize, envHeap.c_str(), heapNeed);
  CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&b.host), opts.maxSize));
  CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&b.stage), opts.maxSize));
  // NVSHMEM asks for host memory used as a local operand to be registered. Should that fail, the H rows are skipped
  // (and the header says why); the D rows still run.
  const int regRc = nvshmemx_buffer_register(b.host, opts.maxSize);
  b.hostRegistered = regRc == 0;
  if (!b.hostRegistered)
    std::fprintf(stderr, "nvshmem_bench[PE %d]: warning: nvshmemx_buffer_register(pinned host buffer, %zu bytes) "
                 "failed (status %d): rows with a host-memory local buffer (H) are skipped\n", b.me, opts.maxSize,
                 regRc);

  {  // every PE must take the same rows: H rows only when every PE registered its host buffer
    for (int pe = 0; pe < b.npes; ++pe) nvshmem_int64_p(&b.votes[b.me], b.hostRegistered ? 1 : 0, pe);
    barrier(b, "host-buffer registration vote");
    std::vector<int64_t> seen(static_cast<size_t>(b.npes));
    CUDA_OK(cudaMemcpy(seen.data(), b.votes, sizeof(int64_t) * seen.size(), cudaMemcpyDeviceToHost));
    for (int64_t v : seen) b.hostRegistered = b.hostRegistered && v == 1;
    barrier(b, "host-buffer registration vote (end)");  // everyone has read the votes before they are reused
  }

  // Header facts: each PE's GPU, and whether PE 1's heap is mapped into PE 0 (P2P).
  const std::string myGpu = describeGpu(device);
  {
    char text[kMetaBytes] = {0};
    std::snprintf(text, sizeof(text), "%s", myGpu.c_str());
    CUDA_OK(cudaMemcpy(meta, text, kMetaBytes, cudaMemcpyHostToDevice));
  }
  barrier(b, "GPU description exchange");
  std::string peerGpu = "?";
  if (b.me == 0) {
    nvshmem_getmem(meta + kMetaBytes, meta, kMetaBytes, 1);
    char text[kMetaBytes + 1] = {0};
    CUDA_OK(cudaMemcpy(text, meta + kMetaBytes, kMetaBytes, cudaMemcpyDeviceToHost));
    peerGpu = text;
  }
  const bool mapped = nvshmem_ptr(b.dst, 1) != nullptr;  // reported by PE 0 only

  Reporter rep(tether_bench::collectRunInfo("nvshmem", opts, b.npes), opts, b.me == 0);
  b.rep = &rep;
  if (!rep.open(&error)) die("%s", error.c_str());
  rep.printHeader(
      "model host: CPU-issued NVSHMEM " + tether_nvshmem::nvshmemVersion() +
      " host API, PE 0 issues and times, PE 1 is the target (JSON path \"nvshmem\")\n"
      "PE 0: " + myGpu + "; PE 1: " + peerGpu + "; PE 1's heap " +
      (mapped ? "is mapped into PE 0 (nvshmem_ptr != NULL: P2P over NVLink/PCIe)"
              : "is NOT mapped (nvshmem_ptr == NULL)") +
      "\nNVSHMEM_SYMMETRIC_SIZE=" + envHeap + " NVSHMEM_REMOTE_TRANSPORT=" + envTransport + " NVSHMEM_DISABLE_NVLS=" +
      envNvls + "; bootstrap: unique id handed out through tether\n"
      "kinds: local buffer -> remote symmetric GPU buffer (get: remote -> local); D = GPU memory, H = pinned host "
      "memory registered with nvshmemx_buffer_register" + (b.hostRegistered ? std::string() :
      std::string(" (registration FAILED on a PE: H rows skipped)")) + "; data validated once per row and size");

  const bool h = b.hostRegistered;
  if (tether_bench::wantsOp(opts, "put")) {
    runPut(b, Mem::Device);
    if (h) runPut(b, Mem::Host);
  }
  if (tether_bench::wantsOp(opts, "put_nbi")) {
    runPutWindows(b, Mem::Device, true);
    if (h) runPutWindows(b, Mem::Host, true);
  }
  if (tether_bench::wantsOp(opts, "put_window")) {
    runPutWindows(b, Mem::Device, false);
    if (h) runPutWindows(b, Mem::Host, false);
  }
  if (tether_bench::wantsOp(opts, "get")) {
    runGet(b, Mem::Device);
    if (h) runGet(b, Mem::Host);
  }
  if (tether_bench::wantsOp(opts, "put_bidir")) runBidir(b);
  rep.flush();

  dog.beat("teardown");
  barrier(b, "teardown");
  if (regRc == 0 && nvshmemx_buffer_unregister(b.host) != 0) die("nvshmemx_buffer_unregister failed");
  nvshmem_free(meta);
  nvshmem_free(b.votes);
  nvshmem_free(b.src);
  nvshmem_free(b.dst);
  CUDA_OK(cudaFreeHost(b.stage));
  CUDA_OK(cudaFreeHost(b.host));
  nvshmem_finalize();
  TETHER_OK(tether_finalize(b.w));
  if (b.me == 0) std::fprintf(rep.tableStream(), "# all data validated\n");
  return 0;
}
