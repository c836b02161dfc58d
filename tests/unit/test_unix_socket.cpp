// The fd-exchange server under attack (issue 24): abstract AF_UNIX names have no permissions, so any local process
// can connect to a PE's socket during init. Silent, garbage-sending and wrong-secret clients, and clients or servers
// of another user, must not delay (or fool) the job's own processes. Timeouts are 30 s here: a server that serves
// one client at a time until its secret arrives (the old one) takes 30 s per attacker and fails the time bounds.
#include <gtest/gtest.h>
#include <grp.h>
#include <pwd.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/unix_socket.h"

using namespace tether;

namespace {

constexpr double kTimeout = 30;  // what the server may wait in all (TETHER_TIMEOUT)
constexpr double kQuick = 1.5;   // legitimate clients must be done within this: less than one per-client deadline
const std::string kSecret = "0123456789abcdef0123456789abcdef";

std::string uniqueName(const char* what) {
  std::random_device rd;
  return "tether-test." + std::string(what) + "." + std::to_string(::getpid()) + "." + std::to_string(rd());
}

double secondsSince(uint64_t t0) { return static_cast<double>(nowNs() - t0) * 1e-9; }

// Connects to the abstract `name` without blocking; -1 when the server did not take the connection.
int connectTo(const std::string& name) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (c >= 0 && ::connect(c, reinterpret_cast<sockaddr*>(&a), len) == 0) return c;
  if (c >= 0) ::close(c);
  return -1;
}

// Same-uid attackers, connected before any legitimate client; they stay connected until the caller closes them.
std::vector<int> connectAttackers(const std::string& name) {
  std::vector<int> fds;
  fds.push_back(connectTo(name));  // silent
  int g = connectTo(name);         // garbage, longer than a hello
  std::string junk(200, '\x5a');
  if (g >= 0) {
    EXPECT_EQ(::send(g, junk.data(), junk.size(), MSG_NOSIGNAL), static_cast<ssize_t>(junk.size()));
  }
  fds.push_back(g);
  int s = connectTo(name);  // a well-formed hello with the wrong secret
  std::string hello = std::string(kSecret.size(), 'x') + std::string("\1\0\0\0", 4);
  if (s >= 0) {
    EXPECT_EQ(::send(s, hello.data(), hello.size(), MSG_NOSIGNAL), static_cast<ssize_t>(hello.size()));
  }
  fds.push_back(s);
  int p = connectTo(name);  // half a secret, then silence
  if (p >= 0) {
    EXPECT_EQ(::send(p, kSecret.data(), 5, MSG_NOSIGNAL), 5);
  }
  fds.push_back(p);
  for (int fd : fds) EXPECT_GE(fd, 0) << "attacker could not connect to @" << name;
  return fds;
}

// The uid/gid of `nobody`, or false when this process cannot become another user (not root).
bool otherUser(uid_t* uid, gid_t* gid, std::string* why) {
  if (::geteuid() != 0) {
    *why = "needs root to run a client as another user (setuid nobody); not root";
    return false;
  }
  passwd* pw = ::getpwnam("nobody");
  *uid = pw ? pw->pw_uid : 65534;
  *gid = pw ? pw->pw_gid : 65534;
  return true;
}

void becomeOrDie(uid_t uid, gid_t gid) {
  if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(90);
}

// Forks a process that runs as (uid, gid) and connects to `name` presenting the RIGHT secret, then waits up to 3 s
// for a descriptor. Exit status: 0 no descriptor came, 1 a descriptor came, 2 could not connect, 90 setuid failed.
pid_t otherUserClient(const std::string& name, uid_t uid, gid_t gid) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  becomeOrDie(uid, gid);
  int c = -1;
  for (int i = 0; i < 1000 && c < 0; ++i) {
    c = connectTo(name);
    if (c < 0) ::usleep(1000);
  }
  if (c < 0) ::_exit(2);
  std::string hello = kSecret + std::string("\7\0\0\0", 4);
  (void)::send(c, hello.data(), hello.size(), MSG_NOSIGNAL);
  pollfd p{c, POLLIN, 0};
  if (::poll(&p, 1, 3000) <= 0) ::_exit(0);
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t r = ::recvmsg(c, &msg, 0);
  ::_exit(r > 0 && CMSG_FIRSTHDR(&msg) ? 1 : 0);
}

int waitExit(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct Fetched {
  Status status;
  int fd = -1;
  uint64_t payload = 0;
};

}  // namespace

