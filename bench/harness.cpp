#include "harness.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

namespace tether_bench {

// ---- command line ------------------------------------------------------------------------------------------------

bool parseSize(const std::string& text, size_t* out) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  size_t pos = 0;
  unsigned long long value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    unsigned digit = static_cast<unsigned>(text[pos] - '0');
    if (value > (std::numeric_limits<unsigned long long>::max() - digit) / 10) return false;
    value = value * 10 + digit;
    ++pos;
  }
  std::string suffix = text.substr(pos);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else {
    switch (suffix[0]) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: return false;
    }
    std::string rest = suffix.substr(1);
    if (!(rest.empty() || rest == "B" || rest == "IB")) return false;
  }
  if (shift > 0 && value > (std::numeric_limits<unsigned long long>::max() >> shift)) return false;
  value <<= shift;
  if (value > std::numeric_limits<size_t>::max()) return false;
  *out = static_cast<size_t>(value);
  return true;
}

std::string formatSize(size_t bytes) {
  static const char* const units[] = {"T", "G", "M", "K"};
  static const unsigned shifts[] = {40, 30, 20, 10};
  for (int i = 0; i < 4; ++i) {
    size_t unit = size_t{1} << shifts[i];
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + units[i];
  }
  return std::to_string(bytes);
}

namespace {

bool parseInt(const std::string& text, int minValue, int* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < minValue || v > std::numeric_limits<int>::max())
    return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

bool parseOptions(int argc, char** argv, Options* opts, std::string* error) {
  Options o;
  for (int i = 0; i < argc; ++i) o.argv.emplace_back(argv[i]);
  bool gotMax = false, gotIters = false, gotBatches = false, gotWarmup = false, gotWindow = false,
       gotBatchBytes = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string name = arg, value;
    bool inlineValue = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        inlineValue = true;
      }
    }
    auto takeValue = [&](std::string* v) {
      if (inlineValue) {
        *v = value;
        return true;
      }
      if (i + 1 >= argc) {
        *error = name + " needs a value";
        return false;
      }
      *v = argv[++i];
      return true;
    };
    std::string v;
    if (name == "--help" || name == "-h") {
      o.help = true;
    } else if (name == "--quick") {
      o.quick = true;
    } else if (name == "--min-size" || name == "--max-size" || name == "--batch-bytes") {
      if (!takeValue(&v)) return false;
      size_t s = 0;
      if (!parseSize(v, &s) || s == 0) {
        *error = name + " '" + v + "': not a positive size (use e.g. 8, 64K, 16M, 1G)";
        return false;
      }
      if (name == "--min-size") {
        o.minSize = s;
      } else if (name == "--max-size") {
        o.maxSize = s;
        gotMax = true;
      } else {
        o.batchBytes = s;
        gotBatchBytes = true;
      }
    } else if (name == "--iters" || name == "--batches" || name == "--warmup" || name == "--window") {
      if (!takeValue(&v)) return false;
      int n = 0;
      int minValue = name == "--warmup" ? 0 : 1;
      if (!parseInt(v, minValue, &n)) {
        *error = name + " '" + v + "': not an integer >= " + std::to_string(minValue);
        return false;
      }
      if (name == "--iters") {
        o.iters = n;
        gotIters = true;
      } else if (name == "--batches") {
        o.batches = n;
        gotBatches = true;
      } else if (name == "--warmup") {
        o.warmup = n;
        gotWarmup = true;
      } else {
        o.window = n;
        gotWindow = true;
      }
    } else if (name == "--json") {
      if (!takeValue(&v)) return false;
      if (v.empty()) {
        *error = "--json needs a file name or '-'";
        return false;
      }
      o.jsonPath = v;
    } else if (name == "--ops") {
      if (!takeValue(&v)) return false;
      o.ops = splitList(v);
    } else {
      *error = "unknown option '" + arg + "' (see --help)";
      return false;
    }
  }
  if (o.quick) {
    if (!gotMax) o.maxSize = size_t{64} << 10;
    if (!gotIters) o.iters = 20;
    if (!gotBatches) o.batches = 3;
    if (!gotWarmup) o.warmup = 1;
    if (!gotWindow) o.window = 8;
    if (!gotBatchBytes) o.batchBytes = size_t{1} << 20;
  }
  if (o.minSize > o.maxSize) {
    *error = "--min-size " + formatSize(o.minSize) + " is larger than --max-size " + formatSize(o.maxSize);
    return false;
  }
  *opts = std::move(o);
  return true;
}

