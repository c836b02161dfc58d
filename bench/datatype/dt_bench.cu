// Datatype engine benchmark (issue #7), one GPU: every pattern of patterns.h packed and unpacked by
//   tether      the engine with the scheme its cost model picks (and each forced scheme, for the model's check),
//   dt          one cudaMemcpyAsync per contiguous block (the HAND paper's "DT"; measured over the first
//               --dt-blocks blocks and scaled to all of them, as the note says),
//   copy2d/3d   cudaMemcpy2DAsync / cudaMemcpy3DAsync where the layout is a pitched array,
//   roofline    the bytes the layout must move at this GPU's measured device-to-device copy bandwidth (read + write),
//               with reads in whole 32-byte sectors: time = (sum over blocks of 32*ceil(B/32) + B) / copy bandwidth.
// Framework rows (CuPy strided copies) come from bench/datatype/cupy_rows.py, run beside this program.
// Every pack is checked byte for byte against a gather of the pattern's block list (built independently of the type
// constructors), and every unpack against the source. Times: CUDA events, best of --reps after a warm-up.
// Output: a table on stdout and JSON lines (--json FILE, first line a run record).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "../cuda_check.h"
#include "patterns.h"
#include "tether/datatype.h"

using tether_bench::Pattern;

#define DTK(x)                                                                                       \
  do {                                                                                              \
    if ((x) != TETHER_SUCCESS) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, tether_type_last_error());   \
      std::exit(2);                                                                                 \
    }                                                                                               \
  } while (0)

namespace {

struct Row {
  std::string pattern, family, dir, impl, note;
  int64_t packed = 0, blocks = 0;
  double meanBlock = 0, us = 0, gbs = 0, pctRoof = 0;
};
std::vector<Row> rows;
int failures = 0;

__global__ void fillKernel(unsigned char* p, size_t n, uint32_t salt) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<unsigned char>((i * 2654435761u + salt) >> 13);
}

struct Timer {
  cudaStream_t st;
  cudaEvent_t e0, e1;
  int reps;
  template <typename F>
  double bestUs(F&& f) {
    float best = 1e30f;
    for (int r = 0; r <= reps; ++r) {  // r == 0: warm-up
      CK(cudaEventRecord(e0, st));
      f();
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r) best = std::min(best, ms);
    }
    return best * 1e3;
  }
};

void report(Row r, double roofUs) {
  r.gbs = r.us > 0 ? static_cast<double>(r.packed) / (r.us * 1e3) : 0;
  r.pctRoof = r.us > 0 ? 100.0 * roofUs / r.us : 0;
  std::printf("%-16s %-6s %-10s %12lld %10.1f %11.2f %9.1f %6.1f%%  %s\n", r.pattern.c_str(), r.dir.c_str(),
              r.impl.c_str(), static_cast<long long>(r.packed), r.meanBlock, r.us, r.gbs, r.pctRoof, r.note.c_str());
  std::fflush(stdout);
  rows.push_back(r);
}

}  // namespace

