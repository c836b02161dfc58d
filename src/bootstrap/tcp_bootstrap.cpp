// TCP bootstrap: a star around rank 0.
//
// Rank 0 listens (job.bootstrapAddr, or the socket tetherrun passed in job.listenFd; either way the bootstrap owns
// that socket and closes it when the rendezvous ends), the other ranks connect and send a hello (magic, protocol
// version, rank, size, secret). Rank 0 checks it, answers one Accept to every rank once all size-1 have arrived,
// and from then on serves the collectives: each rank sends its frame to rank 0, rank 0 checks that every frame
// names the same operation, sequence number and argument, and sends each rank its result.
//
// Failure rules: a connection with a bad hello (wrong magic, version, size or secret, duplicate or bad rank) is
// closed with a warning naming its address and the rendezvous goes on, so a stranger can neither break nor join the
// job. Any failure of a collective seen by rank 0 (mismatch, timeout, lost rank) is sent as an Error frame to every
// other rank, so all of them fail with the same cause instead of waiting. Once failed, a bootstrap stays failed.
// All sockets are non-blocking, close-on-exec, TCP_NODELAY; every wait is a poll() bounded by the timeout; sends use
// MSG_NOSIGNAL (tcp_io.h). Nothing here is global, so several bootstraps may live in one process. The frames on the
// wire are tcp_wire.h's.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/unique_fd.h"
#include "bootstrap/launcher_env.h"
#include "bootstrap/tcp_io.h"
#include "bootstrap/tcp_wire.h"

namespace tether {
namespace {

using namespace tcp_io;
using namespace tcp_wire;

constexpr size_t kMaxPending = 64;        // unauthenticated connections held at once; the oldest is dropped beyond
constexpr double kHandshakeSeconds = 10;  // a connection must present its hello within this

// "1, 3-5, 7"
std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += j == i ? std::to_string(ranks[i]) : strprintf("%d-%d", ranks[i], ranks[j]);
    i = j + 1;
  }
  return s;
}

// The rendezvous timeout's advice. Under PMIx and tether_init_mpi the address and secret came from rank 0 itself
// (offer.h), so the usual suspects are a rank that never called init and a host name the others cannot reach.
std::string missingRankHint(const std::string& launcher) {
  if (launcher == "pmix" || launcher == "mpi")
    return strprintf("check that every rank called %s and that rank 0's address (from %s) is reachable from their "
                     "hosts", launcher == "mpi" ? "tether_init_mpi" : "tether_init",
                     launcher == "mpi" ? "MPI" : "PMIx");
  return "check that every rank was started with the same TETHER_BOOTSTRAP_ADDR and TETHER_JOB_SECRET";
}

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(const JobInfo& job, double timeout)
      : rank_(job.rank), size_(job.size), timeout_(timeout), addr_(job.bootstrapAddr), secret_(job.secret),
        missingHint_(missingRankHint(job.launcher)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status serve(const JobInfo& job);
  Status join();

  Status allgather(const void* in, void* out, size_t bytes) override;
  Status barrier() override;
  Status alltoall(const void* in, void* out, size_t bytes) override;
  Status broadcast(void* buf, size_t bytes, int root) override;

 private:
  struct Pending {
    UniqueFd fd;
    std::string peer;
    uint64_t startNs = 0;
    std::vector<uint8_t> buf;
    size_t got = 0;
    bool haveHeader = false;
  };

  // Clients wait this much longer than rank 0 so that rank 0's diagnosis (which ranks are missing) reaches them.
  double clientGrace() const { return std::min(1.0, 0.25 * timeout_); }
  Status usable() const;
  Status fail(Status s);
  std::string rankName(int r) const { return strprintf("rank %d (%s)", r, peerNames_[r].c_str()); }

  // Rank 0.
  Status openListener(const JobInfo& job, UniqueFd* out);
  Status rendezvous(int listenFd);
  bool readHello(Pending& p);  // false: drop the connection (p.fd moved into peers_ when accepted)
  void reject(Pending& p, uint16_t reason, const char* why, int claimedRank, int claimedSize);
  Status gather(uint16_t op, uint32_t seq, int32_t aux, uint64_t count, const std::function<size_t(int)>& payloadOf,
                const std::function<uint8_t*(int)>& destOf, const Deadline& dl);
  Status reply(int r, uint16_t op, uint32_t seq, const void* data, size_t n, const Deadline& dl);

  // Other ranks.
  Status exchange(uint16_t op, uint32_t seq, int32_t aux, uint64_t count, const void* payload, size_t payloadBytes,
                  void* recvBuf, size_t recvBytes);
  Status readReplyHeader(uint16_t op, uint32_t seq, const Deadline& dl, Header* h);
  Status clientIoStatus(const IoResult& io, uint16_t op, uint32_t seq, const char* doing) const;

  const int rank_;
  const int size_;
  const double timeout_;
  const std::string addr_;
  const std::string secret_;
  const std::string missingHint_;  // what to check when ranks never connect (depends on where the address came from)
  uint32_t seq_ = 0;
  Status broken_;
  std::vector<UniqueFd> peers_;         // rank 0: connection to rank r at index r (index 0 unused)
  std::vector<std::string> peerNames_;  // rank 0: their addresses, for messages
  UniqueFd server_;                     // other ranks: connection to rank 0
  LogLimiter connWarnings_{"bootstrap connection warnings"};  // rank 0: refused/dropped connections (a flood)
};

