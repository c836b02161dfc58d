// The TCP bootstrap's wire format (tcp_wire.h): the byte layout of a header and a hello, pinned by hand-written
// bytes (little-endian, protocol version 1), round trips of every field at its extremes, and the secret check.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/tcp_wire.h"

namespace tether::tcp_wire {
namespace {

TEST(TcpWire, HeaderLayoutIsLittleEndian) {
  Header h;
  h.op = kBroadcast;
  h.code = 0x0102;
  h.seq = 0x03040506;
  h.aux = -2;
  h.bytes = 0x0708090a0b0c0d0eull;
  uint8_t b[kHeaderBytes];
  encodeHeader(h, b);
  const std::vector<uint8_t> want = {0x54, 0x54, 0x48, 0x42,  // "TTHB"
                                     7,    0,    0x02, 0x01,  // op, code
                                     0x06, 0x05, 0x04, 0x03,  // seq
                                     0xfe, 0xff, 0xff, 0xff,  // aux -2
                                     0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, 0x07};
  EXPECT_EQ(std::vector<uint8_t>(b, b + kHeaderBytes), want);
}

TEST(TcpWire, HeaderRoundTripAtExtremes) {
  for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, UINT64_MAX})
    for (int32_t aux : {INT32_MIN, -1, 0, INT32_MAX}) {
      Header h;
      h.magic = 0xdeadbeef;
      h.op = UINT16_MAX;
      h.code = 0x8001;
      h.seq = UINT32_MAX;
      h.aux = aux;
      h.bytes = bytes;
      uint8_t b[kHeaderBytes];
      encodeHeader(h, b);
      const Header g = decodeHeader(b);
      EXPECT_EQ(g.magic, h.magic);
      EXPECT_EQ(g.op, h.op);
      EXPECT_EQ(g.code, h.code);
      EXPECT_EQ(g.seq, h.seq);
      EXPECT_EQ(g.aux, h.aux);
      EXPECT_EQ(g.bytes, h.bytes);
    }
}

TEST(TcpWire, FrameIsHeaderThenPayload) {
  Header h;
  h.op = kError;
  h.bytes = 3;
  const std::vector<uint8_t> f = frame(h, "abc", 3);
  ASSERT_EQ(f.size(), kHeaderBytes + 3);
  EXPECT_EQ(decodeHeader(f.data()).op, kError);
  EXPECT_EQ(std::string(f.begin() + kHeaderBytes, f.end()), "abc");
  EXPECT_EQ(frame(h).size(), kHeaderBytes);  // h.bytes is the caller's; no payload given, none sent
}

TEST(TcpWire, HelloLayout) {
  const std::vector<uint8_t> f = helloFrame(5, 0x01020304, "xy");
  ASSERT_EQ(f.size(), kHeaderBytes + kHelloFixedBytes + 2);
  const Header h = decodeHeader(f.data());
  EXPECT_EQ(h.magic, kMagic);
  EXPECT_EQ(h.op, kHello);
  EXPECT_EQ(h.aux, 5);
  EXPECT_EQ(h.bytes, kHelloFixedBytes + 2);
  const std::vector<uint8_t> want = {1, 0, 0, 0, 5, 0, 0, 0, 4, 3, 2, 1, 2, 0, 0, 0, 'x', 'y'};
  EXPECT_EQ(std::vector<uint8_t>(f.begin() + kHeaderBytes, f.end()), want);
  const HelloFixed fixed = decodeHelloFixed(f.data() + kHeaderBytes);
  EXPECT_EQ(fixed.version, kProtocolVersion);
  EXPECT_EQ(fixed.rank, 5);
  EXPECT_EQ(fixed.size, 0x01020304);
  EXPECT_EQ(fixed.secretLen, 2u);
}

TEST(TcpWire, SecretMatchesOnlyTheSameBytes) {
  const std::string s = "job-secret";
  auto bytes = [](const std::string& t) { return reinterpret_cast<const uint8_t*>(t.data()); };
  EXPECT_TRUE(secretMatches(s, bytes(s), s.size()));
  EXPECT_TRUE(secretMatches("", nullptr, 0));
  EXPECT_FALSE(secretMatches(s, bytes("job-secreT"), 10));
  EXPECT_FALSE(secretMatches(s, bytes("Job-secret"), 10));
  EXPECT_FALSE(secretMatches(s, bytes(s), s.size() - 1));           // a prefix
  EXPECT_FALSE(secretMatches(s, bytes("job-secretjob-secret"), 20));  // a repetition (the check wraps `got`)
  EXPECT_FALSE(secretMatches(s, nullptr, 0));
  EXPECT_FALSE(secretMatches("", bytes(s), s.size()));
}

TEST(TcpWire, NamesForMessages) {
  EXPECT_STREQ(opName(kAlltoall), "alltoall");
  EXPECT_STREQ(opName(0), "unknown-op");
  EXPECT_STREQ(rejectText(kRejectDuplicate), "another process already joined with this rank");
  EXPECT_STREQ(rejectText(99), "unknown reason");
}

}  // namespace
}  // namespace tether::tcp_wire
