/* tether: GPU communication runtime — C host API.
 *
 * Conventions
 *  - Every call takes the runtime instance (tether_t) first; there is no hidden global instance, so several may live
 *    in one process. The OpenSHMEM layer keeps one default instance on top of this API.
 *  - Every fallible call returns tether_status_t; on failure tether_last_error() (thread-local) holds a message that
 *    names the call and the offending values. Nothing aborts the process on bad input.
 *  - "Symmetric address": an address inside this PE's symmetric heap (returned by tether_malloc & co.). It names the
 *    same object on every PE; `pe` selects whose copy an operation touches.
 *  - Blocking RMA (put/get/p/g) is complete locally and remotely on return. _nbi forms may return before completion;
 *    tether_quiet() completes all of the caller's outstanding operations, tether_fence() orders them per target PE.
 *  - Local buffers may be host memory or GPU memory. Host calls read/write GPU buffers after the work already queued on
 *    the legacy default stream (cudaMemcpy, cudaMemset, default-stream kernels); work on your own streams must be
 *    synchronised before its buffers are passed here (as with NVSHMEM's host API).
 *  - Waits (barrier, wait_until, signal_wait_until) are bounded by TETHER_TIMEOUT and fail with TETHER_ERR_TIMEOUT
 *    naming address, expected and seen values. A barrier (or team sync, or collective) that fails on a PE makes the
 *    PEs of its host that wait for that PE in it fail at once with its status code, naming it.
 *  - Thread safety: calls on one instance may be made from several threads, except tether_init, tether_init_attr, tether_finalize and
 *    the collective allocation calls, which the threads of a PE must not race with each other.
 */
#ifndef TETHER_TETHER_H
#define TETHER_TETHER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ---------------------------------------------------------------------------------------------------------------- */
/* Version and build                                                                                                */

/* TETHER_VERSION_MAJOR/MINOR/PATCH/STRING/NUMBER of these headers: generated from CMake's project(VERSION). */
#include "tether/version.h"

/* ---------------------------------------------------------------------------------------------------------------- */
/* Status                                                                                                           */

typedef enum tether_status {
  TETHER_SUCCESS = 0,
  TETHER_ERR_INVALID_ARG = 1,  /* null pointer, bad enum, bad alignment, unsupported type for the operation */
  TETHER_ERR_INVALID_PE = 2,   /* PE number outside [0, n_pes) */
  TETHER_ERR_NOT_SYMMETRIC = 3,/* address (range) not inside the symmetric heap */
  TETHER_ERR_OVERFLOW = 4,     /* size arithmetic overflows */
  TETHER_ERR_NO_MEMORY = 5,    /* symmetric heap exhausted (TETHER_HEAP_MAX) or host allocation failed */
  TETHER_ERR_MISMATCH = 6,     /* a collective call got different arguments on different PEs */
  TETHER_ERR_TIMEOUT = 7,      /* a wait exceeded TETHER_TIMEOUT */
  TETHER_ERR_PEER_LOST = 8,    /* a PE exited or its connection broke */
  TETHER_ERR_BOOTSTRAP = 9,    /* rendezvous failed (address, secret, launcher environment) */
  TETHER_ERR_SYSTEM = 10,      /* an OS call failed (message has errno) */
  TETHER_ERR_CUDA = 11,        /* a CUDA call failed (message has the CUDA error) */
  TETHER_ERR_UNSUPPORTED = 12, /* valid request this build or path cannot serve (message says why) */
  TETHER_ERR_UNREACHABLE = 13, /* no path to the target PE (e.g. another host without a network transport) */
  TETHER_ERR_INTERNAL = 14,
  TETHER_ERR_TRUNCATED = 15    /* a received message was longer than the receive buffer (tether/msg.h) */
} tether_status_t;

/* Name of a status code ("TETHER_ERR_TIMEOUT"). Never NULL. */
const char* tether_status_string(tether_status_t status);
/* Message of the last failed call on this thread ("" if none). Valid until the next failing call on this thread. */
const char* tether_last_error(void);

/* Version of the library actually loaded (the sonames carry its MAJOR: libtether.so.MAJOR). Stores MAJOR, MINOR and
 * PATCH into the pointers that are not NULL and returns "MAJOR.MINOR.PATCH" (static storage). Never fails; callable
 * before tether_init. A program compiled against these headers and run against the same library sees the
 * TETHER_VERSION_* macros' values. */
const char* tether_version(int* major, int* minor, int* patch);

/* What this build of the library has, and what this process sees of the machine (tether-info prints it). */
typedef struct tether_build_info_s {
  int version_major, version_minor, version_patch; /* as tether_version() */
  int cuda;             /* 1: CUDA parts compiled in (GPU memory, stream and device APIs), 0: host-only build */
  int ucx;              /* 1: the UCX network provider compiled in */
  int sanitizers;       /* 1: built with AddressSanitizer + UndefinedBehaviorSanitizer */
  char ucx_version[32]; /* version of the UCX library loaded at run time ("1.13.1"); "" when ucx is 0 */
  int gpus_visible;     /* CUDA devices this process can see (0 in host-only builds, without a GPU or a driver) */
} tether_build_info_t;

/* Fills *info. Callable before tether_init; never touches a GPU beyond counting devices (no context is made).
 * TETHER_ERR_INVALID_ARG when info is NULL. */
tether_status_t tether_get_build_info(tether_build_info_t* info);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Instance                                                                                                         */

typedef struct tether_world* tether_t;

/* Explicit start-up parameters; zero-initialise, then set what you need. Unset fields come from the environment
 * (tetherrun, mpirun, srun, torchrun variables; see README "Launching"). */
typedef struct tether_init_attr_s {
  int rank;                     /* -1: from environment */
  int size;                     /* -1 or 0: from environment */
  const char* bootstrap_addr;   /* "host:port" served by rank 0; NULL: from environment */
  const char* job_secret;       /* NULL: from environment */
  int bootstrap_listen_fd;      /* rank 0 only: an already listening TCP socket to serve on; -1: bind addr itself.
                                   Given away with the call: tether closes it, also when the call fails */
  const char* const* config;    /* NULL or NULL-terminated list of "TETHER_NAME=value" overriding the environment */
} tether_init_attr_t;

/* Fills attr with "everything from the environment". */
void tether_init_attr_default(tether_init_attr_t* attr);

/* Collective over all PEs of the job. A program started without any launcher is a job of 1 PE. */
tether_status_t tether_init(tether_t* world);
tether_status_t tether_init_attr(const tether_init_attr_t* attr, tether_t* world);
/* Collective over every rank of an MPI communicator, which becomes the job (PE = rank in it). mpi_comm points at the
 * caller's MPI_Comm (e.g. &MPI_COMM_WORLD; mpi4py: MPI._addressof(comm)). MPI must be initialised (MPI_Init) and
 * stay so until tether_init_mpi returns on every rank; tether does not link MPI: it finds the library the process
 * has loaded at call time (Open MPI, or MPICH's ABI: MPICH, Intel MPI, MVAPICH, Cray MPICH; anything else is
 * TETHER_ERR_UNSUPPORTED). Only rank 0's rendezvous address and a random job secret cross MPI (one MPI_Ibcast,
 * bounded by TETHER_TIMEOUT: TETHER_ERR_TIMEOUT when a rank does not call); no bootstrap address or port is picked
 * by hand, and later tether calls do not use MPI. attr may be NULL; its rank, size, bootstrap_addr and
 * bootstrap_listen_fd must be unset (TETHER_ERR_INVALID_ARG), its config list applies. A communicator the MPI
 * library rejects is handled by MPI's error handler (by default it aborts the job). */
