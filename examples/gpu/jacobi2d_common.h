// The parts of the 2-D Jacobi example (jacobi2d.cu) that do not touch a GPU: the process grid and block
// decomposition, the halo table (what each PE sends to and receives from which neighbour, with which tag, from and into
// which cells), the initial and boundary values, the stencil, the serial reference and the result check. Plain C++,
// so the same code is also compiled by jacobi2d_cpu.cpp, which runs the halo exchange in host memory under
// tetherrun on machines without a GPU (docs/msg.md "Applications").
//
// The problem. The global grid has (n + 2) x (n + 2) cells: an n x n interior and a fixed one-cell boundary ring.
// Global cell (gy, gx), 0 <= gy, gx <= n + 1, starts at initialValue(gy, gx, n). One Jacobi iteration replaces every
// interior cell by stencil(up, down, left, right) of the previous iterate; boundary cells never change.
//
// The decomposition. PEs form a px x py grid (px columns of PEs along x, py rows along y), PE = ry * px + rx. PE
// (rx, ry) owns the interior rows [y0, y0 + ly) and columns [x0, x0 + lx) (0-based in interior coordinates; the
// first n % py rows of PEs get one row more, likewise along x). Its field is (ly + 2) x (lx + 2) doubles, row-major,
// pitch lx + 2: local (r, c) with 1 <= r <= ly, 1 <= c <= lx is its own cell, row 0 / ly + 1 and column 0 / lx + 1 its
// halo. A halo cell facing a neighbour PE is received every iteration; one on the global boundary holds the boundary
// value for good. Corners are never read (5-point stencil).
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tether/datatype.h"
#include "tether/msg.h"

#if defined(__CUDACC__)
#define J2D_HD __host__ __device__
#else
#define J2D_HD
#endif

