/* Team contexts on split teams: PE numbers of a context's operations are numbered in its team. The odd world PEs form
 * one team, the even ones another (reversed order via a 2-D split is covered by the team tests); each member puts
 * into its right neighbour within its team through a team context and checks the world PE it lands on. */
#include <shmem.h>

#include "shmem_check.h"

static long box[4];

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  shmem_team_t odd = SHMEM_TEAM_INVALID, even = SHMEM_TEAM_INVALID;
  shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd);
  shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even);
  shmem_team_t mine = (me % 2) ? odd : even;
  SCHECK(mine != SHMEM_TEAM_INVALID, "PE %d has no team", me);
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  SCHECK(shmem_team_create_ctx(mine, 0, &ctx) == 0 && ctx != SHMEM_CTX_INVALID, "team_create_ctx failed");
  shmem_team_t got = SHMEM_TEAM_INVALID;
  SCHECK(shmem_ctx_get_team(ctx, &got) == 0 && got == mine, "ctx_get_team");

  const int tme = shmem_team_my_pe(mine), tn = shmem_team_n_pes(mine);
  const int right = (tme + 1) % tn;
  shmem_ctx_long_p(ctx, &box[0], (long)me, right);   /* team PE `right` */
  shmem_ctx_long_atomic_add(ctx, &box[1], 1, 0);      /* team PE 0 = world PE me % 2 */
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  const int left_world = shmem_team_translate_pe(mine, (tme - 1 + tn) % tn, SHMEM_TEAM_WORLD);
  SCHECK(box[0] == left_world, "box[0] = %ld, expected world PE %d", box[0], left_world);
  if (tme == 0) SCHECK(box[1] == tn, "team PE 0 (world %d) counted %ld adds, expected %d", me, box[1], tn);
  else SCHECK(box[1] == 0, "world PE %d got adds meant for team PE 0", me);
  SCHECK(shmem_ctx_long_g(ctx, &box[0], right) == me, "g through the team context");

  shmem_ctx_destroy(ctx);
  if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
  if (even != SHMEM_TEAM_INVALID) shmem_team_destroy(even);
  shmem_finalize();
  return 0;
}
