/* OpenSHMEM 1.5 communication contexts on tether. Included by shmem.h and shmem_amo.h; usable on its own (C99 and
 * C++; the generic-name helpers at the end need C11). See docs/shmem/contexts.md.
 *
 * A context is a handle through which RMA, AMO and put-with-signal routines are issued (their shmem_ctx_* forms,
 * declared with the routines in shmem.h and shmem_amo.h) and which shmem_ctx_quiet / shmem_ctx_fence order.
 *  - SHMEM_CTX_DEFAULT: the library's context on SHMEM_TEAM_WORLD; the routines without a context use it.
 *  - Every context belongs to a team (SHMEM_TEAM_WORLD for shmem_ctx_create); the PE arguments of operations on it
 *    are PE numbers in that team. A PE outside [0, team size) ends the program naming the routine.
 *  - Options (combine with |): SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE, SHMEM_CTX_NOSTORE. All are accepted and
 *    recorded; none changes behaviour (every tether call is thread-safe, and quiet completes stores anyway).
 *  - All contexts of a PE share the one tether instance: shmem_ctx_quiet / shmem_ctx_fence complete / order every
 *    outstanding operation of the PE (all contexts, all threads), which includes the context's own.
 *  - An operation on SHMEM_CTX_INVALID, on a destroyed context, or on a context whose team was destroyed ends the
 *    program naming the routine (OpenSHMEM leaves these undefined). Exceptions, as the specification defines them:
 *    shmem_ctx_quiet, shmem_ctx_fence and shmem_ctx_destroy on SHMEM_CTX_INVALID perform no operation, and
 *    shmem_ctx_get_team reports SHMEM_TEAM_INVALID.
 */
#ifndef SHMEM_CTX_H
#define SHMEM_CTX_H

/* Context handle. SHMEM_CTX_DEFAULT names an object of the library (valid between shmem_init and shmem_finalize);
 * SHMEM_CTX_INVALID is null. */
typedef struct tether_shmem_ctx_s* shmem_ctx_t;
/* The object type behind shmem_team_t (declared in shmem.h): the team routines below take and give shmem_team_t. */
struct tether_shmem_team_s;
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
#define SHMEM_CTX_DEFAULT (&tether_shmem_ctx_default_)

/* Context options (shmem_ctx_create, shmem_team_create_ctx). */
#define SHMEM_CTX_SERIALIZED 1L /* the program does not use the context from several threads at once */
#define SHMEM_CTX_PRIVATE 2L    /* only the creating thread uses (and destroys) the context */
#define SHMEM_CTX_NOSTORE 4L    /* quiet need not complete stores issued on the context */

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The object behind SHMEM_CTX_DEFAULT (use the macro). */
extern struct tether_shmem_ctx_s tether_shmem_ctx_default_;

/* Creates a context on SHMEM_TEAM_WORLD. Not collective. Returns 0 and sets *ctx; on failure (options other than
 * the SHMEM_CTX_* bits) returns non-zero and sets *ctx to SHMEM_CTX_INVALID. ctx NULL: returns non-zero. Any
 * number of contexts may exist at once (limited by memory only). */
int shmem_ctx_create(long options, shmem_ctx_t* ctx);
/* Same on `team` (a shmem_team_t; PE arguments of the context's operations are numbered in that team). An invalid
 * team (SHMEM_TEAM_INVALID, destroyed) fails: non-zero, *ctx = SHMEM_CTX_INVALID. */
int shmem_team_create_ctx(struct tether_shmem_team_s* team, long options, shmem_ctx_t* ctx);
/* Completes the context's outstanding operations (a quiet) and destroys it. SHMEM_CTX_INVALID: no operation.
 * SHMEM_CTX_DEFAULT or an already destroyed context: ends the program. */
void shmem_ctx_destroy(shmem_ctx_t ctx);
/* *team = the context's team (a shmem_team_t; SHMEM_TEAM_WORLD for SHMEM_CTX_DEFAULT and shmem_ctx_create) and
 * returns 0. ctx SHMEM_CTX_INVALID or destroyed: *team = SHMEM_TEAM_INVALID, returns non-zero. team NULL: returns
 * non-zero. */
int shmem_ctx_get_team(shmem_ctx_t ctx, struct tether_shmem_team_s** team);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
} /* extern "C" */
#endif

/* Declares shmem_<OP>(params...) and its context form shmem_ctx_<OP>(shmem_ctx_t ctx, params...) (shmem.h,
 * shmem_amo.h). Reserved for the implementation. */
#define SHMEM_DECLARE_CTX_PAIR_(RET, OP, ...)                                                                      \
  RET shmem_##OP(__VA_ARGS__);                                                                                     \
  RET shmem_ctx_##OP(shmem_ctx_t ctx, __VA_ARGS__);

/* SHMEM_UNPAREN_ (a, b) -> a, b: a parenthesised list passed as one macro argument. */
#define SHMEM_UNPAREN_(...) __VA_ARGS__

#ifdef __cplusplus
/* C++ generic names: SHMEM_CXX_CTX_PAIR_(RET, OP, ROUTINE, (params), (args)) defines the overload shmem_<OP>(params)
 * calling shmem_<ROUTINE>(args) and its context form shmem_<OP>(shmem_ctx_t ctx, params) calling
 * shmem_ctx_<ROUTINE>(ctx, args). */
#define SHMEM_CXX_CTX_PAIR_(RET, OP, ROUTINE, PARAMS, ARGS)                                                        \
  inline RET shmem_##OP(SHMEM_UNPAREN_ PARAMS) { return shmem_##ROUTINE(SHMEM_UNPAREN_ ARGS); }                    \
  inline RET shmem_##OP(shmem_ctx_t ctx, SHMEM_UNPAREN_ PARAMS) {                                                  \
    return shmem_ctx_##ROUTINE(ctx, SHMEM_UNPAREN_ ARGS);                                                          \
  }
#endif

/* C11 generic names with an optional leading context (used by shmem.h and shmem_amo.h).
 * SHMEM_CTX_G_(PICK, SEL, OP, args...) selects the routine for a generic call `args`: when the first argument is a
 * shmem_ctx_t, SEL(p, shmem_ctx_, OP), else SEL(p, shmem_, OP). SEL(p, PREFIX, OP) is a _Generic on *(p) giving
 * PREFIX##<type name>_##OP; p is the typed pointer PICK takes from the arguments: the first (PICK1) or second (PICK2)
 * argument after the optional context. Both branches stay well-formed either way (the pointer of the branch not
 * taken is the one of the branch taken), and a _Generic controlling expression is never evaluated. The trailing
 * 0 arguments keep every variadic parameter non-empty (ISO C99/C11). */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
#define SHMEM_GARG1_(a1, ...) a1
#define SHMEM_GPICK1_(a1, a2, ...) _Generic((a1), shmem_ctx_t: (a2), default: (a1))
#define SHMEM_GPICK2_(a1, a2, a3, ...) _Generic((a1), shmem_ctx_t: (a3), default: (a2))
#define SHMEM_CTX_G_(PICK, SEL, OP, ...)                                                                           \
  _Generic((SHMEM_GARG1_(__VA_ARGS__, 0)), shmem_ctx_t: SEL(PICK(__VA_ARGS__, 0, 0), shmem_ctx_, OP),              \
           default: SEL(PICK(__VA_ARGS__, 0, 0), shmem_, OP))
#endif

#endif /* SHMEM_CTX_H */