namespace j2d {

// The update of one cell. The operations and their order are fixed (no contraction is possible: three additions
// and a multiplication by a power of two), so the GPU and the host serial reference give the same bits.
J2D_HD inline double stencil(double up, double down, double left, double right) {
  return ((up + down) + (left + right)) * 0.25;
}

// Global cell (gy, gx) at the start, interior and boundary alike: a smooth field plus a hot top edge, so that the
// halo values differ from cell to cell and from iteration to iteration.
inline double initialValue(int gy, int gx, int n) {
  if (gy == 0) return 1.0;
  const double y = static_cast<double>(gy) / (n + 1), x = static_cast<double>(gx) / (n + 1);
  return 0.5 * x * (1.0 - y) + 0.25 * std::sin(7.0 * x + 3.0 * y);
}

// Directions, as seen by the PE that sends. A message to the neighbour in direction d carries tag d; the receive
// from the neighbour in direction d expects opposite(d) (that neighbour sent towards us). Distinct tags per
// direction keep the four streams apart even where two directions lead to one PE (e.g. a periodic variant).
enum Dir { kUp = 0, kDown = 1, kLeft = 2, kRight = 3, kDirs = 4 };
inline int opposite(int d) { return d ^ 1; }
inline const char* dirName(int d) {
  static const char* const names[kDirs] = {"up", "down", "left", "right"};
  return names[d];
}

struct Span {
  int begin, count;
};
// Part idx of [0, n) cut into `parts` pieces whose sizes differ by at most one (the larger ones first).
inline Span split(int n, int parts, int idx) {
  const int base = n / parts, extra = n % parts;
  return Span{idx * base + (idx < extra ? idx : extra), base + (idx < extra ? 1 : 0)};
}

// px x py = npes with py the largest divisor of npes not above its square root: 1x1, 2x1, 3x1, 2x2, 3x2, 4x2, ...
// px >= py, so 2 PEs split along x and exchange the strided column halo; 4 PEs exchange rows and columns.
inline void chooseGrid(int npes, int* px, int* py) {
  int best = 1;
  for (int d = 1; d * d <= npes; ++d)
    if (npes % d == 0) best = d;
  *py = best;
  *px = npes / best;
}

struct Decomp {
  int n = 0, px = 1, py = 1, rx = 0, ry = 0;
  int x0 = 0, y0 = 0, lx = 0, ly = 0;  // owned interior block: rows [y0, y0 + ly), columns [x0, x0 + lx)
  int neighbour[kDirs] = {-1, -1, -1, -1};
  size_t pitch() const { return static_cast<size_t>(lx) + 2; }
  size_t cells() const { return pitch() * (static_cast<size_t>(ly) + 2); }
  size_t at(int r, int c) const { return static_cast<size_t>(r) * pitch() + static_cast<size_t>(c); }
};

// PE pe's block. Requires n >= the larger of px and py (every PE owns at least one row and one column).
inline Decomp decompose(int n, int npes, int pe) {
  Decomp d;
  d.n = n;
  chooseGrid(npes, &d.px, &d.py);
  d.rx = pe % d.px;
  d.ry = pe / d.px;
  const Span xs = split(n, d.px, d.rx), ys = split(n, d.py, d.ry);
  d.x0 = xs.begin;
  d.lx = xs.count;
  d.y0 = ys.begin;
  d.ly = ys.count;
  if (d.ry > 0) d.neighbour[kUp] = pe - d.px;
  if (d.ry < d.py - 1) d.neighbour[kDown] = pe + d.px;
  if (d.rx > 0) d.neighbour[kLeft] = pe - 1;
  if (d.rx < d.px - 1) d.neighbour[kRight] = pe + 1;
  return d;
}

// One halo exchange with one neighbour: `count` doubles leave from the owned cells starting at sendAt and arrive in
// the halo cells starting at recvAt (field offsets). Rows are contiguous; a column (strided) is `count` cells one
// pitch apart, which the models pack into a contiguous send buffer and unpack from a contiguous receive buffer.
struct Halo {
  int dir;       // where the neighbour is
  int peer;      // its PE
  int count;     // doubles in the message
  bool strided;  // a column (pitch apart) rather than a row
  size_t sendAt, recvAt;
  size_t bytes() const { return static_cast<size_t>(count) * sizeof(double); }
  int sendTag() const { return dir; }
  int recvTag() const { return opposite(dir); }
};

// The halos of this PE, one per existing neighbour, in direction order.
inline std::vector<Halo> haloTable(const Decomp& d) {
  std::vector<Halo> t;
  const int ly = d.ly, lx = d.lx;
  if (d.neighbour[kUp] >= 0) t.push_back(Halo{kUp, d.neighbour[kUp], lx, false, d.at(1, 1), d.at(0, 1)});
  if (d.neighbour[kDown] >= 0) t.push_back(Halo{kDown, d.neighbour[kDown], lx, false, d.at(ly, 1), d.at(ly + 1, 1)});
  if (d.neighbour[kLeft] >= 0) t.push_back(Halo{kLeft, d.neighbour[kLeft], ly, true, d.at(1, 1), d.at(1, 0)});
  if (d.neighbour[kRight] >= 0)
    t.push_back(Halo{kRight, d.neighbour[kRight], ly, true, d.at(1, lx), d.at(1, lx + 1)});
  return t;
}

// The owned cells split the way the kernel model computes them: the inner cells (1 < r < ly, 1 < c < lx), which
// need no halo, and the ring of edge cells next to the halo. innerCell / ringCell map t in [0, innerCells) /
// [0, ringCells) to a cell; together they name every owned cell exactly once (also for blocks 1 or 2 cells thin).
J2D_HD inline int innerCells(int lx, int ly) { return lx > 2 && ly > 2 ? (lx - 2) * (ly - 2) : 0; }
J2D_HD inline void innerCell(int t, int lx, int* r, int* c) {
  *r = 2 + t / (lx - 2);
  *c = 2 + t % (lx - 2);
}
J2D_HD inline int ringCells(int lx, int ly) { return lx * ly - innerCells(lx, ly); }
J2D_HD inline void ringCell(int t, int lx, int ly, int* r, int* c) {
  const int edgeRows = ly == 1 ? 1 : 2;  // rows 1 and ly, full width
  if (t < edgeRows * lx) {
    *r = t < lx ? 1 : ly;
    *c = 1 + t % lx;
    return;
  }
  t -= edgeRows * lx;  // rows 2 .. ly - 1: columns 1 and lx only
  const int edgeCols = lx == 1 ? 1 : 2;
  *r = 2 + t / edgeCols;
  *c = t % edgeCols == 0 ? 1 : lx;
}

// This PE's field at the start: owned cells and every halo cell from the global initial values (the halo cells that
// face neighbours are overwritten by the first exchange; those on the global boundary keep their values).
inline std::vector<double> initialField(const Decomp& d) {
  std::vector<double> f(d.cells(), 0.0);
  for (int r = 0; r <= d.ly + 1; ++r)
    for (int c = 0; c <= d.lx + 1; ++c) f[d.at(r, c)] = initialValue(d.y0 + r, d.x0 + c, d.n);
  return f;
}

// The whole (n + 2) x (n + 2) grid after `iters` serial Jacobi iterations (row-major, pitch n + 2).
inline std::vector<double> serialJacobi(int n, int iters) {
  const size_t p = static_cast<size_t>(n) + 2;
  std::vector<double> u(p * p), v;
  for (int y = 0; y <= n + 1; ++y)
    for (int x = 0; x <= n + 1; ++x) u[static_cast<size_t>(y) * p + static_cast<size_t>(x)] = initialValue(y, x, n);
  v = u;
  for (int it = 0; it < iters; ++it) {
    for (size_t y = 1; y <= static_cast<size_t>(n); ++y)
      for (size_t x = 1; x <= static_cast<size_t>(n); ++x)
        v[y * p + x] = stencil(u[(y - 1) * p + x], u[(y + 1) * p + x], u[y * p + x - 1], u[y * p + x + 1]);
    u.swap(v);
  }
  return u;
}

// Largest |field - reference| over this PE's owned cells (reference: serialJacobi's grid).
inline double maxError(const Decomp& d, const double* field, const std::vector<double>& reference) {
  const size_t p = static_cast<size_t>(d.n) + 2;
  double worst = 0.0;
  for (int r = 1; r <= d.ly; ++r)
    for (int c = 1; c <= d.lx; ++c) {
      const double ref = reference[static_cast<size_t>(d.y0 + r) * p + static_cast<size_t>(d.x0 + c)];
      const double e = std::fabs(field[d.at(r, c)] - ref);
      if (!(e <= worst)) worst = e;  // a NaN sticks
    }
  return worst;
}

constexpr double kTolerance = 1e-12;

// Median of a non-empty sample (reordered in place).
inline double median(std::vector<double>& v) {
  const std::ptrdiff_t half = static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), v.begin() + half, v.end());
  double m = v[static_cast<size_t>(half)];
  if (v.size() % 2 == 0) m = 0.5 * (m + *std::max_element(v.begin(), v.begin() + half));
  return m;
}

