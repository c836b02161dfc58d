/* The messaging layer under bench/msg/msg_bench.c: one implementation per library (backend_tether.c: tether's
 * tether_send/recv/isend/irecv; backend_mpi.c: MPI point-to-point on MPI_COMM_WORLD; backend_nccl.cu: NCCL's
 * ncclSend/ncclRecv, GPU buffers only), linked into one binary each.
 *
 * Every call either succeeds or ends the run: a backend reports a failed call (naming it and the library's error) on
 * stderr and aborts every rank with exit status 1, so the benchmark never checks a return value. Requests live in
 * an array the backend allocates (mb_reqs_alloc): isend/irecv fill slot i, mb_waitall completes slots 0 .. n-1.
 *
 * Models: a backend runs the rows in one or more models (mb_models). A model whose `batch` is NULL runs the
 * benchmark's own batch over mb_send/recv/isend/irecv/waitall (the "host" model of tether and MPI, NCCL's calls with a
 * stream synchronisation each); one with a `batch` runs a whole timed batch itself (tether's stream and kernel models,
 * NCCL's stream model): the same traffic as the benchmark's batch (see msg_bench.c, "Rows"), the same validation
 * afterwards, and it returns only when the last message of the batch is in rbuf on this rank (streams
 * synchronised, requests freed). */
#ifndef TETHER_BENCH_MSG_BACKEND_H
#define TETHER_BENCH_MSG_BACKEND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MB_LAT, MB_BW, MB_BIBW, MB_ROWS };         /* the rows: latency (ping-pong), bw (windows one way), bibw */
enum { MB_HOST_MEM = 0, MB_DEVICE_MEM = 1 };       /* where a rank's buffers are (bench/msg/msg_mem.h) */

/* One timed batch as msg_bench.c defines it: k units of `size` bytes between this rank and `peer`; `first` is the
 * side that times (sends first in latency, sends in bw). Windows of `window` messages (k is a multiple of it in bw
 * and bibw). mem_me / mem_peer: where this rank's and the peer's buffers are. */
typedef struct mb_batch_s {
  int row, first, peer, mem_me, mem_peer;
  void *sbuf, *rbuf;
  size_t size, k, window;
} mb_batch_t;

typedef struct mb_model_s {
  const char* name;  /* the JSON "model": "host", "stream", "kernel" */
  const char* what;  /* one line for the table header: how a batch runs in this model */
  int device_only;   /* 1: only when both ranks' buffers are GPU memory */
  int opt_in;        /* 1: runs only when --models names it (a check, not a measurement) */
  void (*batch)(const mb_batch_t* b); /* NULL: msg_bench.c's batch over the calls below */
} mb_model_t;

void mb_init(int* argc, char*** argv);
void mb_finalize(void);
int mb_rank(void);
int mb_size(void);
int mb_local_rank(void);     /* rank among this host's ranks (picks the GPU: local rank % GPUs) */
const char* mb_name(void);   /* "tether", "mpi", "nccl": the JSON "impl" */
const char* mb_detail(void); /* library and version, settings that matter (eager limit, ...): one line */
/* The models this backend runs (*n of them), in the order the benchmark runs them. Called after mm_init. */
const mb_model_t* mb_models(size_t* n);
/* 1 when the calls (model batch NULL) take this pairing of buffers; else 0 and *why says why (a static string). */
int mb_mem_ok(int mem_me, int mem_peer, const char** why);

void mb_send(const void* buf, size_t bytes, int peer, int tag);
void mb_recv(void* buf, size_t bytes, int peer, int tag);
void* mb_reqs_alloc(size_t n);
void mb_isend(const void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i);
void mb_irecv(void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i);
void mb_waitall(void* reqs, size_t n);
void mb_barrier(void);
void mb_abort(int code); /* ends every rank with this exit status */

#ifdef __cplusplus
}
#endif

#endif /* TETHER_BENCH_MSG_BACKEND_H */
