// The device API proxy decodes a ring slot into the operation record (decodeProxyDesc -> ProxyOp: an Op plus the
// ring's segment/offset addressing) and runs it through runOp, the host calls' execution (core/op.h). Decoding is
// checked field by field; execution end to end on a 1-PE instance under TETHER_FORCE_PROXY=1, whose CPU ring the
// test feeds with the host-compiled device API (every descriptor kind against this PE's HOST segment). A PUT_SIGNAL
// whose signal word is misaligned must fail without writing its data: before runOp the proxy put the data first and
// checked the signal word after it (core/proxy.cpp at 1ae9b3a), so that test fails on the old code.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/op.h"
#include "tether/device.cuh"
#include "tether/tether.h"

namespace {

namespace dd = tether::device::detail;
using tether::Op;
using tether::ProxyOp;

tether_proxy_desc_t desc(uint32_t op, int pe, uint64_t offset, uint64_t size, uint64_t local, uint64_t value,
                         uint64_t aux) {
  tether_proxy_desc_t d{};
  d.op = op;
  d.pe = pe;
  d.offset = offset;
  d.size = size;
  d.local = local;
  d.value = value;
  d.aux = aux;
  return d;
}

TEST(ProxyDecode, EachCodeBecomesItsOp) {
  uint64_t result = 0;
  ProxyOp t;
  const uint64_t local = 0x1000;

  tether::decodeProxyDesc(desc(TETHER_PROXY_OP_PUT | 1u << 8, 3, 64, 100, local, 0, 0), &result, &t);
  EXPECT_EQ(t.op.kind, Op::Put);
  EXPECT_EQ(t.op.pe, 3);
  EXPECT_EQ(t.op.nbytes, 100u);
  EXPECT_EQ(t.op.src, reinterpret_cast<const void*>(local));
  EXPECT_EQ(t.segKind, 1u);
  EXPECT_EQ(t.offset, 64u);
  EXPECT_EQ(t.n, 100u);
  EXPECT_FALSE(t.fetch);

  tether::decodeProxyDesc(desc(TETHER_PROXY_OP_PUT_INLINE, 1, 8, 4, 0, 0xabcd, 0), &result, &t);
  EXPECT_EQ(t.op.kind, Op::P);
  EXPECT_EQ(t.op.value, 0xabcdu);
  EXPECT_EQ(t.op.nbytes, 4u);

  tether::decodeProxyDesc(desc(TETHER_PROXY_OP_GET, 1, 8, 16, local, 0, 0), &result, &t);
  EXPECT_EQ(t.op.kind, Op::Get);
  EXPECT_EQ(t.op.dest, reinterpret_cast<void*>(local));

  tether::decodeProxyDesc(desc(TETHER_PROXY_OP_GET_INLINE | TETHER_PROXY_FETCH, 1, 8, 8, 0, 0, 0), &result, &t);
  EXPECT_EQ(t.op.kind, Op::Get);
  EXPECT_EQ(t.op.dest, &result);
  EXPECT_TRUE(t.fetch);

  const uint32_t amo = TETHER_PROXY_OP_AMO | 2u << 8 | uint32_t{TETHER_AMO_COMPARE_SWAP} << 20 | TETHER_PROXY_FETCH;
  tether::decodeProxyDesc(desc(amo, 2, 16, 4, 0, 7, 9), &result, &t);
  EXPECT_EQ(t.op.kind, Op::Amo);
  EXPECT_EQ(t.op.amo, TETHER_AMO_COMPARE_SWAP);
  EXPECT_EQ(t.op.nbytes, 4u);
  EXPECT_EQ(t.n, 4u);
  EXPECT_EQ(t.op.value, 7u);
  EXPECT_EQ(t.op.cond, 9u);
  EXPECT_EQ(t.op.fetched, &result);
  EXPECT_EQ(t.segKind, 2u);

  tether::decodeProxyDesc(desc(TETHER_PROXY_OP_SIGNAL | 1u << 16, 0, 24, 0, 0, 5, 0), &result, &t);
  EXPECT_EQ(t.op.kind, Op::Signal);
  EXPECT_EQ(t.op.sigOp, TETHER_SIGNAL_ADD);
  EXPECT_EQ(t.op.value, 5u);
  EXPECT_EQ(t.n, 8u);

  const uint32_t ps = TETHER_PROXY_OP_PUT_SIGNAL | 1u << 8 | 2u << 12;
  tether::decodeProxyDesc(desc(ps, 1, 32, 12, local, 6, 40), &result, &t);
  EXPECT_EQ(t.op.kind, Op::PutSignal);
  EXPECT_EQ(t.op.sigOp, TETHER_SIGNAL_SET);
  EXPECT_EQ(t.op.src, reinterpret_cast<const void*>(local));
  EXPECT_EQ(t.sigKind, 2u);
  EXPECT_EQ(t.sigOffset, 40u);
  EXPECT_EQ(t.op.value, 6u);

  // Unknown codes and AMOs decode to something harmless; checkProxyDesc and the proxy name them.
  tether::decodeProxyDesc(desc(0x7f, 1, 0, 8, 0, 0, 0), &result, &t);
  EXPECT_EQ(t.code, 0x7fu);
  EXPECT_EQ(t.op.kind, Op::Quiet);
  tether::decodeProxyDesc(desc(TETHER_PROXY_OP_AMO | 0xffu << 20, 1, 0, 8, 0, 0, 0), &result, &t);
  EXPECT_EQ(t.amoCode, 0xffu);
  EXPECT_EQ(t.op.amo, TETHER_AMO_ADD);

  // The World-free checks, with their messages.
  tether::decodeProxyDesc(desc(TETHER_PROXY_OP_PUT_INLINE, 1, 0, 9, 0, 0, 0), &result, &t);
  tether::Status s = tether::checkProxyDesc("proxy", t);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(s.message(), "proxy: inline operation of 9 bytes (at most 8)");
  tether::decodeProxyDesc(desc(TETHER_PROXY_OP_AMO, 1, 4, 8, 0, 0, 0), &result, &t);
  s = tether::checkProxyDesc("proxy", t);
  EXPECT_EQ(s.message(), "proxy: 8-byte word at offset 0x4 (4- or 8-byte aligned words only)");
}

// One PE whose device handle reaches its own HOST segment through the proxy's CPU ring.
class ProxyRing : public ::testing::Test {
 protected:
  static constexpr size_t kBytes = 4096;
  static void SetUpTestSuite() {
    setenv("TETHER_FORCE_PROXY", "1", 1);
    setenv("TETHER_TIMEOUT", "20", 1);
    ASSERT_EQ(tether_init(&w_), TETHER_SUCCESS) << tether_last_error();
    void* p = nullptr;
    ASSERT_EQ(tether_calloc(w_, 1, kBytes, &p), TETHER_SUCCESS) << tether_last_error();
    sym_ = static_cast<char*>(p);
    ASSERT_EQ(tether_device_handle_cpu(w_, &h_), TETHER_SUCCESS) << tether_last_error();
    ASSERT_TRUE(h_.proxy_ring) << "TETHER_FORCE_PROXY=1 gives every handle a ring";
  }
  static void TearDownTestSuite() {
    // The failing test leaves the proxy's error word set: quiet keeps reporting it, finalize need not succeed.
    if (sym_) (void)tether_free(w_, sym_);
    (void)tether_finalize(w_);
    unsetenv("TETHER_FORCE_PROXY");
    unsetenv("TETHER_TIMEOUT");
  }
  static uint64_t off(const void* p) {
    return reinterpret_cast<uint64_t>(p) - h_.seg[TETHER_DEVICE_SEG_HOST].sym_base;
  }
  static uint32_t code(uint32_t op) { return dd::proxyOp(op, TETHER_DEVICE_SEG_HOST); }
  // Posts a non-fetching descriptor and waits for it (aborts the test binary on a proxy error, as a kernel traps).
  static void run(uint32_t op, uint64_t offset, uint64_t size, const void* local, uint64_t value, uint64_t aux) {
    dd::proxyWaitDone(h_, dd::proxyPost(h_, op, 0, offset, size, local, value, aux));
  }
  static uint64_t fetch(uint32_t op, uint64_t offset, uint64_t size, uint64_t value, uint64_t aux) {
    return dd::proxyResult(h_, dd::proxyPost(h_, op | TETHER_PROXY_FETCH, 0, offset, size, nullptr, value, aux));
  }

