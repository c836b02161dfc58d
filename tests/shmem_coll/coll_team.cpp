// OpenSHMEM 1.5 team management: predefined teams, split_strided (incl. negative stride, single PE, PEs left out,
// invalid triplets and parents), split_2d (incl. incomplete last row, xrange beyond the parent, invalid xrange),
// nested splits, translate_pe, team_ptr, get_config, team_sync (visibility of stores), destroy and slot reuse (many
// more teams over time than slots; running out of slots returns an error on every PE).
#include <cstdint>
#include <cstdio>
#include <vector>

#include "../shmem/shmem_check.h"

namespace {

int me, npes;

void checkTeam(shmem_team_t t, const std::vector<int>& worldPes, const char* what) {
  int idx = -1;
  for (size_t i = 0; i < worldPes.size(); ++i)
    if (worldPes[i] == me) idx = static_cast<int>(i);
  if (idx < 0) {
    SCHECK(t == SHMEM_TEAM_INVALID, "%s: non-member got a team", what);
    SCHECK(shmem_team_my_pe(t) == -1 && shmem_team_n_pes(t) == -1, "%s: queries of INVALID", what);
    return;
  }
  SCHECK(t != SHMEM_TEAM_INVALID, "%s: member got SHMEM_TEAM_INVALID", what);
  SCHECK(shmem_team_my_pe(t) == idx, "%s: my_pe %d, want %d", what, shmem_team_my_pe(t), idx);
  SCHECK(shmem_team_n_pes(t) == static_cast<int>(worldPes.size()), "%s: n_pes %d, want %zu", what,
         shmem_team_n_pes(t), worldPes.size());
  for (size_t i = 0; i < worldPes.size(); ++i) {
    SCHECK(shmem_team_translate_pe(t, static_cast<int>(i), SHMEM_TEAM_WORLD) == worldPes[i], "%s: translate %zu",
           what, i);
    SCHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, worldPes[i], t) == static_cast<int>(i),
           "%s: translate back %zu", what, i);
  }
  SCHECK(shmem_team_translate_pe(t, -1, SHMEM_TEAM_WORLD) == -1, "%s: translate -1", what);
  SCHECK(shmem_team_translate_pe(t, static_cast<int>(worldPes.size()), SHMEM_TEAM_WORLD) == -1,
         "%s: translate size", what);
  for (int pe = 0; pe < npes; ++pe) {
    bool in = false;
    for (int p : worldPes) in = in || p == pe;
    if (!in) SCHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, t) == -1, "%s: non-member %d translates", what, pe);
  }
  SCHECK(shmem_team_sync(t) == 0, "%s: team_sync", what);
}

std::vector<int> strided(int start, int stride, int size) {
  std::vector<int> v;
  for (int i = 0; i < size; ++i) v.push_back(start + i * stride);
  return v;
}

void predefined() {
  SCHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "world");
  SCHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == npes, "shared: every PE is on this host");
  SCHECK(shmem_team_my_pe(SHMEM_TEAM_SHARED) == me, "shared my_pe");
  SCHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1 && shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "invalid");
  SCHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_INVALID) == -1, "translate to invalid");
  SCHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1, "translate from invalid");
  SCHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes, SHMEM_TEAM_SHARED) == -1, "translate out of range");
  shmem_team_config_t c = {7};
  SCHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &c) == 0 && c.num_contexts == 0,
         "world config");
  SCHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &c) != 0, "config of INVALID");
  SCHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, nullptr) != 0, "config NULL");
  SCHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, 1L << 5, &c) != 0, "unknown mask bits");
  SCHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0 && shmem_team_sync(SHMEM_TEAM_SHARED) == 0, "sync predefined");
  SCHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "sync INVALID");
  SCHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0 && shmem_sync(SHMEM_TEAM_INVALID) != 0, "C++ shmem_sync(team)");
  shmem_team_destroy(SHMEM_TEAM_INVALID);  // no-op
  long* sym = static_cast<long*>(shmem_malloc(sizeof(long)));
  for (int pe = 0; pe < npes; ++pe)
    SCHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, sym, pe) == shmem_ptr(sym, pe), "team_ptr %d", pe);
  SCHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, sym, npes) == nullptr, "team_ptr out of range");
  SCHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, sym, 0) == nullptr, "team_ptr INVALID");
  shmem_free(sym);
}

