// Launcher detection: turns the environment a launcher gives each process into a JobInfo.
//
// TETHER_* variables come from the Config (registry-declared); the variables of foreign launchers (Open MPI, Hydra,
// Slurm, torchrun) are read with getenv, or with an injected lookup in tests. Detection is pure: it never changes
// the environment and keeps no state.
#include <cinttypes>
#include <climits>
#include <cstdlib>

#include "base/log.h"
#include "bootstrap/launcher_env.h"
#include "bootstrap/pmix/pmix.h"

namespace tether {
namespace {

constexpr size_t kMaxSecretBytes = 1024;  // also the limit of the TCP hello (tcp_bootstrap.cpp)

// Strict decimal int: the whole value, no sign games beyond a leading '-', in int range.
bool parseIntStrict(const std::string& s, int* out) {
  int64_t v = 0;
  if (!parseInt(s, &v) || v < INT_MIN || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

Status intVar(const char* name, const std::string& value, int* out) {
  if (!parseIntStrict(value, out))
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "launcher environment: %s='%s' is not an integer", name, value.c_str());
  return Status::ok();
}

// The variable names a launcher uses; localRank/localSize may be null (not provided by that launcher).
struct LauncherVars {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* localRank;
  const char* localSize;
};

// Reads rank/size (both required once rank is present) and the optional local pair.
Status readForeign(const EnvLookup& env, const LauncherVars& v, JobInfo* job) {
  const char* r = env(v.rank);
  const char* s = env(v.size);
  if (!s)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "launcher environment (%s): %s=%s is set but %s is not", v.launcher, v.rank, r,
                v.size);
  TETHER_TRY(intVar(v.rank, r, &job->rank));
  TETHER_TRY(intVar(v.size, s, &job->size));
  const char* lr = v.localRank ? env(v.localRank) : nullptr;
  const char* ls = v.localSize ? env(v.localSize) : nullptr;
  if (lr) TETHER_TRY(intVar(v.localRank, lr, &job->localRank));
  if (ls) TETHER_TRY(intVar(v.localSize, ls, &job->localSize));
  job->launcher = v.launcher;
  return Status::ok();
}

Status readSlurm(const EnvLookup& env, JobInfo* job) {
  // Inside an srun step SLURM_STEP_NUM_TASKS is the step's size; SLURM_NTASKS may be the whole allocation's.
  const char* sizeVar = env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  TETHER_TRY(readForeign(env, {"slurm", "SLURM_PROCID", sizeVar, "SLURM_LOCALID", nullptr}, job));
  // The local PE count: this node's entry of the step's (else the job's) tasks-per-node list, indexed by
  // SLURM_NODEID (the node's index in the step); without a node index only a uniform list tells it. Then the
  // --ntasks-per-node request. A malformed value leaves the count unknown (World counts PEs per host instead).
  int node = -1;
  if (const char* n = env("SLURM_NODEID")) {
    if (!parseIntStrict(n, &node) || node < 0) {
      TETHER_LOG_WARN(LogSys::Bootstrap, "launcher environment (slurm): SLURM_NODEID='%s' is not a node index; "
                      "ignored", n);
      node = -1;
    }
  }
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"}) {
    const char* v = env(name);
    if (!v) continue;
    int tasks = -1;  // --ntasks-per-node is one count for every node
    switch (slurmTasksOnNode(v, std::string(name) == "SLURM_NTASKS_PER_NODE" ? -1 : node, &tasks)) {
      case SlurmTasks::Found:
        job->localSize = tasks;
        return Status::ok();
      case SlurmTasks::Malformed:
        TETHER_LOG_WARN(LogSys::Bootstrap, "launcher environment (slurm): %s='%s' is not Slurm's tasks-per-node "
                        "form (N, N(xM), comma-separated); ignored", name, v);
        break;
      case SlurmTasks::NotThisNode:
        break;
    }
  }
  return Status::ok();
}

// Names of the variables that gave rank and size, for error messages.
struct Origin {
  std::string rank = "rank";
  std::string size = "size";
  std::string localRank = "local rank";
  std::string localSize = "local size";
};

Origin originOf(const std::string& launcher, const EnvLookup& env) {
  if (launcher == "tetherrun" || launcher == "explicit")
    return {"TETHER_RANK", "TETHER_SIZE", "TETHER_LOCAL_RANK", "TETHER_LOCAL_SIZE"};
  if (launcher == "openmpi")
    return {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
  if (launcher == "hydra") return {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};
  if (launcher == "slurm")
    return {"SLURM_PROCID", env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS", "SLURM_LOCALID",
            "this node's tasks (SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE or SLURM_NTASKS_PER_NODE)"};
  if (launcher == "torchrun") return {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
  return {};
}

Status validateRanks(const JobInfo& job, const Origin& o) {
  if (job.size < 1)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "launcher environment (%s): %s=%d: the job size must be at least 1",
                job.launcher.c_str(), o.size.c_str(), job.size);
  if (job.rank < 0 || job.rank >= job.size)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "launcher environment (%s): %s=%d is outside [0, %s=%d)", job.launcher.c_str(),
                o.rank.c_str(), job.rank, o.size.c_str(), job.size);
  if (job.localSize != -1 && (job.localSize < 1 || job.localSize > job.size))
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "launcher environment (%s): %s=%d is outside [1, %s=%d]", job.launcher.c_str(),
                o.localSize.c_str(), job.localSize, o.size.c_str(), job.size);
  if (job.localRank != -1 && job.localRank < 0)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "launcher environment (%s): %s=%d is negative", job.launcher.c_str(),
                o.localRank.c_str(), job.localRank);
  if (job.localRank >= 0 && job.localSize >= 1 && job.localRank >= job.localSize)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "launcher environment (%s): %s=%d is outside [0, %s=%d)", job.launcher.c_str(),
                o.localRank.c_str(), job.localRank, o.localSize.c_str(), job.localSize);
  return Status::ok();
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// A secret every rank of a foreign-launched job computes alike: the address plus whatever job identity the launcher
// exports. It keeps unrelated jobs apart but is no protection against local users (they can compute it too).
std::string derivedSecret(const JobInfo& job, const EnvLookup& env) {
  std::string id = job.launcher + "|" + job.bootstrapAddr + "|" + std::to_string(job.size);
  for (const char* name : {"SLURM_JOB_ID", "SLURM_STEP_ID", "OMPI_MCA_ess_base_jobid", "TORCHELASTIC_RUN_ID"}) {
    const char* v = env(name);
    if (v) id += std::string("|") + name + "=" + v;
  }
  return strprintf("derived-%016" PRIx64 "%016" PRIx64, fnv1a(id), fnv1a(id + "#"));
}

