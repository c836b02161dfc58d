/* tether: derived datatypes (issue #7) — C API, host side.
 *
 * MPI-style derived datatypes: constructors with the semantics of MPI 4.x chapter 5 (contiguous, vector, hvector,
 * indexed, hindexed, indexed_block, hindexed_block, subarray, struct, resized, dup), queries, commit, free, and a host
 * reference pack/unpack that is resumable at any packed-byte offset. docs/datatype.md defines the bounds rules
 * (explicit lb/ub markers set by resized and subarray are sticky, as the standard reads) and the canonical form that
 * commit builds.
 *
 * Conventions
 *  - Handles are opaque and independent of any tether_t (a datatype describes memory, not a runtime instance).
 *  - Counts, block lengths, strides, displacements, sizes and extents are 64-bit. "h" constructors take byte
 *    displacements/strides; the others count in extents of the old type.
 *  - Every constructor returns a new handle the caller owns and must release with tether_type_free. A type may be
 *    freed while types built from it are alive: they keep what they reference (reference counted).
 *  - A new derived type must be committed (tether_type_commit) before it is used to pack or unpack. Basic types come
 *    committed; tether_type_dup of a committed type is committed.
 *  - Every fallible call returns tether_status_t; on failure tether_type_last_error() (thread-local) names the call
 *    and the offending values (negative counts, NULL handles, uncommitted types, 64-bit overflow, ...). Nothing
 *    aborts on bad input. (tether_last_error() of tether.h covers calls on a tether_t; see docs/datatype.md.)
 *  - Thread safety: handles are immutable after construction except for commit; concurrent use of distinct handles is
 *    safe; a handle must not be committed or freed while another thread uses it.
 */
#ifndef TETHER_DATATYPE_H
#define TETHER_DATATYPE_H

#include <stddef.h>
#include <stdint.h>

#include "tether/tether.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef struct tether_type_s* tether_type_t;

/* Basic (predefined) types: native representation, natural alignment of this ABI (x86-64 / aarch64 LP64). */
typedef enum tether_basic {
  TETHER_BASIC_BYTE = 0, TETHER_BASIC_CHAR, TETHER_BASIC_SIGNED_CHAR, TETHER_BASIC_UNSIGNED_CHAR,
  TETHER_BASIC_INT8, TETHER_BASIC_UINT8, TETHER_BASIC_INT16, TETHER_BASIC_UINT16,
  TETHER_BASIC_INT32, TETHER_BASIC_UINT32, TETHER_BASIC_INT64, TETHER_BASIC_UINT64,
  TETHER_BASIC_SHORT, TETHER_BASIC_UNSIGNED_SHORT, TETHER_BASIC_INT, TETHER_BASIC_UNSIGNED,
  TETHER_BASIC_LONG, TETHER_BASIC_UNSIGNED_LONG, TETHER_BASIC_LONG_LONG, TETHER_BASIC_UNSIGNED_LONG_LONG,
  TETHER_BASIC_FLOAT, TETHER_BASIC_DOUBLE, TETHER_BASIC_C_BOOL,
  TETHER_BASIC_FLOAT_COMPLEX, TETHER_BASIC_DOUBLE_COMPLEX,
  TETHER_BASIC_COUNT,
  TETHER_BASIC_MAX_ENUM_ = 0x7fffffff
} tether_basic_t;

typedef enum tether_order {
  TETHER_ORDER_C = 0,       /* last dimension varies fastest */
  TETHER_ORDER_FORTRAN = 1, /* first dimension varies fastest */
  TETHER_ORDER_MAX_ENUM_ = 0x7fffffff
} tether_order_t;

/* ---- constructors (MPI semantics) --------------------------------------------------------------------------- */

/* A committed handle for a basic type (free it like any other). */
tether_status_t tether_type_basic(tether_basic_t basic, tether_type_t* newtype);
tether_status_t tether_type_contiguous(int64_t count, tether_type_t oldtype, tether_type_t* newtype);
/* stride in extents of oldtype (vector) or in bytes (hvector); may be negative or zero. */
tether_status_t tether_type_vector(int64_t count, int64_t blocklength, int64_t stride, tether_type_t oldtype,
                                   tether_type_t* newtype);
tether_status_t tether_type_hvector(int64_t count, int64_t blocklength, int64_t stride_bytes, tether_type_t oldtype,
                                    tether_type_t* newtype);
