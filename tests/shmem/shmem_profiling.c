/* Profiling interface (OpenSHMEM annex, include/pshmem.h): this program defines its own shmem_putmem,
 * shmem_barrier_all, shmem_int_p, shmem_malloc and shmem_align, which count their calls and forward to the pshmem_ routines.
 * libtether_shmem's shmem_ definitions are weak and the pshmem_ names are their strong twins, so the program's
 * wrappers take every call the program makes (the C11 generic shmem_p included) and the pshmem_ calls reach the
 * library. Calls inside the library do not go through the wrappers: the deprecated shmemalign, which calls
 * shmem_align inside the library, leaves the program's shmem_align uncounted.
 * A ring exchange checks the data moved through the wrappers, a direct pshmem_ call and an unwrapped routine.
 * shmem_profiling_cxx.cpp includes the headers in the other order (and as C++). */
#include <shmem.h>
#include <pshmem.h>
#include <stdio.h>

int profiling_cxx_get(const int* source, int pe); /* shmem_profiling_cxx.cpp: pshmem_int_g from C++ */

static long n_putmem, n_barrier_all, n_int_p, n_malloc, n_align;

void shmem_putmem(void* dest, const void* source, size_t nelems, int pe) {
  ++n_putmem;
  pshmem_putmem(dest, source, nelems, pe);
}
void shmem_barrier_all(void) {
  ++n_barrier_all;
  pshmem_barrier_all();
}
void shmem_int_p(int* dest, int value, int pe) {
  ++n_int_p;
  pshmem_int_p(dest, value, pe);
}
void* shmem_malloc(size_t size) {
  ++n_malloc;
  return pshmem_malloc(size);
}
void* shmem_align(size_t alignment, size_t size) {
  ++n_align;
  return pshmem_align(alignment, size);
}

#define N 16
static int block[N]; /* global data is symmetric */
static int word_p, word_generic, word_pshmem;

#define CHECK(cond, ...)                                                                                           \
  do {                                                                                                             \
    if (!(cond)) {                                                                                                 \
      fprintf(stderr, "FAIL PE %d line %d: %s: ", shmem_my_pe(), __LINE__, #cond);                                 \
      fprintf(stderr, __VA_ARGS__);                                                                                \
      fprintf(stderr, "\n");                                                                                       \
      shmem_global_exit(1);                                                                                        \
    }                                                                                                              \
  } while (0)

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;
  int* heap = shmem_malloc(N * sizeof(int));
  int* old_name = shmemalign(64, sizeof(int)); /* calls shmem_align inside the library */
  CHECK(heap != NULL && old_name != NULL, "allocation failed");
  int src[N];
  for (int i = 0; i < N; ++i) src[i] = me * 100 + i;
  shmem_barrier_all();
  shmem_putmem(heap, src, sizeof src, next);
  shmem_int_p(&word_p, me + 1000, next);
  shmem_p(&word_generic, me + 2000, next); /* C11 generic name: selects shmem_int_p, the program's */
  pshmem_int_p(&word_pshmem, me + 3000, next);
  shmem_int_put(block, src, N, next); /* not wrapped: the library's own */
  shmem_barrier_all();
  for (int i = 0; i < N; ++i) {
    CHECK(heap[i] == prev * 100 + i, "heap[%d] = %d, expected %d", i, heap[i], prev * 100 + i);
    CHECK(block[i] == prev * 100 + i, "block[%d] = %d, expected %d", i, block[i], prev * 100 + i);
  }
  CHECK(word_p == prev + 1000, "word_p = %d", word_p);
  CHECK(word_generic == prev + 2000, "word_generic = %d", word_generic);
  CHECK(word_pshmem == prev + 3000, "word_pshmem = %d", word_pshmem);
  const int back = profiling_cxx_get(&word_p, next);
  CHECK(back == me + 1000, "pshmem_int_g from C++ read %d on PE %d", back, next);
  shmem_barrier_all();
  CHECK(n_putmem == 1 && n_barrier_all == 3 && n_int_p == 2 && n_malloc == 1 && n_align == 0,
        "wrapper calls: putmem %ld (1), barrier_all %ld (3), int_p %ld (2), malloc %ld (1), align %ld (0)", n_putmem,
        n_barrier_all, n_int_p, n_malloc, n_align);
  if (me == 0) printf("profiling wrappers: %d PEs, counts and data right\n", n);
  pshmem_free(old_name);
  shmem_free(heap);
  shmem_finalize();
  return 0;
}