Status TcpBootstrap::usable() const {
  if (broken_.isOk()) return Status::ok();
  return Status(broken_.code(), "bootstrap unusable after an earlier failure: " + broken_.message());
}

// Remembers the failure; on rank 0 also tells every other rank (best effort, short bound).
Status TcpBootstrap::fail(Status s) {
  broken_ = s;
  TETHER_LOG_ERROR(LogSys::Bootstrap, "%s", s.message().c_str());
  if (rank_ != 0) return s;
  const std::string text = s.message().substr(0, kMaxErrorText);
  Header h;
  h.op = kError;
  h.code = static_cast<uint16_t>(s.code());
  h.seq = seq_;
  h.bytes = text.size();
  const std::vector<uint8_t> f = frame(h, text.data(), text.size());
  Deadline dl(0.5);
  for (auto& p : peers_)
    if (p) (void)sendAll(p.get(), f.data(), f.size(), dl, false);
  return s;
}

// ---- rank 0: rendezvous ---------------------------------------------------------------------------------------

Status TcpBootstrap::openListener(const JobInfo& job, UniqueFd* out) {
  if (job.listenFd >= 0) {
    UniqueFd fd(job.listenFd);
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
      TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "bootstrap: inherited fd %d (TETHER_BOOTSTRAP_FD) is not a listening socket",
                  job.listenFd);
    int fl = ::fcntl(fd.get(), F_GETFL);
    if (fl < 0 || ::fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK) != 0 || ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC) != 0)
      return errnoStatus("bootstrap: fcntl on inherited listening socket", errno);
    *out = std::move(fd);
    return Status::ok();
  }
  std::string host;
  int port = 0;
  if (!splitHostPort(job.bootstrapAddr, &host, &port))
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "bootstrap: rendezvous address '%s' is not host:port", job.bootstrapAddr.c_str());
  if (port == 0)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP,
                "bootstrap: rendezvous address '%s' has port 0; the other ranks cannot know the port, choose one",
                job.bootstrapAddr.c_str());
  sockaddr_in sa{};
  TETHER_TRY(resolveIPv4(host, port, job.bootstrapAddr, &sa));
  // A loopback address keeps the job on this host; otherwise listen on every interface (the name may resolve to
  // an address of another interface, e.g. Debian's 127.0.1.1 hostname entry).
  if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127) sa.sin_addr.s_addr = htonl(INADDR_ANY);
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return errnoStatus("bootstrap: socket", errno);
  int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    int err = errno;
    if (err == EADDRINUSE)
      TETHER_FAIL(TETHER_ERR_BOOTSTRAP,
                  "bootstrap: rank 0 cannot listen on %s: the port is already in use by another process%s; set "
                  "TETHER_BOOTSTRAP_ADDR=<host>:<free port>, the same on every rank",
                  job.bootstrapAddr.c_str(),
                  job.launcher == "torchrun" ? " (under torchrun its own rendezvous store listens on MASTER_PORT)" : "");
    return errnoStatus("bootstrap: bind " + job.bootstrapAddr, err);
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) return errnoStatus("bootstrap: listen " + job.bootstrapAddr, errno);
  *out = std::move(fd);
  return Status::ok();
}

Status TcpBootstrap::serve(const JobInfo& job) {
  peers_.resize(static_cast<size_t>(size_));
  peerNames_.assign(static_cast<size_t>(size_), "self");
  UniqueFd listener;
  TETHER_TRY(openListener(job, &listener));  // takes job.listenFd even for a 1-PE job, so it is always closed
  if (size_ == 1) return Status::ok();
  TETHER_LOG_INFO(LogSys::Bootstrap, "rank 0 waits for %d ranks on %s", size_ - 1, addr_.c_str());
  return rendezvous(listener.get());
}

