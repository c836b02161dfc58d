// The element-wise calls and the team collectives (ext_ops.h).
#include "ext_ops.h"

#include <cstring>
#include <string>

namespace tether_py {
namespace {

// The tether_dtype_t of a team collective's elements: every integer width of 8 to 64 bits, float16, bfloat16, float32,
// float64 (docs/python.md "Collectives"); TETHER_DTYPE_COUNT for anything else.
tether_dtype_t collDtypeOf(const nb::dlpack::dtype& d) {
  using C = nb::dlpack::dtype_code;
  const uint8_t c = d.code;
  if (d.lanes != 1) return TETHER_DTYPE_COUNT;
  if (c == static_cast<uint8_t>(C::Int) || c == static_cast<uint8_t>(C::UInt)) {
    const bool u = c == static_cast<uint8_t>(C::UInt);
    switch (d.bits) {
      case 8: return u ? TETHER_UINT8 : TETHER_INT8;
      case 16: return u ? TETHER_USHORT : TETHER_SHORT;
      case 32: return u ? TETHER_UINT32 : TETHER_INT32;
      case 64: return u ? TETHER_UINT64 : TETHER_INT64;
      default: return TETHER_DTYPE_COUNT;
    }
  }
  if (c == static_cast<uint8_t>(C::Float)) {
    if (d.bits == 16) return TETHER_HALF;
    if (d.bits == 32) return TETHER_FLOAT;
    if (d.bits == 64) return TETHER_DOUBLE;
  }
  if (c == static_cast<uint8_t>(C::Bfloat) && d.bits == 16) return TETHER_BFLOAT16;
  return TETHER_DTYPE_COUNT;
}

// The tether_dtype_t of an array's element type (atomics and waits): the collectives' types but int8, uint8,
// float16 and bfloat16.
tether_dtype_t dtypeOf(const nb::dlpack::dtype& d) {
  const tether_dtype_t t = collDtypeOf(d);
  if (t == TETHER_DTYPE_COUNT || t == TETHER_INT8 || t == TETHER_UINT8 || t == TETHER_HALF || t == TETHER_BFLOAT16)
    fail(TETHER_ERR_INVALID_ARG, "dtype code " + std::to_string(d.code) + "/" + std::to_string(d.bits) +
                                     " bits has no atomic or wait form (int16/32/64, uint16/32/64, float32/64)");
  return t;
}

// A scalar of the element type, from a Python int or float (range-checked by the cast).
struct Scalar {
  alignas(8) unsigned char bytes[8] = {};
};

Scalar toScalar(tether_dtype_t t, nb::handle v) {
  Scalar s;
  auto put = [&](auto x) { std::memcpy(s.bytes, &x, sizeof x); };
  switch (t) {
    case TETHER_SHORT: put(nb::cast<int16_t>(v)); break;
    case TETHER_USHORT: put(nb::cast<uint16_t>(v)); break;
    case TETHER_INT32: put(nb::cast<int32_t>(v)); break;
    case TETHER_UINT32: put(nb::cast<uint32_t>(v)); break;
    case TETHER_INT64: put(nb::cast<int64_t>(v)); break;
    case TETHER_UINT64: put(nb::cast<uint64_t>(v)); break;
    case TETHER_FLOAT: put(nb::cast<float>(v)); break;
    default: put(nb::cast<double>(v)); break;
  }
  return s;
}

nb::object fromScalar(tether_dtype_t t, const Scalar& s) {
  auto get = [&](auto x) { std::memcpy(&x, s.bytes, sizeof x); return nb::cast(x); };
  switch (t) {
    case TETHER_SHORT: return get(int16_t{});
    case TETHER_USHORT: return get(uint16_t{});
    case TETHER_INT32: return get(int32_t{});
    case TETHER_UINT32: return get(uint32_t{});
    case TETHER_INT64: return get(int64_t{});
    case TETHER_UINT64: return get(uint64_t{});
    case TETHER_FLOAT: return get(float{});
    default: return get(double{});
  }
}

// The one element an atomic, wait or signal works on: a 0-d array or an array of exactly one element.
char* scalarPtr(const char* call, const ArrayBase& a) {
  if (a.count() != 1)
    fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": needs one element (index the array: a[i]), got " +
                                     std::to_string(a.count()));
  return a.data();
}

// The collectives, in the order of python/tether/_api.py's kinds.
enum class Coll { Broadcast = 0, Reduce, Allreduce, Allgather, ReduceScatter, Alltoall };

// The blocking host form of collective k (its caller releases the GIL).
tether_status_t hostColl(Coll k, tether_team_t t, void* d, const void* x, size_t count, tether_dtype_t type,
                         tether_red_op_t o, int root) {
  switch (k) {
    case Coll::Broadcast: return tether_team_broadcast(t, d, x, count, type, root);
    case Coll::Reduce: return tether_team_reduce(t, d, x, count, type, o, root);
    case Coll::Allreduce: return tether_team_allreduce(t, d, x, count, type, o);
    case Coll::Allgather: return tether_team_allgather(t, d, x, count, type);
    case Coll::ReduceScatter: return tether_team_reduce_scatter(t, d, x, count, type, o);
    default: return tether_team_alltoall(t, d, x, count, type);
  }
}

}  // namespace

