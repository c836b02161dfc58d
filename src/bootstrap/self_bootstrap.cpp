// Bootstrap of a one-PE job: every collective is a local copy (buffers may alias, as with the TCP bootstrap).
#include <cstring>

#include "bootstrap/bootstrap.h"

namespace tether {
namespace {

class SelfBootstrap final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allgather(const void* in, void* out, size_t bytes) override {
    if (bytes && in != out) std::memmove(out, in, bytes);
    return Status::ok();
  }
  Status barrier() override { return Status::ok(); }
  Status alltoall(const void* in, void* out, size_t bytes) override { return allgather(in, out, bytes); }
  Status broadcast(void*, size_t, int root) override {
    if (root != 0) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "bootstrap broadcast: root %d outside [0, 1)", root);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Bootstrap> createSelfBootstrap() { return std::make_unique<SelfBootstrap>(); }

}  // namespace tether
