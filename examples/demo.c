/* demo: a quick tour of the tether C API (plain C11), for 2 or more PEs.
 *
 *   tetherrun -n 2 ./tether_demo        (any PE count >= 2; 1 PE runs the ring with itself and skips the table)
 *
 * 1. Every PE says who it is and which symmetric segment kind it uses.
 * 2. Ring exchange: each PE puts a message into the next PE's symmetric inbox with tether_put_signal, waits for its own
 *    signal, prints what it received and checks it.
 * 3. PE 0 times blocking puts to PE 1 at a few sizes and prints latency and bandwidth; PE 1 checks the bytes.
 *    (A demo, not a benchmark: for real numbers use bench/, e.g. tetherrun -n 2 tether_bench_put_get.)
 * Every call's status is checked; on failure the PE prints tether_last_error() and exits 1 (tetherrun then ends the job).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tether/tether.h>

static int me = -1;

static void check(tether_status_t st, const char* call) {
  if (st != TETHER_SUCCESS) {
    fprintf(stderr, "demo[PE %d]: %s failed: %s: %s\n", me, call, tether_status_string(st), tether_last_error());
    exit(1);
  }
}
#define CHECK(call) check((call), #call)

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static unsigned char pattern(size_t i) { return (unsigned char)((i * 131u + (i >> 12)) & 0xff); }

#define MSG_BYTES 64
#define TABLE_MAX ((size_t)16 << 20)

int main(void) {
  tether_t world = NULL;
  CHECK(tether_init(&world));
  me = tether_my_pe(world);
  const int npes = tether_n_pes(world);

  /* Symmetric objects: every PE allocates the same objects in the same order (collective calls). */
  char* inbox = NULL;
  uint64_t* sig = NULL;
  /* The default segment kind is DEVICE (GPU memory) when every PE has a GPU, HOST otherwise; the demo touches its
   * symmetric objects only through tether calls, so it runs unchanged on both. calloc zeroes and ends with a barrier. */
  void* probe = NULL;
  CHECK(tether_calloc(world, 1, MSG_BYTES, (void**)&inbox));
  CHECK(tether_calloc(world, 1, sizeof(uint64_t), (void**)&sig));
  CHECK(tether_malloc(world, 64, &probe));
  const int device = tether_segment_kind(world, probe) == TETHER_SEG_DEVICE;
  CHECK(tether_free(world, probe));

  /* 1. Who am I */
  printf("PE %d of %d: local PE %d of %d on this host; symmetric objects in %s\n", me, npes,
         tether_local_pe(world), tether_local_size(world), device ? "GPU memory (DEVICE segment)" : "host memory (HOST segment)");
  fflush(stdout);
  CHECK(tether_barrier_all(world));

  /* 2. Ring exchange with put_signal: data first, then the signal (who sees the signal sees the data). */
  const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
  char msg[MSG_BYTES], expected[MSG_BYTES];
  memset(msg, 0, sizeof msg);
  snprintf(msg, sizeof msg, "greetings from PE %d of %d", me, npes);
  snprintf(expected, sizeof expected, "greetings from PE %d of %d", prev, npes);
  CHECK(tether_put_signal(world, inbox, msg, sizeof msg, sig, 1, TETHER_SIGNAL_SET, next));
  CHECK(tether_signal_wait_until(world, sig, TETHER_CMP_EQ, 1, NULL));
  char got[MSG_BYTES];
  CHECK(tether_get(world, got, inbox, MSG_BYTES, me)); /* read my own copy: works for host and GPU memory */
  const int ring_ok = memchr(got, '\0', MSG_BYTES) != NULL && strcmp(got, expected) == 0;
  printf("PE %d received \"%.*s\" from PE %d: %s\n", me, MSG_BYTES, got, prev, ring_ok ? "ok" : "WRONG");
  fflush(stdout);
  if (!ring_ok) {
    fprintf(stderr, "demo[PE %d]: ring exchange delivered wrong data (expected \"%s\")\n", me, expected);
    return 1;
  }
  CHECK(tether_barrier_all(world));

  /* 3. Latency / bandwidth PE 0 -> PE 1. The destination is symmetric; the source may be any local memory. */
  if (npes < 2) {
    printf("PE 0: one PE only, skipping the PE 0 -> PE 1 table (run with tetherrun -n 2)\n");
  } else {
    unsigned char* dest = NULL;
    CHECK(tether_align(world, 4096, TABLE_MAX, (void**)&dest));
    static const size_t sizes[] = {8, 4096, 65536, (size_t)1 << 20, TABLE_MAX};
    static const int iters[] = {500, 500, 200, 50, 10};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    if (me == 0) {
      unsigned char* src = malloc(TABLE_MAX);
      if (src == NULL) {
        fprintf(stderr, "demo[PE 0]: out of memory\n");
        return 1;
      }
      for (size_t i = 0; i < TABLE_MAX; ++i) src[i] = pattern(i);
      printf("\nPE 0 -> PE 1: blocking tether_put, host buffer -> %s of PE 1, then tether_quiet; mean over the "
             "iterations\n", device ? "GPU memory" : "host memory");
      printf("%-12s%14s%18s%10s\n", "# Size", "Latency(us)", "Bandwidth(GB/s)", "Iters");
      for (int s = 0; s < nsizes; ++s) {
        const size_t n = sizes[s];
        for (int i = 0; i < iters[s] / 10 + 1; ++i) CHECK(tether_put(world, dest, src, n, 1)); /* warm-up */
        const double t0 = now_us();
        for (int i = 0; i < iters[s]; ++i) CHECK(tether_put(world, dest, src, n, 1));
        CHECK(tether_quiet(world));
        const double lat = (now_us() - t0) / iters[s];
        printf("%-12zu%14.3f%18.3f%10d\n", n, lat, (double)n / (lat * 1e3), iters[s]);
      }
      fflush(stdout);
      free(src);
    }
    CHECK(tether_barrier_all(world)); /* completes PE 0's puts; PE 1 may now read its copy */
    if (me == 1) {
      unsigned char* copy = malloc(TABLE_MAX);
      if (copy == NULL) {
        fprintf(stderr, "demo[PE 1]: out of memory\n");
        return 1;
      }
      CHECK(tether_get(world, copy, dest, TABLE_MAX, me));
      for (size_t i = 0; i < TABLE_MAX; ++i) {
        if (copy[i] != pattern(i)) {
          fprintf(stderr, "demo[PE 1]: byte %zu of the %zu put by PE 0 is wrong\n", i, TABLE_MAX);
          return 1;
        }
      }
      free(copy);
      printf("PE 1: checked the %zu bytes PE 0 put: ok\n", TABLE_MAX);
      fflush(stdout);
    }
    CHECK(tether_barrier_all(world));
    CHECK(tether_free(world, dest));
  }

  CHECK(tether_free(world, sig));
  CHECK(tether_free(world, inbox));
  CHECK(tether_finalize(world));
  return 0;
}