tether_status_t tether_init_mpi(const void* mpi_comm, const tether_init_attr_t* attr, tether_t* world);
/* Collective: completes outstanding operations, synchronises, releases the heap. world may be NULL (no-op). After it,
 * the handle is dead: every call on it (a second tether_finalize too) fails with TETHER_ERR_INVALID_ARG, as on a
 * handle that was never initialised. */
tether_status_t tether_finalize(tether_t world);

int tether_my_pe(tether_t world);
int tether_n_pes(tether_t world);
int tether_local_pe(tether_t world);   /* rank among the PEs on this host */
int tether_local_size(tether_t world); /* number of PEs on this host */

/* ---------------------------------------------------------------------------------------------------------------- */
/* Symmetric heap. All allocation calls are collective: every PE calls them in the same order with the same
 * arguments (checked: a mismatch fails on every PE with TETHER_ERR_MISMATCH naming both values). They end with a
 * barrier, so the new object is usable on every PE on return. */

typedef enum tether_seg_kind {
  TETHER_SEG_DEFAULT = 0, /* DEVICE when this PE has a GPU segment, else HOST */
  TETHER_SEG_HOST = 1,    /* shared host memory, mapped by all same-host PEs */
  TETHER_SEG_DEVICE = 2,  /* GPU memory (issue #4; returns TETHER_ERR_UNSUPPORTED until then) */
  TETHER_SEG_KIND_MAX_ENUM_ = 0x7fffffff
} tether_seg_kind_t;

tether_status_t tether_malloc(tether_t world, size_t size, void** ptr);
tether_status_t tether_calloc(tether_t world, size_t count, size_t size, void** ptr);
tether_status_t tether_align(tether_t world, size_t alignment, size_t size, void** ptr);
tether_status_t tether_malloc_kind(tether_t world, tether_seg_kind_t kind, size_t alignment, size_t size, void** ptr);
/* ptr NULL behaves like malloc; size 0 frees and returns NULL. Contents up to min(old, new) size are kept. */
tether_status_t tether_realloc(tether_t world, void* ptr, size_t size, void** new_ptr);
tether_status_t tether_free(tether_t world, void* ptr); /* NULL is a (collective) no-op */

/* Symmetric global and static data (the STATIC segment). Collective: makes the existing range [addr, addr + size) of
 * this process symmetric -- byte k of it corresponds to byte k of every other PE's range (every PE passes the same
 * size; checked). The contents are kept and the program goes on using the same addresses; RMA, atomics, signals,
 * waits and tether_ptr then accept addresses in the range like HOST heap addresses (it is host memory, reached by
 * same-host PEs; tether_segment_kind reports TETHER_SEG_HOST). addr and size must be page-aligned, the range writable
 * private memory of this process, and no other thread may write it during the call. One range per instance; it
 * cannot be freed (it stays shared for the life of the process, also after tether_finalize, and a fork()ed child
 * shares it with its parent). */
tether_status_t tether_register_static(tether_t world, void* addr, size_t size);
/* Collective: tether_register_static on the main program's own global and static variables (the writable data of the
 * executable: .data and .bss, whole pages, without the part that is read-only after relocation). Variables of shared
 * libraries are not included. */
tether_status_t tether_register_program_data(tether_t world);

/* Which segment the symmetric address addr lies in (TETHER_SEG_HOST or TETHER_SEG_DEVICE), or TETHER_SEG_DEFAULT when
 * addr is not a symmetric address of this PE. */
tether_seg_kind_t tether_segment_kind(tether_t world, const void* addr);

/* Direct pointer to `pe`'s copy of the symmetric object at `addr`, or NULL when that PE's memory cannot be addressed
 * directly from here (or addr is not symmetric). For a DEVICE object it is a GPU address (usable in kernels and CUDA
 * copies, not by CPU loads and stores). */
void* tether_ptr(tether_t world, const void* addr, int pe);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Element types (atomics, waits, typed helpers) */

typedef enum tether_dtype {
  TETHER_INT = 0, TETHER_LONG, TETHER_LONGLONG, TETHER_UINT, TETHER_ULONG, TETHER_ULONGLONG,
  TETHER_INT32, TETHER_INT64, TETHER_UINT32, TETHER_UINT64, TETHER_SIZE, TETHER_PTRDIFF,
  TETHER_FLOAT, TETHER_DOUBLE, TETHER_SHORT, TETHER_USHORT,
  /* Element types of the team collectives only (tether_team_allreduce & co.); atomics and waits refuse them.
   * HALF: IEEE 754 binary16; BFLOAT16: the upper 16 bits of a binary32. */
  TETHER_INT8, TETHER_UINT8, TETHER_HALF, TETHER_BFLOAT16,
  TETHER_DTYPE_COUNT,
  TETHER_DTYPE_MAX_ENUM_ = 0x7fffffff /* keeps any int a valid value of the type: bad values are reported, not UB */
} tether_dtype_t;

size_t tether_dtype_size(tether_dtype_t type); /* 0 for an invalid type */

/* ---------------------------------------------------------------------------------------------------------------- */
/* RMA. dest (put) / src (get) are symmetric addresses, the local buffer may be any memory. */

tether_status_t tether_put(tether_t world, void* dest, const void* src, size_t nbytes, int pe);
tether_status_t tether_get(tether_t world, void* dest, const void* src, size_t nbytes, int pe);
tether_status_t tether_put_nbi(tether_t world, void* dest, const void* src, size_t nbytes, int pe);
/* Local completion (OpenSHMEM's and NVSHMEM's blocking put): returns once src may be reused; the data is delivered by
 * the next tether_quiet or barrier, before a later signal or put_signal to that PE lands, and ordered before later
 * puts to that PE by tether_fence. Over the network (UCX) this skips the round trip that tether_put waits for; on
 * other paths it is tether_put. */
tether_status_t tether_put_local(tether_t world, void* dest, const void* src, size_t nbytes, int pe);
tether_status_t tether_get_nbi(tether_t world, void* dest, const void* src, size_t nbytes, int pe);
/* Element-count forms: fail with TETHER_ERR_OVERFLOW when nelems * elem_size overflows. */
tether_status_t tether_put_elems(tether_t world, void* dest, const void* src, size_t nelems, size_t elem_size, int pe);
tether_status_t tether_get_elems(tether_t world, void* dest, const void* src, size_t nelems, size_t elem_size, int pe);

tether_status_t tether_quiet(tether_t world);
tether_status_t tether_fence(tether_t world);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Atomics. Atomic with respect to every other tether atomic on the same object, from any PE. Types:
 *  - FETCH, SET, SWAP: all dtypes but SHORT/USHORT (those are for waits only)
 *  - COMPARE_SWAP, INC, FETCH_INC, ADD, FETCH_ADD: integer dtypes
 *  - AND, OR, XOR (+ FETCH_): UINT, ULONG, ULONGLONG, INT32, INT64, UINT32, UINT64
 * value/cond point to one element of `type`; fetched (may be NULL for non-fetching ops) receives the old value. */