std::string usage(const char* prog, const std::string& extra) {
  std::string u = std::string("usage: tetherrun -n 2 ") + prog + " [options]\n" +
                  "  --min-size S     smallest message (default 8; K/M/G suffixes, powers of 2)\n"
                  "  --max-size S     largest message (default 64M; symmetric buffers are allocated this big)\n"
                  "  --iters N        operations per batch at small sizes (default 1000)\n"
                  "  --batch-bytes S  at large sizes, fewer operations per batch so a batch moves about S (default "
                  "64M)\n"
                  "  --batches N      timed batches per row; statistics are over batches (default 20)\n"
                  "  --warmup N       untimed batches before the timed ones (default 2)\n"
                  "  --window N       operations in flight before one quiet, bandwidth rows (default 64)\n"
                  "  --ops A,B,...    only these rows\n"
                  "  --json FILE      also write JSON lines to FILE ('-': to stdout, the table then goes to stderr)\n"
                  "  --quick          smoke-test settings: iters 20, batches 3, warm-up 1, window 8, max-size 64K\n"
                  "                   (each unless given explicitly)\n"
                  "  --help           this text\n";
  return u + extra;
}

bool wantsOp(const Options& opts, const std::string& op) {
  if (opts.ops.empty()) return true;
  return std::find(opts.ops.begin(), opts.ops.end(), op) != opts.ops.end();
}

std::vector<size_t> messageSizes(const Options& opts) {
  std::vector<size_t> sizes;
  if (opts.minSize == 0 || opts.minSize > opts.maxSize) return sizes;
  sizes.push_back(opts.minSize);
  size_t p = 1;
  while (p <= opts.minSize && p <= std::numeric_limits<size_t>::max() / 2) p <<= 1;
  while (p > opts.minSize && p <= opts.maxSize) {
    sizes.push_back(p);
    if (p > std::numeric_limits<size_t>::max() / 2) break;
    p <<= 1;
  }
  if (sizes.back() != opts.maxSize) sizes.push_back(opts.maxSize);
  return sizes;
}

int opsPerBatch(const Options& opts, size_t bytes) {
  if (bytes == 0) return opts.iters;
  size_t byBytes = opts.batchBytes / bytes;
  size_t ops = std::min(static_cast<size_t>(opts.iters), byBytes);
  return static_cast<int>(std::max<size_t>(1, ops));
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// ---- timing and statistics ---------------------------------------------------------------------------------------

double nowSeconds() {
  static_assert(std::chrono::steady_clock::is_steady, "steady_clock must be monotonic");
  auto t = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration<double>(t).count();
}

double envPositive(std::initializer_list<const char*> names, double fallback) {
  for (const char* name : names) {
    const char* e = std::getenv(name);
    const double v = e ? std::atof(e) : 0;
    if (v > 0) return v;
  }
  return fallback;
}

struct Watchdog::State {
  std::function<void()> onStall;
  double grace = 0;
  std::mutex mu;
  std::condition_variable cv;
  double deadline = 0;  // nowSeconds(); 0: disarmed
  bool stop = false;
  std::thread thread;
};

Watchdog::Watchdog(std::function<void()> onStall, double grace) : st_(new State) {
  st_->onStall = std::move(onStall);
  st_->grace = grace;
  State* st = st_;
  st_->thread = std::thread([st] {
    std::unique_lock<std::mutex> lock(st->mu);
    while (!st->stop) {
      st->cv.wait_for(lock, std::chrono::milliseconds(200));
      if (st->stop || st->deadline == 0 || nowSeconds() < st->deadline + st->grace) continue;
      lock.unlock();
      if (st->onStall) st->onStall();
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(3);
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    st_->stop = true;
  }
  st_->cv.notify_all();
  st_->thread.join();
  delete st_;
}

void Watchdog::arm(double seconds) {
  std::lock_guard<std::mutex> lock(st_->mu);
  st_->deadline = nowSeconds() + seconds;
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(st_->mu);
  st_->deadline = 0;
}

Stats computeStats(std::vector<double> samples) {
  Stats s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  auto quantile = [&](double q) {
    double pos = q * static_cast<double>(samples.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, samples.size() - 1);
    double frac = pos - static_cast<double>(lo);
    return samples[lo] + (samples[hi] - samples[lo]) * frac;
  };
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile(0.5);
  s.p90 = quantile(0.9);
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean = sum / static_cast<double>(samples.size());
  return s;
}

bool measure(int warmup, int batches, int ops, const std::function<bool(int)>& batch, std::vector<double>* perOpUs) {
  perOpUs->clear();
  perOpUs->reserve(static_cast<size_t>(batches));
  for (int b = 0; b < warmup; ++b) {
    if (!batch(ops)) return false;
  }
  for (int b = 0; b < batches; ++b) {
    double t0 = nowSeconds();
    if (!batch(ops)) return false;
    double t1 = nowSeconds();
    perOpUs->push_back((t1 - t0) * 1e6 / ops);
  }
  return true;
}

// ---- machine description -----------------------------------------------------------------------------------------

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  // x86: "model name"; some ARM kernels: "Hardware" or "Model"; POWER: "cpu".
  static const char* const keys[] = {"model name", "Hardware", "Model", "cpu model", "cpu"};
  std::string found[5];
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    for (int k = 0; k < 5; ++k) {
      if (found[k].empty() && key == keys[k]) found[k] = trim(line.substr(colon + 1));
    }
  }
  for (const std::string& f : found) {
    if (!f.empty()) return f;
  }
  return "unknown";
}

std::string shellQuote(const std::string& a) {
  if (a.empty()) return "''";
  bool plain = true;
  for (char c : a) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./=:,+-@%", c) != nullptr)) {
      plain = false;
      break;
    }
  }
  if (plain) return a;
  std::string q = "'";
  for (char c : a) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

}  // namespace

