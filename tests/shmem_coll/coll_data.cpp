// OpenSHMEM 1.5 team data movers: broadcast (every root; dest updated on the root too), collect (per-PE counts incl.
// 0), fcollect, alltoall, alltoalls (strides), the mem forms and the C++ overloads, over SHMEM_TEAM_WORLD, the
// even/odd strided teams (run at the same time on disjoint PEs) and a reversed team. Sizes come from a seeded
// generator (MP_SEED, printed); calls follow each other with no barrier between them (reuse safety), except that
// each alltoall comes after a team sync: OpenSHMEM requires every PE's dest to be ready before any PE calls it, and
// tether's shmem_alltoall relies on that (members store into each other's dest, TETHER_COLL_EAGER_ALLTOALL); nelems
// 0; an invalid team returns non-zero; one 4 MiB broadcast and fcollect.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../shmem/shmem_check.h"

namespace {

int me, npes;
constexpr size_t kMaxElems = 64;  // per PE, per call (random sizes are below this)
constexpr size_t kPoolBytes = 2 * 1024 * 1024;

char* g_src;  // symmetric pools (kPoolBytes each)
char* g_dst;

// Value of element i of world PE pe's source in call `tag`; exact in every tested type.
template <typename T>
T val(int pe, size_t i, unsigned tag) {
  return static_cast<T>((static_cast<unsigned>(pe) * 37u + static_cast<unsigned>(i) * 11u + tag * 5u) % 113u + 1u);
}

int worldOf(shmem_team_t t, int i) { return shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD); }

template <typename T>
void broadcastCheck(shmem_team_t t, size_t n, unsigned tag, const char* name) {
  T* src = reinterpret_cast<T*>(g_src);
  T* dst = reinterpret_cast<T*>(g_dst);
  const int tn = shmem_team_n_pes(t);
  for (int root = 0; root < tn; ++root) {
    for (size_t i = 0; i < n; ++i) src[i] = val<T>(me, i, tag + root);
    dst[n] = val<T>(me, 999, tag);  // guard element right after the data
    SCHECK(shmem_broadcast(t, dst, src, n, root) == 0, "%s broadcast", name);
    for (size_t i = 0; i < n; ++i)
      SCHECK(dst[i] == val<T>(worldOf(t, root), i, tag + root), "%s broadcast root %d [%zu]", name, root, i);
    SCHECK(dst[n] == val<T>(me, 999, tag), "%s broadcast wrote past nelems", name);
  }
}

template <typename T>
void fcollectCheck(shmem_team_t t, size_t n, unsigned tag, const char* name) {
  T* src = reinterpret_cast<T*>(g_src);
  T* dst = reinterpret_cast<T*>(g_dst);
  for (size_t i = 0; i < n; ++i) src[i] = val<T>(me, i, tag);
  SCHECK(shmem_fcollect(t, dst, src, n) == 0, "%s fcollect", name);
  for (int m = 0; m < shmem_team_n_pes(t); ++m)
    for (size_t i = 0; i < n; ++i)
      SCHECK(dst[static_cast<size_t>(m) * n + i] == val<T>(worldOf(t, m), i, tag), "%s fcollect [%d][%zu]", name, m, i);
}

// Count of team PE m in a collect: varies per PE, some zero.
size_t collectCount(int m, unsigned tag) { return (static_cast<size_t>(m) * 7 + tag) % 6; }

template <typename T>
void collectCheck(shmem_team_t t, unsigned tag, const char* name) {
  T* src = reinterpret_cast<T*>(g_src);
  T* dst = reinterpret_cast<T*>(g_dst);
  const int ti = shmem_team_my_pe(t);
  for (size_t i = 0; i < collectCount(ti, tag); ++i) src[i] = val<T>(me, i, tag);
  SCHECK(shmem_collect(t, dst, src, collectCount(ti, tag)) == 0, "%s collect", name);
  size_t off = 0;
  for (int m = 0; m < shmem_team_n_pes(t); ++m)
    for (size_t i = 0; i < collectCount(m, tag); ++i, ++off)
      SCHECK(dst[off] == val<T>(worldOf(t, m), i, tag), "%s collect [%d][%zu]", name, m, i);
}

// Alltoall data: element i of the block for team PE j.
template <typename T>
T a2a(int fromWorld, int j, size_t i, unsigned tag) {
  return val<T>(fromWorld, static_cast<size_t>(j) * 1000 + i, tag);
}

template <typename T>
void alltoallCheck(shmem_team_t t, size_t n, unsigned tag, const char* name) {
  T* src = reinterpret_cast<T*>(g_src);
  T* dst = reinterpret_cast<T*>(g_dst);
  const int tn = shmem_team_n_pes(t), ti = shmem_team_my_pe(t);
  for (int j = 0; j < tn; ++j)
    for (size_t i = 0; i < n; ++i) src[static_cast<size_t>(j) * n + i] = a2a<T>(me, j, i, tag);
  SCHECK(shmem_team_sync(t) == 0, "%s sync before alltoall", name);  // every dest ready (OpenSHMEM's precondition)
  SCHECK(shmem_alltoall(t, dst, src, n) == 0, "%s alltoall", name);
  for (int m = 0; m < tn; ++m)
    for (size_t i = 0; i < n; ++i)
      SCHECK(dst[static_cast<size_t>(m) * n + i] == a2a<T>(worldOf(t, m), ti, i, tag), "%s alltoall [%d][%zu]", name,
             m, i);
}