// (a) silent, (b) garbage, (c) wrong secret, half a secret, and (d) another user knowing the secret, all connected
// before the PEs: the three legitimate fetches finish at once, and the other user gets nothing.
TEST(UnixFdServer, AttackersDoNotDelayLegitimateClients) {
  const std::string name = uniqueName("attack");
  UnixFdServer server;
  ASSERT_TRUE(server.listen(name, 8).isOk());
  int memfd = ::memfd_create("tether-test", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(::ftruncate(memfd, 4096), 0);

  uid_t uid = 0;
  gid_t gid = 0;
  std::string why;
  pid_t intruder = -1;
  if (otherUser(&uid, &gid, &why)) {
    intruder = otherUserClient(name, uid, gid);
    ASSERT_GT(intruder, 0);
    ::usleep(100000);  // let it connect first
  } else {
    std::printf("note: %s; the other-user client is left out\n", why.c_str());
  }
  std::vector<int> attackers = connectAttackers(name);

  const uint64_t t0 = nowNs();
  std::vector<Fetched> got(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i)
    clients.emplace_back([&, i] {
      got[i].status = unixFetchFd(name, kSecret, 10 + i, kTimeout, &got[i].fd, &got[i].payload, sizeof(uint64_t));
    });
  std::set<int> ids;
  Status served = Status::ok();
  const uint64_t payload = 0x1234567890abcdefull;
  for (int k = 0; k < 3 && served.isOk(); ++k) {
    int id = -1;
    served = server.serveOne(kSecret, memfd, &payload, sizeof payload, kTimeout, &id);
    ids.insert(id);
  }
  for (auto& t : clients) t.join();
  const double took = secondsSince(t0);
  EXPECT_TRUE(served.isOk()) << served.message();
  EXPECT_LT(took, kQuick) << "the attackers delayed the exchange";
  EXPECT_EQ(ids, (std::set<int>{10, 11, 12}));
  // Every client got the same memory.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(got[i].status.isOk()) << got[i].status.message();
    EXPECT_EQ(got[i].payload, payload);
    void* m = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, got[i].fd, 0);
    ASSERT_NE(m, MAP_FAILED);
    static_cast<volatile int*>(m)[0] = i + 1;
    ::munmap(m, 4096);
    ::close(got[i].fd);
  }
  int last = 0;
  ASSERT_EQ(::pread(memfd, &last, sizeof last, 0), static_cast<ssize_t>(sizeof last));
  EXPECT_EQ(last, 3);
  for (int fd : attackers)
    if (fd >= 0) ::close(fd);
  if (intruder > 0) {
    EXPECT_EQ(waitExit(intruder), 0) << "another user received the descriptor (1) or failed (2, 90)";
  }
  ::close(memfd);
}

// A silent client holds no slot for long: with only attackers around, a client that arrives later is served well
// within the overall timeout, and a flood of silent connections (more than the pending limit) does not hold it.
TEST(UnixFdServer, FloodOfSilentClientsDoesNotHoldTheServer) {
  const std::string name = uniqueName("flood");
  UnixFdServer server;
  ASSERT_TRUE(server.listen(name, 16).isOk());
  int memfd = ::memfd_create("tether-test", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  std::atomic<bool> stop{false};
  std::vector<int> flood;
  std::thread flooder([&] {
    // Keeps the backlog full of silent connections, more than kMaxPendingClients in all.
    while (!stop.load() && flood.size() < 3 * UnixFdServer::kMaxPendingClients) {
      int c = connectTo(name);
      if (c >= 0) {
        flood.push_back(c);
      } else {
        ::usleep(500);
      }
    }
  });
  Fetched f;
  std::thread client([&] {
    ::usleep(200000);
    f.status = unixFetchFd(name, kSecret, 5, kTimeout, &f.fd, nullptr, 0);
  });
  const uint64_t t0 = nowNs();
  int id = -1;
  Status s = server.serveOne(kSecret, memfd, nullptr, 0, kTimeout, &id);
  const double took = secondsSince(t0);
  stop = true;
  client.join();
  flooder.join();
  EXPECT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(id, 5);
  EXPECT_LT(took, UnixFdServer::kClientSeconds + 2) << "silent connections held the server";
  EXPECT_TRUE(f.status.isOk()) << f.status.message();
  if (f.fd >= 0) ::close(f.fd);
  for (int c : flood) ::close(c);
  ::close(memfd);
}

// With nobody but attackers, the server gives up at its own timeout (bounded), naming what it waited for.
TEST(UnixFdServer, TimesOutWhenOnlyAttackersCome) {
  const std::string name = uniqueName("only");
  UnixFdServer server;
  ASSERT_TRUE(server.listen(name, 8).isOk());
  std::vector<int> attackers = connectAttackers(name);
  const uint64_t t0 = nowNs();
  int id = -1;
  Status s = server.serveOne(kSecret, 0, nullptr, 0, 0.5, &id);
  EXPECT_EQ(s.code(), TETHER_ERR_TIMEOUT) << s.message();
  EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  EXPECT_LT(secondsSince(t0), 3.0);
  for (int fd : attackers)
    if (fd >= 0) ::close(fd);
}

// A server of another user on the name (a squatter) gets neither the secret nor a long wait from the client.
TEST(UnixFetchFd, RefusesAServerOfAnotherUser) {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string why;
  if (!otherUser(&uid, &gid, &why)) GTEST_SKIP() << why;
  const std::string name = uniqueName("squat");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t squatter = ::fork();
  ASSERT_GE(squatter, 0);
  if (squatter == 0) {
    // Exit status: 0 nothing received, 1 bytes received, 3 could not listen, 90 setuid failed.
    becomeOrDie(uid, gid);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, name.data(), name.size());
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    int l = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(l, 4) != 0) ::_exit(3);
    char one = 1;
    if (::write(ready[1], &one, 1) != 1) ::_exit(3);
    pollfd p{l, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) ::_exit(0);
    int c = ::accept(l, nullptr, nullptr);
    if (c < 0) ::_exit(0);
    p = pollfd{c, POLLIN, 0};
    if (::poll(&p, 1, 3000) <= 0) ::_exit(0);
    char buf[64];
    ::_exit(::recv(c, buf, sizeof buf, 0) > 0 ? 1 : 0);
  }
  ::close(ready[1]);
  char one = 0;
  ASSERT_EQ(::read(ready[0], &one, 1), 1) << "the squatter could not listen (exit " << waitExit(squatter) << ")";
  ::close(ready[0]);
  const uint64_t t0 = nowNs();
  int fd = -1;
  Status s = unixFetchFd(name, kSecret, 1, kTimeout, &fd, nullptr, 0);
  EXPECT_EQ(s.code(), TETHER_ERR_BOOTSTRAP) << s.message();
  EXPECT_NE(s.message().find("another user"), std::string::npos) << s.message();
  EXPECT_LT(secondsSince(t0), kQuick);
  EXPECT_EQ(waitExit(squatter), 0) << "the squatter received bytes (1) or failed (3, 90)";
}

