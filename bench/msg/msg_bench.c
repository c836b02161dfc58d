/* msg_bench: OSU-style two-sided messaging benchmark (osu_latency, osu_bw, osu_bibw), written against the small
 * layer of bench/msg/msg_backend.h so the SAME method runs over tether's messaging (backend_tether.c ->
 * tether_bench_msg) and over MPI (backend_mpi.c -> tether_bench_msg_mpi); bench/msg/compare.sh puts them side by side.
 * CUDA builds add tether_bench_msg_gpu (tether, GPU buffers, the host, stream and kernel models) and, where NCCL is
 * found, tether_bench_msg_nccl (ncclSend/ncclRecv): the same rows on GPU memory (bench/msg/compare_gpu.py).
 *
 * Method (identical for every backend)
 *  - 2 ranks: rank 0 and rank 1 run the rows, rank 0 times them; further ranks only join the barriers. With --pairs
 *    every pair (2i, 2i+1) runs the rows at once (rank 2i like rank 0) and rank 0 reports its own pair's times.
 *  - Buffers (--mem): one send and one receive buffer of --max-size bytes per rank, not registered or symmetric: what
 *    an application passes. host: aligned_alloc to a page, every page written before the first row; device:
 *    cudaMalloc (msg_mem.h); host-device: the first rank of a pair host, the second device. Every message of a row
 *    uses the same buffers (as the OSU benchmarks do: a window's receives share one buffer).
 *  - Models (--models): the backend's (msg_backend.h): "host" = the blocking/non-blocking calls below from the host;
 *    tether's "stream" and "kernel" and NCCL's "stream" run the same traffic their own way (backend_tether_gpu.cu,
 *    backend_nccl.cu say how). Every pairing x model the backend takes, then every row, then every size.
 *  - Clock: clock_gettime(CLOCK_MONOTONIC), read on rank 0 once before and once after a batch. --warmup batches are
 *    run and discarded, then --batches timed ones; a row reports the MEDIAN batch (`value`) and the best (`min`:
 *    lowest latency, highest GB/s). A barrier comes before every row and size, never inside a batch.
 *  - Rows (S = message size; k per batch as below):
 *      latency  rank 0: send(S) to 1, recv(S) from 1; rank 1: recv, then send back. k round trips per batch;
 *               reported: batch time / k / 2 = one-way latency (us). Sizes from 0.
 *      bw       windows of W: rank 0 isend(S) x W + waitall, then recv of a 4-byte ack; rank 1 irecv(S) x W +
 *               waitall, then send of the ack. GB/s (10^9 B/s) = k * S / batch time. Sizes from 1.
 *      bibw     windows of W on both ranks: irecv(S) x W, isend(S) x W, one waitall of all 2W. GB/s = both
 *               directions together = 2 * k * S / batch time. Sizes from 1.
 *    k = min(--iters, --batch-bytes / S), at least 1; bw and bibw round it down to whole windows of W = --window
 *    (at least one window, so at large S a batch moves W * S bytes per direction).
 *  - Validation (outside the timed region): every sender fills its send buffer with a pattern of (row, rank, size)
 *    and every receiver zeroes its receive buffer before a row's size; after the last batch each receiver checks
 *    every byte of the last message. A wrong byte ends the run (exit 1) naming row, size and offset.
 *
 * Output: a human table per row on stdout ('#' header lines) and JSON lines (--json FILE, or stdout with --json -,
 * the tables then go to stderr), one object per row and size:
 *   {"impl":"tether","model":"host","mem":"H-H","op":"latency","size":8,"value":0.61,"min":0.58,"unit":"us",
 *    "stat":"median","iters":1000,"window":0,"batches":21,"ranks":2,"pairs":1}
 * (mem: the pairing, first rank's side first: H-H, D-D, H-D; window: messages per window, 0 in latency rows).
 * The last table line is "# msg_bench: done" (written before finalize): a driver can tell a complete run.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "msg_backend.h"
#include "msg_mem.h"

enum { R_LAT = MB_LAT, R_BW = MB_BW, R_BIBW = MB_BIBW, R_COUNT = MB_ROWS };
static const struct {
  const char *op, *unit, *what;
  int bytes_per_unit; /* GB/s rows: payload bytes per timed unit (per message: 1 direction (bw) or 2 (bibw)) */
} rows[R_COUNT] = {
    {"latency", "us", "send/recv ping-pong, rank 0 <-> rank 1, one-way = round trip / 2", 0},
    {"bw", "GB/s", "windows of isend x W + waitall, 4-byte ack back; rank 0 -> rank 1", 1},
    {"bibw", "GB/s", "windows of irecv x W + isend x W + waitall, both ranks; both directions", 2},
};
enum { TAG_DATA = 1, TAG_ACK = 2 };