template <typename T>
void alltoallsCheck(shmem_team_t t, ptrdiff_t dstStride, ptrdiff_t srcStride, size_t n, unsigned tag,
                    const char* name) {
  T* src = reinterpret_cast<T*>(g_src);
  T* dst = reinterpret_cast<T*>(g_dst);
  const int tn = shmem_team_n_pes(t), ti = shmem_team_my_pe(t);
  const size_t ds = static_cast<size_t>(dstStride), ss = static_cast<size_t>(srcStride);
  const T hole = val<T>(me, 777, tag);
  for (size_t k = 0; k < static_cast<size_t>(tn) * n * ds; ++k) dst[k] = hole;
  for (int j = 0; j < tn; ++j)
    for (size_t i = 0; i < n; ++i) src[ss * (static_cast<size_t>(j) * n + i)] = a2a<T>(me, j, i, tag);
  SCHECK(shmem_alltoalls(t, dst, src, dstStride, srcStride, n) == 0, "%s alltoalls", name);
  for (int m = 0; m < tn; ++m)
    for (size_t i = 0; i < n; ++i) {
      const size_t at = ds * (static_cast<size_t>(m) * n + i);
      SCHECK(dst[at] == a2a<T>(worldOf(t, m), ti, i, tag), "%s alltoalls (%td,%td) [%d][%zu]", name, dstStride,
             srcStride, m, i);
      for (size_t h = 1; h < ds; ++h) SCHECK(dst[at + h] == hole, "%s alltoalls wrote a hole", name);
    }
}

template <typename T>
void everything(shmem_team_t t, std::mt19937& rng, const char* name) {
  for (int rep = 0; rep < 3; ++rep) {
    const size_t n = rng() % kMaxElems;
    const unsigned tag = static_cast<unsigned>(rng() % 1000);
    broadcastCheck<T>(t, n, tag, name);
    fcollectCheck<T>(t, n, tag, name);
    collectCheck<T>(t, tag, name);
    alltoallCheck<T>(t, n, tag, name);
    alltoallsCheck<T>(t, 1 + static_cast<ptrdiff_t>(rng() % 3), 1 + static_cast<ptrdiff_t>(rng() % 3), n, tag, name);
    alltoallsCheck<T>(t, 2, 40, n % 4, tag, name);  // sparse source, fetched by span
    if (sizeof(T) <= 8) alltoallsCheck<T>(t, 1, 12000, 2, tag, name);  // very sparse: element by element (>= 8 B)
  }
  broadcastCheck<T>(t, 0, 1, name);
  fcollectCheck<T>(t, 0, 2, name);
  alltoallCheck<T>(t, 0, 3, name);
  alltoallsCheck<T>(t, 2, 3, 0, 4, name);
}

// The typed names (a few) and the mem forms, compared with the overloads' results.
void typedAndMem(shmem_team_t t) {
  const int tn = shmem_team_n_pes(t), ti = shmem_team_my_pe(t);
  int* src = reinterpret_cast<int*>(g_src);
  int* dst = reinterpret_cast<int*>(g_dst);
  for (int i = 0; i < 4; ++i) src[i] = me * 10 + i;
  SCHECK(shmem_int_broadcast(t, dst, src, 4, tn - 1) == 0, "int_broadcast");
  for (int i = 0; i < 4; ++i) SCHECK(dst[i] == worldOf(t, tn - 1) * 10 + i, "int_broadcast [%d]", i);
  SCHECK(shmem_broadcastmem(t, dst, src, 3, 0) == 0, "broadcastmem");  // 3 bytes
  int root0 = worldOf(t, 0) * 10;
  SCHECK(std::memcmp(dst, &root0, 3) == 0, "broadcastmem bytes");
  SCHECK(shmem_fcollectmem(t, dst, src, sizeof(int)) == 0, "fcollectmem");
  for (int m = 0; m < tn; ++m) SCHECK(dst[m] == worldOf(t, m) * 10, "fcollectmem [%d]", m);
  SCHECK(shmem_collectmem(t, dst, src, ti % 2 == 0 ? sizeof(int) : 0) == 0, "collectmem");
  for (int m = 0, k = 0; m < tn; ++m)
    if (m % 2 == 0) SCHECK(dst[k++] == worldOf(t, m) * 10, "collectmem [%d]", m);
  for (int j = 0; j < tn; ++j) src[j] = me * 100 + j;
  SCHECK(shmem_team_sync(t) == 0, "sync before alltoallmem");  // every dest ready (OpenSHMEM's precondition)
  SCHECK(shmem_alltoallmem(t, dst, src, sizeof(int)) == 0, "alltoallmem");
  for (int m = 0; m < tn; ++m) SCHECK(dst[m] == worldOf(t, m) * 100 + ti, "alltoallmem [%d]", m);
  SCHECK(shmem_alltoallsmem(t, dst, src, 1, 1, sizeof(int)) == 0, "alltoallsmem");
  for (int m = 0; m < tn; ++m) SCHECK(dst[m] == worldOf(t, m) * 100 + ti, "alltoallsmem [%d]", m);
  for (int j = 0; j < tn; ++j) src[2 * j] = me * 100 + j;
  SCHECK(shmem_int_alltoalls(t, dst, src, 1, 2, 1) == 0, "int_alltoalls");
  for (int m = 0; m < tn; ++m) SCHECK(dst[m] == worldOf(t, m) * 100 + ti, "int_alltoalls [%d]", m);
  double* dsrc = reinterpret_cast<double*>(g_src);
  double* ddst = reinterpret_cast<double*>(g_dst);
  dsrc[0] = me + 0.5;
  SCHECK(shmem_double_fcollect(t, ddst, dsrc, 1) == 0, "double_fcollect");
  for (int m = 0; m < tn; ++m) SCHECK(ddst[m] == worldOf(t, m) + 0.5, "double_fcollect [%d]", m);
  SCHECK(shmem_long_collect(t, reinterpret_cast<long*>(g_dst), reinterpret_cast<long*>(g_src), 0) == 0,
         "collect of nothing");
}

