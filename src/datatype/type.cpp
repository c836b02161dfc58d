#include "datatype/type.h"

#include <algorithm>
#include <limits>

namespace tether::dt {

namespace {

struct BasicInfo {
  const char* name;
  int64_t size;
  int align;
};

constexpr BasicInfo kBasics[TETHER_BASIC_COUNT] = {
    {"BYTE", 1, 1},       {"CHAR", 1, 1},          {"SIGNED_CHAR", 1, 1},  {"UNSIGNED_CHAR", 1, 1},
    {"INT8", 1, 1},       {"UINT8", 1, 1},         {"INT16", 2, 2},        {"UINT16", 2, 2},
    {"INT32", 4, 4},      {"UINT32", 4, 4},        {"INT64", 8, 8},        {"UINT64", 8, 8},
    {"SHORT", sizeof(short), alignof(short)},      {"UNSIGNED_SHORT", sizeof(short), alignof(short)},
    {"INT", sizeof(int), alignof(int)},            {"UNSIGNED", sizeof(int), alignof(int)},
    {"LONG", sizeof(long), alignof(long)},         {"UNSIGNED_LONG", sizeof(long), alignof(long)},
    {"LONG_LONG", sizeof(long long), alignof(long long)},
    {"UNSIGNED_LONG_LONG", sizeof(long long), alignof(long long)},
    {"FLOAT", sizeof(float), alignof(float)},      {"DOUBLE", sizeof(double), alignof(double)},
    {"C_BOOL", sizeof(bool), alignof(bool)},
    {"FLOAT_COMPLEX", 2 * sizeof(float), alignof(float)},
    {"DOUBLE_COMPLEX", 2 * sizeof(double), alignof(double)},
};

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// Accumulates the bounds of a type map built from groups of child instances (docs/datatype.md "Bounds"):
// explicit markers are sticky (when any instance carries an lb marker, lb is the least marker and plain entries do
// not count), children without entries contribute nothing.
class BoundsAcc {
 public:
  explicit BoundsAcc(const char* call) : call_(call) {}

  // n >= 1 instances of `c` whose displacements lie in [minOff, maxOff] (both attained).
  Status add(const Bounds& c, int64_t n, int64_t minOff, int64_t maxOff) {
    int64_t bytes = 0;
    if (!mulOk(n, c.size, &bytes) || !addOk(size_, bytes, &size_))
      TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: type size overflows int64 (%lld instances of %lld bytes)", call_,
                  static_cast<long long>(n), static_cast<long long>(c.size));
    if (!c.hasEntries()) return Status::ok();
    int64_t lo = 0, hi = 0;
    if (!addOk(minOff, c.lb, &lo)) return overflow("lower bound", minOff, c.lb);
    if (!addOk(maxOff, c.ub, &hi)) return overflow("upper bound", maxOff, c.ub);
    if (c.lbMarker) markLb_ = std::min(markLb_, lo), anyMarkLb_ = true;
    else plainLb_ = std::min(plainLb_, lo);
    if (c.ubMarker) markUb_ = std::max(markUb_, hi), anyMarkUb_ = true;
    else plainUb_ = std::max(plainUb_, hi);
    if (c.size > 0) {
      if (!addOk(minOff, c.trueLb, &lo)) return overflow("true lower bound", minOff, c.trueLb);
      if (!addOk(maxOff, c.trueUb, &hi)) return overflow("true upper bound", maxOff, c.trueUb);
      trueLb_ = std::min(trueLb_, lo);
      trueUb_ = std::max(trueUb_, hi);
      align_ = std::max(align_, c.align);
    }
    any_ = true;
    return Status::ok();
  }

  // A child that contributes no instance still fixes the alignment of an empty result (contiguous(0, double) is
  // "of double"), so that struct padding sees the same thing for every empty description.
  void noteEmpty(const Bounds& c) {
    if (!any_) emptyAlign_ = c.align;
  }

  Bounds finish() const {
    Bounds b;
    b.size = size_;
    if (any_) {
      b.lbMarker = anyMarkLb_;
      b.ubMarker = anyMarkUb_;
      b.lb = anyMarkLb_ ? markLb_ : plainLb_;
      b.ub = anyMarkUb_ ? markUb_ : plainUb_;
    }
    if (size_ > 0) {
      b.trueLb = trueLb_;
      b.trueUb = trueUb_;
      b.align = align_;
    } else {
      b.align = emptyAlign_;
    }
    return b;
  }

