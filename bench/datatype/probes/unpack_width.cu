// Probe (issue #7): why unpacks of long 8-byte-aligned rows (COSMO north: 2000 B rows at byte 24 of a 2048 B pitch)
// reach 66 % of the roofline while their packs reach 88 %. It unpacks the same layout (3 rows per plane, 16384
// planes, 98 MB packed) with hand kernels that differ in one thing each:
//   u8      thread per 8 B unit, rows at byte 24 (as the benchmark's COSMO north; tether's elem kernel does this)
//   u8a     the same with rows at byte 32 (16 B and sector aligned)
//   u16a    thread per 16 B unit, rows at byte 32
//   pair    rows at byte 24; thread per pair of 8 B units, pairs phased so that a row's pairs start 16 B aligned:
//           one 16 B store where both units are in one row, else two 8 B stores (loads: two 8 B)
//   p8 / p8x4  the pack of the byte-24 layout, thread per unit / 4 units per thread (tether's elem choice), for reference
// Times: CUDA events, best of 10 after a warm-up; every unpack is checked against the u8 result.
// Run: build/default/bench/datatype/tether_probe_unpack_width (needs a GPU). Results: bench/results/h200/experiments/.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "../../cuda_check.h"

namespace {

constexpr uint32_t kUnits = 250, kRows = 3, kPlanes = 16384;  // 8 B units per row, rows per plane, planes
constexpr uint64_t kPitch = 2048, kPlanePitch = 32 * kPitch;
constexpr uint32_t kTotal = kUnits * kRows * kPlanes;  // 8 B units packed

__device__ __forceinline__ uint64_t userOff(uint32_t t, uint32_t shift) {  // byte offset of 8 B unit t
  const uint32_t row = t / kUnits, u = t - row * kUnits, plane = row / kRows, r = row - plane * kRows;
  return plane * kPlanePitch + r * kPitch + shift + u * 8ull;
}

__global__ void unpack8(const uint2* __restrict__ packed, char* __restrict__ user, uint32_t shift) {
  const uint32_t t = blockIdx.x * 256u + threadIdx.x;
  if (t < kTotal) *reinterpret_cast<uint2*>(user + userOff(t, shift)) = packed[t];
}
__global__ void pack8(const char* __restrict__ user, uint2* __restrict__ packed, uint32_t shift) {
  const uint32_t t = blockIdx.x * 256u + threadIdx.x;
  if (t < kTotal) packed[t] = *reinterpret_cast<const uint2*>(user + userOff(t, shift));
}
__global__ void pack8x4(const char* __restrict__ user, uint2* __restrict__ packed, uint32_t shift) {
  const uint32_t first = blockIdx.x * 1024u + threadIdx.x;
  uint2 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint32_t t = first + 256u * k;
    if (t < kTotal) v[k] = *reinterpret_cast<const uint2*>(user + userOff(t, shift));
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint32_t t = first + 256u * k;
    if (t < kTotal) packed[t] = v[k];
  }
}
__global__ void unpack16(const uint4* __restrict__ packed, char* __restrict__ user) {  // rows at byte 32
  const uint32_t t = blockIdx.x * 256u + threadIdx.x;  // 16 B unit
  if (t < kTotal / 2) {
    const uint32_t row = t / (kUnits / 2), u = t - row * (kUnits / 2), plane = row / kRows, r = row - plane * kRows;
    *reinterpret_cast<uint4*>(user + plane * kPlanePitch + r * kPitch + 32 + u * 16ull) = packed[t];
  }
}
// Pairs (2p - 1, 2p) of 8 B units: rows at byte 24 start at 8 mod 16, so unit 0 of a row pairs with the last unit of
// the row before (two 8 B stores) and units (1, 2), (3, 4), ... are 16 B aligned (one store).
__global__ void unpackPair(const uint2* __restrict__ packed, char* __restrict__ user, uint32_t shift) {
  const uint32_t p = blockIdx.x * 256u + threadIdx.x;
  if (p > kTotal / 2) return;
  const uint32_t t0 = 2 * p - 1, t1 = 2 * p;  // t0 wraps for p == 0 (skipped)
  const bool h0 = p > 0, h1 = t1 < kTotal;
  const uint64_t a0 = h0 ? userOff(t0, shift) : 0, a1 = h1 ? userOff(t1, shift) : 0;
  const uint2 v0 = h0 ? packed[t0] : uint2{}, v1 = h1 ? packed[t1] : uint2{};
  if (h0 && h1 && a1 == a0 + 8 && (a0 & 15) == 0) {
    *reinterpret_cast<uint4*>(user + a0) = uint4{v0.x, v0.y, v1.x, v1.y};
  } else {
    if (h0) *reinterpret_cast<uint2*>(user + a0) = v0;
    if (h1) *reinterpret_cast<uint2*>(user + a1) = v1;
  }
}

