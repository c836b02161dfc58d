// The rendezvous offer (offer.h): rank 0's listening socket, address and secret, carried by PMIx or MPI.
#include "bootstrap/offer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/log.h"

namespace tether {
namespace {

constexpr char kMagic[4] = {'T', 'T', 'H', 'O'};
constexpr size_t kMaxAddrBytes = 512;
constexpr size_t kMaxSecretBytes = 1024;  // as TETHER_JOB_SECRET (launcher_env.cpp) and the TCP hello

Status randomSecret(std::string* out) {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t k = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return errnoStatus("rendezvous offer: getrandom", k < 0 ? errno : EIO);
    got += static_cast<size_t>(k);
  }
  out->clear();
  for (unsigned char b : bytes) *out += strprintf("%02x", b);
  return Status::ok();
}

bool resolvesHere(const char* host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host, nullptr, &hints, &res) != 0 || !res) return false;
  ::freeaddrinfo(res);
  return true;
}

// A socket listening on every interface, on a port the kernel picks; *port is that port.
Status listenAnyPort(int* fd, int* port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return errnoStatus("rendezvous offer: socket", errno);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof sa;
  if (::bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(s, SOMAXCONN) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    int err = errno;
    ::close(s);
    return errnoStatus("rendezvous offer: rank 0 cannot listen on a free port", err);
  }
  *fd = s;
  *port = ntohs(sa.sin_port);
  return Status::ok();
}

void putU16(char* p, size_t v) {
  p[0] = static_cast<char>(v & 0xff);
  p[1] = static_cast<char>((v >> 8) & 0xff);
}

size_t getU16(const char* p) {
  return static_cast<size_t>(static_cast<unsigned char>(p[0])) |
         (static_cast<size_t>(static_cast<unsigned char>(p[1])) << 8);
}

}  // namespace

std::string advertisedHost() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0 && name[0] && resolvesHere(name)) return name;
  ifaddrs* list = nullptr;
  std::string found = "127.0.0.1";
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
      const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
      char text[INET_ADDRSTRLEN] = {};
      if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) {
        found = text;
        break;
      }
    }
    ::freeifaddrs(list);
  }
  return found;
}

Status encodeOffer(const std::string& addr, const std::string& secret, char* block) {
  if (addr.empty() || addr.size() > kMaxAddrBytes)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "rendezvous offer: address of %zu bytes (1-%zu allowed)", addr.size(),
                kMaxAddrBytes);
  if (secret.empty() || secret.size() > kMaxSecretBytes)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "rendezvous offer: secret of %zu bytes (1-%zu allowed)", secret.size(),
                kMaxSecretBytes);
  std::memset(block, 0, kOfferBytes);
  char* p = block;
  std::memcpy(p, kMagic, sizeof kMagic);
  p += sizeof kMagic;
  putU16(p, addr.size());
  std::memcpy(p + 2, addr.data(), addr.size());
  p += 2 + addr.size();
  putU16(p, secret.size());
  std::memcpy(p + 2, secret.data(), secret.size());
  return Status::ok();
}

Status decodeOffer(const char* block, const char* channel, std::string* addr, std::string* secret) {
  if (std::memcmp(block, kMagic, sizeof kMagic) != 0)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "rendezvous offer from rank 0 over %s is not tether's (bad magic): do all "
                "ranks run the same tether?", channel);
  const char* p = block + sizeof kMagic;
  size_t a = getU16(p);
  if (a == 0 || a > kMaxAddrBytes) TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "rendezvous offer over %s: bad address length %zu", channel, a);
  std::string addrOut(p + 2, a);
  p += 2 + a;
  size_t s = getU16(p);
  if (s == 0 || s > kMaxSecretBytes) TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "rendezvous offer over %s: bad secret length %zu", channel, s);
  *addr = std::move(addrOut);
  secret->assign(p + 2, s);
  return Status::ok();
}

Status exchangeOffer(const Config& config, const char* channel, const OfferCarrier& carry, JobInfo* job) {
  std::vector<char> block(kOfferBytes, 0);
  int listenFd = -1;
  if (job->rank == 0) {
    std::string addr = config.isSet("TETHER_BOOTSTRAP_ADDR") ? config.str("TETHER_BOOTSTRAP_ADDR") : std::string();
    if (addr.empty()) {
      int port = 0;
      TETHER_TRY(listenAnyPort(&listenFd, &port));
      addr = advertisedHost() + ":" + std::to_string(port);
    }
    std::string secret = config.isSet("TETHER_JOB_SECRET") ? config.str("TETHER_JOB_SECRET") : std::string();
    Status made = secret.empty() ? randomSecret(&secret) : Status::ok();
    if (made.isOk()) made = encodeOffer(addr, secret, block.data());
    // On failure rank 0 still carries a block (its magic zeroed) so the others fail at once instead of waiting out
    // the carrier's timeout.
    if (!made.isOk()) std::memset(block.data(), 0, kOfferBytes);
    Status carried = carry(block.data());
    if (!made.isOk() || !carried.isOk()) {
      if (listenFd >= 0) ::close(listenFd);
      return made.isOk() ? carried : made;
    }
  } else {
    TETHER_TRY(carry(block.data()));
  }
  std::string addr, secret;
  Status decoded = decodeOffer(block.data(), channel, &addr, &secret);
  if (!decoded.isOk()) {
    if (listenFd >= 0) ::close(listenFd);
    return decoded;
  }
  job->bootstrapAddr = addr;
  job->secret = secret;
  job->listenFd = listenFd;
  TETHER_LOG_INFO(LogSys::Bootstrap, "rendezvous over %s: rank %d of %d uses %s%s", channel, job->rank, job->size,
                  addr.c_str(), listenFd >= 0 ? " (listening)" : "");
  return Status::ok();
}

}  // namespace tether