// Reads "N(xM)" or "N" at *p (advancing it): count N, repeats M (1 without the suffix).
bool slurmTerm(const char** p, int64_t* count, int64_t* repeats) {
  auto number = [p](int64_t* out) {
    const char* s = *p;
    int64_t v = 0;
    while (**p >= '0' && **p <= '9') {
      v = v * 10 + (**p - '0');
      if (v > INT_MAX) return false;
      ++*p;
    }
    *out = v;
    return *p != s;
  };
  if (!number(count) || *count < 1) return false;
  *repeats = 1;
  if (**p != '(') return true;
  ++*p;
  if (**p != 'x') return false;
  ++*p;
  if (!number(repeats) || *repeats < 1 || **p != ')') return false;
  ++*p;
  return true;
}

}  // namespace

SlurmTasks slurmTasksOnNode(const char* value, int node, int* tasks) {
  if (!value || !*value) return SlurmTasks::Malformed;
  const char* p = value;
  int64_t first = -1, index = 0;
  bool uniform = true;
  int found = -1;
  while (true) {
    int64_t count = 0, repeats = 0;
    if (!slurmTerm(&p, &count, &repeats)) return SlurmTasks::Malformed;
    if (first < 0) first = count;
    uniform = uniform && count == first;
    if (node >= 0 && found < 0 && node >= index && node < index + repeats) found = static_cast<int>(count);
    index += repeats;
    if (*p == '\0') break;
    if (*p != ',') return SlurmTasks::Malformed;
    ++p;
  }
  if (node < 0 && uniform) found = static_cast<int>(first);
  if (found < 0) return SlurmTasks::NotThisNode;
  *tasks = found;
  return SlurmTasks::Found;
}

