// The datatype C API (include/tether/datatype.h): argument checks, handles, Status -> tether_status_t + message.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "datatype/canonical.h"
#include "datatype/handle.h"

namespace {

thread_local std::string tlsTypeError;

tether_status_t report(const tether::Status& s) {
  if (s.isOk()) return TETHER_SUCCESS;
  tlsTypeError = s.message();
  return s.code();
}

using tether::Status;
using tether::dt::Type;
using tether::dt::TypeRef;

// Runs f() -> Status with allocation failures and exceptions contained.
template <typename F>
tether_status_t guarded(const char* call, F&& f) {
  try {
    return report(f());
  } catch (const std::bad_alloc&) {
    return report(Status(TETHER_ERR_NO_MEMORY, std::string(call) + ": out of host memory"));
  } catch (const std::exception& e) {
    return report(Status(TETHER_ERR_INTERNAL, std::string(call) + ": " + e.what()));
  }
}

Status checkHandle(const char* call, const char* what, tether_type_t t) {
  if (!t || !t->type) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s is NULL", call, what);
  return Status::ok();
}

Status checkOut(const char* call, const void* out) {
  if (!out) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: output pointer is NULL", call);
  return Status::ok();
}

Status checkArray(const char* call, const char* what, int64_t count, const void* p) {
  if (count < 0) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: count is negative (%lld)", call, static_cast<long long>(count));
  if (count > 0 && !p) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s is NULL with count %lld", call, what,
                                   static_cast<long long>(count));
  return Status::ok();
}

// Wraps a new node in a handle (uncommitted unless `committed` is given).
Status emit(TypeRef t, tether_type_t* out, std::shared_ptr<const tether::dt::Canonical> committed = nullptr) {
  auto* h = new tether_type_s;
  h->type = std::move(t);
  h->canonical = std::move(committed);
  *out = h;
  return Status::ok();
}

// Scales element displacements by the old type's extent.
Status scaled(const char* call, int64_t count, const int64_t* displs, int64_t extent, std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    if (!tether::dt::mulOk(displs[i], extent, &(*out)[i]))
      TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: displacements[%lld] * extent overflows int64", call,
                  static_cast<long long>(i));
  return Status::ok();
}

// Indexed family: per-block lengths (perBlock, from blocklengths) or one blocklength for all blocks.
Status hindexedCommon(const char* call, int64_t count, bool perBlock, const int64_t* blocklengths,
                      int64_t blocklength, const int64_t* displs, bool bytes, tether_type_t oldtype,
                      tether_type_t* newtype) {
  TETHER_TRY(checkOut(call, newtype));
  TETHER_TRY(checkHandle(call, "oldtype", oldtype));
  TETHER_TRY(checkArray(call, "displacements", count, displs));
  if (perBlock) TETHER_TRY(checkArray(call, "blocklengths", count, blocklengths));
  if (!perBlock && blocklength < 0)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: blocklength is negative (%lld)", call,
                static_cast<long long>(blocklength));
  std::vector<int64_t> bl(static_cast<size_t>(count), blocklength), d;
  if (perBlock) bl.assign(blocklengths, blocklengths + count);
  if (bytes) d.assign(displs, displs + count);
  else TETHER_TRY(scaled(call, count, displs, oldtype->type->bounds().extent(), &d));
  TypeRef t;
  TETHER_TRY(Type::makeHIndexed(call, std::move(bl), std::move(d), oldtype->type, &t));
  return emit(std::move(t), newtype);
}

Status checkCommitted(const char* call, tether_type_t t) {
  TETHER_TRY(checkHandle(call, "type", t));
  if (!t->canonical) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: type is not committed (call tether_type_commit)", call);
  return Status::ok();
}

Status rangeOf(const char* call, tether_type_t t, int64_t count, int64_t packedOffset, int64_t maxBytes,
               const void* a, const void* b, int64_t* n) {
  TETHER_TRY(checkCommitted(call, t));
  int64_t total = 0;
  if (count < 0) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: count is negative (%lld)", call, static_cast<long long>(count));
  if (maxBytes < 0)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: max_bytes is negative (%lld)", call, static_cast<long long>(maxBytes));
  if (!tether::dt::mulOk(count, t->canonical->size, &total))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: count %lld * size %lld overflows int64", call, static_cast<long long>(count),
                static_cast<long long>(t->canonical->size));
  // Instance i sits at i * extent: the memory of all count instances must be addressable in int64.
  const tether::dt::Bounds& tb = t->type->bounds();
  int64_t last = 0, lo = 0, hi = 0;
  if (count > 0 && total > 0 &&
      (!tether::dt::mulOk(count - 1, tb.extent(), &last) || !tether::dt::addOk(last, tb.trueLb, &lo) ||
       !tether::dt::addOk(last, tb.trueUb, &hi)))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: %lld instances of extent %lld (true lb %lld, true ub %lld) overflow int64",
                call, static_cast<long long>(count), static_cast<long long>(tb.extent()),
                static_cast<long long>(tb.trueLb), static_cast<long long>(tb.trueUb));
  if (packedOffset < 0 || packedOffset > total)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: packed_offset %lld outside [0, %lld]", call,
                static_cast<long long>(packedOffset), static_cast<long long>(total));
  *n = std::min(maxBytes, total - packedOffset);
  if (*n > 0 && (!a || !b)) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: buffer is NULL", call);
  return Status::ok();
}

}  // namespace

