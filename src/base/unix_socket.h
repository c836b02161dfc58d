// Passing file descriptors between same-host processes (AF_UNIX, abstract namespace, SCM_RIGHTS).
//
// Used by the heap to share segment memory (memfd today, CUDA VMM POSIX handles with the GPU heap). Abstract socket
// names have no permissions: any process of the network namespace can connect to (or bind) one. What protects them:
// - the peer's credentials (SO_PEERCRED): a server drops a client of another uid before reading a byte, and a client
//   refuses a server of another uid before sending the secret;
// - the job secret: a server hands out a descriptor only to a client that presents it;
// - concurrency: a server serves all its clients at once, each with a short deadline (kClientSeconds) to present the
//   secret, so a silent, slow or garbage-sending client never holds the others; at most kMaxPendingClients wait;
// - FdExchange's names are a keyed hash of the job tag (which travels only over the authenticated bootstrap), so
//   other users cannot predict the next name of a job to squat it.
// Every blocking step is bounded by the caller's timeout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace tether {

class UnixFdServer {
 public:
  static constexpr double kClientSeconds = 2;        // a connected client must present its secret within this
  static constexpr size_t kMaxPendingClients = 64;   // more unauthenticated connections: the oldest is dropped

  UnixFdServer() = default;
  ~UnixFdServer();
  UnixFdServer(const UnixFdServer&) = delete;
  UnixFdServer& operator=(const UnixFdServer&) = delete;

  // Listens on the abstract name (no filesystem entry). backlog >= number of clients expected at once.
  Status listen(const std::string& name, int backlog);
  // Serves one client: it must send `secret` followed by a 32-bit client id; it then gets `fd` with `payload`
  // (payload bytes ride along, e.g. the segment size). *clientId receives the id. Clients of another uid, with a
  // wrong secret, or that stay silent for kClientSeconds are dropped (rate-limited warning) while the others are
  // served; TETHER_ERR_TIMEOUT when no client qualified within timeoutSeconds.
  Status serveOne(const std::string& secret, int fd, const void* payload, size_t payloadBytes, double timeoutSeconds,
                  int* clientId);
  // As serveOne, for every id of clientIds exactly once (all connections handled concurrently); a client presenting
  // an id that is not in the list or was already served is dropped.
  Status serveAll(const std::string& secret, int fd, const void* payload, size_t payloadBytes,
                  const std::vector<int>& clientIds, double timeoutSeconds);
  void close();

 private:
  // count clients; ids limited to *expected when not null; served ids appended to *served.
  Status serve(const std::string& secret, int fd, const void* payload, size_t payloadBytes, size_t count,
               const std::vector<int>* expected, double timeoutSeconds, std::vector<int>* served);
  struct Client {  // an accepted connection that has not presented its secret yet
    int fd = -1;
    int pid = 0;
    uint64_t endNs = 0;     // kClientSeconds after accept
    std::vector<char> buf;  // secret + 32-bit id
    size_t got = 0;
  };
  int fd_ = -1;
  std::string name_;
  std::vector<Client> clients_;  // kept across serve() calls: a client accepted by one call is served by the next
};

// Connects to `name`, checks that the server runs under our uid (else TETHER_ERR_BOOTSTRAP, nothing sent), presents
// `secret` and `clientId`, and receives one descriptor plus payloadBytes of payload. The caller owns *fd (CLOEXEC).
Status unixFetchFd(const std::string& name, const std::string& secret, int clientId, double timeoutSeconds, int* fd,
                   void* payload, size_t payloadBytes);

// Collective over the same-host PEs of a job: every PE offers `myFd` and receives a duplicate of every other PE's
// descriptor. peerFds[j] is local PE j's descriptor (owned by the caller; peerFds[localIndex] = -1). localRanks are the
// global ranks of the same-host PEs by local index; `channel` names this exchange within the job (e.g. "heap", "dev3").
// Step j: local PE j serves, the others fetch; everyone walks j in the same order, so there is no cycle. The caller
// must make sure every PE is listening before anyone fetches: listen first, then a barrier, then exchange().
// Socket names are "tether." + a keyed hash (SipHash-2-4, key from jobTag) of channel and rank: `jobTag` must be
// random per job and must not be shown to other users (it reaches the PEs over the authenticated bootstrap).
class FdExchange {
 public:
  Status listen(const std::string& jobTag, const std::string& channel, int myRank, int localSize);
  Status exchange(int localIndex, const std::vector<int>& localRanks, const std::string& secret, int myFd,
                  double timeoutSeconds, std::vector<int>* peerFds);
  // The abstract socket name (without the leading NUL) of `rank` on `channel` for this job tag.
  static std::string socketName(const std::string& jobTag, const std::string& channel, int rank);

 private:
  std::string name(int rank) const { return socketName(jobTag_, channel_, rank); }
  UnixFdServer server_;
  std::string jobTag_, channel_;
};

}  // namespace tether