static struct {
  size_t min_size, max_size, batch_bytes;
  size_t iters, batches, warmup, window;
  size_t window_bytes;
  const char *ops, *json, *mems, *models;
  int pairs;
} o = {0, 4u << 20, 16u << 20, 1000, 21, 3, 64, 0, NULL, NULL, "host", NULL, 0};

/* --mem pairings: where the first and the second rank of a pair keep their buffers. */
static const struct {
  const char *name, *label;
  int first, second;
} pairings[] = {{"host", "H-H", MB_HOST_MEM, MB_HOST_MEM},
                {"device", "D-D", MB_DEVICE_MEM, MB_DEVICE_MEM},
                {"host-device", "H-D", MB_HOST_MEM, MB_DEVICE_MEM}};
enum { N_PAIRINGS = 3 };

static int me, nranks, active, first, peer; /* active: in a pair that runs the rows; first: times (even rank) */
static FILE *jf, *tf; /* JSON lines and the table (rank 0) */
static char *sbuf, *rbuf, *ack; /* ack: 4 bytes in this rank's kind of memory (bw's ack in the host model) */
static int mem_me, mem_peer;        /* this pairing: where this rank's and the peer's buffers are */
static char* bufs[2][3];            /* [mem][0: send, 1: receive, 2: ack], allocated when a pairing first needs them */
static unsigned char* stage;        /* host: the pattern, and the read-back for the check (GPU buffers) */
static void* reqs;     /* 2 * window requests */
static double* samples; /* per timed unit, us */

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* ---- options ------------------------------------------------------------------------------------------------- */

static const char usage_text[] =
    "usage: tetherrun -n 2 tether_bench_msg [options]   |   mpirun -np 2 tether_bench_msg_mpi [options]\n"
    "  --min-size S / --max-size S   sizes S, 2S, 4S, ... up to max (0: then 1, 2, 4 ...; size 0 is latency\n"
    "                   only; default 0 .. 4M)\n"
    "  --iters N        round trips (latency) or messages (bw, bibw) per batch at small sizes (default 1000)\n"
    "  --batch-bytes S  per batch at most S bytes per direction, at least 1 op / 1 window (default 16M)\n"
    "  --batches N      timed batches (default 21, median reported); --warmup N untimed ones first (default 3)\n"
    "  --window N       isends/irecvs per waitall in bw and bibw (default 64)\n"
    "  --window-bytes S at most S bytes per window: the window shrinks to S / size, at least 1 (default 0: off)\n"
    "  --ops a,b        only these rows of latency,bw,bibw (default: all)\n"
    "  --mem a,b        buffer pairings, each in turn: host, device (cudaMalloc; *_gpu/_nccl binaries), host-device\n"
    "                   (first rank host, second device) (default: host)\n"
    "  --models a,b     only these of the backend's models (host, stream, kernel; default: all it has)\n"
    "  --pairs          every pair (2i, 2i+1) runs at once (needs an even rank count); rank 0 reports its pair\n"
    "  --json FILE      JSON lines to FILE ('-' = stdout; the tables then go to stderr)\n"
    "  --quick          smoke settings: iters 20, batches 3, warmup 1, window 8, max-size 64K\n"
    "  sizes take K/M suffixes (powers of 2)\n";

