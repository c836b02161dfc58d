// TCP bootstrap with the ranks of a job as threads of this process: collectives, refusal of strangers, mismatch,
// timeouts and lost peers. Timeouts are kept to 1-2 s so the whole suite stays short on a 2-core machine.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "bootstrap/bootstrap.h"

namespace tether {
namespace {

constexpr double kShortTimeout = 1.5;

// A listening socket on 127.0.0.1, port chosen by the kernel.
int listenLoopback(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  EXPECT_EQ(listen(fd, 128), 0);
  socklen_t len = sizeof sa;
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  *port = ntohs(sa.sin_port);
  return fd;
}

// JobInfos for n ranks. withFd: rank 0 gets a ready listening socket (as under tetherrun); otherwise a port that
// was free a moment ago.
std::vector<JobInfo> makeJob(int n, bool withFd = true, const std::string& secret = "job-secret-1") {
  int port = 0;
  int fd = listenLoopback(&port);
  if (!withFd) close(fd);
  std::vector<JobInfo> jobs(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    JobInfo& j = jobs[static_cast<size_t>(r)];
    j.rank = r;
    j.size = n;
    j.bootstrapAddr = "127.0.0.1:" + std::to_string(port);
    j.secret = secret;
    j.launcher = "explicit";
  }
  if (withFd) jobs[0].listenFd = fd;
  return jobs;
}

using Body = std::function<Status(int rank, Bootstrap& bs)>;

// Runs every rank in `ranks` (default: all) as a thread: create the bootstrap, then body. Returns each rank's
// Status (an absent rank keeps Status::ok()).
std::vector<Status> runJob(const std::vector<JobInfo>& jobs, double timeout, const Body& body,
                           std::vector<int> ranks = {}) {
  if (ranks.empty())
    for (size_t r = 0; r < jobs.size(); ++r) ranks.push_back(static_cast<int>(r));
  std::vector<Status> result(jobs.size());
  std::vector<std::thread> threads;
  for (int r : ranks)
    threads.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> bs;
      Status s = createTcpBootstrap(jobs[static_cast<size_t>(r)], timeout, &bs);
      if (s.isOk()) {
        EXPECT_EQ(bs->rank(), r);
        EXPECT_EQ(bs->size(), static_cast<int>(jobs.size()));
        s = body(r, *bs);
      }
      result[static_cast<size_t>(r)] = s;
    });
  for (auto& t : threads) t.join();
  return result;
}

uint8_t pattern(int from, int to, size_t i) { return static_cast<uint8_t>(from * 31 + to * 7 + i * 13 + (i >> 8)); }

#define CHECK_OK(expr)                                     \
  do {                                                     \
    Status s_ = (expr);                                    \
    if (!s_.isOk()) return s_.withContext(#expr);          \
  } while (0)
#define CHECK_TRUE(cond, what) \
  do {                         \
    if (!(cond)) return Status(TETHER_ERR_INTERNAL, what); \
  } while (0)

Status exerciseCollectives(int rank, Bootstrap& bs) {
  const int n = bs.size();
  const size_t nn = static_cast<size_t>(n);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
    // allgather
    std::vector<uint8_t> in(bytes), out(bytes * nn, 0xee);
    for (size_t i = 0; i < bytes; ++i) in[i] = pattern(rank, 0, i);
    CHECK_OK(bs.allgather(in.data(), out.data(), bytes));
    for (int s = 0; s < n; ++s)
      for (size_t i = 0; i < bytes; ++i)
        CHECK_TRUE(out[static_cast<size_t>(s) * bytes + i] == pattern(s, 0, i), "allgather data wrong");
    // alltoall (1 MiB blocks only up to 4 ranks: 8 x 8 MiB would only slow the suite)
    if (bytes < (size_t{1} << 20) || n <= 4) {
      std::vector<uint8_t> a(bytes * nn), b(bytes * nn, 0xee);
      for (int d = 0; d < n; ++d)
        for (size_t i = 0; i < bytes; ++i) a[static_cast<size_t>(d) * bytes + i] = pattern(rank, d, i);
      CHECK_OK(bs.alltoall(a.data(), b.data(), bytes));
      for (int s = 0; s < n; ++s)
        for (size_t i = 0; i < bytes; ++i)
          CHECK_TRUE(b[static_cast<size_t>(s) * bytes + i] == pattern(s, rank, i), "alltoall data wrong");
    }
    // broadcast from every root (the largest size from the last rank only)
    for (int root = bytes >= (size_t{1} << 20) ? n - 1 : 0; root < n; ++root) {
      std::vector<uint8_t> buf(bytes, 0xee);
      if (rank == root)
        for (size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, 99, i);
      CHECK_OK(bs.broadcast(buf.data(), bytes, root));
      for (size_t i = 0; i < bytes; ++i) CHECK_TRUE(buf[i] == pattern(root, 99, i), "broadcast data wrong");
    }
    CHECK_OK(bs.barrier());
  }
  // In-place allgather: each rank's block already sits in out.
  std::vector<int> v(nn, -1);
  v[static_cast<size_t>(rank)] = rank * 10;
  CHECK_OK(bs.allgather(&v[static_cast<size_t>(rank)], v.data(), sizeof(int)));
  for (int s = 0; s < n; ++s) CHECK_TRUE(v[static_cast<size_t>(s)] == s * 10, "in-place allgather wrong");
  return Status::ok();
}

