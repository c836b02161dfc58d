/* osh_bench: one OpenSHMEM micro-benchmark, written only against the standard shmem.h (the OpenSHMEM 1.4 subset
 * that both tether's libtether_shmem and Open MPI's oshmem provide), so the SAME source is compiled by each
 * implementation's own `oshcc` and the two binaries are compared row by row (bench/shmem/compare.sh).
 *
 * Method (identical for every implementation; see also bench/shmem/README.md)
 *  - 2 PEs (more PEs only join the barriers and the collectives). PE 0 issues and times; PE 1 is the target, except in
 *    `pingpong`, where both PEs run the loop, and in `barrier` and the collective rows, where every PE runs it; PE 0
 *    times it.
 *  - Buffers: every buffer, source and destination, is on the symmetric heap (shmem_malloc), so no implementation
 *    pays for registering private memory. Put: PE 0's `src` -> PE 1's `dst`; get: PE 1's `dst` -> PE 0's `src`.
 *  - Clock: clock_gettime(CLOCK_MONOTONIC), read once before and once after a batch. A batch is k operations back to
 *    back and gives one sample (batch time / k). k = min(--iters, --batch-bytes / size), at least 1. --warmup batches
 *    are run and discarded, then --batches timed ones; each row reports the MEDIAN sample (`value`) and the fastest
 *    (`min`). Between rows/sizes there are shmem_barrier_all calls, never inside a timed batch (except `barrier`, and
 *    the one that closes a collective row's batch); `barrier` and the collective rows also run one untimed
 *    shmem_barrier_all before every batch (the PEs start it together).
 *  - Latency rows complete every operation inside the operation, so one sample is the real per-operation latency:
 *      put_lat   shmem_putmem(S) + shmem_quiet                (one-sided; the quiet makes it a completed put)
 *      get_lat   shmem_getmem(S)                              (blocking by definition)
 *      fadd_lat  shmem_long_atomic_fetch_add(+1)              (blocking, 8 B long)
 *      cswap_lat shmem_long_atomic_compare_swap(v -> v+1)     (blocking, always succeeds: PE 0 is the only writer)
 *      add_lat   shmem_long_atomic_add(+1) + shmem_quiet      (non-fetching AMO made complete)
 *      barrier   shmem_barrier_all (every PE)
 *      pingpong  PE 0: shmem_putmem(S) + shmem_fence + shmem_long_p(flag, seq) to PE 1, then
 *                shmem_long_wait_until(flag, GE, seq) for PE 1's answer, which is the same three calls back;
 *                reported: round trip / 2 (one-way latency of a put that the target waits on).
 *  - Bandwidth rows issue windows of W non-blocking puts then one shmem_quiet; the quiet is timed with the window, so
 *    the figure is delivered bandwidth, not issue rate:
 *      put_bw    shmem_putmem_nbi(S) x W + shmem_quiet        -> GB/s (10^9 B/s) = S / per-op time
 *      msg_rate  shmem_putmem_nbi(8 B) x W + shmem_quiet      -> millions of messages per second
 *    W = min(--window, k); k is rounded down to a multiple of W.
 *  - Collective rows: every PE calls the OpenSHMEM 1.4 active-set form over all PEs (PE_start 0, logPE_stride 0,
 *    PE_size npes) k times back to back, then shmem_barrier_all once; PE 0 times the batch (per call: batch time / k,
 *    us). The closing barrier is timed (amortised over k) because a call may return on one PE long before it is
 *    complete on the others: a 1.4 broadcast root need not wait for anyone (Open MPI 4.1.4's root took 0.2 us per
 *    8-byte call to 3 PEs), so a batch ends only when every PE has finished its k calls. S is the block of one PE,
 *    nelems = S/8 64-bit elements; sizes --min-size .. min(--max-size, 1 MiB, 64 MiB / npes) rounded down to a
 *    multiple of 8, and k = min(--iters / npes, --batch-bytes / (npes * S)), at least 1 (a call moves about
 *    npes * S bytes per PE and costs more with every PE, so a batch lasts about as long at any npes):
 *      bcast     shmem_broadcast64(dst, src, S/8, root 0)      (1.4: dst on the root is left unchanged)
 *      reduce    shmem_long_sum_to_all(dst, src, S/8, pWrk)
 *      fcollect  shmem_fcollect64(dst, src, S/8)               (dst: npes * S bytes)
 *      alltoall  shmem_alltoall64(dst, src, S/8)               (src and dst: npes * S bytes)
 *    --touch-src: before every call each PE stores to every 64-byte line of its src (the same bytes back, so the
 *    checks hold), as a program producing new data would: without it src never changes, and an implementation that
 *    reads the others' src in place finds it still cached from the last call, which a real program rarely gives it.
 *    pSync (and pWrk): OpenSHMEM 1.4 lets a pSync array be reused by a later collective only once no PE of the
 *    active set is still in the earlier call that used it, which in general takes some synchronisation; for calls
 *    on the same active set it names the alternative: two pSync (and pWrk) arrays used in turn. So each collective
 *    has two symmetric pSync arrays of its SHMEM_*_SYNC_SIZE (and reduce two pWrk arrays of
 *    max(S/16 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) longs), set to SHMEM_SYNC_VALUE once and followed by a barrier;
 *    call i of a batch uses array i % 2, with no barrier between the calls (the barriers around every batch separate
 *    the batches).
 *  - Validation (outside the timed region): the target checks every byte of the last put, PE 0 every byte of the
 *    last get; fetched AMO values are checked as they arrive and the counter's final value at the end; the
 *    ping-pong's data is checked at the end; after a collective row's last batch every PE checks its dst (bcast:
 *    every non-root holds the root's src; reduce: the sum of every PE's known src; fcollect: block j is PE j's src;
 *    alltoall: block j is the block PE j addressed to this PE). One wrong value ends the run (exit 1) naming row,
 *    size and offset.
 *
 * Output: a human table per row on stdout ('#' header lines), and JSON lines (to --json FILE, or stdout with
 * --json -), one object per row and size:
 *   {"impl":"tether","op":"put_lat","size":8,"value":0.031,"min":0.029,"unit":"us","iters":5000,"batches":21}
 * The last stdout line is "# osh_bench: done" (written before shmem_finalize): a driver can tell a complete run from
 * one that died afterwards.
 */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  size_t min_size, max_size, batch_bytes;
  long iters, batches, warmup, window;
  int touch_src;  /* --touch-src */
  const char* ops;
  const char* json;
  const char* impl;
} opts_t;