/* count blocks; blocklengths[i] >= 0; displacements in extents of oldtype (indexed) or bytes (hindexed). */
tether_status_t tether_type_indexed(int64_t count, const int64_t* blocklengths, const int64_t* displacements,
                                    tether_type_t oldtype, tether_type_t* newtype);
tether_status_t tether_type_hindexed(int64_t count, const int64_t* blocklengths, const int64_t* displacements_bytes,
                                     tether_type_t oldtype, tether_type_t* newtype);
tether_status_t tether_type_indexed_block(int64_t count, int64_t blocklength, const int64_t* displacements,
                                          tether_type_t oldtype, tether_type_t* newtype);
tether_status_t tether_type_hindexed_block(int64_t count, int64_t blocklength, const int64_t* displacements_bytes,
                                           tether_type_t oldtype, tether_type_t* newtype);
/* ndims >= 1; 0 < subsizes[i] <= sizes[i] (subsizes[i] == 0 is accepted and gives an empty type),
 * 0 <= starts[i] <= sizes[i] - subsizes[i]. Bounds: lb 0, extent prod(sizes) * extent(oldtype) (explicit markers). */
tether_status_t tether_type_subarray(int ndims, const int64_t* sizes, const int64_t* subsizes, const int64_t* starts,
                                     tether_order_t order, tether_type_t oldtype, tether_type_t* newtype);
tether_status_t tether_type_struct(int64_t count, const int64_t* blocklengths, const int64_t* displacements_bytes,
                                   const tether_type_t* types, tether_type_t* newtype);
/* Sets explicit lb and ub = lb + extent markers (sticky: see docs/datatype.md). extent may be negative or zero. */
tether_status_t tether_type_resized(tether_type_t oldtype, int64_t lb, int64_t extent, tether_type_t* newtype);
tether_status_t tether_type_dup(tether_type_t oldtype, tether_type_t* newtype);

/* ---- life cycle --------------------------------------------------------------------------------------------- */

/* Builds the canonical form used by pack/unpack (and later by the GPU backend). Idempotent. Fails (type stays
 * uncommitted) with TETHER_ERR_UNSUPPORTED if the canonical form would exceed its size bound (docs/datatype.md). */
tether_status_t tether_type_commit(tether_type_t type);
/* Releases the handle and sets *type to NULL. *type == NULL is a no-op. */
tether_status_t tether_type_free(tether_type_t* type);

/* ---- queries ------------------------------------------------------------------------------------------------ */

tether_status_t tether_type_size(tether_type_t type, int64_t* size);
tether_status_t tether_type_extent(tether_type_t type, int64_t* lb, int64_t* extent);
tether_status_t tether_type_true_extent(tether_type_t type, int64_t* true_lb, int64_t* true_extent);
/* Packed size of count instances (count * size), TETHER_ERR_OVERFLOW if it does not fit in int64_t. */
tether_status_t tether_type_packed_size(tether_type_t type, int64_t count, int64_t* bytes);

/* ---- host reference pack / unpack (host memory only) -------------------------------------------------------- */

/* Pack count instances of type (instance i at buf + i * extent, displacements relative to buf), in MPI type-map
 * order, resumably: writes packed bytes [packed_offset, packed_offset + n) to packed[0 .. n), where
 * n = min(max_bytes, count * size - packed_offset); *bytes_done = n. Concatenating the fragments of calls that
 * advance packed_offset by bytes_done gives the whole pack. Requires a committed type, count >= 0,
 * 0 <= packed_offset <= count * size, max_bytes >= 0. */
tether_status_t tether_type_pack(tether_type_t type, int64_t count, const void* buf, int64_t packed_offset,
                                 int64_t max_bytes, void* packed, int64_t* bytes_done);
/* The inverse: reads packed[0 .. n) as packed bytes [packed_offset, packed_offset + n) and scatters them into buf.
 * Bytes of buf outside the type map are not touched. Where the type map names a byte twice, the later entry (in
 * type-map order) wins. */
tether_status_t tether_type_unpack(tether_type_t type, int64_t count, const void* packed, int64_t packed_offset,
                                   int64_t max_bytes, void* buf, int64_t* bytes_done);

/* ---- GPU engine: stream-ordered pack / unpack (CUDA builds) ------------------------------------------------ */