static void bad_usage(const char* what, const char* arg) {
  if (me == 0) fprintf(stderr, "msg_bench: %s '%s' (--help)\n", what, arg);
  mb_barrier(); /* every rank parses the same options: no rank ends (and has the others killed) before rank 0 said it */
  mb_abort(2);
}

static size_t parse_num(const char* s) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  int shift = 0;
  if (end != s && (*end == 'K' || *end == 'k')) shift = 10, ++end;
  else if (end != s && (*end == 'M' || *end == 'm')) shift = 20, ++end;
  if (errno || end == s || *end != '\0' || *s == '-') bad_usage("bad number", s);
  return (size_t)(v << shift);
}

static void parse_args(int argc, char** argv) {
  const struct {
    const char* name;
    size_t* dst;
  } num_opts[] = {{"--min-size", &o.min_size}, {"--max-size", &o.max_size}, {"--batch-bytes", &o.batch_bytes},
                  {"--iters", &o.iters},       {"--batches", &o.batches},   {"--warmup", &o.warmup},
                  {"--window", &o.window},     {"--window-bytes", &o.window_bytes}};
  const size_t n_num = sizeof num_opts / sizeof num_opts[0];
  int quick = 0;
  unsigned given = 0; /* bit i: num_opts[i] was given */
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    size_t j = 0;
    while (j < n_num && strcmp(a, num_opts[j].name)) ++j;
    const int takes_value = j < n_num || !strcmp(a, "--ops") || !strcmp(a, "--json") || !strcmp(a, "--mem") ||
                            !strcmp(a, "--models");
    if (takes_value && i + 1 >= argc) bad_usage("missing value for", a);
    if (j < n_num) *num_opts[j].dst = parse_num(argv[++i]), given |= 1u << j;
    else if (!strcmp(a, "--ops")) o.ops = argv[++i];
    else if (!strcmp(a, "--mem")) o.mems = argv[++i];
    else if (!strcmp(a, "--models")) o.models = argv[++i];
    else if (!strcmp(a, "--pairs")) o.pairs = 1;
    else if (!strcmp(a, "--json")) o.json = argv[++i];
    else if (!strcmp(a, "--quick")) quick = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (me == 0) fputs(usage_text, stdout);
      mb_finalize();
      exit(0);
    } else bad_usage("unknown option", a);
  }
  if (quick) { /* indices into num_opts: max-size 1, iters 3, batches 4, warmup 5, window 6 (0: no quick value) */
    const size_t quick_val[] = {0, 64u << 10, 0, 20, 3, 1, 8, 0};
    for (size_t j = 1; j < n_num; ++j)
      if (quick_val[j] && !(given & (1u << j))) *num_opts[j].dst = quick_val[j];
  }
  if (o.iters < 1) o.iters = 1;
  if (o.batches < 1) o.batches = 1;
  if (o.window < 1) o.window = 1;
  if (o.max_size < o.min_size) o.max_size = o.min_size;
  for (const char* p = o.mems;; ++p) { /* every --mem item must name a pairing */
    const size_t len = strcspn(p, ",");
    int k = 0;
    while (k < N_PAIRINGS && (strlen(pairings[k].name) != len || strncmp(p, pairings[k].name, len))) ++k;
    if (k == N_PAIRINGS) bad_usage("--mem takes host, device, host-device; not", o.mems);
    p += len;
    if (!*p) break;
  }
}

/* Whether `item` is in the comma list `list` (NULL: every item is). */
static int in_list(const char* list, const char* item) {
  if (!list) return 1;
  const size_t n = strlen(item);
  for (const char* p = list;; ++p) {
    const size_t len = strcspn(p, ",");
    if (len == n && !strncmp(p, item, n)) return 1;
    p += len;
    if (!*p) return 0;
  }
}
static int wanted(const char* op) { return in_list(o.ops, op); }

/* ---- rows ---------------------------------------------------------------------------------------------------- */

static unsigned char pat(int row, int rank, size_t size, size_t i) {
  return (unsigned char)(i * 131u + size * 7u + (size_t)row * 29u + (size_t)rank * 53u + 1u);
}