static opts_t o;
static int me, npes;
static FILE* jf;          /* JSON lines (PE 0), or NULL */
static char impl_name[64];

static char *src, *dst;   /* symmetric, max_size each */
static long *counter;     /* symmetric: AMO target */
static long *flag;        /* symmetric: ping-pong flag */
static long seq;          /* ping-pong sequence, the same on both PEs */

/* Collective rows (every PE). */
enum { C_BCAST, C_REDUCE, C_FCOLLECT, C_ALLTOALL, C_COUNT };
static const long psync_len[C_COUNT] = {SHMEM_BCAST_SYNC_SIZE, SHMEM_REDUCE_SYNC_SIZE, SHMEM_COLLECT_SYNC_SIZE,
                                        SHMEM_ALLTOALL_SYNC_SIZE};
static const struct {
  const char *op, *what;
} coll_row[C_COUNT] = {
    {"bcast", "shmem_broadcast64(S/8) from PE 0, every PE, timed on PE 0"},
    {"reduce", "shmem_long_sum_to_all(S/8), every PE, timed on PE 0"},
    {"fcollect", "shmem_fcollect64(S/8 per PE), every PE, timed on PE 0"},
    {"alltoall", "shmem_alltoall64(S/8 per PE pair), every PE, timed on PE 0"},
};
static size_t coll_max;             /* largest block S of the collective rows (a multiple of 8) */
static int64_t *csrc, *cdst;        /* symmetric, npes * coll_max bytes each */
static long *psync[C_COUNT][2];     /* symmetric, two per collective, used in turn */
static long *pwrk[2];               /* symmetric: shmem_long_sum_to_all's pWrk, used in turn like pSync */

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void fail(const char* fmt, const char* op, size_t size, long detail) {
  fprintf(stderr, "osh_bench: PE %d: %s size %zu: ", me, op, size);
  fprintf(stderr, fmt, detail);
  fputc('\n', stderr);
  fflush(NULL);
  shmem_global_exit(1);
}

