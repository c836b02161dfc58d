// detectJob: each launcher's variables, precedence, bad values, missing address, secrets. The foreign variables are
// injected through detectJobWith; TETHER_* come from an explicit Config, so the process environment is not touched.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "bootstrap/launcher_env.h"

namespace tether {
namespace {

using Vars = std::map<std::string, std::string>;

struct Detect {
  Status status;
  JobInfo job;
};

Detect detect(const Vars& foreign, const Vars& tether = {}) {
  Config config;
  for (const auto& [k, v] : tether) config.set(k, v);
  EnvLookup env = [&foreign](const char* name) -> const char* {
    auto it = foreign.find(name);
    return it == foreign.end() ? nullptr : it->second.c_str();
  };
  Detect d;
  d.status = detectJobWith(config, env, &d.job);
  return d;
}

void expectError(const Detect& d, const std::vector<std::string>& mentions) {
  ASSERT_FALSE(d.status.isOk());
  EXPECT_EQ(d.status.code(), TETHER_ERR_BOOTSTRAP) << d.status.message();
  for (const auto& m : mentions) EXPECT_NE(d.status.message().find(m), std::string::npos) << d.status.message();
}

TEST(DetectJob, NoLauncherIsOnePe) {
  Detect d = detect({});
  ASSERT_TRUE(d.status.isOk()) << d.status.message();
  EXPECT_EQ(d.job.rank, 0);
  EXPECT_EQ(d.job.size, 1);
  EXPECT_EQ(d.job.launcher, "none");
  EXPECT_TRUE(d.job.bootstrapAddr.empty());
  EXPECT_EQ(d.job.listenFd, -1);
}

TEST(DetectJob, Tetherrun) {
  Vars t = {{"TETHER_RANK", "2"},
            {"TETHER_SIZE", "4"},
            {"TETHER_LOCAL_RANK", "2"},
            {"TETHER_LOCAL_SIZE", "4"},
            {"TETHER_BOOTSTRAP_ADDR", "127.0.0.1:4711"},
            {"TETHER_JOB_SECRET", "abcdef"},
            {"TETHER_LAUNCHER", "tetherrun"},
            {"TETHER_BOOTSTRAP_FD", "7"}};
  Detect d = detect({}, t);
  ASSERT_TRUE(d.status.isOk()) << d.status.message();
  EXPECT_EQ(d.job.rank, 2);
  EXPECT_EQ(d.job.size, 4);
  EXPECT_EQ(d.job.localRank, 2);
  EXPECT_EQ(d.job.localSize, 4);
  EXPECT_EQ(d.job.bootstrapAddr, "127.0.0.1:4711");
  EXPECT_EQ(d.job.secret, "abcdef");
  EXPECT_EQ(d.job.launcher, "tetherrun");
  EXPECT_EQ(d.job.listenFd, -1) << "only rank 0 takes the inherited socket";
  t["TETHER_RANK"] = "0";
  t["TETHER_LOCAL_RANK"] = "0";
  d = detect({}, t);
  ASSERT_TRUE(d.status.isOk()) << d.status.message();
  EXPECT_EQ(d.job.listenFd, 7);
}

TEST(DetectJob, ExplicitWinsOverForeignLaunchers) {
  Detect d = detect({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"SLURM_PROCID", "5"}},
                    {{"TETHER_RANK", "1"}, {"TETHER_SIZE", "2"}, {"TETHER_BOOTSTRAP_ADDR", "h:1"}});
  ASSERT_TRUE(d.status.isOk()) << d.status.message();
  EXPECT_EQ(d.job.launcher, "explicit");
  EXPECT_EQ(d.job.rank, 1);
  EXPECT_EQ(d.job.size, 2);
  EXPECT_EQ(d.job.localRank, -1);
  EXPECT_FALSE(d.job.secret.empty()) << "a multi-PE job without TETHER_JOB_SECRET gets a derived one";
}

TEST(DetectJob, ExplicitBadValues) {
  expectError(detect({}, {{"TETHER_RANK", "1"}}), {"TETHER_RANK", "TETHER_SIZE"});
  expectError(detect({}, {{"TETHER_SIZE", "4"}}), {"TETHER_SIZE", "TETHER_RANK"});
  expectError(detect({}, {{"TETHER_RANK", "one"}, {"TETHER_SIZE", "4"}}), {"TETHER_RANK='one'", "not an integer"});
  expectError(detect({}, {{"TETHER_RANK", "4"}, {"TETHER_SIZE", "4"}, {"TETHER_BOOTSTRAP_ADDR", "h:1"}}),
              {"TETHER_RANK=4", "TETHER_SIZE=4"});
  expectError(detect({}, {{"TETHER_RANK", "-1"}, {"TETHER_SIZE", "4"}}), {"TETHER_RANK=-1"});
  expectError(detect({}, {{"TETHER_RANK", "0"}, {"TETHER_SIZE", "0"}}), {"TETHER_SIZE=0"});
  expectError(detect({}, {{"TETHER_RANK", "0"}, {"TETHER_SIZE", "99999999999"}}), {"TETHER_SIZE"});
  expectError(detect({}, {{"TETHER_RANK", "1"},
                          {"TETHER_SIZE", "4"},
                          {"TETHER_LOCAL_RANK", "2"},
                          {"TETHER_LOCAL_SIZE", "2"},
                          {"TETHER_BOOTSTRAP_ADDR", "h:1"}}),
              {"TETHER_LOCAL_RANK=2", "TETHER_LOCAL_SIZE=2"});
  expectError(detect({}, {{"TETHER_RANK", "0"}, {"TETHER_SIZE", "2"}, {"TETHER_BOOTSTRAP_ADDR", "h:1"},
                          {"TETHER_BOOTSTRAP_FD", "-3"}}),
              {"TETHER_BOOTSTRAP_FD=-3"});
}

TEST(DetectJob, MultiPeWithoutAddress) {
  expectError(detect({}, {{"TETHER_RANK", "0"}, {"TETHER_SIZE", "2"}}), {"TETHER_BOOTSTRAP_ADDR", "2 PEs"});
  expectError(detect({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
              {"TETHER_BOOTSTRAP_ADDR", "openmpi"});
  expectError(detect({{"RANK", "1"}, {"WORLD_SIZE", "2"}}), {"TETHER_BOOTSTRAP_ADDR", "MASTER_ADDR"});
  // A one-PE job needs none.
  Detect d = detect({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}});
  ASSERT_TRUE(d.status.isOk()) << d.status.message();
  EXPECT_TRUE(d.job.secret.empty());
}

TEST(DetectJob, BadAddress) {
  Vars t = {{"TETHER_RANK", "1"}, {"TETHER_SIZE", "2"}};
  for (const char* bad : {"nohost", "host:", ":80", "host:http", "host:70000", "host:-1", "host:0"}) {
    t["TETHER_BOOTSTRAP_ADDR"] = bad;
    expectError(detect({}, t), {bad, "host:port"});
  }
  t["TETHER_BOOTSTRAP_ADDR"] = "[::1]:5000";
  EXPECT_TRUE(detect({}, t).status.isOk());
  // Port 0 is fine for rank 0 with an inherited socket (the address is informative only).
  Detect d = detect({}, {{"TETHER_RANK", "0"}, {"TETHER_SIZE", "2"}, {"TETHER_BOOTSTRAP_ADDR", "127.0.0.1:0"},
                         {"TETHER_BOOTSTRAP_FD", "5"}});
  EXPECT_TRUE(d.status.isOk()) << d.status.message();
}

TEST(DetectJob, SecretTooLong) {
  expectError(detect({}, {{"TETHER_RANK", "1"}, {"TETHER_SIZE", "2"}, {"TETHER_BOOTSTRAP_ADDR", "h:1"},
                          {"TETHER_JOB_SECRET", std::string(2000, 'x')}}),
              {"TETHER_JOB_SECRET"});
}

TEST(DetectJob, OpenMpi) {
  Vars f = {{"OMPI_COMM_WORLD_RANK", "3"},
            {"OMPI_COMM_WORLD_SIZE", "4"},
            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
            {"OMPI_MCA_ess_base_jobid", "12345"}};
  Detect d = detect(f, {{"TETHER_BOOTSTRAP_ADDR", "node0:29400"}});
  ASSERT_TRUE(d.status.isOk()) << d.status.message();
  EXPECT_EQ(d.job.launcher, "openmpi");
  EXPECT_EQ(d.job.rank, 3);
  EXPECT_EQ(d.job.size, 4);
  EXPECT_EQ(d.job.localRank, 1);
  EXPECT_EQ(d.job.localSize, 2);
  EXPECT_EQ(d.job.bootstrapAddr, "node0:29400");
  // Without TETHER_JOB_SECRET: derived from address and job id, the same on every rank, different per job.
  std::string secret = d.job.secret;
  EXPECT_FALSE(secret.empty());
  f["OMPI_COMM_WORLD_RANK"] = "0";
  f["OMPI_COMM_WORLD_LOCAL_RANK"] = "0";
  EXPECT_EQ(detect(f, {{"TETHER_BOOTSTRAP_ADDR", "node0:29400"}}).job.secret, secret);
  f["OMPI_MCA_ess_base_jobid"] = "12346";
  EXPECT_NE(detect(f, {{"TETHER_BOOTSTRAP_ADDR", "node0:29400"}}).job.secret, secret);
  // An explicit secret wins.
  EXPECT_EQ(detect(f, {{"TETHER_BOOTSTRAP_ADDR", "node0:29400"}, {"TETHER_JOB_SECRET", "s"}}).job.secret, "s");
}

TEST(DetectJob, OpenMpiBadValues) {
  Vars a = {{"TETHER_BOOTSTRAP_ADDR", "h:1"}};
  expectError(detect({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}}, a),
              {"OMPI_COMM_WORLD_RANK=4", "OMPI_COMM_WORLD_SIZE=4"});
  expectError(detect({{"OMPI_COMM_WORLD_RANK", "1"}}, a), {"OMPI_COMM_WORLD_SIZE"});
  expectError(detect({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4x"}}, a),
              {"OMPI_COMM_WORLD_SIZE='4x'"});
  expectError(detect({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "9"}},
                     a),
              {"OMPI_COMM_WORLD_LOCAL_SIZE=9"});
}

TEST(DetectJob, Hydra) {
  Detect d = detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "1"}},
                    {{"TETHER_BOOTSTRAP_ADDR", "10.0.0.1:5000"}, {"TETHER_JOB_SECRET", "k"}});
  ASSERT_TRUE(d.status.isOk()) << d.status.message();
  EXPECT_EQ(d.job.launcher, "hydra");
  EXPECT_EQ(d.job.rank, 1);
  EXPECT_EQ(d.job.size, 3);
  EXPECT_EQ(d.job.localRank, 0);
  EXPECT_EQ(d.job.localSize, 1);
  expectError(detect({{"PMI_RANK", "7"}, {"PMI_SIZE", "3"}}, {{"TETHER_BOOTSTRAP_ADDR", "h:1"}}),
              {"PMI_RANK=7", "PMI_SIZE=3"});
}

