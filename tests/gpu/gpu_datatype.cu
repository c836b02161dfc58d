// GPU datatype engine (issue #7) against the host reference (which CI checks against MPICH's MPI_Pack):
// seeded random type trees (every constructor, nesting to depth 5, zero counts, negative displacements, resized,
// structs of mixed basic types), plus a transpose, a small struct and an indexed_block over several instances (the
// elem scheme's user-order, inline-table and periodic-table paths), packed and unpacked on the GPU with every scheme
// that applies (auto, thread, warp, copy2d, copy3d, elem, batch), whole and in random resumable fragments; auto also
// between every pair of memory kinds that mixes device, pinned host and pageable host memory (six pairs). Unpack goes
// into a poisoned buffer and must equal the host reference's unpack into the same poison (gaps untouched).
// Usage: gpu_datatype [--seed S] [--trees N] (env TETHER_TEST_DT_SEED); every failure prints the tree's seed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tether/datatype.h"
#include "../datatype/random_types.h"

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

namespace {

using dt_test::Fail;
using dt_test::Gen;
using dt_test::tk;

enum class Kind { Device, Pinned, Pageable };
const char* kindName(Kind k) { return k == Kind::Device ? "device" : k == Kind::Pinned ? "pinned" : "pageable"; }
struct Buf {
  Kind kind;
  size_t n;
  unsigned char* p = nullptr;
  Buf(Kind k, size_t bytes) : kind(k), n(bytes ? bytes : 1) {
    if (k == Kind::Device) CK(cudaMalloc(&p, n));
    else if (k == Kind::Pinned) CK(cudaMallocHost(&p, n));
    else p = static_cast<unsigned char*>(std::malloc(n));
  }
  ~Buf() {
    if (kind == Kind::Device) cudaFree(p);
    else if (kind == Kind::Pinned) cudaFreeHost(p);
    else std::free(p);
  }
  // The packs run on a non-blocking stream, which does not wait for the legacy stream's copies: finish them here.
  void put(const std::vector<unsigned char>& h) {
    CK(cudaMemcpy(p, h.data(), h.size(), cudaMemcpyDefault));
    CK(cudaDeviceSynchronize());
  }
  std::vector<unsigned char> get() const {
    std::vector<unsigned char> h(n);
    CK(cudaMemcpy(h.data(), p, n, cudaMemcpyDefault));
    return h;
  }
};

int failures = 0, checks = 0, skippedSchemes = 0;

// What a failed whole pack did: the scheme the engine chose, the differing packed bytes (count, first, last), and
// whether packing again (repeat()) gives the same bytes.
template <typename Repeat>
std::string diagnose(tether_type_t t, int64_t count, const std::vector<unsigned char>& got,
                     const std::vector<unsigned char>& want, Repeat repeat) {
  const char* chosen = "?";
  tether_type_gpu_scheme(t, count, &chosen);
  int64_t n = 0, first = -1, last = -1;
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      ++n, last = static_cast<int64_t>(i);
      if (first < 0) first = last;
    }
  const std::vector<unsigned char> again = repeat();
  const bool same = std::equal(want.begin(), want.end(), again.begin());
  const bool asBefore = again == got;
  char buf[256];
  std::snprintf(buf, sizeof buf, "chosen %s; %" PRId64 " bytes differ in [%" PRId64 ", %" PRId64 "]; packed again: %s",
                chosen, n, first, last, same ? "right (a race?)" : asBefore ? "the same wrong bytes" : "other wrong bytes");
  return buf;
}

