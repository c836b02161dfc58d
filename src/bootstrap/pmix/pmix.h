// PMIx launch: under a PMIx launcher (Open MPI's mpirun, prterun, srun --mpi=pmix) a job needs no hand-picked
// rendezvous address. Two builds, chosen by CMake (TETHER_PMIX=AUTO|ON|OFF), like transport/ucx/{ucp,none}:
// pmix/client over libpmix, pmix/none without it (pmixBuilt() false; pmixJob fails naming what to install).
//
// Design: PMIx carries only rank 0's rendezvous offer (offer.h: address of a socket on a kernel-picked port, random
// secret) via PMIx_Put/Commit/Fence/Get; the TCP bootstrap then does every tether collective. Implementing the
// bootstrap's allgather/barrier over PMIx fences instead would lose what the TCP bootstrap checks and reports (op,
// size and root mismatches named per rank, the ranks missing at a timeout, peer loss during the job, re-init) and
// put a server round trip into every heap allocation; one fence at init costs the same as a rendezvous.
#pragma once

#include "bootstrap/bootstrap.h"
#include "bootstrap/launcher_env.h"

namespace tether {

// Whether this build has the PMIx client.
bool pmixBuilt();

// Whether the environment says a PMIx server started this process (PMIX_RANK and PMIX_NAMESPACE set).
inline bool pmixEnvironment(const EnvLookup& env) { return env("PMIX_RANK") && env("PMIX_NAMESPACE"); }

// Under a PMIx launcher: rank and size from PMIx (PMIX_JOB_SIZE), local rank/size when the server tells them
// (PMIX_LOCAL_RANK, PMIX_LOCAL_SIZE), and for a job of 2+ PEs rank 0's offer through one PMIx fence bounded by
// timeoutSeconds (PMIX_TIMEOUT, as far as the server honours it). job->launcher is "pmix". PMIx stays initialised
// from the first call until the process exits (re-initialising it between tether_inits desynchronises the server's
// fences: pmix_client.cpp). Without PMIx in the build: TETHER_ERR_UNSUPPORTED naming libpmix-dev.
Status pmixJob(const Config& config, double timeoutSeconds, JobInfo* job);

}  // namespace tether