extern "C" {

tether_status_t tether_type_basic(tether_basic_t basic, tether_type_t* newtype) {
  const int value = tether::dt::enumValue(basic);  // validated by makeBasic before it is used as the enum
  return guarded("tether_type_basic", [&]() -> Status {
    TETHER_TRY(checkOut("tether_type_basic", newtype));
    TypeRef t;
    TETHER_TRY(Type::makeBasic(value, &t));
    auto c = std::make_shared<tether::dt::Canonical>();
    TETHER_TRY(tether::dt::canonicalize(*t, c.get()));
    return emit(std::move(t), newtype, std::move(c));
  });
}

tether_status_t tether_type_contiguous(int64_t count, tether_type_t oldtype, tether_type_t* newtype) {
  const char* call = "tether_type_contiguous";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, newtype));
    TETHER_TRY(checkHandle(call, "oldtype", oldtype));
    TypeRef t;
    TETHER_TRY(Type::makeHVector(call, count, 1, oldtype->type->bounds().extent(), oldtype->type, &t));
    return emit(std::move(t), newtype);
  });
}

tether_status_t tether_type_vector(int64_t count, int64_t blocklength, int64_t stride, tether_type_t oldtype,
                                   tether_type_t* newtype) {
  const char* call = "tether_type_vector";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, newtype));
    TETHER_TRY(checkHandle(call, "oldtype", oldtype));
    int64_t bytes = 0;
    if (!tether::dt::mulOk(stride, oldtype->type->bounds().extent(), &bytes))
      TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: stride %lld * extent overflows int64", call, static_cast<long long>(stride));
    TypeRef t;
    TETHER_TRY(Type::makeHVector(call, count, blocklength, bytes, oldtype->type, &t));
    return emit(std::move(t), newtype);
  });
}

tether_status_t tether_type_hvector(int64_t count, int64_t blocklength, int64_t stride_bytes, tether_type_t oldtype,
                                    tether_type_t* newtype) {
  const char* call = "tether_type_hvector";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, newtype));
    TETHER_TRY(checkHandle(call, "oldtype", oldtype));
    TypeRef t;
    TETHER_TRY(Type::makeHVector(call, count, blocklength, stride_bytes, oldtype->type, &t));
    return emit(std::move(t), newtype);
  });
}

tether_status_t tether_type_indexed(int64_t count, const int64_t* blocklengths, const int64_t* displacements,
                                    tether_type_t oldtype, tether_type_t* newtype) {
  return guarded("tether_type_indexed", [&] {
    return hindexedCommon("tether_type_indexed", count, true, blocklengths, 0, displacements, false, oldtype, newtype);
  });
}

tether_status_t tether_type_hindexed(int64_t count, const int64_t* blocklengths, const int64_t* displacements_bytes,
                                     tether_type_t oldtype, tether_type_t* newtype) {
  return guarded("tether_type_hindexed", [&] {
    return hindexedCommon("tether_type_hindexed", count, true, blocklengths, 0, displacements_bytes, true, oldtype, newtype);
  });
}

tether_status_t tether_type_indexed_block(int64_t count, int64_t blocklength, const int64_t* displacements,
                                          tether_type_t oldtype, tether_type_t* newtype) {
  return guarded("tether_type_indexed_block", [&] {
    return hindexedCommon("tether_type_indexed_block", count, false, nullptr, blocklength, displacements, false, oldtype,
                          newtype);
  });
}

tether_status_t tether_type_hindexed_block(int64_t count, int64_t blocklength, const int64_t* displacements_bytes,
                                           tether_type_t oldtype, tether_type_t* newtype) {
  return guarded("tether_type_hindexed_block", [&] {
    return hindexedCommon("tether_type_hindexed_block", count, false, nullptr, blocklength, displacements_bytes, true,
                          oldtype, newtype);
  });
}