// ---- tether side: checked calls, options, the result report --------------------------------------------------------

// A failed tether call ends the PE (tetherrun then stops the others and exits non-zero), naming the call, the status
// and tether's message for it (tether_type_last_error for the datatype calls, which keep their own).
#define J2D_CHECK(call)                                                                                      \
  do {                                                                                                       \
    const tether_status_t s_ = (call);                                                                       \
    if (s_ != TETHER_SUCCESS) j2d::die(__FILE__, __LINE__, #call, tether_status_string(s_), tether_last_error()); \
  } while (0)
#define J2D_CHECK_TYPE(call)                                                                                 \
  do {                                                                                                       \
    const tether_status_t s_ = (call);                                                                       \
    if (s_ != TETHER_SUCCESS)                                                                                \
      j2d::die(__FILE__, __LINE__, #call, tether_status_string(s_), tether_type_last_error());               \
  } while (0)

// A messaging call of a model's step: counted into *calls when calls is not null (the report's host calls per step)
// and checked as J2D_CHECK does.
#define J2D_MSG(calls, call)        \
  do {                              \
    long* const c_ = (calls);       \
    if (c_) ++*c_;                  \
    J2D_CHECK(call);                \
  } while (0)

[[noreturn]] inline void die(const char* file, int line, const char* call, const char* what, const char* detail) {
  std::fprintf(stderr, "%s:%d: %s failed: %s%s%s\n", file, line, call, what, detail && *detail ? " -- " : "",
               detail ? detail : "");
  std::exit(1);
}

struct Options {
  int n = 1024, iters = 100, warmup = 10;
  std::string model = "all";
};

// --n N, --iters I, --warmup W, --model M (M checked by the caller), starting from `defaults`. Exits 2 on a malformed
// command line; `extraUsage` (the options a caller took out of argv before) is added to the usage line.
inline Options parseOptions(int argc, char** argv, Options defaults = Options{}, const char* extraUsage = "") {
  Options o = defaults;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc || (a != "--n" && a != "--iters" && a != "--warmup" && a != "--model")) {
      std::fprintf(stderr,
                   "usage: %s [--n N] [--iters I] [--warmup W] [--model NAME|all]%s\n",
                   argv[0], extraUsage);
      std::exit(2);
    }
    const char* v = argv[++i];
    if (a == "--model") {
      o.model = v;
      continue;
    }
    const int x = std::atoi(v);
    if (x < (a == "--warmup" ? 0 : 1)) {
      std::fprintf(stderr, "%s: %s must be a positive number (got '%s')\n", argv[0], a.c_str(), v);
      std::exit(2);
    }
    (a == "--n" ? o.n : a == "--iters" ? o.iters : o.warmup) = x;
  }
  return o;
}

