// The local checks of a team collective (core/coll_check.h has the contract).
#include "core/coll_check.h"

#include <algorithm>

#include "core/coll_layout.h"
#include "core/dtype.h"
#include "core/reduce_ops.h"

namespace tether {

namespace {

// alltoallv: the four arrays (scounts and sdispls symmetric), each block inside dest/src, no overlap.
Status checkV(const char* call, const CollArgs& a, const CollSymCheck& symmetric, CollPlan* p) {
  const size_t n = p->n, es = p->es;
  if (!a.rcounts || !a.rdispls || !a.scounts || !a.sdispls)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: rcounts, rdispls, scounts and sdispls must not be NULL", call);
  TETHER_TRY(symmetric("scounts", a.scounts, n * sizeof(size_t), &p->scRef));
  TETHER_TRY(symmetric("sdispls", a.sdispls, n * sizeof(size_t), &p->sdRef));
  if (reinterpret_cast<uintptr_t>(a.scounts) % alignof(size_t) ||
      reinterpret_cast<uintptr_t>(a.sdispls) % alignof(size_t))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: scounts and sdispls must be aligned to size_t", call);
  size_t dEnd = 0, sEnd = 0;  // elements
  for (size_t m = 0; m < n; ++m) {
    size_t e = 0;
    if (__builtin_add_overflow(a.rdispls[m], a.rcounts[m], &e))
      TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: rdispls[%zu] + rcounts[%zu] overflows", call, m, m);
    if (a.rcounts[m]) dEnd = std::max(dEnd, e);
    if (__builtin_add_overflow(a.sdispls[m], a.scounts[m], &e))
      TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: sdispls[%zu] + scounts[%zu] overflows", call, m, m);
    if (a.scounts[m]) sEnd = std::max(sEnd, e);
  }
  if (__builtin_mul_overflow(dEnd, es, &p->destBytes) || __builtin_mul_overflow(sEnd, es, &p->srcBytes))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: the blocks' extent in bytes overflows", call);
  p->block = std::max(p->destBytes, p->srcBytes);
  if (p->destBytes) TETHER_TRY(symmetric("dest", a.dest, p->destBytes, &p->dref));
  if (p->srcBytes) TETHER_TRY(symmetric("src", a.src, p->srcBytes, &p->sref));
  const uintptr_t dest = reinterpret_cast<uintptr_t>(a.dest), src = reinterpret_cast<uintptr_t>(a.src);
  if ((dest | src) & (es - 1))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: dest %p and src %p must be aligned to the %zu-byte elements", call, a.dest,
                a.src, es);
  if (p->destBytes && p->srcBytes && dest < src + p->srcBytes && src < dest + p->destBytes)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: dest [%p, +%zu) and src [%p, +%zu) overlap", call, a.dest, p->destBytes,
                a.src, p->srcBytes);
  return Status::ok();
}

}  // namespace

Status collCheck(const char* call, size_t n, size_t me, const CollArgs& a, const CollSymCheck& symmetric,
                 CollPlan* p) {
  p->a = a;
  p->n = n;
  p->me = me;
  TETHER_TRY(a.invalid);
  if (p->n > (size_t{1} << kCollRounds))
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: team collectives take up to %zu members; the team has %zu", call,
                size_t{1} << kCollRounds, p->n);
  const DtypeInfo& d = dtypeInfo(a.type);
  if (d.cls == DtypeClass::Invalid) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown type %d", call, a.type);
  p->es = d.size;
  if (isReduction(a.kind) && !redOpAllowed(a.type, a.op))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: op %s is not defined for type %s (bitwise ops take integer types)",
                call, redOpName(a.op), d.name);
  if (hasRoot(a.kind) && (a.root < 0 || static_cast<size_t>(a.root) >= p->n))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: root %d is outside the team's %zu PEs", call, a.root, p->n);
  if (a.kind == CollKind::Alltoallv) return checkV(call, a, symmetric, p);
  size_t total = 0;
  if (__builtin_mul_overflow(a.count, p->es, &p->block) || __builtin_mul_overflow(p->block, p->n, &total))
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: count %zu of %zu-byte elements for %zu PEs overflows", call, a.count,
                p->es, p->n);
  switch (a.kind) {
    case CollKind::Allgather: p->destBytes = total, p->srcBytes = p->block; break;
    case CollKind::ReduceScatter: p->destBytes = p->block, p->srcBytes = total; break;
    case CollKind::Alltoall: p->destBytes = p->srcBytes = total; break;
    default: p->destBytes = p->srcBytes = p->block; break;
  }
  if (p->block == 0) return Status::ok();  // nothing moves: no object is needed
  const uintptr_t dest = reinterpret_cast<uintptr_t>(a.dest), src = reinterpret_cast<uintptr_t>(a.src);
  switch (a.kind) {
    case CollKind::Allgather: p->inPlace = src == dest + p->me * p->block; break;
    case CollKind::ReduceScatter: p->inPlace = dest == src + p->me * p->block; break;
    case CollKind::Alltoall: p->inPlace = false; break;
    default: p->inPlace = dest == src; break;
  }
  TETHER_TRY(symmetric("dest", a.dest, p->destBytes, &p->dref));
  TETHER_TRY(symmetric("src", a.src, p->srcBytes, &p->sref));
  if ((dest | src) & (p->es - 1))  // element sizes are powers of two (core/dtype.h): no division on every call
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: dest %p and src %p must be aligned to the %zu-byte elements of %s", call,
                a.dest, a.src, p->es, d.name);
  if (!p->inPlace && dest < src + p->srcBytes && src < dest + p->destBytes)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: dest [%p, +%zu) and src [%p, +%zu) overlap, and not in the in-place "
                "form of %s (see tether.h)", call, a.dest, p->destBytes, a.src, p->srcBytes, collKindName(a.kind));
  return Status::ok();
}

}  // namespace tether
