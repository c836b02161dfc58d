// tether_bench_stream_issue: tether's own host cost per stream-ordered call (issue #6), without any driver: the
// World's stream-op layer is replaced by one that accepts every operation and does nothing (the internal test hook
// useStreamOpsForTesting; this program links tether_static). What it measures is the argument checks, the route
// lookup and the one-op plan that every *_on_stream call compiles and runs; on a GPU the driver's submission comes on
// top (bench/results/h200x2/stream.txt: issue_us). One PE, HOST segment, CPU only.
// Usage: tether_bench_stream_issue [--iters N] [--json FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>

#include "core/stream_ops.h"
#include "harness.h"
#include "tether/tether.h"

namespace {

using tether::Status;

// Accepts everything, does nothing (the host cost above the stream-op layer is what remains).
class NullStreamOps : public tether::StreamOps {
 public:
  const char* name() const override { return "null"; }
  bool gpuAddresses() const override { return false; }
  bool hostAtomics() const override { return true; }
  Status copy(void*, void*, const void*, size_t) override { return Status::ok(); }
  Status memOps(void*, const tether::StreamMemOp*, size_t) override { return Status::ok(); }
  Status store(void*, void*, uint64_t, unsigned) override { return Status::ok(); }
  Status signal(void*, uint64_t*, uint64_t, tether_signal_op_t) override { return Status::ok(); }
  Status amo(void*, void*, const tether::AmoArgs&, void*) override { return Status::ok(); }
  Status waitCmp(void*, const uint64_t*, tether_cmp_t, uint64_t, bool, uint64_t) override { return Status::ok(); }
  Status increment(void*, uint64_t* const*, size_t) override { return Status::ok(); }
  Status waitReach(void*, const uint64_t* const*, const uint64_t* const*, size_t, uint64_t) override {
    return Status::ok();
  }
  Status proxy(void*, const tether_device_handle_t&, const tether::Op&) override { return Status::ok(); }
  Status coll(void*, const tether_device_handle_t&, const tether_device_team_t&, const tether::StreamCollCall&) override {
    return Status::ok();
  }
  Status follow(void*, void*) override { return Status::ok(); }
  Status hostCall(void*, std::function<void()>) override { return Status::ok(); }
  Status createStream(void** out) override {
    *out = this;
    return Status::ok();
  }
  Status destroyStream(void*) override { return Status::ok(); }
  Status synchronize(void*) override { return Status::ok(); }
};

}  // namespace

int main(int argc, char** argv) {
  long iters = 200000;
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--iters N] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  if (iters < 1) iters = 1;
  tether_t w = nullptr;
  if (tether_init(&w) != TETHER_SUCCESS) {
    std::fprintf(stderr, "tether_init: %s\n", tether_last_error());
    return 2;
  }
  auto ops = std::make_unique<NullStreamOps>();
  void* stream = ops.get();
  if (!tether::useStreamOpsForTesting(w, std::move(ops)).isOk()) return 2;
  void* heap = nullptr;
  if (tether_malloc_kind(w, TETHER_SEG_HOST, 64, 4096, &heap) != TETHER_SUCCESS) return 2;
  auto* dest = static_cast<char*>(heap);
  auto* sig = static_cast<uint64_t*>(heap) + 64;
  char src[8] = {};
  FILE* out = json ? std::fopen(json, "w") : nullptr;
  if (json && !out) {
    std::perror(json);
    return 2;
  }
  tether_bench::Options runOpts;
  runOpts.argv.assign(argv, argv + argc);
  const tether_bench::RunInfo info = tether_bench::collectRunInfo("stream_issue", runOpts, 1);
  if (out) std::fprintf(out, "{\"record\":\"run\"%s,\"iters\":%ld}\n", tether_bench::runFields(info).c_str(), iters);
  std::printf("# tether_bench_stream_issue: tether's host cost per *_on_stream call, null stream-op layer, 1 PE, "
              "HOST segment; %ld calls after 1000 warm-up\n# machine: %s, cpu: %s (%d logical CPUs); date: %s; "
              "command: %s\n%-30s %12s\n", iters, info.host.c_str(), info.cpu.c_str(), info.cpus, info.date.c_str(),
              info.commandLine.c_str(), "call", "us per call");
  bool ok = true;
  auto row = [&](const char* what, const std::function<tether_status_t()>& call) {
    for (int i = 0; i < 1000; ++i) ok = ok && call() == TETHER_SUCCESS;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; ++i) ok = ok && call() == TETHER_SUCCESS;
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / static_cast<double>(iters);
    std::printf("%-30s %12.3f\n", what, us);
    if (out) std::fprintf(out, "{\"record\":\"row\",\"bench\":\"stream_issue\",\"op\":\"%s\",\"us\":%.4f}\n", what, us);
  };
  row("putmem_on_stream 8 B", [&] { return tether_putmem_on_stream(w, dest, src, 8, 0, stream); });
  row("quiet_on_stream", [&] { return tether_quiet_on_stream(w, stream); });
  row("putmem_signal_on_stream 8 B",
      [&] { return tether_putmem_signal_on_stream(w, dest, src, 8, sig, 1, TETHER_SIGNAL_SET, 0, stream); });
  row("signal_wait_until_on_stream", [&] { return tether_signal_wait_until_on_stream(w, sig, TETHER_CMP_GE, 0, stream); });
  row("barrier_all_on_stream", [&] { return tether_barrier_all_on_stream(w, stream); });
  if (out) std::fclose(out);
  if (!ok) std::fprintf(stderr, "a call failed: %s\n", tether_last_error());
  tether_free(w, heap);
  tether_finalize(w);
  return ok ? 0 : 1;
}
