// The rendezvous offer (offer.h) that PMIx and tether_init_mpi carry, with the carrier faked in-process: encoding,
// rank 0's listener and secret reaching a real TCP bootstrap of 3 ranks (threads), failures that must not leak the
// socket or leave ranks waiting, TETHER_BOOTSTRAP_ADDR/TETHER_JOB_SECRET taking precedence, and the launch errors a
// user sees (PMIx environment without an address, tether_init_mpi in a process without MPI).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/launcher_env.h"
#include "bootstrap/offer.h"
#include "bootstrap/pmix/pmix.h"

namespace tether {
namespace {

int openFds() {
  int n = 0;
  for (int fd = 0; fd < 4096; ++fd)
    if (::fcntl(fd, F_GETFD) != -1) ++n;
  return n;
}

TEST(Offer, EncodeDecode) {
  std::vector<char> block(kOfferBytes, 'x');
  ASSERT_TRUE(encodeOffer("node7:40123", "s3cr3t", block.data()).isOk());
  std::string addr, secret;
  ASSERT_TRUE(decodeOffer(block.data(), "test", &addr, &secret).isOk());
  EXPECT_EQ(addr, "node7:40123");
  EXPECT_EQ(secret, "s3cr3t");
  EXPECT_FALSE(encodeOffer("", "s", block.data()).isOk());
  EXPECT_FALSE(encodeOffer("h:1", "", block.data()).isOk());
  EXPECT_FALSE(encodeOffer("h:1", std::string(1025, 'a'), block.data()).isOk());
  ASSERT_TRUE(encodeOffer("h:1", std::string(1024, 'a'), block.data()).isOk());
  std::vector<char> zero(kOfferBytes, 0);
  Status bad = decodeOffer(zero.data(), "PMIx", &addr, &secret);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("PMIx"), std::string::npos) << bad.message();
  block[4] = 0;  // address length 0 (little-endian u16 at offset 4)
  block[5] = 0;
  EXPECT_FALSE(decodeOffer(block.data(), "test", &addr, &secret).isOk());
}

// Runs exchangeOffer on every rank of an n-rank job with a carrier that copies rank 0's block, then a TCP bootstrap
// and an allgather over what the offer gave.
TEST(Offer, ExchangedOfferStartsTheTcpBootstrap) {
  constexpr int n = 3;
  Config config;
  std::vector<JobInfo> jobs(n);
  std::vector<char> rootBlock(kOfferBytes, 0);
  for (int r = 0; r < n; ++r) {
    jobs[r].rank = r;
    jobs[r].size = n;
    jobs[r].launcher = "pmix";
  }
  // Rank 0 first (the carrier's broadcast semantics), then the others receive its block.
  ASSERT_TRUE(exchangeOffer(config, "test", [&](char* b) { std::memcpy(rootBlock.data(), b, kOfferBytes); return Status::ok(); },
                            &jobs[0]).isOk());
  for (int r = 1; r < n; ++r)
    ASSERT_TRUE(exchangeOffer(config, "test", [&](char* b) { std::memcpy(b, rootBlock.data(), kOfferBytes); return Status::ok(); },
                              &jobs[r]).isOk());
  ASSERT_GE(jobs[0].listenFd, 0) << "rank 0 listens on a kernel-picked port";
  EXPECT_FALSE(jobs[0].listenFdInherited);
  for (int r = 1; r < n; ++r) {
    EXPECT_EQ(jobs[r].listenFd, -1);
    EXPECT_EQ(jobs[r].bootstrapAddr, jobs[0].bootstrapAddr);
    EXPECT_EQ(jobs[r].secret, jobs[0].secret);
  }
  EXPECT_EQ(jobs[0].secret.size(), 64u) << "64 random hex digits";
  std::string host;
  int port = 0;
  ASSERT_TRUE(splitHostPort(jobs[0].bootstrapAddr, &host, &port)) << jobs[0].bootstrapAddr;
  EXPECT_GT(port, 0);
  std::vector<Status> results(n, Status::ok());
  std::vector<int> gathered(n * n, -1);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> bs;
      results[r] = createTcpBootstrap(jobs[r], 20.0, &bs);
      if (results[r].isOk()) results[r] = bs->allgather(&r, &gathered[r * n], sizeof r);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(results[r].isOk()) << "rank " << r << ": " << results[r].message();
    for (int q = 0; q < n; ++q) EXPECT_EQ(gathered[r * n + q], q);
  }
}