// One large broadcast and fcollect (one get per member): correctness and a rough time.
void large(shmem_team_t t) {
  const size_t bytes = 4u << 20;
  char* src = static_cast<char*>(shmem_malloc(bytes));
  char* dst = static_cast<char*>(shmem_malloc(bytes));
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<char>(i * 7 + static_cast<size_t>(me));
  SCHECK(shmem_broadcastmem(t, dst, src, bytes, 0) == 0, "large broadcast");
  for (size_t i = 0; i < bytes; i += 4093) SCHECK(dst[i] == static_cast<char>(i * 7), "large broadcast [%zu]", i);
  const size_t per = bytes / static_cast<size_t>(npes);
  SCHECK(shmem_fcollectmem(t, dst, src, per) == 0, "large fcollect");
  for (int m = 0; m < npes; ++m)
    for (size_t i = 0; i < per; i += 4093)
      SCHECK(dst[static_cast<size_t>(m) * per + i] == static_cast<char>(i * 7 + static_cast<size_t>(m)),
             "large fcollect [%d][%zu]", m, i);
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
}

void allTypes(shmem_team_t t, std::mt19937& rng) {
  everything<int>(t, rng, "int");
  everything<double>(t, rng, "double");
  everything<long double>(t, rng, "longdouble");
  everything<char>(t, rng, "char");
  everything<unsigned short>(t, rng, "ushort");
  everything<unsigned long long>(t, rng, "ulonglong");
  everything<float>(t, rng, "float");
  typedAndMem(t);
}

}  // namespace

int main() {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  unsigned seed = 12345;
  if (const char* s = std::getenv("MP_SEED")) seed = static_cast<unsigned>(std::strtoul(s, nullptr, 10));
  if (me == 0) std::printf("seed %u\n", seed);
  g_src = static_cast<char*>(shmem_malloc(kPoolBytes));
  g_dst = static_cast<char*>(shmem_malloc(kPoolBytes));
  SCHECK(g_src && g_dst, "pools");

  std::mt19937 world(seed);  // same sequence on every member of a team
  allTypes(SHMEM_TEAM_WORLD, world);

  shmem_team_t even, odd, rev;
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, nullptr, 0, &even) == 0, "even");
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, nullptr, 0, &odd) == 0, "odd");
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, nullptr, 0, &rev) == 0, "reversed");
  std::mt19937 parity(seed + 1 + static_cast<unsigned>(me % 2));  // the even and odd teams run different sequences
  allTypes(me % 2 == 0 ? even : odd, parity);
  std::mt19937 reversed(seed + 7);
  allTypes(rev, reversed);

  // Not a member / invalid: non-zero, nothing moves.
  shmem_team_t other = me % 2 == 0 ? odd : even;
  SCHECK(shmem_int_broadcast(other, reinterpret_cast<int*>(g_dst), reinterpret_cast<int*>(g_src), 1, 0) != 0,
         "broadcast on a team this PE is not in");
  SCHECK(shmem_fcollectmem(SHMEM_TEAM_INVALID, g_dst, g_src, 1) != 0, "fcollect on INVALID");
  SCHECK(shmem_alltoallsmem(SHMEM_TEAM_INVALID, g_dst, g_src, 1, 1, 1) != 0, "alltoalls on INVALID");

  large(SHMEM_TEAM_WORLD);
  shmem_team_destroy(even);
  shmem_team_destroy(odd);
  shmem_team_destroy(rev);
  shmem_barrier_all();
  if (me == 0) std::printf("coll_data: OK (%d PEs)\n", npes);
  shmem_free(g_dst);
  shmem_free(g_src);
  shmem_finalize();
  return 0;
}