tether_status_t tether_type_subarray(int ndims, const int64_t* sizes, const int64_t* subsizes, const int64_t* starts,
                                     tether_order_t order, tether_type_t oldtype, tether_type_t* newtype) {
  const char* call = "tether_type_subarray";
  const int orderValue = tether::dt::enumValue(order);  // validated by makeSubarray
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, newtype));
    TETHER_TRY(checkHandle(call, "oldtype", oldtype));
    if (ndims >= 1 && (!sizes || !subsizes || !starts))
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: sizes, subsizes or starts is NULL", call);
    TypeRef t;
    TETHER_TRY(Type::makeSubarray(call, ndims, sizes, subsizes, starts, orderValue, oldtype->type, &t));
    return emit(std::move(t), newtype);
  });
}

tether_status_t tether_type_struct(int64_t count, const int64_t* blocklengths, const int64_t* displacements_bytes,
                                   const tether_type_t* types, tether_type_t* newtype) {
  const char* call = "tether_type_struct";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, newtype));
    TETHER_TRY(checkArray(call, "blocklengths", count, blocklengths));
    TETHER_TRY(checkArray(call, "displacements", count, displacements_bytes));
    TETHER_TRY(checkArray(call, "types", count, types));
    std::vector<TypeRef> ts(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      if (!types[i] || !types[i]->type)
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: types[%lld] is NULL", call, static_cast<long long>(i));
      ts[static_cast<size_t>(i)] = types[i]->type;
    }
    TypeRef t;
    TETHER_TRY(Type::makeStruct(call, std::vector<int64_t>(blocklengths, blocklengths + count),
                                std::vector<int64_t>(displacements_bytes, displacements_bytes + count), std::move(ts),
                                &t));
    return emit(std::move(t), newtype);
  });
}

tether_status_t tether_type_resized(tether_type_t oldtype, int64_t lb, int64_t extent, tether_type_t* newtype) {
  const char* call = "tether_type_resized";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, newtype));
    TETHER_TRY(checkHandle(call, "oldtype", oldtype));
    TypeRef t;
    TETHER_TRY(Type::makeResized(call, oldtype->type, lb, extent, &t));
    return emit(std::move(t), newtype);
  });
}

tether_status_t tether_type_dup(tether_type_t oldtype, tether_type_t* newtype) {
  const char* call = "tether_type_dup";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, newtype));
    TETHER_TRY(checkHandle(call, "oldtype", oldtype));
    TypeRef t;
    TETHER_TRY(Type::makeDup(oldtype->type, &t));
    return emit(std::move(t), newtype, oldtype->canonical);
  });
}

tether_status_t tether_type_commit(tether_type_t type) {
  const char* call = "tether_type_commit";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkHandle(call, "type", type));
    if (type->canonical) return Status::ok();
    auto c = std::make_shared<tether::dt::Canonical>();
    TETHER_TRY(tether::dt::canonicalize(*type->type, c.get()));
    type->canonical = std::move(c);
    return Status::ok();
  });
}

tether_status_t tether_type_free(tether_type_t* type) {
  if (!type) return report(Status(TETHER_ERR_INVALID_ARG, "tether_type_free: type is NULL"));
  delete *type;
  *type = nullptr;
  return TETHER_SUCCESS;
}

tether_status_t tether_type_size(tether_type_t type, int64_t* size) {
  return guarded("tether_type_size", [&]() -> Status {
    TETHER_TRY(checkHandle("tether_type_size", "type", type));
    TETHER_TRY(checkOut("tether_type_size", size));
    *size = type->type->bounds().size;
    return Status::ok();
  });
}

tether_status_t tether_type_extent(tether_type_t type, int64_t* lb, int64_t* extent) {
  return guarded("tether_type_extent", [&]() -> Status {
    TETHER_TRY(checkHandle("tether_type_extent", "type", type));
    TETHER_TRY(checkOut("tether_type_extent", lb));
    TETHER_TRY(checkOut("tether_type_extent", extent));
    *lb = type->type->bounds().lb;
    *extent = type->type->bounds().extent();
    return Status::ok();
  });
}

tether_status_t tether_type_true_extent(tether_type_t type, int64_t* true_lb, int64_t* true_extent) {
  return guarded("tether_type_true_extent", [&]() -> Status {
    TETHER_TRY(checkHandle("tether_type_true_extent", "type", type));
    TETHER_TRY(checkOut("tether_type_true_extent", true_lb));
    TETHER_TRY(checkOut("tether_type_true_extent", true_extent));
    *true_lb = type->type->bounds().trueLb;
    *true_extent = type->type->bounds().trueExtent();
    return Status::ok();
  });
}

tether_status_t tether_type_packed_size(tether_type_t type, int64_t count, int64_t* bytes) {
  const char* call = "tether_type_packed_size";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkHandle(call, "type", type));
    TETHER_TRY(checkOut(call, bytes));
    if (count < 0) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: count is negative (%lld)", call, static_cast<long long>(count));
    if (!tether::dt::mulOk(count, type->type->bounds().size, bytes))
      TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: count %lld * size %lld overflows int64", call,
                  static_cast<long long>(count), static_cast<long long>(type->type->bounds().size));
    return Status::ok();
  });
}