void TcpBootstrap::reject(Pending& p, uint16_t reason, const char* why, int claimedRank, int claimedSize) {
  connWarnings_.warn(LogSys::Bootstrap, "refused connection from %s (claimed rank %d of %d): %s", p.peer.c_str(),
                     claimedRank, claimedSize, why);
  Header h;
  h.op = kReject;
  h.code = reason;
  const std::vector<uint8_t> f = frame(h);
  (void)::send(p.fd.get(), f.data(), f.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool TcpBootstrap::readHello(Pending& p) {
  ssize_t k = ::recv(p.fd.get(), p.buf.data() + p.got, p.buf.size() - p.got, MSG_DONTWAIT);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  if (k <= 0) {
    TETHER_LOG_DEBUG(LogSys::Bootstrap, "connection from %s closed before its hello", p.peer.c_str());
    return false;
  }
  p.got += static_cast<size_t>(k);
  if (p.got < p.buf.size()) return true;
  if (!p.haveHeader) {
    Header h = decodeHeader(p.buf.data());
    if (h.magic != kMagic || h.op != kHello || h.bytes < kHelloFixedBytes ||
        h.bytes > kHelloFixedBytes + kMaxSecretBytes) {
      connWarnings_.warn(LogSys::Bootstrap, "refused connection from %s: not a tether bootstrap hello",
                         p.peer.c_str());
      return false;
    }
    p.haveHeader = true;
    p.buf.assign(h.bytes, 0);
    p.got = 0;
    return true;
  }
  const uint8_t* b = p.buf.data();
  const HelloFixed hello = decodeHelloFixed(b);
  const uint32_t version = hello.version, secretLen = hello.secretLen;
  const int claimedRank = hello.rank, claimedSize = hello.size;
  if (secretLen != p.buf.size() - kHelloFixedBytes) {
    connWarnings_.warn(LogSys::Bootstrap, "refused connection from %s: malformed hello", p.peer.c_str());
    return false;
  }
  if (version != kProtocolVersion) {
    reject(p, kRejectVersion, rejectText(kRejectVersion), claimedRank, claimedSize);
  } else if (!secretMatches(secret_, b + kHelloFixedBytes, secretLen)) {
    reject(p, kRejectSecret, "wrong job secret", claimedRank, claimedSize);
  } else if (claimedSize != size_) {
    reject(p, kRejectSize, strprintf("job size %d, but rank 0 has %d", claimedSize, size_).c_str(), claimedRank,
           claimedSize);
  } else if (claimedRank < 1 || claimedRank >= size_) {
    reject(p, kRejectRank, rejectText(kRejectRank), claimedRank, claimedSize);
  } else if (peers_[static_cast<size_t>(claimedRank)]) {
    reject(p, kRejectDuplicate,
           strprintf("rank %d already joined from %s", claimedRank,
                     peerNames_[static_cast<size_t>(claimedRank)].c_str())
               .c_str(),
           claimedRank, claimedSize);
  } else {
    setNoDelay(p.fd.get());
    peerNames_[static_cast<size_t>(claimedRank)] = p.peer;
    peers_[static_cast<size_t>(claimedRank)] = std::move(p.fd);
    TETHER_LOG_DEBUG(LogSys::Bootstrap, "rank %d joined from %s", claimedRank, p.peer.c_str());
  }
  return false;
}

Status TcpBootstrap::rendezvous(int listenFd) {
  Deadline dl(timeout_);
  NoteTimer note(waitReportSeconds());
  std::vector<Pending> pending;
  std::vector<pollfd> pfds;
  std::vector<int> peerOrder;
  auto connectedCount = [&] {
    int n = 0;
    for (int r = 1; r < size_; ++r) n += peers_[static_cast<size_t>(r)] ? 1 : 0;
    return n;
  };
  while (connectedCount() < size_ - 1) {
    if (dl.expired()) {
      std::vector<int> missing;
      for (int r = 1; r < size_; ++r)
        if (!peers_[static_cast<size_t>(r)]) missing.push_back(r);
      return fail(Status(TETHER_ERR_TIMEOUT,
                         strprintf("bootstrap rendezvous on %s timed out after %.3g s: rank(s) %s never connected "
                                   "(%d of %d ranks present); %s",
                                   addr_.c_str(), timeout_, rankList(missing).c_str(), size_ - int(missing.size()),
                                   size_, missingHint_.c_str())));
    }
    if (note.due()) {
      std::vector<int> missing;
      for (int r = 1; r < size_; ++r)
        if (!peers_[static_cast<size_t>(r)]) missing.push_back(r);
      TETHER_LOG_WARN(LogSys::Bootstrap, "bootstrap rendezvous on %s: still waiting for rank(s) %s to connect (%d of "
                      "%d ranks present); %.0f s so far, %.0f s left of TETHER_TIMEOUT",
                      addr_.c_str(), rankList(missing).c_str(), size_ - int(missing.size()), size_,
                      dl.elapsedSeconds(), dl.secondsLeft());
    }
    pfds.clear();
    peerOrder.clear();
    pfds.push_back({listenFd, POLLIN, 0});
    for (auto& p : pending) pfds.push_back({p.fd.get(), POLLIN, 0});
    for (int r = 1; r < size_; ++r)
      if (peers_[static_cast<size_t>(r)]) {
        pfds.push_back({peers_[static_cast<size_t>(r)].get(), POLLIN, 0});
        peerOrder.push_back(r);
      }
    int n = ::poll(pfds.data(), pfds.size(), std::min(dl.msLeft(), 250));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errnoStatus("bootstrap rendezvous: poll", errno));

    // An accepted rank sends nothing before our Accept: any event means it left (or broke the protocol).
    for (size_t i = 0; i < peerOrder.size(); ++i) {
      const pollfd& pf = pfds[1 + pending.size() + i];
      if (!pf.revents) continue;
      auto& fd = peers_[static_cast<size_t>(peerOrder[i])];
      uint8_t byte;
      ssize_t k = ::recv(fd.get(), &byte, 1, MSG_DONTWAIT | MSG_PEEK);
      if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      TETHER_LOG_WARN(LogSys::Bootstrap, "%s %s during the rendezvous; waiting for it to rejoin",
                      rankName(peerOrder[i]).c_str(), k > 0 ? "sent data out of turn" : "disconnected");
      fd.reset();
    }
    const uint64_t now = nowNs();
    for (size_t i = 0; i < pending.size(); ++i) {
      bool keep = true;
      if (pfds[1 + i].revents) keep = readHello(pending[i]);
      if (keep && now - pending[i].startNs > static_cast<uint64_t>(kHandshakeSeconds * 1e9)) {
        connWarnings_.warn(LogSys::Bootstrap, "dropped connection from %s: no hello within %.0f s",
                           pending[i].peer.c_str(), kHandshakeSeconds);
        keep = false;
      }
      if (!keep) pending[i].fd.reset();
    }
    pending.erase(std::remove_if(pending.begin(), pending.end(), [](const Pending& p) { return !p.fd; }),
                  pending.end());
    if (pfds[0].revents) {
      for (;;) {
        int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno != EAGAIN && errno != EWOULDBLOCK)
            connWarnings_.warn(LogSys::Bootstrap, "accept: %s", std::strerror(errno));
          break;
        }
        if (pending.size() >= kMaxPending) {
          connWarnings_.warn(LogSys::Bootstrap, "too many connections without hello; dropped %s",
                             pending.front().peer.c_str());
          pending.erase(pending.begin());
        }
        Pending p;
        p.fd.reset(fd);
        p.peer = peerName(fd);
        p.startNs = nowNs();
        p.buf.assign(kHeaderBytes, 0);
        pending.push_back(std::move(p));
      }
    }
  }
  Header h;
  h.op = kAccept;
  h.aux = size_;
  const std::vector<uint8_t> acceptFrame = frame(h);
  Deadline sendDl(timeout_);
  for (int r = 1; r < size_; ++r) {
    const int fd = peers_[static_cast<size_t>(r)].get();
    IoResult io = sendAll(fd, acceptFrame.data(), acceptFrame.size(), sendDl, false);
    if (io.kind != Io::Ok)
      return fail(Status(TETHER_ERR_PEER_LOST,
                         strprintf("bootstrap rendezvous: %s went away before it was accepted", rankName(r).c_str())));
  }
  TETHER_LOG_INFO(LogSys::Bootstrap, "all %d ranks connected", size_);
  return Status::ok();
}