static size_t parse_size(const char* s) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) goto bad;
  switch (*end) {
    case 'K': case 'k': v <<= 10; ++end; break;
    case 'M': case 'm': v <<= 20; ++end; break;
    case 'G': case 'g': v <<= 30; ++end; break;
    default: break;
  }
  if (*end != '\0') goto bad;
  return (size_t)v;
bad:
  if (me == 0) fprintf(stderr, "osh_bench: bad size '%s'\n", s);
  exit(2);
}

static long parse_long(const char* s) {
  char* end = NULL;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 0) {
    if (me == 0) fprintf(stderr, "osh_bench: bad number '%s'\n", s);
    exit(2);
  }
  return v;
}

static void usage(void) {
  printf(
      "usage: oshrun -np 2 osh_bench [options]\n"
      "  --min-size S / --max-size S   message sizes (default 8 .. 4M; K/M/G suffixes are powers of 2)\n"
      "  --iters N        operations per batch at small sizes (default 5000)\n"
      "  --batch-bytes S  at large sizes a batch has min(iters, S/size) operations (default 16M)\n"
      "  --batches N      timed batches per row (default 21); --warmup N untimed ones first (default 3)\n"
      "  --window N       non-blocking puts per shmem_quiet in put_bw / msg_rate (default 64)\n"
      "  --ops a,b        only these rows: put_lat,get_lat,put_bw,msg_rate,fadd_lat,cswap_lat,add_lat,barrier,\n"
      "                   pingpong,bcast,reduce,fcollect,alltoall (default: all; the collectives use sizes up to\n"
      "                   min(max-size, 1M) and k = min(iters / npes, batch-bytes / (npes * size)))\n"
      "  --json FILE      JSON lines to FILE ('-' = stdout, tables then go to stderr)\n"
      "  --impl NAME      label for the JSON 'impl' field (default: from shmem_info_get_name)\n"
      "  --touch-src      collective rows: before every call each PE stores to every cache line of its src (the\n"
      "                   same bytes back), as a program producing new data would; without it src stays unchanged\n"
      "                   and may stay cached on the PEs that read it\n"
      "  --quick          smoke settings: iters 50, batches 3, warmup 1, max-size 64K\n");
}

static void parse_args(int argc, char** argv) {
  o.min_size = 8;
  o.max_size = 4u << 20;
  o.batch_bytes = 16u << 20;
  o.iters = 5000;
  o.batches = 21;
  o.warmup = 3;
  o.window = 64;
  int quick = 0, max_given = 0, iters_given = 0, batches_given = 0, warmup_given = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV()                                                                   \
  do {                                                                            \
    if (!v) {                                                                     \
      if (me == 0) fprintf(stderr, "osh_bench: %s needs a value\n", a);          \
      exit(2);                                                                    \
    }                                                                             \
    ++i;                                                                          \
  } while (0)
    if (!strcmp(a, "--min-size")) { NEEDV(); o.min_size = parse_size(v); }
    else if (!strcmp(a, "--max-size")) { NEEDV(); o.max_size = parse_size(v); max_given = 1; }
    else if (!strcmp(a, "--batch-bytes")) { NEEDV(); o.batch_bytes = parse_size(v); }
    else if (!strcmp(a, "--iters")) { NEEDV(); o.iters = parse_long(v); iters_given = 1; }
    else if (!strcmp(a, "--batches")) { NEEDV(); o.batches = parse_long(v); batches_given = 1; }
    else if (!strcmp(a, "--warmup")) { NEEDV(); o.warmup = parse_long(v); warmup_given = 1; }
    else if (!strcmp(a, "--window")) { NEEDV(); o.window = parse_long(v); }
    else if (!strcmp(a, "--ops")) { NEEDV(); o.ops = v; }
    else if (!strcmp(a, "--json")) { NEEDV(); o.json = v; }
    else if (!strcmp(a, "--impl")) { NEEDV(); o.impl = v; }
    else if (!strcmp(a, "--touch-src")) o.touch_src = 1;
    else if (!strcmp(a, "--quick")) quick = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { if (me == 0) usage(); exit(0); }
    else { if (me == 0) fprintf(stderr, "osh_bench: unknown option '%s' (--help)\n", a); exit(2); }
#undef NEEDV
  }
  if (quick) {
    if (!iters_given) o.iters = 50;
    if (!batches_given) o.batches = 3;
    if (!warmup_given) o.warmup = 1;
    if (!max_given) o.max_size = 64u << 10;
  }
  if (o.min_size < 8) o.min_size = 8;
  if (o.max_size < o.min_size) o.max_size = o.min_size;
  if (o.iters < 1) o.iters = 1;
  if (o.batches < 1) o.batches = 1;
  if (o.window < 1) o.window = 1;
}