void expectAll(const std::vector<Status>& st, tether_status_t code, const std::string& mention = "",
               const std::vector<int>& ranks = {}) {
  for (size_t r = 0; r < st.size(); ++r) {
    if (!ranks.empty() && std::find(ranks.begin(), ranks.end(), static_cast<int>(r)) == ranks.end()) continue;
    EXPECT_EQ(st[r].code(), code) << "rank " << r << ": " << st[r].message();
    if (!mention.empty()) {
      EXPECT_NE(st[r].message().find(mention), std::string::npos) << "rank " << r << ": " << st[r].message();
    }
  }
}

class TcpCollectives : public ::testing::TestWithParam<int> {};

TEST_P(TcpCollectives, AllSizes) {
  auto st = runJob(makeJob(GetParam()), 60, exerciseCollectives);
  expectAll(st, TETHER_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Ranks, TcpCollectives, ::testing::Values(1, 2, 4, 8));

TEST(TcpBootstrap, RendezvousByAddress) {
  auto st = runJob(makeJob(3, /*withFd=*/false), 30, [](int rank, Bootstrap& bs) {
    int all[3];
    CHECK_OK(bs.allgather(&rank, all, sizeof rank));
    CHECK_TRUE(all[0] == 0 && all[1] == 1 && all[2] == 2, "allgather wrong");
    return bs.barrier();
  });
  expectAll(st, TETHER_SUCCESS);
}

TEST(TcpBootstrap, SeveralJobsInOneProcess) {
  auto a = makeJob(3, true, "secret-a"), b = makeJob(3, true, "secret-b");
  std::vector<Status> sa, sb;
  std::thread ta([&] { sa = runJob(a, 30, exerciseCollectives); });
  std::thread tb([&] { sb = runJob(b, 30, exerciseCollectives); });
  ta.join();
  tb.join();
  expectAll(sa, TETHER_SUCCESS);
  expectAll(sb, TETHER_SUCCESS);
}

// Connects to port and sends `data` (may be empty: a silent stranger); returns the fd (left open).
int stranger(int port, const std::string& data) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  if (!data.empty()) {
    EXPECT_EQ(send(fd, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size()));
  }
  return fd;
}