// ---- rank 0: collectives --------------------------------------------------------------------------------------

// Receives one request from every other rank: checks op, seq and count (and aux for broadcast) against rank 0's,
// then reads payloadOf(r) bytes into destOf(r). All ranks are read concurrently, so a timeout can name all the late.
Status TcpBootstrap::gather(uint16_t op, uint32_t seq, int32_t aux, uint64_t count,
                            const std::function<size_t(int)>& payloadOf, const std::function<uint8_t*(int)>& destOf,
                            const Deadline& dl) {
  struct Inbound {
    uint8_t hdr[kHeaderBytes];
    size_t hdrGot = 0;
    size_t need = 0;
    size_t got = 0;
    uint8_t* dest = nullptr;
    bool done = false;
  };
  std::vector<Inbound> in(static_cast<size_t>(size_));
  std::vector<pollfd> pfds;
  std::vector<int> who;
  const char* name = opName(op);
  NoteTimer note(waitReportSeconds());
  for (;;) {
    pfds.clear();
    who.clear();
    for (int r = 1; r < size_; ++r)
      if (!in[static_cast<size_t>(r)].done) {
        pfds.push_back({peers_[static_cast<size_t>(r)].get(), POLLIN, 0});
        who.push_back(r);
      }
    if (who.empty()) return Status::ok();
    int ms = dl.msLeft();
    if (ms == 0) {
      std::vector<int> absent, partial;
      for (int r : who) (in[static_cast<size_t>(r)].hdrGot == 0 ? absent : partial).push_back(r);
      std::string msg = strprintf("bootstrap %s #%u timed out after %.3g s on rank 0: ", name, seq, timeout_);
      if (!absent.empty()) msg += "rank(s) " + rankList(absent) + " had not called it";
      if (!partial.empty()) msg += (absent.empty() ? "" : "; ") + std::string("rank(s) ") + rankList(partial) +
                                   " had not finished sending";
      return fail(Status(TETHER_ERR_TIMEOUT, msg));
    }
    if (note.due())
      TETHER_LOG_WARN(LogSys::Bootstrap, "bootstrap %s #%u: rank 0 still waiting for rank(s) %s; %.0f s so far, %.0f s "
                      "left of TETHER_TIMEOUT",
                      name, seq, rankList(who).c_str(), dl.elapsedSeconds(), dl.secondsLeft());
    int n = ::poll(pfds.data(), pfds.size(), std::min(ms, note.msToNext()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errnoStatus(strprintf("bootstrap %s #%u: poll", name, seq), errno));
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (!pfds[i].revents) continue;
      const int r = who[i];
      Inbound& b = in[static_cast<size_t>(r)];
      const bool inHeader = b.hdrGot < kHeaderBytes;
      uint8_t* dst = inHeader ? b.hdr + b.hdrGot : b.dest + b.got;
      size_t want = inHeader ? kHeaderBytes - b.hdrGot : b.need - b.got;
      ssize_t k = ::recv(pfds[i].fd, dst, want, MSG_DONTWAIT);
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (k == 0 || (k < 0 && fromErrno(errno).kind == Io::Closed)) {
        peers_[static_cast<size_t>(r)].reset();
        return fail(Status(TETHER_ERR_PEER_LOST, strprintf("bootstrap %s #%u: %s closed its connection (the process "
                                                           "exited or failed)",
                                                           name, seq, rankName(r).c_str())));
      }
      if (k < 0)
        return fail(errnoStatus(strprintf("bootstrap %s #%u: recv from %s", name, seq, rankName(r).c_str()), errno));
      if (inHeader) {
        b.hdrGot += static_cast<size_t>(k);
        if (b.hdrGot < kHeaderBytes) continue;
        Header h = decodeHeader(b.hdr);
        if (h.magic != kMagic)
          return fail(Status(TETHER_ERR_INTERNAL,
                             strprintf("bootstrap %s #%u: corrupt frame from %s", name, seq, rankName(r).c_str())));
        if (h.op != op || h.seq != seq)
          return fail(Status(TETHER_ERR_MISMATCH,
                             strprintf("bootstrap call mismatch: rank 0 is in %s #%u but rank %d called %s #%u (every "
                                       "rank must make the same bootstrap calls in the same order)",
                                       name, seq, r, opName(h.op), h.seq)));
        if (h.bytes != count)
          return fail(Status(TETHER_ERR_MISMATCH,
                             strprintf("bootstrap %s #%u: rank %d passed %llu bytes but rank 0 passed %llu", name, seq,
                                       r, static_cast<unsigned long long>(h.bytes),
                                       static_cast<unsigned long long>(count))));
        if (op == kBroadcast && h.aux != aux)
          return fail(Status(TETHER_ERR_MISMATCH,
                             strprintf("bootstrap broadcast #%u: rank %d gave root %d but rank 0 gave root %d", seq, r,
                                       h.aux, aux)));
        b.need = payloadOf(r);
        b.dest = destOf(r);
      } else {
        b.got += static_cast<size_t>(k);
      }
      b.done = b.got == b.need;
    }
  }
}