RunInfo collectRunInfo(const std::string& bench, const Options& opts, int pes) {
  RunInfo info;
  info.bench = bench;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0)
    info.host = host;
  else
    info.host = "unknown";
  info.cpu = cpuModel();
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  info.cpus = n > 0 ? static_cast<int>(n) : 0;
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
  info.date = date;
  for (size_t i = 0; i < opts.argv.size(); ++i) {
    if (i) info.commandLine += ' ';
    info.commandLine += shellQuote(opts.argv[i]);
  }
  info.pes = pes;
  return info;
}

// ---- output --------------------------------------------------------------------------------------------------------

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string runFields(const RunInfo& info) {
  return ",\"bench\":" + jsonString(info.bench) + ",\"host\":" + jsonString(info.host) + ",\"cpu\":" +
         jsonString(info.cpu) + ",\"cpus\":" + std::to_string(info.cpus) + ",\"date\":" + jsonString(info.date) +
         ",\"command\":" + jsonString(info.commandLine) + ",\"pes\":" + std::to_string(info.pes);
}

namespace {

std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

constexpr int kSizeWidth = 12;

}  // namespace

Reporter::Reporter(RunInfo info, const Options& opts, bool enabled)
    : info_(std::move(info)), opts_(opts), enabled_(enabled) {}

Reporter::~Reporter() {
  flush();
  if (ownJson_ && json_ != nullptr) std::fclose(json_);
}

bool Reporter::open(std::string* error) {
  if (!enabled_ || opts_.jsonPath.empty()) return true;
  if (opts_.jsonPath == "-") {
    json_ = stdout;
    table_ = stderr;
    return true;
  }
  json_ = std::fopen(opts_.jsonPath.c_str(), "w");
  if (json_ == nullptr) {
    *error = "cannot open --json file '" + opts_.jsonPath + "': " + std::strerror(errno);
    return false;
  }
  ownJson_ = true;
  return true;
}

void Reporter::printHeader(const std::string& notes) {
  if (!enabled_) return;
  FILE* f = table_;
  std::fprintf(f, "# tether benchmark: %s\n", info_.bench.c_str());
  std::fprintf(f, "# machine: %s, cpu: %s (%d logical CPUs)\n", info_.host.c_str(), info_.cpu.c_str(), info_.cpus);
  std::fprintf(f, "# date: %s\n", info_.date.c_str());
  std::fprintf(f, "# command: %s\n", info_.commandLine.c_str());
  std::fprintf(f, "# PEs: %d\n", info_.pes);
  if (!info_.pattern.empty()) std::fprintf(f, "# pattern: %s\n", info_.pattern.c_str());
  std::fprintf(f,
               "# settings: sizes %s..%s, ops/batch = min(%d, %s / size) and >= 1, batches %d, warm-up batches %d, "
               "window %d\n",
               formatSize(opts_.minSize).c_str(), formatSize(opts_.maxSize).c_str(), opts_.iters,
               formatSize(opts_.batchBytes).c_str(), opts_.batches, opts_.warmup, opts_.window);
  std::fprintf(f,
               "# statistics: per-op time = batch time / ops; median, min, p90 over the timed batches; "
               "GB/s = 1e9 bytes/s\n");
  if (!notes.empty()) {
    size_t start = 0;
    while (start < notes.size()) {
      size_t nl = notes.find('\n', start);
      if (nl == std::string::npos) nl = notes.size();
      std::fprintf(f, "# %s\n", notes.substr(start, nl - start).c_str());
      start = nl + 1;
    }
  }
  std::fflush(f);
  if (json_ != nullptr) {
    std::string line = "{\"record\":\"run\"" + runFields(info_);
    line += ",\"min_size\":" + std::to_string(opts_.minSize);
    line += ",\"max_size\":" + std::to_string(opts_.maxSize);
    line += ",\"ops_per_batch\":" + std::to_string(opts_.iters);
    line += ",\"batch_bytes\":" + std::to_string(opts_.batchBytes);
    line += ",\"batches\":" + std::to_string(opts_.batches);
    line += ",\"warmup_batches\":" + std::to_string(opts_.warmup);
    line += ",\"window\":" + std::to_string(opts_.window);
    if (!info_.pattern.empty())
      line += ",\"pattern\":" + jsonString(info_.pattern) + ",\"npes\":" + std::to_string(info_.pes);
    line += ",\"notes\":" + jsonString(notes);
    line += "}\n";
    std::fputs(line.c_str(), json_);
    std::fflush(json_);
  }
}