typedef enum tether_amo {
  TETHER_AMO_FETCH = 0, TETHER_AMO_SET, TETHER_AMO_SWAP, TETHER_AMO_COMPARE_SWAP,
  TETHER_AMO_INC, TETHER_AMO_FETCH_INC, TETHER_AMO_ADD, TETHER_AMO_FETCH_ADD,
  TETHER_AMO_AND, TETHER_AMO_FETCH_AND, TETHER_AMO_OR, TETHER_AMO_FETCH_OR,
  TETHER_AMO_XOR, TETHER_AMO_FETCH_XOR,
  TETHER_AMO_COUNT,
  TETHER_AMO_MAX_ENUM_ = 0x7fffffff
} tether_amo_t;

tether_status_t tether_atomic(tether_t world, tether_amo_t op, tether_dtype_t type, void* dest, const void* value,
                              const void* cond, void* fetched, int pe);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Point-to-point synchronisation on local symmetric variables (ivars are this PE's own symmetric objects). */

typedef enum tether_cmp {
  TETHER_CMP_EQ = 0, TETHER_CMP_NE, TETHER_CMP_GT, TETHER_CMP_GE, TETHER_CMP_LT, TETHER_CMP_LE,
  TETHER_CMP_MAX_ENUM_ = 0x7fffffff
} tether_cmp_t;

tether_status_t tether_wait_until(tether_t world, void* ivar, tether_dtype_t type, tether_cmp_t cmp,
                                  const void* value);
/* *result = 1 when the comparison holds now, else 0. */
tether_status_t tether_test(tether_t world, void* ivar, tether_dtype_t type, tether_cmp_t cmp, const void* value,
                            int* result);

/* Array forms over ivars[0..n) (elements of `type`, contiguous). status (may be NULL) excludes entries whose status
 * is non-zero. `values` is one value (scalar forms) or n values (the _vector forms).
 *  _all: wait until every included entry satisfies; _any: until one does, *index = its index (SIZE_MAX when no
 *  entry is included; the scan starts after the index last returned for the same ivars, so repeated calls return
 *  the satisfied entries in turn, not always the lowest); _some: until at least one does, indices[0..*count) = all
 *  satisfied entries.
 *  The test_ forms return at once: *result (all) 1/0, *index SIZE_MAX if none, *count 0 if none. */
tether_status_t tether_wait_until_all(tether_t world, void* ivars, size_t n, const int* status, tether_dtype_t type,
                                      tether_cmp_t cmp, const void* value);
tether_status_t tether_wait_until_any(tether_t world, void* ivars, size_t n, const int* status, tether_dtype_t type,
                                      tether_cmp_t cmp, const void* value, size_t* index);
tether_status_t tether_wait_until_some(tether_t world, void* ivars, size_t n, const int* status, tether_dtype_t type,
                                       tether_cmp_t cmp, const void* value, size_t* indices, size_t* count);
tether_status_t tether_wait_until_all_vector(tether_t world, void* ivars, size_t n, const int* status,
                                             tether_dtype_t type, tether_cmp_t cmp, const void* values);
tether_status_t tether_wait_until_any_vector(tether_t world, void* ivars, size_t n, const int* status,
                                             tether_dtype_t type, tether_cmp_t cmp, const void* values, size_t* index);
tether_status_t tether_wait_until_some_vector(tether_t world, void* ivars, size_t n, const int* status,
                                              tether_dtype_t type, tether_cmp_t cmp, const void* values,
                                              size_t* indices, size_t* count);
tether_status_t tether_test_all(tether_t world, void* ivars, size_t n, const int* status, tether_dtype_t type,
                                tether_cmp_t cmp, const void* value, int* result);
tether_status_t tether_test_any(tether_t world, void* ivars, size_t n, const int* status, tether_dtype_t type,
                                tether_cmp_t cmp, const void* value, size_t* index);
tether_status_t tether_test_some(tether_t world, void* ivars, size_t n, const int* status, tether_dtype_t type,
                                 tether_cmp_t cmp, const void* value, size_t* indices, size_t* count);
tether_status_t tether_test_all_vector(tether_t world, void* ivars, size_t n, const int* status, tether_dtype_t type,
                                       tether_cmp_t cmp, const void* values, int* result);
tether_status_t tether_test_any_vector(tether_t world, void* ivars, size_t n, const int* status, tether_dtype_t type,
                                       tether_cmp_t cmp, const void* values, size_t* index);
tether_status_t tether_test_some_vector(tether_t world, void* ivars, size_t n, const int* status,
                                        tether_dtype_t type, tether_cmp_t cmp, const void* values, size_t* indices,
                                        size_t* count);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Signals: 64-bit words in the symmetric heap. A put-with-signal delivers the data before the signal update is
 * visible (release/acquire): who sees the signal sees the data. */

typedef enum tether_signal_op { TETHER_SIGNAL_SET = 0, TETHER_SIGNAL_ADD = 1, TETHER_SIGNAL_MAX_ENUM_ = 0x7fffffff } tether_signal_op_t;

tether_status_t tether_put_signal(tether_t world, void* dest, const void* src, size_t nbytes, uint64_t* sig_addr,
                                  uint64_t signal, tether_signal_op_t sig_op, int pe);
tether_status_t tether_put_signal_nbi(tether_t world, void* dest, const void* src, size_t nbytes, uint64_t* sig_addr,
                                      uint64_t signal, tether_signal_op_t sig_op, int pe);
tether_status_t tether_signal_op(tether_t world, uint64_t* sig_addr, uint64_t signal, tether_signal_op_t sig_op,
                                 int pe);
tether_status_t tether_signal_fetch(tether_t world, const uint64_t* sig_addr, uint64_t* value);
/* Waits until (*sig_addr cmp value) holds on this PE; *seen (may be NULL) receives the satisfying value. */
tether_status_t tether_signal_wait_until(tether_t world, uint64_t* sig_addr, tether_cmp_t cmp, uint64_t value,
                                         uint64_t* seen);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Collective synchronisation over all PEs. barrier_all also completes (quiet) the caller's outstanding operations
 * first; sync_all only synchronises (memory stores made before it are visible to all PEs after it). */

tether_status_t tether_barrier_all(tether_t world);
tether_status_t tether_sync_all(tether_t world);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Teams (issue #21; docs/teams.md). A team is an ordered list of PEs of one instance; a member's index in it is its
 * team PE number. Every instance has two predefined teams: the world team (every PE, team PE = world PE) and the
 * shared team (the PEs whose HOST symmetric memory this PE can load and store, tether_ptr non-NULL, in world order:
 * the tether_local_size PEs of this host with team PE = tether_local_pe, or only this PE when same-host PEs are
 * reached through a network path, TETHER_PATHS=host=ucx). Splits make more; a handle is valid on the PEs that are
 * members, until tether_team_destroy or tether_finalize. Handles are checked: a destroyed, finalized or garbage
 * handle fails with TETHER_ERR_INVALID_ARG (queries return -1), never crashes.
 * Each PE holds at most TETHER_TEAM_MAX live teams, the two predefined ones included: each live team has an index in
 * [0, TETHER_TEAM_MAX) (tether_team_index), the same on every member and different for the teams live on any one PE
 * (a layer above tether may index its own per-team symmetric state with it; indices of destroyed teams are reused).
 * Collective calls on a team (split of it, sync, barrier) are called by every member in the same order, and the
 * threads of a PE must not race them on one team. A collective on a team that fails part-way (a timeout) loses the
 * team's collective state: later collectives on it fail at once with the first error. Waits are bounded by
 * TETHER_TIMEOUT. */

typedef struct tether_team_s* tether_team_t;
#define TETHER_TEAM_INVALID ((tether_team_t)0)
#define TETHER_TEAM_MAX 64

/* Configuration of a new team; zero-initialise. NULL means all zero. */
typedef struct tether_team_config_s {
  uint32_t flags; /* no flag is defined yet: must be 0 (else the split fails on every member, TETHER_ERR_INVALID_ARG) */
} tether_team_config_t;

/* The predefined teams; TETHER_TEAM_INVALID (tether_last_error says why) when world is not a live instance. */
tether_team_t tether_team_world(tether_t world);
tether_team_t tether_team_shared(tether_t world);

/* Collective over parent (every member calls with the same start, stride, size; a difference fails on every member
 * with TETHER_ERR_MISMATCH naming both values). Makes the team of the parent PEs start + i*stride, i = 0..size-1
 * (stride may be negative; 0 only for size 1; every PE inside the parent, else TETHER_ERR_INVALID_ARG on every
 * member). *new_team = the new team on its members, TETHER_TEAM_INVALID elsewhere (and on any failure). When one of
 * the new teams finds no index free on all of its members, no team is made: TETHER_ERR_NO_MEMORY on every member.
 * A PE that is not a member of parent fails at once (TETHER_ERR_INVALID_ARG), without communicating. */
tether_status_t tether_team_split_strided(tether_team_t parent, int start, int stride, int size,
                                          const tether_team_config_t* config, tether_team_t* new_team);
/* Collective over parent: a 2-D grid of xrange columns over the parent PEs in order (parent PE p at column p % xrange,
 * row p / xrange; the last row may be short; xrange >= 1, larger than the parent: one row). *xaxis_team = this PE's
 * row, *yaxis_team = its column. Agreement and failures as tether_team_split_strided (xrange is checked equal). */
tether_status_t tether_team_split_2d(tether_team_t parent, int xrange, const tether_team_config_t* xaxis_config,
                                     tether_team_t* xaxis_team, const tether_team_config_t* yaxis_config,
                                     tether_team_t* yaxis_team);
/* Local: releases this PE's handle (and its index, for later splits) once this PE is done with the team. It first
 * waits until every member has finished the data collectives this PE called on it (an eager broadcast's root returns
 * before its members read; bounded by TETHER_TIMEOUT, which fails and leaves the team live); a sync or barrier still
 * arriving from another member: TETHER_ERR_INVALID_ARG, the team stays live -- except on a team whose collective state
 * is lost (a sync or collective on it failed part-way): its handle is released all the same, and where other members
 * still write its words its index stays reserved on this PE for the rest of the run. TETHER_TEAM_INVALID: no-op; the
 * predefined teams cannot be destroyed. */
tether_status_t tether_team_destroy(tether_team_t team);

/* Queries (local); -1 when the team is not valid here (tether_last_error says why; TETHER_TEAM_INVALID: silently). */
int tether_team_my_pe(tether_team_t team);
int tether_team_n_pes(tether_team_t team);
int tether_team_index(tether_team_t team);
/* The world PE number of team PE pe; -1 when pe is outside [0, n_pes). */
int tether_team_world_pe(tether_team_t team, int pe);
/* The number in dest_team of team PE src_pe of src_team; -1 when that PE is not a member of dest_team. */
int tether_team_translate_pe(tether_team_t src_team, int src_pe, tether_team_t dest_team);

/* Collective over the team. sync: stores made before it by any member (to memory and by blocking tether calls) are
 * visible to every member after it. barrier: also completes (quiet) this PE's outstanding operations first. */
tether_status_t tether_team_sync(tether_team_t team);
tether_status_t tether_team_barrier(tether_team_t team);

/* Data collectives on a team (issue #21; docs/collectives.md), called by every member in the same order with the same
 * count, type, op and root and the same symmetric dest and src (every member's copy of one symmetric object; any
 * segment kind, HOST, DEVICE or STATIC, each aligned to the element size). Blocking: on return dest holds the result
 * and src may be reused. Counts are elements of `type`.
 *  broadcast:      dest[0, count) = src[0, count) of team PE root. In place: dest == src (the root's dest is then
 *                  left alone). Only src must be the same object everywhere; each member's dest is its own.
 *  reduce:         dest[0, count) of team PE root = op over every member's src[0, count), combined in team order
 *                  (the same bits on every run, but for the payload of a NaN summed or multiplied from two NaNs);
 *                  other members' dest is untouched. In place: dest == src.
 *  allreduce:      like reduce, on every member. In place: dest == src.
 *  allgather:      dest[m*count, (m+1)*count) = src[0, count) of team PE m (dest holds n_pes*count). In place: src ==
 *                  dest + my_pe*count on every member (then each member's block is already in place).
 *  reduce_scatter: dest[0, count) of team PE m = op over every member's src[m*count, (m+1)*count) (src holds
 *                  n_pes*count). In place: dest == src + my_pe*count on every member.
 *  alltoall:       dest[m*count, (m+1)*count) = src[my_pe*count, (my_pe+1)*count) of team PE m; dest and src must
 *                  not overlap.
 * Reductions: SUM, PROD, MIN, MAX on every type; AND, OR, XOR on the integer types. Integer SUM/PROD wrap; HALF and
 * BFLOAT16 combine in float and round to nearest even after each step.
 * Agreement: a member's bad arguments (invalid type/op/root, dest or src not symmetric, misaligned, overlapping other
 * than the in-place forms) fail the call on every member (TETHER_ERR_INVALID_ARG or the member's own code there,
 * "team PE k passed invalid arguments" on the others); different count, type, op, root, in-place choice or objects
 * on different members fail on every member with TETHER_ERR_MISMATCH naming both values. The team stays usable after
 * either. A non-member holds no valid handle: its call fails at once. Waits are bounded by TETHER_TIMEOUT; a
 * collective that fails part-way loses the team's collective state (later ones fail at once). Memory ordering: like
 * tether_team_sync at entry (stores made before the call by any member are seen by the collective). GPU objects:
 * each member's part runs after the work queued on its legacy default stream (a cudaMemcpy into src from pageable
 * memory has landed before any peer reads it); work on other streams must be synchronised by the caller.
 * Collectives on DEVICE objects (dest and src) are moved and combined on the GPU after the agreement (the stream
 * form's kernel on a stream of tether's, waited for; TETHER_COLL_GPU=0: by the CPU), where every member is
 * load/store reachable; broadcast and alltoallv by the CPU (peer copies). docs/collectives.md "GPU engine". */
typedef enum tether_red_op {
  TETHER_RED_SUM = 0, TETHER_RED_PROD, TETHER_RED_MIN, TETHER_RED_MAX, TETHER_RED_AND, TETHER_RED_OR, TETHER_RED_XOR,
  TETHER_RED_COUNT,
  TETHER_RED_MAX_ENUM_ = 0x7fffffff
} tether_red_op_t;

tether_status_t tether_team_broadcast(tether_team_t team, void* dest, const void* src, size_t count,
                                      tether_dtype_t type, int root);
/* The eager broadcast (OpenSHMEM's contract; docs/collectives.md "Eager broadcast"): the same result, without a
 * barrier where every member's HOST segment is load/store mapped (one host): the root returns once its data is staged
 * (up to 896 bytes of HOST src; larger or GPU src: once every member has read it), the others once they hold it.
 * Agreement is weaker: a member whose count, type, root or src differs from the root's (or whose root passed invalid
 * arguments) fails with TETHER_ERR_MISMATCH (TETHER_ERR_INVALID_ARG), the root and the members matching it succeed;
 * a member with invalid arguments fails alone; members calling another collective (or tether_team_broadcast) at the
 * same point fail with TETHER_ERR_MISMATCH; the team stays usable. Elsewhere (UCX peers) it is tether_team_broadcast,
 * agreed on every member. */
tether_status_t tether_team_broadcast_eager(tether_team_t team, void* dest, const void* src, size_t count,
                                            tether_dtype_t type, int root);
tether_status_t tether_team_reduce(tether_team_t team, void* dest, const void* src, size_t count, tether_dtype_t type,
                                   tether_red_op_t op, int root);
tether_status_t tether_team_allreduce(tether_team_t team, void* dest, const void* src, size_t count,
                                      tether_dtype_t type, tether_red_op_t op);
tether_status_t tether_team_allgather(tether_team_t team, void* dest, const void* src, size_t count,
                                      tether_dtype_t type);
tether_status_t tether_team_reduce_scatter(tether_team_t team, void* dest, const void* src, size_t count,
                                           tether_dtype_t type, tether_red_op_t op);
tether_status_t tether_team_alltoall(tether_team_t team, void* dest, const void* src, size_t count,
                                     tether_dtype_t type);
/* The eager alltoall (OpenSHMEM's contract; docs/collectives.md "Eager alltoall"): the same result, for programs that
 * guarantee that every member's dest may be written as soon as any member enters the call (no member still reads or
 * writes its dest from before, e.g. after a sync). With TETHER_COLL_EAGER_ALLTOALL=1 (the default), where every
 * member's HOST segment is load/store mapped (one host) and dest and src are HOST/STATIC memory, each member stores its
 * blocks straight into the others' dest and the call takes one wait; a mismatch (count, type, objects, or
 * tether_team_alltoall on some member) still fails on every member with TETHER_ERR_MISMATCH, but after the blocks were
 * stored. Otherwise (TETHER_COLL_EAGER_ALLTOALL=0, and elsewhere) it is tether_team_alltoall. */
tether_status_t tether_team_alltoall_eager(tether_team_t team, void* dest, const void* src, size_t count,
                                           tether_dtype_t type);
/* alltoallv (host form only): this PE's block for team PE j is scounts[j] elements at src + sdispls[j]; it lands at
 * dest + rdispls[m] of team PE j, where m is this PE's team PE number, and j must expect it: its rcounts[m] equals
 * scounts[j] (else TETHER_ERR_MISMATCH on every member, naming both). Counts and displacements are in elements, n_pes
 * entries each. scounts and sdispls are symmetric arrays (every member's copy of one object in the symmetric heap:
 * the receivers read their entries); rcounts and rdispls are local. dest and src are symmetric, aligned to the
 * element, and must not overlap. */
tether_status_t tether_team_alltoallv(tether_team_t team, void* dest, const size_t* rcounts, const size_t* rdispls,
                                      const void* src, const size_t* scounts, const size_t* sdispls,
                                      tether_dtype_t type);

/* Stream-ordered forms (stream: a cudaStream_t, NULL = the legacy default stream): enqueued, return at once; on the
 * stream each runs as one kernel (the device form, tether::device::team_*, at grid scope: one block with a thread
 * per 64 bytes of result in whole warps, 32 to 512, or a cooperative grid of 512-thread blocks, one per
 * TETHER_COLL_BLOCK_BYTES of result, up to the blocks the GPU holds resident and to TETHER_COLL_BLOCKS when set; an
 * allreduce of 3+ members two-shot from TETHER_COLL_TWO_SHOT bytes) after the stream's earlier work, and is complete
 * on every member before the stream's later work starts. Graph-capturable (a captured allreduce replayed 10 times
 * combines every replay's inputs: gpu_coll's graphCase). Arguments are checked on this PE at the
 * call (the same local errors as the host forms); they are NOT compared across members (the call returns before the
 * others call), so different arguments on different members are undefined, as in NCCL.
 * Teams: members at a fixed world-PE stride (tether_team_device_view). Every tether_dtype_t; reductions need every
 * member reachable by loads and stores (one host; TETHER_ERR_UNSUPPORTED otherwise). sync_on_stream: the team's
 * barrier without the quiet. */
tether_status_t tether_team_sync_on_stream(tether_team_t team, void* stream);
tether_status_t tether_team_broadcast_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                tether_dtype_t type, int root, void* stream);
tether_status_t tether_team_reduce_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                             tether_dtype_t type, tether_red_op_t op, int root, void* stream);
tether_status_t tether_team_allreduce_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                tether_dtype_t type, tether_red_op_t op, void* stream);
tether_status_t tether_team_allgather_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                tether_dtype_t type, void* stream);
tether_status_t tether_team_reduce_scatter_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                     tether_dtype_t type, tether_red_op_t op, void* stream);
tether_status_t tether_team_alltoall_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                               tether_dtype_t type, void* stream);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Device handle: everything the header-only device API (tether/device.cuh, namespace tether::device) needs, in one
 * trivially copyable struct that kernels take BY VALUE (no __device__ globals, no -rdc). Plain data; read it, never
 * write it. Addresses in it are in the handle's address space: GPU addresses (HOST and STATIC views through their
 * registered GPU aliases) for tether_device_handle, CPU addresses for tether_device_handle_cpu.
 *
 * Translation of a symmetric address a (as tether_malloc returned it on this PE) to PE pe, segment k:
 *   off = a - seg[k].sym_base   (a lies in segment k when off < seg[k].size)
 *   direct:   seg[k].window + pe * seg[k].stride + off        (flags & TETHER_DEVICE_DIRECT: no memory access)
 *   else:     peers[pe].base[k] + off, or unreachable when peers[pe].base[k] == 0
 * Lifetime: valid until tether_finalize, and until the next collective allocation that grows a heap (segment sizes
 * change, and a HOST view may be registered with the GPU again, its alias moved): take a fresh handle after allocating.
 *
 * Proxy ring (proxy_ring != NULL, flag TETHER_DEVICE_PROXY): (pe, segment) pairs with peers[pe].base[k] == 0 that
 * the World reaches by its host path (TETHER_FORCE_PROXY=1: every PE but this one) are served by a proxy thread of
 * the World. Once the World runs a proxy (the stream layer also starts one, for host-memory atomics on GPUs without
 * host-native atomics), every handle carries its ring, with the flag only where some pair needs it. A producer takes ticket t = (*proxy_ticket)++ (atomic; GPU memory for the GPU handle), waits until
 * slot t % proxy_slots has seq == t << 2 (free for t), fills it, and stores seq = (t << 2) | 1 LAST with release
 * semantics at system scope. The proxy executes tickets in order; a fetching descriptor (TETHER_PROXY_FETCH) gets
 * result and seq = (t << 2) | 2, after which its producer reads result and frees the slot with seq = (t + slots) << 2;
 * any other descriptor is freed by the proxy. Then proxy_state->done = t + 1 (release): every ticket below done is
 * complete (its effects visible to every PE). A descriptor the proxy cannot execute sets proxy_state->error = t + 1
 * (first failure, logged with its reason) and still completes. Slots and proxy_state are host-pinned memory, mapped
 * for the GPU handle. */