Status TcpBootstrap::reply(int r, uint16_t op, uint32_t seq, const void* data, size_t n, const Deadline& dl) {
  uint8_t hb[kHeaderBytes];
  Header h;
  h.op = op;
  h.seq = seq;
  h.bytes = n;
  encodeHeader(h, hb);  // the payload goes from the caller's buffer, not copied into a frame
  int fd = peers_[static_cast<size_t>(r)].get();
  IoResult io = sendAll(fd, hb, sizeof hb, dl, false);
  if (io.kind == Io::Ok && n) io = sendAll(fd, data, n, dl, false);
  switch (io.kind) {
    case Io::Ok:
    case Io::Incoming: return Status::ok();
    case Io::Closed:
      peers_[static_cast<size_t>(r)].reset();
      return fail(Status(TETHER_ERR_PEER_LOST, strprintf("bootstrap %s #%u: %s closed its connection (the process "
                                                         "exited or failed)",
                                                         opName(op), seq, rankName(r).c_str())));
    case Io::Timeout:
      return fail(Status(TETHER_ERR_TIMEOUT, strprintf("bootstrap %s #%u: %s did not take its result within %.3g s",
                                                       opName(op), seq, rankName(r).c_str(), timeout_)));
    case Io::Error: break;
  }
  return fail(errnoStatus(strprintf("bootstrap %s #%u: send to %s", opName(op), seq, rankName(r).c_str()), io.err));
}

// ---- other ranks ----------------------------------------------------------------------------------------------

