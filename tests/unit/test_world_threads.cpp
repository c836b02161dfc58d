// Several tether instances in one process (no global singleton): N threads, each its own PE of one job, talking
// through the TCP bootstrap and the shared host heap.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <string>
#include <thread>
#include <vector>

#include "tether/tether.h"

namespace {

int listenLoopback(int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) return -1;
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

void runJob(int n) {
  int port = 0;
  int lfd = listenLoopback(&port);
  ASSERT_GE(lfd, 0);
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  // Host-only instances: several instances in one process are not supported with GPUs (README "GPU memory"); on a
  // GPU machine, instances sharing a GPU in one process fail DEVICE-heap copies under load (cudaErrorOperatingSystem).
  const char* const cfg[] = {"TETHER_HEAP_SIZE=1M", "TETHER_TIMEOUT=30", "TETHER_DEFAULT_SEGMENT=host", "TETHER_GPU=none",
                             nullptr};
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto fail = [&](const std::string& what) { errors[static_cast<size_t>(r)] = what + ": " + tether_last_error(); };
      tether_init_attr_t a;
      tether_init_attr_default(&a);
      a.rank = r;
      a.size = n;
      a.bootstrap_addr = addr.c_str();
      a.job_secret = "unit-test-secret";
      a.bootstrap_listen_fd = r == 0 ? lfd : -1;
      a.config = cfg;
      tether_t w = nullptr;
      if (tether_init_attr(&a, &w) != TETHER_SUCCESS) return fail("init");
      if (tether_my_pe(w) != r || tether_n_pes(w) != n || tether_local_size(w) != n) return fail("identity");
      void* p = nullptr;
      if (tether_calloc(w, 1, 256, &p) != TETHER_SUCCESS) return fail("calloc");
      auto* buf = static_cast<int64_t*>(p);
      uint64_t* sig = reinterpret_cast<uint64_t*>(buf + 16);
      int64_t mine = 1000 + r;
      const int next = (r + 1) % n;
      if (tether_put_signal(w, buf, &mine, sizeof mine, sig, 1, TETHER_SIGNAL_ADD, next) != TETHER_SUCCESS)
        return fail("put_signal");
      if (tether_signal_wait_until(w, sig, TETHER_CMP_GE, 1, nullptr) != TETHER_SUCCESS) return fail("wait");
      if (buf[0] != 1000 + (r + n - 1) % n) return fail("ring value " + std::to_string(buf[0]));
      if (tether_int64_atomic_add(w, buf + 8, 1, 0) != TETHER_SUCCESS) return fail("atomic");
      if (tether_barrier_all(w) != TETHER_SUCCESS) return fail("barrier");
      int64_t total = 0;
      if (tether_int64_g(w, &total, buf + 8, 0) != TETHER_SUCCESS || total != n) return fail("atomic total");
      if (tether_barrier_all(w) != TETHER_SUCCESS) return fail("barrier 2");
      if (tether_finalize(w) != TETHER_SUCCESS) return fail("finalize");
    });
  }
  for (auto& t : threads) t.join();
  ::close(lfd);
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "PE " << r;
}

// The listening socket of the attribute is given away with the call: closed also when the call fails early (here a
// bad config entry) or does not need it (a job of one PE).
TEST(InitAttr, ListenFdClosedOnEveryPath) {
  for (int badConfig = 0; badConfig < 2; ++badConfig) {
    int port = 0;
    const int lfd = listenLoopback(&port);
    ASSERT_GE(lfd, 0);
    const char* const bad[] = {"TETHER_NO_SUCH_VARIABLE=1", nullptr};
    const char* const good[] = {"TETHER_HEAP_SIZE=1M", "TETHER_GPU=none", nullptr};
    tether_init_attr_t a;
    tether_init_attr_default(&a);
    a.rank = 0;
    a.size = 1;
    a.bootstrap_listen_fd = lfd;
    a.config = badConfig ? bad : good;
    tether_t w = nullptr;
    const tether_status_t st = tether_init_attr(&a, &w);
    EXPECT_EQ(st == TETHER_SUCCESS, badConfig == 0) << tether_last_error();
    if (st == TETHER_SUCCESS) {
      EXPECT_EQ(tether_finalize(w), TETHER_SUCCESS);
    }
    errno = 0;
    EXPECT_EQ(::fcntl(lfd, F_GETFD), -1) << "fd " << lfd << " still open (badConfig " << badConfig << ")";
    EXPECT_EQ(errno, EBADF);
  }
}

TEST(Threads, TwoInstancesInOneProcess) { runJob(2); }
TEST(Threads, FourInstancesInOneProcess) { runJob(4); }

}  // namespace
