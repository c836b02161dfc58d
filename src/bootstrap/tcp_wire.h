// The TCP bootstrap's wire format (protocol version 1, little-endian), apart from any socket: frame headers, the
// hello a joining rank sends, and the names of ops and reject reasons for messages. Pure functions; the unit test
// pins the byte layout.
//
// Header of 24 bytes {u32 magic "TTHB", u16 op, u16 code, u32 seq, i32 aux, u64 bytes}.
//   Hello:    aux = rank, bytes = payload length; payload {u32 version, i32 rank, i32 size, u32 secretLen, secret}.
//   Accept:   aux = size.   Reject: code = reason.   Error: code = tether_status_t, payload = message text.
//   Collective request: op, seq, aux = root (broadcast), bytes = the caller's byte count; payload as the op needs.
//   Collective reply:   op, seq, bytes = payload length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tether::tcp_wire {

constexpr uint32_t kMagic = 0x42485454;  // "TTHB"
constexpr uint32_t kProtocolVersion = 1;
constexpr size_t kHeaderBytes = 24;
constexpr size_t kHelloFixedBytes = 16;  // the hello payload before the secret
constexpr size_t kMaxSecretBytes = 1024;
constexpr size_t kMaxErrorText = 4096;

enum Op : uint16_t {
  kHello = 1,
  kAccept = 2,
  kReject = 3,
  kAllgather = 4,
  kBarrier = 5,
  kAlltoall = 6,
  kBroadcast = 7,
  kError = 8,
};
const char* opName(uint16_t op);  // "unknown-op" for a value outside Op

enum RejectReason : uint16_t {
  kRejectVersion = 1,
  kRejectSecret = 2,
  kRejectSize = 3,
  kRejectRank = 4,
  kRejectDuplicate = 5,
};
const char* rejectText(uint16_t reason);  // what the refused rank is told; "unknown reason" outside RejectReason

struct Header {
  uint32_t magic = kMagic;
  uint16_t op = 0;
  uint16_t code = 0;
  uint32_t seq = 0;
  int32_t aux = 0;
  uint64_t bytes = 0;
};
void encodeHeader(const Header& h, uint8_t* p);  // writes kHeaderBytes at p
Header decodeHeader(const uint8_t* p);           // reads kHeaderBytes at p; the caller checks magic and op

// A whole frame: the header followed by `payload` (h.bytes is the caller's: a request's count need not be its
// payload's length).
std::vector<uint8_t> frame(const Header& h, const void* payload = nullptr, size_t payloadBytes = 0);

// The hello frame of a rank joining a job (the secret at most kMaxSecretBytes: the caller checks).
std::vector<uint8_t> helloFrame(int rank, int size, const std::string& secret);

// The fixed part of a hello payload (kHelloFixedBytes at p); the secret follows it.
struct HelloFixed {
  uint32_t version = 0;
  int32_t rank = 0;
  int32_t size = 0;
  uint32_t secretLen = 0;
};
HelloFixed decodeHelloFixed(const uint8_t* p);

// Whether `got` (gotLen bytes) is `expected`, in time independent of the contents of `got` (its length and the
// expected length are not secret).
bool secretMatches(const std::string& expected, const uint8_t* got, size_t gotLen);

}  // namespace tether::tcp_wire
