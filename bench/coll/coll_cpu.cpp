// tether_bench_coll_cpu: team collectives on the CPU, no GPU -- the stream forms (tether_team_*_on_stream) through
// the CPU stream emulation (the internal hook useStreamOpsForTesting; this program links tether_static) and the
// device form with a CPU handle (the host-compiled device API, one CPU thread per PE), on HOST memory: what their
// collective structure costs where a GPU machine cannot show it, e.g. across the netns hosts of tests/netns, where a
// team spanning hosts takes the by-host steps (core/collectives.h "By host"; A/B with TETHER_COLL_BY_HOST=1/0). Not a
// GPU figure: an emulated stream is a worker thread, the device form's proxy a CPU thread.
// Rows (the world team, every PE calls; PE 0 reports):
//   bcast       tether_team_broadcast_on_stream from PE 0, INT64, size bytes; per call: enqueue + synchronize
//   allreduce   tether_team_allreduce_on_stream, INT64 sum; per call: enqueue + synchronize
//   dev_bcast   tether::device::team_broadcast<Scope::Thread> from PE 0 (tether_device_handle_cpu, the world's
//               device view); per call
//   reduce      tether_team_reduce (the host form), INT64 sum to root 0; per call
//   reduce_last the same to the last PE (by host across the netns hosts: not its host's first PE)
//   reduce_scatter tether_team_reduce_scatter (host form), INT64 sum; size = each PE's block (src holds npes of
//               them); per call
//   alltoall    tether_team_alltoall (host form), INT64; size = one block (src and dest hold npes); per call
// Data check after each row: every PE's dest holds the expected values (reduce: the root's; the others' untouched).
// Usage: tether_bench_coll_cpu [--ops bcast,allreduce,dev_bcast,reduce,reduce_last,reduce_scatter,alltoall]
//                              [--max-size 64K] [--iters N]
//                              [--batches B] [--quick] [--json FILE] (bench/harness.h options and defaults)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/stream_ops.h"
#include "harness.h"
#include "tether/device.cuh"
#include "tether/tether.h"

namespace tb = tether_bench;

