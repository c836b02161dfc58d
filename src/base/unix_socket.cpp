#include "base/unix_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/clock.h"
#include "base/log.h"

namespace tether {
namespace {

Status makeAddr(const std::string& name, sockaddr_un* addr, socklen_t* len) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof addr->sun_path)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "unix socket name '%s' too long", name.c_str());
  addr->sun_path[0] = '\0';  // abstract namespace
  std::memcpy(addr->sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return Status::ok();
}

Status waitFd(int fd, short events, const Deadline& dl, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, dl.msLeft());
    if (r > 0) return Status::ok();
    if (r == 0) TETHER_FAIL(TETHER_ERR_TIMEOUT, "%s: timed out", what);
    if (errno != EINTR) return errnoStatus(what, errno);
  }
}

// SipHash-2-4 (Aumasson and Bernstein, 2012) of `data` under the key (k0, k1): a keyed hash whose outputs tell
// nothing about the key or about other outputs.
uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

uint64_t sipHash24(uint64_t k0, uint64_t k1, const std::string& data) {
  uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
  uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
  auto round = [&] {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  };
  auto block = [&](uint64_t m) {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  };
  const size_t n = data.size();
  const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t m = 0;
    for (int b = 0; b < 8; ++b) m |= static_cast<uint64_t>(p[i + static_cast<size_t>(b)]) << (8 * b);
    block(m);
  }
  uint64_t last = static_cast<uint64_t>(n & 0xff) << 56;
  for (int b = 0; i + static_cast<size_t>(b) < n; ++b) last |= static_cast<uint64_t>(p[i + static_cast<size_t>(b)]) << (8 * b);
  block(last);
  v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

// Credentials of the process at the other end of a connected AF_UNIX socket.
Status peerUid(int fd, uid_t* uid, pid_t* pid) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return errnoStatus("getsockopt(SO_PEERCRED)", errno);
  *uid = cred.uid;
  *pid = cred.pid;
  return Status::ok();
}

// Warns about the first few dropped clients of one serve() call, then counts the rest (a flood must not flood the log).
class DropLog {
 public:
  explicit DropLog(const std::string& name) : name_(name) {}
  ~DropLog() {
    if (silenced_ > 0)
      TETHER_LOG_WARN(LogSys::Heap, "fd exchange @%s: dropped %d more client(s) (see above)", name_.c_str(), silenced_);
  }
  void drop(pid_t pid, const std::string& why) {
    if (warned_ < kWarn) {
      ++warned_;
      TETHER_LOG_WARN(LogSys::Heap, "fd exchange @%s: dropped a client (pid %d): %s", name_.c_str(),
                      static_cast<int>(pid), why.c_str());
    } else {
      ++silenced_;
    }
  }

 private:
  static constexpr int kWarn = 3;
  const std::string& name_;
  int warned_ = 0, silenced_ = 0;
};