bool splitHostPort(const std::string& addr, std::string* host, int* port) {
  size_t colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == addr.size()) return false;
  std::string h = addr.substr(0, colon);
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return false;
    h = h.substr(1, h.size() - 2);
  }
  int p = 0;
  if (!parseIntStrict(addr.substr(colon + 1), &p) || p < 0 || p > 65535) return false;
  for (char c : addr.substr(colon + 1))
    if (c < '0' || c > '9') return false;
  *host = h;
  *port = p;
  return true;
}

Status detectJobWith(const Config& config, const EnvLookup& env, JobInfo* out) {
  JobInfo job;
  const bool haveRank = config.isSet("TETHER_RANK"), haveSize = config.isSet("TETHER_SIZE");
  if (haveRank || haveSize) {
    if (!haveRank || !haveSize)
      TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "launcher environment: %s is set but %s is not (set both, or neither)",
                  haveRank ? "TETHER_RANK" : "TETHER_SIZE", haveRank ? "TETHER_SIZE" : "TETHER_RANK");
    TETHER_TRY(intVar("TETHER_RANK", config.str("TETHER_RANK"), &job.rank));
    TETHER_TRY(intVar("TETHER_SIZE", config.str("TETHER_SIZE"), &job.size));
    if (config.isSet("TETHER_LOCAL_RANK"))
      TETHER_TRY(intVar("TETHER_LOCAL_RANK", config.str("TETHER_LOCAL_RANK"), &job.localRank));
    if (config.isSet("TETHER_LOCAL_SIZE"))
      TETHER_TRY(intVar("TETHER_LOCAL_SIZE", config.str("TETHER_LOCAL_SIZE"), &job.localSize));
    job.launcher = config.str("TETHER_LAUNCHER") == "tetherrun" ? "tetherrun" : "explicit";
  } else if (env("OMPI_COMM_WORLD_RANK")) {
    TETHER_TRY(readForeign(env,
                           {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                            "OMPI_COMM_WORLD_LOCAL_SIZE"},
                           &job));
  } else if (env("PMI_RANK")) {
    TETHER_TRY(readForeign(env, {"hydra", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}, &job));
  } else if (env("SLURM_PROCID")) {
    TETHER_TRY(readSlurm(env, &job));
  } else if (env("RANK") && env("WORLD_SIZE")) {
    TETHER_TRY(readForeign(env, {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}, &job));
  } else {
    job.rank = 0;
    job.size = 1;
    job.localRank = 0;
    job.localSize = 1;
    job.launcher = "none";
  }
  TETHER_TRY(validateRanks(job, originOf(job.launcher, env)));

  // Rendezvous address.
  if (config.isSet("TETHER_BOOTSTRAP_ADDR") && !config.str("TETHER_BOOTSTRAP_ADDR").empty()) {
    job.bootstrapAddr = config.str("TETHER_BOOTSTRAP_ADDR");
  } else if (job.launcher == "torchrun" && env("MASTER_ADDR") && env("MASTER_PORT")) {
    // torchrun's own rendezvous store may already listen on MASTER_PORT of that host; then rank 0's bind fails with
    // EADDRINUSE and the error (tcp_bootstrap.cpp) tells the user to set TETHER_BOOTSTRAP_ADDR to another port.
    job.bootstrapAddr = std::string(env("MASTER_ADDR")) + ":" + env("MASTER_PORT");
  }
  if (job.size > 1 && job.bootstrapAddr.empty()) {
    if (job.launcher == "torchrun")
      TETHER_FAIL(TETHER_ERR_BOOTSTRAP,
                  "job of %d PEs (torchrun, RANK=%d) has no rendezvous address: set TETHER_BOOTSTRAP_ADDR=host:port "
                  "(host of rank 0, a free port, the same on every rank), or MASTER_ADDR and MASTER_PORT",
                  job.size, job.rank);
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP,
                "job of %d PEs (launcher %s, rank %d) has no rendezvous address: set TETHER_BOOTSTRAP_ADDR=host:port "
                "(host of rank 0, a free port, the same on every rank)%s",
                job.size, job.launcher.c_str(), job.rank,
                !pmixEnvironment(env) ? ""
                : pmixBuilt() ? "; or leave it unset: tether_init then asks this launcher's PMIx server"
                              : "; this launcher offers PMIx, which needs no address, but this tether was built "
                                "without it: install libpmix-dev (Debian/Ubuntu) and rebuild with -DTETHER_PMIX=ON");
  }
  if (config.isSet("TETHER_BOOTSTRAP_FD")) {
    int fd = -1;
    TETHER_TRY(intVar("TETHER_BOOTSTRAP_FD", config.str("TETHER_BOOTSTRAP_FD"), &fd));
    if (fd < 0) TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "TETHER_BOOTSTRAP_FD=%d is not a file descriptor", fd);
    if (job.rank == 0) {
      job.listenFd = fd;
      job.listenFdInherited = true;
    }
    else
      TETHER_LOG_DEBUG(LogSys::Bootstrap, "ignoring TETHER_BOOTSTRAP_FD=%d on rank %d (only rank 0 serves)", fd,
                       job.rank);
  }
  if (!job.bootstrapAddr.empty()) {
    std::string host;
    int port = 0;
    if (!splitHostPort(job.bootstrapAddr, &host, &port) || (port == 0 && job.listenFd < 0))
      TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "rendezvous address '%s'%s: expected host:port with a port in 1-65535",
                  job.bootstrapAddr.c_str(),
                  config.isSet("TETHER_BOOTSTRAP_ADDR") ? " (TETHER_BOOTSTRAP_ADDR)" : " (MASTER_ADDR:MASTER_PORT)");
  }

  // Job secret.
  if (config.isSet("TETHER_JOB_SECRET") && !config.str("TETHER_JOB_SECRET").empty()) {
    job.secret = config.str("TETHER_JOB_SECRET");
    if (job.secret.size() > kMaxSecretBytes)
      TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "TETHER_JOB_SECRET is %zu bytes long; at most %zu are allowed",
                  job.secret.size(), kMaxSecretBytes);
  } else if (job.size > 1) {
    job.secret = derivedSecret(job, env);
    if (job.rank == 0)
      TETHER_LOG_WARN(LogSys::Bootstrap,
                      "no TETHER_JOB_SECRET under %s: using a secret derived from the job's identity, which other "
                      "users of these hosts can compute; export TETHER_JOB_SECRET=<random string> to every rank",
                      job.launcher.c_str());
  }

  TETHER_LOG_INFO(LogSys::Bootstrap, "job: launcher %s, rank %d of %d, local %d of %d, rendezvous %s%s",
                  job.launcher.c_str(), job.rank, job.size, job.localRank, job.localSize,
                  job.bootstrapAddr.empty() ? "(none)" : job.bootstrapAddr.c_str(),
                  job.listenFd >= 0 ? " (inherited socket)" : "");
  *out = std::move(job);
  return Status::ok();
}

Status detectJob(const Config& config, JobInfo* out) {
  return detectJobWith(config, [](const char* name) -> const char* { return std::getenv(name); }, out);
}

Status launcherJob(const Config& config, double timeoutSeconds, bool addressGiven, JobInfo* out) {
  const bool tetherSet = config.isSet("TETHER_RANK") || config.isSet("TETHER_SIZE") ||
                         (config.isSet("TETHER_BOOTSTRAP_ADDR") && !config.str("TETHER_BOOTSTRAP_ADDR").empty());
  if (!tetherSet && !addressGiven && pmixBuilt() &&
      pmixEnvironment([](const char* name) -> const char* { return std::getenv(name); }))
    return pmixJob(config, timeoutSeconds, out);
  return detectJob(config, out);
}

}  // namespace tether