/* Messages per window at `size`: --window, shrunk to --window-bytes / size (at least 1) when that is set. */
static size_t window_for(size_t size) {
  size_t w = o.window;
  if (o.window_bytes && size > 0 && w > o.window_bytes / size) w = o.window_bytes / size;
  return w < 1 ? 1 : w;
}

/* Timed units per batch: round trips (latency) or messages per direction, whole windows (bw, bibw). */
static size_t units_for(int row, size_t size) {
  const size_t w = window_for(size);
  size_t k = o.iters;
  if (size > 0 && k > o.batch_bytes / size) k = o.batch_bytes / size;
  if (row != R_LAT) k = k < w ? w : k / w * w;
  return k < 1 ? 1 : k;
}

/* One batch of `row` over the backend's calls, on an active rank: k units of `size` bytes with the peer. */
static void batch(int row, size_t size, size_t k) {
  const size_t w = window_for(size);
  switch (row) {
    case R_LAT:
      for (size_t i = 0; i < k; ++i) {
        if (first) {
          mb_send(sbuf, size, peer, TAG_DATA);
          mb_recv(rbuf, size, peer, TAG_DATA);
        } else {
          mb_recv(rbuf, size, peer, TAG_DATA);
          mb_send(sbuf, size, peer, TAG_DATA);
        }
      }
      break;
    case R_BW:
      for (size_t i = 0; i < k; i += w) {
        for (size_t j = 0; j < w; ++j) {
          if (first) mb_isend(sbuf, size, peer, TAG_DATA, reqs, j);
          else mb_irecv(rbuf, size, peer, TAG_DATA, reqs, j);
        }
        mb_waitall(reqs, w);
        if (first) mb_recv(ack, 4, peer, TAG_ACK);
        else mb_send(ack, 4, peer, TAG_ACK);
      }
      break;
    default: /* R_BIBW */
      for (size_t i = 0; i < k; i += w) {
        for (size_t j = 0; j < w; ++j) mb_irecv(rbuf, size, peer, TAG_DATA, reqs, j);
        for (size_t j = 0; j < w; ++j) mb_isend(sbuf, size, peer, TAG_DATA, reqs, w + j);
        mb_waitall(reqs, 2 * w);
      }
      break;
  }
}

static void fill_pattern(int row, int rank, size_t size) {
  for (size_t i = 0; i < size; ++i) stage[i] = pat(row, rank, size, i);
}

static void run_row(const mb_model_t* model, const char* mem_label, int row, size_t size) {
  const size_t k = units_for(row, size);
  const int sends = first || row != R_BW, receives = !first || row != R_BW;
  if (active) {
    if (sends) fill_pattern(row, me, size), mm_write(mem_me, sbuf, stage, size);
    if (receives) mm_zero(mem_me, rbuf, size);
  }
  mb_barrier();
  const mb_batch_t mb = {row, first, peer, mem_me, mem_peer, sbuf, rbuf, size, k, window_for(size)};
  if (active)
    for (size_t b = 0; b < o.warmup + o.batches; ++b) {
      const double t0 = now_us();
      if (model->batch) model->batch(&mb);
      else batch(row, size, k);
      const double t1 = now_us();
      if (b >= o.warmup) samples[b - o.warmup] = (t1 - t0) / (double)k / (row == R_LAT ? 2.0 : 1.0);
    }
  if (active && receives) {
    mm_read(mem_me, stage, rbuf, size);
    for (size_t i = 0; i < size; ++i)
      if (stage[i] != pat(row, peer, size, i)) {
        fprintf(stderr, "msg_bench: rank %d: %s %s %s size %zu: wrong byte at offset %zu (0x%02x, expected 0x%02x)\n",
                me, model->name, mem_label, rows[row].op, size, i, stage[i], pat(row, peer, size, i));
        mb_abort(1);
      }
  }
  mb_barrier();
  if (me != 0) return;
  qsort(samples, o.batches, sizeof *samples, cmp_double);
  const size_t n = o.batches;
  double med = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]), best = samples[0];
  if (rows[row].bytes_per_unit) { /* us per unit -> GB/s */
    med = (double)size * rows[row].bytes_per_unit / med / 1e3;
    best = (double)size * rows[row].bytes_per_unit / best / 1e3;
  }
  fprintf(tf, "  %-10zu %14.3f %14.3f %10zu\n", size, med, best, k);
  fflush(tf);
  if (jf) {
    fprintf(jf,
            "{\"impl\":\"%s\",\"model\":\"%s\",\"mem\":\"%s\",\"op\":\"%s\",\"size\":%zu,\"value\":%.6g,\"min\":%.6g,"
            "\"unit\":\"%s\",\"stat\":\"median\",\"iters\":%zu,\"window\":%zu,\"batches\":%zu,\"ranks\":%d,"
            "\"pairs\":%d}\n",
            mb_name(), model->name, mem_label, rows[row].op, size, med, best, rows[row].unit, k,
            row == R_LAT ? (size_t)0 : window_for(size), o.batches, nranks, o.pairs ? nranks / 2 : 1);
    fflush(jf);
  }
}

