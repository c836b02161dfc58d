// Benchmark harness shared by the programs in bench/: command line, timing, statistics, OSU-style tables and
// JSON-lines output.
//
// Contract
//  - Benchmarks are products, not tests: nothing here asserts on a time. A benchmark fails (exits non-zero) only when
//    a call fails or data arrives wrong.
//  - Every PE parses the same command line and derives the same schedule (sizes, ops per batch, batches), so PEs that
//    take part in a measurement without timing it (the target of a ping-pong, the other side of a barrier) run the
//    same number of iterations as the PE that times it.
//  - Only the reporting PE constructs an enabled Reporter; the others pass enabled = false and print nothing.
//  - Times are taken with a monotonic clock (CLOCK_MONOTONIC through std::chrono::steady_clock).
//  - Statistics are over per-batch samples: a batch runs k operations back to back and yields one sample, the batch
//    time divided by k. median, min and p90 are taken over the timed batches (warm-up batches are discarded).
//
// The harness does not depend on libtether: it knows nothing about PEs except the count it is told.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace tether_bench {

// ---- command line ------------------------------------------------------------------------------------------------

struct Options {
  size_t minSize = 8;
  size_t maxSize = size_t{64} << 20;  // 64 MiB
  int iters = 1000;                   // operations per batch for small sizes (see opsPerBatch)
  int batches = 20;                   // timed batches per row (samples for the statistics)
  int warmup = 2;                     // untimed batches before the timed ones
  int window = 64;                    // operations issued before one completion, for bandwidth rows
  size_t batchBytes = size_t{64} << 20;  // at large sizes, ops per batch shrink so a batch moves about this much
  bool quick = false;                 // smoke-test settings: few iterations, sizes up to 64 KiB unless given
  std::string jsonPath;               // "" none, "-" stdout (the table then goes to stderr), else a file
  std::vector<std::string> ops;       // --ops a,b,c: only these rows (empty: all)
  std::vector<std::string> argv;      // the exact command line
  bool help = false;
};

// Parses a byte count: decimal digits with an optional K/M/G/T suffix (powers of 2; "KiB", "KB" and "k" accepted).
bool parseSize(const std::string& text, size_t* out);

// Formats a byte count compactly: "8", "4K", "64M", "1G" (exact multiples only, else plain bytes).
std::string formatSize(size_t bytes);

// Parses the common options into *opts. Returns false with *error set on a malformed or unknown option.
// --help sets opts->help (the caller prints usage() and exits 0).
bool parseOptions(int argc, char** argv, Options* opts, std::string* error);

// Usage text for the common options; `extra` is appended verbatim (benchmark-specific notes).
std::string usage(const char* prog, const std::string& extra);

// Whether the row named `op` was selected by --ops (always true when --ops was not given).
bool wantsOp(const Options& opts, const std::string& op);

// Sizes from minSize to maxSize: minSize, then the powers of two above it, then maxSize when it is not one of them.
std::vector<size_t> messageSizes(const Options& opts);

// Operations per batch at `bytes`: opts.iters, reduced so one batch moves about opts.batchBytes, at least 1.
int opsPerBatch(const Options& opts, size_t bytes);

// Comma-separated list, empty items dropped ("a,,b" -> {"a", "b"}).
std::vector<std::string> splitList(const std::string& s);

// ---- traffic patterns (--pattern; parsed by the programs that support it, see bench/README.md "Patterns") --------
//  pair:      PE 0 -> PE 1 (the two-PE rows; PEs above 1 idle)
//  ring:      every PE at once to next = (me + 1) % n; data arrives from prev = (me + n - 1) % n
//  all-pairs: every PE at once to all n - 1 others per iteration, in the order (me + 1 + j) % n, j = 0 .. n - 2
enum class Traffic { Pair, Ring, AllPairs };

