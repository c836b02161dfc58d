// The object behind a tether_type_t: a shared, immutable type tree plus, once committed, its canonical form.
// Several handles may share both (dup, and types built from this one hold the tree, never the handle).
#pragma once

#include <memory>

#include "datatype/canonical.h"
#include "datatype/gpu_pack.h"
#include "datatype/type.h"

struct tether_type_s {
  tether::dt::TypeRef type;
  std::shared_ptr<const tether::dt::Canonical> canonical;  // null until committed
  tether::dt::GpuCache gpu;  // device copy of the canonical form's metadata (GPU engine), made on first GPU use
};