/* Every row of one pairing in one model (or a table line saying why not). */
static void run_pairing(int pi, const mb_model_t* model) {
  const char* label = pairings[pi].label;
  mem_me = first ? pairings[pi].first : pairings[pi].second;
  mem_peer = first ? pairings[pi].second : pairings[pi].first;
  const char* why = NULL;
  int ok = 1;
  if ((mem_me == MB_DEVICE_MEM || mem_peer == MB_DEVICE_MEM) && !mm_gpus())
    ok = 0, why = "no GPU visible or not a CUDA build";
  else if (model->device_only && (mem_me != MB_DEVICE_MEM || mem_peer != MB_DEVICE_MEM))
    ok = 0, why = "this model runs on GPU buffers only";
  else if (!model->batch && !mb_mem_ok(mem_me, mem_peer, &why))
    ok = 0;
  if (!ok) {
    if (me == 0) fprintf(tf, "\n# %s %s %s: skipped: %s\n", mb_name(), model->name, label, why ? why : "?");
    return;
  }
  for (int m = 0; m < 2; ++m) /* this rank's buffers, once per kind */
    if (active && m == mem_me && !bufs[m][0])
      bufs[m][0] = mm_alloc(m, o.max_size), bufs[m][1] = mm_alloc(m, o.max_size), bufs[m][2] = mm_alloc(m, 4);
  sbuf = bufs[mem_me][0]; /* NULL on idle ranks (they only join the barriers) */
  rbuf = bufs[mem_me][1];
  ack = bufs[mem_me][2];
  for (int row = 0; row < R_COUNT; ++row) {
    if (!wanted(rows[row].op)) continue;
    if (me == 0)
      fprintf(tf, "\n# %s %s %s %s: %s\n#   %s\n# %-10s %14s %14s %10s\n", mb_name(), model->name, label,
              rows[row].op, rows[row].what, model->what, "Size", row == R_LAT ? "Latency(us)" : "GB/s",
              row == R_LAT ? "Min(us)" : "Best(GB/s)", "Iters");
    for (size_t s = o.min_size; s <= o.max_size; s = s ? s * 2 : 1)
      if (s > 0 || row == R_LAT) run_row(model, label, row, s);
  }
}

/* ---- main ---------------------------------------------------------------------------------------------------- */

static void header(int argc, char** argv) {
  char host[256] = "?", date[64] = "?", load[128] = "?";
  gethostname(host, sizeof host - 1);
  const time_t t = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  FILE* lf = fopen("/proc/loadavg", "r");
  if (lf) {
    if (fgets(load, sizeof load, lf)) load[strcspn(load, "\n")] = '\0';
    fclose(lf);
  }
  fprintf(tf, "# msg_bench: impl %s (%s), %d ranks%s\n", mb_name(), mb_detail(), nranks,
          o.pairs ? ", every pair at once (rank 0 reports its pair)" : "");
  fprintf(tf, "# memory: %s\n", mm_detail());
  fprintf(tf, "# host %s, %ld online CPUs, date %s, load average %s\n", host, sysconf(_SC_NPROCESSORS_ONLN), date,
          load);
  fprintf(tf, "# command:");
  for (int i = 0; i < argc; ++i) fprintf(tf, " %s", argv[i]);
  fprintf(tf,
          "\n# sizes %zu..%zu, iters %zu, batch-bytes %zu, batches %zu (median reported), warmup %zu, window %zu"
          " (window-bytes %zu), mem %s\n",
          o.min_size, o.max_size, o.iters, o.batch_bytes, o.batches, o.warmup, o.window, o.window_bytes, o.mems);
}

