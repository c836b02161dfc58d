// Enum arguments of the C API with out-of-range values (issue 24 §5): every call that takes an enum validates the
// integer before it is used as the enum, so the asan/UBSan build (-fsanitize=enum halts on loading an invalid enum
// value) sees a clear TETHER_ERR_INVALID_ARG naming the value, as the release build does. The values come from C
// (enum_args.c), where passing them is well defined.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "tether/datatype.h"
#include "tether/tether.h"

extern "C" {
tether_status_t enum_type_basic(int basic, tether_type_t* newtype);
tether_status_t enum_type_subarray(int order, tether_type_t oldtype, tether_type_t* newtype);
}

namespace {

const int kBad[] = {-1, INT_MIN, -2147483647, 1000, INT_MAX};

bool mentions(const char* msg, const std::string& what) { return std::string(msg).find(what) != std::string::npos; }

TEST(EnumArgs, TypeBasic) {
  for (int v : kBad) {
    tether_type_t t = nullptr;
    EXPECT_EQ(enum_type_basic(v, &t), TETHER_ERR_INVALID_ARG) << v;
    EXPECT_EQ(t, nullptr);
    EXPECT_TRUE(mentions(tether_type_last_error(), "invalid basic type " + std::to_string(v)))
        << tether_type_last_error();
  }
  EXPECT_EQ(enum_type_basic(TETHER_BASIC_COUNT, nullptr), TETHER_ERR_INVALID_ARG);
  tether_type_t t = nullptr;
  ASSERT_EQ(enum_type_basic(TETHER_BASIC_DOUBLE_COMPLEX, &t), TETHER_SUCCESS);
  EXPECT_EQ(tether_type_free(&t), TETHER_SUCCESS);
}

TEST(EnumArgs, TypeSubarrayOrder) {
  tether_type_t i32 = nullptr;
  ASSERT_EQ(tether_type_basic(TETHER_BASIC_INT32, &i32), TETHER_SUCCESS);
  for (int v : kBad) {
    tether_type_t t = nullptr;
    EXPECT_EQ(enum_type_subarray(v, i32, &t), TETHER_ERR_INVALID_ARG) << v;
    EXPECT_EQ(t, nullptr);
    EXPECT_TRUE(mentions(tether_type_last_error(), "invalid order " + std::to_string(v))) << tether_type_last_error();
  }
  for (int v : {0, 1}) {
    tether_type_t t = nullptr;
    ASSERT_EQ(enum_type_subarray(v, i32, &t), TETHER_SUCCESS) << tether_type_last_error();
    EXPECT_EQ(tether_type_free(&t), TETHER_SUCCESS);
  }
  EXPECT_EQ(tether_type_free(&i32), TETHER_SUCCESS);
}

}  // namespace