#define TETHER_DEVICE_SEG_HOST 0
#define TETHER_DEVICE_SEG_DEVICE 1
#define TETHER_DEVICE_SEG_STATIC 2
#define TETHER_DEVICE_SEGS 3
#define TETHER_DEVICE_MAX_ROUNDS 32

/* handle flags */
#define TETHER_DEVICE_DIRECT 1u /* every PE is on this host at local index == pe, every present segment of every PE is
                                   reachable, and views lie at window + j*stride: translation is arithmetic only */
#define TETHER_DEVICE_GPU 2u    /* addresses are for kernels of this PE's GPU (else for CPU threads) */
#define TETHER_DEVICE_PROXY 4u  /* some (PE, segment) is served by the proxy ring (proxy_ring is set) */
#define TETHER_DEVICE_PROXY_MIXED 8u /* some PE has both load/store-reachable and proxied segments: fence() then
                                        waits for the ring (stores and ring operations to one PE stay ordered) */

/* Proxy descriptor op word: TETHER_PROXY_OP_* in bits 0-7, target segment kind (TETHER_DEVICE_SEG_*) in bits 8-11,
 * signal segment kind in bits 12-15 (put_signal), signal op (tether_signal_op_t) in bit 16, tether_amo_t in bits
 * 20-27 (AMO), TETHER_PROXY_FETCH in bit 31 (the producer waits for result and frees the slot). */
