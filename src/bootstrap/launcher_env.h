// Internal seam of detectJob (bootstrap.h): the same detection with the foreign launchers' variables read through a
// lookup function instead of getenv, so tests can feed any launcher's environment without mutating the process's.
// TETHER_* variables always come from the Config.
#pragma once

#include <functional>

#include "bootstrap/bootstrap.h"

namespace tether {

// Returns the value of a (non-TETHER_*) environment variable, or nullptr when it is unset.
using EnvLookup = std::function<const char*(const char* name)>;

Status detectJobWith(const Config& config, const EnvLookup& env, JobInfo* out);

// Splits "host:port" ("[v6]:port" also accepted syntactically). Returns false when the form or the port (0-65535)
// is bad.
bool splitHostPort(const std::string& addr, std::string* host, int* port);

// Slurm's tasks-per-node lists (SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE): comma-
// separated terms "N" (one node with N tasks) or "N(xM)" (M nodes with N tasks each), e.g. "2(x3),1". Found: *tasks
// is node `node`'s count (node >= 0), or the count every node has when node < 0 and the list is uniform.
// NotThisNode: the list is well formed but has no entry for `node` (or is uneven and node < 0). Malformed: anything
// else (empty, zero counts, spaces, "x" without parentheses, values above INT_MAX); *tasks is then left alone.
enum class SlurmTasks { Found, NotThisNode, Malformed };
SlurmTasks slurmTasksOnNode(const char* value, int node, int* tasks);

}  // namespace tether
