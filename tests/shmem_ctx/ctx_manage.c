/* Context management (C11): shmem_ctx_create with every option combination, many contexts at once, each used for a
 * put; shmem_team_create_ctx on SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED and SHMEM_TEAM_INVALID; shmem_ctx_get_team;
 * failure returns (unknown options, NULL handle pointer); destroy and re-create; SHMEM_CTX_INVALID destroy is a
 * no-op; the deprecated cache routines (no-ops). */
#include <stdint.h>
#include <string.h>

#include "ctx_test.h"

enum { kMany = 256 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  long* slots = (long*)shmem_calloc(kMany, sizeof(long));
  SCHECK(slots != NULL, "calloc");

  /* SHMEM_CTX_DEFAULT is on SHMEM_TEAM_WORLD */
  shmem_team_t team = SHMEM_TEAM_INVALID;
  SCHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &team) == 0 && team == SHMEM_TEAM_WORLD, "get_team(DEFAULT)");

  /* kMany contexts alive at once, options cycling through every combination of the three bits */
  static shmem_ctx_t ctx[kMany];
  for (int i = 0; i < kMany; ++i) {
    const long options = ((i & 1) ? SHMEM_CTX_SERIALIZED : 0) | ((i & 2) ? SHMEM_CTX_PRIVATE : 0) |
                         ((i & 4) ? SHMEM_CTX_NOSTORE : 0);
    if (i % 3 == 0)
      SCHECK(shmem_team_create_ctx(i % 2 ? SHMEM_TEAM_SHARED : SHMEM_TEAM_WORLD, options, &ctx[i]) == 0,
             "team_create_ctx %d", i);
    else
      SCHECK(shmem_ctx_create(options, &ctx[i]) == 0, "ctx_create %d (options %ld)", i, options);
    SCHECK(ctx[i] != SHMEM_CTX_INVALID && ctx[i] != SHMEM_CTX_DEFAULT, "handle %d", i);
    for (int j = 0; j < i; ++j) SCHECK(ctx[j] != ctx[i], "handles %d and %d differ", j, i);
    SCHECK(shmem_ctx_get_team(ctx[i], &team) == 0, "get_team %d", i);
    const shmem_team_t want = i % 3 == 0 && i % 2 ? SHMEM_TEAM_SHARED : SHMEM_TEAM_WORLD;
    SCHECK(team == want, "get_team %d returns the context's team", i);
  }
  /* each one works: slot i of the right neighbour, through context i (team PE = world PE on one host) */
  for (int i = 0; i < kMany; ++i) {
    SCHECK(shmem_ctx_get_team(ctx[i], &team) == 0, "get_team %d", i);
    shmem_ctx_long_p(ctx[i], &slots[i], 1000L * me + i + 1, shmem_team_translate_pe(SHMEM_TEAM_WORLD, right, team));
  }
  for (int i = 0; i < kMany; ++i) shmem_ctx_quiet(ctx[i]);
  shmem_barrier_all();
  for (int i = 0; i < kMany; ++i) SCHECK(slots[i] == 1000L * left + i + 1, "slot %d: %ld", i, slots[i]);
  for (int i = 0; i < kMany; ++i) shmem_ctx_destroy(ctx[i]);
  shmem_barrier_all(); /* every PE checked its slots before they change again */

  /* destroy then create again: the new contexts work */
  for (int round = 0; round < 4; ++round) {
    shmem_ctx_t c = SHMEM_CTX_INVALID;
    SCHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &c) == 0 && c != SHMEM_CTX_INVALID, "re-create %d", round);
    SCHECK(shmem_ctx_get_team(c, &team) == 0 && team == SHMEM_TEAM_WORLD, "re-created get_team");
    shmem_ctx_long_atomic_add(c, &slots[0], 1, right);
    shmem_ctx_destroy(c);
  }
  shmem_barrier_all();
  SCHECK(slots[0] == 1000L * left + 1 + 4, "atomics through re-created contexts: %ld", slots[0]);

  /* failures: non-zero return, handle set to SHMEM_CTX_INVALID */
  shmem_ctx_t bad = SHMEM_CTX_DEFAULT;
  SCHECK(shmem_ctx_create(8, &bad) != 0 && bad == SHMEM_CTX_INVALID, "unknown option bit");
  bad = SHMEM_CTX_DEFAULT;
  SCHECK(shmem_ctx_create(-1L, &bad) != 0 && bad == SHMEM_CTX_INVALID, "every bit set");
  bad = SHMEM_CTX_DEFAULT;
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &bad) != 0 && bad == SHMEM_CTX_INVALID, "invalid team");
  bad = SHMEM_CTX_DEFAULT;
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_WORLD, 16, &bad) != 0 && bad == SHMEM_CTX_INVALID, "team: bad option");
  SCHECK(shmem_ctx_create(0, NULL) != 0, "NULL handle pointer");
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_WORLD, 0, NULL) != 0, "team: NULL handle pointer");
  team = SHMEM_TEAM_WORLD;
  SCHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &team) != 0 && team == SHMEM_TEAM_INVALID, "get_team(INVALID)");
  SCHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, NULL) != 0, "get_team(NULL)");
  shmem_ctx_destroy(SHMEM_CTX_INVALID); /* no operation */

  /* deprecated cache management: no-ops */
  shmem_clear_cache_inv();
  shmem_set_cache_inv();
  shmem_clear_cache_line_inv(slots);
  shmem_set_cache_line_inv(slots);
  shmem_udcflush();
  shmem_udcflush_line(slots);

  shmem_barrier_all();
  shmem_free(slots);
  if (me == 0) printf("shmem_ctx_manage: OK on %d PEs\n", n);
  shmem_finalize();
  return 0;
}
