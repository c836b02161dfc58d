// Non-contiguous put/get (tether_put_typed & co.) between 2 PEs over DEVICE segments: the GPU route (pack/unpack
// kernels reading and writing the peer's GPU memory through its mapped address, GPU staging for typed-to-typed),
// local buffers in GPU memory and in pageable host memory, against the host reference; poisoned targets compared
// whole. Exits 77 without a GPU. Seed: MP_SEED (printed), random trees: MP_TREES.
// Status: compiled in CI; not yet run on a GPU (no GPU machine when it was written).
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "../datatype/random_types.h"
#include "../mp/typed_sides.h"
#include "gpu_util.h"
#include "tether/datatype.h"

namespace {

using typed_test::data;
using typed_test::expected;
using typed_test::poison;
using typed_test::Side;
using typed_test::side;

void compare(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want, const std::string& what) {
  typed_test::compare(got.data(), want, what.c_str());
}

// put then get between the two PEs; remote side in the DEVICE segment, local side in GPU or pageable host memory.
void exchange(const Side& remote, const Side& local, bool localOnGpu, uint64_t seed, const std::string& what) {
  tether_t w = mp::world();
  const int me = tether_my_pe(w), other = 1 - me;
  auto* sym = static_cast<unsigned char*>(gpu_test::symAlloc(w, TETHER_SEG_DEVICE, static_cast<size_t>(remote.bytes())));
  const size_t lb = static_cast<size_t>(local.bytes());
  unsigned char* devLocal = nullptr;
  std::vector<unsigned char> hostLocal(localOnGpu ? 0 : lb);
  if (localOnGpu) CK(cudaMalloc(&devLocal, lb));
  unsigned char* loc = localOnGpu ? devLocal : hostLocal.data();
  auto setLocal = [&](const std::vector<unsigned char>& v) {
    if (localOnGpu) CK(cudaMemcpy(devLocal, v.data(), lb, cudaMemcpyHostToDevice));
    else hostLocal = v;
  };
  auto getLocal = [&]() {
    if (!localOnGpu) return hostLocal;
    std::vector<unsigned char> v(lb);
    CK(cudaMemcpy(v.data(), devLocal, lb, cudaMemcpyDeviceToHost));
    return v;
  };
  const size_t rb = static_cast<size_t>(remote.bytes());
  std::vector<unsigned char> got(rb);
  const std::string tag = what + (localOnGpu ? " [local GPU]" : " [local host]");

  CK(cudaMemcpy(sym, poison(remote.bytes()).data(), rb, cudaMemcpyHostToDevice));
  setLocal(data(local.bytes(), seed, me));
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_put_typed(w, sym + remote.origin(), remote.type, remote.count, loc + local.origin(), local.type,
                         local.count, other));
  MP_OK(tether_barrier_all(w));
  CK(cudaMemcpy(got.data(), sym, rb, cudaMemcpyDeviceToHost));
  compare(got, expected(local, data(local.bytes(), seed, other), remote), "put " + tag);
  MP_OK(tether_barrier_all(w));

  CK(cudaMemcpy(sym, data(remote.bytes(), seed + 1, me).data(), rb, cudaMemcpyHostToDevice));
  setLocal(poison(local.bytes()));
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_get_typed_nbi(w, loc + local.origin(), local.type, local.count, sym + remote.origin(), remote.type,
                             remote.count, other));
  MP_OK(tether_quiet(w));
  compare(getLocal(), expected(remote, data(remote.bytes(), seed + 1, other), local), "get " + tag);
  if (devLocal) CK(cudaFree(devLocal));
  MP_OK(tether_free(w, sym));
}

tether_type_t committed(tether_type_t t) {
  TK(tether_type_commit(t));
  return t;
}

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  tether_t w = mp::world();
  MP_CHECK(tether_n_pes(w) == 2);
  const char* s = std::getenv("MP_SEED");
  const uint64_t seed = s ? std::strtoull(s, nullptr, 10) : 2026;
  const char* tr = std::getenv("MP_TREES");
  const int trees = tr ? std::atoi(tr) : 20;
  if (tether_my_pe(w) == 0) std::printf("seed %" PRIu64 " trees %d\n", seed, trees);

  tether_type_t b = nullptr, va = nullptr, vb = nullptr, c = nullptr;
  TK(tether_type_basic(TETHER_BASIC_BYTE, &b));
  TK(tether_type_vector(5400, 1000, 1700, b, &va));
  TK(tether_type_vector(18000, 300, 333, b, &vb));
  TK(tether_type_contiguous(5400000, b, &c));
  committed(va), committed(vb), committed(c);
  const Side A = side(va, 1), B = side(vb, 1), C = side(c, 1);
  for (bool g : {true, false}) {
    exchange(A, B, g, seed + 1, "vector(1000/1700) <- vector(300/333)");  // typed to typed: GPU staging, fragments
    exchange(B, C, g, seed + 2, "vector(300/333) <- bytes");               // one unpack launch into the peer
    exchange(C, A, g, seed + 3, "bytes <- vector(1000/1700)");             // one pack launch into the peer
  }
  int done = 0;
  for (int it = 0; it < trees; ++it) {
    dt_test::Gen gen(seed * 1000003u + static_cast<uint64_t>(it));
    std::string text;
    tether_type_t t = nullptr;
    try {
      t = gen.make(static_cast<int>(gen.uni(1, 3)), &text);
    } catch (const dt_test::Fail& f) {
      std::fprintf(stderr, "FAIL generator: %s\n", f.msg.c_str());
      return 1;
    }
    if (tether_type_commit(t) != TETHER_SUCCESS) {
      tether_type_free(&t);
      continue;
    }
    const Side T = side(t, 2);
    int64_t n = 0;
    TK(tether_type_packed_size(t, 2, &n));
    if (n == 0 || n > (4 << 20) || T.bytes() > (16 << 20)) {
      tether_type_free(&t);
      continue;
    }
    tether_type_t bt = nullptr;
    TK(tether_type_contiguous(n, b, &bt));
    committed(bt);
    const Side Bt = side(bt, 1);
    const std::string what = "seed " + std::to_string(seed) + " tree " + std::to_string(it) + " " + text;
    exchange(T, Bt, it % 2 == 0, seed + 100 + it, what + " <- bytes");
    exchange(Bt, T, it % 2 == 1, seed + 200 + it, "bytes <- " + what);
    exchange(T, T, it % 2 == 0, seed + 300 + it, what + " <- itself");
    tether_type_free(&bt);
    tether_type_free(&t);
    ++done;
  }
  if (tether_my_pe(w) == 0) std::printf("random trees exchanged: %d\n", done);
  for (tether_type_t* t : {&b, &va, &vb, &c}) tether_type_free(t);
  return mp::finish();
}
