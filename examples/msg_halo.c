/* Two-sided messaging (tether/msg.h) in MPI's shape: a 1-D stencil on a ring of PEs. Each PE owns LOCAL cells with a
 * ghost cell on each side; every step it posts the two halo receives, sends its edge cells to its neighbours,
 * updates the interior while the messages move, waits, then updates its two edge cells. At the end each PE checks its
 * cells against the same stencil computed serially over the whole ring (every PE can, from the initial values), so
 * the example fails loudly if a message was lost, late or mixed up.
 *   tetherrun -n 4 ./tether_msg_halo */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tether/msg.h>

#define LOCAL 64
#define STEPS 50

#define CHECK(call)                                                                          \
  do {                                                                                       \
    tether_status_t s_ = (call);                                                             \
    if (s_ != TETHER_SUCCESS) {                                                              \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, tether_status_string(s_), tether_last_error()); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

static uint64_t initial(size_t global) { return global * 2654435761u + 17; }

/* The stencil (exact in integers, so the serial and the distributed runs agree bit for bit). */
static uint64_t stencil(uint64_t l, uint64_t c, uint64_t r) { return l + 2 * c + r + (c >> 3); }

int main(void) {
  tether_t w;
  CHECK(tether_init(&w));
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  const int left = (me + n - 1) % n, right = (me + 1) % n;
  CHECK(tether_msg_init(w, NULL));

  uint64_t u[LOCAL + 2], v[LOCAL + 2]; /* u[0] and u[LOCAL + 1] are the ghost cells */
  for (int i = 1; i <= LOCAL; ++i) u[i] = initial((size_t)me * LOCAL + (size_t)(i - 1));
  for (int step = 0; step < STEPS; ++step) {
    tether_request_t req[4];
    CHECK(tether_irecv(w, &u[0], sizeof u[0], left, 1, &req[0]));          /* left neighbour's last cell */
    CHECK(tether_irecv(w, &u[LOCAL + 1], sizeof u[0], right, 0, &req[1])); /* right neighbour's first cell */
    CHECK(tether_isend(w, &u[1], sizeof u[0], left, 0, &req[2]));
    CHECK(tether_isend(w, &u[LOCAL], sizeof u[0], right, 1, &req[3]));
    for (int i = 2; i < LOCAL; ++i) v[i] = stencil(u[i - 1], u[i], u[i + 1]); /* interior, while messages move */
    CHECK(tether_msg_waitall(w, 4, req, NULL));
    v[1] = stencil(u[0], u[1], u[2]);
    v[LOCAL] = stencil(u[LOCAL - 1], u[LOCAL], u[LOCAL + 1]);
    memcpy(&u[1], &v[1], LOCAL * sizeof u[0]);
  }

  /* The serial reference over the whole ring. */
  const size_t total = (size_t)n * LOCAL;
  uint64_t* g = malloc(total * sizeof *g);
  uint64_t* h = malloc(total * sizeof *h);
  for (size_t i = 0; i < total; ++i) g[i] = initial(i);
  for (int step = 0; step < STEPS; ++step) {
    for (size_t i = 0; i < total; ++i) h[i] = stencil(g[(i + total - 1) % total], g[i], g[(i + 1) % total]);
    memcpy(g, h, total * sizeof *g);
  }
  int bad = 0;
  for (int i = 1; i <= LOCAL; ++i) bad += u[i] != g[(size_t)me * LOCAL + (size_t)(i - 1)];
  free(g);
  free(h);
  CHECK(tether_msg_finalize(w));
  if (bad) {
    fprintf(stderr, "PE %d: %d cells differ from the serial stencil\n", me, bad);
    return 1;
  }
  if (me == 0) printf("msg_halo: %d PEs x %d cells, %d steps of halo exchange: every cell matches the serial run\n", n,
                      LOCAL, STEPS);
  CHECK(tether_finalize(w));
  return 0;
}
