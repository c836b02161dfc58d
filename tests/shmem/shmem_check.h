/* Tiny check macro for the OpenSHMEM conformance tests (C and C++): a failure prints the PE, file, line and message
 * and ends the job with shmem_global_exit(1). */
#ifndef TETHER_TESTS_SHMEM_CHECK_H
#define TETHER_TESTS_SHMEM_CHECK_H
#include <stdio.h>
#include <shmem.h>

#define SCHECK(cond, ...)                                                                                          \
  do {                                                                                                             \
    if (!(cond)) {                                                                                                 \
      fprintf(stderr, "FAIL PE %d %s:%d: %s: ", shmem_my_pe(), __FILE__, __LINE__, #cond);                         \
      fprintf(stderr, __VA_ARGS__);                                                                                \
      fprintf(stderr, "\n");                                                                                       \
      shmem_global_exit(1);                                                                                        \
    }                                                                                                              \
  } while (0)
#endif