void splitStrided() {
  const int half = (npes + 1) / 2;
  shmem_team_t even, odd, rev, single, t;
  shmem_team_config_t cfg = {3};
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, half, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &even) == 0, "even");
  checkTeam(even, strided(0, 2, half), "even");
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, nullptr, 0, &odd) == 0, "odd");
  checkTeam(odd, strided(1, 2, npes / 2), "odd");
  shmem_team_t mine = me % 2 == 0 ? even : odd;
  shmem_team_config_t got = {-1};
  SCHECK(shmem_team_get_config(mine, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0, "get_config");
  SCHECK(got.num_contexts == (me % 2 == 0 ? 3 : 0), "num_contexts %d", got.num_contexts);
  got.num_contexts = 42;
  SCHECK(shmem_team_get_config(mine, 0, &got) == 0 && got.num_contexts == 42, "mask 0 writes nothing");

  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, nullptr, 0, &rev) == 0, "reverse");
  checkTeam(rev, strided(npes - 1, -1, npes), "reverse");
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, 0, 1, nullptr, 0, &single) == 0, "stride 0 size 1");
  checkTeam(single, {npes - 1}, "single");

  // Nested: every second PE of the even team (world PEs 0, 4, 8...), split from the members of `even` only.
  if (me % 2 == 0) {
    shmem_team_t nested;
    SCHECK(shmem_team_split_strided(even, 0, 2, (half + 1) / 2, nullptr, 0, &nested) == 0, "nested");
    checkTeam(nested, strided(0, 4, (half + 1) / 2), "nested");
    if (nested != SHMEM_TEAM_INVALID) {
      SCHECK(shmem_team_translate_pe(nested, shmem_team_n_pes(nested) - 1, even) == shmem_team_n_pes(nested) * 2 - 2,
             "nested -> even");
      shmem_team_destroy(nested);
      SCHECK(shmem_team_n_pes(nested) == -1, "destroyed handle is invalid");
    }
    // A split whose new team lies inside the parent's tail, from a reversed parent.
    shmem_team_t tail;
    SCHECK(shmem_team_split_strided(even, half - 1, -1, 1, nullptr, 0, &tail) == 0, "tail");
    checkTeam(tail, {2 * (half - 1)}, "tail");
    shmem_team_destroy(tail);
  }

  // Invalid triplets and parents: non-zero and SHMEM_TEAM_INVALID on every PE, no hang.
  const int bad[][3] = {{0, 1, 0},         {0, 1, npes + 1}, {-1, 1, 1},  {npes, 1, 1},
                        {0, 0, 2},         {npes - 1, 1, 2}, {0, -1, 2}, {1, npes, 2}};
  for (const auto& b : bad) {
    t = SHMEM_TEAM_WORLD;
    SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, b[0], b[1], b[2], nullptr, 0, &t) != 0 &&
               t == SHMEM_TEAM_INVALID,
           "triplet (%d, %d, %d) accepted", b[0], b[1], b[2]);
  }
  t = SHMEM_TEAM_WORLD;
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, nullptr, 0, &t) != 0 && t == SHMEM_TEAM_INVALID,
         "INVALID parent");
  t = SHMEM_TEAM_WORLD;
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 1, nullptr, SHMEM_TEAM_NUM_CONTEXTS, &t) != 0 &&
             t == SHMEM_TEAM_INVALID,
         "NULL config with a mask");
  // The other parity's team: this PE is not in it (its handle is INVALID here).
  shmem_team_t other = me % 2 == 0 ? odd : even;
  SCHECK(shmem_team_split_strided(other, 0, 1, 1, nullptr, 0, &t) != 0 && t == SHMEM_TEAM_INVALID,
         "split of a team this PE is not in");

  shmem_team_destroy(even);
  shmem_team_destroy(odd);
  shmem_team_destroy(rev);
  shmem_team_destroy(single);
  SCHECK(shmem_team_my_pe(mine) == -1, "destroyed team still valid");
}