/* The same fragment semantics as tether_type_pack/unpack, enqueued on `stream` (a cudaStream_t; NULL = the legacy
 * default stream) and executed by the GPU: one kernel launch (or one cudaMemcpy2D/3DAsync where the layout is a
 * pitched array) whatever the type, the scheme chosen by a cost model calibrated once per GPU (docs/datatype.md
 * "GPU engine"; tether_type_set_gpu_scheme or TETHER_DT_SCHEME forces one). Buffers may be GPU memory, pinned (or
 * cudaHostRegister'ed) host memory or pageable host memory, in any pairing. Pageable memory makes the call complete
 * before returning: with pageable user data the stream is waited for and the host packs; a GPU user buffer with
 * pageable packed bytes goes through stream-ordered GPU scratch memory and one copy. *bytes_done is set at once. Unpack with a type map that names a byte twice keeps an
 * unspecified one of the entries (MPI: erroneous). The type's device metadata is built on first use per
 * GPU and cached on the type (commit does not touch the GPU). Fails with TETHER_ERR_UNSUPPORTED in builds without
 * CUDA and when no GPU is visible; with TETHER_ERR_CUDA (message has the CUDA error) when a launch fails. */
tether_status_t tether_type_pack_async(tether_type_t type, int64_t count, const void* buf, int64_t packed_offset,
                                       int64_t max_bytes, void* packed, int64_t* bytes_done, void* stream);
tether_status_t tether_type_unpack_async(tether_type_t type, int64_t count, const void* packed, int64_t packed_offset,
                                         int64_t max_bytes, void* buf, int64_t* bytes_done, void* stream);
/* The scheme ("thread", "warp", "elem", "copy2d", "copy3d", "batch") the engine uses for a whole pack of count
 * instances between GPU buffers on the current GPU, on a stream of the caller's (a forced scheme applies). *scheme is
 * a static string. */
tether_status_t tether_type_gpu_scheme(tether_type_t type, int64_t count, const char** scheme);
/* Forces the GPU engine's scheme for packs and unpacks through this handle ("thread", "warp", "elem", "copy2d",
 * "copy3d", "batch" (one cudaMemcpyBatchAsync of the memory runs, up to 4096 runs; not on the legacy default
 * stream); "auto" gives the choice back to TETHER_DT_SCHEME, read once per process at the first pack, and then to
 * the cost model). A pack to which the forced scheme does not apply fails, naming it. The setting belongs to the
 * handle (a dup starts at "auto"); it may be changed at any time, and applies to calls made after it returns. Fails
 * with TETHER_ERR_INVALID_ARG on an unknown name. Also in builds without CUDA (where GPU packs fail anyway). */
tether_status_t tether_type_set_gpu_scheme(tether_type_t type, const char* scheme);
/* Loads or measures (force != 0: always measures) the cost model's table for the current GPU; writes a summary of
 * the measured bandwidths to summary (if not NULL, truncated to len bytes). The measurement takes about 0.2 s and is
 * stored under TETHER_DT_CALIBRATION (default $XDG_CACHE_HOME/tether or ~/.cache/tether, one file per GPU). It also
 * loads every kernel of the engine into the current GPU's context, so that none is loaded later by its first launch
 * (see tether_doorbell_create in tether.h: a load may synchronise the context). */
tether_status_t tether_type_gpu_calibrate(int force, char* summary, size_t len);

/* ---- non-contiguous put/get (calls on a tether_t) ----------------------------------------------------------- */

/* RMA where source and target each have a datatype (MPI's matching rule: the type signatures are not compared, only
 * the packed sizes). put: src_count instances of src_type at src (local buffer, any memory) are packed in type-map
 * order and the packed bytes are unpacked into dest_count instances of dest_type at `dest` on PE pe. get: the same
 * with src on PE pe and dest local. Instance i of a side sits at buffer + i * extent, displacements relative to it.
 *  - The symmetric side (dest of put, src of get) is a symmetric address of this PE; the whole true extent of its
 *    count instances ([true_lb, true_lb + true_extent) repeated at the extent, below the address when true_lb < 0)
 *    must lie in one symmetric segment (else TETHER_ERR_NOT_SYMMETRIC naming the range).
 *  - dest_count * size(dest_type) must equal src_count * size(src_type), else TETHER_ERR_INVALID_ARG naming both;
 *    0 bytes is a no-op. Types must be committed; counts >= 0. Bytes of the target outside its type map are never
 *    written; where the target's type map names a byte twice the later entry wins (GPU route: unspecified).
 *  - Blocking forms are complete on return. _nbi forms complete at tether_quiet (today they also complete before
 *    returning, which the rule allows; do not rely on it). The local buffer may be reused when the call returns.
 *  - Errors: through tether_last_error() (like every tether_t call), not tether_type_last_error().
 * How bytes travel (direct pack/unpack in the peer's memory vs staging + contiguous put/get) is chosen per call:
 * docs/datatype.md "Non-contiguous put/get" (a cost model decides between pack/unpack in the peer's GPU memory and
 * staging for typed-to-typed transfers; tether_typed_route tells); TETHER_DT_RMA=direct or staged forces a route. */
