/* osh_bench: one OpenSHMEM benchmark, written only against the standard shmem.h (1.4/1.5 routines every
 * implementation has), built twice -- with tether's oshcc and with a reference implementation's -- so both are measured
 * by the same code (bench/shmem/compare.sh).
 *
 * Two PEs. PE 0 drives every one-sided row against PE 1, which waits in shmem_barrier_all; rows that need both
 * (ping-pong, barrier) use both. Each row runs `trials` timed trials of `iters` operations after a warm-up; a trial's
 * figure is its average per operation (latency rows) or its throughput; the row reports the median and the best
 * trial. Methods:
 *   put_lat     shmem_putmem + shmem_quiet per operation: the time until the data is delivered at the target.
 *   get_lat     shmem_getmem per operation.
 *   pingpong    PE 0 putmem(size) + fence + long_p(flag); PE 1 waits for the flag and answers the same way; one-way
 *               latency = round trip / 2.
 *   put_bw      `window` shmem_putmem_nbi of `size` bytes, then one shmem_quiet; bytes / time (GB/s = 1e9 B/s).
 *   msg_rate    put_bw's method with 8 B messages, in millions of messages per second.
 *   amo_*       fetch_add, compare_swap (both fetching, blocking) and add + quiet on a long of PE 1, per operation.
 *   barrier     shmem_barrier_all on both PEs, per call.
 * Output: a table on stdout and, with --json FILE, one JSON object per row (impl, op, size, median, min, unit).
 * Usage: osh_bench [--quick] [--max-size BYTES] [--json FILE]   (run with 2 PEs)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* "4M", "64K", "1G" or plain bytes. */
static size_t parse_size(const char* s) {
  char* end = NULL;
  size_t v = (size_t)strtoull(s, &end, 0);
  if (end && (*end == 'K' || *end == 'k')) v <<= 10;
  if (end && (*end == 'M' || *end == 'm')) v <<= 20;
  if (end && (*end == 'G' || *end == 'g')) v <<= 30;
  return v;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

#define MAX_TRIALS 15
static int g_trials = 7;
static long g_iters = 2000;
static FILE* g_json;
static char g_impl[SHMEM_MAX_NAME_LEN];

/* Sorts the trial figures and prints/records a row. lower_is_better: the best trial is the minimum, else maximum. */
static void report(const char* op, size_t size, double* v, int n, const char* unit, int lower_is_better) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  double median = v[n / 2], best = lower_is_better ? v[0] : v[n - 1];
  printf("%-12s %10zu %12.3f %12.3f  %s\n", op, size, median, best, unit);
  if (g_json)
    fprintf(g_json, "{\"impl\":\"%s\",\"op\":\"%s\",\"size\":%zu,\"median\":%.4f,\"best\":%.4f,\"unit\":\"%s\"}\n", g_impl,
            op, size, median, best, unit);
  fflush(stdout);
}

static long iters_for(size_t size) {
  long it = g_iters;
  if (size >= 65536) it = g_iters / 10;
  if (size >= 1048576) it = g_iters / 50;
  return it < 10 ? 10 : it;
}

