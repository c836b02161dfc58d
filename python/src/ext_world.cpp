// tether.World's work (ext_world.h).
#include "ext_world.h"

#include <dlfcn.h>

#include <cstring>
#include <memory>

namespace tether_py {
namespace {

// The CUDA device ordinal of GPU memory at p, asked of the driver (cuPointerGetAttribute, DEVICE_ORDINAL; found
// through dlopen: the extension links no CUDA), or `fallback` where there is no driver or it does not know p.
int deviceOrdinal(const void* p, int fallback) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fallback;
  using GetAttr = int (*)(void* data, int attribute, unsigned long long ptr);
  auto get = reinterpret_cast<GetAttr>(dlsym(lib, "cuPointerGetAttribute"));
  constexpr int kDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
  int ordinal = -1;
  bool ok = get && get(&ordinal, kDeviceOrdinal, reinterpret_cast<uintptr_t>(p)) == 0 && ordinal >= 0;
  dlclose(lib);
  return ok ? ordinal : fallback;
}

}  // namespace

World::World(const std::vector<std::string>& config, int rank, int size, const std::string& bootstrap_addr,
             const std::string& job_secret, int listen_fd, uintptr_t mpi_comm) {
  std::vector<const char*> cfg;
  for (const std::string& c : config) cfg.push_back(c.c_str());
  cfg.push_back(nullptr);
  tether_init_attr_t attr;
  tether_init_attr_default(&attr);
  if (!config.empty()) attr.config = cfg.data();
  attr.rank = rank;
  attr.size = size;
  if (!bootstrap_addr.empty()) attr.bootstrap_addr = bootstrap_addr.c_str();
  if (!job_secret.empty()) attr.job_secret = job_secret.c_str();
  attr.bootstrap_listen_fd = listen_fd;
  tether_t w = nullptr;
  checkWithoutGil([&] {
    return mpi_comm ? tether_init_mpi(reinterpret_cast<const void*>(mpi_comm), &attr, &w) : tether_init_attr(&attr, &w);
  });
  state->w = w;
  state->my_pe = tether_my_pe(w);
  state->n_pes = tether_n_pes(w);
}

void World::finalize() {
  tether_t w = state->live();
  if (state->exports > 0)
    fail(TETHER_ERR_INVALID_ARG, "finalize(): " + std::to_string(state->exports) +
                                     " view(s) of symmetric arrays exported through DLPack/buffer protocol are "
                                     "still alive; delete them first (finalize releases the symmetric heap)");
  state->w = nullptr;  // dead for every later call, also when the collective finalize fails
  check(tether_finalize(w));
}

AllocPtr World::alloc(size_t nbytes, int kind, size_t alignment, bool zero) {
  tether_t w = state->live();
  if (kind != TETHER_SEG_HOST && kind != TETHER_SEG_DEVICE) fail(TETHER_ERR_INVALID_ARG, "alloc: bad segment kind");
  void* p = nullptr;
  check(tether_malloc_kind(w, static_cast<tether_seg_kind_t>(kind), alignment, nbytes, &p));
  auto a = std::make_shared<Allocation>();
  a->state = state;
  a->base = static_cast<char*>(p);
  a->nbytes = nbytes;
  a->kind = kind;
  if (kind == TETHER_SEG_DEVICE) a->device = deviceOrdinal(p, defaultDevice());
  if (zero && nbytes > 0) {
    if (kind == TETHER_SEG_HOST) {
      std::memset(p, 0, nbytes);
    } else {  // GPU memory: a put from a zeroed host buffer to this PE (copy engine; any build that made it)
      std::vector<char> zeros(nbytes, 0);
      check(tether_put(w, p, zeros.data(), nbytes, state->my_pe));
    }
    check(tether_barrier_all(w));  // nobody writes into a peer's copy before that peer zeroed it
  }
  return a;
}

TeamPtr World::team(const char* which) const {
  tether_t w = state->live();
  tether_team_t h = std::strcmp(which, "world") == 0 ? tether_team_world(w) : tether_team_shared(w);
  if (h == TETHER_TEAM_INVALID) fail(TETHER_ERR_INVALID_ARG, tether_last_error());
  return Team::make(state, h, which);
}

int World::defaultDevice() const {
  tether_build_info_t b;
  if (tether_get_build_info(&b) != TETHER_SUCCESS || b.gpus_visible <= 0) return 0;
  return tether_local_pe(state->w) % b.gpus_visible;
}

AllocPtr World::wrap(uintptr_t addr, size_t nbytes) {
  tether_t w = state->live();
  const char* p = reinterpret_cast<const char*>(addr);
  tether_seg_kind_t k = tether_segment_kind(w, p);
  if (k == TETHER_SEG_DEFAULT || (nbytes > 0 && tether_segment_kind(w, p + nbytes - 1) != k))
    fail(TETHER_ERR_NOT_SYMMETRIC, "from_address: [" + std::to_string(addr) + ", +" + std::to_string(nbytes) +
                                       ") is not inside one symmetric segment of PE " +
                                       std::to_string(state->my_pe));
  auto a = std::make_shared<Allocation>();
  a->state = state;
  a->base = const_cast<char*>(p);
  a->nbytes = nbytes;
  a->kind = k;
  if (k == TETHER_SEG_DEVICE) a->device = deviceOrdinal(p, defaultDevice());
  a->owned = false;
  return a;
}

}  // namespace tether_py