// Where one exchange's messages leave from and arrive in: the current field, and the contiguous buffers of the
// strided (column) halos, indexed by direction. Any memory (host or GPU): tether's messaging takes any buffer.
struct Buffers {
  double* field;
  double* sendBuf[kDirs];
  double* recvBuf[kDirs];
};
inline double* sendPtr(const Halo& h, const Buffers& b) { return h.strided ? b.sendBuf[h.dir] : b.field + h.sendAt; }
inline double* recvPtr(const Halo& h, const Buffers& b) { return h.strided ? b.recvBuf[h.dir] : b.field + h.recvAt; }

// Posts one receive per halo into reqs[0 .. halos.size()). Templates over the halo and buffer types (halo3d_common.h
// has its own, with the same members): recvPtr / sendPtr are found next to the halo type. calls: J2D_MSG's counter.
template <class HaloT, class BuffersT>
void postReceives(tether_t w, const std::vector<HaloT>& halos, const BuffersT& b, tether_request_t* reqs, long* calls) {
  for (size_t i = 0; i < halos.size(); ++i)
    J2D_MSG(calls,
            tether_irecv(w, recvPtr(halos[i], b), halos[i].bytes(), halos[i].peer, halos[i].recvTag(), &reqs[i]));
}
// Starts one send per halo now (strided halos from their packed buffers), requests in reqs[0 .. halos.size()).
template <class HaloT, class BuffersT>
void postSends(tether_t w, const std::vector<HaloT>& halos, const BuffersT& b, tether_request_t* reqs, long* calls) {
  for (size_t i = 0; i < halos.size(); ++i)
    J2D_MSG(calls,
            tether_isend(w, sendPtr(halos[i], b), halos[i].bytes(), halos[i].peer, halos[i].sendTag(), &reqs[i]));
}

// A column of this PE's field as a committed datatype: ly doubles one pitch apart (the caller frees it).
inline tether_type_t columnType(const Decomp& d) {
  tether_type_t dbl = nullptr, col = nullptr;
  J2D_CHECK_TYPE(tether_type_basic(TETHER_BASIC_DOUBLE, &dbl));
  J2D_CHECK_TYPE(tether_type_vector(d.ly, 1, static_cast<int64_t>(d.pitch()), dbl, &col));
  J2D_CHECK_TYPE(tether_type_commit(col));
  J2D_CHECK_TYPE(tether_type_free(&dbl));
  return col;
}

// This PE's block of the n x n grid over every PE of w. Exits 2 when n is smaller than the process grid.
inline Decomp decomposeWorld(tether_t w, int n) {
  const Decomp d = decompose(n, tether_n_pes(w), tether_my_pe(w));
  if (n < d.px || n < d.py) {
    std::fprintf(stderr, "--n %d is smaller than the %dx%d process grid\n", n, d.px, d.py);
    std::exit(2);
  }
  return d;
}

// What one PE measured for one model.
struct Result {
  double maxErr;  // largest |result - serial reference| over its cells
  double iterUs;  // median time of one timed iteration
  double cpuUs;   // process CPU time (all threads, tether's progress thread included) per timed iteration
  double calls;   // messaging calls the host made per timed iteration (J2D_MSG's count)
};

// Collects every PE's Result on PE 0 (point-to-point, tag 0x7000 + `slot`): on PE 0 the worst over the PEs (largest
// maxErr, a NaN sticking, and largest timings); on the other PEs their own.
inline Result gatherWorst(tether_t w, int slot, const Result& mine) {
  const int me = tether_my_pe(w), npes = tether_n_pes(w), tag = 0x7000 + slot;
  if (me != 0) {
    J2D_CHECK(tether_send(w, &mine, sizeof mine, 0, tag));
    return mine;
  }
  Result all = mine;
  for (int pe = 1; pe < npes; ++pe) {
    Result r;
    J2D_CHECK(tether_recv(w, &r, sizeof r, pe, tag, nullptr));
    if (!(r.maxErr <= all.maxErr)) all.maxErr = r.maxErr;
    all.iterUs = std::max(all.iterUs, r.iterUs);
    all.cpuUs = std::max(all.cpuUs, r.cpuUs);
    all.calls = std::max(all.calls, r.calls);
  }
  return all;
}