// One tree: host reference vs GPU for each scheme, whole and fragmented, pack and unpack.
// Every check on one committed type (freed here); g draws the fragments.
void runType(tether_type_t t, const std::string& text, int64_t count, uint64_t seed, Gen& g, cudaStream_t st) {
  int64_t size = 0, lb = 0, ext = 0, tlb = 0, text2 = 0;
  tk(tether_type_size(t, &size), "size");
  tk(tether_type_extent(t, &lb, &ext), "extent");
  tk(tether_type_true_extent(t, &tlb, &text2), "true_extent");
  // Memory the instances touch: [min(0, ...)...]: true bounds of instance 0 and instance count-1.
  const int64_t lo = std::min<int64_t>(0, std::min(tlb, tlb + (count - 1) * ext));
  const int64_t hi = std::max<int64_t>(1, std::max(tlb + text2, tlb + text2 + (count - 1) * ext));
  const int64_t span = hi - lo + 64, origin = -lo + 32;  // buffer offset of the type origin (aligned to 32)
  const int64_t packed = size * count;
  std::vector<unsigned char> user(static_cast<size_t>(span)), want(static_cast<size_t>(packed));
  std::mt19937_64 r(seed ^ 0xabcdef);
  for (auto& b : user) b = static_cast<unsigned char>(r());
  int64_t done = 0;
  tk(tether_type_pack(t, count, user.data() + origin, 0, packed, want.data(), &done), "host pack");
  std::vector<unsigned char> poison(static_cast<size_t>(span), 0xA5), wantUnpacked = poison;
  tk(tether_type_unpack(t, count, want.data(), 0, packed, wantUnpacked.data() + origin, &done), "host unpack");
  // Unpack is defined only for type maps that name every byte once (MPI: overlapping receive types are erroneous;
  // parallel unpack has no "later entry wins"). Distinct bytes touched == packed bytes <=> no overlap.
  bool overlap = false;
  {
    std::vector<unsigned char> ones(static_cast<size_t>(packed), 0xFF), zero(static_cast<size_t>(span), 0);
    tk(tether_type_unpack(t, count, ones.data(), 0, packed, zero.data() + origin, &done), "host unpack");
    int64_t touched = 0;
    for (unsigned char b : zero) touched += b == 0xFF;
    overlap = touched != packed;
  }

  auto fail = [&](const std::string& what) {
    ++failures;
    std::printf("FAIL seed %" PRIu64 ": %s\n  tree %s (size %" PRId64 ", extent %" PRId64 ", count %" PRId64 ")\n",
                seed, what.c_str(), text.c_str(), size, ext, count);
  };
  const Kind kinds[3] = {Kind::Device, Kind::Pinned, Kind::Pageable};
  for (const char* scheme : {"auto", "thread", "warp", "copy2d", "copy3d", "elem", "batch"}) {
    tk(tether_type_set_gpu_scheme(t, scheme), "set_gpu_scheme");
    for (int pair = 0; pair < (std::strcmp(scheme, "auto") == 0 ? 6 : 1); ++pair) {
      // pair 0: device/device; 1: device user + pinned packed; 2: pinned user + device packed; 3: pageable/pageable;
      // 4: device user + pageable packed (GPU scratch + one copy); 5: pageable user + device packed (host + one copy)
      const Kind ku = pair == 2 ? Kind::Pinned : pair == 3 || pair == 5 ? Kind::Pageable : Kind::Device;
      const Kind kp = pair == 1 ? Kind::Pinned : pair == 3 || pair == 4 ? Kind::Pageable : Kind::Device;
      (void)kinds;
      Buf u(ku, static_cast<size_t>(span)), p(kp, static_cast<size_t>(packed));
      u.put(user);
      // Whole pack.
      tether_status_t s = tether_type_pack_async(t, count, u.p + origin, 0, packed, p.p, &done, st);
      if (s != TETHER_SUCCESS) {
        if (pair == 0 && std::strcmp(scheme, "auto") != 0) {  // inapplicable forced scheme
          ++skippedSchemes;
          break;
        }
        fail(std::string("pack_async failed: ") + tether_type_last_error());
        continue;
      }
      CK(cudaStreamSynchronize(st));
      ++checks;
      if (packed && std::memcmp(p.get().data(), want.data(), static_cast<size_t>(packed)) != 0) {
        fail(std::string("pack differs (scheme ") + scheme + ", user " + kindName(ku) + ", packed " + kindName(kp) +
             "): " + diagnose(t, count, p.get(), want, [&] {  // the same pack again: a race or a deterministic error?
               tk(tether_type_pack_async(t, count, u.p + origin, 0, packed, p.p, &done, st), "pack");
               CK(cudaStreamSynchronize(st));
               return p.get();
             }));
      }
      // Whole unpack into poison.
      Buf back(ku, static_cast<size_t>(span));
      back.put(poison);
      tk(tether_type_unpack_async(t, count, p.p, 0, packed, back.p + origin, &done, st), "unpack_async");
      CK(cudaStreamSynchronize(st));
      ++checks;
      if (!overlap && back.get() != wantUnpacked)
        fail(std::string("unpack differs (scheme ") + scheme + ", user " + kindName(ku) + ")");
      // Fragments (kernel schemes and auto only: direct copies need whole packs).
      if (packed > 1 && (pair == 0) &&
          (!std::strcmp(scheme, "thread") || !std::strcmp(scheme, "warp") || !std::strcmp(scheme, "elem") ||
           !std::strcmp(scheme, "batch") || !std::strcmp(scheme, "auto"))) {
        Buf frag(Kind::Device, static_cast<size_t>(packed));
        CK(cudaMemset(frag.p, 0, static_cast<size_t>(packed)));
        CK(cudaDeviceSynchronize());
        int64_t off = 0;
        while (off < packed) {
          const int64_t max = g.uni(1, std::max<int64_t>(1, packed / 3));
          tk(tether_type_pack_async(t, count, u.p + origin, off, max, frag.p + off, &done, st), "fragment pack");
          off += done;
        }
        CK(cudaStreamSynchronize(st));
        ++checks;
        if (std::memcmp(frag.get().data(), want.data(), static_cast<size_t>(packed)) != 0)
          fail(std::string("fragmented pack differs (scheme ") + scheme + ")");
        back.put(poison);
        off = 0;
        while (off < packed) {
          const int64_t max = g.uni(1, std::max<int64_t>(1, packed / 3));
          tk(tether_type_unpack_async(t, count, frag.p + off, off, max, back.p + origin, &done, st), "fragment unpack");
          off += done;
        }
        CK(cudaStreamSynchronize(st));
        ++checks;
        if (!overlap && back.get() != wantUnpacked) fail(std::string("fragmented unpack differs (scheme ") + scheme + ")");
      }
    }
  }
  tether_type_free(&t);
}

