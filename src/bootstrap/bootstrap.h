// Bootstrap: the out-of-band channel PEs use to find each other and exchange small blobs before (and beside) the
// symmetric heap. Used at init, for heap set-up and growth, and for liveness; never on an RMA hot path.
//
// Contract: every collective (allgather, barrier, alltoall, broadcast) must be called by all ranks in the same order
// with the same sizes; a size mismatch fails with TETHER_ERR_MISMATCH on every rank that can see it. Every wait is
// bounded by the timeout given at creation; a lost peer gives TETHER_ERR_PEER_LOST naming the rank. Calls on one
// Bootstrap are not thread-safe (the owner serialises them).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/config.h"
#include "base/status.h"

namespace tether {

// Where this process sits in the job, from the launcher environment or from explicit init attributes.
struct JobInfo {
  int rank = -1;
  int size = -1;
  int localRank = -1;          // as the launcher reported it, -1 if unknown (World recomputes from host identity)
  int localSize = -1;
  std::string bootstrapAddr;   // "host:port" served by rank 0 (empty for a 1-PE job)
  std::string secret;          // shared job secret; connections without it are refused
  int listenFd = -1;           // rank 0 only: inherited listening socket (tetherrun), else -1
  bool listenFdInherited = false;  // listenFd is the process's (TETHER_BOOTSTRAP_FD): hand the bootstrap a duplicate
  std::string launcher;        // "explicit", "tetherrun", "openmpi", "hydra", "slurm", "torchrun", "pmix", "mpi",
                               // "none"
};

// Detects the launcher and fills *out. Order: TETHER_RANK/TETHER_SIZE (tetherrun or set by hand), Open MPI
// (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE), MPICH/Hydra (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID/MPI_LOCALNRANKS),
// Slurm (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID), torchrun (RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE,
// MASTER_ADDR/MASTER_PORT); none of them: a job of one PE. The rendezvous address is TETHER_BOOTSTRAP_ADDR (or
// torchrun's MASTER_ADDR:MASTER_PORT). A multi-PE job without an address fails with TETHER_ERR_BOOTSTRAP naming
// the variables to set.
Status detectJob(const Config& config, JobInfo* out);

// What tether_init uses: under a PMIx launcher (PMIX_RANK/PMIX_NAMESPACE set) in a PMIx build, when neither
// TETHER_RANK/TETHER_SIZE nor TETHER_BOOTSTRAP_ADDR are set and the caller was given no address
// (addressGiven false), pmixJob (pmix/pmix.h: no address needs picking); otherwise detectJob.
Status launcherJob(const Config& config, double timeoutSeconds, bool addressGiven, JobInfo* out);

// tether_init_mpi: rank and size from an MPI communicator (`comm` points at the caller's MPI_Comm), rank 0's
// rendezvous offer (offer.h) broadcast over it. libmpi is not linked: its symbols are looked up in the process
// (dlsym, then dlopen RTLD_NOLOAD of libmpi.so.40 / libmpich.so.12 / libmpi.so.12), so MPI must be loaded and
// initialised by the caller. Supported ABIs: Open MPI (pointer handles) and MPICH's (int handles: MPICH, Intel MPI,
// MVAPICH, Cray MPICH); anything else fails naming the library. The broadcast is MPI_Ibcast polled with MPI_Test,
// bounded by timeoutSeconds (a rank that never calls leaves the request pending in MPI; tether fails, not hangs).
// job->launcher is "mpi"; the local rank/size are left to host discovery.
Status mpiJob(const Config& config, const void* comm, double timeoutSeconds, JobInfo* out);

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // out holds size()*bytes; block r is rank r's `in`.
  virtual Status allgather(const void* in, void* out, size_t bytes) = 0;
  virtual Status barrier() = 0;
  // in holds size()*bytes, block r is sent to rank r; out holds size()*bytes, block r came from rank r.
  virtual Status alltoall(const void* in, void* out, size_t bytes) = 0;
  // buf (bytes long) on `root` is copied to every rank's buf.
  virtual Status broadcast(void* buf, size_t bytes, int root) = 0;
};

// TCP rendezvous: rank 0 serves job.bootstrapAddr (or job.listenFd), the others connect to it and present the
// secret. Blocks until all job.size ranks are connected or timeoutSeconds passes.
Status createTcpBootstrap(const JobInfo& job, double timeoutSeconds, std::unique_ptr<Bootstrap>* out);

// A job of one PE: collectives are local copies.
std::unique_ptr<Bootstrap> createSelfBootstrap();

}  // namespace tether
