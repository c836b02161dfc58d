// put/get's two sides and the transfer (ext_transfer.h).
#include "ext_transfer.h"

#include <cstring>
#include <string>
#include <utility>

namespace tether_py {
namespace {

// A committed tether datatype describing one instance of a side's layout (C order of its elements), freed on scope
// exit. Dimensions of extent 1 are dropped and adjacent dimensions that are contiguous with each other are merged.
class Layout {
 public:
  explicit Layout(const Side& s) {
    std::vector<std::pair<int64_t, int64_t>> dims;  // (count, byte stride), outermost first, merged
    for (size_t i = 0; i < s.shape.size(); ++i) {
      if (s.shape[i] == 1) continue;
      if (!dims.empty() && dims.back().second == s.shape[i] * s.strides[i]) {
        dims.back() = {dims.back().first * s.shape[i], s.strides[i]};
      } else {
        dims.push_back({s.shape[i], s.strides[i]});
      }
    }
    tether_type_t byte;
    checkType(tether_type_basic(TETHER_BASIC_BYTE, &byte));
    checkType(tether_type_contiguous(static_cast<int64_t>(s.itemsize), byte, &type_));
    tether_type_free(&byte);
    for (size_t i = dims.size(); i-- > 0;) {
      if (i + 1 == dims.size() && dims[i].second == static_cast<int64_t>(s.itemsize)) {  // contiguous innermost run
        replace([&](tether_type_t t, tether_type_t* n) { return tether_type_contiguous(dims[i].first, t, n); });
      } else {
        replace([&](tether_type_t t, tether_type_t* n) {
          return tether_type_hvector(dims[i].first, 1, dims[i].second, t, n);
        });
      }
    }
    checkType(tether_type_commit(type_));
  }
  ~Layout() { tether_type_free(&type_); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
  tether_type_t get() const { return type_; }

 private:
  template <class F>
  void replace(F make) {
    tether_type_t next = nullptr;
    tether_status_t st = make(type_, &next);
    tether_type_free(&type_);
    checkType(st);
    type_ = next;
  }
  tether_type_t type_ = nullptr;
};

}  // namespace

Local::Local(nb::handle obj, bool writable) {
  if (PyObject_CheckBuffer(obj.ptr()) &&
      PyObject_GetBuffer(obj.ptr(), &view_, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) == 0) {
    held_ = true;
    if (formatDtype(view_.format, static_cast<size_t>(view_.itemsize), &dtype_)) {
      side_ = Side{static_cast<char*>(view_.buf), static_cast<size_t>(view_.itemsize), {}, {}};
      for (int i = 0; i < view_.ndim; ++i) {
        side_.shape.push_back(view_.shape[i]);
        side_.strides.push_back(view_.strides[i]);
      }
      return;
    }
    release();  // a format we do not map (big-endian, structs): let DLPack decide
  }
  PyErr_Clear();
  if (writable) {
    nb::ndarray<> a;
    if (!nb::try_cast(nb::borrow(obj), a))
      fail(TETHER_ERR_INVALID_ARG, "local buffer of type " + std::string(nb::type_name(obj.type()).c_str()) +
                                       " is not a writable array (DLPack or buffer protocol)");
    side_ = sideOf(a);
    dtype_ = a.dtype();
    dl_ = nb::ndarray<nb::ro>(a);
  } else {
    nb::ndarray<nb::ro> a;
    if (!nb::try_cast(nb::borrow(obj), a))
      fail(TETHER_ERR_INVALID_ARG, "local buffer of type " + std::string(nb::type_name(obj.type()).c_str()) +
                                       " is not an array (DLPack or buffer protocol)");
    side_ = sideOf(a);
    dtype_ = a.dtype();
    dl_ = a;
  }
}

bool Local::formatDtype(const char* f, size_t itemsize, nb::dlpack::dtype* out) {
  using C = nb::dlpack::dtype_code;
  if (!f) f = "B";
  if (*f == '<' || *f == '@' || *f == '=') ++f;
  C code;
  if (f[0] == 'Z' && (f[1] == 'f' || f[1] == 'd') && f[2] == 0) {
    code = C::Complex;
  } else if (f[0] != 0 && f[1] == 0 && std::strchr("bhilqn", f[0])) {
    code = C::Int;
  } else if (f[0] != 0 && f[1] == 0 && std::strchr("BHILQN", f[0])) {
    code = C::UInt;
  } else if (f[0] != 0 && f[1] == 0 && std::strchr("efd", f[0])) {
    code = C::Float;
  } else if (f[0] == '?' && f[1] == 0) {
    code = C::Bool;
  } else {
    return false;
  }
  *out = nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(itemsize * 8), 1};
  return true;
}

void matchSides(const char* call, const Side& sym, const Side& local, const nb::dlpack::dtype& sym_dt,
                const nb::dlpack::dtype& local_dt) {
  if (sym_dt != local_dt)
    fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": dtype differs (symmetric array: code " +
                                     std::to_string(sym_dt.code) + "/" + std::to_string(sym_dt.bits) +
                                     " bits, local buffer: code " + std::to_string(local_dt.code) + "/" +
                                     std::to_string(local_dt.bits) + " bits)");
  if (elems(sym) != elems(local))
    fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": " + std::to_string(elems(local)) + " elements in the local "
                                     "buffer, " + std::to_string(elems(sym)) + " in the symmetric array");
}

void transfer(tether_t w, Dir dir, const Side& sym, const Side& local, int pe, bool nbi, uintptr_t stream,
              bool on_stream) {
  size_t n = elems(sym);
  if (n == 0) return;
  size_t nbytes = n * sym.itemsize;
  void* stream_ptr = reinterpret_cast<void*>(stream);
  if (sym.contiguous() && local.contiguous()) {
    if (dir == Dir::Put) {
      if (on_stream) check(tether_putmem_on_stream(w, sym.ptr, local.ptr, nbytes, pe, stream_ptr));
      else check((nbi ? tether_put_nbi : tether_put)(w, sym.ptr, local.ptr, nbytes, pe));
    } else {
      if (on_stream) check(tether_getmem_on_stream(w, local.ptr, sym.ptr, nbytes, pe, stream_ptr));
      else check((nbi ? tether_get_nbi : tether_get)(w, local.ptr, sym.ptr, nbytes, pe));
    }
    return;
  }
  Layout st(sym), lt(local);
  if (dir == Dir::Put) {
    if (on_stream) check(tether_put_typed_on_stream(w, sym.ptr, st.get(), 1, local.ptr, lt.get(), 1, pe, stream_ptr));
    else check((nbi ? tether_put_typed_nbi : tether_put_typed)(w, sym.ptr, st.get(), 1, local.ptr, lt.get(), 1, pe));
  } else {
    if (on_stream) check(tether_get_typed_on_stream(w, local.ptr, lt.get(), 1, sym.ptr, st.get(), 1, pe, stream_ptr));
    else check((nbi ? tether_get_typed_nbi : tether_get_typed)(w, local.ptr, lt.get(), 1, sym.ptr, st.get(), 1, pe));
  }
}

}  // namespace tether_py
