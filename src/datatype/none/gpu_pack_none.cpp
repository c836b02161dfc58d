// Host-only builds: the GPU datatype engine is absent; every entry point says so (TETHER_ERR_UNSUPPORTED).
#include "datatype/gpu_pack.h"

namespace tether::dt {

namespace {
Status none() {
  return Status(TETHER_ERR_UNSUPPORTED, "datatype GPU engine: this build has no CUDA support (TETHER_CUDA=OFF)");
}
}  // namespace

Status gpuPack(const GpuPackRequest&, GpuCache*, Scheme*) { return none(); }
Status gpuSync(int, void*) { return none(); }
Status gpuChooseScheme(const Canonical&, int64_t, Scheme, Scheme*) { return none(); }
Status gpuCalibrate(bool, std::string*) { return none(); }
Status gpuPreload(int) { return none(); }
Status gpuEstimate(const Canonical&, GpuCache*, int64_t, int, GpuEstimate*) { return none(); }
Status gpuScratchAlloc(int, void*, int64_t, void**) { return none(); }
Status gpuScratchFree(int, void*, void*) { return none(); }

}  // namespace tether::dt