#define TETHER_PROXY_OP_PUT 1u        /* size bytes from local to (pe, offset) */
#define TETHER_PROXY_OP_PUT_INLINE 2u /* size <= 8 bytes of value to (pe, offset) */
#define TETHER_PROXY_OP_GET 3u        /* size bytes from (pe, offset) to local */
#define TETHER_PROXY_OP_GET_INLINE 4u /* size <= 8 bytes from (pe, offset) into result (fetching) */
#define TETHER_PROXY_OP_AMO 5u        /* width size (4/8) AMO: operand value, compare value aux; old value in result */
#define TETHER_PROXY_OP_SIGNAL 6u     /* signal op with value on the 64-bit word at (pe, offset) */
#define TETHER_PROXY_OP_PUT_SIGNAL 7u /* PUT, then the signal op with value on (pe, signal kind, aux) */
#define TETHER_PROXY_FETCH 0x80000000u

typedef struct tether_proxy_desc_s { /* 64 bytes, one slot of the ring */
  uint64_t seq;    /* slot state (see above); written last by the producer */
  uint32_t op;     /* op word (above) */
  int32_t pe;      /* target PE */
  uint64_t offset; /* byte offset of the target in its segment */
  uint64_t size;   /* bytes */
  uint64_t local;  /* local buffer in the handle's address space: source of PUT, destination of GET */
  uint64_t value;  /* inline bytes (PUT_INLINE), AMO operand, signal value */
  uint64_t aux;    /* AMO compare value; PUT_SIGNAL: offset of the signal word */
  uint64_t result; /* written by the proxy for fetching descriptors */
} tether_proxy_desc_t;

