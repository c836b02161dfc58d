// The rendezvous offer: what a job started by a launcher that gives no tether address (PMIx, an MPI communicator)
// needs to reach the TCP bootstrap. Rank 0 makes it up (a listening socket on a port the kernel picks, the address
// other ranks use, a random secret) and another channel carries it to every rank; then createTcpBootstrap runs as
// under tetherrun. Only this one blob crosses the foreign channel: every later bootstrap collective keeps the TCP
// bootstrap's checks (op, size, root), its TETHER_TIMEOUT bounds and its peer-loss reports.
#pragma once

#include <functional>

#include "bootstrap/bootstrap.h"

namespace tether {

// Bytes of the encoded offer, the same on every rank (a fixed-size broadcast needs no size exchange first).
constexpr size_t kOfferBytes = 2048;

// Carries `block` (kOfferBytes) from rank 0 to every rank: on return every rank's block is rank 0's. Bounded by
// the caller's timeout; an error names the channel.
using OfferCarrier = std::function<Status(char* block)>;

// job->rank and job->size are set. On rank 0: the address is TETHER_BOOTSTRAP_ADDR when the config has it (the
// bootstrap binds it), else "<this host's name>:<port>" of a new socket listening on every interface on a port the
// kernel picks (job->listenFd, owned by the caller, i.e. by createTcpBootstrap); the secret is TETHER_JOB_SECRET or
// 64 random hex digits. `channel` names the carrier in messages ("PMIx", "MPI"). On return every rank's
// job->bootstrapAddr and job->secret are rank 0's. On failure no socket is left open.
Status exchangeOffer(const Config& config, const char* channel, const OfferCarrier& carry, JobInfo* job);

// Encoding, exposed for tests: "TTHO" | u16 addr length | addr | u16 secret length | secret, zero padded.
Status encodeOffer(const std::string& addr, const std::string& secret, char* block);
Status decodeOffer(const char* block, const char* channel, std::string* addr, std::string* secret);

// The name other hosts should use for this one: gethostname() when it resolves to an IPv4 address here, else the
// first non-loopback IPv4 interface address, else 127.0.0.1.
std::string advertisedHost();

}  // namespace tether