void runTree(uint64_t seed, cudaStream_t st) {
  Gen g(seed);
  std::string text;
  const int depth = static_cast<int>(g.uni(1, 5));
  tether_type_t t = g.make(depth, &text);
  tk(tether_type_commit(t), "commit");
  const int64_t count = g.uni(1, 3);
  runType(t, text, count, seed, g, st);
}

// Layouts random trees seldom produce, for the elem scheme's special paths: a transpose (whole unpacks iterate in
// the user buffer's order), a small struct (its item table travels in the kernel parameters), an indexed_block
// over several instances (a table form with a period) and COSMO's north halo rows (250 doubles at x = 3: 8-byte
// units that the unpack stores in 16-byte pairs when forced, TETHER_DT_ELEM_PAIR=1, as ctest's gpu_datatype_pair
// does: the rule of gpu_map.h elemPairs() takes pairs only from 16 MiB on).
void runFixed(cudaStream_t st) {
  tether_type_t b, e, col, colr, all, d, f, st2, ib, north;
  tk(tether_type_basic(TETHER_BASIC_BYTE, &b), "basic");
  tk(tether_type_basic(TETHER_BASIC_DOUBLE, &d), "basic");
  tk(tether_type_basic(TETHER_BASIC_FLOAT, &f), "basic");
  tk(tether_type_contiguous(16, b, &e), "contiguous");
  tk(tether_type_vector(300, 1, 300, e, &col), "vector");
  tk(tether_type_resized(col, 0, 16, &colr), "resized");
  tk(tether_type_contiguous(300, colr, &all), "contiguous");
  const int64_t bl[2] = {3, 1}, disp[2] = {0, 48};
  const tether_type_t ts[2] = {d, f};
  tk(tether_type_struct(2, bl, disp, ts, &st2), "struct");
  const int64_t idx[5] = {7, 2, 11, 0, 5};
  tk(tether_type_indexed_block(5, 2, idx, f, &ib), "indexed_block");
  const int64_t sizes[3] = {8, 32, 256}, sub[3] = {8, 3, 250}, starts[3] = {0, 26, 3};
  tk(tether_type_subarray(3, sizes, sub, starts, TETHER_ORDER_C, d, &north), "subarray");
  for (tether_type_t t : {all, st2, ib, north}) tk(tether_type_commit(t), "commit");
  Gen g(424242);
  runType(all, "transpose: contiguous(300, resized(vector(300, 1, 300, 16 B), 16))", 1, 424242, g, st);
  runType(st2, "struct {3 double @0, float @48}", 3, 424243, g, st);
  runType(ib, "indexed_block(5, 2, {7,2,11,0,5}, float)", 3, 424244, g, st);
  runType(north, "COSMO north rows: subarray({8,32,256}, {8,3,250}, {0,26,3}, double)", 2, 424245, g, st);
  for (tether_type_t* t : {&b, &e, &col, &colr, &d, &f}) tether_type_free(t);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 1;
  int trees = 300;
  if (const char* s = std::getenv("TETHER_TEST_DT_SEED")) seed = std::strtoull(s, nullptr, 0);
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 0);
    else if (!std::strcmp(argv[i], "--trees") && i + 1 < argc) trees = std::atoi(argv[++i]);
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // line by line, also into a pipe: a killed run keeps its output
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("gpu_datatype: no GPU, skipped\n");
    return 77;
  }
  std::printf("gpu_datatype: seed %" PRIu64 ", %d trees (tree i uses seed + i)\n", seed, trees);
  char calib[2048];
  tk(tether_type_gpu_calibrate(0, calib, sizeof calib), "calibrate");
  std::printf("cost model:\n%s", calib);
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int i = 0; i < trees; ++i) {
    if (i % 10 == 0) std::printf("  tree %d/%d (seed %" PRIu64 "), %d checks so far, %d failed\n", i, trees,
                                 seed + static_cast<uint64_t>(i), checks, failures);
    try {
      runTree(seed + static_cast<uint64_t>(i), st);
    } catch (const Fail& f) {
      ++failures;
      std::printf("FAIL seed %" PRIu64 ": %s\n", seed + static_cast<uint64_t>(i), f.msg.c_str());
    }
  }
  try {
    runFixed(st);
  } catch (const Fail& fl) {
    ++failures;
    std::printf("FAIL fixed layouts: %s\n", fl.msg.c_str());
  }
  // Bad input: clear errors, no crash.
  {
    tether_type_t v, d;
    tk(tether_type_basic(TETHER_BASIC_DOUBLE, &d), "basic");
    tk(tether_type_vector(4, 1, 2, d, &v), "vector");
    int64_t done = 0;
    void* buf;
    CK(cudaMalloc(&buf, 1024));
    ++checks;
    if (tether_type_pack_async(v, 1, buf, 0, 32, buf, &done, st) == TETHER_SUCCESS) {
      ++failures;
      std::printf("FAIL: pack_async of an uncommitted type succeeded\n");
    }
    tk(tether_type_commit(v), "commit");
    ++checks;
    if (tether_type_pack_async(v, 1, buf, 33, 1, buf, &done, st) == TETHER_SUCCESS) {
      ++failures;
      std::printf("FAIL: pack_async past the end succeeded\n");
    }
    CK(cudaFree(buf));
    tether_type_free(&v);
    tether_type_free(&d);
  }
  std::printf("gpu_datatype: %d checks, %d failed (forced schemes not applicable: %d)\n", checks, failures,
              skippedSchemes);
  return failures ? 1 : 0;
}