typedef struct tether_proxy_state_s { /* host-pinned; written by the proxy thread only */
  uint64_t done;     /* tickets < done are complete */
  uint64_t pad0_[7];
  uint64_t error;    /* 0, or 1 + the ticket of the first descriptor the proxy could not execute */
  uint64_t pad1_[7];
} tether_proxy_state_t;

typedef struct tether_device_segment_s {
  uint64_t sym_base; /* this PE's copy as the program names it (CPU address for HOST/STATIC, GPU for DEVICE) */
  uint64_t size;     /* bytes of the symmetric range: [sym_base, sym_base + size) */
  uint64_t window;   /* view of local PE 0 in the handle's address space (valid when uniform) */
  uint64_t stride;   /* distance between consecutive local PEs' views (valid when uniform) */
  uint64_t my_view;  /* this PE's own copy in the handle's address space */
  uint32_t present;  /* this segment exists (and is reachable for this PE itself) */
  uint32_t uniform;  /* views of local PE j at window + j*stride */
} tether_device_segment_t;

typedef struct tether_device_peer_s {
  int32_t local_index; /* index among this host's PEs, -1 on another host */
  uint32_t reach;      /* bit k set: segment k of this PE is addressable by loads/stores/atomics from here */
  uint64_t base[TETHER_DEVICE_SEGS]; /* that PE's copy of segment k in the handle's address space, 0 if unreachable */
} tether_device_peer_t;

/* Internal words of the device barrier (one block per PE, in its DEVICE segment when there is one, else in the HOST
 * control block). round[r] is written only by PE (me - 2^r) mod n (dissemination, n > barrier_flat_max) or by PE
 * (me - r - 1) mod n (one round, n <= barrier_flat_max), epoch only by this PE. */
typedef struct tether_device_barrier_s {
  uint64_t epoch;
  uint64_t pad_[7];
  struct { uint64_t value; uint64_t pad_[7]; } round[TETHER_DEVICE_MAX_ROUNDS];
} tether_device_barrier_t;

typedef struct tether_device_handle_s {
  int32_t my_pe, n_pes;
  int32_t my_local, local_size;
  uint32_t flags;
  uint32_t barrier_seg;                  /* segment holding the barrier words */
  int32_t barrier_flat_max;              /* barriers of up to this many PEs take one round (TETHER_BARRIER_FLAT_MAX) */
  uint32_t reserved_;
  uint64_t timeout_ns;                   /* device spin-wait bound (TETHER_TIMEOUT); 0 = unbounded */
  tether_device_segment_t seg[TETHER_DEVICE_SEGS];
  const tether_device_peer_t* peers;     /* n_pes entries (GPU memory for the GPU handle, host memory for the CPU one) */
  tether_device_barrier_t* barrier;      /* symmetric address (sym space of barrier_seg) of the barrier block */
  tether_proxy_desc_t* proxy_ring;       /* proxy_slots descriptors; NULL when no (PE, segment) needs the proxy */
  tether_proxy_state_t* proxy_state;     /* the ring's completion counter and error word */
  uint64_t* proxy_ticket;                /* next ticket (GPU memory for the GPU handle, host memory for the CPU one) */
  uint64_t proxy_slots;                  /* ring size, a power of two */
} tether_device_handle_t;

/* The handle for kernels on this PE's GPU. Fails with TETHER_ERR_UNSUPPORTED when this PE has no GPU. */
tether_status_t tether_device_handle(tether_t world, tether_device_handle_t* handle);
/* The same for CPU threads of this process (host-compiled device API over HOST and STATIC segments; DEVICE segments
 * are marked unreachable). Works in every build. */
tether_status_t tether_device_handle_cpu(tether_t world, tether_device_handle_t* handle);

/* Device view of a team (issue #21; docs/collectives.md): what the device API's team collectives
 * (tether::device::team_sync, team_broadcast, team_allgather, team_alltoall, team_allreduce, team_reduce_scatter) need,
 * passed to kernels by value. Its members must sit at a fixed world-PE stride -- the world team, every team that
 * split_strided or split_2d makes of it (and of those), the shared team when its PEs are evenly spaced: member m is
 * world PE start + m*stride (TETHER_ERR_UNSUPPORTED otherwise). `sync` are the team's device sync words in the
 * handle's barrier segment (1 epoch word written by this PE, then the round words: one per other member up to the
 * handle's barrier_flat_max members, else one per dissemination round), so a view goes with handles of that barrier
 * segment (every GPU handle of this PE, or every CPU handle). Local; the words are reset when the team is destroyed.
 * `scratch` (scratch_bytes, a multiple of 16) is this PE's own staging area for the team in the same segment: the
 * reductions pull the elements of members they cannot load (another host, TETHER_FORCE_PROXY) into it through the
 * proxy ring. One collective per team at a time uses it. */
