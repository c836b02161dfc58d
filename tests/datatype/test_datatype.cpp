#include <gtest/gtest.h>
TEST(Datatype, Placeholder) {}
