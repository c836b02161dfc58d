/* Symmetric global and static data: OpenSHMEM programs communicate through global and static variables without
 * shmem_malloc. Initialised (.data) and zero (.bss) globals, a function-local static, arrays and scalars: RMA, AMOs,
 * put-with-signal and waits on them, shmem_ptr and shmem_addr_accessible. */
#include <stdint.h>
#include <string.h>

#include "shmem_check.h"

long counter = 0;                    /* .bss scalar */
int table[1000] = {1, 2, 3};         /* .data array */
static double wave[4096];            /* file-static .bss */
static uint64_t flag;
static long lock;

static long* local_static(void) {
  static long box[8] = {7, 7, 7, 7, 7, 7, 7, 7};
  return box;
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me - 1 + n) % n;

  SCHECK(table[0] == 1 && table[2] == 3, "initialised data lost at shmem_init");
  SCHECK(shmem_addr_accessible(&counter, right) == 1, "a global is not accessible");
  SCHECK(shmem_addr_accessible(local_static(), right) == 1, "a function-local static is not accessible");
  int on_stack = 0;
  SCHECK(shmem_addr_accessible(&on_stack, right) == 0, "a stack variable reported accessible");
  SCHECK(shmem_ptr(&table[0], right) != NULL, "shmem_ptr of a global is NULL on the same host");
  shmem_barrier_all(); /* every PE checked its initial values before anyone writes them */

  /* Typed put into the neighbour's array, get back the left neighbour's local static. */
  int mine[1000];
  for (int i = 0; i < 1000; ++i) mine[i] = me * 10000 + i;
  shmem_int_put(table, mine, 1000, right);
  local_static()[1] = 100 + me;
  shmem_barrier_all();
  for (int i = 0; i < 1000; ++i) SCHECK(table[i] == left * 10000 + i, "table[%d] = %d", i, table[i]);
  SCHECK(shmem_long_g(&local_static()[1], left) == 100 + left, "g of a function-local static");

  /* Strided put into a file-static double array, p on a scalar. */
  double d[64];
  for (int i = 0; i < 64; ++i) d[i] = me + i / 8.0;
  shmem_double_iput(wave, d, 4, 1, 64, right);
  shmem_barrier_all();
  for (int i = 0; i < 64; ++i) SCHECK(wave[4 * i] == left + i / 8.0, "wave[%d]", 4 * i);

  /* Atomics on a global counter of PE 0 from every PE; a lock on a global. */
  for (int k = 0; k < 10; ++k) shmem_long_atomic_add(&counter, 1, 0);
  shmem_barrier_all();
  shmem_set_lock(&lock);
  long v = shmem_long_g(&counter, 0);
  shmem_long_p(&counter, v + 1, 0); /* read-modify-write under the lock: no lost update */
  shmem_clear_lock(&lock);
  shmem_barrier_all();
  if (me == 0) SCHECK(counter == 11L * n, "counter %ld, expected %ld", counter, 11L * n);

  /* Put-with-signal into globals and a wait on a global signal word. */
  long payload = 4242 + me;
  shmem_putmem_signal(&local_static()[4], &payload, sizeof payload, &flag, 1, SHMEM_SIGNAL_ADD, right);
  shmem_signal_wait_until(&flag, SHMEM_CMP_GE, 1);
  SCHECK(local_static()[4] == 4242 + left, "signal arrived before its data");

  /* Direct store through shmem_ptr. */
  int* peer = (int*)shmem_ptr(&table[999], right);
  *peer = -me;
  shmem_barrier_all();
  SCHECK(table[999] == -left, "store through shmem_ptr");

  shmem_finalize();
  if (me == 0) printf("static data: %d PEs ok\n", n);
  return 0;
}