int main(int argc, char** argv) {
  const char* json = nullptr;
  int scale = 1, reps = 5;
  int64_t dtBlocks = 20000;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!std::strcmp(argv[i], "--scale") && i + 1 < argc) scale = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--dt-blocks") && i + 1 < argc) dtBlocks = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--scale N] [--reps N] [--dt-blocks N] [--only NAME] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "tether_bench_datatype: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  Timer T;
  T.reps = reps;
  CK(cudaStreamCreateWithFlags(&T.st, cudaStreamNonBlocking));
  CK(cudaEventCreate(&T.e0));
  CK(cudaEventCreate(&T.e1));

  // Calibration (or its cached table) first, so no row pays for it.
  char calib[2048] = "";
  const auto c0 = std::chrono::steady_clock::now();
  DTK(tether_type_gpu_calibrate(0, calib, sizeof calib));
  const double calibMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();

  // This GPU's device-to-device copy bandwidth (read + write bytes per second), the roofline's basis.
  double copyBw = 0;
  {
    const size_t big = size_t{1} << 30;
    void *a, *b;
    CK(cudaMalloc(&a, big));
    CK(cudaMalloc(&b, big));
    const double us = T.bestUs([&] { CK(cudaMemcpyAsync(b, a, big, cudaMemcpyDeviceToDevice, T.st)); });
    copyBw = 2.0 * big / (us * 1e-6);
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  std::printf("# tether_bench_datatype: %s, scale %d, best of %d; device copy %.0f GB/s (read+write); cost model "
              "ready in %.0f ms\n# %s", prop.name, scale, reps, copyBw / 1e9, calibMs, calib);
  std::printf("%-16s %-6s %-10s %12s %10s %11s %9s %7s  %s\n", "pattern", "dir", "impl", "packed B", "mean blk",
              "us", "GB/s", "%roof", "note");

  std::vector<Pattern> ps;
  try {
    ps = tether_bench::makePatterns(scale);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pattern construction failed: %s\n", e.what());
    return 2;
  }
  for (Pattern& p : ps) {
    if (!only.empty() && p.name != only) {
      tether_bench::freePattern(p);
      continue;
    }
    const int64_t nb = static_cast<int64_t>(p.blocks.size());
    double roofBytes = 0;
    for (const tether_bench::Block& b : p.blocks) roofBytes += 32.0 * ((b.bytes + 31) / 32) + b.bytes;
    const double roofUs = roofBytes / copyBw * 1e6;
    Row base;
    base.pattern = p.name;
    base.family = p.family;
    base.packed = p.packed;
    base.blocks = nb;
    base.meanBlock = nb ? static_cast<double>(p.packed) / nb : 0;

    unsigned char *src, *packed, *back;
    CK(cudaMalloc(&src, static_cast<size_t>(p.span)));
    CK(cudaMalloc(&packed, static_cast<size_t>(p.packed)));
    CK(cudaMalloc(&back, static_cast<size_t>(p.span)));
    fillKernel<<<1024, 256, 0, T.st>>>(src, static_cast<size_t>(p.span), 0x9e37u);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(T.st));
    // Expected packed bytes: a host gather of the block list.
    std::vector<unsigned char> hsrc(static_cast<size_t>(p.span)), want(static_cast<size_t>(p.packed)),
        got(static_cast<size_t>(p.packed));
    CK(cudaMemcpy(hsrc.data(), src, hsrc.size(), cudaMemcpyDeviceToHost));
    {
      int64_t o = 0;
      for (const tether_bench::Block& b : p.blocks) {
        std::memcpy(want.data() + o, hsrc.data() + b.offset, static_cast<size_t>(b.bytes));
        o += b.bytes;
      }
    }
    // The host reference must agree with the block list too (checks the pattern's two descriptions).
    {
      int64_t done = 0;
      DTK(tether_type_pack(p.type, p.count, hsrc.data() + p.base, 0, p.packed, got.data(), &done));
      if (done != p.packed || std::memcmp(got.data(), want.data(), got.size()) != 0) {
        std::printf("  FAIL %s: host reference pack differs from the block list\n", p.name.c_str());
        ++failures;
      }
    }
    const char* chosen = "";
    DTK(tether_type_gpu_scheme(p.type, p.count, &chosen));

    auto ourPack = [&](bool unpack) {
      int64_t done = 0;
      if (unpack)
        DTK(tether_type_unpack_async(p.type, p.count, packed, 0, p.packed, back + p.base, &done, T.st));
      else
        DTK(tether_type_pack_async(p.type, p.count, src + p.base, 0, p.packed, packed, &done, T.st));
    };
    auto checkPacked = [&](const char* what) {
      CK(cudaMemcpy(got.data(), packed, got.size(), cudaMemcpyDeviceToHost));
      if (std::memcmp(got.data(), want.data(), got.size()) != 0) {
        std::printf("  FAIL %s %s: packed bytes differ\n", p.name.c_str(), what);
        ++failures;
      }
      CK(cudaMemset(packed, 0, static_cast<size_t>(p.packed)));
      CK(cudaDeviceSynchronize());
    };
    auto checkUnpacked = [&](const char* what) {
      std::vector<unsigned char> hb(static_cast<size_t>(p.span));
      CK(cudaMemcpy(hb.data(), back, hb.size(), cudaMemcpyDeviceToHost));
      for (const tether_bench::Block& b : p.blocks)
        if (std::memcmp(hb.data() + b.offset, hsrc.data() + b.offset, static_cast<size_t>(b.bytes)) != 0) {
          std::printf("  FAIL %s %s: unpacked block at %lld differs\n", p.name.c_str(), what,
                      static_cast<long long>(b.offset));
          ++failures;
          break;
        }
      CK(cudaMemset(back, 0, static_cast<size_t>(p.span)));
      CK(cudaDeviceSynchronize());
    };
    CK(cudaMemset(back, 0, static_cast<size_t>(p.span)));
    CK(cudaDeviceSynchronize());

    for (int dir = 0; dir < 2; ++dir) {
      const bool unpack = dir == 1;
      // Unpack rows read the packed bytes: put the expected ones there (the pack rows' checks clear the buffer).
      if (unpack) {
        CK(cudaMemcpy(packed, want.data(), want.size(), cudaMemcpyHostToDevice));
        CK(cudaDeviceSynchronize());  // T.st is non-blocking: it does not wait for the legacy stream's copies
      }
      Row r = base;
      r.dir = unpack ? "unpack" : "pack";
      // tether, the cost model's choice.
      unsetenv("TETHER_DT_SCHEME");
      r.impl = "tether";
      r.note = std::string("auto: ") + chosen;
      r.us = T.bestUs([&] { ourPack(unpack); });
      if (unpack) checkUnpacked("tether"); else checkPacked("tether");
      report(r, roofUs);
      // Each scheme forced (the cost model's check).
      for (const char* s : {"thread", "warp", "copy2d", "copy3d"}) {
        setenv("TETHER_DT_SCHEME", s, 1);
        const char* c = nullptr;
        if (tether_type_gpu_scheme(p.type, p.count, &c) != TETHER_SUCCESS) continue;
        int64_t done = 0;
        const tether_status_t st =
            unpack ? tether_type_unpack_async(p.type, p.count, packed, 0, p.packed, back + p.base, &done, T.st)
                   : tether_type_pack_async(p.type, p.count, src + p.base, 0, p.packed, packed, &done, T.st);
        if (st != TETHER_SUCCESS) continue;  // not applicable to this layout
        CK(cudaStreamSynchronize(T.st));
        Row f = base;
        f.dir = r.dir;
        f.impl = std::string("t:") + s;
        f.note = "forced";
        f.us = T.bestUs([&] { ourPack(unpack); });
        if (unpack) checkUnpacked(s); else checkPacked(s);
        report(f, roofUs);
      }
      unsetenv("TETHER_DT_SCHEME");
      // DT: one cudaMemcpyAsync per block, over the first dtBlocks blocks, scaled.
      {
        const int64_t k = std::min(nb, dtBlocks);
        int64_t kb = 0;
        for (int64_t i = 0; i < k; ++i) kb += p.blocks[static_cast<size_t>(i)].bytes;
        Row d = base;
        d.dir = r.dir;
        d.impl = "dt";
        const double us = T.bestUs([&] {
          int64_t o = 0;
          for (int64_t i = 0; i < k; ++i) {
            const tether_bench::Block& b = p.blocks[static_cast<size_t>(i)];
            if (unpack)
              CK(cudaMemcpyAsync(back + b.offset, packed + o, static_cast<size_t>(b.bytes), cudaMemcpyDeviceToDevice,
                                 T.st));
            else
              CK(cudaMemcpyAsync(packed + o, src + b.offset, static_cast<size_t>(b.bytes), cudaMemcpyDeviceToDevice,
                                 T.st));
            o += b.bytes;
          }
        });
        d.us = kb ? us * static_cast<double>(p.packed) / static_cast<double>(kb) : us;
        d.note = k < nb ? "per-block cudaMemcpyAsync; measured on " + std::to_string(k) + " of " +
                              std::to_string(nb) + " blocks, scaled"
                        : "per-block cudaMemcpyAsync";
        if (k == nb) {
          if (unpack) checkUnpacked("dt"); else checkPacked("dt");
        } else {
          CK(cudaMemset(unpack ? back : packed, 0, static_cast<size_t>(unpack ? p.span : p.packed)));
          CK(cudaDeviceSynchronize());
        }
        report(d, roofUs);
      }
      // cudaMemcpy2D/3D where the layout is one.
      if (p.copy2d.ok) {
        const tether_bench::Copy2D& c = p.copy2d;
        Row d = base;
        d.dir = r.dir;
        d.impl = "memcpy2d";
        d.note = "cudaMemcpy2DAsync";
        d.us = T.bestUs([&] {
          if (unpack)
            CK(cudaMemcpy2DAsync(back + c.offset, c.pitch, packed, c.width, c.width, c.height,
                                 cudaMemcpyDeviceToDevice, T.st));
          else
            CK(cudaMemcpy2DAsync(packed, c.width, src + c.offset, c.pitch, c.width, c.height,
                                 cudaMemcpyDeviceToDevice, T.st));
        });
        if (unpack) checkUnpacked("memcpy2d"); else checkPacked("memcpy2d");
        report(d, roofUs);
      }
      if (p.copy3d.ok) {
        const tether_bench::Copy3D& c = p.copy3d;
        Row d = base;
        d.dir = r.dir;
        d.impl = "memcpy3d";
        d.note = "cudaMemcpy3DAsync";
        cudaMemcpy3DParms prm = {};
        const cudaPitchedPtr user = make_cudaPitchedPtr(unpack ? back + c.offset : src + c.offset, c.pitch, c.width,
                                                        c.slicePitch / c.pitch);
        const cudaPitchedPtr pk = make_cudaPitchedPtr(packed, c.width, c.width, c.height);
        prm.srcPtr = unpack ? pk : user;
        prm.dstPtr = unpack ? user : pk;
        prm.extent = make_cudaExtent(c.width, c.height, c.depth);
        prm.kind = cudaMemcpyDeviceToDevice;
        d.us = T.bestUs([&] { CK(cudaMemcpy3DAsync(&prm, T.st)); });
        if (unpack) checkUnpacked("memcpy3d"); else checkPacked("memcpy3d");
        report(d, roofUs);
      }
      Row roof = base;
      roof.dir = r.dir;
      roof.impl = "roofline";
      roof.note = "32 B sectors read + bytes written at the device copy bandwidth";
      roof.us = roofUs;
      report(roof, roofUs);
    }
    CK(cudaFree(src));
    CK(cudaFree(packed));
    CK(cudaFree(back));
    tether_bench::freePattern(p);
  }

  // Small objects: a 1 KiB struct packed in one launch vs an empty launch.
  {
    tether_type_t d, f, st;
    DTK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
    DTK(tether_type_basic(TETHER_BASIC_FLOAT, &f));
    const int64_t bl[2] = {96, 64}, disp[2] = {0, 1024};
    const tether_type_t ts[2] = {d, f};
    DTK(tether_type_struct(2, bl, disp, ts, &st));
    DTK(tether_type_commit(st));
    int64_t size = 0;
    DTK(tether_type_size(st, &size));
    unsigned char *a, *b;
    CK(cudaMalloc(&a, 4096));
    CK(cudaMalloc(&b, 4096));
    const double empty = T.bestUs([&] { fillKernel<<<1, 32, 0, T.st>>>(b, 0, 0); });
    const double us = T.bestUs([&] {
      int64_t done = 0;
      DTK(tether_type_pack_async(st, 1, a, 0, size, b, &done, T.st));
    });
    Row r;
    r.pattern = "small_struct";
    r.family = "latency";
    r.dir = "pack";
    r.impl = "tether";
    r.packed = size;
    r.blocks = 2;
    r.meanBlock = size / 2.0;
    r.us = us;
    char note[128];
    std::snprintf(note, sizeof note, "%lld B struct; an empty kernel launch measured %.2f us the same way",
                  static_cast<long long>(size), empty);
    r.note = note;
    report(r, 0);
    // Commit cost of <= 3-level types.
    auto commitUs = [&](auto&& make) {
      double best = 1e30;
      for (int i = 0; i < 20; ++i) {
        tether_type_t t = make();
        const auto t0 = std::chrono::steady_clock::now();
        DTK(tether_type_commit(t));
        best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        tether_type_free(&t);
      }
      return best;
    };
    struct C { const char* name; double us; };
    std::vector<C> commits;
    commits.push_back({"vector", commitUs([&] {
                         tether_type_t t;
                         DTK(tether_type_vector(1000, 3, 7, d, &t));
                         return t;
                       })});
    commits.push_back({"subarray3d", commitUs([&] {
                         tether_type_t t;
                         const int64_t sz[3] = {256, 256, 256}, sub[3] = {250, 250, 3}, stt[3] = {3, 3, 250};
                         DTK(tether_type_subarray(3, sz, sub, stt, TETHER_ORDER_C, d, &t));
                         return t;
                       })});
    commits.push_back({"struct(vector,hvector)", commitUs([&] {
                         tether_type_t v, hv, t;
                         DTK(tether_type_vector(100, 2, 5, d, &v));
                         DTK(tether_type_hvector(10, 1, 40000, v, &hv));
                         const int64_t b2[2] = {1, 1}, d2[2] = {0, 400000};
                         const tether_type_t t2[2] = {v, hv};
                         DTK(tether_type_struct(2, b2, d2, t2, &t));
                         tether_type_free(&v);
                         tether_type_free(&hv);
                         return t;
                       })});
    for (const C& c : commits) {
      Row cr;
      cr.pattern = std::string("commit:") + c.name;
      cr.family = "commit";
      cr.dir = "commit";
      cr.impl = "tether";
      cr.us = c.us;
      cr.note = "tether_type_commit, host, best of 20";
      report(cr, 0);
    }
    tether_type_free(&d);
    tether_type_free(&f);
    tether_type_free(&st);
  }

  if (json) {
    FILE* out = std::fopen(json, "w");
    if (!out) {
      std::perror(json);
      return 2;
    }
    const std::string date = tether_bench::utcDate();
    std::fprintf(out, "{\"run\":\"tether_bench_datatype\",\"device\":\"%s\",\"date\":\"%s\",\"scale\":%d,"
                 "\"copy_gbs\":%.1f}\n", prop.name, date.c_str(), scale, copyBw / 1e9);
    for (const Row& r : rows)
      std::fprintf(out,
                   "{\"pattern\":\"%s\",\"family\":\"%s\",\"dir\":\"%s\",\"impl\":\"%s\",\"packed\":%lld,"
                   "\"blocks\":%lld,\"mean_block\":%.2f,\"us\":%.3f,\"gbs\":%.2f,\"pct_roofline\":%.1f,\"note\":\"%s\"}\n",
                   r.pattern.c_str(), r.family.c_str(), r.dir.c_str(), r.impl.c_str(),
                   static_cast<long long>(r.packed), static_cast<long long>(r.blocks), r.meanBlock, r.us, r.gbs,
                   r.pctRoof, r.note.c_str());
    std::fclose(out);
  }
  if (failures) std::printf("FAIL: %d checks failed\n", failures);
  return failures ? 1 : 0;
}