TEST(DetectJob, Slurm) {
  Vars f = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}, {"SLURM_JOB_ID", "777"}};
  Vars t = {{"TETHER_BOOTSTRAP_ADDR", "n1:6000"}};
  Detect d = detect(f, t);
  ASSERT_TRUE(d.status.isOk()) << d.status.message();
  EXPECT_EQ(d.job.launcher, "slurm");
  EXPECT_EQ(d.job.rank, 5);
  EXPECT_EQ(d.job.size, 8);
  EXPECT_EQ(d.job.localRank, 1);
  EXPECT_EQ(d.job.localSize, -1) << "SLURM_NTASKS_PER_NODE absent: unknown";
  EXPECT_FALSE(d.job.secret.empty());
  f["SLURM_NTASKS_PER_NODE"] = "4";
  EXPECT_EQ(detect(f, t).job.localSize, 4);
  f.erase("SLURM_NTASKS_PER_NODE");
  f["SLURM_STEP_TASKS_PER_NODE"] = "2(x4)";
  EXPECT_EQ(detect(f, t).job.localSize, 2);
  f["SLURM_STEP_TASKS_PER_NODE"] = "3,2(x2)";  // uneven, no node index: unknown
  EXPECT_EQ(detect(f, t).job.localSize, -1);
  f["SLURM_NODEID"] = "0";  // uneven, node known: this node's entry
  EXPECT_EQ(detect(f, t).job.localSize, 3);
  f["SLURM_NODEID"] = "2";
  EXPECT_EQ(detect(f, t).job.localSize, 2);
  // The step's layout wins over the allocation's and over the --ntasks-per-node request.
  f["SLURM_TASKS_PER_NODE"] = "4(x2)";
  f["SLURM_NTASKS_PER_NODE"] = "4";
  EXPECT_EQ(detect(f, t).job.localSize, 2);
  f.erase("SLURM_STEP_TASKS_PER_NODE");
  f["SLURM_NODEID"] = "1";
  EXPECT_EQ(detect(f, t).job.localSize, 4) << "SLURM_TASKS_PER_NODE when the step's list is absent";
  f["SLURM_TASKS_PER_NODE"] = "4(x2";  // malformed: warned and skipped, the request is used
  EXPECT_EQ(detect(f, t).job.localSize, 4);
  f["SLURM_NTASKS_PER_NODE"] = "1";  // fewer tasks than this PE's local id 1: a clear error naming the count
  expectError(detect(f, t), {"SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE"});
  f.erase("SLURM_TASKS_PER_NODE");
  f.erase("SLURM_NTASKS_PER_NODE");
  f.erase("SLURM_NODEID");
  // The step's size wins over the allocation's.
  f["SLURM_STEP_NUM_TASKS"] = "6";
  EXPECT_EQ(detect(f, t).job.size, 6);
  f["SLURM_PROCID"] = "6";
  expectError(detect(f, t), {"SLURM_PROCID=6", "SLURM_STEP_NUM_TASKS=6"});
}