Status TcpBootstrap::join() {
  Deadline total(timeout_ + clientGrace());
  Deadline connectDl(timeout_);
  std::string host;
  int port = 0;
  if (!splitHostPort(addr_, &host, &port) || port == 0)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "bootstrap: rendezvous address '%s' is not host:port with a port in 1-65535",
                addr_.c_str());
  if (secret_.size() > kMaxSecretBytes)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "bootstrap: the job secret is %zu bytes; at most %zu are allowed",
                secret_.size(), kMaxSecretBytes);
  sockaddr_in sa{};
  TETHER_TRY(resolveIPv4(host, port, addr_, &sa));
  int backoffMs = 5, lastErr = 0;
  NoteTimer note(waitReportSeconds());
  for (;;) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return errnoStatus("bootstrap: socket", errno);
    int err = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 ? 0 : errno;
    if (err == EINPROGRESS || err == EINTR) {
      pollfd pfd{fd.get(), POLLOUT, 0};
      int n;
      do n = ::poll(&pfd, 1, connectDl.msLeft());
      while (n < 0 && errno == EINTR);
      socklen_t len = sizeof err;
      if (n <= 0) err = ETIMEDOUT;
      else if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) {
      server_ = std::move(fd);
      break;
    }
    const bool retry = err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH ||
                       err == ECONNRESET || err == ECONNABORTED || err == EAGAIN || err == EADDRNOTAVAIL;
    if (!retry) return errnoStatus("bootstrap: connect to rank 0 at " + addr_, err);
    lastErr = err;
    if (connectDl.expired())
      TETHER_FAIL(TETHER_ERR_TIMEOUT,
                  "bootstrap: rank %d could not connect to rank 0 at %s within %.3g s (last error: %s); is rank 0 "
                  "running, and is TETHER_BOOTSTRAP_ADDR the same on every rank?",
                  rank_, addr_.c_str(), timeout_, std::strerror(lastErr));
    if (note.due())
      TETHER_LOG_WARN(LogSys::Bootstrap, "bootstrap: rank %d still cannot reach rank 0 at %s (%s); %.0f s so far, %.0f s "
                      "left of TETHER_TIMEOUT",
                      rank_, addr_.c_str(), std::strerror(lastErr), connectDl.elapsedSeconds(),
                      connectDl.secondsLeft());
    ::poll(nullptr, 0, std::min(backoffMs, connectDl.msLeft()));
    backoffMs = std::min(backoffMs * 2, 250);
  }
  setNoDelay(server_.get());

  const std::vector<uint8_t> hello = helloFrame(rank_, size_, secret_);
  IoResult io = sendAll(server_.get(), hello.data(), hello.size(), total, true);

  uint8_t rb[kHeaderBytes];
  if (io.kind == Io::Ok || io.kind == Io::Incoming) {
    awaitReadable(server_.get(), total, [&](double waited, double left) {
      TETHER_LOG_WARN(LogSys::Bootstrap, "bootstrap: rank %d waits to be accepted by rank 0 at %s (it accepts once all "
                      "%d ranks have connected); %.0f s so far, %.0f s left of TETHER_TIMEOUT",
                      rank_, addr_.c_str(), size_, waited, left);
    });
    io = recvAll(server_.get(), rb, sizeof rb, total);
  }
  if (io.kind == Io::Timeout)
    TETHER_FAIL(TETHER_ERR_TIMEOUT,
                "bootstrap: rank %d connected to rank 0 at %s but was not accepted within %.3g s (rank 0 accepts "
                "once all %d ranks have connected)",
                rank_, addr_.c_str(), timeout_, size_);
  // Rank 0 stops listening once all ranks are in: a connection still in its backlog is closed unanswered. Seen when
  // a rank is started twice (overlapping tetherrun --ranks on two hosts) and the job completed without this one.
  if (io.kind == Io::Closed)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP,
                "bootstrap: rank 0 at %s closed the connection during rank %d's handshake: either all %d ranks had "
                "already joined (rank %d started twice? check that the hosts' rank ranges do not overlap) or it is "
                "not a tether rendezvous",
                addr_.c_str(), rank_, size_, rank_);
  if (io.kind == Io::Error) return errnoStatus("bootstrap: handshake with rank 0 at " + addr_, io.err);
  Header r = decodeHeader(rb);
  if (r.magic == kMagic && r.op == kAccept && r.aux == size_) {
    TETHER_LOG_DEBUG(LogSys::Bootstrap, "rank %d accepted by rank 0 at %s", rank_, addr_.c_str());
    return Status::ok();
  }
  if (r.magic == kMagic && r.op == kReject)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "bootstrap: rank 0 at %s refused rank %d (size %d): %s", addr_.c_str(), rank_,
                size_, rejectText(r.code));
  if (r.magic == kMagic && r.op == kError) return readReplyHeader(kAccept, 0, total, &r);
  TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "bootstrap: unexpected answer from %s to rank %d's hello (not a tether rendezvous?)",
              addr_.c_str(), rank_);
}