tether_status_t tether_type_pack(tether_type_t type, int64_t count, const void* buf, int64_t packed_offset,
                                 int64_t max_bytes, void* packed, int64_t* bytes_done) {
  const char* call = "tether_type_pack";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, bytes_done));
    int64_t n = 0;
    TETHER_TRY(rangeOf(call, type, count, packed_offset, max_bytes, buf, packed, &n));
    tether::dt::hostPack(*type->canonical, buf, packed_offset, n, packed);
    *bytes_done = n;
    return Status::ok();
  });
}

tether_status_t tether_type_unpack(tether_type_t type, int64_t count, const void* packed, int64_t packed_offset,
                                   int64_t max_bytes, void* buf, int64_t* bytes_done) {
  const char* call = "tether_type_unpack";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, bytes_done));
    int64_t n = 0;
    TETHER_TRY(rangeOf(call, type, count, packed_offset, max_bytes, packed, buf, &n));
    tether::dt::hostUnpack(*type->canonical, packed, packed_offset, n, buf);
    *bytes_done = n;
    return Status::ok();
  });
}

// ---- GPU engine ----------------------------------------------------------------------------------------------

namespace {
tether_status_t gpuCopy(const char* call, tether_type_t type, int64_t count, const void* src, int64_t packedOffset,
                        int64_t maxBytes, void* dst, int64_t* bytesDone, void* stream, bool unpack) {
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, bytesDone));
    int64_t n = 0;
    TETHER_TRY(rangeOf(call, type, count, packedOffset, maxBytes, src, dst, &n));
    tether::dt::GpuPackRequest r;
    r.c = type->canonical.get();
    r.count = count;
    r.src = src;
    r.dst = dst;
    r.packedOffset = packedOffset;
    r.len = n;
    r.unpack = unpack;
    r.stream = stream;
    tether::dt::Scheme used;
    TETHER_TRY(tether::dt::gpuPack(r, &type->gpu, &used).withContext(call));
    *bytesDone = n;
    return Status::ok();
  });
}
}  // namespace

tether_status_t tether_type_pack_async(tether_type_t type, int64_t count, const void* buf, int64_t packed_offset,
                                       int64_t max_bytes, void* packed, int64_t* bytes_done, void* stream) {
  return gpuCopy("tether_type_pack_async", type, count, buf, packed_offset, max_bytes, packed, bytes_done, stream,
                 false);
}

tether_status_t tether_type_unpack_async(tether_type_t type, int64_t count, const void* packed, int64_t packed_offset,
                                         int64_t max_bytes, void* buf, int64_t* bytes_done, void* stream) {
  return gpuCopy("tether_type_unpack_async", type, count, packed, packed_offset, max_bytes, buf, bytes_done, stream,
                 true);
}

tether_status_t tether_type_gpu_scheme(tether_type_t type, int64_t count, const char** scheme) {
  const char* call = "tether_type_gpu_scheme";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkOut(call, scheme));
    TETHER_TRY(checkCommitted(call, type));
    if (count < 0) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: count is negative (%lld)", call, static_cast<long long>(count));
    tether::dt::Scheme s;
    const auto forced = static_cast<tether::dt::Scheme>(type->gpu.scheme.load(std::memory_order_relaxed));
    TETHER_TRY(tether::dt::gpuChooseScheme(*type->canonical, count, forced, &s).withContext(call));
    *scheme = tether::dt::schemeName(s);
    return Status::ok();
  });
}

tether_status_t tether_type_set_gpu_scheme(tether_type_t type, const char* scheme) {
  const char* call = "tether_type_set_gpu_scheme";
  return guarded(call, [&]() -> Status {
    TETHER_TRY(checkHandle(call, "type", type));
    tether::dt::Scheme s;
    if (!scheme || !tether::dt::parseScheme(scheme, &s) || s == tether::dt::Scheme::Host)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG,
                  "%s: scheme \"%s\": expected auto, thread, warp, copy2d, copy3d, elem or batch", call,
                  scheme ? scheme : "(null)");
    type->gpu.scheme.store(static_cast<int>(s), std::memory_order_relaxed);
    return Status::ok();
  });
}

tether_status_t tether_type_gpu_calibrate(int force, char* summary, size_t len) {
  const char* call = "tether_type_gpu_calibrate";
  return guarded(call, [&]() -> Status {
    std::string text;
    TETHER_TRY(tether::dt::gpuCalibrate(force != 0, &text).withContext(call));
    if (summary && len) {
      const size_t k = std::min(len - 1, text.size());
      std::memcpy(summary, text.data(), k);
      summary[k] = '\0';
    }
    return Status::ok();
  });
}

const char* tether_type_last_error(void) { return tlsTypeError.c_str(); }

}  // extern "C"