TEST(SlurmTasksPerNode, Forms) {
  struct Case {
    const char* value;
    int node;
    SlurmTasks want;
    int tasks;
  };
  const Case cases[] = {
      {"4", -1, SlurmTasks::Found, 4},          {"4", 0, SlurmTasks::Found, 4},
      {"4", 1, SlurmTasks::NotThisNode, 0},      {"2(x3)", -1, SlurmTasks::Found, 2},
      {"2(x3)", 2, SlurmTasks::Found, 2},        {"2(x3)", 3, SlurmTasks::NotThisNode, 0},
      {"2(x3),1", -1, SlurmTasks::NotThisNode, 0}, {"2(x3),1", 0, SlurmTasks::Found, 2},
      {"2(x3),1", 2, SlurmTasks::Found, 2},      {"2(x3),1", 3, SlurmTasks::Found, 1},
      {"2(x3),1", 4, SlurmTasks::NotThisNode, 0}, {"1,3(x2),2", 1, SlurmTasks::Found, 3},
      {"1,3(x2),2", 2, SlurmTasks::Found, 3},    {"1,3(x2),2", 3, SlurmTasks::Found, 2},
      {"2(x2),2", -1, SlurmTasks::Found, 2},     {"8(x100000)", 99999, SlurmTasks::Found, 8},
      {"8(x2147483647)", 2147483646, SlurmTasks::Found, 8},
      {"", -1, SlurmTasks::Malformed, 0},        {"0", -1, SlurmTasks::Malformed, 0},
      {"2(x0)", 0, SlurmTasks::Malformed, 0},    {"2(3)", 0, SlurmTasks::Malformed, 0},
      {"2x3", 0, SlurmTasks::Malformed, 0},      {"2(x3", 0, SlurmTasks::Malformed, 0},
      {"2(x3)1", 0, SlurmTasks::Malformed, 0},   {"2,", 0, SlurmTasks::Malformed, 0},
      {",2", 0, SlurmTasks::Malformed, 0},       {"2, 3", 0, SlurmTasks::Malformed, 0},
      {"-2", -1, SlurmTasks::Malformed, 0},      {"abc", -1, SlurmTasks::Malformed, 0},
      {"2(x3),1x", 0, SlurmTasks::Malformed, 0}, {"99999999999", -1, SlurmTasks::Malformed, 0},
      {"2(x99999999999)", 0, SlurmTasks::Malformed, 0},
  };
  for (const Case& c : cases) {
    int tasks = -7;
    EXPECT_EQ(slurmTasksOnNode(c.value, c.node, &tasks), c.want) << "'" << c.value << "' node " << c.node;
    EXPECT_EQ(tasks, c.want == SlurmTasks::Found ? c.tasks : -7) << "'" << c.value << "' node " << c.node;
  }
  int tasks = -7;
  EXPECT_EQ(slurmTasksOnNode(nullptr, 0, &tasks), SlurmTasks::Malformed);
  // A malformed tail leaves *tasks alone even when an earlier term matched the node.
  EXPECT_EQ(slurmTasksOnNode("2(x3),bad", 0, &tasks), SlurmTasks::Malformed);
  EXPECT_EQ(tasks, -7);
}