Status TcpBootstrap::clientIoStatus(const IoResult& io, uint16_t op, uint32_t seq, const char* doing) const {
  switch (io.kind) {
    case Io::Closed:
      return Status(TETHER_ERR_PEER_LOST,
                    strprintf("bootstrap %s #%u: rank 0 (%s) closed the connection while rank %d was %s (rank 0 "
                              "exited or failed)",
                              opName(op), seq, addr_.c_str(), rank_, doing));
    case Io::Timeout:
      return Status(TETHER_ERR_TIMEOUT,
                    strprintf("bootstrap %s #%u: rank %d got no reply from rank 0 within %.3g s (rank 0 waits until "
                              "every rank has made the call)",
                              opName(op), seq, rank_, timeout_ + clientGrace()));
    case Io::Error:
      return errnoStatus(strprintf("bootstrap %s #%u: %s rank 0", opName(op), seq, doing), io.err);
    default: return Status::ok();
  }
}

// Reads a reply header; an Error frame from rank 0 becomes its Status (h already holding an Error header is read
// from its text on).
Status TcpBootstrap::readReplyHeader(uint16_t op, uint32_t seq, const Deadline& dl, Header* h) {
  if (h->op != kError || h->magic != kMagic) {
    uint8_t hb[kHeaderBytes];
    IoResult io = recvAll(server_.get(), hb, sizeof hb, dl);
    if (io.kind != Io::Ok) return fail(clientIoStatus(io, op, seq, "waiting for the result"));
    *h = decodeHeader(hb);
  }
  if (h->magic != kMagic)
    return fail(Status(TETHER_ERR_INTERNAL, strprintf("bootstrap %s #%u: corrupt frame from rank 0", opName(op), seq)));
  if (h->op != kError) return Status::ok();
  if (h->bytes > kMaxErrorText)
    return fail(Status(TETHER_ERR_INTERNAL, strprintf("bootstrap %s #%u: oversized error frame from rank 0",
                                                      opName(op), seq)));
  std::string text(h->bytes, '\0');
  IoResult io = recvAll(server_.get(), &text[0], text.size(), dl);
  if (io.kind != Io::Ok) text = "(message lost)";
  tether_status_t code = static_cast<tether_status_t>(h->code);
  if (h->code == 0 || h->code > TETHER_ERR_TRUNCATED) code = TETHER_ERR_INTERNAL;
  broken_ = Status(code, text + " (reported by rank 0)");
  TETHER_LOG_INFO(LogSys::Bootstrap, "%s", broken_.message().c_str());
  return broken_;
}

Status TcpBootstrap::exchange(uint16_t op, uint32_t seq, int32_t aux, uint64_t count, const void* payload,
                              size_t payloadBytes, void* recvBuf, size_t recvBytes) {
  Deadline dl(timeout_ + clientGrace());
  uint8_t hb[kHeaderBytes];
  Header h;
  h.op = op;
  h.seq = seq;
  h.aux = aux;
  h.bytes = count;
  encodeHeader(h, hb);
  IoResult io = sendAll(server_.get(), hb, sizeof hb, dl, true);
  if (io.kind == Io::Ok && payloadBytes) io = sendAll(server_.get(), payload, payloadBytes, dl, true);
  // Closed: rank 0 may have failed the call and reset the connection; its Error frame can still be queued here.
  if (io.kind == Io::Timeout || io.kind == Io::Error) return fail(clientIoStatus(io, op, seq, "sending its request"));
  Header r;
  r.op = 0;
  awaitReadable(server_.get(), dl, [&](double waited, double left) {
    TETHER_LOG_WARN(LogSys::Bootstrap, "bootstrap %s #%u: rank %d still waiting for rank 0's reply (sent once every "
                    "rank has made the call); %.0f s so far, %.0f s left of TETHER_TIMEOUT",
                    opName(op), seq, rank_, waited, left);
  });
  TETHER_TRY(readReplyHeader(op, seq, dl, &r));
  if (r.op != op || r.seq != seq || r.bytes != recvBytes)
    return fail(Status(TETHER_ERR_INTERNAL,
                       strprintf("bootstrap %s #%u: unexpected reply from rank 0 (%s #%u, %llu bytes; expected %zu)",
                                 opName(op), seq, opName(r.op), r.seq, static_cast<unsigned long long>(r.bytes),
                                 recvBytes)));
  if (recvBytes) {
    io = recvAll(server_.get(), recvBuf, recvBytes, dl);
    if (io.kind != Io::Ok) return fail(clientIoStatus(io, op, seq, "receiving the result"));
  }
  return Status::ok();
}

// ---- collectives ----------------------------------------------------------------------------------------------

Status TcpBootstrap::allgather(const void* in, void* out, size_t bytes) {
  TETHER_TRY(usable());
  if (bytes && (!in || !out))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "bootstrap allgather: null buffer with %zu bytes", bytes);
  if (bytes > SIZE_MAX / static_cast<size_t>(size_))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "bootstrap allgather: %zu bytes x %d ranks overflows", bytes, size_);
  const size_t total = bytes * static_cast<size_t>(size_);
  const uint32_t seq = ++seq_;
  uint8_t* o = static_cast<uint8_t*>(out);
  if (rank_ != 0) return exchange(kAllgather, seq, 0, bytes, in, bytes, out, total);
  Deadline dl(timeout_);
  if (bytes && o != in) std::memmove(o, in, bytes);
  TETHER_TRY(gather(
      kAllgather, seq, 0, bytes, [&](int) { return bytes; }, [&](int r) { return o + static_cast<size_t>(r) * bytes; },
      dl));
  for (int r = 1; r < size_; ++r) TETHER_TRY(reply(r, kAllgather, seq, o, total, dl));
  return Status::ok();
}