int main(int argc, char** argv) {
  size_t max_size = 4u << 20;
  const char* json_path = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick")) {
      g_trials = 3;
      g_iters = 100;
    } else if (!strcmp(argv[i], "--max-size") && i + 1 < argc) {
      max_size = parse_size(argv[++i]);
    } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--quick] [--max-size BYTES] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  shmem_init();
  const int me = shmem_my_pe();
  if (shmem_n_pes() != 2) {
    if (me == 0) fprintf(stderr, "osh_bench: run with exactly 2 PEs\n");
    shmem_finalize();
    return 2;
  }
  shmem_info_get_name(g_impl);
  const int peer = 1 - me;
  char* src = (char*)shmem_malloc(max_size);
  char* dst = (char*)shmem_malloc(max_size);
  long* flag = (long*)shmem_calloc(2, sizeof(long));
  long* word = (long*)shmem_calloc(1, sizeof(long));
  if (!src || !dst || !flag || !word) {
    fprintf(stderr, "osh_bench: PE %d: shmem_malloc of %zu bytes failed\n", me, max_size);
    shmem_global_exit(1);
  }
  memset(src, me + 1, max_size);
  if (me == 0 && json_path) {
    g_json = fopen(json_path, "w");
    if (!g_json) {
      fprintf(stderr, "osh_bench: cannot write %s\n", json_path);
      shmem_global_exit(1);
    }
  }
  if (me == 0) {
    printf("# osh_bench, %s, 2 PEs, %d trials per row (median and best trial)\n", g_impl, g_trials);
    printf("%-12s %10s %12s %12s  %s\n", "op", "size", "median", "best", "unit");
  }
  shmem_barrier_all();
  double v[MAX_TRIALS];
  const int window = 64;

  for (size_t size = 8; size <= max_size; size *= 4) { /* put latency */
    if (me == 0) {
      long it = iters_for(size);
      for (long i = 0; i < it / 10; ++i) { shmem_putmem(dst, src, size, peer); shmem_quiet(); }
      for (int t = 0; t < g_trials; ++t) {
        double t0 = now_us();
        for (long i = 0; i < it; ++i) { shmem_putmem(dst, src, size, peer); shmem_quiet(); }
        v[t] = (now_us() - t0) / (double)it;
      }
      report("put_lat", size, v, g_trials, "us", 1);
    }
    shmem_barrier_all();
  }
  for (size_t size = 8; size <= max_size; size *= 4) { /* get latency */
    if (me == 0) {
      long it = iters_for(size);
      for (long i = 0; i < it / 10; ++i) shmem_getmem(dst, src, size, peer);
      for (int t = 0; t < g_trials; ++t) {
        double t0 = now_us();
        for (long i = 0; i < it; ++i) shmem_getmem(dst, src, size, peer);
        v[t] = (now_us() - t0) / (double)it;
      }
      report("get_lat", size, v, g_trials, "us", 1);
    }
    shmem_barrier_all();
  }
  for (size_t size = 8; size <= 65536 && size <= max_size; size *= 64) { /* ping-pong */
    long it = iters_for(size), seq = 0;
    for (int t = -1; t < g_trials; ++t) { /* t = -1: warm-up */
      double t0 = now_us();
      for (long i = 0; i < it; ++i) {
        ++seq;
        if (me == 0) {
          shmem_putmem(dst, src, size, peer);
          shmem_fence();
          shmem_long_p(&flag[0], seq, peer);
          shmem_long_wait_until(&flag[0], SHMEM_CMP_EQ, seq);
        } else {
          shmem_long_wait_until(&flag[0], SHMEM_CMP_EQ, seq);
          shmem_putmem(dst, src, size, peer);
          shmem_fence();
          shmem_long_p(&flag[0], seq, peer);
        }
      }
      if (t >= 0) v[t] = (now_us() - t0) / (double)it / 2.0;
    }
    if (me == 0) report("pingpong", size, v, g_trials, "us", 1);
    shmem_barrier_all();
  }
  for (size_t size = 8; size <= max_size; size *= 4) { /* put bandwidth */
    if (me == 0) {
      long it = iters_for(size) / 8 + 2;
      for (int t = -1; t < g_trials; ++t) {
        double t0 = now_us();
        for (long i = 0; i < it; ++i) {
          for (int w = 0; w < window; ++w) shmem_putmem_nbi(dst, src, size, peer);
          shmem_quiet();
        }
        double us = now_us() - t0;
        if (t >= 0) v[t] = (double)size * (double)window * (double)it / us / 1e3; /* bytes/us / 1e3 = GB/s */
      }
      report("put_bw", size, v, g_trials, "GB/s", 0);
    }
    shmem_barrier_all();
  }
  if (me == 0) { /* message rate */
    long it = g_iters / 4 + 2;
    for (int t = -1; t < g_trials; ++t) {
      double t0 = now_us();
      for (long i = 0; i < it; ++i) {
        for (int w = 0; w < window; ++w) shmem_putmem_nbi(dst, src, 8, peer);
        shmem_quiet();
      }
      double us = now_us() - t0;
      if (t >= 0) v[t] = (double)window * (double)it / us; /* messages per us = millions per second */
    }
    report("msg_rate", 8, v, g_trials, "Mmsg/s", 0);
  }
  shmem_barrier_all();
  if (me == 0) { /* atomics */
    const char* names[3] = {"amo_fadd", "amo_cswap", "amo_add_quiet"};
    for (int k = 0; k < 3; ++k) {
      long it = g_iters;
      for (int t = -1; t < g_trials; ++t) {
        double t0 = now_us();
        long sink = 0;
        for (long i = 0; i < it; ++i) {
          if (k == 0) sink += shmem_long_atomic_fetch_add(word, 1, peer);
          else if (k == 1) sink += shmem_long_atomic_compare_swap(word, i, i + 1, peer);
          else { shmem_long_atomic_add(word, 1, peer); shmem_quiet(); }
        }
        if (t >= 0) v[t] = (now_us() - t0) / (double)it;
        if (sink == -1) printf(" "); /* keeps the fetched values live */
      }
      report(names[k], 8, v, g_trials, "us", 1);
    }
  }
  shmem_barrier_all();
  { /* barrier */
    long it = g_iters;
    for (int t = -1; t < g_trials; ++t) {
      double t0 = now_us();
      for (long i = 0; i < it; ++i) shmem_barrier_all();
      if (t >= 0) v[t] = (now_us() - t0) / (double)it;
    }
    if (me == 0) report("barrier", 0, v, g_trials, "us", 1);
  }
  if (g_json) fclose(g_json);
  fflush(stdout);
  shmem_barrier_all();
  shmem_free(word);
  shmem_free(flag);
  shmem_free(dst);
  shmem_free(src);
  shmem_finalize();
  return 0;
}
