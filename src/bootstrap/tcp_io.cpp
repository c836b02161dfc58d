// Socket I/O for the TCP bootstrap (tcp_io.h).
#include "bootstrap/tcp_io.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace tether::tcp_io {

IoResult fromErrno(int err) {
  if (err == EPIPE || err == ECONNRESET || err == ENOTCONN || err == ECONNABORTED) return {Io::Closed, err};
  return {Io::Error, err};
}

IoResult sendAll(int fd, const void* data, size_t n, const Deadline& dl, bool watchIncoming) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return fromErrno(errno);
    for (;;) {
      int ms = dl.msLeft();
      if (ms == 0) return {Io::Timeout, 0};
      pollfd pfd{fd, static_cast<short>(POLLOUT | (watchIncoming ? POLLIN : 0)), 0};
      int r = ::poll(&pfd, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return {Io::Error, errno};
      if (r == 0) continue;
      if (watchIncoming && (pfd.revents & (POLLIN | POLLHUP))) return {Io::Incoming, 0};
      break;  // writable, or an error the next send() reports
    }
  }
  return {};
}

IoResult recvAll(int fd, void* data, size_t n, const Deadline& dl) {
  uint8_t* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k == 0) return {Io::Closed, 0};
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return fromErrno(errno);
    for (;;) {
      int ms = dl.msLeft();
      if (ms == 0) return {Io::Timeout, 0};
      pollfd pfd{fd, POLLIN, 0};
      int r = ::poll(&pfd, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return {Io::Error, errno};
      if (r > 0) break;
    }
  }
  return {};
}

void awaitReadable(int fd, const Deadline& dl, const std::function<void(double, double)>& note) {
  NoteTimer timer(waitReportSeconds());
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, std::min(dl.msLeft(), timer.msToNext()));
    if (n != 0 || dl.expired()) return;
    if (timer.due()) note(dl.elapsedSeconds(), dl.secondsLeft());
  }
}

std::string peerName(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0 || sa.sin_family != AF_INET) return "?";
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
  return strprintf("%s:%u", ip, static_cast<unsigned>(ntohs(sa.sin_port)));
}

void setNoDelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    TETHER_LOG_DEBUG(LogSys::Bootstrap, "setsockopt(TCP_NODELAY): %s", std::strerror(errno));
}

Status resolveIPv4(const std::string& host, int port, const std::string& addr, sockaddr_in* out) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "bootstrap: cannot resolve rendezvous host '%s' of '%s' to an IPv4 address: %s",
                host.c_str(), addr.c_str(), rc != 0 ? ::gai_strerror(rc) : "no result");
  std::memcpy(out, res->ai_addr, sizeof *out);
  out->sin_port = htons(static_cast<uint16_t>(port));
  ::freeaddrinfo(res);
  return Status::ok();
}

}  // namespace tether::tcp_io