 private:
  Status overflow(const char* what, int64_t off, int64_t childBound) const {
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: %s overflows int64 (instance at %lld bytes + child bound %lld)", call_, what,
                static_cast<long long>(off), static_cast<long long>(childBound));
  }

  const char* call_;
  int64_t size_ = 0;
  bool any_ = false, anyMarkLb_ = false, anyMarkUb_ = false;
  int64_t markLb_ = kMax, plainLb_ = kMax, markUb_ = kMin, plainUb_ = kMin;
  int64_t trueLb_ = kMax, trueUb_ = kMin;
  int align_ = 1, emptyAlign_ = 1;
};

// min and max of k * step over k in [0, n) for n >= 1.
bool spanOf(int64_t n, int64_t step, int64_t* lo, int64_t* hi) {
  int64_t last = 0;
  if (!mulOk(n - 1, step, &last)) return false;
  *lo = std::min<int64_t>(0, last);
  *hi = std::max<int64_t>(0, last);
  return true;
}

// Every constructor ends here: the extent (ub - lb) and the true extent (true_ub - true_lb) must fit in int64, so
// that Bounds::extent() and trueExtent() never wrap (docs/datatype.md "Bounds").
Status checkSpans(const char* call, const Bounds& b) {
  int64_t d = 0;
  if (!subOk(b.ub, b.lb, &d))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: extent overflows int64 (lb %lld, ub %lld)", call,
                static_cast<long long>(b.lb), static_cast<long long>(b.ub));
  if (!subOk(b.trueUb, b.trueLb, &d))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: true extent overflows int64 (true lb %lld, true ub %lld)", call,
                static_cast<long long>(b.trueLb), static_cast<long long>(b.trueUb));
  return Status::ok();
}

Status checkCount(const char* call, const char* what, int64_t v) {
  if (v < 0) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s is negative (%lld)", call, what, static_cast<long long>(v));
  return Status::ok();
}

}  // namespace

int64_t basicSize(int basic) { return (basic >= 0 && basic < TETHER_BASIC_COUNT) ? kBasics[basic].size : 0; }
int basicPadClass(int basic) {
  switch (basic) {
    case TETHER_BASIC_FLOAT: return 100;
    case TETHER_BASIC_DOUBLE: return 101;
    case TETHER_BASIC_C_BOOL: return 102;
    case TETHER_BASIC_FLOAT_COMPLEX: return 103;
    case TETHER_BASIC_DOUBLE_COMPLEX: return 104;
    default: return static_cast<int>(basicSize(basic));  // integers (and bytes/chars) by size
  }
}

Status Type::makeBasic(int basic, TypeRef* out) {
  if (basic < 0 || basic >= TETHER_BASIC_COUNT)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_type_basic: invalid basic type %d (valid: 0 .. %d)", basic,
                TETHER_BASIC_COUNT - 1);
  auto t = std::make_shared<Type>();
  t->kind_ = Kind::Basic;
  t->basic_ = basic;
  t->b_.size = kBasics[basic].size;
  t->b_.ub = t->b_.trueUb = t->b_.size;
  t->b_.align = kBasics[basic].align;
  *out = std::move(t);
  return Status::ok();
}

Status Type::makeHVector(const char* call, int64_t count, int64_t blocklength, int64_t strideBytes,
                         const TypeRef& old, TypeRef* out) {
  TETHER_TRY(checkCount(call, "count", count));
  TETHER_TRY(checkCount(call, "blocklength", blocklength));
  const Bounds& c = old->bounds();
  BoundsAcc acc(call);
  int64_t n = 0;
  if (!mulOk(count, blocklength, &n))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: count * blocklength overflows int64", call);
  if (n > 0) {
    int64_t lo1, hi1, lo2, hi2, lo, hi;
    if (!spanOf(count, strideBytes, &lo1, &hi1) || !spanOf(blocklength, c.extent(), &lo2, &hi2) ||
        !addOk(lo1, lo2, &lo) || !addOk(hi1, hi2, &hi))
      TETHER_FAIL(TETHER_ERR_OVERFLOW,
                  "%s: displacement arithmetic overflows int64 (count %lld, blocklength %lld, stride %lld bytes, "
                  "old extent %lld)",
                  call, static_cast<long long>(count), static_cast<long long>(blocklength),
                  static_cast<long long>(strideBytes), static_cast<long long>(c.extent()));
    TETHER_TRY(acc.add(c, n, lo, hi));
  } else {
    acc.noteEmpty(c);
  }
  auto t = std::make_shared<Type>();
  t->kind_ = Kind::HVector;
  t->b_ = acc.finish();
  TETHER_TRY(checkSpans(call, t->b_));
  t->count_ = count;
  t->blocklength_ = blocklength;
  t->stride_ = strideBytes;
  t->children_ = {old};
  *out = std::move(t);
  return Status::ok();
}

