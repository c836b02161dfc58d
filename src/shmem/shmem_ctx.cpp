// OpenSHMEM communication contexts (first part): the object behind SHMEM_CTX_DEFAULT.
#include <shmem.h>

#include "shmem_internal.h"

struct tether_shmem_ctx_s {
  shmem_team_t team = nullptr;  // PE numbers of this context's operations are relative to this team
};

struct tether_shmem_ctx_s tether_shmem_ctx_default_;