void Reporter::beginTable(const std::string& title, TableKind kind) {
  kind_ = kind;
  if (!enabled_) return;
  FILE* f = table_;
  std::fprintf(f, "\n# %s\n", title.c_str());
  if (kind == TableKind::Latency) {
    std::fprintf(f, "%-*s%16s%12s%12s%12s\n", kSizeWidth, "# Size", "Latency(us)", "Min(us)", "P90(us)", "Iters");
  } else if (kind == TableKind::Bandwidth) {
    std::fprintf(f, "%-*s%16s%12s%14s%12s\n", kSizeWidth, "# Size", "Bandwidth(GB/s)", "Peak(GB/s)",
                 "Latency(us)", "Iters");
  } else {
    std::fprintf(f, "%-*s%16s%12s%14s%12s%17s\n", kSizeWidth, "# Size", "Bandwidth(GB/s)", "Peak(GB/s)",
                 "Latency(us)", "Iters", "Aggregate(GB/s)");
  }
  std::fflush(f);
}

void Reporter::addRow(const Row& row) {
  if (!enabled_) return;
  FILE* f = table_;
  if (kind_ == TableKind::Latency) {
    std::fprintf(f, "%-*zu%16.3f%12.3f%12.3f%12ld\n", kSizeWidth, row.bytes, row.latUs.median, row.latUs.min,
                 row.latUs.p90, row.iters);
  } else {
    double peak = row.latUs.min > 0 ? static_cast<double>(row.bytes) / (row.latUs.min * 1e3) : 0.0;
    // Patterned rows may move more than Size per operation (all-pairs: n - 1 messages): Peak scales their bandwidth.
    if (kind_ == TableKind::AggregateBandwidth && row.latUs.min > 0) peak = row.bwGBps * row.latUs.median / row.latUs.min;
    std::fprintf(f, "%-*zu%16.2f%12.2f%14.3f%12ld", kSizeWidth, row.bytes, row.bwGBps, peak, row.latUs.median,
                 row.iters);
    if (kind_ == TableKind::AggregateBandwidth) std::fprintf(f, "%17.2f", row.aggGBps);
    std::fprintf(f, "\n");
  }
  std::fflush(f);
  if (json_ == nullptr) return;
  std::string line = "{\"record\":\"row\"";
  line += ",\"bench\":" + jsonString(info_.bench);
  line += ",\"op\":" + jsonString(row.op);
  line += ",\"model\":" + jsonString(row.model);
  line += ",\"path\":" + jsonString(row.path);
  line += ",\"kinds\":" + jsonString(row.kinds);
  line += ",\"bytes\":" + std::to_string(row.bytes);
  line += ",\"iters\":" + std::to_string(row.iters);
  line += ",\"batches\":" + std::to_string(row.latUs.n);
  line += ",\"lat_us_median\":" + jsonNumber(row.latUs.median);
  line += ",\"lat_us_min\":" + jsonNumber(row.latUs.min);
  line += ",\"lat_us_p90\":" + jsonNumber(row.latUs.p90);
  line += ",\"bw_GBps\":" + (row.bwGBps >= 0 ? jsonNumber(row.bwGBps) : std::string("null"));
  line += ",\"pes\":" + std::to_string(info_.pes);
  if (!row.pattern.empty()) {
    line += ",\"pattern\":" + jsonString(row.pattern) + ",\"npes\":" + std::to_string(row.npes);
    if (row.aggGBps >= 0) line += ",\"bw_GBps_aggregate\":" + jsonNumber(row.aggGBps);
  }
  line += ",\"host\":" + jsonString(info_.host);
  line += ",\"date\":" + jsonString(info_.date);
  line += "}\n";
  std::fputs(line.c_str(), json_);
  std::fflush(json_);
}

void Reporter::flush() {
  if (!enabled_) return;
  std::fflush(table_);
  if (json_ != nullptr) std::fflush(json_);
}

Row makeRow(const std::string& op, const std::string& path, const std::string& kinds, size_t bytes, long iters,
            const std::vector<double>& samples, bool bandwidth) {
  Row row;
  row.op = op;
  row.path = path;
  row.kinds = kinds;
  row.bytes = bytes;
  row.iters = iters;
  row.latUs = computeStats(samples);
  if (bandwidth && row.latUs.median > 0) row.bwGBps = static_cast<double>(bytes) / (row.latUs.median * 1e3);
  return row;
}

}  // namespace tether_bench