nb::object atomic(const ArrayBase& a, int op, nb::handle value, nb::handle cond, int pe) {
  tether_t w = a.alloc->state->live();
  tether_dtype_t t = dtypeOf(a.dtype);
  char* p = scalarPtr("atomic", a);
  Scalar v = value.is_none() ? Scalar{} : toScalar(t, value);
  Scalar c = cond.is_none() ? Scalar{} : toScalar(t, cond);
  Scalar old;
  check(tether_atomic(w, static_cast<tether_amo_t>(op), t, p, v.bytes, c.bytes, old.bytes, pe));
  return fromScalar(t, old);
}

bool waitOrTest(const ArrayBase& a, int cmp, nb::handle value, bool wait) {
  tether_t w = a.alloc->state->live();
  tether_dtype_t t = dtypeOf(a.dtype);
  char* p = scalarPtr(wait ? "wait_until" : "test", a);
  Scalar v = toScalar(t, value);
  if (wait) {  // other Python threads run while this one waits
    checkWithoutGil([&] { return tether_wait_until(w, p, t, static_cast<tether_cmp_t>(cmp), v.bytes); });
    return true;
  }
  int r = 0;
  check(tether_test(w, p, t, static_cast<tether_cmp_t>(cmp), v.bytes, &r));
  return r != 0;
}

uint64_t* signalWord(const char* call, const ArrayBase& s) {
  if (s.dtype != nb::dtype<uint64_t>())
    fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": a signal word is a uint64 element of a symmetric array");
  return reinterpret_cast<uint64_t*>(scalarPtr(call, s));
}

void teamColl(const Team& team, int kind, const ArrayBase& dest, const ArrayBase& src, int op, int root,
              uintptr_t stream, bool onStream) {
  static const char* const kNames[] = {"broadcast", "reduce", "allreduce", "allgather", "reduce_scatter", "alltoall"};
  if (kind < 0 || kind > static_cast<int>(Coll::Alltoall)) fail(TETHER_ERR_INVALID_ARG, "collective: bad kind");
  const std::string call = kNames[kind];
  const tether_team_t t = team.live(call.c_str());
  const Coll k = static_cast<Coll>(kind);
  const size_t n = static_cast<size_t>(Team::answer(tether_team_n_pes(t)));
  const size_t nd = dest.count(), ns = src.count();
  const tether_dtype_t type = collDtypeOf(dest.dtype);
  std::string bad;  // this PE's own problem with the arrays, if any
  size_t count = nd;
  auto sizes = [&](bool ok, const char* what) {
    if (!ok && bad.empty())
      bad = std::string(what) + " (dest has " + std::to_string(nd) + " elements, src " + std::to_string(ns) +
            ", the team " + std::to_string(n) + " PEs)";
  };
  if (dest.alloc->state != team.state || src.alloc->state != team.state) {
    bad = "the arrays and the team belong to different tether instances";
  } else if (dest.dtype != src.dtype) {
    bad = "dest and src have different dtypes";
  } else if (type == TETHER_DTYPE_COUNT) {
    bad = "dtype code " + std::to_string(dest.dtype.code) + "/" + std::to_string(dest.dtype.bits) +
          " bits is not a collective element type (int8-64, uint8-64, float16, bfloat16, float32, float64)";
  } else if (!dest.contiguous() || !src.contiguous()) {
    bad = "dest and src must be contiguous (a collective moves whole arrays; copy a strided view into a contiguous "
          "one first)";
  } else if (k == Coll::Allgather) {
    count = ns;
    sizes(nd == n * ns, "dest must hold n_pes times src's elements");
  } else if (k == Coll::ReduceScatter) {
    sizes(ns == n * nd, "src must hold n_pes times dest's elements");
  } else if (k == Coll::Alltoall) {
    count = ns / n;
    sizes(nd == ns && ns % n == 0, "dest and src must have the same size, a multiple of n_pes");
  } else {
    sizes(nd == ns, "dest and src must have the same size");
  }
  void* d = dest.data();
  const void* x = src.data();
  const auto o = static_cast<tether_red_op_t>(op);
  void* s = reinterpret_cast<void*>(stream);
  if (!bad.empty()) {
    if (!onStream) {  // the agreement: every member fails (see above); this PE's status is the invalid type's
      nb::gil_scoped_release unlocked;
      (void)hostColl(k, t, d, x, 0, TETHER_DTYPE_COUNT, o, root);
    }
    fail(TETHER_ERR_INVALID_ARG, call + ": " + bad);
  }
  if (onStream) {
    switch (k) {
      case Coll::Broadcast: check(tether_team_broadcast_on_stream(t, d, x, count, type, root, s)); break;
      case Coll::Reduce: check(tether_team_reduce_on_stream(t, d, x, count, type, o, root, s)); break;
      case Coll::Allreduce: check(tether_team_allreduce_on_stream(t, d, x, count, type, o, s)); break;
      case Coll::Allgather: check(tether_team_allgather_on_stream(t, d, x, count, type, s)); break;
      case Coll::ReduceScatter: check(tether_team_reduce_scatter_on_stream(t, d, x, count, type, o, s)); break;
      case Coll::Alltoall: check(tether_team_alltoall_on_stream(t, d, x, count, type, s)); break;
    }
    return;
  }
  checkWithoutGil([&] { return hostColl(k, t, d, x, count, type, o, root); });
}

}  // namespace tether_py
