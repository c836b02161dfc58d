// tetherrun's output forwarding (output.h).
#include "output.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace tetherrun {
namespace {

constexpr size_t kChunk = 64 * 1024;       // one read from a PE's pipe
constexpr size_t kMaxPartial = 64 * 1024;  // a line longer than this is forwarded in pieces

}  // namespace

void Sink::write(const char* p, size_t n) {
  while (n > 0 && !dead) {
    ssize_t k = ::write(fd, p, n);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLOUT, 0};
      (void)::poll(&pfd, 1, 100);
    } else {
      dead = true;
    }
  }
}

bool Stream::pump() {
  char buf[kChunk];
  ssize_t k = ::read(fd, buf, sizeof buf);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  if (k <= 0) {
    close();
    return false;
  }
  feed(buf, static_cast<size_t>(k));
  return true;
}

void Stream::feed(const char* p, size_t n) {
  std::string out;
  size_t start = 0;
  for (size_t j = 0; j < n; ++j) {
    if (p[j] != '\n') continue;
    if (atLineStart) out += prefix;
    out += partial;
    partial.clear();
    out.append(p + start, j + 1 - start);
    start = j + 1;
    atLineStart = true;
  }
  partial.append(p + start, n - start);
  if (partial.size() > kMaxPartial) {  // an endless line: pass it on in pieces, prefixed once
    if (atLineStart) out += prefix;
    out += partial;
    partial.clear();
    atLineStart = false;
  }
  if (!out.empty()) sink->write(out.data(), out.size());
}

void Stream::drain() {
  while (fd >= 0) {
    char buf[kChunk];
    ssize_t k = ::read(fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    feed(buf, static_cast<size_t>(k));
  }
  close();
  if (!partial.empty() || !atLineStart) {
    std::string out = (atLineStart ? prefix : std::string()) + partial + "\n";
    sink->write(out.data(), out.size());
    partial.clear();
    atLineStart = true;
  }
}

void Stream::close() {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace tetherrun