TEST(Offer, ConfiguredAddressAndSecretWin) {
  Config config;
  config.set("TETHER_BOOTSTRAP_ADDR", "127.0.0.1:45678");
  config.set("TETHER_JOB_SECRET", "given");
  JobInfo job;
  job.rank = 0;
  job.size = 2;
  std::vector<char> sent(kOfferBytes, 0);
  ASSERT_TRUE(exchangeOffer(config, "test", [&](char* b) { std::memcpy(sent.data(), b, kOfferBytes); return Status::ok(); }, &job).isOk());
  EXPECT_EQ(job.listenFd, -1) << "the bootstrap binds the configured address itself";
  EXPECT_EQ(job.bootstrapAddr, "127.0.0.1:45678");
  EXPECT_EQ(job.secret, "given");
}

TEST(Offer, FailuresCloseTheSocketAndReachTheOthers) {
  Config config;
  const int before = openFds();
  JobInfo root;
  root.rank = 0;
  root.size = 2;
  Status s = exchangeOffer(config, "test",
                           [](char*) { return Status(TETHER_ERR_TIMEOUT, "carrier timed out"); }, &root);
  EXPECT_EQ(s.code(), TETHER_ERR_TIMEOUT);
  EXPECT_EQ(openFds(), before) << "rank 0's listening socket is closed on failure";
  // Rank 0 cannot make an offer (a secret too long to encode): it still carries a block, the others fail on it.
  config.set("TETHER_JOB_SECRET", std::string(1025, 'k'));
  std::vector<char> carried(kOfferBytes, 'x');
  s = exchangeOffer(config, "test", [&](char* b) { std::memcpy(carried.data(), b, kOfferBytes); return Status::ok(); }, &root);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(openFds(), before);
  JobInfo other;
  other.rank = 1;
  other.size = 2;
  s = exchangeOffer(Config(), "MPI", [&](char* b) { std::memcpy(b, carried.data(), kOfferBytes); return Status::ok(); }, &other);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("MPI"), std::string::npos) << s.message();
}

TEST(Offer, AdvertisedHostResolves) {
  const std::string host = advertisedHost();
  ASSERT_FALSE(host.empty());
  std::string h;
  int port = 0;
  EXPECT_TRUE(splitHostPort(host + ":1", &h, &port)) << host;
}

// A PMIx launcher's environment without an address: the error says what to do in this build.
TEST(LaunchErrors, PmixEnvironmentWithoutAddress) {
  std::map<std::string, std::string> env = {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                            {"PMIX_RANK", "1"},            {"PMIX_NAMESPACE", "prterun-x-1@1"}};
  JobInfo job;
  Status s = detectJobWith(Config(), [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  }, &job);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("TETHER_BOOTSTRAP_ADDR"), std::string::npos) << s.message();
  if (pmixBuilt())
    EXPECT_NE(s.message().find("PMIx server"), std::string::npos) << s.message();
  else
    EXPECT_NE(s.message().find("libpmix-dev"), std::string::npos) << s.message();
  env.erase("PMIX_RANK");  // no PMIx: the plain message
  s = detectJobWith(Config(), [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  }, &job);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message().find("PMIx"), std::string::npos) << s.message();
}

TEST(LaunchErrors, MpiNotLoaded) {
  int comm = 0x44000000;
  JobInfo job;
  Status s = mpiJob(Config(), &comm, 1.0, &job);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), TETHER_ERR_UNSUPPORTED);
  EXPECT_NE(s.message().find("MPI_Init"), std::string::npos) << s.message();
  s = mpiJob(Config(), nullptr, 1.0, &job);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG) << s.message();
}

}  // namespace
}  // namespace tether
