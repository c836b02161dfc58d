// pshmem.h before shmem.h, from C++ (shmem_profiling.c includes them the other way round, from C).
#include <pshmem.h>
#include <shmem.h>

extern "C" int profiling_cxx_get(const int* source, int pe) { return pshmem_int_g(source, pe); }
