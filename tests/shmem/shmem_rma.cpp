// OpenSHMEM RMA conformance (C++): every standard RMA type (put/get/p/g/_nbi/iput/iget), the sized and mem forms,
// put-with-signal (+ signal_fetch / signal_wait_until), quiet/fence ordering, and the C++ generic overloads.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "shmem_check.h"

namespace {

constexpr size_t kN = 48;  // divisible by 2 and 3 (strided cases)

template <typename T>
T val(int pe, size_t i) {
  return static_cast<T>((pe * 31 + static_cast<int>(i) * 7) % 100 + 1);
}

template <typename T>
bool same(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0 || a == b;
}

template <typename T>
struct Ops {
  void (*put)(T*, const T*, size_t, int);
  void (*get)(T*, const T*, size_t, int);
  void (*put_nbi)(T*, const T*, size_t, int);
  void (*get_nbi)(T*, const T*, size_t, int);
  void (*p)(T*, T, int);
  T (*g)(const T*, int);
  void (*iput)(T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*iget)(T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*put_signal)(T*, const T*, size_t, uint64_t*, uint64_t, int, int);
  void (*put_signal_nbi)(T*, const T*, size_t, uint64_t*, uint64_t, int, int);
};

template <typename T>
void testType(const char* name, const Ops<T>& ops) {
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  T* sym = static_cast<T*>(shmem_calloc(kN, sizeof(T)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  SCHECK(sym && sig, "%s: calloc", name);
  std::vector<T> src(kN), dst(kN);
  for (size_t i = 0; i < kN; ++i) src[i] = val<T>(me, i);

  // put / get
  ops.put(sym, src.data(), kN, right);
  shmem_barrier_all();
  for (size_t i = 0; i < kN; ++i) SCHECK(same(sym[i], val<T>(left, i)), "%s put [%zu]", name, i);
  ops.get(dst.data(), sym, kN, right);
  for (size_t i = 0; i < kN; ++i) SCHECK(same(dst[i], src[i]), "%s get [%zu]", name, i);
  shmem_barrier_all();

  // p / g
  ops.p(&sym[1], val<T>(me, 99), right);
  shmem_barrier_all();
  SCHECK(same(sym[1], val<T>(left, 99)), "%s p", name);
  SCHECK(same(ops.g(&sym[1], right), val<T>(me, 99)), "%s g", name);
  shmem_barrier_all();

  // _nbi: reversed data, completed by quiet
  for (size_t i = 0; i < kN; ++i) src[i] = val<T>(me, kN - i);
  ops.put_nbi(sym, src.data(), kN, right);
  shmem_quiet();
  shmem_barrier_all();
  for (size_t i = 0; i < kN; ++i) SCHECK(same(sym[i], val<T>(left, kN - i)), "%s put_nbi [%zu]", name, i);
  std::fill(dst.begin(), dst.end(), T(0));
  ops.get_nbi(dst.data(), sym, kN, right);
  shmem_quiet();
  for (size_t i = 0; i < kN; ++i) SCHECK(same(dst[i], src[i]), "%s get_nbi [%zu]", name, i);
  shmem_barrier_all();

  // iput: dest stride 2, source stride 3; iget: dest stride 3, source stride 2
  std::memset(static_cast<void*>(sym), 0, kN * sizeof(T));
  shmem_barrier_all();
  for (size_t i = 0; i < kN; ++i) src[i] = val<T>(me, i + 5);
  ops.iput(sym, src.data(), 2, 3, kN / 3, right);
  shmem_barrier_all();
  for (size_t i = 0; i < kN; ++i) {
    const T want = (i % 2 == 0 && i / 2 < kN / 3) ? val<T>(left, (i / 2) * 3 + 5) : T(0);
    SCHECK(same(sym[i], want), "%s iput [%zu]", name, i);
  }
  std::fill(dst.begin(), dst.end(), T(0));
  ops.iget(dst.data(), sym, 3, 2, kN / 3, right);
  for (size_t i = 0; i < kN / 3; ++i) SCHECK(same(dst[3 * i], val<T>(me, 3 * i + 5)), "%s iget [%zu]", name, i);
  ops.iget(dst.data(), sym, 1, 1, kN, right);  // contiguous fast path
  for (size_t i = 0; i < kN; i += 2)
    SCHECK(same(dst[i], i / 2 < kN / 3 ? val<T>(me, (i / 2) * 3 + 5) : T(0)), "%s iget1 [%zu]", name, i);
  shmem_barrier_all();

  // put_signal (SET) then put_signal_nbi (ADD)
  for (size_t i = 0; i < kN; ++i) src[i] = val<T>(me, i + 11);
  ops.put_signal(sym, src.data(), kN, sig, static_cast<uint64_t>(me) + 1, SHMEM_SIGNAL_SET, right);
  const uint64_t seen = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, static_cast<uint64_t>(left) + 1);
  SCHECK(seen == static_cast<uint64_t>(left) + 1, "%s signal seen %llu", name, (unsigned long long)seen);
  for (size_t i = 0; i < kN; ++i) SCHECK(same(sym[i], val<T>(left, i + 11)), "%s put_signal [%zu]", name, i);
  shmem_barrier_all();
  ops.put_signal_nbi(sym, src.data(), kN / 2, sig, 10, SHMEM_SIGNAL_ADD, right);
  shmem_signal_wait_until(sig, SHMEM_CMP_GE, static_cast<uint64_t>(left) + 11);
  SCHECK(shmem_signal_fetch(sig) == static_cast<uint64_t>(left) + 11, "%s signal_fetch", name);
  shmem_quiet();
  shmem_barrier_all();
  shmem_free(sig);
  shmem_free(sym);
}

#define OPS(NAME, T)                                                                                               \
  testType<T>(#NAME, Ops<T>{shmem_##NAME##_put, shmem_##NAME##_get, shmem_##NAME##_put_nbi,                       \
                            shmem_##NAME##_get_nbi, shmem_##NAME##_p, shmem_##NAME##_g, shmem_##NAME##_iput,      \
                            shmem_##NAME##_iget, shmem_##NAME##_put_signal, shmem_##NAME##_put_signal_nbi});

void testSized() {
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  constexpr size_t kBytes = 16 * 12;  // 12 elements of 128 bits
  auto* sym = static_cast<unsigned char*>(shmem_calloc(kBytes, 1));
  auto* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  unsigned char src[kBytes], dst[kBytes];
  struct Sized {
    int bits;
    void (*put)(void*, const void*, size_t, int);
    void (*get)(void*, const void*, size_t, int);
    void (*put_nbi)(void*, const void*, size_t, int);
    void (*get_nbi)(void*, const void*, size_t, int);
    void (*iput)(void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int);
    void (*iget)(void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int);
    void (*put_signal)(void*, const void*, size_t, uint64_t*, uint64_t, int, int);
    void (*put_signal_nbi)(void*, const void*, size_t, uint64_t*, uint64_t, int, int);
  };
#define SIZED(B)                                                                                                   \
  Sized{B,                 shmem_put##B,         shmem_get##B,          shmem_put##B##_nbi, shmem_get##B##_nbi,    \
        shmem_iput##B,     shmem_iget##B,        shmem_put##B##_signal, shmem_put##B##_signal_nbi},
  const Sized all[] = {SIZED(8) SIZED(16) SIZED(32) SIZED(64) SIZED(128)};
#undef SIZED
  uint64_t expect_sig = 0;
  for (const Sized& s : all) {
    const size_t es = static_cast<size_t>(s.bits) / 8, nelems = kBytes / es;
    for (size_t i = 0; i < kBytes; ++i) src[i] = static_cast<unsigned char>(me * 13 + i * 3 + s.bits);
    s.put(sym, src, nelems, right);
    shmem_barrier_all();
    for (size_t i = 0; i < kBytes; ++i)
      SCHECK(sym[i] == static_cast<unsigned char>(left * 13 + i * 3 + s.bits), "put%d [%zu]", s.bits, i);
    s.get(dst, sym, nelems, right);
    SCHECK(std::memcmp(dst, src, kBytes) == 0, "get%d", s.bits);
    std::memset(dst, 0, kBytes);
    s.get_nbi(dst, sym, nelems, right);
    shmem_quiet();
    SCHECK(std::memcmp(dst, src, kBytes) == 0, "get%d_nbi", s.bits);
    shmem_barrier_all();
    std::memset(sym, 0, kBytes);
    shmem_barrier_all();
    s.put_nbi(sym, src, nelems / 2, right);
    shmem_quiet();
    shmem_barrier_all();
    for (size_t i = 0; i < kBytes; ++i) {
      const unsigned char want = i < kBytes / 2 ? static_cast<unsigned char>(left * 13 + i * 3 + s.bits) : 0;
      SCHECK(sym[i] == want, "put%d_nbi [%zu]", s.bits, i);
    }
    shmem_barrier_all();
    // iput: element k of source (stride 2) to element k of dest (stride 1)... and back with iget
    s.iput(sym, src, 1, 2, nelems / 2, right);
    shmem_barrier_all();
    for (size_t k = 0; k < nelems / 2; ++k)
      for (size_t b = 0; b < es; ++b)
        SCHECK(sym[k * es + b] == static_cast<unsigned char>(left * 13 + (2 * k * es + b) * 3 + s.bits),
               "iput%d [%zu.%zu]", s.bits, k, b);
    std::memset(dst, 0, kBytes);
    s.iget(dst, sym, 2, 1, nelems / 2, right);
    for (size_t k = 0; k < nelems / 2; ++k)
      SCHECK(std::memcmp(dst + 2 * k * es, src + 2 * k * es, es) == 0, "iget%d [%zu]", s.bits, k);
    shmem_barrier_all();
    s.put_signal(sym, src, nelems, sig, 1, SHMEM_SIGNAL_ADD, right);
    s.put_signal_nbi(sym, src, nelems, sig, 1, SHMEM_SIGNAL_ADD, right);
    expect_sig += 2;
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, expect_sig);
    SCHECK(sym[5] == static_cast<unsigned char>(left * 13 + 15 + s.bits),
           "put%d_signal", s.bits);
    shmem_quiet();
    shmem_barrier_all();
  }
  shmem_free(sig);
  shmem_free(sym);
}

void testMem() {
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  constexpr size_t kBytes = 1 << 16;
  auto* sym = static_cast<char*>(shmem_malloc(kBytes));
  auto* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  std::vector<char> src(kBytes), dst(kBytes);
  for (size_t i = 0; i < kBytes; ++i) src[i] = static_cast<char>(me + i);
  shmem_putmem(sym, src.data(), kBytes, right);
  shmem_barrier_all();
  for (size_t i = 0; i < kBytes; i += 97) SCHECK(sym[i] == static_cast<char>(left + i), "putmem [%zu]", i);
  shmem_getmem(dst.data(), sym, kBytes, right);
  SCHECK(dst == src, "getmem");
  shmem_getmem_nbi(dst.data(), sym, 100, right);
  shmem_quiet();
  shmem_barrier_all();
  shmem_putmem_nbi(sym + 1, src.data(), 100, right);
  shmem_quiet();
  shmem_barrier_all();
  SCHECK(sym[1] == static_cast<char>(left) && sym[100] == static_cast<char>(left + 99), "putmem_nbi");
  shmem_barrier_all();
  // every PE signals every PE (ADD): each PE ends with n
  for (int pe = 0; pe < n; ++pe) {
    if (pe % 2)
      shmem_putmem_signal(sym + me, src.data(), 1, sig, 1, SHMEM_SIGNAL_ADD, pe);
    else
      shmem_putmem_signal_nbi(sym + me, src.data(), 1, sig, 1, SHMEM_SIGNAL_ADD, pe);
  }
  shmem_signal_wait_until(sig, SHMEM_CMP_GE, static_cast<uint64_t>(n));
  for (int pe = 0; pe < n; ++pe) SCHECK(sym[pe] == static_cast<char>(pe), "putmem_signal from %d", pe);
  SCHECK(shmem_signal_fetch(sig) == static_cast<uint64_t>(n), "signal_fetch");
  shmem_quiet();
  shmem_barrier_all();
  shmem_free(sig);
  shmem_free(sym);
}

// fence orders puts to one PE: data, fence, flag. quiet completes them: data visible once the flag is.
void testOrdering() {
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  constexpr int kRounds = 50;
  auto* data = static_cast<long*>(shmem_calloc(256, sizeof(long)));
  auto* flag = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  long buf[256];
  for (int r = 1; r <= kRounds; ++r) {
    for (int i = 0; i < 256; ++i) buf[i] = r * 1000 + me + i;
    shmem_long_put_nbi(data, buf, 256, right);
    if (r % 2)
      shmem_fence();
    else
      shmem_quiet();
    shmem_uint64_p(flag, static_cast<uint64_t>(r), right);
    shmem_signal_wait_until(flag, SHMEM_CMP_EQ, static_cast<uint64_t>(r));
    for (int i = 0; i < 256; ++i) SCHECK(data[i] == r * 1000 + left + i, "round %d data[%d] = %ld", r, i, data[i]);
    shmem_barrier_all();  // nobody overwrites data before its target checked it
  }
  shmem_free(flag);
  shmem_free(data);
}

// C++ overloads of the generic names.
void testOverloads() {
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  auto* f = static_cast<float*>(shmem_calloc(4, sizeof(float)));
  auto* u = static_cast<unsigned short*>(shmem_calloc(4, sizeof(unsigned short)));
  auto* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  const float fs[4] = {1.5f * me, 2.f, 3.f, 4.f};
  shmem_put(f, fs, 4, right);
  shmem_p(&u[2], static_cast<unsigned short>(me + 7), right);
  shmem_put_signal(u, &u[3], 1, sig, 1, SHMEM_SIGNAL_SET, right);
  shmem_barrier_all();
  SCHECK(f[0] == 1.5f * left && u[2] == left + 7 && *sig == 1, "overloads");
  SCHECK(shmem_g(&f[0], right) == 1.5f * me, "g overload");
  float back[4];
  shmem_get(back, f, 4, right);
  shmem_iget(back, f, 1, 1, 4, right);
  SCHECK(back[0] == fs[0], "get overload");
  shmem_barrier_all();
  shmem_free(sig);
  shmem_free(u);
  shmem_free(f);
}

}  // namespace

int main() {
  shmem_init();
  SHMEM_RMA_TYPES_(OPS)
  testSized();
  testMem();
  testOrdering();
  testOverloads();
  shmem_barrier_all();
  if (shmem_my_pe() == 0) std::printf("shmem_rma: %d PEs OK\n", shmem_n_pes());
  shmem_finalize();
  return 0;
}