TEST(TcpBootstrap, WrongSecretRefusedWhileHonestRanksComplete) {
  auto jobs = makeJob(3);
  int port = std::stoi(jobs[0].bootstrapAddr.substr(jobs[0].bootstrapAddr.rfind(':') + 1));
  int silent = stranger(port, "");
  int garbage = stranger(port, "GET / HTTP/1.0\r\n\r\nand then some more bytes to fill a whole header");
  Status wrongSecret, wrongSize;
  std::thread impostors([&] {
    std::unique_ptr<Bootstrap> bs;
    JobInfo bad = jobs[1];
    bad.secret = "guessed";
    wrongSecret = createTcpBootstrap(bad, kShortTimeout, &bs);
    bad = jobs[2];
    bad.size = 5;
    bad.rank = 4;
    wrongSize = createTcpBootstrap(bad, kShortTimeout, &bs);
  });
  std::vector<Status> st(3);
  std::vector<int> got(9, -1);
  auto honest = [&](int r) {
    std::unique_ptr<Bootstrap> bs;
    Status s = createTcpBootstrap(jobs[static_cast<size_t>(r)], 10, &bs);
    if (s.isOk()) s = bs->allgather(&r, &got[static_cast<size_t>(r) * 3], sizeof r);
    st[static_cast<size_t>(r)] = s;
  };
  std::thread r0(honest, 0);
  impostors.join();
  std::thread r1(honest, 1), r2(honest, 2);
  r0.join();
  r1.join();
  r2.join();
  close(silent);
  close(garbage);
  expectAll(st, TETHER_SUCCESS);
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s) EXPECT_EQ(got[static_cast<size_t>(r * 3 + s)], s);
  EXPECT_EQ(wrongSecret.code(), TETHER_ERR_BOOTSTRAP) << wrongSecret.message();
  EXPECT_NE(wrongSecret.message().find("secret"), std::string::npos) << wrongSecret.message();
  EXPECT_EQ(wrongSize.code(), TETHER_ERR_BOOTSTRAP) << wrongSize.message();
  EXPECT_NE(wrongSize.message().find("size"), std::string::npos) << wrongSize.message();
}

TEST(TcpBootstrap, DuplicateRankRefused) {
  auto jobs = makeJob(3);
  std::vector<Status> st(3);
  auto honest = [&](int r) {
    std::unique_ptr<Bootstrap> bs;
    Status s = createTcpBootstrap(jobs[static_cast<size_t>(r)], 10, &bs);
    if (s.isOk()) s = bs->barrier();
    st[static_cast<size_t>(r)] = s;
  };
  std::thread r0(honest, 0), r1(honest, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 1 has joined; rank 2 not yet
  std::unique_ptr<Bootstrap> dup;
  Status d = createTcpBootstrap(jobs[1], kShortTimeout, &dup);
  EXPECT_EQ(d.code(), TETHER_ERR_BOOTSTRAP) << d.message();
  EXPECT_NE(d.message().find("already joined"), std::string::npos) << d.message();
  std::thread r2(honest, 2);
  r0.join();
  r1.join();
  r2.join();
  expectAll(st, TETHER_SUCCESS);
}

TEST(TcpBootstrap, SizeMismatchFailsEveryRank) {
  // Rank 2 passes a different count; one case with a 1 MiB block, whose sender must not block on a full socket.
  for (size_t odd : {size_t{100}, size_t{1} << 20}) {
    auto st = runJob(makeJob(4), 10, [odd](int rank, Bootstrap& bs) {
      size_t bytes = rank == 2 ? odd : 64;
      std::vector<uint8_t> in(bytes, 1), out(bytes * 4);
      return bs.allgather(in.data(), out.data(), bytes);
    });
    expectAll(st, TETHER_ERR_MISMATCH, "rank 2 passed " + std::to_string(odd) + " bytes but rank 0 passed 64");
  }
  // Rank 0 is the odd one.
  auto st = runJob(makeJob(3), 10, [](int rank, Bootstrap& bs) {
    std::vector<uint8_t> buf(rank == 0 ? 8 : 16);
    return bs.broadcast(buf.data(), buf.size(), 0);
  });
  expectAll(st, TETHER_ERR_MISMATCH, "but rank 0 passed 8");
}

TEST(TcpBootstrap, CallMismatchFailsEveryRankAndStaysFailed) {
  auto st = runJob(makeJob(3), 10, [](int rank, Bootstrap& bs) -> Status {
    int x = rank, all[3];
    Status s = rank == 1 ? bs.barrier() : bs.allgather(&x, all, sizeof x);
    if (s.isOk()) return Status(TETHER_ERR_INTERNAL, "mismatched calls succeeded");
    Status again = bs.barrier();
    if (again.code() != s.code()) return Status(TETHER_ERR_INTERNAL, "second call after failure: " + again.message());
    return s;
  });
  expectAll(st, TETHER_ERR_MISMATCH, "rank 1 called barrier");
  auto roots = runJob(makeJob(3), 10, [](int rank, Bootstrap& bs) {
    int v = 0;
    return bs.broadcast(&v, sizeof v, rank == 2 ? 1 : 0);
  });
  expectAll(roots, TETHER_ERR_MISMATCH, "rank 2 gave root 1 but rank 0 gave root 0");
  auto badRoot = runJob(makeJob(2), 10, [](int, Bootstrap& bs) {
    int v = 0;
    return bs.broadcast(&v, sizeof v, 7);
  });
  expectAll(badRoot, TETHER_ERR_INVALID_ARG, "root 7");
}

TEST(TcpBootstrap, MissingRankTimesOut) {
  auto jobs = makeJob(4);
  uint64_t t0 = nowNs();
  auto st = runJob(jobs, kShortTimeout, [](int, Bootstrap&) { return Status::ok(); }, {0, 1, 2});
  double elapsed = static_cast<double>(nowNs() - t0) / 1e9;
  expectAll(st, TETHER_ERR_TIMEOUT, "rank(s) 3 never connected", {0, 1, 2});
  EXPECT_LT(elapsed, kShortTimeout + 1.5);
}

TEST(TcpBootstrap, LateRankTimesOutInCollective) {
  uint64_t t0 = nowNs();
  auto st = runJob(makeJob(4), kShortTimeout, [](int rank, Bootstrap& bs) -> Status {
    if (rank == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(kShortTimeout * 1000) + 1200));
      Status s = bs.barrier();  // the others gave up meanwhile: rank 3 learns it from rank 0
      return s.code() == TETHER_ERR_TIMEOUT ? Status::ok() : Status(TETHER_ERR_INTERNAL, "late rank: " + s.message());
    }
    return bs.barrier();
  });
  double elapsed = static_cast<double>(nowNs() - t0) / 1e9;
  expectAll(st, TETHER_ERR_TIMEOUT, "rank(s) 3 had not called it", {0, 1, 2});
  EXPECT_TRUE(st[3].isOk()) << st[3].message();
  EXPECT_LT(elapsed, kShortTimeout + 3);
}