// Header-only (inline), so CUDA programs that do not link the harness library can use them too.
inline const char* patternName(Traffic p) {  // "pair", "ring", "all-pairs"
  return p == Traffic::Pair ? "pair" : (p == Traffic::Ring ? "ring" : "all-pairs");
}
inline bool parsePattern(const std::string& text, Traffic* out) {
  for (Traffic p : {Traffic::Pair, Traffic::Ring, Traffic::AllPairs}) {
    if (text == patternName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}
// Takes every "NAME V" / "NAME=V" out of args (args[0] is never looked at), calling take(V) for each in order; false
// with *error when a value is missing ("NAME needs a value" + hint) or take returns false (it sets *error).
template <typename Take>
inline bool takeValueOption(std::vector<char*>* args, const std::string& name, const char* hint, std::string* error,
                            const Take& take) {
  std::vector<char*> kept;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string a = (*args)[i];
    if (i == 0 || (a != name && a.rfind(name + "=", 0) != 0)) {
      kept.push_back((*args)[i]);
      continue;
    }
    std::string v;
    if (a == name) {
      if (i + 1 >= args->size()) {
        *error = name + " needs a value" + hint;
        return false;
      }
      v = (*args)[++i];
    } else {
      v = a.substr(name.size() + 1);
    }
    if (!take(v)) return false;
  }
  *args = kept;
  return true;
}
// Takes "--pattern X" / "--pattern=X" out of args (args[0] is never looked at); false with *error on a missing or
// unknown value. *out is left alone when the option is absent.
inline bool takePatternOption(std::vector<char*>* args, Traffic* out, std::string* error) {
  return takeValueOption(args, "--pattern", ": pair, ring or all-pairs", error, [&](const std::string& v) {
    if (parsePattern(v, out)) return true;
    *error = "--pattern '" + v + "': not pair, ring or all-pairs";
    return false;
  });
}
// The j-th target of PE me (j in [0, patternFanout)): pair -> 1 - me, ring -> next, all-pairs -> (me + 1 + j) % n.
inline int patternTarget(Traffic p, int me, int j, int npes) {
  if (p == Traffic::Pair) return 1 - me;
  if (p == Traffic::Ring) return (me + 1) % npes;
  return (me + 1 + j) % npes;
}
// Targets per iteration: n - 1 for all-pairs, else 1.
inline int patternFanout(Traffic p, int npes) { return p == Traffic::AllPairs ? npes - 1 : 1; }
// " [ring, 4 PEs]": the suffix of a table title naming the pattern and the PE count.
inline std::string patternTitle(Traffic p, int npes) {
  return std::string(" [") + patternName(p) + ", " + std::to_string(npes) + " PEs]";
}

// ---- timing and statistics ---------------------------------------------------------------------------------------

// Seconds on a monotonic clock from an arbitrary origin.
double nowSeconds();

// The first of the environment variables `names` set to a number > 0, else `fallback` (seconds, counts).
double envPositive(std::initializer_list<const char*> names, double fallback);

// Stall guard for benchmarks whose waits cannot time out by themselves (stream memop waits, NVSHMEM's waits,
// blocking RMA): a thread that, once an armed deadline has passed (plus `grace` seconds), calls onStall (which
// prints what the program waits on; it runs on the watchdog's thread and must not block for long), flushes stdout
// and stderr and ends the process with exit status 3 (tetherrun then stops the other PEs). Disarmed at start.
class Watchdog {
 public:
  explicit Watchdog(std::function<void()> onStall, double grace = 0);
  ~Watchdog();  // stops the thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void arm(double seconds);  // deadline = now + seconds
  void disarm();

 private:
  struct State;
  State* st_;
};

struct Stats {
  double median = 0;
  double min = 0;
  double max = 0;
  double p90 = 0;  // 90th percentile (linear interpolation between order statistics)
  double mean = 0;
  size_t n = 0;
};

Stats computeStats(std::vector<double> samples);

// Runs `warmup` untimed batches then `batches` timed ones, each a call batch(ops). batch returns false on failure
// (it has reported the error); measure then returns false. On success *perOpUs holds one sample per timed batch:
// the batch's time divided by ops, in microseconds.
bool measure(int warmup, int batches, int ops, const std::function<bool(int ops)>& batch,
             std::vector<double>* perOpUs);

// ---- machine description -----------------------------------------------------------------------------------------

struct RunInfo {
  std::string bench;        // benchmark name ("put_get")
  std::string host;         // hostname
  std::string cpu;          // CPU model from /proc/cpuinfo ("unknown" when not found)
  int cpus = 0;             // online logical CPUs
  std::string date;         // ISO 8601 UTC at start, e.g. 2026-11-22T10:00:00Z
  std::string commandLine;  // argv joined, shell-quoted where needed
  int pes = 1;
  std::string pattern;      // --pattern of a patterned run ("ring", "all-pairs"); "" for pair runs (not printed)
};

RunInfo collectRunInfo(const std::string& bench, const Options& opts, int pes);

// ---- output --------------------------------------------------------------------------------------------------------

// One result row. lat_us_* are per operation; bwGBps (decimal GB/s, 1e9 bytes/s) is negative where it does not
// apply (latency-only rows).
struct Row {
  std::string op;                // "put", "get_nbi", "barrier_all", ...
  std::string model = "host";    // host | stream | device
  std::string path;              // self | shm | p2p | proxy | ...
  std::string kinds;             // segment kinds source->destination, e.g. "H->H"; "" where none
  size_t bytes = 0;
  long iters = 0;                // timed operations (ops per batch x batches)
  Stats latUs;
  double bwGBps = -1;
  // Patterned rows (ring, all-pairs; see Traffic): the JSON line gets "pattern" and "npes"; pair rows leave pattern
  // empty and their JSON lines are as before. aggGBps >= 0 (bandwidth rows of a pattern): the aggregate over all PEs,
  // a table column in TableKind::AggregateBandwidth tables and "bw_GBps_aggregate" in the JSON.
  std::string pattern;
  int npes = 0;
  double aggGBps = -1;
};

// A row from per-operation latency samples (µs); with bandwidth, bwGBps = bytes / median latency.
Row makeRow(const std::string& op, const std::string& path, const std::string& kinds, size_t bytes, long iters,
            const std::vector<double>& samples, bool bandwidth);

// AggregateBandwidth: Bandwidth plus an Aggregate(GB/s) column (Row::aggGBps).
enum class TableKind { Latency, Bandwidth, AggregateBandwidth };

class Reporter {
 public:
  // enabled = false: prints nothing and writes no JSON (non-reporting PEs).
  Reporter(RunInfo info, const Options& opts, bool enabled);
  ~Reporter();
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  // Opens the JSON destination; false with *error set when the file cannot be opened.
  bool open(std::string* error);
  // The run header: benchmark, machine, date, command line, PE count, settings; in the JSON, one first line
  // {"record":"run", ...} with the same facts (rows carry "record":"row").
  void printHeader(const std::string& notes);
  // Starts a table: a title line ("# put: ...") and the column header for the kind.
  void beginTable(const std::string& title, TableKind kind);
  // Prints one table line and writes one JSON line.
  void addRow(const Row& row);
  void flush();

  // Where the tables go (stdout, or stderr when the JSON goes to stdout).
  FILE* tableStream() const { return table_; }

 private:
  RunInfo info_;
  Options opts_;
  bool enabled_;
  FILE* table_ = stdout;
  FILE* json_ = nullptr;
  bool ownJson_ = false;
  TableKind kind_ = TableKind::Latency;
};

// JSON string escaping (quotes included).
std::string jsonString(const std::string& s);
// The run facts as JSON members, each with a leading comma: ,"bench":...,"host","cpu","cpus","date","command","pes"
// (a run record is "{\"record\":\"run\"" + runFields(info) + ... + "}").
std::string runFields(const RunInfo& info);

}  // namespace tether_bench
