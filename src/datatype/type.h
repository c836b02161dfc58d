// Type tree of a derived datatype: immutable nodes shared by reference count, bounds computed at construction.
//
// Every MPI constructor maps onto five node kinds (Basic, HVector, HIndexed, Struct, Resized) plus Dup; the mapping
// keeps the MPI type map exactly (see docs/datatype.md "Type map"). Nodes never change after make*() returns, so
// they may be shared between handles and threads freely.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/enum_arg.h"
#include "base/status.h"
#include "tether/datatype.h"

namespace tether::dt {

// Bounds and summary of one type map, computed once at construction (docs/datatype.md "Bounds").
struct Bounds {
  int64_t size = 0;     // bytes of data in one instance
  int64_t lb = 0;       // lower bound (explicit marker if lbMarker)
  int64_t ub = 0;       // upper bound (explicit marker if ubMarker, else data bound + struct alignment padding)
  int64_t trueLb = 0;   // first data byte (0 when there is no data)
  int64_t trueUb = 0;   // one past the last data byte (0 when there is no data)
  bool lbMarker = false;
  bool ubMarker = false;
  int align = 1;        // alignment of the widest basic type in the data (struct padding)

  // Both fit in int64: every constructor checks them (TETHER_ERR_OVERFLOW otherwise), so these never wrap.
  int64_t extent() const { return ub - lb; }
  int64_t trueExtent() const { return trueUb - trueLb; }
  // The type map has entries: data or markers. A type without entries has no influence on the bounds of types
  // built from it.
  bool hasEntries() const { return size > 0 || lbMarker || ubMarker; }
};

enum class Kind { Basic, HVector, HIndexed, Struct, Resized, Dup };

class Type;
using TypeRef = std::shared_ptr<const Type>;

class Type {
 public:
  Kind kind() const { return kind_; }
  const Bounds& bounds() const { return b_; }
  // Basic: the tether_basic_t.
  int basic() const { return basic_; }
  // HVector: count blocks of blocklength children, block i at i * stride bytes; child j of a block at j * extent.
  int64_t count() const { return count_; }
  int64_t blocklength() const { return blocklength_; }
  int64_t stride() const { return stride_; }
  // HIndexed / Struct: block i = blocklengths[i] children at displacements[i] bytes.
  const std::vector<int64_t>& blocklengths() const { return blocklengths_; }
  const std::vector<int64_t>& displacements() const { return displacements_; }
  // HVector, HIndexed, Resized, Dup: children()[0]; Struct: one child per block.
  const std::vector<TypeRef>& children() const { return children_; }

  // Constructors. Each validates its arguments and 64-bit arithmetic and fails with a message naming `call`.
  // `basic` is the integer value of a tether_basic_t (validated here: an out-of-range one never becomes the enum).
  static Status makeBasic(int basic, TypeRef* out);
  static Status makeHVector(const char* call, int64_t count, int64_t blocklength, int64_t strideBytes,
                            const TypeRef& old, TypeRef* out);
  static Status makeHIndexed(const char* call, std::vector<int64_t> blocklengths, std::vector<int64_t> displBytes,
                             const TypeRef& old, TypeRef* out);
  static Status makeStruct(const char* call, std::vector<int64_t> blocklengths, std::vector<int64_t> displBytes,
                           std::vector<TypeRef> types, TypeRef* out);
  static Status makeResized(const char* call, const TypeRef& old, int64_t lb, int64_t extent, TypeRef* out);
  static Status makeDup(const TypeRef& old, TypeRef* out);
  // Subarray as MPI defines it: nested hvectors of the selected box, shifted to its start, resized to [0, full).
  // `order` is the integer value of a tether_order_t (validated here).
  static Status makeSubarray(const char* call, int ndims, const int64_t* sizes, const int64_t* subsizes,
                             const int64_t* starts, int order, const TypeRef& old, TypeRef* out);

 private:
  Kind kind_ = Kind::Basic;
  Bounds b_;
  int basic_ = -1;
  int64_t count_ = 0, blocklength_ = 0, stride_ = 0;
  std::vector<int64_t> blocklengths_, displacements_;
  std::vector<TypeRef> children_;
};

// Size of a basic type; 0 for an invalid value.
int64_t basicSize(int basic);
// Basic types of one padding class count as "the same" for struct alignment padding: integers of one size
// (signedness and C name aside), and each floating, complex and bool type on its own (MPICH's classes; see
// Type::makeStruct).
int basicPadClass(int basic);

// The integer value of an enum argument of the C API, read without loading the enum (base/enum_arg.h): a C caller may
// pass any int, and loading an out-of-range value as the enum is undefined in C++ (UBSan -fsanitize=enum halts on
// it). Validate the result before converting it back to the enum.
using ::tether::enumValue;

// Checked 64-bit arithmetic: false on overflow.
inline bool mulOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }
inline bool addOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }
inline bool subOk(int64_t a, int64_t b, int64_t* r) { return !__builtin_sub_overflow(a, b, r); }

}  // namespace tether::dt
