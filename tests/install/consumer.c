/* A program of a separate project built against an installed tether (tests/install/install_check.sh builds it once
 * through find_package(tether CONFIG), once through pkg-config). At 2+ PEs: each PE puts its id into the next PE's
 * symmetric word and gets it back from there; prints "consumer ok" on PE 0 when every value matches. */
#include <stdio.h>
#include <string.h>
#include <tether/tether.h>

static int fail(const char* what) {
  fprintf(stderr, "consumer: %s failed: %s\n", what, tether_last_error());
  return 1;
}

int main(void) {
  int major = -1;
  if (strcmp(tether_version(&major, NULL, NULL), TETHER_VERSION_STRING) != 0 || major != TETHER_VERSION_MAJOR) {
    fprintf(stderr, "consumer: library %s, headers %s\n", tether_version(NULL, NULL, NULL), TETHER_VERSION_STRING);
    return 1;
  }
  tether_t w;
  if (tether_init(&w) != TETHER_SUCCESS) return fail("tether_init");
  const int me = tether_my_pe(w), n = tether_n_pes(w), next = (me + 1) % n;
  long* x = NULL;
  if (tether_malloc_kind(w, TETHER_SEG_HOST, 0, sizeof *x, (void**)&x) != TETHER_SUCCESS) return fail("malloc");
  *x = -1;
  if (tether_barrier_all(w) != TETHER_SUCCESS) return fail("barrier");
  const long mine = 1000 + me;
  if (tether_put(w, x, &mine, sizeof mine, next) != TETHER_SUCCESS) return fail("tether_put");
  if (tether_barrier_all(w) != TETHER_SUCCESS) return fail("barrier");
  long back = 0;
  if (tether_get(w, &back, x, sizeof back, next) != TETHER_SUCCESS) return fail("tether_get");
  const long prev = 1000 + (me + n - 1) % n;
  if (*x != prev || back != mine) {
    fprintf(stderr, "consumer: PE %d: x = %ld (want %ld), got back %ld (want %ld)\n", me, *x, prev, back, mine);
    return 1;
  }
  if (tether_barrier_all(w) != TETHER_SUCCESS) return fail("barrier");
  if (me == 0) printf("consumer ok: %d PEs, tether %s\n", n, tether_version(NULL, NULL, NULL));
  if (tether_free(w, x) != TETHER_SUCCESS) return fail("tether_free");
  return tether_finalize(w) == TETHER_SUCCESS ? 0 : fail("tether_finalize");
}
