// One version number (#23): the library's tether_version() and tether_get_build_info() agree with the headers'
// TETHER_VERSION_* macros (generated from CMake's project(VERSION)); this binary links the shared libtether.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tether/tether.h"

TEST(Version, RuntimeAgreesWithHeaders) {
  int major = -1, minor = -1, patch = -1;
  const char* s = tether_version(&major, &minor, &patch);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(major, TETHER_VERSION_MAJOR);
  EXPECT_EQ(minor, TETHER_VERSION_MINOR);
  EXPECT_EQ(patch, TETHER_VERSION_PATCH);
  EXPECT_STREQ(s, TETHER_VERSION_STRING);
  char expect[64];
  std::snprintf(expect, sizeof expect, "%d.%d.%d", major, minor, patch);
  EXPECT_EQ(std::string(s), expect);
  EXPECT_EQ(TETHER_VERSION_NUMBER, major * 10000 + minor * 100 + patch);
}

TEST(Version, NullOutputsAreAllowed) { EXPECT_STREQ(tether_version(nullptr, nullptr, nullptr), TETHER_VERSION_STRING); }

TEST(Version, BuildInfoCarriesTheSameVersion) {
  tether_build_info_t b;
  ASSERT_EQ(tether_get_build_info(&b), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(b.version_major, TETHER_VERSION_MAJOR);
  EXPECT_EQ(b.version_minor, TETHER_VERSION_MINOR);
  EXPECT_EQ(b.version_patch, TETHER_VERSION_PATCH);
  EXPECT_GE(b.gpus_visible, 0);
  EXPECT_TRUE(b.cuda == 0 || b.cuda == 1);
  EXPECT_EQ(b.ucx != 0, b.ucx_version[0] != '\0');  // a UCX build names the UCX it loaded, others name none
}

TEST(Version, BuildInfoRefusesNull) {
  EXPECT_EQ(tether_get_build_info(nullptr), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tether_last_error()).find("tether_get_build_info"), std::string::npos);
}