namespace {

// Bounds of blocks of child instances: block i = bl[i] instances of childOf(i) at d[i] + j * extent.
template <typename ChildOf>
Status blocksBounds(const char* call, const std::vector<int64_t>& bl, const std::vector<int64_t>& d, ChildOf childOf,
                    Bounds* out) {
  BoundsAcc acc(call);
  bool anyInstance = false;
  for (size_t i = 0; i < bl.size(); ++i) {
    if (bl[i] < 0)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: blocklengths[%zu] is negative (%lld)", call, i,
                  static_cast<long long>(bl[i]));
    if (bl[i] == 0) continue;
    const Bounds& c = childOf(i)->bounds();
    int64_t lo, hi, l2, h2;
    if (!spanOf(bl[i], c.extent(), &lo, &hi) || !addOk(lo, d[i], &l2) || !addOk(hi, d[i], &h2))
      TETHER_FAIL(TETHER_ERR_OVERFLOW,
                  "%s: displacement arithmetic overflows int64 (block %zu: %lld instances of extent %lld at %lld bytes)",
                  call, i, static_cast<long long>(bl[i]), static_cast<long long>(c.extent()),
                  static_cast<long long>(d[i]));
    TETHER_TRY(acc.add(c, bl[i], l2, h2));
    anyInstance = true;
  }
  if (!anyInstance && !bl.empty()) acc.noteEmpty(childOf(0)->bounds());
  *out = acc.finish();
  return checkSpans(call, *out);
}

// What a struct member counts as for padding: a basic type by its padding class; a derived type by its node, seen
// through the constructions that are one instance of their child at displacement 0 (dup, contiguous(1),
// vector/hvector(1, 1, any stride), indexed/hindexed/struct of one block of length 1 at displacement 0). MPICH treats
// those wrappers as their child and two separately built derived types as different, however alike (the oracle's
// probes: struct{C, C} and struct{contiguous(1, C), C} do not pad, struct{C, C'} with C' built like C does).
struct PadKey {
  const Type* node = nullptr;  // derived type; nullptr for a basic type
  int cls = -1;                // padding class of a basic type
  bool operator==(const PadKey& o) const { return node == o.node && cls == o.cls; }
};

PadKey padKey(const Type* t) {
  for (;;) {
    const bool wrapper =
        t->kind() == Kind::Dup || (t->kind() == Kind::HVector && t->count() == 1 && t->blocklength() == 1) ||
        ((t->kind() == Kind::HIndexed || t->kind() == Kind::Struct) && t->blocklengths().size() == 1 &&
         t->blocklengths()[0] == 1 && t->displacements()[0] == 0);
    if (!wrapper) break;
    t = t->children()[0].get();
  }
  PadKey k;
  if (t->kind() == Kind::Basic) k.cls = basicPadClass(t->basic());
  else k.node = t;
  return k;
}

}  // namespace

Status Type::makeHIndexed(const char* call, std::vector<int64_t> blocklengths, std::vector<int64_t> displBytes,
                          const TypeRef& old, TypeRef* out) {
  auto t = std::make_shared<Type>();
  TETHER_TRY(blocksBounds(call, blocklengths, displBytes, [&](size_t) { return old; }, &t->b_));
  if (blocklengths.empty()) t->b_.align = old->bounds().align;
  t->kind_ = Kind::HIndexed;
  t->blocklengths_ = std::move(blocklengths);
  t->displacements_ = std::move(displBytes);
  t->children_ = {old};
  *out = std::move(t);
  return Status::ok();
}