void split2d() {
  const int xranges[] = {1, 2, 3, npes, npes + 3};
  for (int xr : xranges) {
    shmem_team_t xt, yt;
    SCHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, nullptr, 0, &xt, nullptr, 0, &yt) == 0, "2d xrange %d", xr);
    const int x = xr < npes ? xr : npes;
    const int row = me / x, col = me % x;
    std::vector<int> rowPes, colPes;
    for (int p = row * x; p < npes && p < (row + 1) * x; ++p) rowPes.push_back(p);
    for (int p = col; p < npes; p += x) colPes.push_back(p);
    checkTeam(xt, rowPes, "2d x");
    checkTeam(yt, colPes, "2d y");
    SCHECK(shmem_team_my_pe(xt) == col && shmem_team_my_pe(yt) == row, "2d coordinates");
    // The x and y teams of one PE hold different slots: collectives on both interleave safely.
    for (int i = 0; i < 5; ++i) SCHECK(shmem_team_sync(xt) == 0 && shmem_team_sync(yt) == 0, "2d syncs");
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
  }
  shmem_team_t xt = SHMEM_TEAM_WORLD, yt = SHMEM_TEAM_WORLD;
  SCHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, nullptr, 0, &xt, nullptr, 0, &yt) != 0 &&
             xt == SHMEM_TEAM_INVALID && yt == SHMEM_TEAM_INVALID,
         "xrange 0");
  xt = yt = SHMEM_TEAM_WORLD;
  SCHECK(shmem_team_split_2d(SHMEM_TEAM_INVALID, 2, nullptr, 0, &xt, nullptr, 0, &yt) != 0 &&
             xt == SHMEM_TEAM_INVALID && yt == SHMEM_TEAM_INVALID,
         "2d INVALID parent");
  // 2d of a 2d team (3-D decomposition style): split each y-team into pairs.
  SCHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, nullptr, 0, &xt, nullptr, 0, &yt) == 0, "2d for nesting");
  shmem_team_t a, b;
  SCHECK(shmem_team_split_2d(yt, 2, nullptr, 0, &a, nullptr, 0, &b) == 0, "2d of a 2d team");
  const int yi = shmem_team_my_pe(yt), yn = shmem_team_n_pes(yt);
  SCHECK(shmem_team_my_pe(a) == yi % 2 && shmem_team_my_pe(b) == yi / 2, "nested 2d coordinates");
  SCHECK(shmem_team_n_pes(b) == (yn - yi % 2 + 1) / 2, "nested 2d column size");
  SCHECK(shmem_team_translate_pe(a, shmem_team_my_pe(a), SHMEM_TEAM_WORLD) == me, "nested 2d translate");
  shmem_team_destroy(a);
  shmem_team_destroy(b);
  shmem_team_destroy(xt);
  shmem_team_destroy(yt);
}

// team_sync makes stores made before it visible to the other members after it.
void syncVisibility() {
  long* v = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  shmem_team_t even;
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, nullptr, 0, &even) == 0, "even");
  shmem_team_t t = me % 2 == 0 ? even : SHMEM_TEAM_WORLD;  // odd PEs: world syncs below would deadlock; skip
  if (me % 2 == 0) {
    const int n = shmem_team_n_pes(t), i = shmem_team_my_pe(t);
    for (long round = 1; round <= 20; ++round) {
      *v = round * 1000 + me;
      shmem_team_sync(t);
      const int right = shmem_team_translate_pe(t, (i + 1) % n, SHMEM_TEAM_WORLD);
      const long got = shmem_long_g(v, right);
      SCHECK(got == round * 1000 + right, "round %ld: PE %d has %ld", round, right, got);
      shmem_team_sync(t);
    }
  }
  shmem_team_destroy(even);
  shmem_barrier_all();
  shmem_free(v);
}

// Many more teams over time than slots; running out of slots fails cleanly on every PE; slots come back.
void slotReuse() {
  long* buf = static_cast<long*>(shmem_malloc(2 * static_cast<size_t>(npes) * sizeof(long)));
  for (int iter = 0; iter < 150; ++iter) {
    shmem_team_t t;
    const int start = iter % 2 < npes ? iter % 2 : 0;
    const int size = (npes - start + 1) / 2;
    SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 2, size, nullptr, 0, &t) == 0, "iter %d", iter);
    if (t != SHMEM_TEAM_INVALID) {
      buf[0] = iter * 100 + me;
      SCHECK(shmem_long_fcollect(t, buf + npes, buf, 1) == 0, "fcollect");
      for (int i = 0; i < shmem_team_n_pes(t); ++i)
        SCHECK(buf[npes + i] == iter * 100 + shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD), "iter %d [%d]", iter, i);
      shmem_team_destroy(t);
    }
  }
  std::vector<shmem_team_t> live;
  for (;;) {
    shmem_team_t t;
    const int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, nullptr, 0, &t);
    if (rc != 0) {
      SCHECK(t == SHMEM_TEAM_INVALID, "failed split left a team");
      break;
    }
    live.push_back(t);
    SCHECK(live.size() <= SHMEM_TEAM_MAX_TEAMS_, "more teams than slots");
  }
  SCHECK(live.size() == SHMEM_TEAM_MAX_TEAMS_ - 2, "%zu teams before running out", live.size());
  for (shmem_team_t t : live) SCHECK(shmem_team_sync(t) == 0, "sync on each");
  for (shmem_team_t t : live) shmem_team_destroy(t);
  shmem_team_t t;
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, nullptr, 0, &t) == 0, "slots came back");
  shmem_team_destroy(t);
  shmem_barrier_all();
  shmem_free(buf);
}

}  // namespace

int main() {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  predefined();
  splitStrided();
  split2d();
  syncVisibility();
  slotReuse();
  shmem_barrier_all();
  if (me == 0) std::printf("coll_team: OK (%d PEs)\n", npes);
  shmem_finalize();
  return 0;
}
