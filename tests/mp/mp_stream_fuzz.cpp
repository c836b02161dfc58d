// The stream fuzz (tests/mp/stream_fuzz.h) through the CPU emulation of the stream-op layer (one worker thread per
// emulated stream), HOST objects. MP_NO_HOST_ATOMICS=1 / MP_CAPTURING=1 as in mp_stream: AMOs and ADD signals through
// the proxy; every stream reports a CUDA graph capture.
#include <cstdlib>
#include <string>

#include "mp_cpu_stream.h"
#include "stream_fuzz.h"

namespace {

class CpuEnv : public stream_fuzz::Env {
 public:
  explicit CpuEnv(tether::StreamOps* so) : so_(so) {}
  void* createStream() override {
    void* s = nullptr;
    MP_CHECK(so_->createStream(&s).isOk());
    return s;
  }
  void destroyStream(void* s) override { MP_CHECK(so_->destroyStream(s).isOk()); }
  std::string synchronize(void* s) override {
    const tether::Status st = so_->synchronize(s);
    return st.isOk() ? std::string() : st.message();
  }
  unsigned char* allocLocal(size_t bytes) override { return new unsigned char[bytes]; }
  void freeLocal(unsigned char* p) override { delete[] p; }

 private:
  tether::StreamOps* so_;
};

bool envFlag(const char* name) {
  const char* e = std::getenv(name);
  return e && e[0] == '1';
}

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  CpuEnv env(mp::useCpuStreams(w, !envFlag("MP_NO_HOST_ATOMICS"), envFlag("MP_CAPTURING")));
  env.typedOps = true;  // (gpu_stream_fuzz not yet: its pinned local buffers take no GPU route, datatype.h)
  stream_fuzz::run(w, env, "mp_stream_fuzz", 1000);
  return mp::finish();
}
