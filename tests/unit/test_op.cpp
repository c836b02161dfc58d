// One validator (core/op.h: checkOp) behind the host calls, the *_on_stream calls and prepared sets: the same bad
// arguments give the same status and the same message (after the call's name) on every entry. Before checkOp, the
// stream AMO said "fetched is NULL for a fetching operation" and "dest %p is not aligned to 8 bytes" where the host
// call said "(fetch_add): fetched is NULL" and "(add): dest %p is not aligned to 8 bytes". One 1-PE instance with the
// CPU emulation of the stream-op layer; the valid forms run too, so a check that refused everything would fail here.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/stream_ops.h"
#include "cpu_stream_world.h"
#include "tether/tether.h"

namespace {

struct Outcome {
  tether_status_t status;
  std::string call;  // the entry's name: the message must start with it
  std::string message;
};

class OneValidator : public CpuStreamWorld<8> {
 protected:
  static Outcome run(const char* call, tether_status_t s) { return Outcome{s, call, tether_last_error()}; }

  // Every outcome fails with the first one's status, its message names its call and, after the name, reads the same.
  static void expectSame(const std::vector<Outcome>& all, const char* what) {
    ASSERT_FALSE(all.empty());
    const Outcome& first = all[0];
    EXPECT_NE(first.status, TETHER_SUCCESS) << what;
    std::string tail;
    for (const Outcome& o : all) {
      EXPECT_EQ(o.status, first.status) << what << ": " << o.call << ": " << o.message;
      const size_t at = o.message.find(o.call);
      ASSERT_NE(at, std::string::npos) << what << ": '" << o.message << "' does not name " << o.call;
      const std::string rest = o.message.substr(at + o.call.size());
      if (&o == &first)
        tail = rest;
      else
        EXPECT_EQ(rest, tail) << what << ": " << o.call << " says '" << o.message << "', " << first.call
                              << " says '" << first.message << "'";
    }
  }

