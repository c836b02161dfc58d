// tether.World (the extension's side): init in its three forms, finalize, symmetric allocations, the predefined
// teams, wrapping existing symmetric memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ext_common.h"
#include "ext_team.h"

namespace tether_py {

struct World {
  StatePtr state = std::make_shared<WorldState>();

  // The forms of tether.init() (python/tether/_api.py): from the environment (all defaults); from an MPI
  // communicator (mpi_comm: the address of its MPI_Comm handle, mpi4py's MPI._addressof(comm); tether_init_mpi); or
  // from an explicit position and rendezvous (rank, size, "host:port", secret and, on rank 0, a listening socket that
  // tether takes over and closes: the torch.distributed store path). The GIL is released during the collective call:
  // a store served by a Python thread of this process keeps working while rank 0 waits for the others.
  World(const std::vector<std::string>& config, int rank, int size, const std::string& bootstrap_addr,
        const std::string& job_secret, int listen_fd, uintptr_t mpi_comm);

  // Collective; refused while exported views are alive (finalize releases the symmetric heap).
  void finalize();

  // Collective: a symmetric allocation of `kind` (TETHER_SEG_HOST or _DEVICE), zeroed on every PE when `zero`.
  AllocPtr alloc(size_t nbytes, int kind, size_t alignment, bool zero);

  // The predefined team "world" or "shared".
  TeamPtr team(const char* which) const;

  // tether's default GPU for this PE (TETHER_GPU=auto): node-local PE modulo the visible GPUs.
  int defaultDevice() const;

  // Wraps [addr, addr + nbytes) of an existing symmetric allocation (not freed by us). Both ends must be symmetric.
  AllocPtr wrap(uintptr_t addr, size_t nbytes);
};

}  // namespace tether_py