namespace {

constexpr const char* kRows =
    "Rows: bcast, allreduce (stream forms, CPU emulation), dev_bcast (device form, CPU handle), reduce, reduce_last\n"
    "(host form, to PE 0 and to the last PE), reduce_scatter, alltoall (host forms; size: each PE's block).\n";
tether_t w;
int me = 0, npes = 0;

void check(tether_status_t s, const char* what) {
  if (s != TETHER_SUCCESS) {
    std::fprintf(stderr, "tether_bench_coll_cpu: PE %d: %s failed: %s\n", me, what, tether_last_error());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  tb::Options opts;
  std::string error;
  if (!tb::parseOptions(argc, argv, &opts, &error)) {
    std::fprintf(stderr, "tether_bench_coll_cpu: %s\n%s", error.c_str(), tb::usage(argv[0], kRows).c_str());
    return 2;
  }
  if (opts.help) {
    std::printf("%s", tb::usage(argv[0], kRows).c_str());
    return 0;
  }
  check(tether_init(&w), "tether_init");
  me = tether_my_pe(w);
  npes = tether_n_pes(w);
  tether::StreamOps* so = nullptr;
  {
    std::unique_ptr<tether::StreamOps> ops = tether::createCpuStreamOps(60);
    so = ops.get();
    if (!tether::useStreamOpsForTesting(w, std::move(ops)).isOk()) check(TETHER_ERR_INTERNAL, "the CPU stream ops");
  }
  void* stream = nullptr;
  if (!so->createStream(&stream).isOk()) check(TETHER_ERR_INTERNAL, "createStream");
  const size_t maxBytes = std::max<size_t>(opts.maxSize, 8);
  int64_t* src = nullptr;
  int64_t* dest = nullptr;
  void* p = nullptr;
  check(tether_malloc_kind(w, TETHER_SEG_HOST, 64, maxBytes * static_cast<size_t>(npes), &p), "tether_malloc_kind");
  src = static_cast<int64_t*>(p);  // (reduce_scatter, alltoall: npes blocks)
  check(tether_malloc_kind(w, TETHER_SEG_HOST, 64, maxBytes * static_cast<size_t>(npes), &p), "tether_malloc_kind");
  dest = static_cast<int64_t*>(p);  // (alltoall: npes blocks)
  const tether_team_t world = tether_team_world(w);
  tb::Reporter rep(tb::collectRunInfo("coll_cpu", opts, npes), opts, me == 0);
  if (!rep.open(&error)) {
    std::fprintf(stderr, "tether_bench_coll_cpu: %s\n", error.c_str());
    return 1;
  }
  rep.printHeader("stream forms through the CPU stream emulation, device form with a CPU handle (no GPU)");
  auto sync = [&] {
    if (!so->synchronize(stream).isOk()) check(TETHER_ERR_INTERNAL, "synchronize");
  };
  tether::device::Handle dh{};
  tether::device::Team dt{};
  check(tether_device_handle_cpu(w, &dh), "tether_device_handle_cpu");
  check(tether_team_device_view(world, &dh, &dt), "tether_team_device_view");
  for (const char* op : {"bcast", "allreduce", "dev_bcast", "reduce", "reduce_last", "reduce_scatter", "alltoall"}) {
    if (!tb::wantsOp(opts, op)) continue;
    const bool device = std::string(op) == "dev_bcast";
    const bool bcast = device || std::string(op) == "bcast";
    const bool scatter = std::string(op) == "reduce_scatter", a2a = std::string(op) == "alltoall";
    const bool reduce = !scatter && std::string(op).rfind("reduce", 0) == 0;  // (the host form)
    const bool hostForm = reduce || scatter || a2a;
    const size_t blocks = scatter || a2a ? static_cast<size_t>(npes) : 1;  // src's
    const int root = std::string(op) == "reduce_last" ? npes - 1 : 0;
    const char* form = device ? " (device form, thread scope" : hostForm ? " (host form" : " (stream form";
    rep.beginTable(std::string(op) + form + ", world team, " + std::to_string(npes) + " PEs" +
                       (bcast    ? ", root 0"
                        : reduce ? ", INT64 sum to PE " + std::to_string(root)
                                 : scatter ? ", INT64 sum, size per PE"
                                 : a2a     ? ", INT64, size per block" : ", INT64 sum") +
                       (device && dt.host_run ? ", by host)" : ")"),
                   tb::TableKind::Latency);
    for (size_t bytes : tb::messageSizes(opts)) {
      const size_t count = std::max<size_t>(bytes / sizeof(int64_t), 1);
      for (size_t i = 0; i < count * blocks; ++i) src[i] = static_cast<int64_t>(i) * 3 + me;
      for (size_t i = 0; i < count; ++i) dest[i] = -1;  // (a reduce leaves the others' dest as it was)
      check(tether_barrier_all(w), "tether_barrier_all");
      std::vector<double> samples;
      const int ops = opts.iters;
      const bool ok = tb::measure(opts.warmup, opts.batches, ops, [&](int k) {
        for (int i = 0; i < k; ++i) {
          if (device) {
            tether::device::team_broadcast(dh, dt, dest, src, count * sizeof(int64_t), 0);
            continue;
          }
          if (reduce) {
            check(tether_team_reduce(world, dest, src, count, TETHER_INT64, TETHER_RED_SUM, root), op);
            continue;
          }
          if (scatter) {
            check(tether_team_reduce_scatter(world, dest, src, count, TETHER_INT64, TETHER_RED_SUM), op);
            continue;
          }
          if (a2a) {
            check(tether_team_alltoall(world, dest, src, count, TETHER_INT64), op);
            continue;
          }
          const tether_status_t s =
              bcast ? tether_team_broadcast_on_stream(world, dest, src, count, TETHER_INT64, 0, stream)
                    : tether_team_allreduce_on_stream(world, dest, src, count, TETHER_INT64, TETHER_RED_SUM, stream);
          check(s, op);
          sync();
        }
        return true;
      }, &samples);
      if (!ok) return 1;
      for (size_t i = 0; i < count * (a2a ? blocks : 1); ++i) {
        // (alltoall: element i is element me * count + i % count of PE i / count's src)
        const size_t at = a2a ? static_cast<size_t>(me) * count + i % count : scatter ? count * me + i : i;
        const int64_t base = static_cast<int64_t>(at) * 3;
        const int64_t want = bcast                    ? base
                             : a2a                  ? base + static_cast<int64_t>(i / count)
                             : reduce && me != root ? -1
                                                    : base * npes + static_cast<int64_t>(npes) * (npes - 1) / 2;
        if (dest[i] != want) {
          std::fprintf(stderr, "tether_bench_coll_cpu: PE %d: %s of %zu B: element %zu is %lld, not %lld\n",
                       me, op, bytes, i, static_cast<long long>(dest[i]), static_cast<long long>(want));
          return 1;
        }
      }
      rep.addRow(tb::makeRow(op, device ? "device-cpu" : hostForm ? "host" : "stream-cpu", "H->H",
                             count * sizeof(int64_t), static_cast<long>(ops) * opts.batches, samples, false));
    }
  }
  rep.flush();
  check(tether_barrier_all(w), "tether_barrier_all");
  check(tether_free(w, src), "tether_free");
  check(tether_free(w, dest), "tether_free");
  if (!so->destroyStream(stream).isOk()) check(TETHER_ERR_INTERNAL, "destroyStream");
  check(tether_finalize(w), "tether_finalize");
  return 0;
}
