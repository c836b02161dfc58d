// Passing file descriptors between same-host processes (AF_UNIX, abstract namespace, SCM_RIGHTS).
//
// Used by the heap to share segment memory (memfd today, CUDA VMM POSIX handles with the GPU heap). Abstract socket
// names are visible to every process of the network namespace, so a server hands out a descriptor only to a client
// that presents the job secret first. Every blocking step is bounded by a timeout.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace tether {

class UnixFdServer {
 public:
  UnixFdServer() = default;
  ~UnixFdServer();
  UnixFdServer(const UnixFdServer&) = delete;
  UnixFdServer& operator=(const UnixFdServer&) = delete;

  // Listens on the abstract name (no filesystem entry). backlog >= number of clients expected at once.
  Status listen(const std::string& name, int backlog);
  // Accepts one client, checks that it sends `secret` followed by a 32-bit client id, then sends `fd` with `payload`
  // (payload bytes ride along, e.g. the segment size). *clientId receives the id. A client with a wrong secret is
  // dropped (warning) and the next one is awaited.
  Status serveOne(const std::string& secret, int fd, const void* payload, size_t payloadBytes, double timeoutSeconds,
                  int* clientId);
  void close();

 private:
  int fd_ = -1;
};

// Connects to `name`, presents `secret` and `clientId`, and receives one descriptor plus payloadBytes of payload.
// The caller owns *fd (CLOEXEC).
Status unixFetchFd(const std::string& name, const std::string& secret, int clientId, double timeoutSeconds, int* fd,
                   void* payload, size_t payloadBytes);

// Collective over the same-host PEs of a job: every PE offers `myFd` and receives a duplicate of every other PE's
// descriptor. peerFds[j] is local PE j's descriptor (owned by the caller; peerFds[localIndex] = -1). localRanks are the
// global ranks of the same-host PEs by local index; `channel` names this exchange within the job (e.g. "heap", "dev3").
// Step j: local PE j serves, the others fetch; everyone walks j in the same order, so there is no cycle. The caller
// must make sure every PE is listening before anyone fetches: listen first, then a barrier, then exchange().
class FdExchange {
 public:
  Status listen(const std::string& jobTag, const std::string& channel, int myRank, int localSize);
  Status exchange(int localIndex, const std::vector<int>& localRanks, const std::string& secret, int myFd,
                  double timeoutSeconds, std::vector<int>* peerFds);

 private:
  std::string name(int rank) const { return "tether." + jobTag_ + "." + channel_ + "." + std::to_string(rank); }
  UnixFdServer server_;
  std::string jobTag_, channel_;
};

}  // namespace tether
