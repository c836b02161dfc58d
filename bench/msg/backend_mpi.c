/* msg_bench backend: MPI point-to-point on MPI_COMM_WORLD (MPI_Send/Recv/Isend/Irecv/Waitall/Barrier), the
 * reference for bench/msg/compare.sh. Errors: MPI's default handler (MPI_ERRORS_ARE_FATAL) ends the job. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "msg_backend.h"

static int rank, size;
static char detail[MPI_MAX_LIBRARY_VERSION_STRING + 8];

void mb_init(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int len = 0;
  MPI_Get_library_version(detail, &len);
  for (char* p = detail; *p; ++p) /* one line: the first line of the version string */
    if (*p == '\n' || *p == '\r') {
      *p = '\0';
      break;
    }
}

void mb_finalize(void) { MPI_Finalize(); }
int mb_rank(void) { return rank; }
int mb_size(void) { return size; }
const char* mb_name(void) { return "mpi"; }
const char* mb_detail(void) { return detail; }

void mb_send(const void* buf, size_t bytes, int peer, int tag) {
  MPI_Send(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
}

void mb_recv(void* buf, size_t bytes, int peer, int tag) {
  MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void* mb_reqs_alloc(size_t n) { return calloc(n, sizeof(MPI_Request)); }

void mb_isend(const void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i) {
  MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, (MPI_Request*)reqs + i);
}

void mb_irecv(void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i) {
  MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, (MPI_Request*)reqs + i);
}

void mb_waitall(void* reqs, size_t n) { MPI_Waitall((int)n, reqs, MPI_STATUSES_IGNORE); }
void mb_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

void mb_abort(int code) {
  fflush(NULL);
  MPI_Abort(MPI_COMM_WORLD, code);
  exit(code);
}