Status Type::makeStruct(const char* call, std::vector<int64_t> blocklengths, std::vector<int64_t> displBytes,
                        std::vector<TypeRef> types, TypeRef* out) {
  Bounds b;
  TETHER_TRY(blocksBounds(call, blocklengths, displBytes, [&](size_t i) { return types[i]; }, &b));
  // Alignment padding (the standard's epsilon, implementation-defined; MPICH's rule, docs/datatype.md "Bounds"):
  // without an explicit ub marker, a struct whose members are not all one type has its extent rounded up to the
  // widest alignment among its basic elements.
  bool oneType = true;
  PadKey first;
  for (size_t i = 0; i < types.size(); ++i) {
    if (blocklengths[i] == 0 || !types[i]->bounds().hasEntries()) continue;
    const PadKey k = padKey(types[i].get());
    if (!first.node && first.cls < 0) first = k;
    else oneType = oneType && k == first;
  }
  if (!b.ubMarker && !oneType && b.align > 1 && b.extent() > 0 && b.extent() % b.align != 0) {
    int64_t pad = b.align - b.extent() % b.align;
    if (!addOk(b.ub, pad, &b.ub))
      TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: upper bound %lld + alignment padding %lld overflows int64", call,
                  static_cast<long long>(b.ub), static_cast<long long>(pad));
    TETHER_TRY(checkSpans(call, b));
  }
  auto t = std::make_shared<Type>();
  t->kind_ = Kind::Struct;
  t->b_ = b;
  t->blocklengths_ = std::move(blocklengths);
  t->displacements_ = std::move(displBytes);
  t->children_ = std::move(types);
  *out = std::move(t);
  return Status::ok();
}

Status Type::makeResized(const char* call, const TypeRef& old, int64_t lb, int64_t extent, TypeRef* out) {
  auto t = std::make_shared<Type>();
  t->kind_ = Kind::Resized;
  t->b_ = old->bounds();
  t->b_.lb = lb;
  if (!addOk(lb, extent, &t->b_.ub))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: lb %lld + extent %lld overflows int64", call, static_cast<long long>(lb),
                static_cast<long long>(extent));
  t->b_.lbMarker = t->b_.ubMarker = true;
  TETHER_TRY(checkSpans(call, t->b_));
  t->children_ = {old};
  *out = std::move(t);
  return Status::ok();
}

Status Type::makeDup(const TypeRef& old, TypeRef* out) {
  auto t = std::make_shared<Type>();
  t->kind_ = Kind::Dup;
  t->b_ = old->bounds();
  t->children_ = {old};
  *out = std::move(t);
  return Status::ok();
}

Status Type::makeSubarray(const char* call, int ndims, const int64_t* sizes, const int64_t* subsizes,
                          const int64_t* starts, int order, const TypeRef& old, TypeRef* out) {
  if (ndims < 1) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: ndims must be >= 1 (got %d)", call, ndims);
  if (order != TETHER_ORDER_C && order != TETHER_ORDER_FORTRAN)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: invalid order %d (TETHER_ORDER_C %d or TETHER_ORDER_FORTRAN %d)", call,
                order, TETHER_ORDER_C, TETHER_ORDER_FORTRAN);
  for (int d = 0; d < ndims; ++d) {
    if (sizes[d] < 1 || subsizes[d] < 0 || subsizes[d] > sizes[d] || starts[d] < 0 ||
        starts[d] > sizes[d] - subsizes[d])
      TETHER_FAIL(TETHER_ERR_INVALID_ARG,
                  "%s: dimension %d: need sizes >= 1, 0 <= subsizes <= sizes, 0 <= starts <= sizes - subsizes "
                  "(sizes %lld, subsizes %lld, starts %lld)",
                  call, d, static_cast<long long>(sizes[d]), static_cast<long long>(subsizes[d]),
                  static_cast<long long>(starts[d]));
  }
  // Dimension k in fastest-first order is dims[k]; its stride is the product of the faster sizes times the extent.
  std::vector<int> dims(ndims);
  for (int k = 0; k < ndims; ++k) dims[k] = (order == TETHER_ORDER_C) ? ndims - 1 - k : k;
  int64_t stride = old->bounds().extent(), disp = 0, term = 0;
  TypeRef t = old;
  for (int k = 0; k < ndims; ++k) {
    int d = dims[k];
    TETHER_TRY(makeHVector(call, subsizes[d], 1, stride, t, &t));
    if (!mulOk(starts[d], stride, &term) || !addOk(disp, term, &disp) || !mulOk(stride, sizes[d], &stride))
      TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: array size in bytes overflows int64", call);
  }
  TETHER_TRY(makeHIndexed(call, {1}, {disp}, t, &t));
  return makeResized(call, t, 0, stride, out);
}

}  // namespace tether::dt
