/* The messaging layer under bench/msg/msg_bench.c: one implementation per library (backend_tether.c: tether's
 * tether_send/recv/isend/irecv; backend_mpi.c: MPI point-to-point on MPI_COMM_WORLD), linked into one binary each.
 *
 * Every call either succeeds or ends the run: a backend reports a failed call (naming it and the library's error) on
 * stderr and aborts every rank with exit status 1, so the benchmark never checks a return value. Requests live in
 * an array the backend allocates (mb_reqs_alloc): isend/irecv fill slot i, mb_waitall completes slots 0 .. n-1. */
#ifndef TETHER_BENCH_MSG_BACKEND_H
#define TETHER_BENCH_MSG_BACKEND_H

#include <stddef.h>

void mb_init(int* argc, char*** argv);
void mb_finalize(void);
int mb_rank(void);
int mb_size(void);
const char* mb_name(void);   /* "tether", "mpi": the JSON "impl" */
const char* mb_detail(void); /* library and version, settings that matter (eager limit, ...): one line */

void mb_send(const void* buf, size_t bytes, int peer, int tag);
void mb_recv(void* buf, size_t bytes, int peer, int tag);
void* mb_reqs_alloc(size_t n);
void mb_isend(const void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i);
void mb_irecv(void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i);
void mb_waitall(void* reqs, size_t n);
void mb_barrier(void);
void mb_abort(int code); /* ends every rank with this exit status */

#endif /* TETHER_BENCH_MSG_BACKEND_H */
