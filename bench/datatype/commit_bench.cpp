// Commit cost of derived datatypes (issue #7 goal: commit <= 5 us for types of <= 3 levels), host only.
// Each row builds a fresh type outside the timed region, then times tether_type_commit (steady_clock); best and
// median of --iters runs. Prints a table and, with --json FILE, JSON lines (first line: a run record).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "harness.h"
#include "tether/datatype.h"

namespace {

void ck(tether_status_t s, const char* what) {
  if (s != TETHER_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, tether_type_last_error());
    std::exit(2);
  }
}

struct Row {
  std::string name, note;
  int levels;
  double best, median;
};

}  // namespace

int main(int argc, char** argv) {
  const char* json = nullptr;
  const char* only = nullptr;  // run the rows whose name contains this (profiling one case)
  int iters = 2000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--iters N] [--json FILE] [--only NAME-PART]\n", argv[0]);
      return 2;
    }
  }
  tether_type_t d, f, in;
  ck(tether_type_basic(TETHER_BASIC_DOUBLE, &d), "basic");
  ck(tether_type_basic(TETHER_BASIC_FLOAT, &f), "basic");
  ck(tether_type_basic(TETHER_BASIC_INT, &in), "basic");
  struct Case {
    const char* name;
    int levels;
    const char* note;
    std::function<tether_type_t()> make;
  };
  std::vector<Case> cases = {
      {"vector", 1, "vector(1000, 3, 7) of double", [&] {
         tether_type_t t;
         ck(tether_type_vector(1000, 3, 7, d, &t), "vector");
         return t;
       }},
      {"subarray2d", 1, "2-D face of 8192^2 doubles", [&] {
         tether_type_t t;
         const int64_t sz[2] = {8192, 8192}, sub[2] = {8190, 1}, st[2] = {1, 1};
         ck(tether_type_subarray(2, sz, sub, st, TETHER_ORDER_C, d, &t), "subarray");
         return t;
       }},
      {"subarray3d", 1, "3-D halo of 256^3 doubles", [&] {
         tether_type_t t;
         const int64_t sz[3] = {256, 256, 256}, sub[3] = {250, 250, 3}, st[3] = {3, 3, 250};
         ck(tether_type_subarray(3, sz, sub, st, TETHER_ORDER_C, d, &t), "subarray");
         return t;
       }},
      {"struct3", 1, "particle struct {3 double, 3 double, float, int} resized to 56 B", [&] {
         tether_type_t s, t;
         const int64_t bl[4] = {3, 3, 1, 1}, disp[4] = {0, 24, 48, 52};
         const tether_type_t ts[4] = {d, d, f, in};
         ck(tether_type_struct(4, bl, disp, ts, &s), "struct");
         ck(tether_type_resized(s, 0, 56, &t), "resized");
         tether_type_free(&s);
         return t;
       }},
      {"indexed100", 1, "indexed, 100 irregular blocks", [&] {
         std::vector<int64_t> bl(100), disp(100);
         for (int i = 0; i < 100; ++i) bl[i] = 1 + i % 5, disp[i] = 11 * i + (i * 7) % 3;
         tether_type_t t;
         ck(tether_type_indexed(100, bl.data(), disp.data(), d, &t), "indexed");
         return t;
       }},
      {"indexed_block1000rand", 1, "indexed_block(1000, 2) of double, sorted random gaps (seed 5): no period", [&] {
         std::vector<int64_t> disp(1000);
         std::mt19937_64 rng(5);
         int64_t at = 0;
         for (auto& x : disp) x = at, at += 2 + static_cast<int64_t>(rng() % 7);
         tether_type_t t;
         ck(tether_type_indexed_block(1000, 2, disp.data(), d, &t), "indexed_block");
         return t;
       }},
      {"indexed_block1000per5", 1,
       "indexed_block(1000, 2) of double, displacements 7i + i^2 mod 5 (period 5, as tether_bench_datatype's row)", [&] {
         std::vector<int64_t> disp(1000);
         for (int64_t i = 0; i < 1000; ++i) disp[static_cast<size_t>(i)] = 7 * i + (i * i) % 5;
         tether_type_t t;
         ck(tether_type_indexed_block(1000, 2, disp.data(), d, &t), "indexed_block");
         return t;
       }},
      {"hvector(vector)", 2, "hvector(64) of vector(100, 2, 5)", [&] {
         tether_type_t v, t;
         ck(tether_type_vector(100, 2, 5, d, &v), "vector");
         ck(tether_type_hvector(64, 1, 40000, v, &t), "hvector");
         tether_type_free(&v);
         return t;
       }},
      {"contig(resized(vector))", 3, "FFT2D transpose: contiguous(2048) of resized(vector(2048,1,2048))", [&] {
         tether_type_t v, r, t;
         ck(tether_type_vector(2048, 1, 2048, d, &v), "vector");
         ck(tether_type_resized(v, 0, 8, &r), "resized");
         ck(tether_type_contiguous(2048, r, &t), "contiguous");
         tether_type_free(&v);
         tether_type_free(&r);
         return t;
       }},
      {"struct(vector,hvector)", 3, "struct of a vector and an hvector of it", [&] {
         tether_type_t v, hv, t;
         ck(tether_type_vector(100, 2, 5, d, &v), "vector");
         ck(tether_type_hvector(10, 1, 40000, v, &hv), "hvector");
         const int64_t bl[2] = {1, 1}, disp[2] = {0, 400000};
         const tether_type_t ts[2] = {v, hv};
         ck(tether_type_struct(2, bl, disp, ts, &t), "struct");
         tether_type_free(&v);
         tether_type_free(&hv);
         return t;
       }},
      {"struct(indexed_block x4)", 3, "LAMMPS-like: struct of 4 indexed_block(1000) fields", [&] {
         std::vector<int64_t> idx(1000);
         for (int i = 0; i < 1000; ++i) idx[i] = 3 * i + (i % 2);
         tether_type_t parts[4], t;
         for (int k = 0; k < 4; ++k) ck(tether_type_indexed_block(1000, k == 0 ? 3 : 1, idx.data(), k == 0 ? d : in, &parts[k]), "ib");
         const int64_t bl[4] = {1, 1, 1, 1}, disp[4] = {0, 96000, 112000, 128000};
         ck(tether_type_struct(4, bl, disp, parts, &t), "struct");
         for (auto& p : parts) tether_type_free(&p);
         return t;
       }},
  };
  std::vector<Row> rows;
  tether_bench::Options runOpts;
  runOpts.argv.assign(argv, argv + argc);
  const tether_bench::RunInfo info = tether_bench::collectRunInfo("dt_commit", runOpts, 1);
  std::printf("# tether_bench_dt_commit: tether_type_commit on the host, best and median of %d\n", iters);
  std::printf("# machine: %s, cpu: %s (%d logical CPUs); date: %s; command: %s\n", info.host.c_str(),
              info.cpu.c_str(), info.cpus, info.date.c_str(), info.commandLine.c_str());
  std::printf("%-26s %6s %10s %10s  %s\n", "type", "levels", "best us", "median us", "note");
  for (const Case& c : cases) {
    if (only && !std::strstr(c.name, only)) continue;
    std::vector<double> us;
    us.reserve(static_cast<size_t>(iters));
    for (int i = 0; i < iters; ++i) {
      tether_type_t t = c.make();
      const auto t0 = std::chrono::steady_clock::now();
      ck(tether_type_commit(t), "commit");
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      tether_type_free(&t);
    }
    std::sort(us.begin(), us.end());
    Row r{c.name, c.note, c.levels, us.front(), us[us.size() / 2]};
    std::printf("%-26s %6d %10.2f %10.2f  %s\n", r.name.c_str(), r.levels, r.best, r.median, r.note.c_str());
    rows.push_back(r);
  }
  if (json) {
    FILE* out = std::fopen(json, "w");
    if (!out) {
      std::perror(json);
      return 2;
    }
    std::fprintf(out, "{\"record\":\"run\"%s,\"iters\":%d}\n", tether_bench::runFields(info).c_str(), iters);
    for (const Row& r : rows)
      std::fprintf(out, "{\"type\":\"%s\",\"levels\":%d,\"best_us\":%.3f,\"median_us\":%.3f,\"note\":\"%s\"}\n",
                   r.name.c_str(), r.levels, r.best, r.median, r.note.c_str());
    std::fclose(out);
  }
  tether_type_free(&d);
  tether_type_free(&f);
  tether_type_free(&in);
  return 0;
}
