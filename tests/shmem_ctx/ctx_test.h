/* Helpers shared by the context tests (C11 and C++): the check macro of tests/shmem, the random seed, and the set of
 * contexts every test runs its operations on. */
#ifndef TETHER_TESTS_SHMEM_CTX_TEST_H
#define TETHER_TESTS_SHMEM_CTX_TEST_H
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <shmem.h>

#include "shmem_check.h"

/* Collective. The seed of a randomized test: CTX_SEED from the environment, else PE 0's clock. Every PE returns PE
 * 0's value; PE 0 prints it with the line that reruns the test with it. */
static inline unsigned ctxTestSeed(const char* test) {
  unsigned* shared = (unsigned*)shmem_calloc(1, sizeof(unsigned));
  SCHECK(shared != NULL, "calloc");
  if (shmem_my_pe() == 0) {
    const char* env = getenv("CTX_SEED");
    *shared = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    printf("%s: seed %u (rerun with CTX_SEED=%u)\n", test, *shared, *shared);
    fflush(stdout);
  }
  shmem_barrier_all();
  const unsigned seed = shmem_uint_g(shared, 0);
  shmem_barrier_all();
  shmem_free(shared);
  return seed;
}

/* The contexts the tests run on: the default one, created ones with no and with every option, and team contexts on
 * SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED. */
enum { CTX_TEST_N = 5 };
typedef struct {
  shmem_ctx_t ctx;
  shmem_team_t team; /* from shmem_ctx_get_team */
  const char* name;
} CtxTestCase;

static inline void ctxTestOpen(CtxTestCase cases[CTX_TEST_N]) {
  const long all = SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE;
  cases[0].ctx = SHMEM_CTX_DEFAULT;
  cases[0].name = "default";
  SCHECK(shmem_ctx_create(0, &cases[1].ctx) == 0, "ctx_create(0)");
  cases[1].name = "created";
  SCHECK(shmem_ctx_create(all, &cases[2].ctx) == 0, "ctx_create(all options)");
  cases[2].name = "created-all-options";
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_WORLD, 0, &cases[3].ctx) == 0, "team_create_ctx(WORLD)");
  cases[3].name = "team-world";
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_SHARED, SHMEM_CTX_SERIALIZED, &cases[4].ctx) == 0,
         "team_create_ctx(SHARED)");
  cases[4].name = "team-shared";
  for (int i = 0; i < CTX_TEST_N; ++i) {
    SCHECK(cases[i].ctx != SHMEM_CTX_INVALID, "%s: valid handle", cases[i].name);
    SCHECK(shmem_ctx_get_team(cases[i].ctx, &cases[i].team) == 0, "%s: get_team", cases[i].name);
  }
  SCHECK(cases[0].team == SHMEM_TEAM_WORLD && cases[1].team == SHMEM_TEAM_WORLD &&
             cases[2].team == SHMEM_TEAM_WORLD && cases[3].team == SHMEM_TEAM_WORLD &&
             cases[4].team == SHMEM_TEAM_SHARED,
         "get_team returns the context's team");
}

static inline void ctxTestClose(CtxTestCase cases[CTX_TEST_N]) {
  for (int i = 1; i < CTX_TEST_N; ++i) shmem_ctx_destroy(cases[i].ctx);
}

/* The PE that is `shift` places after this one in the context's team (team numbering), and the one `shift` places
 * before it. */
static inline int ctxTestRight(const CtxTestCase* c, int shift) {
  const int n = shmem_team_n_pes(c->team);
  return (shmem_team_my_pe(c->team) + shift) % n;
}
static inline int ctxTestLeft(const CtxTestCase* c, int shift) {
  const int n = shmem_team_n_pes(c->team);
  return (shmem_team_my_pe(c->team) + n - shift % n) % n;
}
#endif
