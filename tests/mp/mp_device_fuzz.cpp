// The device fuzz (tests/mp/device_fuzz.h) with the device API compiled for the host: each round's "kernel" is a CPU
// block of kWriters warps of kWarp CPU threads (HostScope), HOST objects. TETHER_FORCE_PROXY=1: every other PE through
// the proxy ring.
#include <string>
#include <thread>
#include <vector>

#include "device_fuzz.h"

namespace {

constexpr int kWarp = 2;  // CPU threads per "warp"

class HostEnv : public device_fuzz::Env {
 public:
  unsigned char* allocLocal(size_t bytes) override { return new unsigned char[bytes]; }
  void freeLocal(unsigned char* p) override { delete[] p; }
  void toLocal(unsigned char* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void fromLocal(void* dst, const unsigned char* src, size_t n) override { std::memcpy(dst, src, n); }
  tether_status_t handle(tether_t w, tether_device_handle_t* h) override { return tether_device_handle_cpu(w, h); }
  std::string launch(const tether::device::Handle& h, const device_fuzz::Round& r) override {
    namespace dev = tether::device;
    constexpr int threads = device_fuzz::kWriters * kWarp;
    dev::HostBarrier block(threads);
    std::vector<dev::HostBarrier> warps(device_fuzz::kWriters, dev::HostBarrier(kWarp));
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        dev::HostScope<dev::Scope::Block> bs(t, threads, &block);
        dev::HostScope<dev::Scope::Warp> ws(t % kWarp, kWarp, &warps[static_cast<size_t>(t / kWarp)]);
        device_fuzz::runRound(h, r);
      });
    for (auto& t : ts) t.join();
    return "";  // (a failed wait ends the process naming it)
  }
};

}  // namespace

int main() {
  mp::init();
  HostEnv env;
  device_fuzz::run(mp::world(), env, "mp_device_fuzz", 300);
  return mp::finish();
}
