// tether_bench_startup: how long a job takes to start (issue #19 goal: a 64-PE job across the two network namespaces
// initialises in < 2 s). Every PE takes CLOCK_REALTIME at main() and after tether_init; the launcher's start time
// comes from BENCH_LAUNCH_NS (nanoseconds since the epoch, set by whoever starts tetherrun, e.g.
// bench/startup/netns_startup.sh on each host; without it the earliest main() of the job stands in). The hosts of
// scripts/netns-hosts share one kernel clock, so the times compare across them.
// After init it also times the first operation to every other PE (a put of 8 B + quiet each: with the UCX provider
// this makes the endpoint, which tether creates lazily on first use).
// PE 0 collects every PE's times with puts into a symmetric array and prints:
//   launch->main (max over PEs), tether_init (median, max), launch->init done (max: the goal's number),
//   the CPU time (user + sys, summed over PEs) before main() and inside tether_init: on a machine with fewer cores
//   than PEs, that sum / cores bounds the start-up time from below; first touch of all peers (max).
// One JSON line (--json FILE) with the same numbers and the per-PE times.
// Usage: tether_bench_startup [--json FILE]
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tether/tether.h"

namespace {

uint64_t cpuNs() {  // this process's user + system CPU time so far
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (static_cast<uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ull +
          static_cast<uint64_t>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec)) * 1000ull;
}

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void check(tether_status_t s, const char* what) {
  if (s != TETHER_SUCCESS) {
    std::fprintf(stderr, "tether_bench_startup: %s failed: %s\n", what, tether_last_error());
    std::exit(1);
  }
}

// Per-PE record, put into PE 0's array.
struct Times {
  uint64_t launch, main, initDone, loopStart, touched;
  uint64_t cpuMain, cpuInit;  // CPU time (user + sys) at main() (exec + loading) and spent inside tether_init
};

double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Times me{};
  me.main = nowNs();
  me.cpuMain = cpuNs();
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  const char* l = std::getenv("BENCH_LAUNCH_NS");
  me.launch = l ? std::strtoull(l, nullptr, 10) : 0;
  tether_t w = nullptr;
  check(tether_init(&w), "tether_init");
  me.initDone = nowNs();
  me.cpuInit = cpuNs() - me.cpuMain;
  const int pe = tether_my_pe(w), n = tether_n_pes(w);

  void* p = nullptr;
  check(tether_calloc(w, static_cast<size_t>(n), sizeof(Times), &p), "tether_calloc");
  Times* all = static_cast<Times*>(p);
  check(tether_calloc(w, static_cast<size_t>(n), 8, &p), "tether_calloc");
  uint64_t* slots = static_cast<uint64_t*>(p);
  check(tether_barrier_all(w), "tether_barrier_all");
  me.loopStart = nowNs();
  const uint64_t one = 1;
  for (int j = 1; j < n; ++j) {  // every other PE once, starting with the next one (no hot spot)
    const int to = (pe + j) % n;
    check(tether_put(w, &slots[pe], &one, 8, to), "tether_put");
  }
  check(tether_quiet(w), "tether_quiet");
  me.touched = nowNs();
  check(tether_barrier_all(w), "tether_barrier_all");
  check(tether_put(w, &all[pe], &me, sizeof me, 0), "tether_put");
  check(tether_barrier_all(w), "tether_barrier_all");

  if (pe == 0) {
    uint64_t launch = UINT64_MAX;
    bool given = true;
    for (int i = 0; i < n; ++i) given = given && all[i].launch != 0;
    std::vector<double> toMain, init, toInit;
    double cpuMainSum = 0, cpuInitSum = 0;
    for (int i = 0; i < n; ++i) launch = std::min(launch, given ? all[i].launch : all[i].main);
    for (int i = 0; i < n; ++i) {
      const Times& t = all[i];
      const uint64_t from = given ? t.launch : launch;
      toMain.push_back(ms(t.main - from));
      init.push_back(ms(t.initDone - t.main));
      toInit.push_back(ms(t.initDone - from));
      cpuMainSum += ms(t.cpuMain);
      cpuInitSum += ms(t.cpuInit);
    }
    double touchMax = 0;  // first touch of all peers: the slowest PE's loop (puts + quiet)
    for (int i = 0; i < n; ++i) touchMax = std::max(touchMax, ms(all[i].touched - all[i].loopStart));
    const double maxToInit = *std::max_element(toInit.begin(), toInit.end());
    std::printf("# tether_bench_startup: %d PEs, launch time from %s\n", n,
                given ? "BENCH_LAUNCH_NS (per host)" : "the earliest main() (BENCH_LAUNCH_NS unset)");
    std::printf("launch->main      max %9.1f ms  median %9.1f ms\n", *std::max_element(toMain.begin(), toMain.end()),
                median(toMain));
    std::printf("tether_init       max %9.1f ms  median %9.1f ms\n", *std::max_element(init.begin(), init.end()),
                median(init));
    std::printf("launch->init done max %9.1f ms  median %9.1f ms   (goal: < 2000 ms)\n", maxToInit, median(toInit));
    std::printf("CPU time, all PEs: %.1f ms before main() (exec, loading) + %.1f ms in tether_init (%.2f ms per PE)\n",
                cpuMainSum, cpuInitSum, cpuInitSum / n);
    std::printf("first put to all  max %9.1f ms  (each PE: one blocking 8 B put to each of the %d others + quiet)\n", touchMax, n - 1);
    if (json) {
      FILE* f = std::fopen(json, "w");
      if (!f) {
        std::fprintf(stderr, "tether_bench_startup: cannot write %s\n", json);
        return 1;
      }
      std::fprintf(f, "{\"record\":\"startup\",\"npes\":%d,\"launch_given\":%s,\"launch_to_main_ms_max\":%.3f,"
                   "\"init_ms_max\":%.3f,\"init_ms_median\":%.3f,\"launch_to_init_ms_max\":%.3f,"
                   "\"launch_to_init_ms_median\":%.3f,\"first_touch_ms_max\":%.3f,\"cpu_before_main_ms_sum\":%.3f,"
                   "\"cpu_init_ms_sum\":%.3f,\"pe_launch_to_init_ms\":[",
                   n, given ? "true" : "false", *std::max_element(toMain.begin(), toMain.end()),
                   *std::max_element(init.begin(), init.end()), median(init), maxToInit, median(toInit), touchMax, cpuMainSum, cpuInitSum);
      for (int i = 0; i < n; ++i) std::fprintf(f, "%s%.3f", i ? "," : "", toInit[static_cast<size_t>(i)]);
      std::fprintf(f, "]}\n");
      std::fclose(f);
    }
  }
  check(tether_finalize(w), "tether_finalize");
  return 0;
}