// Sends `fd` (SCM_RIGHTS) with the payload (one dummy byte when there is none) without blocking.
Status sendFd(int c, int fd, const void* payload, size_t payloadBytes) {
  msghdr msg{};
  char one = 0;
  iovec iov{payloadBytes ? const_cast<void*>(payload) : &one, payloadBytes ? payloadBytes : 1};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  ssize_t r;
  do r = ::sendmsg(c, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (r < 0 && errno == EINTR);
  if (r < 0) return errnoStatus("sendmsg(SCM_RIGHTS)", errno);
  if (r != static_cast<ssize_t>(iov.iov_len)) TETHER_FAIL(TETHER_ERR_SYSTEM, "sendmsg(SCM_RIGHTS): short write");
  return Status::ok();
}

// Reads what a client has sent so far. Returns false when the client must be dropped (*why says why).
template <typename Client>
bool readClient(Client& c, std::string* why) {
  while (c.got < c.buf.size()) {
    ssize_t r = ::recv(c.fd, c.buf.data() + c.got, c.buf.size() - c.got, MSG_DONTWAIT);
    if (r > 0) {
      c.got += static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    *why = r == 0 ? "closed the connection before presenting the job secret" : std::string("recv: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

UnixFdServer::~UnixFdServer() { close(); }

void UnixFdServer::close() {
  for (Client& c : clients_) ::close(c.fd);
  clients_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status UnixFdServer::listen(const std::string& name, int backlog) {
  sockaddr_un addr;
  socklen_t len;
  TETHER_TRY(makeAddr(name, &addr, &len));
  close();
  name_ = name;
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) return errnoStatus("socket(AF_UNIX)", errno);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int err = errno;
    close();
    if (err == EADDRINUSE)
      TETHER_FAIL(TETHER_ERR_SYSTEM, "bind(@%s): the name is already taken by another process", name.c_str());
    return errnoStatus("bind(@" + name + ")", err);
  }
  if (::listen(fd_, backlog) != 0) return errnoStatus("listen(@" + name + ")", errno);
  return Status::ok();
}

Status UnixFdServer::serveOne(const std::string& secret, int fd, const void* payload, size_t payloadBytes,
                              double timeoutSeconds, int* clientId) {
  std::vector<int> served;
  TETHER_TRY(serve(secret, fd, payload, payloadBytes, 1, nullptr, timeoutSeconds, &served));
  *clientId = served.front();
  return Status::ok();
}

Status UnixFdServer::serveAll(const std::string& secret, int fd, const void* payload, size_t payloadBytes,
                              const std::vector<int>& clientIds, double timeoutSeconds) {
  std::vector<int> served;
  return serve(secret, fd, payload, payloadBytes, clientIds.size(), &clientIds, timeoutSeconds, &served);
}

Status UnixFdServer::serve(const std::string& secret, int fd, const void* payload, size_t payloadBytes, size_t count,
                           const std::vector<int>* expected, double timeoutSeconds, std::vector<int>* served) {
  if (count == 0) return Status::ok();
  if (fd_ < 0) TETHER_FAIL(TETHER_ERR_INTERNAL, "fd exchange: serve() before listen()");
  Deadline dl(timeoutSeconds);
  DropLog drops(name_);
  std::vector<Client>& clients = clients_;
  const uid_t me = ::geteuid();
  std::vector<pollfd> pfds;
  const size_t firstServed = served->size();
  // Checks a complete hello and, when it is good, hands the descriptor over. False: drop (with *why).
  auto finish = [&](Client& c, std::string* why) {
    unsigned diff = 0;
    for (size_t i = 0; i < secret.size(); ++i) diff |= static_cast<unsigned char>(c.buf[i] ^ secret[i]);
    int32_t id;
    std::memcpy(&id, c.buf.data() + secret.size(), sizeof id);
    if (diff != 0) {
      *why = "wrong job secret";
      return false;
    }
    const auto begin = served->begin() + static_cast<std::ptrdiff_t>(firstServed);
    if ((expected && std::find(expected->begin(), expected->end(), id) == expected->end()) ||
        std::find(begin, served->end(), id) != served->end()) {
      *why = strprintf("client id %d is not expected (or was already served)", static_cast<int>(id));
      return false;
    }
    Status s = sendFd(c.fd, fd, payload, payloadBytes);
    if (!s.isOk()) {
      *why = s.message();
      return false;
    }
    served->push_back(id);
    return true;
  };
  // Reads what client c sent; true when it is finished with (served or dropped).
  auto progress = [&](Client& c) {
    std::string why;
    bool keep = readClient(c, &why);
    if (keep && c.got < c.buf.size()) {
      if (nowNs() < c.endNs) return false;
      why = strprintf("did not present the job secret within %.0f s", kClientSeconds);
      keep = false;
    }
    if (keep) keep = finish(c, &why);
    if (!keep) drops.drop(c.pid, why);
    return true;
  };
  while (served->size() - firstServed < count) {
    // Clients whose time is up or who are done (only while there is a client to serve: one served beyond `count`
    // would be missing from *served).
    for (size_t i = 0; i < clients.size() && served->size() - firstServed < count;) {
      if (progress(clients[i])) {
        ::close(clients[i].fd);
        clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    if (served->size() - firstServed >= count) break;
    if (dl.expired())
      TETHER_FAIL(TETHER_ERR_TIMEOUT,
                  "fd exchange @%s: timed out after %.3g s waiting for same-host PEs to fetch this PE's descriptor "
                  "(%zu of %zu did)", name_.c_str(), timeoutSeconds, served->size() - firstServed, count);
    int ms = dl.msLeft();
    const uint64_t now = nowNs();
    pfds.assign(1, pollfd{fd_, POLLIN, 0});
    for (const Client& c : clients) {
      pfds.push_back({c.fd, POLLIN, 0});
      int left = c.endNs > now ? static_cast<int>((c.endNs - now + 999999) / 1000000) : 0;
      ms = std::min(ms, left);
    }
    int r = ::poll(pfds.data(), pfds.size(), ms);
    if (r < 0 && errno != EINTR) return errnoStatus("fd exchange: poll", errno);
    if (r <= 0 || !(pfds[0].revents & POLLIN)) continue;
    for (;;) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (c < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return errnoStatus("accept4(fd exchange @" + name_ + ")", errno);
      }
      uid_t uid = 0;
      pid_t pid = 0;
      Status s = peerUid(c, &uid, &pid);
      if (!s.isOk() || uid != me) {
        drops.drop(pid, s.isOk() ? strprintf("runs as uid %u, not as this job's uid %u", static_cast<unsigned>(uid),
                                             static_cast<unsigned>(me))
                                 : s.message());
        ::close(c);
        continue;
      }
      if (clients.size() >= kMaxPendingClients) {
        drops.drop(clients.front().pid, "too many connections without the job secret; dropped the oldest");
        ::close(clients.front().fd);
        clients.erase(clients.begin());
      }
      Client cl;
      cl.fd = c;
      cl.pid = pid;
      cl.endNs = nowNs() + static_cast<uint64_t>(std::min(kClientSeconds, timeoutSeconds) * 1e9);
      cl.buf.assign(secret.size() + sizeof(int32_t), 0);
      clients.push_back(std::move(cl));
    }
  }
  return Status::ok();
}

Status unixFetchFd(const std::string& name, const std::string& secret, int clientId, double timeoutSeconds, int* fd,
                   void* payload, size_t payloadBytes) {
  sockaddr_un addr;
  socklen_t len;
  TETHER_TRY(makeAddr(name, &addr, &len));
  Deadline dl(timeoutSeconds);
  int c = -1;
  for (;;) {
    // Non-blocking: a full backlog answers EAGAIN (retried) instead of blocking connect() without a bound.
    c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c < 0) return errnoStatus("socket(AF_UNIX)", errno);
    if (::connect(c, reinterpret_cast<sockaddr*>(&addr), len) == 0) break;
    int err = errno;
    ::close(c);
    if (err != ECONNREFUSED && err != ENOENT && err != EAGAIN && err != EINTR)
      return errnoStatus("connect(@" + name + ")", err);
    if (dl.expired()) TETHER_FAIL(TETHER_ERR_TIMEOUT, "fd exchange: no server at @%s", name.c_str());
    usleep(1000);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{c};
  int flags = ::fcntl(c, F_GETFL);
  if (flags < 0 || ::fcntl(c, F_SETFL, flags & ~O_NONBLOCK) != 0) return errnoStatus("fcntl(fd exchange)", errno);
  uid_t uid = 0;
  pid_t pid = 0;
  TETHER_TRY(peerUid(c, &uid, &pid));
  if (uid != ::geteuid())
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP,
                "fd exchange: @%s is served by pid %d of uid %u, not by this job's uid %u: another user holds the "
                "job's socket name (secret not sent)",
                name.c_str(), static_cast<int>(pid), static_cast<unsigned>(uid), static_cast<unsigned>(::geteuid()));
  std::string hello = secret;
  int32_t id = clientId;
  hello.append(reinterpret_cast<const char*>(&id), sizeof id);
  if (::send(c, hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size()))
    return errnoStatus("fd exchange: send secret", errno);
  TETHER_TRY(waitFd(c, POLLIN, dl, "fd exchange: waiting for the descriptor"));
  msghdr msg{};
  char one;
  iovec iov{payloadBytes ? payload : &one, payloadBytes ? payloadBytes : 1};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t r;
  do r = ::recvmsg(c, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  while (r < 0 && errno == EINTR);
  if (r < 0) return errnoStatus("recvmsg(SCM_RIGHTS)", errno);
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  if (r != static_cast<ssize_t>(iov.iov_len) || !cm || cm->cmsg_type != SCM_RIGHTS)
    TETHER_FAIL(TETHER_ERR_PEER_LOST, "fd exchange: @%s sent no descriptor", name.c_str());
  std::memcpy(fd, CMSG_DATA(cm), sizeof(int));
  return Status::ok();
}

std::string FdExchange::socketName(const std::string& jobTag, const std::string& channel, int rank) {
  // The key is the tag hashed under two fixed keys; the name hashes channel and rank under it (twice, for 128 bits).
  const uint64_t k0 = sipHash24(0x7465746865722d6bull, 0x65792d6465726976ull, jobTag);
  const uint64_t k1 = sipHash24(0x65792d6465726976ull, 0x7465746865722d6bull, jobTag);
  const std::string what = channel + "." + std::to_string(rank);
  return strprintf("tether.%016llx%016llx", static_cast<unsigned long long>(sipHash24(k0, k1, what)),
                   static_cast<unsigned long long>(sipHash24(k1, k0, what)));
}

Status FdExchange::listen(const std::string& jobTag, const std::string& channel, int myRank, int localSize) {
  jobTag_ = jobTag;
  channel_ = channel;
  if (localSize > 1) return server_.listen(name(myRank), localSize);
  return Status::ok();
}

Status FdExchange::exchange(int localIndex, const std::vector<int>& localRanks, const std::string& secret, int myFd,
                            double timeoutSeconds, std::vector<int>* peerFds) {
  const int localSize = static_cast<int>(localRanks.size());
  const int me = localRanks[static_cast<size_t>(localIndex)];
  peerFds->assign(static_cast<size_t>(localSize), -1);
  std::vector<int> others;
  for (int r : localRanks)
    if (r != me) others.push_back(r);
  for (int j = 0; j < localSize; ++j) {
    if (j == localIndex) {
      TETHER_TRY(server_.serveAll(secret, myFd, nullptr, 0, others, timeoutSeconds));
    } else {
      TETHER_TRY(unixFetchFd(name(localRanks[static_cast<size_t>(j)]), secret, me, timeoutSeconds,
                             &(*peerFds)[static_cast<size_t>(j)], nullptr, 0));
    }
  }
  server_.close();
  return Status::ok();
}

}  // namespace tether
