/* C callers of the enum-taking C API (tests/datatype/test_enum_args.cpp). In C an enum argument may hold any value of
 * its compatible integer type, so a C program can pass an out-of-range one; in C++ merely forming such a value is
 * undefined. These wrappers take the value as an int and pass it through as the enum, as a C caller would. */
#include "tether/datatype.h"
#include "tether/tether.h"

tether_status_t enum_type_basic(int basic, tether_type_t* newtype) {
  return tether_type_basic((tether_basic_t)basic, newtype);
}

tether_status_t enum_type_subarray(int order, tether_type_t oldtype, tether_type_t* newtype) {
  int64_t sizes[1] = {4}, subsizes[1] = {2}, starts[1] = {1};
  return tether_type_subarray(1, sizes, subsizes, starts, (tether_order_t)order, oldtype, newtype);
}