static int wanted(const char* op) {
  if (!o.ops) return 1;
  size_t n = strlen(op);
  for (const char* p = o.ops; (p = strstr(p, op)) != NULL; p += n)
    if ((p == o.ops || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
}

/* Operations per batch at this size. */
static long ops_for(size_t size) {
  long k = o.iters;
  if (size > 0 && (size_t)k > o.batch_bytes / size) k = (long)(o.batch_bytes / size);
  return k < 1 ? 1 : k;
}

/* Operations per batch of a collective row at block size `size` (see the top comment). */
static long coll_ops_for(size_t size) {
  long k = ops_for((size_t)npes * size), cap = o.iters / npes;
  if (k > cap) k = cap;
  return k < 1 ? 1 : k;
}

/* Byte i of the pattern of row `tag` at `size`. */
static unsigned char pat(int tag, size_t size, size_t i) {
  return (unsigned char)(i * 131u + size * 7u + (size_t)tag * 29u + 1u);
}
static void fill(char* b, int tag, size_t size) {
  for (size_t i = 0; i < size; ++i) b[i] = (char)pat(tag, size, i);
}
static void check(const char* b, int tag, size_t size, const char* op) {
  for (size_t i = 0; i < size; ++i)
    if ((unsigned char)b[i] != pat(tag, size, i)) fail("wrong byte at offset %ld", op, size, (long)i);
}

static double* samples;

static void print_header_row(const char* op, const char* what, const char* unit) {
  if (me != 0) return;
  FILE* t = (o.json && !strcmp(o.json, "-")) ? stderr : stdout;
  fprintf(t, "\n# %s: %s\n# %-10s %14s %14s %10s\n", op, what, "Size", unit, "Min/Best", "Iters");
}

/* Records one row from the samples (per-op times in us). For rates the value is converted: GB/s = size/us/1000,
 * Mmsg/s = 1/us; "min" is then the best (highest) rate. */
static void report(const char* op, size_t size, long k, const char* unit) {
  if (me != 0) return;
  qsort(samples, (size_t)o.batches, sizeof *samples, cmp_double);
  const long n = o.batches;
  double med = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  double best = samples[0];
  double value = med, extreme = best;
  if (!strcmp(unit, "GB/s")) {
    value = (double)size / med / 1e3;
    extreme = (double)size / best / 1e3;
  } else if (!strcmp(unit, "Mmsg/s")) {
    value = 1.0 / med;
    extreme = 1.0 / best;
  }
  FILE* t = (o.json && !strcmp(o.json, "-")) ? stderr : stdout;
  fprintf(t, "  %-10zu %14.3f %14.3f %10ld\n", size, value, extreme, k);
  fflush(t);
  if (jf) {
    fprintf(jf,
            "{\"impl\":\"%s\",\"op\":\"%s\",\"size\":%zu,\"value\":%.6g,\"min\":%.6g,\"unit\":\"%s\","
            "\"stat\":\"median\","
            "\"iters\":%ld,\"batches\":%ld,\"npes\":%d}\n",
            impl_name, op, size, value, extreme, unit, k, o.batches, npes);
    fflush(jf);
  }
}

/* ---- rows ------------------------------------------------------------------------------------------------------ */

enum { T_PUT = 1, T_GET, T_BW, T_RATE, T_PING };

/* What one batch needs: the size, the operation count k, and the window (nbi rows) or the AMO kind. */
typedef struct {
  size_t size;
  long k, w, kind;
} batch_t;

/* Runs --warmup untimed and --batches timed batches of `fn` on this PE; sample = batch time / k / div (us). A
 * non-NULL `before` runs ahead of every batch, untimed (the barrier row aligns the PEs with it). */
static void run_batches(void (*fn)(const batch_t*), const batch_t* bt, double div, void (*before)(void)) {
  for (long b = -o.warmup; b < o.batches; ++b) {
    if (before) before();
    double t0 = now_us();
    fn(bt);
    double t1 = now_us();
    if (b >= 0) samples[b] = (t1 - t0) / (double)bt->k / div;
  }
}

static void batch_put(const batch_t* bt) {
  for (long i = 0; i < bt->k; ++i) {
    shmem_putmem(dst, src, bt->size, 1);
    shmem_quiet();
  }
}

static void batch_get(const batch_t* bt) {
  for (long i = 0; i < bt->k; ++i) shmem_getmem(src, dst, bt->size, 1);
}

static void batch_nbi(const batch_t* bt) {
  for (long i = 0; i < bt->k; i += bt->w) {
    for (long j = 0; j < bt->w; ++j) shmem_putmem_nbi(dst, src, bt->size, 1);
    shmem_quiet();
  }
}

enum { A_FADD, A_CSWAP, A_ADD };
static long amo_expect; /* PE 0: the counter's value before the next AMO */

static void batch_amo(const batch_t* bt) {
  long e = amo_expect;
  switch (bt->kind) {
    case A_FADD:
      for (long i = 0; i < bt->k; ++i, ++e)
        if (shmem_long_atomic_fetch_add(counter, 1, 1) != e) fail("fetch_add did not return %ld", "fadd_lat", 8, e);
      break;
    case A_CSWAP:
      for (long i = 0; i < bt->k; ++i, ++e)
        if (shmem_long_atomic_compare_swap(counter, e, e + 1, 1) != e)
          fail("compare_swap did not see %ld", "cswap_lat", 8, e);
      break;
    default:
      for (long i = 0; i < bt->k; ++i, ++e) {
        shmem_long_atomic_add(counter, 1, 1);
        shmem_quiet();
      }
      break;
  }
  amo_expect = e;
}

static void batch_barrier(const batch_t* bt) {
  for (long i = 0; i < bt->k; ++i) shmem_barrier_all();
}

static void batch_pingpong(const batch_t* bt) {
  const int peer = 1 - me;
  for (long i = 0; i < bt->k; ++i) {
    ++seq;
    if (me == 0) {
      shmem_putmem(dst, src, bt->size, peer);
      shmem_fence();
      shmem_long_p(flag, seq, peer);
      shmem_long_wait_until(flag, SHMEM_CMP_GE, seq);
    } else {
      shmem_long_wait_until(flag, SHMEM_CMP_GE, seq);
      shmem_putmem(dst, src, bt->size, peer);
      shmem_fence();
      shmem_long_p(flag, seq, peer);
    }
  }
}

static void row_put_lat(size_t size) {
  const batch_t bt = {size, ops_for(size), 1, 0};
  if (me == 0) fill(src, T_PUT, size);
  if (me == 1) memset(dst, 0, size);
  shmem_barrier_all();
  if (me == 0) run_batches(batch_put, &bt, 1, NULL);
  shmem_barrier_all();
  if (me == 1) check(dst, T_PUT, size, "put_lat");
  report("put_lat", size, bt.k, "us");
}

static void row_get_lat(size_t size) {
  const batch_t bt = {size, ops_for(size), 1, 0};
  if (me == 1) fill(dst, T_GET, size);
  if (me == 0) memset(src, 0, size);
  shmem_barrier_all();
  if (me == 0) {
    run_batches(batch_get, &bt, 1, NULL);
    check(src, T_GET, size, "get_lat");
  }
  shmem_barrier_all();
  report("get_lat", size, bt.k, "us");
}

/* put_bw and msg_rate: windows of W putmem_nbi + one quiet. */
static void row_nbi(const char* op, int tag, size_t size, const char* unit) {
  batch_t bt = {size, ops_for(size), o.window, 0};
  if (bt.w > bt.k) bt.w = bt.k;
  bt.k = (bt.k / bt.w) * bt.w;
  if (me == 0) fill(src, tag, size);
  if (me == 1) memset(dst, 0, size);
  shmem_barrier_all();
  if (me == 0) run_batches(batch_nbi, &bt, 1, NULL);
  shmem_barrier_all();
  if (me == 1) check(dst, tag, size, op);
  report(op, size, bt.k, unit);
}

static void row_amo(const char* op, int kind) {
  const batch_t bt = {8, o.iters, 1, kind};
  const long total = (o.warmup + o.batches) * bt.k;
  if (me == 1) *counter = 0;
  amo_expect = 0;
  shmem_barrier_all();
  if (me == 0) run_batches(batch_amo, &bt, 1, NULL);
  shmem_barrier_all();
  if (me == 1 && *counter != total) fail("final counter %ld is wrong", op, 8, *counter);
  report(op, 8, bt.k, "us");
}

static void row_barrier(void) {
  const batch_t bt = {0, o.iters, 1, 0};
  shmem_barrier_all();
  run_batches(batch_barrier, &bt, 1, shmem_barrier_all);
  report("barrier", 0, bt.k, "us");
}

static void row_pingpong(size_t size) {
  const batch_t bt = {size, ops_for(size), 1, 0};
  if (me < 2) fill(src, T_PING + me, size);
  if (me < 2) memset(dst, 0, size);
  shmem_barrier_all();
  if (me < 2) run_batches(batch_pingpong, &bt, 2, NULL); /* round trip / 2 */
  shmem_barrier_all();
  if (me < 2) check(dst, T_PING + (1 - me), size, "pingpong");
  report("pingpong", size, bt.k, "us");
}

/* Collectives: every PE, active set = all PEs, call i of a batch uses pSync (and pWrk) i % 2, then one barrier.
 * bt->kind: C_*. */
static void batch_coll(const batch_t* bt) {
  const size_t n = bt->size / 8;
  const size_t src_bytes = bt->kind == C_ALLTOALL ? (size_t)npes * bt->size : bt->size;
  for (long i = 0; i < bt->k; ++i) {
    long* const ps = psync[bt->kind][i & 1];
    if (o.touch_src) /* every line of src written (its own bytes back): other PEs' cached copies are invalidated */
      for (size_t off = 0; off < src_bytes; off += 64) {
        volatile uint64_t* w = (volatile uint64_t*)((char*)csrc + off);
        *w = *w;
      }
    switch (bt->kind) {
      case C_BCAST: shmem_broadcast64(cdst, csrc, n, 0, 0, 0, npes, ps); break;
      case C_REDUCE: shmem_long_sum_to_all((long*)cdst, (const long*)csrc, (int)n, 0, 0, npes, pwrk[i & 1], ps); break;
      case C_FCOLLECT: shmem_fcollect64(cdst, csrc, n, 0, 0, npes, ps); break;
      default: shmem_alltoall64(cdst, csrc, n, 0, 0, npes, ps); break;
    }
  }
  shmem_barrier_all(); /* the batch is over when every PE is done (see the top comment) */
}

/* Element k of the block that PE `from` sends to PE `to` (to = 0 where the data is the same for every PE). Small
 * enough that the sum over any realistic number of PEs does not wrap. */
static uint64_t cword(int from, int to, size_t k) {
  return ((uint64_t)from << 36) + ((uint64_t)to << 18) + (uint64_t)k + 1u;
}

/* Blocks of S bytes in this collective's dst (and alltoall's src). */
static int coll_blocks(int kind) { return kind == C_FCOLLECT || kind == C_ALLTOALL ? npes : 1; }

/* What element k of block j of dst must hold after the collective on this PE. */
static uint64_t coll_expect(int kind, int j, size_t k) {
  switch (kind) {
    case C_BCAST: return cword(0, 0, k); /* the root's src */
    case C_REDUCE: {
      uint64_t sum = 0;
      for (int p = 0; p < npes; ++p) sum += cword(p, 0, k);
      return sum;
    }
    case C_FCOLLECT: return cword(j, 0, k);
    default: return cword(j, me, k);
  }
}

static void row_coll(int kind, size_t size) {
  const char* const op = coll_row[kind].op;
  const batch_t bt = {size, coll_ops_for(size), 1, kind};
  const size_t n = size / 8;
  const int blocks = coll_blocks(kind), src_blocks = kind == C_ALLTOALL ? npes : 1;
  for (int j = 0; j < src_blocks; ++j)
    for (size_t k = 0; k < n; ++k) csrc[(size_t)j * n + k] = (int64_t)cword(me, kind == C_ALLTOALL ? j : 0, k);
  memset(cdst, 0, (size_t)blocks * n * 8);
  shmem_barrier_all();
  run_batches(batch_coll, &bt, 1, shmem_barrier_all);
  shmem_barrier_all();
  if (kind != C_BCAST || me != 0) /* 1.4: the root's dst is not written */
    for (int j = 0; j < blocks; ++j)
      for (size_t k = 0; k < n; ++k)
        if ((uint64_t)cdst[(size_t)j * n + k] != coll_expect(kind, j, k))
          fail("wrong value at offset %ld", op, size, (long)(((size_t)j * n + k) * 8));
  report(op, size, bt.k, "us");
}

/* ---- main ------------------------------------------------------------------------------------------------------ */

static void header(int argc, char** argv) {
  char vendor[SHMEM_MAX_NAME_LEN + 1] = {0};
  int major = 0, minor = 0;
  shmem_info_get_name(vendor);
  shmem_info_get_version(&major, &minor);
  if (o.impl)
    snprintf(impl_name, sizeof impl_name, "%s", o.impl);
  else if (strstr(vendor, "tether"))
    snprintf(impl_name, sizeof impl_name, "tether");
  else if (strstr(vendor, "open-mpi"))
    snprintf(impl_name, sizeof impl_name, "oshmem");
  else
    snprintf(impl_name, sizeof impl_name, "%.63s", vendor);
  for (char* p = impl_name; *p; ++p)
    if (*p == '"' || *p == '\\') *p = '_';
  if (me != 0) return;
  FILE* t = (o.json && !strcmp(o.json, "-")) ? stderr : stdout;
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  char date[64] = "?";
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  char load[128] = "?";
  FILE* lf = fopen("/proc/loadavg", "r");
  if (lf) {
    if (fgets(load, sizeof load, lf)) load[strcspn(load, "\n")] = '\0';
    fclose(lf);
  }
  fprintf(t, "# osh_bench: impl %s (shmem_info_get_name \"%s\", OpenSHMEM %d.%d), %d PEs\n", impl_name, vendor, major,
          minor, npes);
  fprintf(t, "# host %s, %ld online CPUs, date %s, load average %s\n", host, sysconf(_SC_NPROCESSORS_ONLN), date,
          load);
  fprintf(t, "# command:");
  for (int i = 0; i < argc; ++i) fprintf(t, " %s", argv[i]);
  fprintf(t,
          "\n# sizes %zu..%zu (collectives to %zu), iters %ld, batch-bytes %zu, batches %ld (median reported), warmup "
          "%ld, window %ld%s\n",
          o.min_size, o.max_size, coll_max, o.iters, o.batch_bytes, o.batches, o.warmup, o.window,
          o.touch_src ? ", src touched before every collective call" : "");
}

int main(int argc, char** argv) {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  parse_args(argc, argv);
  if (npes < 2) {
    if (me == 0) fprintf(stderr, "osh_bench: needs at least 2 PEs (oshrun -np 2)\n");
    shmem_finalize();
    return 2;
  }
  /* collective blocks: at most 1 MiB, and npes blocks in at most 64 MiB per buffer */
  coll_max = o.max_size < (1u << 20) ? o.max_size : (1u << 20);
  if (coll_max > (64u << 20) / (size_t)npes) coll_max = (64u << 20) / (size_t)npes;
  coll_max &= ~(size_t)7;
  header(argc, argv);
  if (me == 0 && o.json) {
    jf = strcmp(o.json, "-") ? fopen(o.json, "w") : stdout;
    if (!jf) {
      fprintf(stderr, "osh_bench: cannot open %s: %s\n", o.json, strerror(errno));
      shmem_global_exit(2);
    }
  }
  src = shmem_malloc(o.max_size);
  dst = shmem_malloc(o.max_size);
  counter = shmem_malloc(sizeof *counter);
  flag = shmem_malloc(sizeof *flag);
  csrc = shmem_malloc((size_t)npes * coll_max);
  cdst = shmem_malloc((size_t)npes * coll_max);
  /* pWrk: max(nreduce / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) longs at the largest nreduce */
  size_t wrk_len = coll_max / 16 + 1;
  if (wrk_len < SHMEM_REDUCE_MIN_WRKDATA_SIZE) wrk_len = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
  int sync_ok = 1;
  for (int i = 0; i < 2; ++i) {
    pwrk[i] = shmem_malloc(wrk_len * sizeof(long));
    sync_ok = sync_ok && pwrk[i];
    for (int c = 0; c < C_COUNT; ++c) {
      psync[c][i] = shmem_malloc((size_t)psync_len[c] * sizeof(long));
      sync_ok = sync_ok && psync[c][i];
    }
  }
  samples = malloc((size_t)o.batches * sizeof *samples);
  if (!src || !dst || !counter || !flag || !csrc || !cdst || !sync_ok || !samples) {
    fprintf(stderr,
            "osh_bench: PE %d: allocation of 2 x %zu + 2 x %zu bytes failed (symmetric heap too small?)\n", me,
            o.max_size, (size_t)npes * coll_max);
    shmem_global_exit(2);
  }
  memset(src, 0, o.max_size);
  memset(dst, 0, o.max_size);
  *counter = 0;
  *flag = 0;
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < C_COUNT; ++c)
      for (long j = 0; j < psync_len[c]; ++j) psync[c][i][j] = SHMEM_SYNC_VALUE;
  shmem_barrier_all(); /* every pSync is SHMEM_SYNC_VALUE before any PE uses one */

  /* min_size, the powers of 2 above it, then max_size (FOR_SIZES_TO: then max) */
#define FOR_SIZES_TO(s, max) \
  for (size_t s = o.min_size; s <= (max); s = (s > (max) / 2 && s < (max)) ? (max) : s * 2)
#define FOR_SIZES(s) FOR_SIZES_TO(s, o.max_size)
  if (wanted("put_lat")) {
    print_header_row("put_lat", "shmem_putmem(S) + shmem_quiet, PE 0 -> PE 1, per op", "Latency(us)");
    FOR_SIZES(s) row_put_lat(s);
  }
  if (wanted("get_lat")) {
    print_header_row("get_lat", "shmem_getmem(S) from PE 1, per op", "Latency(us)");
    FOR_SIZES(s) row_get_lat(s);
  }
  if (wanted("put_bw")) {
    print_header_row("put_bw", "windows of shmem_putmem_nbi(S) then shmem_quiet, PE 0 -> PE 1", "GB/s");
    FOR_SIZES(s) row_nbi("put_bw", T_BW, s, "GB/s");
  }
  if (wanted("msg_rate")) {
    print_header_row("msg_rate", "windows of shmem_putmem_nbi(8 B) then shmem_quiet, PE 0 -> PE 1", "Mmsg/s");
    row_nbi("msg_rate", T_RATE, 8, "Mmsg/s");
  }
  if (wanted("fadd_lat")) {
    print_header_row("fadd_lat", "shmem_long_atomic_fetch_add(+1) on PE 1", "Latency(us)");
    row_amo("fadd_lat", A_FADD);
  }
  if (wanted("cswap_lat")) {
    print_header_row("cswap_lat", "shmem_long_atomic_compare_swap (succeeds) on PE 1", "Latency(us)");
    row_amo("cswap_lat", A_CSWAP);
  }
  if (wanted("add_lat")) {
    print_header_row("add_lat", "shmem_long_atomic_add(+1) + shmem_quiet on PE 1", "Latency(us)");
    row_amo("add_lat", A_ADD);
  }
  if (wanted("barrier")) {
    print_header_row("barrier", "shmem_barrier_all over all PEs, timed on PE 0", "Latency(us)");
    row_barrier();
  }
  if (wanted("pingpong")) {
    print_header_row("pingpong", "putmem(S) + fence + long_p(flag) / long_wait_until(flag); round trip / 2",
                     "Latency(us)");
    FOR_SIZES(s) row_pingpong(s);
  }
  for (int c = 0; c < C_COUNT; ++c)
    if (wanted(coll_row[c].op)) {
      print_header_row(coll_row[c].op, coll_row[c].what, "Latency(us)");
      FOR_SIZES_TO(s, coll_max) row_coll(c, s);
    }
#undef FOR_SIZES
#undef FOR_SIZES_TO

  shmem_barrier_all();
  if (me == 0) {
    if (jf && jf != stdout) fclose(jf);
    FILE* t = (o.json && !strcmp(o.json, "-")) ? stderr : stdout;
    fprintf(t, "# osh_bench: done\n");
    fflush(NULL);
  }
  free(samples);
  for (int i = 1; i >= 0; --i) {
    for (int c = C_COUNT - 1; c >= 0; --c) shmem_free(psync[c][i]);
    shmem_free(pwrk[i]);
  }
  shmem_free(cdst);
  shmem_free(csrc);
  shmem_free(flag);
  shmem_free(counter);
  shmem_free(dst);
  shmem_free(src);
  shmem_finalize();
  return 0;
}
