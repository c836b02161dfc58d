#include "base/unix_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
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

Status readAll(int fd, void* buf, size_t n, const Deadline& dl, const char* what) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    TETHER_TRY(waitFd(fd, POLLIN, dl, what));
    ssize_t r = ::recv(fd, p, n, 0);
    if (r == 0) TETHER_FAIL(TETHER_ERR_PEER_LOST, "%s: connection closed by peer", what);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errnoStatus(what, errno);
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status::ok();
}

}  // namespace

UnixFdServer::~UnixFdServer() { close(); }

void UnixFdServer::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status UnixFdServer::listen(const std::string& name, int backlog) {
  sockaddr_un addr;
  socklen_t len;
  TETHER_TRY(makeAddr(name, &addr, &len));
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return errnoStatus("socket(AF_UNIX)", errno);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return errnoStatus("bind(@" + name + ")", errno);
  if (::listen(fd_, backlog) != 0) return errnoStatus("listen(@" + name + ")", errno);
  return Status::ok();
}

Status UnixFdServer::serveOne(const std::string& secret, int fd, const void* payload, size_t payloadBytes,
                              double timeoutSeconds, int* clientId) {
  Deadline dl(timeoutSeconds);
  for (;;) {
    TETHER_TRY(waitFd(fd_, POLLIN, dl, "fd exchange: waiting for a same-host PE to connect"));
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return errnoStatus("accept4(fd exchange)", errno);
    }
    std::vector<char> got(secret.size());
    int32_t id = -1;
    Status s = readAll(c, got.data(), got.size(), dl, "fd exchange: reading client secret");
    if (s.isOk()) s = readAll(c, &id, sizeof id, dl, "fd exchange: reading client id");
    unsigned diff = 0;
    for (size_t i = 0; s.isOk() && i < secret.size(); ++i) diff |= static_cast<unsigned char>(got[i] ^ secret[i]);
    if (!s.isOk() || diff != 0) {
      TETHER_LOG_WARN(LogSys::Heap, "fd exchange: dropped a client that did not present the job secret%s%s",
                      s.isOk() ? "" : ": ", s.message().c_str());
      ::close(c);
      continue;
    }
    msghdr msg{};
    iovec iov{const_cast<void*>(payload), payloadBytes};
    char one = 0;
    if (payloadBytes == 0) iov = {&one, 1};
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
    do r = ::sendmsg(c, &msg, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    int err = errno;
    ::close(c);
    if (r < 0) return errnoStatus("sendmsg(SCM_RIGHTS)", err);
    *clientId = id;
    return Status::ok();
  }
}

Status unixFetchFd(const std::string& name, const std::string& secret, int clientId, double timeoutSeconds, int* fd,
                   void* payload, size_t payloadBytes) {
  sockaddr_un addr;
  socklen_t len;
  TETHER_TRY(makeAddr(name, &addr, &len));
  Deadline dl(timeoutSeconds);
  int c = -1;
  for (;;) {
    c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
  int32_t id = clientId;
  if (::send(c, secret.data(), secret.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(secret.size()) ||
      ::send(c, &id, sizeof id, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof id))
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
  for (int j = 0; j < localSize; ++j) {
    if (j == localIndex) {
      for (int k = 0; k < localSize - 1; ++k) {
        int client = -1;
        TETHER_TRY(server_.serveOne(secret, myFd, nullptr, 0, timeoutSeconds, &client));
      }
    } else {
      TETHER_TRY(unixFetchFd(name(localRanks[static_cast<size_t>(j)]), secret, me, timeoutSeconds,
                             &(*peerFds)[static_cast<size_t>(j)], nullptr, 0));
    }
  }
  server_.close();
  return Status::ok();
}

}  // namespace tether