// Names do not show the job tag (other users could then predict the job's next names and squat them), differ per
// tag, channel and rank, and fit the abstract namespace.
TEST(FdExchange, SocketNamesHideTheTag) {
  const std::string tag = "00112233aabbccdd";
  const std::string n = FdExchange::socketName(tag, "heap", 0);
  EXPECT_EQ(n.find(tag), std::string::npos) << n;
  EXPECT_EQ(n.rfind("tether.", 0), 0u) << n;
  EXPECT_LT(n.size(), sizeof(sockaddr_un::sun_path) - 1);
  std::set<std::string> names;
  for (const char* t : {"00112233aabbccdd", "00112233aabbccde"})
    for (const char* ch : {"heap", "static", "dev0"})
      for (int r = 0; r < 4; ++r) names.insert(FdExchange::socketName(t, ch, r));
  EXPECT_EQ(names.size(), 24u);
  EXPECT_EQ(FdExchange::socketName(tag, "heap", 0), n);  // deterministic: every PE computes the same names
}

// FdExchange among 4 "PEs" (threads) while attackers sit on every PE's socket: the exchange finishes at once.
TEST(FdExchange, ExchangeUnderAttack) {
  constexpr int kPes = 4;
  std::random_device rd;
  const std::string tag = std::to_string(rd()) + std::to_string(rd());
  std::vector<int> ranks = {3, 5, 6, 9};  // global ranks of the same-host PEs
  std::vector<FdExchange> fx(kPes);
  std::vector<int> memfds(kPes);
  for (int i = 0; i < kPes; ++i) {
    ASSERT_TRUE(fx[static_cast<size_t>(i)].listen(tag, "heap", ranks[static_cast<size_t>(i)], kPes).isOk());
    memfds[static_cast<size_t>(i)] = ::memfd_create("tether-test", MFD_CLOEXEC);
    ASSERT_EQ(::ftruncate(memfds[static_cast<size_t>(i)], 4096), 0);
    ASSERT_EQ(::pwrite(memfds[static_cast<size_t>(i)], &ranks[static_cast<size_t>(i)], sizeof(int), 0),
              static_cast<ssize_t>(sizeof(int)));
  }
  std::vector<int> attackers;
  for (int r : ranks)
    for (int fd : connectAttackers(FdExchange::socketName(tag, "heap", r))) attackers.push_back(fd);
  const uint64_t t0 = nowNs();
  std::vector<Status> st(kPes);
  std::vector<std::vector<int>> peer(kPes);
  std::vector<std::thread> pes;
  for (int i = 0; i < kPes; ++i)
    pes.emplace_back([&, i] {
      const size_t u = static_cast<size_t>(i);
      st[u] = fx[u].exchange(i, ranks, kSecret, memfds[u], kTimeout, &peer[u]);
    });
  for (auto& t : pes) t.join();
  EXPECT_LT(secondsSince(t0), kQuick) << "the attackers delayed the exchange";
  for (int i = 0; i < kPes; ++i) {
    ASSERT_TRUE(st[static_cast<size_t>(i)].isOk()) << st[static_cast<size_t>(i)].message();
    for (int j = 0; j < kPes; ++j) {
      int fd = peer[static_cast<size_t>(i)][static_cast<size_t>(j)];
      if (j == i) {
        EXPECT_EQ(fd, -1);
        continue;
      }
      int v = -1;
      ASSERT_EQ(::pread(fd, &v, sizeof v, 0), static_cast<ssize_t>(sizeof v));
      EXPECT_EQ(v, ranks[static_cast<size_t>(j)]) << "PE " << i << " got the wrong descriptor for PE " << j;
      ::close(fd);
    }
  }
  for (int fd : attackers)
    if (fd >= 0) ::close(fd);
  for (int fd : memfds) ::close(fd);
}
