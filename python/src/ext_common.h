// What every part of the extension shares (python/src/README.md): the error a failed C call raises, the World state
// that every allocation, view and team keeps alive, one symmetric Allocation, and running a waiting C call without the
// GIL.
#pragma once

#include <nanobind/nanobind.h>
#include <tether/datatype.h>
#include <tether/tether.h>

#include <memory>
#include <string>
#include <utility>

namespace nb = nanobind;

namespace tether_py {

// A failed call: raised in Python as tether.Error(status, message) (the class is handed over by set_error_type).
struct Failure {
  int status;
  std::string message;
};

inline nb::object& errorType() {  // the Python class tether.Error; set once at import
  static nb::object type;
  return type;
}

[[noreturn]] inline void fail(int status, std::string message) { throw Failure{status, std::move(message)}; }

// Raises for a failed C call with tether_last_error()'s text (or the datatype layer's, for tether_type_* calls).
inline void check(tether_status_t st) {
  if (st != TETHER_SUCCESS) fail(st, tether_last_error());
}
inline void checkType(tether_status_t st) {
  if (st != TETHER_SUCCESS) fail(st, tether_type_last_error());
}

struct WorldState {
  tether_t w = nullptr;
  int my_pe = -1, n_pes = 0;
  long exports = 0;     // views exported (DLPack, buffer protocol) still alive, over every allocation
  long abandoned = 0;   // allocations dropped without free(); released by finalize
  tether_t live() const {
    if (!w) fail(TETHER_ERR_INVALID_ARG, "tether is not initialised (tether.init() first) or already finalized");
    return w;
  }
};
using StatePtr = std::shared_ptr<WorldState>;

struct Allocation {
  StatePtr state;
  char* base = nullptr;
  size_t nbytes = 0;
  int kind = TETHER_SEG_HOST;  // TETHER_SEG_HOST or TETHER_SEG_DEVICE
  int device = 0;              // CUDA ordinal of a DEVICE allocation (the DLPack device id)
  bool owned = true;           // false: wraps memory that someone else allocated (never freed here)
  bool freed = false;
  long exports = 0;     // live views exported through DLPack/buffer protocol (and interfaced array objects)
  long interfaced = 0;  // of which: array objects that handed the address out through the array interfaces
  ~Allocation() {
    if (owned && !freed && state->w) ++state->abandoned;
  }
  char* data() const {
    state->live();
    if (freed) fail(TETHER_ERR_INVALID_ARG, "symmetric array used after free()");
    return base;
  }
  void free() {
    tether_t w = state->live();
    if (!owned) fail(TETHER_ERR_INVALID_ARG, "free(): this array wraps an allocation it does not own");
    if (freed) fail(TETHER_ERR_INVALID_ARG, "free(): already freed");
    if (interfaced > 0)
      fail(TETHER_ERR_INVALID_ARG, "free(): the address of this allocation was handed out through "
                                   "__array_interface__/__cuda_array_interface__ (numpy.asarray, cupy.asarray) by " +
                                       std::to_string(interfaced) + " array object(s) still alive; such views "
                                       "cannot be tracked, so free() is refused while those objects live (views by "
                                       "numpy/torch/cupy.from_dlpack are tracked and allow it once deleted)");
    if (exports > 0)
      fail(TETHER_ERR_INVALID_ARG, "free(): " + std::to_string(exports) +
                                       " view(s) of this array exported through DLPack/buffer protocol are still "
                                       "alive (numpy/torch/cupy arrays); delete them before the collective free");
    check(tether_free(w, base));
    freed = true;
  }
};
using AllocPtr = std::shared_ptr<Allocation>;

// Runs a C call that waits on other PEs (a collective, a wait) with the GIL released, so other Python threads of this
// process run meanwhile (e.g. a store served by a thread), then raises when it failed.
template <class F>
void checkWithoutGil(F&& call) {
  tether_status_t st;
  {
    nb::gil_scoped_release unlocked;
    st = call();
  }
  check(st);
}

}  // namespace tether_py