tether_status_t tether_put_typed(tether_t world, void* dest, tether_type_t dest_type, int64_t dest_count,
                                 const void* src, tether_type_t src_type, int64_t src_count, int pe);
tether_status_t tether_get_typed(tether_t world, void* dest, tether_type_t dest_type, int64_t dest_count,
                                 const void* src, tether_type_t src_type, int64_t src_count, int pe);
tether_status_t tether_put_typed_nbi(tether_t world, void* dest, tether_type_t dest_type, int64_t dest_count,
                                     const void* src, tether_type_t src_type, int64_t src_count, int pe);
tether_status_t tether_get_typed_nbi(tether_t world, void* dest, tether_type_t dest_type, int64_t dest_count,
                                     const void* src, tether_type_t src_type, int64_t src_count, int pe);
/* Stream-ordered forms (cudaStream_t as void*, NULL: the legacy default stream): the transfer runs when `stream`
 * reaches it, after the stream's earlier work, and is complete (visible to the peer) before the stream's next operation
 * starts; arguments are checked at the call (errors are returned then). Keep both type handles until the stream has
 * run the transfer (the GPU route reads metadata cached on them). Routes a stream can run: GPU-addressable remote bytes (a p2p DEVICE segment, or a HOST segment's
 * GPU alias) with a local buffer in GPU memory: the GPU engine's kernels on the stream, straight into or out
 * of the peer's memory (typed-to-typed through stream-ordered scratch memory); or host-mapped remote bytes (HOST or
 * STATIC segments on this host) with a local buffer in host memory: the host reference in a stream host call
 * (cudaLaunchHostFunc), which holds the stream while it runs; or, where neither maps the remote bytes (a PE on
 * another host (CPU-emulated streams only so far), a same-host pair without a mapping, TETHER_DT_RMA=staged), staged
 * with a local buffer in GPU memory:
 * the engine packs into (unpacks from) stream-ordered scratch memory and one proxy call moves every memory run of
 * the remote side (at most 1048576 runs: more fail with TETHER_ERR_UNSUPPORTED). A GPU stream to a PE on another
 * host fails with TETHER_ERR_UNSUPPORTED for now (a hang seen in testing, docs/datatype.md). A local buffer
 * outside GPU memory with remote bytes that only the GPU or the proxy reaches fails with TETHER_ERR_UNSUPPORTED: use
 * the blocking form after synchronising the stream. CUDA graphs: the staged route on a stream being captured fails
 * with TETHER_ERR_UNSUPPORTED (its stage is taken at the call and given back when the stream passes it, which replays
 * would repeat); the direct (GPU) route replays (tested: a vector put from a contiguous GPU buffer, 10 replays; the
 * first GPU use of a type builds its device metadata, and with TETHER_DT_PRELOAD=0 may calibrate the cost model:
 * do it outside a capture). A graph that packs a type must not run after the type is freed. */
tether_status_t tether_put_typed_on_stream(tether_t world, void* dest, tether_type_t dest_type, int64_t dest_count,
                                           const void* src, tether_type_t src_type, int64_t src_count, int pe,
                                           void* stream);
tether_status_t tether_get_typed_on_stream(tether_t world, void* dest, tether_type_t dest_type, int64_t dest_count,
                                           const void* src, tether_type_t src_type, int64_t src_count, int pe,
                                           void* stream);

/* The route tether_put_typed (is_put != 0) or tether_get_typed would take with these arguments now, without moving
 * data: *route = "direct (CPU)", "direct (GPU)", "staged", or "none" for 0 bytes (static strings; docs/datatype.md
 * "Routes"). Same checks and errors as the transfer. For a typed-to-typed transfer on the GPU route it runs the cost
 * model, which on its first use for a PE measures the link with reads of the remote bytes (no writes). */
tether_status_t tether_typed_route(tether_t world, int is_put, void* dest, tether_type_t dest_type, int64_t dest_count,
                                   const void* src, tether_type_t src_type, int64_t src_count, int pe,
                                   const char** route);

/* Message of the last failed tether_type_* call on this thread ("" if none). Valid until the next failing call. */
const char* tether_type_last_error(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif

#endif /* TETHER_DATATYPE_H */