  static inline tether_t w_ = nullptr;
  static inline char* sym_ = nullptr;
  static inline tether_device_handle_t h_{};
};

TEST_F(ProxyRing, EveryDescriptorKindRunsThroughTheHostExecution) {
  char src[64];
  for (int i = 0; i < 64; ++i) src[i] = static_cast<char>(i + 1);
  run(code(TETHER_PROXY_OP_PUT), off(sym_), 64, src, 0, 0);
  EXPECT_EQ(std::memcmp(sym_, src, 64), 0);

  run(code(TETHER_PROXY_OP_PUT_INLINE), off(sym_ + 64), 3, nullptr, 0x030201, 0);
  EXPECT_EQ(sym_[64], 1);
  EXPECT_EQ(sym_[66], 3);
  EXPECT_EQ(sym_[67], 0) << "only size bytes of the inline value";

  char back[64] = {};
  run(code(TETHER_PROXY_OP_GET), off(sym_), 64, back, 0, 0);
  EXPECT_EQ(std::memcmp(back, src, 64), 0);
  EXPECT_EQ(fetch(code(TETHER_PROXY_OP_GET_INLINE), off(sym_ + 8), 8, 0, 0), 0x100f0e0d0c0b0a09u);

  uint64_t* word = reinterpret_cast<uint64_t*>(sym_ + 128);
  *word = 40;
  const uint32_t fadd = code(TETHER_PROXY_OP_AMO) | uint32_t{TETHER_AMO_FETCH_ADD} << 20;
  EXPECT_EQ(fetch(fadd, off(word), 8, 2, 0), 40u);
  EXPECT_EQ(*word, 42u);
  const uint32_t cswap = code(TETHER_PROXY_OP_AMO) | uint32_t{TETHER_AMO_COMPARE_SWAP} << 20;
  EXPECT_EQ(fetch(cswap, off(word), 8, 7, 42), 42u);
  EXPECT_EQ(*word, 7u);

  uint64_t* sig = reinterpret_cast<uint64_t*>(sym_ + 256);
  run(code(TETHER_PROXY_OP_SIGNAL) | 1u << 16, off(sig), 0, nullptr, 5, 0);
  run(code(TETHER_PROXY_OP_SIGNAL) | 1u << 16, off(sig), 0, nullptr, 5, 0);
  EXPECT_EQ(*sig, 10u);

  const uint32_t ps = code(TETHER_PROXY_OP_PUT_SIGNAL) | uint32_t{TETHER_DEVICE_SEG_HOST} << 12;
  run(ps, off(sym_ + 512), 64, src, 99, off(sig));
  EXPECT_EQ(std::memcmp(sym_ + 512, src, 64), 0);
  EXPECT_EQ(*sig, 99u);
  EXPECT_EQ(tether_quiet(w_), TETHER_SUCCESS) << tether_last_error();
}

// Runs last in this suite (its error word stays set).
TEST_F(ProxyRing, ZzBadSignalWordFailsBeforeTheDataIsWritten) {
  char src[32];
  std::memset(src, 0x5a, sizeof src);
  char* dst = sym_ + 1024;
  std::memset(dst, 0, sizeof src);
  const uint32_t ps = code(TETHER_PROXY_OP_PUT_SIGNAL) | uint32_t{TETHER_DEVICE_SEG_HOST} << 12;
  (void)dd::proxyPost(h_, ps, 0, off(dst), sizeof src, src, 1, off(sym_ + 2048) + 4);  // signal word misaligned
  EXPECT_EQ(tether_quiet(w_), TETHER_ERR_INTERNAL);
  EXPECT_NE(std::string(tether_last_error()).find("could not be executed"), std::string::npos) << tether_last_error();
  for (size_t i = 0; i < sizeof src; ++i) ASSERT_EQ(dst[i], 0) << "byte " << i << " written by a failed descriptor";
}

}  // namespace
