// The TCP bootstrap's wire format (tcp_wire.h).
#include "bootstrap/tcp_wire.h"

#include <cstring>

namespace tether::tcp_wire {
namespace {

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

const char* opName(uint16_t op) {
  switch (op) {
    case kHello: return "hello";
    case kAccept: return "accept";
    case kReject: return "reject";
    case kAllgather: return "allgather";
    case kBarrier: return "barrier";
    case kAlltoall: return "alltoall";
    case kBroadcast: return "broadcast";
    case kError: return "error";
    default: return "unknown-op";
  }
}

const char* rejectText(uint16_t reason) {
  switch (reason) {
    case kRejectVersion: return "different tether protocol version (mixed tether builds?)";
    case kRejectSecret: return "wrong job secret (TETHER_JOB_SECRET differs from rank 0's)";
    case kRejectSize: return "different job size than rank 0's";
    case kRejectRank: return "rank outside the job";
    case kRejectDuplicate: return "another process already joined with this rank";
    default: return "unknown reason";
  }
}

void encodeHeader(const Header& h, uint8_t* p) {
  put32(p, h.magic);
  put16(p + 4, h.op);
  put16(p + 6, h.code);
  put32(p + 8, h.seq);
  put32(p + 12, static_cast<uint32_t>(h.aux));
  put64(p + 16, h.bytes);
}

Header decodeHeader(const uint8_t* p) {
  Header h;
  h.magic = get32(p);
  h.op = get16(p + 4);
  h.code = get16(p + 6);
  h.seq = get32(p + 8);
  h.aux = static_cast<int32_t>(get32(p + 12));
  h.bytes = get64(p + 16);
  return h;
}

std::vector<uint8_t> frame(const Header& h, const void* payload, size_t payloadBytes) {
  std::vector<uint8_t> f(kHeaderBytes + payloadBytes);
  encodeHeader(h, f.data());
  if (payloadBytes) std::memcpy(f.data() + kHeaderBytes, payload, payloadBytes);
  return f;
}

std::vector<uint8_t> helloFrame(int rank, int size, const std::string& secret) {
  uint8_t fixed[kHelloFixedBytes];
  put32(fixed, kProtocolVersion);
  put32(fixed + 4, static_cast<uint32_t>(rank));
  put32(fixed + 8, static_cast<uint32_t>(size));
  put32(fixed + 12, static_cast<uint32_t>(secret.size()));
  Header h;
  h.op = kHello;
  h.aux = rank;
  h.bytes = kHelloFixedBytes + secret.size();
  std::vector<uint8_t> f = frame(h, fixed, sizeof fixed);
  f.insert(f.end(), secret.begin(), secret.end());
  return f;
}

HelloFixed decodeHelloFixed(const uint8_t* p) {
  HelloFixed h;
  h.version = get32(p);
  h.rank = static_cast<int32_t>(get32(p + 4));
  h.size = static_cast<int32_t>(get32(p + 8));
  h.secretLen = get32(p + 12);
  return h;
}

bool secretMatches(const std::string& expected, const uint8_t* got, size_t gotLen) {
  unsigned diff = expected.size() != gotLen ? 1u : 0u;
  for (size_t i = 0; i < expected.size(); ++i) {
    uint8_t g = gotLen ? got[i % gotLen] : 0;
    diff |= static_cast<unsigned>(static_cast<uint8_t>(expected[i]) ^ g);
  }
  return diff == 0;
}

}  // namespace tether::tcp_wire
