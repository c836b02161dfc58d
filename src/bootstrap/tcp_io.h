// Socket I/O for the TCP bootstrap: whole-buffer sends and receives on non-blocking sockets, every wait a poll()
// bounded by a Deadline, sends MSG_NOSIGNAL (a closed peer is a result, never a SIGPIPE). No state of its own.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <functional>
#include <string>

#include "base/clock.h"
#include "base/status.h"

namespace tether::tcp_io {

// How an I/O call ended. Incoming: sendAll with watchIncoming saw the peer send something first.
enum class Io { Ok, Timeout, Closed, Error, Incoming };
struct IoResult {
  Io kind = Io::Ok;
  int err = 0;  // errno for Error (and for Closed when an errno said so)
};

// Closed for the errnos of a connection the peer ended (EPIPE, ECONNRESET, ENOTCONN, ECONNABORTED), else Error.
IoResult fromErrno(int err);

// Writes all n bytes before the deadline. With watchIncoming, stops early (Io::Incoming) when the peer has sent
// something: rank 0 only speaks first to report an error, and waiting for our send to drain could then hang.
IoResult sendAll(int fd, const void* data, size_t n, const Deadline& dl, bool watchIncoming);

// Reads exactly n bytes before the deadline.
IoResult recvAll(int fd, void* data, size_t n, const Deadline& dl);

// Waits until fd is readable (or closed, or in error) or dl expires, calling note(seconds waited, seconds left) every
// TETHER_WAIT_REPORT seconds meanwhile; the read that follows finds out which.
void awaitReadable(int fd, const Deadline& dl, const std::function<void(double, double)>& note);

// "a.b.c.d:port" of the connected peer, "?" when unknown.
std::string peerName(int fd);

// TCP_NODELAY (a failure is logged at debug level: the bootstrap works without it, more slowly).
void setNoDelay(int fd);

// host's first IPv4 address with `port`; `addr` (the whole "host:port") only names it in the error.
Status resolveIPv4(const std::string& host, int port, const std::string& addr, sockaddr_in* out);

}  // namespace tether::tcp_io
