// SymmetricArray's C++ base (python/tether/_array.py derives from it): a typed, strided view of (part of) an
// Allocation, its bounds check, basic indexing and the DLPack / buffer-protocol export.
#pragma once

#include <nanobind/ndarray.h>

#include <cstdint>
#include <vector>

#include "ext_common.h"

namespace tether_py {

// C order without gaps: every dimension of extent > 1 has the byte stride of the dimensions inside it.
inline bool isContiguous(size_t itemsize, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t expect = static_cast<int64_t>(itemsize);
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

// A typed, strided view of (part of) an Allocation. SymmetricArray (Python) derives from it and adds slicing etc.
struct ArrayBase {
  AllocPtr alloc;
  size_t offset = 0;            // bytes from alloc->base to element [0, ..., 0]
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; // bytes
  nb::dlpack::dtype dtype{};
  size_t itemsize = 0;
  // Set once __array_interface__/__cuda_array_interface__ handed the address out: the consumer keeps this object, not
  // an owner capsule, so the object itself counts as one exported view until it dies.
  bool interfaced = false;

  ArrayBase() = default;
  ArrayBase(const ArrayBase&) = delete;
  ArrayBase& operator=(const ArrayBase&) = delete;
  ~ArrayBase() {
    if (interfaced) {
      --alloc->interfaced;
      --alloc->exports;
      --alloc->state->exports;
    }
  }
  void markInterfaced() {
    data();
    if (interfaced) return;
    interfaced = true;
    ++alloc->interfaced;
    ++alloc->exports;
    ++alloc->state->exports;
  }

  char* data() const { return alloc->data() + offset; }
  size_t count() const {
    size_t n = 1;
    for (int64_t s : shape) n *= static_cast<size_t>(s);
    return n;
  }
  bool contiguous() const { return isContiguous(itemsize, shape, strides); }
};

// Makes `a` a view of `alloc` (offset, shape, byte strides, DLPack dtype code and bits); raises when the view would
// reach a byte outside the allocation.
void initArray(ArrayBase& a, AllocPtr alloc, size_t offset, std::vector<int64_t> shape, std::vector<int64_t> strides,
               uint8_t code, uint8_t bits);

// Basic indexing (integers, slices, one Ellipsis) of `a`: makes `v` the view it names. IndexError for integers out
// of range and for too many indices, TypeError for other index kinds.
void indexInto(ArrayBase& v, const ArrayBase& a, nb::handle key);

// Exports a view (DLPack / buffer protocol through nanobind's nb_ndarray). The owner capsule keeps the allocation and
// counts the view as alive until the consumer (numpy, torch, cupy) drops it.
nb::ndarray<nb::array_api> exportView(const ArrayBase& a);

}  // namespace tether_py