TEST(TcpBootstrap, NobodyListening) {
  auto jobs = makeJob(2, /*withFd=*/false);
  uint64_t t0 = nowNs();
  std::unique_ptr<Bootstrap> bs;
  Status s = createTcpBootstrap(jobs[1], 0.5, &bs);
  EXPECT_EQ(s.code(), TETHER_ERR_TIMEOUT) << s.message();
  EXPECT_NE(s.message().find("could not connect"), std::string::npos) << s.message();
  EXPECT_LT(static_cast<double>(nowNs() - t0) / 1e9, 2.0);
}

TEST(TcpBootstrap, PeerClosingMidJob) {
  // A non-root rank goes away: everyone else fails naming it.
  auto st = runJob(makeJob(4), 10, [](int rank, Bootstrap& bs) -> Status {
    CHECK_OK(bs.barrier());
    if (rank == 2) return Status::ok();  // its bootstrap is destroyed on return
    int x = rank, all[4];
    return bs.allgather(&x, all, sizeof x);
  });
  expectAll(st, TETHER_ERR_PEER_LOST, "rank 2", {0, 1, 3});
  EXPECT_TRUE(st[2].isOk());
  // Rank 0 goes away: everyone else fails naming rank 0.
  st = runJob(makeJob(3), 10, [](int rank, Bootstrap& bs) -> Status {
    CHECK_OK(bs.barrier());
    if (rank == 0) return Status::ok();
    std::vector<uint8_t> big(1 << 20), out(3 << 20);
    return bs.allgather(big.data(), out.data(), big.size());
  });
  expectAll(st, TETHER_ERR_PEER_LOST, "rank 0", {1, 2});
}