// Has PE 0 print one table row and one JSON line for a model: the worst error and the largest timings over the PEs
// (gatherWorst). Returns whether every PE passed (on PE 0; other PEs return their own verdict).
inline bool report(tether_t w, const char* model, int slot, const Decomp& d, const Result& mine) {
  const Result all = gatherWorst(w, slot, mine);
  const bool pass = all.maxErr <= kTolerance;
  if (tether_my_pe(w) != 0) return pass;
  const int npes = tether_n_pes(w);
  std::printf("%-18s %5d %4dx%-4d %6d %12.2f %12.2f %10.1f %12.3g  %s\n", model, npes, d.px, d.py, d.n, all.iterUs,
              all.cpuUs, all.calls, all.maxErr, pass ? "PASS" : "FAIL");
  std::printf("{\"bench\":\"jacobi2d\",\"model\":\"%s\",\"pes\":%d,\"grid\":\"%dx%d\",\"n\":%d,\"iter_us\":%.3f,"
              "\"cpu_us\":%.3f,\"host_calls\":%.1f,\"max_err\":%.3g,\"pass\":%s}\n",
              model, npes, d.px, d.py, d.n, all.iterUs, all.cpuUs, all.calls, all.maxErr, pass ? "true" : "false");
  std::fflush(stdout);
  return pass;
}

inline void printHeader() {
  std::printf("%-18s %5s %9s %6s %12s %12s %10s %12s  %s\n", "model", "pes", "grid", "n", "iter_us", "cpu_us",
              "host_calls", "max_err", "check");
}

// Process CPU time in microseconds (every thread of the process).
inline double cpuTimeUs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

struct Timing {
  double iterUs;  // median time of one timed iteration
  double cpuUs;   // process CPU time per timed iteration
  double calls;   // messaging calls per timed iteration
};

// The host-memory twins' loop: step(k) for k = 0 .. warmup + iters - 1, the last iters timed one by one (wall clock)
// and together (process CPU time, and *calls: the steps' J2D_MSG counter).
template <class Step>
Timing timeHostIterations(int warmup, int iters, const long* calls, Step step) {
  for (int k = 0; k < warmup; ++k) step(k);
  std::vector<double> us;
  const double cpu0 = cpuTimeUs();
  const long calls0 = *calls;
  for (int k = warmup; k < warmup + iters; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    step(k);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  const double cpuUs = (cpuTimeUs() - cpu0) / iters;
  return Timing{median(us), cpuUs, static_cast<double>(*calls - calls0) / iters};
}

// The requests of one iteration that the host has not freed yet (the GPU stream and kernel models free them one
// iteration late). 64: two per halo for up to 26 halos (halo3d), and 8 for jacobi2d's four.
struct Pending {
  static constexpr size_t kMax = 64;
  tether_request_t reqs[kMax];
  size_t n = 0;
};

// An execution model an application offers, by name: one iteration of it on the application's State (Pending: the
// requests it leaves for the next to free), and for the models of persistent requests what is done once around the
// timed run: begin (make the requests; total = warm-up + timed iterations) and end (complete and free them).
template <class State>
struct Model {
  const char* name;
  void (*step)(tether_t, State&, int, Pending*);
  void (*begin)(tether_t, State&, int total);
  void (*end)(tether_t, State&);
};

// The models that --model `which` names ("all": every one of `all`, in order); exits 2 naming the choices if none.
template <class State>
std::vector<Model<State>> selectModels(const std::string& which, const char* argv0,
                                       const std::vector<Model<State>>& all) {
  std::vector<Model<State>> run;
  std::string names;
  for (const Model<State>& m : all) {
    if (which == "all" || which == m.name) run.push_back(m);
    names += std::string(m.name) + ", ";
  }
  if (run.empty()) {
    std::fprintf(stderr, "%s: unknown --model '%s' (%sor all)\n", argv0, which.c_str(), names.c_str());
    std::exit(2);
  }
  return run;
}

}  // namespace j2d
