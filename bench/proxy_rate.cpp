// tether_bench_proxy_rate: descriptors per second through the device API's proxy ring (issue #19 goal: "the proxy
// sustains >= 2 M descriptors/s on one core", GIO-style message rate), with the host-compiled device API (a CPU
// handle, tether_device_handle_cpu): one producer thread on PE 0 posts N 8-byte nbi puts to PE 1 and one quiet; the
// proxy thread (src/core/proxy.cpp) executes them with the host path to PE 1. Which host path is the environment's:
//   TETHER_FORCE_PROXY=1 TETHER_GPU=none              same-host shm peer, forced through the ring
//   TETHER_PATHS=host=ucx UCX_TLS=tcp,self ...         the UCX provider (the ring is used without forcing)
// Rows (PE 0 -> PE 1, 8 B, batch = N operations + one completion; sample = N / batch time):
//   ring_put_nbi  dev::put_nbi(h, dest, src, 1, 1) x N, dev::quiet    descriptors/s through the ring (PUT, local src)
//   ring_p        dev::p(h, dest, v, 1) x N, dev::quiet               the same with the value inline (PUT_INLINE)
//   host_put_nbi  tether_put_nbi(w, dest, src, 8, 1) x N, tether_quiet  the same transport without ring or proxy:
//                 what the transport alone sustains from one thread (the proxy's ceiling on this path)
// The gap between ring_* and host_put_nbi is the ring + proxy loop; `perf record` of the run splits the proxy
// thread's time further (bench/results/cpu-2core-vm/proxy_rate.txt has such a split). PE 1 (and PEs above 1) only
// wait in the barriers. Data check: after each row PE 1 verifies the last batch's values.
// Usage: tether_bench_proxy_rate [--ops a,b] [--iters N (per batch, default 100000)] [--batches B (default 11)]
//                                [--label TEXT (the transport, for the output)] [--json FILE] [--all-handles]
// Only PE 0 takes a handle (so only PE 0 runs a proxy thread) unless --all-handles: then PE 1's proxy thread polls
// too, as in a job where every PE uses the device API (on 2 cores with UCX it competes with PE 1's own progress for
// its worker lock: see the result file).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tether/device.cuh"
#include "tether/tether.h"

namespace dev = tether::device;

namespace {

constexpr size_t kWords = 4096;  // destination words on PE 1 (operation i writes word i % kWords)

struct Args {
  long iters = 100000;
  int batches = 11;
  std::string ops = "ring_put_nbi,ring_p,host_put_nbi";
  std::string label = "?";
  const char* json = nullptr;
  bool allHandles = false;  // --all-handles: every PE takes a CPU handle (and so runs a proxy thread), not only PE 0
};

void check(tether_status_t s, const char* what) {
  if (s != TETHER_SUCCESS) {
    std::fprintf(stderr, "tether_bench_proxy_rate: %s failed: %s\n", what, tether_last_error());
    std::exit(1);
  }
}

bool wants(const Args& a, const char* op) { return ("," + a.ops + ",").find("," + std::string(op) + ",") != std::string::npos; }

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!std::strcmp(argv[i], "--iters") && v) {
      a->iters = std::atol(v), ++i;
    } else if (!std::strcmp(argv[i], "--batches") && v) {
      a->batches = std::atoi(v), ++i;
    } else if (!std::strcmp(argv[i], "--ops") && v) {
      a->ops = v, ++i;
    } else if (!std::strcmp(argv[i], "--label") && v) {
      a->label = v, ++i;
    } else if (!std::strcmp(argv[i], "--all-handles")) {
      a->allHandles = true;
    } else if (!std::strcmp(argv[i], "--json") && v) {
      a->json = v, ++i;
    } else {
      return false;
    }
  }
  return a->iters >= 1 && a->batches >= 1;
}