TEST(TcpBootstrap, ListenErrors) {
  // Port held by another listener.
  int port = 0;
  int holder = listenLoopback(&port);
  JobInfo j;
  j.rank = 0;
  j.size = 2;
  j.bootstrapAddr = "127.0.0.1:" + std::to_string(port);
  j.launcher = "torchrun";
  std::unique_ptr<Bootstrap> bs;
  Status s = createTcpBootstrap(j, 1, &bs);
  EXPECT_EQ(s.code(), TETHER_ERR_BOOTSTRAP) << s.message();
  EXPECT_NE(s.message().find("already in use"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("TETHER_BOOTSTRAP_ADDR"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("MASTER_PORT"), std::string::npos) << s.message();
  close(holder);
  // Port 0 without an inherited socket.
  j.bootstrapAddr = "127.0.0.1:0";
  s = createTcpBootstrap(j, 1, &bs);
  EXPECT_EQ(s.code(), TETHER_ERR_BOOTSTRAP) << s.message();
  EXPECT_NE(s.message().find("port 0"), std::string::npos) << s.message();
  // An inherited fd that is not a listening socket.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  j.listenFd = p[0];  // taken over (closed) by the bootstrap
  s = createTcpBootstrap(j, 1, &bs);
  EXPECT_EQ(s.code(), TETHER_ERR_BOOTSTRAP) << s.message();
  EXPECT_NE(s.message().find("not a listening socket"), std::string::npos) << s.message();
  close(p[1]);
  // Unresolvable host.
  j.listenFd = -1;
  j.rank = 1;
  j.bootstrapAddr = "no-such-host.invalid:5000";
  s = createTcpBootstrap(j, 1, &bs);
  EXPECT_EQ(s.code(), TETHER_ERR_BOOTSTRAP) << s.message();
  EXPECT_NE(s.message().find("cannot resolve"), std::string::npos) << s.message();
}

// A wait that lasts says so (TETHER_WAIT_REPORT) before it times out: who is missing and how long is left.
TEST(TcpBootstrap, LongWaitsNameWhoIsMissing) {
  setenv("TETHER_WAIT_REPORT", "0.3", 1);
  testing::internal::CaptureStderr();
  auto st = runJob(makeJob(3), kShortTimeout, [](int rank, Bootstrap& bs) -> Status {
    if (rank == 2) {  // rank 2 joins, then does not call the barrier (stays connected past the timeout)
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(kShortTimeout * 1000) + 1500));
      return Status::ok();
    }
    return bs.barrier();
  });
  auto missing = runJob(makeJob(4), kShortTimeout, [](int, Bootstrap&) { return Status::ok(); }, {0, 1, 2});
  const std::string out = testing::internal::GetCapturedStderr();
  unsetenv("TETHER_WAIT_REPORT");
  expectAll(missing, TETHER_ERR_TIMEOUT, "rank(s) 3 never connected", {0, 1, 2});
  EXPECT_EQ(st[0].code(), TETHER_ERR_TIMEOUT) << st[0].message();
  // Rank 0 during the rendezvous, before its timeout error.
  const size_t note = out.find("still waiting for rank(s) 3 to connect (3 of 4 ranks present)");
  EXPECT_NE(note, std::string::npos) << out;
  EXPECT_LT(note, out.find("rank(s) 3 never connected")) << out;
  EXPECT_NE(out.find("s left of TETHER_TIMEOUT"), std::string::npos) << out;
  // The joined ranks waiting to be accepted, rank 0 in the barrier, rank 1 waiting for rank 0's reply.
  EXPECT_NE(out.find("waits to be accepted by rank 0"), std::string::npos) << out;
  EXPECT_NE(out.find("barrier #1: rank 0 still waiting for rank(s) 2"), std::string::npos) << out;
  EXPECT_NE(out.find("barrier #1: rank 1 still waiting for rank 0's reply"), std::string::npos) << out;
}

TEST(SelfBootstrap, Copies) {
  auto bs = createSelfBootstrap();
  EXPECT_EQ(bs->rank(), 0);
  EXPECT_EQ(bs->size(), 1);
  int in = 42, out = 0;
  EXPECT_TRUE(bs->allgather(&in, &out, sizeof in).isOk());
  EXPECT_EQ(out, 42);
  out = 0;
  EXPECT_TRUE(bs->alltoall(&in, &out, sizeof in).isOk());
  EXPECT_EQ(out, 42);
  EXPECT_TRUE(bs->broadcast(&out, sizeof out, 0).isOk());
  EXPECT_EQ(bs->broadcast(&out, sizeof out, 1).code(), TETHER_ERR_INVALID_ARG);
  EXPECT_TRUE(bs->barrier().isOk());
  EXPECT_TRUE(bs->allgather(nullptr, nullptr, 0).isOk());
}

}  // namespace
}  // namespace tether