Status TcpBootstrap::barrier() {
  TETHER_TRY(usable());
  const uint32_t seq = ++seq_;
  if (rank_ != 0) return exchange(kBarrier, seq, 0, 0, nullptr, 0, nullptr, 0);
  Deadline dl(timeout_);
  TETHER_TRY(gather(
      kBarrier, seq, 0, 0, [](int) { return size_t{0}; }, [](int) { return static_cast<uint8_t*>(nullptr); }, dl));
  for (int r = 1; r < size_; ++r) TETHER_TRY(reply(r, kBarrier, seq, nullptr, 0, dl));
  return Status::ok();
}

Status TcpBootstrap::alltoall(const void* in, void* out, size_t bytes) {
  TETHER_TRY(usable());
  if (bytes && (!in || !out))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "bootstrap alltoall: null buffer with %zu bytes", bytes);
  const size_t n = static_cast<size_t>(size_);
  if (bytes > SIZE_MAX / n / n)
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "bootstrap alltoall: %zu bytes x %d x %d ranks overflows", bytes, size_, size_);
  const size_t row = bytes * n;
  const uint32_t seq = ++seq_;
  if (rank_ != 0) return exchange(kAlltoall, seq, 0, bytes, in, row, out, row);
  Deadline dl(timeout_);
  // matrix row s = what rank s sent; block (s, r) goes to rank r.
  std::vector<uint8_t> matrix(row * n);
  if (bytes) std::memcpy(matrix.data(), in, row);
  TETHER_TRY(gather(
      kAlltoall, seq, 0, bytes, [&](int) { return row; },
      [&](int r) { return matrix.data() + static_cast<size_t>(r) * row; }, dl));
  std::vector<uint8_t> column(row);
  for (size_t r = 0; r < n; ++r) {
    uint8_t* dst = r == 0 ? static_cast<uint8_t*>(out) : column.data();
    for (size_t s = 0; s < n && bytes; ++s) std::memcpy(dst + s * bytes, matrix.data() + s * row + r * bytes, bytes);
    if (r) TETHER_TRY(reply(static_cast<int>(r), kAlltoall, seq, column.data(), row, dl));
  }
  return Status::ok();
}

Status TcpBootstrap::broadcast(void* buf, size_t bytes, int root) {
  TETHER_TRY(usable());
  if (bytes && !buf) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "bootstrap broadcast: null buffer with %zu bytes", bytes);
  const uint32_t seq = ++seq_;
  // A rank with a bad root still takes part, so that rank 0 reports the disagreement to everyone.
  if (rank_ != 0)
    return exchange(kBroadcast, seq, root, bytes, buf, root == rank_ ? bytes : 0, buf, bytes);
  if (root < 0 || root >= size_)
    return fail(Status(TETHER_ERR_INVALID_ARG,
                       strprintf("bootstrap broadcast #%u: root %d outside [0, %d)", seq, root, size_)));
  Deadline dl(timeout_);
  uint8_t* b = static_cast<uint8_t*>(buf);
  TETHER_TRY(gather(
      kBroadcast, seq, root, bytes, [&](int r) { return r == root ? bytes : size_t{0}; }, [&](int) { return b; }, dl));
  for (int r = 1; r < size_; ++r) TETHER_TRY(reply(r, kBroadcast, seq, b, bytes, dl));
  return Status::ok();
}

}  // namespace

Status createTcpBootstrap(const JobInfo& job, double timeoutSeconds, std::unique_ptr<Bootstrap>* out) {
  if (job.size < 1 || job.rank < 0 || job.rank >= job.size)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "bootstrap: rank %d / size %d is not a valid job position", job.rank,
                job.size);
  if (!(timeoutSeconds > 0))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "bootstrap: timeout %g s must be positive", timeoutSeconds);
  if (job.rank != 0 && job.bootstrapAddr.empty())
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "bootstrap: rank %d of %d has no rendezvous address (TETHER_BOOTSTRAP_ADDR)",
                job.rank, job.size);
  if (job.rank == 0 && job.listenFd < 0 && job.bootstrapAddr.empty() && job.size > 1)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "bootstrap: rank 0 of %d has no rendezvous address (TETHER_BOOTSTRAP_ADDR)",
                job.size);
  auto bs = std::make_unique<TcpBootstrap>(job, timeoutSeconds);
  if (job.rank == 0) {
    if (job.size > 1 || job.listenFd >= 0) TETHER_TRY(bs->serve(job));
  } else {
    TETHER_TRY(bs->join());
  }
  *out = std::move(bs);
  return Status::ok();
}

}  // namespace tether
