/* hello: the smallest tether program. Run: tetherrun -n 2 ./tether_hello */
#include <stdio.h>
#include <tether/tether.h>

int main(void) {
  tether_t world;
  if (tether_init(&world) != TETHER_SUCCESS) {
    fprintf(stderr, "tether_init failed: %s\n", tether_last_error());
    return 1;
  }
  printf("hello from PE %d of %d\n", tether_my_pe(world), tether_n_pes(world));
  if (tether_barrier_all(world) != TETHER_SUCCESS || tether_finalize(world) != TETHER_SUCCESS) {
    fprintf(stderr, "barrier/finalize failed: %s\n", tether_last_error());
    return 1;
  }
  return 0;
}
