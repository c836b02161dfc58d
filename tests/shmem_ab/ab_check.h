/* Check macro for the OpenSHMEM AMO/sync conformance tests (C and C++). A failed check prints and aborts; tetherrun
 * then stops the other PEs and reports the failure. */
#ifndef SHMEM_AB_CHECK_H
#define SHMEM_AB_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define AB_CHECK(cond)                                                                                             \
  do {                                                                                                             \
    if (!(cond)) {                                                                                                 \
      fprintf(stderr, "%s:%d: PE %d: check failed: %s\n", __FILE__, __LINE__, shmem_my_pe(), #cond);              \
      fflush(stderr);                                                                                              \
      abort();                                                                                                     \
    }                                                                                                              \
  } while (0)
#endif
