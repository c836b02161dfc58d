/* OpenSHMEM 1.5 behaviour the specification requires beyond the basic routines (issue 24 §4). One program, one mode
 * per run (argv[1]):
 *   align        shmem_align honours large power-of-two alignments (4 MiB .. 64 MiB) at the same offset on every PE
 *   ctx_invalid  the context routines the specification defines on SHMEM_CTX_INVALID do not abort
 *   test_any     shmem_test_any / test_some (and _vector) let a caller that consumes each index once make progress
 *   global_exit S  the last PE calls shmem_global_exit(S) while the others wait in shmem_barrier_all: the job ends
 *                  with S (tests/shmem/CMakeLists.txt runs it with and without tetherrun's control channel) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmem_check.h"

/* Every PE gets the same offset for p from the first allocation `base`: PE 0 collects and compares. */
static void checkSameOffset(const void* base, const void* p, size_t align) {
  static long offsets[1024]; /* global: symmetric */
  int me = shmem_my_pe(), n = shmem_n_pes();
  long off = (long)((const char*)p - (const char*)base);
  shmem_long_p(&offsets[me], off, 0);
  shmem_barrier_all();
  if (me == 0)
    for (int pe = 1; pe < n; ++pe)
      SCHECK(offsets[pe] == offsets[0], "align %zu: PE %d got offset %ld, PE 0 %ld", align, pe, offsets[pe],
             offsets[0]);
  shmem_barrier_all();
}

static void testAlign(void) {
  char* base = shmem_malloc(64);
  SCHECK(base != NULL, "malloc");
  for (size_t al = (size_t)1 << 20; al <= ((size_t)64 << 20); al *= 2) {
    char* p = shmem_align(al, 1000);
    SCHECK(p != NULL, "shmem_align(%zu) returned NULL", al);
    SCHECK(((uintptr_t)p % al) == 0, "shmem_align(%zu) gave %p (only %zu-aligned)", al, (void*)p,
           (size_t)((uintptr_t)p & (~(uintptr_t)p + 1)));
    checkSameOffset(base, p, al);
    /* the memory is usable and symmetric: write into the next PE's block */
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_int_p((int*)p + 10, me, (me + 1) % n);
    shmem_barrier_all();
    SCHECK(((int*)p)[10] == (me + n - 1) % n, "align %zu: got %d", al, ((int*)p)[10]);
    shmem_free(p);
  }
  shmem_free(base);
  if (shmem_my_pe() == 0) printf("align: ok\n");
}

/* SHMEM_CTX_INVALID: quiet, fence and destroy are no-ops, get_team reports SHMEM_TEAM_INVALID; a valid context still
 * works afterwards. */
static void testCtxInvalid(void) {
  int me = shmem_my_pe(), n = shmem_n_pes();
  int* x = shmem_calloc(1, sizeof(int));
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  shmem_ctx_quiet(ctx);
  shmem_ctx_fence(ctx);
  shmem_ctx_destroy(ctx);
  shmem_team_t team = SHMEM_TEAM_WORLD;
  SCHECK(shmem_ctx_get_team(ctx, &team) != 0 && team == SHMEM_TEAM_INVALID, "get_team on SHMEM_CTX_INVALID");
  /* a creation that fails leaves SHMEM_CTX_INVALID, which the program may then quiet and destroy */
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &ctx) != 0 && ctx == SHMEM_CTX_INVALID, "failed create");
  shmem_ctx_quiet(ctx);
  shmem_ctx_fence(ctx);
  shmem_ctx_destroy(ctx);
  SCHECK(shmem_ctx_create(0, &ctx) == 0 && ctx != SHMEM_CTX_INVALID, "create");
  shmem_ctx_int_p(ctx, x, me + 1, (me + 1) % n);
  shmem_ctx_quiet(ctx);
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  SCHECK(*x == (me + n - 1) % n + 1, "put on a created context: %d", *x);
  shmem_free(x);
  if (me == 0) printf("ctx_invalid: ok\n");
}

/* A caller that keeps every entry satisfied and consumes each returned index once (status never updated: it only
 * excludes a few entries) must see every included index within a bounded number of calls; two arrays polled in
 * alternation must not disturb each other. */
