/* Bad context arguments end the job with a message naming the routine (run through tests/mp/expect_fail.sh).
 * The last PE makes the bad call; the others wait in a barrier until the launcher stops them.
 *   invalid:        shmem_ctx_int_p on SHMEM_CTX_INVALID          -> "the context is SHMEM_CTX_INVALID"
 *   quietdestroyed: shmem_ctx_quiet on a destroyed context         -> "the context was destroyed", naming
 *                   shmem_ctx_quiet (on SHMEM_CTX_INVALID it is a no-op: tests/shmem/shmem_spec.c ctx_invalid)
 *   generic:        C11 shmem_atomic_fetch_inc(SHMEM_CTX_INVALID, ...) -> names shmem_ctx_long_atomic_fetch_inc
 *   destroyed:      shmem_ctx_long_atomic_add on a destroyed context -> "the context was destroyed"
 *   destroydefault: shmem_ctx_destroy(SHMEM_CTX_DEFAULT)           -> "SHMEM_CTX_DEFAULT cannot be destroyed"
 *   teampe:         shmem_ctx_int_put on a SHMEM_TEAM_SHARED context to team PE n  -> "PE n is outside the
 *                   context's team"
 *   teamneg:        shmem_ctx_getmem on that context from team PE -1 -> "PE -1 is outside the context's team"
 *   worldpe:        shmem_ctx_long_g on a created (world) context from PE n -> names shmem_ctx_long_g */
#include <stdio.h>
#include <string.h>

#include <shmem.h>

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "invalid";
  shmem_init();
  long* sym = (long*)shmem_calloc(4, sizeof(long));
  const int me = shmem_my_pe(), n = shmem_n_pes();
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  if (strcmp(mode, "teampe") == 0 || strcmp(mode, "teamneg") == 0)
    shmem_team_create_ctx(SHMEM_TEAM_SHARED, 0, &ctx);
  else
    shmem_ctx_create(0, &ctx);
  shmem_barrier_all();
  if (me == n - 1) {
    int src[2] = {1, 2};
    char buf[8];
    if (strcmp(mode, "invalid") == 0) {
      shmem_ctx_int_p(SHMEM_CTX_INVALID, (int*)sym, 1, 0);
    } else if (strcmp(mode, "quietdestroyed") == 0) {
      shmem_ctx_destroy(ctx);
      shmem_ctx_quiet(ctx);
    } else if (strcmp(mode, "generic") == 0) {
      printf("%ld\n", shmem_atomic_fetch_inc(SHMEM_CTX_INVALID, sym, 0));
    } else if (strcmp(mode, "destroyed") == 0) {
      shmem_ctx_destroy(ctx);
      shmem_ctx_long_atomic_add(ctx, sym, 1, 0);
    } else if (strcmp(mode, "destroydefault") == 0) {
      shmem_ctx_destroy(SHMEM_CTX_DEFAULT);
    } else if (strcmp(mode, "teampe") == 0) {
      shmem_ctx_int_put(ctx, (int*)sym, src, 2, shmem_team_n_pes(SHMEM_TEAM_SHARED));
    } else if (strcmp(mode, "teamneg") == 0) {
      shmem_ctx_getmem(ctx, buf, sym, sizeof buf, -1);
    } else if (strcmp(mode, "worldpe") == 0) {
      printf("%ld\n", shmem_ctx_long_g(ctx, sym, n));
    } else {
      fprintf(stderr, "unknown mode %s\n", mode);
      return 2;
    }
  }
  shmem_barrier_all(); /* the others wait here until the launcher stops them */
  shmem_finalize();
  return 0;
}
