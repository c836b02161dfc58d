// tether_bench_bootstrap: the bootstrap's own costs at n PEs, without the rest of tether_init (issue #19, start-up
// scaling; docs/scaling.md). Under tetherrun (or any launcher tether detects) every PE creates the TCP bootstrap the
// way tether_init does (detectJob + createTcpBootstrap: the star around rank 0) and times:
//   rendezvous   createTcpBootstrap, from main() (max over PEs: the last PE's arrival included)
//   barrier      one bootstrap barrier (median of --iters)
//   allgather B  one allgather of B bytes per PE, median; B = 8 (lengths), 128 (~ a UCX worker address), 2048 (the
//                fixed topology record tether_init allgathers, World::discoverTopology)
// Times are PE 0's (every collective ends on all PEs within one reply of rank 0). Links tether_static (internal API).
// Usage: tether_bench_bootstrap [--iters N (default 50)] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "base/config.h"
#include "bootstrap/bootstrap.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

void check(const tether::Status& s, const char* what) {
  if (!s.isOk()) {
    std::fprintf(stderr, "tether_bench_bootstrap: %s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = Clock::now();
  int iters = 50;
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--iters N] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  tether::Config config = tether::Config::fromEnvironment();
  tether::JobInfo job;
  check(tether::detectJob(config, &job), "detectJob");
  std::unique_ptr<tether::Bootstrap> b;
  check(tether::createTcpBootstrap(job, 60.0, &b), "createTcpBootstrap");
  const double rendezvous = since(start);
  const int n = b->size();
  // The slowest PE's rendezvous (the job is up when the last one is in).
  std::vector<double> all(static_cast<size_t>(n));
  check(b->allgather(&rendezvous, all.data(), sizeof rendezvous), "allgather");
  const double rendezvousMax = *std::max_element(all.begin(), all.end());

  std::vector<double> bar;
  for (int i = 0; i < iters; ++i) {
    const auto t = Clock::now();
    check(b->barrier(), "barrier");
    bar.push_back(since(t));
  }
  const size_t sizes[] = {8, 128, 2048};
  double ag[3];
  for (int k = 0; k < 3; ++k) {
    std::vector<char> in(sizes[k], static_cast<char>(b->rank())), out(sizes[k] * static_cast<size_t>(n));
    std::vector<double> v;
    for (int i = 0; i < iters; ++i) {
      check(b->barrier(), "barrier");
      const auto t = Clock::now();
      check(b->allgather(in.data(), out.data(), sizes[k]), "allgather");
      v.push_back(since(t));
    }
    for (int r = 0; r < n; ++r)
      if (out[static_cast<size_t>(r) * sizes[k]] != static_cast<char>(r)) {
        std::fprintf(stderr, "tether_bench_bootstrap: allgather block %d is wrong\n", r);
        return 1;
      }
    ag[k] = median(v);
  }
  if (b->rank() == 0) {
    std::printf("# tether_bench_bootstrap: %d PEs, %d iterations, median us (PE 0)\n", n, iters);
    std::printf("rendezvous (max over PEs, from main) %10.1f us\nbarrier %10.1f us\nallgather 8 B %10.1f us\n"
                "allgather 128 B %10.1f us\nallgather 2048 B %10.1f us\n", rendezvousMax, median(bar), ag[0], ag[1],
                ag[2]);
    if (json) {
      FILE* f = std::fopen(json, "a");
      if (!f) {
        std::fprintf(stderr, "tether_bench_bootstrap: cannot write %s\n", json);
        return 1;
      }
      std::fprintf(f, "{\"record\":\"bootstrap\",\"npes\":%d,\"iters\":%d,\"rendezvous_us_max\":%.1f,"
                   "\"barrier_us\":%.1f,\"allgather_8_us\":%.1f,\"allgather_128_us\":%.1f,\"allgather_2048_us\":%.1f}\n",
                   n, iters, rendezvousMax, median(bar), ag[0], ag[1], ag[2]);
      std::fclose(f);
    }
  }
  return 0;
}