__global__ void fill(uint64_t* p, size_t n) {
  for (size_t i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull) p[i] = i * 0x9e3779b97f4a7c15ull;
}

template <typename F>
float bestMs(F f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  f();
  float best = 1e30f;
  for (int i = 0; i < 10; ++i) {
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    best = best < ms ? best : ms;
  }
  CK(cudaGetLastError());
  return best;
}

}  // namespace

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "no GPU\n");
    return 77;
  }
  const size_t span = kPlanes * kPlanePitch, packedBytes = size_t{kTotal} * 8;
  char *user, *ref;
  uint2* packed;
  CK(cudaMalloc(&user, span));
  CK(cudaMalloc(&ref, span));
  CK(cudaMalloc(&packed, packedBytes));
  fill<<<1024, 256>>>(reinterpret_cast<uint64_t*>(packed), packedBytes / 8);
  CK(cudaMemset(ref, 0, span));
  unpack8<<<(kTotal + 255) / 256, 256>>>(packed, ref, 24);
  CK(cudaDeviceSynchronize());
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# tether_probe_unpack_width on %s: %u rows of 2000 B (3 per plane, pitch 2048 B, plane pitch 64 KiB), "
              "%.1f MB packed; best of 10, us\n",
              prop.name, kRows * kPlanes, packedBytes / 1e6);
  const unsigned g8 = (kTotal + 255) / 256, g16 = (kTotal / 2 + 255) / 256, gp = (kTotal / 2 + 1 + 255) / 256;
  auto check = [&](const char* name, uint32_t shift) {
    // compare the rows (not the gaps) with the u8 result, shifted where the layout is
    std::vector<char> a(span), b(span);
    CK(cudaMemcpy(a.data(), ref, span, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), user, span, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (uint64_t row = 0; row < uint64_t{kRows} * kPlanes; ++row) {
      const uint64_t base = row / kRows * kPlanePitch + row % kRows * kPitch;
      for (uint32_t k = 0; k < kUnits * 8; ++k) bad += a[base + 24 + k] != b[base + shift + k];
    }
    if (bad) std::printf("%s: %zu bytes differ\n", name, bad);
    return bad == 0;
  };
  bool ok = true;
  const float u8 = bestMs([&] { unpack8<<<g8, 256>>>(packed, user, 24); });
  ok &= check("u8", 24);
  const float u8a = bestMs([&] { unpack8<<<g8, 256>>>(packed, user, 32); });
  ok &= check("u8a", 32);
  const float u16a = bestMs([&] { unpack16<<<g16, 256>>>(reinterpret_cast<const uint4*>(packed), user); });
  ok &= check("u16a", 32);
  const float pair = bestMs([&] { unpackPair<<<gp, 256>>>(packed, user, 24); });
  ok &= check("pair", 24);
  const float p8 = bestMs([&] { pack8<<<g8, 256>>>(ref, packed, 24); });
  const float p8x4 = bestMs([&] { pack8x4<<<(kTotal + 1023) / 1024, 256>>>(ref, packed, 24); });
  auto gbs = [&](float ms) { return packedBytes / (ms * 1e-3) / 1e9; };
  std::printf("unpack: u8 %.1f (%.0f GB/s), u8a %.1f (%.0f), u16a %.1f (%.0f), pair %.1f (%.0f); pack: p8 %.1f (%.0f), "
              "p8x4 %.1f (%.0f)%s\n",
              u8 * 1e3, gbs(u8), u8a * 1e3, gbs(u8a), u16a * 1e3, gbs(u16a), pair * 1e3, gbs(pair), p8 * 1e3, gbs(p8),
              p8x4 * 1e3, gbs(p8x4), ok ? "; all unpacks checked" : "; CHECK FAILED");
  return ok ? 0 : 1;
}
