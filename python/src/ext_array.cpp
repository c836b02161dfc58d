// SymmetricArray's C++ base (ext_array.h).
#include "ext_array.h"

#include <string>
#include <utility>

namespace tether_py {

void initArray(ArrayBase& a, AllocPtr alloc, size_t offset, std::vector<int64_t> shape, std::vector<int64_t> strides,
               uint8_t code, uint8_t bits) {
  if (shape.size() != strides.size()) fail(TETHER_ERR_INVALID_ARG, "shape and strides differ in length");
  if (bits == 0 || bits % 8) fail(TETHER_ERR_INVALID_ARG, "dtype of " + std::to_string(bits) + " bits");
  // Every byte the view can reach must lie inside the allocation (a view is never a way out of it).
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) fail(TETHER_ERR_INVALID_ARG, "negative dimension");
    if (shape[i] == 0) { lo = hi = 0; break; }
    int64_t span = (shape[i] - 1) * strides[i];
    (span < 0 ? lo : hi) += span;
  }
  int64_t first = static_cast<int64_t>(offset) + lo, last = static_cast<int64_t>(offset) + hi + bits / 8;
  if (first < 0 || last > static_cast<int64_t>(alloc->nbytes))
    fail(TETHER_ERR_INVALID_ARG, "view reaches bytes [" + std::to_string(first) + ", " + std::to_string(last) +
                                     ") outside its allocation of " + std::to_string(alloc->nbytes) + " bytes");
  a.alloc = std::move(alloc);
  a.offset = offset;
  a.shape = std::move(shape);
  a.strides = std::move(strides);
  a.dtype = nb::dlpack::dtype{code, bits, 1};
  a.itemsize = bits / 8;
}

void indexInto(ArrayBase& v, const ArrayBase& a, nb::handle key) {
  nb::tuple k = PyTuple_Check(key.ptr()) ? nb::borrow<nb::tuple>(key) : nb::make_tuple(key);
  size_t nk = k.size(), ell = nk;
  for (size_t i = 0; i < nk; ++i) {
    if (k[i].is(nb::ellipsis())) {
      if (ell != nk) throw nb::index_error("an index can only have a single ellipsis");
      ell = i;
    }
  }
  size_t given = nk - (ell != nk ? 1 : 0), ndim = a.shape.size();
  if (given > ndim)
    throw nb::index_error(("too many indices: " + std::to_string(given) + " for a " + std::to_string(ndim) +
                           "-d array").c_str());
  int64_t offset = static_cast<int64_t>(a.offset);
  std::vector<int64_t> shape, strides;
  size_t dim = 0;
  auto keep = [&](size_t count) {  // dimensions taken whole
    for (size_t j = 0; j < count; ++j, ++dim) {
      shape.push_back(a.shape[dim]);
      strides.push_back(a.strides[dim]);
    }
  };
  for (size_t i = 0; i < nk; ++i, ++dim) {
    PyObject* o = k[i].ptr();
    if (i == ell) {
      keep(ndim - given);
      --dim;
      continue;
    }
    int64_t n = a.shape[dim], st = a.strides[dim];
    if (PySlice_Check(o)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw nb::python_error();
      Py_ssize_t count = PySlice_AdjustIndices(static_cast<Py_ssize_t>(n), &start, &stop, step);
      if (count > 0) offset += start * st;
      shape.push_back(count);
      strides.push_back(st * step);
    } else {
      Py_ssize_t i64 = PyNumber_AsSsize_t(o, PyExc_IndexError);
      if (i64 == -1 && PyErr_Occurred()) throw nb::python_error();
      if (i64 < -n || i64 >= n)
        throw nb::index_error(("index " + std::to_string(i64) + " is out of bounds for an axis of size " +
                               std::to_string(n)).c_str());
      offset += (i64 < 0 ? i64 + n : i64) * st;
    }
  }
  keep(ndim - dim);
  initArray(v, a.alloc, static_cast<size_t>(offset), std::move(shape), std::move(strides), a.dtype.code,
            a.dtype.bits);
}

nb::ndarray<nb::array_api> exportView(const ArrayBase& a) {
  char* p = a.data();
  auto* keep = new AllocPtr(a.alloc);
  ++a.alloc->exports;
  ++a.alloc->state->exports;
  nb::capsule owner(keep, [](void* k) noexcept {
    auto* ap = static_cast<AllocPtr*>(k);
    --(*ap)->exports;
    --(*ap)->state->exports;
    delete ap;
  });
  std::vector<size_t> shape(a.shape.begin(), a.shape.end());
  std::vector<int64_t> strides;  // nanobind counts strides in elements
  for (int64_t s : a.strides) strides.push_back(s / static_cast<int64_t>(a.itemsize));
  int dev = a.alloc->kind == TETHER_SEG_DEVICE ? nb::device::cuda::value : nb::device::cpu::value;
  int dev_id = a.alloc->kind == TETHER_SEG_DEVICE ? a.alloc->device : 0;
  return nb::ndarray<nb::array_api>(p, shape.size(), shape.data(), owner, strides.data(), a.dtype, dev, dev_id);
}

}  // namespace tether_py