#define NFLAGS 16
static long long flagsA[NFLAGS], flagsB[NFLAGS];
static int excluded(size_t i) { return i == 3 || i == 11; }

static void testAny(void) {
  int me = shmem_my_pe(), n = shmem_n_pes();
  for (size_t i = 0; i < NFLAGS; ++i)
    if ((int)(i % (size_t)n) == me)
      for (int pe = 0; pe < n; ++pe) {
        shmem_longlong_p(&flagsA[i], 1, pe);
        shmem_longlong_p(&flagsB[i], 1, pe);
      }
  shmem_barrier_all();
  int status[NFLAGS] = {0};
  long long ones[NFLAGS];
  for (size_t i = 0; i < NFLAGS; ++i) {
    status[i] = excluded(i);
    ones[i] = 1;
  }
  const int included = NFLAGS - 2;
  for (int form = 0; form < 4; ++form) {
    int seenA[NFLAGS] = {0}, seenB[NFLAGS] = {0}, leftA = included, leftB = included, calls = 0;
    for (; (leftA > 0 || leftB > 0) && calls < 4 * NFLAGS; ++calls) {
      long long* arrays[2] = {flagsA, flagsB};
      int* seen[2] = {seenA, seenB};
      int* left[2] = {&leftA, &leftB};
      for (int a = 0; a < 2; ++a) {
        size_t idx = SIZE_MAX;
        switch (form) {
          case 0: idx = shmem_longlong_test_any(arrays[a], NFLAGS, status, SHMEM_CMP_EQ, 1); break;
          case 1: idx = shmem_longlong_test_any_vector(arrays[a], NFLAGS, status, SHMEM_CMP_EQ, ones); break;
          case 2: idx = shmem_longlong_wait_until_any(arrays[a], NFLAGS, status, SHMEM_CMP_EQ, 1); break;
          default: idx = shmem_longlong_wait_until_any_vector(arrays[a], NFLAGS, status, SHMEM_CMP_EQ, ones); break;
        }
        SCHECK(idx < NFLAGS && !excluded(idx), "form %d returned %zu", form, idx);
        if (!seen[a][idx]) {
          seen[a][idx] = 1;
          --*left[a];
        }
      }
    }
    SCHECK(leftA == 0 && leftB == 0, "_any form %d: after %d calls, %d and %d included indices never returned", form,
           calls, leftA, leftB);
  }
  /* _some returns every satisfied included entry at once */
  size_t indices[NFLAGS];
  size_t got = shmem_longlong_test_some(flagsA, NFLAGS, indices, status, SHMEM_CMP_EQ, 1);
  SCHECK(got == (size_t)included, "test_some returned %zu of %d", got, included);
  got = shmem_longlong_test_some_vector(flagsB, NFLAGS, indices, status, SHMEM_CMP_EQ, ones);
  SCHECK(got == (size_t)included, "test_some_vector returned %zu of %d", got, included);
  for (size_t k = 0; k < got; ++k) SCHECK(!excluded(indices[k]), "test_some_vector returned excluded %zu", indices[k]);
  shmem_barrier_all();
  if (me == 0) printf("test_any: ok\n");
}

/* The last PE calls shmem_global_exit(status) once the others wait in shmem_barrier_all: every PE must end with that
 * status at once (the barrier never completes; the test's wrapper checks the job's exit status and time). */
static void testGlobalExit(int status) {
  int me = shmem_my_pe(), n = shmem_n_pes();
  if (me == n - 1) {
    usleep(300 * 1000); /* let the others enter the barrier */
    printf("PE %d: shmem_global_exit(%d)\n", me, status);
    shmem_global_exit(status);
  }
  shmem_barrier_all();
  fprintf(stderr, "FAIL PE %d: shmem_barrier_all returned although PE %d called shmem_global_exit\n", me, n - 1);
  exit(3);
}

int main(int argc, char** argv) {
  shmem_init();
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "align") == 0) testAlign();
  else if (strcmp(mode, "ctx_invalid") == 0) testCtxInvalid();
  else if (strcmp(mode, "test_any") == 0) testAny();
  else if (strcmp(mode, "global_exit") == 0 && argc > 2) testGlobalExit(atoi(argv[2]));
  else SCHECK(0, "unknown mode '%s'", mode);
  shmem_finalize();
  return 0;
}
