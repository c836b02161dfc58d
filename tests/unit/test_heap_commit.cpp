// The HOST heap commits memory as it is used: a large TETHER_HEAP_SIZE costs nothing until allocations reach it, and
// an explicit TETHER_HEAP_SIZE above TETHER_HEAP_MAX is refused naming both (it used to be clamped silently and the
// whole limit committed up front).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>

#include "tether/tether.h"

namespace {

// Bytes of memory behind this process's HOST heap file (memfd "tether-heap-<rank>"): fstat's st_blocks counts the
// pages the file holds, whether or not any process has touched them. -1 when the file is not found.
long long heapFileBytes() {
  for (int fd = 0; fd < 4096; ++fd) {
    char link[64], target[PATH_MAX];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = ::readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (std::strstr(target, "memfd:tether-heap-0") == nullptr) continue;
    struct stat st;
    if (::fstat(fd, &st) != 0) return -1;
    return static_cast<long long>(st.st_blocks) * 512;
  }
  return -1;
}

tether_t initWith(const char* const* config) {
  tether_init_attr_t a;
  tether_init_attr_default(&a);
  a.rank = 0;
  a.size = 1;
  a.config = config;
  tether_t w = nullptr;
  EXPECT_EQ(tether_init_attr(&a, &w), TETHER_SUCCESS) << tether_last_error();
  return w;
}

TEST(HeapCommit, LargeHeapSizeCostsNothingUntilUsed) {
  const char* const config[] = {"TETHER_HEAP_SIZE=2G", "TETHER_HEAP_MAX=4G", "TETHER_GPU=none",
                                "TETHER_DEFAULT_SEGMENT=host", "TETHER_TIMEOUT=5", nullptr};
  tether_t w = initWith(config);
  ASSERT_NE(w, nullptr);
  const long long atInit = heapFileBytes();
  ASSERT_GE(atInit, 0) << "the heap's memfd was not found in /proc/self/fd";
  EXPECT_LT(atInit, 16ll << 20) << "a 2G TETHER_HEAP_SIZE committed " << atInit << " bytes at init";

  const size_t big = 256u << 20;
  void* p = nullptr;
  ASSERT_EQ(tether_malloc(w, big, &p), TETHER_SUCCESS) << tether_last_error();
  std::memset(p, 0x5a, big);
  const long long used = heapFileBytes();
  EXPECT_GE(used, static_cast<long long>(big));
  EXPECT_LT(used, 1ll << 30) << "backing should follow the allocations (256M), not the 2G heap size";

  // Growth past TETHER_HEAP_SIZE still works and is backed as well.
  void* q = nullptr;
  ASSERT_EQ(tether_malloc(w, 2040ull << 20, &q), TETHER_SUCCESS) << tether_last_error();
  static_cast<char*>(q)[(2040ull << 20) - 1] = 1;
  EXPECT_GE(heapFileBytes(), static_cast<long long>(big + (2040ull << 20)));
  EXPECT_EQ(tether_free(w, q), TETHER_SUCCESS);
  EXPECT_EQ(tether_free(w, p), TETHER_SUCCESS);
  EXPECT_EQ(tether_finalize(w), TETHER_SUCCESS) << tether_last_error();
}

TEST(HeapCommit, HeapSizeAboveTheLimitIsRefusedNamingBoth) {
  const char* const config[] = {"TETHER_HEAP_SIZE=1T", "TETHER_GPU=none", nullptr};
  tether_init_attr_t a;
  tether_init_attr_default(&a);
  a.rank = 0;
  a.size = 1;
  a.config = config;
  tether_t w = nullptr;
  EXPECT_EQ(tether_init_attr(&a, &w), TETHER_ERR_INVALID_ARG);
  const std::string err = tether_last_error();
  EXPECT_NE(err.find("TETHER_HEAP_SIZE='1T' is larger than TETHER_HEAP_MAX='8G'"), std::string::npos) << err;
  if (w) tether_finalize(w);
}

}  // namespace