#define TETHER_DEVICE_TEAM_ROUNDS 16 /* teams of up to 65536 members */
typedef struct tether_device_team_s {
  int32_t my_pe, n_pes;  /* this PE's team PE number; members */
  int32_t start, stride; /* world PE of member m: start + m * stride */
  int32_t index;         /* tether_team_index */
  uint32_t seg;          /* segment of sync (TETHER_DEVICE_SEG_*): the handle's barrier_seg */
  uint64_t* sync;        /* symmetric address: [0] epoch (this PE's own), [1 + r] round r, [1 + ROUNDS] by-host flag */
  void* scratch;         /* symmetric address: this PE's staging area for proxied members' elements */
  uint64_t scratch_bytes;
  /* Members per host where the team spans hosts in runs: every host's members consecutive in team order, as many
   * (2+) on each (TETHER_COLL_BY_HOST=1, the default); 0 otherwise. team_broadcast then goes by host from 16 KiB
   * (device.cuh, kBroadcastByHostMin). */
  int32_t host_run;
} tether_device_team_t;
tether_status_t tether_team_device_view(tether_team_t team, const tether_device_handle_t* handle,
                                        tether_device_team_t* view);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Stream-ordered operations (issue #6; GPUDirect Async model). The CPU enqueues, the CUDA stream `stream`
 * (cudaStream_t; NULL = the legacy default stream) executes, in order with the kernels and copies on it; the call
 * returns as soon as the work is enqueued. Arguments are checked at the call (same errors as the host forms); values
 * passed by value or through pointers to values (p, signal values, atomic operands) are captured at the call.
 *
 * Ordering on the stream: each operation starts after everything enqueued before it on the stream is complete, and
 * is complete (its effects visible to every PE and the host) before anything enqueued after it starts. So a kernel
 * that fills a buffer before putmem_on_stream is sent, data put before a signal is visible when the signal is
 * (put_signal / signal_op after a put: a system-scope memory barrier precedes the signal write), and a kernel after
 * signal_wait_until_on_stream sees what the peer put before its signal. Operations on different streams, and host
 * calls, are not ordered with each other (synchronise the streams yourself).
 *
 * Mechanisms (docs/architecture.md, "Stream-ordered operations"): data by copy engines on the stream
 * (cudaMemcpyAsync); signal SET, p of 4/8 bytes, waits (EQ, GE, GT) and barrier rounds by stream memory operations
 * (cuStreamBatchMemOp); signal ADD, atomics, p of 1/2 bytes and waits with NE/LT/LE by one-thread kernels; peers the
 * GPU cannot address (remote, TETHER_FORCE_PROXY=1) by a one-thread kernel that posts to the device API's proxy ring
 * and waits for completion. Everything is capturable in a CUDA graph (replays repeat the captured values), and
 * stream barriers synchronise again at every replay: on a stream being captured they are the world team's sync kernel
 * (as tether_team_sync_on_stream on the world team; its epoch lives in GPU memory) or, where some GPU is used by two
 * or more PEs, memory operations with fixed values that zero their words after each wait (two word sets, twice the
 * rounds), instead of memory operations whose epochs would repeat (TETHER_STREAM_BARRIER=kernel / reset takes one of
 * them always).
 *
 * Local buffers (src of put, dest of get, fetched) must be GPU memory or pinned host memory (cudaHostAlloc /
 * registered); for peers reached through the proxy: GPU memory, cudaHostAlloc'd memory or this PE's symmetric memory.
 * Waits: GE/GT on a stream are CYCLIC comparisons, as CUDA's ((int64_t)(word - value) >= 0): valid while the word
 * and the value differ by less than 2^63 (counters and signals that count up). Memop waits (EQ/GE/GT) are not
 * bounded by TETHER_TIMEOUT (the hardware waits); kernel waits (NE/LT/LE) are, and trap naming the word on expiry.
 * A pending memop wait can hold back this process's work on its OTHER streams too (they share the GPU's hardware
 * queues; on one H100, 2026-12-07, a kernel or copies on another stream did not start until the wait ended): do not
 * make its release depend on later work of this process on another stream (a host thread that first synchronises
 * that stream, say); wait with NE/LT/LE (a polling kernel, which did not hold other streams back) where it must.
 * A failure while the stream runs (a trap) is a CUDA error on the stream; errors found at the call are returned. */

tether_status_t tether_putmem_on_stream(tether_t world, void* dest, const void* src, size_t nbytes, int pe,
                                        void* stream);
tether_status_t tether_getmem_on_stream(tether_t world, void* dest, const void* src, size_t nbytes, int pe,
                                        void* stream);
/* *value (nbytes = 1, 2, 4 or 8; dest aligned to nbytes) is read at the call and stored into pe's dest in stream
 * order (a plain store: ordered before later signals by their barrier). */
tether_status_t tether_p_on_stream(tether_t world, void* dest, const void* value, size_t nbytes, int pe,
                                   void* stream);
tether_status_t tether_putmem_signal_on_stream(tether_t world, void* dest, const void* src, size_t nbytes,
                                               uint64_t* sig_addr, uint64_t signal, tether_signal_op_t sig_op, int pe,
                                               void* stream);
tether_status_t tether_signal_op_on_stream(tether_t world, uint64_t* sig_addr, uint64_t signal,
                                           tether_signal_op_t sig_op, int pe, void* stream);
/* The stream waits until (this PE's *sig_addr cmp value) holds; work after it sees what the signaller put before. */
tether_status_t tether_signal_wait_until_on_stream(tether_t world, uint64_t* sig_addr, tether_cmp_t cmp,
                                                   uint64_t value, void* stream);
/* 64-bit words only (TETHER_UINT64/INT64/ULONGLONG/LONGLONG/ULONG/LONG/SIZE/PTRDIFF); signed types compare as the
 * same cyclic/unsigned comparisons as uint64 (state values that count up from 0). */
tether_status_t tether_wait_until_on_stream(tether_t world, void* ivar, tether_dtype_t type, tether_cmp_t cmp,
                                            const void* value, void* stream);
/* Completion on the stream: everything enqueued before is complete and visible to all PEs before later work of the
 * stream starts (a system-scope memory barrier; proxied operations are already complete when their kernel ends).
 * fence_on_stream gives the same guarantee (operations on one stream never overtake each other). */
tether_status_t tether_quiet_on_stream(tether_t world, void* stream);
tether_status_t tether_fence_on_stream(tether_t world, void* stream);
/* Collective over all PEs, in stream order: every PE enqueues the same sequence of stream barriers (on any one stream
 * each). Dissemination: round r writes the barrier epoch into PE (me + 2^r)'s round word (memop write; proxy signal
 * for proxied PEs) and waits on its own round word. barrier_all_on_stream = quiet_on_stream + sync_all_on_stream.
 * Not ordered with the host barrier or the device API's barrier (separate words). Captured into a CUDA graph (every
 * PE must capture the same barriers), in a form that synchronises again at every replay: the world team's sync
 * kernel, one of the world team's stream collectives in their order, or where PEs share a GPU the rounds as memory
 * operations with resets (above; TETHER_STREAM_BARRIER). */
