// Config ranges (every numeric TETHER_* variable is bounded), the heap size/limit relation, the warning rate limiter
// and the progress-note timer of long waits.
#include <gtest/gtest.h>

#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"

using namespace tether;

namespace {

Status validateWith(const char* name, const char* value) {
  Config c;
  c.set(name, value);
  return c.validate();
}

// The value is refused with a message naming the variable, the value and the allowed range.
void expectOutOfRange(const char* name, const char* value, const char* range) {
  Status s = validateWith(name, value);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG) << name << "=" << value;
  EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::string("'") + value + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(range), std::string::npos) << s.message();
}

TEST(ConfigRange, TheIssueExamplesAreRefused) {
  expectOutOfRange("TETHER_TIMEOUT", "1e300", "allowed 0.001 to 2.592e+06 seconds");
  expectOutOfRange("TETHER_COPY_STREAMS", "-1", "allowed 1 to 64");
}

TEST(ConfigRange, EveryNumericVariableHasARangeHoldingItsDefault) {
  for (const auto& v : configVars()) {
    if (v.type != ConfigType::Int && v.type != ConfigType::Size && v.type != ConfigType::Seconds) continue;
    EXPECT_LT(v.min, v.max) << v.name << " has no range";
    Config c;
    c.set(v.name, v.defaultValue);
    EXPECT_TRUE(c.validate().isOk()) << v.name;
  }
}

TEST(ConfigRange, BoundsAreInclusiveAndBeyondThemIsRefused) {
  EXPECT_TRUE(validateWith("TETHER_COPY_STREAMS", "1").isOk());
  EXPECT_TRUE(validateWith("TETHER_COPY_STREAMS", "64").isOk());
  expectOutOfRange("TETHER_COPY_STREAMS", "0", "1 to 64");
  expectOutOfRange("TETHER_COPY_STREAMS", "65", "1 to 64");
  EXPECT_TRUE(validateWith("TETHER_PROXY_SLOTS", "2").isOk());
  expectOutOfRange("TETHER_PROXY_SLOTS", "1", "2 to 1048576");
  expectOutOfRange("TETHER_PROXY_SLOTS", "4194304", "2 to 1048576");
  EXPECT_TRUE(validateWith("TETHER_TIMEOUT", "1ms").isOk());
  EXPECT_EQ(validateWith("TETHER_TIMEOUT", "30d").code(), TETHER_ERR_INVALID_ARG);  // not a duration
  expectOutOfRange("TETHER_TIMEOUT", "0", "0.001 to");
  expectOutOfRange("TETHER_TIMEOUT", "100000m", "0.001 to");
  expectOutOfRange("TETHER_KILL_GRACE", "7200", "0 to 3600 seconds");
  expectOutOfRange("TETHER_WAIT_REPORT", "1e9", "0 to 2.592e+06 seconds");
  expectOutOfRange("TETHER_HEAP_MAX", "65T", "0 to 64T bytes");
  EXPECT_TRUE(validateWith("TETHER_HEAP_MAX", "64T").isOk());
  expectOutOfRange("TETHER_DEVICE_HEAP_MAX", "16000000T", "0 to 64T bytes");
  expectOutOfRange("TETHER_COPY_SPLIT", "128T", "0 to 64T bytes");
  expectOutOfRange("TETHER_RANK", "-2", "-1 to 2147483647");
  expectOutOfRange("TETHER_SIZE", "4294967296", "-1 to 2147483647");
  expectOutOfRange("TETHER_BOOTSTRAP_FD", "-7", "-1 to 2147483647");
}

TEST(ConfigRange, NanInfinityAndNegativeDurationsAreNotDurations) {
  for (const char* bad : {"nan", "inf", "-inf", "-1", "1e400"}) {
    Status s = validateWith("TETHER_TIMEOUT", bad);
    EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG) << bad;
    EXPECT_NE(s.message().find("TETHER_TIMEOUT"), std::string::npos) << s.message();
  }
  EXPECT_EQ(validateWith("TETHER_HEAP_SIZE", "-1M").code(), TETHER_ERR_INVALID_ARG);
}

TEST(ConfigRange, ExplicitHeapSizeAboveItsLimitIsRefusedNamingBoth) {
  Config c;
  c.set("TETHER_HEAP_SIZE", "1T");
  Status s = c.validate();
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("TETHER_HEAP_SIZE='1T' is larger than TETHER_HEAP_MAX='8G' (its default)"),
            std::string::npos)
      << s.message();
  c.set("TETHER_HEAP_MAX", "2T");
  EXPECT_TRUE(c.validate().isOk());
  Config d;
  d.set("TETHER_DEVICE_HEAP_SIZE", "1G");
  d.set("TETHER_DEVICE_HEAP_MAX", "512M");
  s = d.validate();
  EXPECT_NE(s.message().find("TETHER_DEVICE_HEAP_SIZE='1G' is larger than TETHER_DEVICE_HEAP_MAX='512M'"),
            std::string::npos)
      << s.message();
  // A defaulted initial size (64M) under a small explicit limit is lowered by the heap's owner, not refused.
  Config e;
  e.set("TETHER_HEAP_MAX", "8M");
  EXPECT_TRUE(e.validate().isOk());
}

}  // namespace

namespace {

TEST(LogLimiter, FirstBurstPassesThenCountsAndReportsOncePerInterval) {
  LogLimiter lim("test warnings", 3, 10.0);
  const uint64_t s = 1000000000ull;
  uint64_t sup = 99;
  int printed = 0;
  // A flood of 40,000 messages within one 10 s window: 3 printed.
  for (int i = 0; i < 40000; ++i) printed += lim.admit(5 * s + static_cast<uint64_t>(i) * 100000, &sup) ? 1 : 0;
  EXPECT_EQ(printed, 3);
  EXPECT_EQ(lim.suppressedTotal(), 39997u);
  // Still inside the window (started at 5 s): suppressed.
  EXPECT_FALSE(lim.admit(14 * s, &sup));
  // Next window: printed, carrying the count of everything suppressed since the last printed message.
  ASSERT_TRUE(lim.admit(15 * s, &sup));
  EXPECT_EQ(sup, 39998u);
  ASSERT_TRUE(lim.admit(15 * s + 1, &sup));
  EXPECT_EQ(sup, 0u);  // reported once
  EXPECT_TRUE(lim.admit(15 * s + 2, &sup));
  EXPECT_FALSE(lim.admit(15 * s + 3, &sup));
  EXPECT_EQ(lim.suppressedTotal(), 39999u);
}

TEST(LogLimiter, WarnPrintsAtMostBurstPlusSummary) {
  testing::internal::CaptureStderr();
  {
    LogLimiter lim("refused connections", 2, 3600);
    for (int i = 0; i < 1000; ++i) lim.warn(LogSys::Bootstrap, "refused connection #%d", i);
  }
  const std::string out = testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (char c : out) lines += c == '\n';
  EXPECT_EQ(lines, 3u) << out;
  EXPECT_NE(out.find("refused connection #0"), std::string::npos) << out;
  EXPECT_NE(out.find("refused connection #1"), std::string::npos) << out;
  EXPECT_EQ(out.find("refused connection #2"), std::string::npos) << out;
  EXPECT_NE(out.find("998 more refused connections suppressed"), std::string::npos) << out;
}

}  // namespace