  // tether_prepare of one op; frees the set if it was made.
  static tether_status_t prepareOne(const tether_op_desc_t& op) {
    tether_op_set_t set = nullptr;
    const tether_status_t s = tether_prepare(w_, &op, 1, &set);
    if (set) tether_op_set_free(set);
    return s;
  }
  static tether_op_desc_t desc(tether_op_kind_t kind, void* dest, const void* src, size_t n, int pe) {
    tether_op_desc_t d{};
    d.kind = kind;
    d.dest = dest;
    d.src = src;
    d.nbytes = n;
    d.pe = pe;
    d.sig_op = TETHER_SIGNAL_SET;
    d.cmp = TETHER_CMP_EQ;
    return d;
  }

};

TEST_F(OneValidator, PutGetSameChecksEverywhere) {
  char local[16] = {};
  struct Case {
    const char* what;
    void* dest;
    const void* src;
    size_t n;
    int pe;
  };
  const Case puts[] = {
      {"PE out of range", words_, local, 8, 5},
      {"negative PE", words_, local, 8, -1},
      {"src NULL", words_, nullptr, 8, 0},
      {"dest not symmetric", local, local, 8, 0},
      {"dest past the heap's end", words_, local, size_t{1} << 40, 0},
  };
  for (const Case& c : puts) {
    expectSame({run("tether_put", tether_put(w_, c.dest, c.src, c.n, c.pe)),
                run("tether_putmem_on_stream", tether_putmem_on_stream(w_, c.dest, c.src, c.n, c.pe, stream_)),
                run("tether_prepare", prepareOne(desc(TETHER_OP_PUT, c.dest, c.src, c.n, c.pe)))},
               c.what);
  }
  const Case gets[] = {
      {"PE out of range", local, words_, 8, 5},
      {"dest NULL", nullptr, words_, 8, 0},
      {"src not symmetric", local, local, 8, 0},
      {"src past the heap's end", local, words_, size_t{1} << 40, 0},
  };
  for (const Case& c : gets) {
    expectSame({run("tether_get", tether_get(w_, c.dest, c.src, c.n, c.pe)),
                run("tether_getmem_on_stream", tether_getmem_on_stream(w_, c.dest, c.src, c.n, c.pe, stream_)),
                run("tether_prepare", prepareOne(desc(TETHER_OP_GET, c.dest, c.src, c.n, c.pe)))},
               c.what);
  }
  // The valid forms pass every entry.
  const uint64_t v = 42;
  EXPECT_EQ(tether_put(w_, &words_[1], &v, 8, 0), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_putmem_on_stream(w_, &words_[2], &v, 8, 0, stream_), TETHER_SUCCESS) << tether_last_error();
  sync();
  EXPECT_EQ(words_[1], 42u);
  EXPECT_EQ(words_[2], 42u);
  EXPECT_EQ(prepareOne(desc(TETHER_OP_PUT, &words_[3], &v, 8, 0)), TETHER_SUCCESS) << tether_last_error();
}

TEST_F(OneValidator, SignalsSameChecksEverywhere) {
  char local[16] = {};
  uint64_t* misaligned = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(&words_[4]) + 4);
  uint64_t localWord = 0;
  struct Case {
    const char* what;
    uint64_t* sig;
    int pe;
  };
  const Case cases[] = {{"PE out of range", &words_[0], 7}, {"sig not 8-byte aligned", misaligned, 0},
                        {"sig not symmetric", &localWord, 0}};
  for (const Case& c : cases) {
    tether_op_desc_t ps = desc(TETHER_OP_PUT_SIGNAL, &words_[1], local, 8, c.pe);
    ps.sig_addr = c.sig;
    expectSame({run("tether_put_signal",
                    tether_put_signal(w_, &words_[1], local, 8, c.sig, 1, TETHER_SIGNAL_SET, c.pe)),
                run("tether_putmem_signal_on_stream", tether_putmem_signal_on_stream(w_, &words_[1], local, 8, c.sig,
                                                                                     1, TETHER_SIGNAL_SET, c.pe,
                                                                                     stream_)),
                run("tether_prepare", prepareOne(ps))},
               c.what);
    tether_op_desc_t s = desc(TETHER_OP_SIGNAL, nullptr, nullptr, 0, c.pe);
    s.sig_addr = c.sig;
    expectSame({run("tether_signal_op", tether_signal_op(w_, c.sig, 1, TETHER_SIGNAL_ADD, c.pe)),
                run("tether_signal_op_on_stream", tether_signal_op_on_stream(w_, c.sig, 1, TETHER_SIGNAL_ADD, c.pe,
                                                                             stream_)),
                run("tether_prepare", prepareOne(s))},
               c.what);
  }
  EXPECT_EQ(tether_signal_op_on_stream(w_, &words_[0], 3, TETHER_SIGNAL_ADD, 0, stream_), TETHER_SUCCESS)
      << tether_last_error();
  sync();
  EXPECT_EQ(words_[0], 3u);
}

TEST_F(OneValidator, AtomicsSameChecksHostAndStream) {
  uint64_t* misaligned = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(&words_[5]) + 4);
  uint64_t local = 0;
  const uint64_t one = 1;
  struct Case {
    const char* what;
    tether_amo_t op;
    uint64_t* dest;
    uint64_t* fetched;
    int pe;
  };
  const Case cases[] = {
      {"PE out of range", TETHER_AMO_ADD, &words_[5], nullptr, 9},
      {"fetched NULL for a fetching AMO", TETHER_AMO_FETCH_ADD, &words_[5], nullptr, 0},
      {"dest not 8-byte aligned", TETHER_AMO_ADD, misaligned, nullptr, 0},
      {"dest not symmetric", TETHER_AMO_SET, &local, nullptr, 0},
  };
  for (const Case& c : cases)
    expectSame({run("tether_atomic", tether_atomic(w_, c.op, TETHER_UINT64, c.dest, &one, nullptr, c.fetched, c.pe)),
                run("tether_atomic_on_stream", tether_atomic_on_stream(w_, c.op, TETHER_UINT64, c.dest, &one, nullptr,
                                                                       c.fetched, c.pe, stream_))},
               c.what);
  EXPECT_EQ(tether_atomic(w_, TETHER_AMO_ADD, TETHER_UINT64, &words_[6], &one, nullptr, nullptr, 0), TETHER_SUCCESS)
      << tether_last_error();
  EXPECT_EQ(tether_atomic_on_stream(w_, TETHER_AMO_ADD, TETHER_UINT64, &words_[6], &one, nullptr, nullptr, 0, stream_),
            TETHER_SUCCESS)
      << tether_last_error();
  sync();
  EXPECT_EQ(words_[6], 2u);
}

}  // namespace