int main(int argc, char** argv) {
  mb_init(&argc, &argv);
  me = mb_rank();
  nranks = mb_size();
  parse_args(argc, argv);
  if (nranks < 2 || (o.pairs && nranks % 2)) {
    if (me == 0) fprintf(stderr, "msg_bench: needs at least 2 ranks (an even count with --pairs)\n");
    mb_abort(2);
  }
  active = o.pairs ? 1 : me < 2;
  first = me % 2 == 0;
  peer = me ^ 1;
  mm_init(mb_local_rank());
  size_t n_models = 0;
  const mb_model_t* models = mb_models(&n_models);
  if (n_models == 0) { /* e.g. NCCL with ranks sharing a GPU: nothing this backend can measure here */
    if (me == 0) printf("SKIP: %s: no model can run (%s)\n", mb_name(), mb_detail());
    fflush(stdout);
    mb_barrier();
    mb_finalize();
    return 77;
  }
  int needs_gpu = 1; /* every pairing asked for has GPU buffers: without a GPU the run is skipped (exit 77) */
  for (int pi = 0; pi < N_PAIRINGS; ++pi)
    if (in_list(o.mems, pairings[pi].name) && pairings[pi].first == MB_HOST_MEM &&
        pairings[pi].second == MB_HOST_MEM)
      needs_gpu = 0;
  if (needs_gpu && !mm_gpus()) {
    if (me == 0) printf("SKIP: no GPU visible (or not a CUDA build): --mem %s needs GPU buffers\n", o.mems);
    fflush(stdout);
    mb_barrier();
    mb_finalize();
    return 77;
  }
  if (me == 0) {
    tf = o.json && !strcmp(o.json, "-") ? stderr : stdout;
    jf = !o.json ? NULL : strcmp(o.json, "-") ? fopen(o.json, "w") : stdout;
    if (o.json && !jf) {
      fprintf(stderr, "msg_bench: cannot open %s: %s\n", o.json, strerror(errno));
      mb_abort(2);
    }
    header(argc, argv);
  }
  stage = malloc(o.max_size + 1);
  reqs = mb_reqs_alloc(2 * o.window);
  samples = malloc(o.batches * sizeof *samples);
  if (!stage || !reqs || !samples) {
    fprintf(stderr, "msg_bench: rank %d: allocation of %zu bytes failed\n", me, o.max_size);
    mb_abort(2);
  }

  for (const char* p = o.mems;; ++p) { /* pairings in the order given */
    const size_t len = strcspn(p, ",");
    for (int pi = 0; pi < N_PAIRINGS; ++pi)
      if (strlen(pairings[pi].name) == len && !strncmp(p, pairings[pi].name, len))
        for (size_t m = 0; m < n_models; ++m)
          if (models[m].opt_in ? o.models && in_list(o.models, models[m].name) : in_list(o.models, models[m].name))
            run_pairing(pi, &models[m]);
    p += len;
    if (!*p) break;
  }

  mb_barrier();
  if (me == 0) {
    fprintf(tf, "# msg_bench: done\n");
    if (jf && jf != stdout) fclose(jf);
    fflush(NULL);
  }
  free(samples);
  free(reqs);
  free(stage);
  for (int m = 0; m < 2; ++m)
    if (bufs[m][0]) mm_free(m, bufs[m][0]), mm_free(m, bufs[m][1]), mm_free(m, bufs[m][2]);
  mb_finalize();
  return 0;
}