// One batch of `op` on PE 0: N operations of 8 B to PE 1 carrying `tag`, then one completion. Returns seconds.
double batch(tether_t w, const dev::Handle& h, const std::string& op, uint64_t* dest, const uint64_t* src, long n,
             uint64_t tag) {
  const auto t0 = std::chrono::steady_clock::now();
  if (op == "ring_put_nbi") {
    for (long i = 0; i < n; ++i) dev::put_nbi(h, dest + i % kWords, src, 1, 1);
    dev::quiet(h);
  } else if (op == "ring_p") {
    for (long i = 0; i < n; ++i) dev::p(h, dest + i % kWords, tag, 1);
    dev::quiet(h);
  } else {
    for (long i = 0; i < n; ++i) check(tether_put_nbi(w, dest + i % kWords, src, 8, 1), "tether_put_nbi");
    check(tether_quiet(w), "tether_quiet");
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr, "usage: %s [--ops ring_put_nbi,ring_p,host_put_nbi] [--iters N] [--batches B] "
                 "[--label TEXT] [--json FILE] [--all-handles]\n", argv[0]);
    return 2;
  }
  tether_t w = nullptr;
  check(tether_init(&w), "tether_init");
  const int me = tether_my_pe(w), npes = tether_n_pes(w);
  if (npes < 2) {
    std::fprintf(stderr, "tether_bench_proxy_rate: needs at least 2 PEs (PE 0 -> PE 1)\n");
    return 2;
  }
  void* p = nullptr;
  check(tether_calloc(w, kWords, 8, &p), "tether_calloc");
  uint64_t* dest = static_cast<uint64_t*>(p);
  check(tether_calloc(w, 1, 8, &p), "tether_calloc");
  uint64_t* src = static_cast<uint64_t*>(p);  // symmetric (HOST segment): a local buffer the proxy can read
  dev::Handle h{};
  if (me == 0 || a.allHandles) check(tether_device_handle_cpu(w, &h), "tether_device_handle_cpu");
  if (me == 0 && !h.proxy_ring) {
    std::fprintf(stderr, "tether_bench_proxy_rate: PE 1 is reachable by loads/stores: no proxy ring (set "
                 "TETHER_FORCE_PROXY=1 or TETHER_PATHS=host=ucx)\n");
    return 2;
  }
  FILE* json = nullptr;
  if (me == 0 && a.json) {
    json = std::fopen(a.json, "w");
    if (!json) {
      std::fprintf(stderr, "tether_bench_proxy_rate: cannot write %s\n", a.json);
      return 1;
    }
  }
  if (me == 0)
    std::printf("# tether_bench_proxy_rate: %s, %d PEs, 8 B PE 0 -> PE 1, %ld ops per batch, 1 warm-up + %d timed "
                "batches, ring of %llu slots, handles on %s\n%-14s %14s %14s %10s\n", a.label.c_str(), npes, a.iters, a.batches,
                static_cast<unsigned long long>(h.proxy_slots), a.allHandles ? "every PE" : "PE 0 only", "op", "Mops/s median", "Mops/s best", "ns/op");
  uint64_t tag = 0;
  for (const char* op : {"ring_put_nbi", "ring_p", "host_put_nbi"}) {
    if (!wants(a, op)) continue;
    std::vector<double> rates;
    for (int b = 0; b <= a.batches; ++b) {
      ++tag;
      check(tether_barrier_all(w), "tether_barrier_all");
      if (me == 0) {
        *src = tag;
        const double s = batch(w, h, op, dest, src, a.iters, tag);
        if (b > 0) rates.push_back(static_cast<double>(a.iters) / s);
      }
    }
    check(tether_barrier_all(w), "tether_barrier_all");
    if (me == 1) {
      const long n = std::min<long>(a.iters, static_cast<long>(kWords));
      for (long i = 0; i < n; ++i)
        if (dest[i] != tag) {
          std::fprintf(stderr, "tether_bench_proxy_rate: %s: word %ld on PE 1 holds %llu, expected %llu\n", op, i,
                       static_cast<unsigned long long>(dest[i]), static_cast<unsigned long long>(tag));
          return 1;
        }
    }
    if (me == 0) {
      std::sort(rates.begin(), rates.end());
      const double med = rates[rates.size() / 2], best = rates.back();
      std::printf("%-14s %14.3f %14.3f %10.1f\n", op, med / 1e6, best / 1e6, 1e9 / med);
      if (json)
        std::fprintf(json, "{\"record\":\"row\",\"op\":\"%s\",\"label\":\"%s\",\"all_handles\":%s,\"bytes\":8,\"ops_per_batch\":%ld,"
                     "\"batches\":%d,\"mops_median\":%.4f,\"mops_best\":%.4f,\"ns_per_op_median\":%.2f}\n", op,
                     a.label.c_str(), a.allHandles ? "true" : "false", a.iters, a.batches, med / 1e6, best / 1e6, 1e9 / med);
    }
  }
  if (json) std::fclose(json);
  std::fflush(stdout);
  check(tether_finalize(w), "tether_finalize");
  return 0;
}