TEST(DetectJob, Torchrun) {
  Vars f = {{"RANK", "2"},          {"WORLD_SIZE", "4"},          {"LOCAL_RANK", "0"},
            {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.1.1.1"}, {"MASTER_PORT", "29500"},
            {"TORCHELASTIC_RUN_ID", "abc"}};
  Detect d = detect(f);
  ASSERT_TRUE(d.status.isOk()) << d.status.message();
  EXPECT_EQ(d.job.launcher, "torchrun");
  EXPECT_EQ(d.job.rank, 2);
  EXPECT_EQ(d.job.size, 4);
  EXPECT_EQ(d.job.localRank, 0);
  EXPECT_EQ(d.job.localSize, 2);
  EXPECT_EQ(d.job.bootstrapAddr, "10.1.1.1:29500");
  d = detect(f, {{"TETHER_BOOTSTRAP_ADDR", "10.1.1.1:29600"}});
  EXPECT_EQ(d.job.bootstrapAddr, "10.1.1.1:29600") << "TETHER_BOOTSTRAP_ADDR wins over MASTER_ADDR:MASTER_PORT";
  f["MASTER_PORT"] = "x";
  expectError(detect(f), {"10.1.1.1:x", "MASTER_ADDR:MASTER_PORT"});
  expectError(detect({{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}),
              {"RANK=4", "WORLD_SIZE=4"});
  // RANK alone (without WORLD_SIZE) is not taken for torchrun.
  Detect lone = detect({{"RANK", "3"}});
  ASSERT_TRUE(lone.status.isOk());
  EXPECT_EQ(lone.job.launcher, "none");
}

TEST(DetectJob, Precedence) {
  Vars all = {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"PMI_RANK", "2"}, {"PMI_SIZE", "3"},
              {"SLURM_PROCID", "3"},         {"SLURM_NTASKS", "4"},         {"RANK", "4"},     {"WORLD_SIZE", "5"},
              {"MASTER_ADDR", "m"},          {"MASTER_PORT", "1"}};
  Vars t = {{"TETHER_BOOTSTRAP_ADDR", "h:1"}};
  EXPECT_EQ(detect(all, t).job.launcher, "openmpi");
  all.erase("OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(detect(all, t).job.launcher, "hydra");
  all.erase("PMI_RANK");
  EXPECT_EQ(detect(all, t).job.launcher, "slurm");
  all.erase("SLURM_PROCID");
  EXPECT_EQ(detect(all, t).job.launcher, "torchrun");
}

TEST(SplitHostPort, Forms) {
  std::string h;
  int p = -1;
  EXPECT_TRUE(splitHostPort("127.0.0.1:80", &h, &p));
  EXPECT_EQ(h, "127.0.0.1");
  EXPECT_EQ(p, 80);
  EXPECT_TRUE(splitHostPort("[fe80::1]:65535", &h, &p));
  EXPECT_EQ(h, "fe80::1");
  EXPECT_EQ(p, 65535);
  EXPECT_FALSE(splitHostPort("host:65536", &h, &p));
  EXPECT_FALSE(splitHostPort("host:+5", &h, &p));
  EXPECT_FALSE(splitHostPort("host: 5", &h, &p));
  EXPECT_FALSE(splitHostPort("[]:5", &h, &p));
}

}  // namespace
}  // namespace tether