tether_status_t tether_barrier_all_on_stream(tether_t world, void* stream);
tether_status_t tether_sync_all_on_stream(tether_t world, void* stream);
/* Atomics in stream order, same operations and types as tether_atomic for 4- and 8-byte types. value/cond are read
 * at the call; fetched (required for fetching operations, else may be NULL) is GPU or pinned memory that receives the
 * old value when the operation runs. Atomic with respect to tether_atomic and the device API's atomics (on HOST and
 * STATIC words of a GPU without host-native atomics, such as PCIe-attached ones: with tether_atomic and other PEs'
 * stream atomics, which then run through the proxy thread with CPU atomics; the device API's own HOST-word atomics
 * are not atomic there, see device.cuh). ADD signals on such words take the same route. */
tether_status_t tether_atomic_on_stream(tether_t world, tether_amo_t op, tether_dtype_t type, void* dest,
                                        const void* value, const void* cond, void* fetched, int pe, void* stream);
tether_status_t tether_atomic_add_on_stream(tether_t world, uint64_t* dest, uint64_t value, int pe, void* stream);
tether_status_t tether_atomic_set_on_stream(tether_t world, uint64_t* dest, uint64_t value, int pe, void* stream);
tether_status_t tether_atomic_fetch_add_on_stream(tether_t world, uint64_t* dest, uint64_t value, uint64_t* fetched,
                                                  int pe, void* stream);

/* Prepared sets (libmp-style batch submission). tether_prepare checks and translates a list of operations once
 * (peers, buffers, sizes, signals) and keeps the stream commands pre-built (the memop array of each run of
 * writes/waits, the copies, the proxy calls); tether_post_on_stream enqueues the whole set with one call, in set
 * order with the stream contract above, patching per-post values without rebuilding:
 *   TETHER_OP_PATCH_OFFSET: patch->offset is added to dest and src (checked: the shifted range must stay symmetric);
 *   TETHER_OP_PATCH_SIGNAL: patch->signal is added to the op's signal value (signal written, or waited for).
 * A set may be posted any number of times, on any streams, from several threads. It is rebuilt transparently when a
 * heap's GPU views moved since it was built (a HOST view registered again after growth). Barriers in a set take a
 * new epoch per post (posted on a stream being captured: the world team's sync, built at the first such post, as
 * tether_barrier_all_on_stream). A set stays valid until tether_op_set_free or tether_finalize (free it before finalize). */
typedef struct tether_op_set* tether_op_set_t;

typedef enum tether_op_kind {
  TETHER_OP_PUT = 1,         /* putmem: dest (symmetric), src, nbytes, pe */
  TETHER_OP_GET = 2,         /* getmem: dest (local), src (symmetric), nbytes, pe */
  TETHER_OP_PUT_SIGNAL = 3,  /* putmem_signal: dest, src, nbytes, sig_addr, signal, sig_op, pe */
  TETHER_OP_SIGNAL = 4,      /* signal_op: sig_addr, signal, sig_op, pe */
  TETHER_OP_SIGNAL_WAIT = 5, /* signal_wait_until on this PE: sig_addr, cmp, signal */
  TETHER_OP_QUIET = 6,
  TETHER_OP_BARRIER_ALL = 7,
  TETHER_OP_SYNC_ALL = 8,
  TETHER_OP_KIND_MAX_ENUM_ = 0x7fffffff
} tether_op_kind_t;

#define TETHER_OP_PATCH_OFFSET 1u
#define TETHER_OP_PATCH_SIGNAL 2u

typedef struct tether_op_desc_s {
  tether_op_kind_t kind;
  int pe;
  void* dest;
  const void* src;
  size_t nbytes;
  uint64_t* sig_addr;
  uint64_t signal;
  tether_signal_op_t sig_op;
  tether_cmp_t cmp;
  unsigned flags; /* TETHER_OP_PATCH_* */
} tether_op_desc_t;

typedef struct tether_post_patch_s {
  size_t offset;   /* added to dest and src of ops flagged TETHER_OP_PATCH_OFFSET */
  uint64_t signal; /* added to the signal value of ops flagged TETHER_OP_PATCH_SIGNAL */
} tether_post_patch_t;

tether_status_t tether_prepare(tether_t world, const tether_op_desc_t* ops, size_t n, tether_op_set_t* set);
/* patch may be NULL (no change). */
tether_status_t tether_post_on_stream(tether_op_set_t set, void* stream, const tether_post_patch_t* patch);
tether_status_t tether_op_set_free(tether_op_set_t set); /* NULL is a no-op */

/* Doorbell transfers: GPU-triggered copy-engine transfers with no CPU on the path and no SMs moving data. A doorbell
 * holds a prepared set and an internal stream of the world. Each tether_doorbell_arm enqueues on that stream a wait
 * until the doorbell word holds a value >= `value` (unsigned), then the set (patched as by tether_post_on_stream).
 * The wait is a one-thread polling kernel (no time limit), not a stream memop wait: on 2xH200 a pending memop wait
 * with the set's copy behind it stalled the device's other work, the ringing kernel included. While an arm waits,
 * that kernel holds one block slot on one SM (a cooperative launch sized to every SM's full occupancy may then be
 * refused as too large). Whoever writes the word releases the set:
 *   - a kernel: tether::device::ring_doorbell(h, word, v) (a release store, as signal_op SET on its own PE);
 *   - the host: tether_signal_op on the calling PE;
 *   - another stream: tether_signal_op_on_stream.
 * A ring that comes before the arm releases it at once. Arms queue in order; each releases the set once; arm with
 * non-decreasing values.
 * `word` is a 64-bit symmetric word of the calling PE (DEVICE or HOST segment). The set must outlive the
 * doorbell. Completion: the set's own signals (put_signal, signal ops), or tether_doorbell_sync.
 * Until its value is rung, an arm is a pending wait in this PE's GPU context, so nothing may wait for the whole
 * context before the ring is issued: cudaDeviceSynchronize, implicitly synchronising calls (cudaFree, ...), and the
 * first launch of a kernel under CUDA's lazy loading (the default since CUDA 12.2; loading may synchronise the
 * context) would wait for the arm, i.e. forever. Load the ringing kernel, and any other kernel first launched while
 * an arm is pending, before arming (cudaFuncGetAttributes on it, or one launch), or run with
 * CUDA_MODULE_LOADING=EAGER. tether loads its host-path kernels and the datatype engine's pack kernels at init
 * (TETHER_DT_PRELOAD=0: the pack kernels at their first use) and its stream kernels with the first stream
 * operation; a type's GPU metadata is allocated and freed in stream order (no synchronising call). */
typedef struct tether_doorbell* tether_doorbell_t;
tether_status_t tether_doorbell_create(tether_op_set_t set, uint64_t* word, tether_doorbell_t* db);
/* patch may be NULL (no change). */
tether_status_t tether_doorbell_arm(tether_doorbell_t db, uint64_t value, const tether_post_patch_t* patch);
/* Waits until every armed release has run (the set's transfers complete). Fails at once with
 * TETHER_ERR_INVALID_ARG, naming both values, if an armed value has not been rung yet, instead of waiting for a ring
 * that may never come. */
tether_status_t tether_doorbell_sync(tether_doorbell_t db);
/* Syncs (failing as tether_doorbell_sync does, the doorbell then kept), then frees the doorbell and its stream.
 * NULL is a no-op. */
tether_status_t tether_doorbell_free(tether_doorbell_t db);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif

#include "tether/tether_typed.h"

#endif /* TETHER_TETHER_H */
