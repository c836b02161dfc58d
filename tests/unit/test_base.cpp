#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "base/status.h"

using namespace tether;

TEST(Config, ParsesSizes) {
  uint64_t v = 0;
  EXPECT_TRUE(parseSize("4096", &v));
  EXPECT_EQ(v, 4096u);
  EXPECT_TRUE(parseSize("64M", &v));
  EXPECT_EQ(v, 64ull << 20);
  EXPECT_TRUE(parseSize("2GiB", &v));
  EXPECT_EQ(v, 2ull << 30);
  EXPECT_TRUE(parseSize("1k", &v));
  EXPECT_EQ(v, 1024u);
  EXPECT_FALSE(parseSize("12Q", &v));
  EXPECT_FALSE(parseSize("-1", &v));
  EXPECT_FALSE(parseSize("", &v));
  EXPECT_FALSE(parseSize("99999999999999999999T", &v));
}

TEST(Config, ParsesSecondsAndBools) {
  double s = 0;
  EXPECT_TRUE(parseSeconds("2.5", &s));
  EXPECT_DOUBLE_EQ(s, 2.5);
  EXPECT_TRUE(parseSeconds("500ms", &s));
  EXPECT_DOUBLE_EQ(s, 0.5);
  EXPECT_TRUE(parseSeconds("2m", &s));
  EXPECT_DOUBLE_EQ(s, 120);
  EXPECT_FALSE(parseSeconds("soon", &s));
  EXPECT_FALSE(parseSeconds("-3", &s));
  bool b = false;
  EXPECT_TRUE(parseBool("yes", &b));
  EXPECT_TRUE(b);
  EXPECT_TRUE(parseBool("OFF", &b));
  EXPECT_FALSE(b);
  EXPECT_FALSE(parseBool("maybe", &b));
}

TEST(Config, EveryVariableIsDeclaredOnceWithHelpAndValidDefault) {
  Config c;
  EXPECT_TRUE(c.validate().isOk());
  const auto& vars = configVars();
  for (size_t i = 0; i < vars.size(); ++i) {
    EXPECT_EQ(std::string(vars[i].name).rfind("TETHER_", 0), 0u) << vars[i].name;
    EXPECT_GT(std::string(vars[i].help).size(), 10u) << vars[i].name;
    for (size_t j = i + 1; j < vars.size(); ++j) EXPECT_STRNE(vars[i].name, vars[j].name);
  }
}

TEST(Config, OverridesAndValidationNameTheVariable) {
  Config c;
  c.set("TETHER_HEAP_SIZE", "12Q");
  Status s = c.validate();
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("TETHER_HEAP_SIZE"), std::string::npos) << s.message();
  c.set("TETHER_HEAP_SIZE", "8M");
  EXPECT_TRUE(c.validate().isOk());
  EXPECT_EQ(c.size("TETHER_HEAP_SIZE"), 8ull << 20);
  EXPECT_TRUE(c.isSet("TETHER_HEAP_SIZE"));
  EXPECT_DOUBLE_EQ(c.seconds("TETHER_TIMEOUT"), 300);
}

TEST(Config, UnknownTetherVariablesAreReported) {
  setenv("TETHER_HEAP_SIZ", "1M", 1);
  setenv("TETHER_TEST_SEED_OF_SOME_TEST", "7", 1);  // TETHER_TEST_*: the test programs' own, never reported
  Config c = Config::fromEnvironment();
  std::vector<std::string> unknown;
  EXPECT_TRUE(c.validate(&unknown).isOk());
  unsetenv("TETHER_HEAP_SIZ");
  unsetenv("TETHER_TEST_SEED_OF_SOME_TEST");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0], "TETHER_HEAP_SIZ");
}

TEST(Log, ParsesLevelAndSubsystems) {
  LogFilter f;
  std::string err;
  ASSERT_TRUE(parseLogSpec("info", &f, &err));
  EXPECT_EQ(f.level, LogLevel::Info);
  EXPECT_EQ(f.mask, ~0u);
  ASSERT_TRUE(parseLogSpec("debug:heap,bootstrap", &f, &err));
  EXPECT_EQ(f.level, LogLevel::Debug);
  EXPECT_EQ(f.mask, static_cast<uint32_t>(LogSys::Heap) | static_cast<uint32_t>(LogSys::Bootstrap));
  EXPECT_FALSE(parseLogSpec("loud", &f, &err));
  EXPECT_NE(err.find("loud"), std::string::npos);
  EXPECT_FALSE(parseLogSpec("info:nosuch", &f, &err));
  EXPECT_NE(err.find("nosuch"), std::string::npos);
}

TEST(Status, CarriesCodeAndContext) {
  Status ok;
  EXPECT_TRUE(ok.isOk());
  Status e(TETHER_ERR_TIMEOUT, "waited");
  EXPECT_FALSE(e.isOk());
  EXPECT_EQ(e.withContext("tether_x").message(), "tether_x: waited");
  Status sys = errnoStatus("open(/nope)", 2);
  EXPECT_EQ(sys.code(), TETHER_ERR_SYSTEM);
  EXPECT_NE(sys.message().find("errno 2"), std::string::npos);
}

// A "no limit" wait passes a huge timeout (the CPU stream emulation uses 1e12 s): it must not wrap into the past.
TEST(Clock, DeadlineRanges) {
  EXPECT_TRUE(Deadline(0).expired());
  EXPECT_TRUE(Deadline(-1).expired());
  EXPECT_FALSE(Deadline(60).expired());
  EXPECT_FALSE(Deadline(1e12).expired());
  EXPECT_FALSE(Deadline(1e300).expired());
  EXPECT_GT(Deadline(1e12).msLeft(), 1000000);
}

// A waiter that serves peers (network progress) calls busy() whenever progress did work: that returns it from the
// sleeping stage to spinning, so a peer still talking to it is answered within a spin. busy() must never make the wait
// unbounded: a waiter that is busy on every call still times out at its deadline.
TEST(Clock, SpinWaitBusyReturnsToSpinningAndKeepsTheDeadline) {
  SpinWait w(60);
  for (int i = 0; i < 5000 && !w.sleeping(); ++i) ASSERT_TRUE(w.next());
  EXPECT_TRUE(w.sleeping());
  w.busy();
  EXPECT_FALSE(w.sleeping());
  ASSERT_TRUE(w.next());
  EXPECT_FALSE(w.sleeping());

  SpinWait always(0.05);
  const uint64_t start = nowNs();
  uint64_t calls = 0;
  while (calls < 1000000000ull) {
    always.busy();
    ++calls;
    if (!always.next()) break;
  }
  EXPECT_LT(calls, 1000000000ull) << "busy() on every call kept the wait from ever seeing its deadline";
  EXPECT_LT(static_cast<double>(nowNs() - start) / 1e9, 5.0);
}
