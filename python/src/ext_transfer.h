// put/get's two sides (python/tether/_api.py put, get, put_signal): the local side from the buffer protocol or DLPack,
// the check that both sides match, and the transfer -- contiguous pairs by tether_put/get(_nbi/_on_stream), others
// by one typed call over datatypes built from the sides' layouts.
#pragma once

#include <nanobind/ndarray.h>

#include <cstdint>
#include <vector>

#include "ext_array.h"
#include "ext_common.h"

namespace tether_py {

// One side of a transfer: base pointer, element size, shape and byte strides.
struct Side {
  char* ptr;
  size_t itemsize;
  std::vector<int64_t> shape, strides;
  bool contiguous() const { return isContiguous(itemsize, shape, strides); }
};

inline Side sideOf(const ArrayBase& a) { return Side{a.data(), a.itemsize, a.shape, a.strides}; }

template <class... Args>
Side sideOf(const nb::ndarray<Args...>& a) {
  Side s{static_cast<char*>(const_cast<void*>(a.data())), a.itemsize(), {}, {}};
  for (size_t i = 0; i < a.ndim(); ++i) {
    s.shape.push_back(static_cast<int64_t>(a.shape(i)));
    s.strides.push_back(a.stride(i) * static_cast<int64_t>(a.itemsize()));
  }
  return s;
}

// The local side of a put/get: through the buffer protocol when the object has it (numpy, bytes, memoryview,
// array.array: much cheaper than a DLPack import, which matters for small puts), else through nanobind's ndarray
// caster (DLPack: torch, cupy, GPU memory). Holds the buffer until the transfer is done.
class Local {
 public:
  Local(nb::handle obj, bool writable);  // raises when obj is not an array (writable when asked)
  ~Local() { release(); }
  Local(const Local&) = delete;
  Local& operator=(const Local&) = delete;
  const Side& side() const { return side_; }
  const nb::dlpack::dtype& dtype() const { return dtype_; }

 private:
  void release() {
    if (held_) PyBuffer_Release(&view_);
    held_ = false;
  }
  // struct-module format of one element ("<d", "q", "Zf", ...) -> DLPack dtype; false for what has none.
  static bool formatDtype(const char* f, size_t itemsize, nb::dlpack::dtype* out);
  Py_buffer view_{};
  bool held_ = false;
  Side side_{};
  nb::dlpack::dtype dtype_{};
  nb::ndarray<nb::ro> dl_;  // keeps a DLPack import alive
};

inline size_t elems(const Side& s) {
  size_t n = 1;
  for (int64_t d : s.shape) n *= static_cast<size_t>(d);
  return n;
}

// Same dtype size and element count on both sides (the C order of elements maps one to the other).
void matchSides(const char* call, const Side& sym, const Side& local, const nb::dlpack::dtype& sym_dt,
                const nb::dlpack::dtype& local_dt);

enum class Dir { Put, Get };

// put: local -> sym on pe; get: sym on pe -> local. Contiguous pairs take tether_put/get(_nbi), others one typed call.
void transfer(tether_t w, Dir dir, const Side& sym, const Side& local, int pe, bool nbi, uintptr_t stream,
              bool on_stream);

}  // namespace tether_py
