/* msg_bench backend: MPI point-to-point on MPI_COMM_WORLD (MPI_Send/Recv/Isend/Irecv/Waitall/Barrier), the
 * reference for bench/msg/compare.sh. Errors: MPI's default handler (MPI_ERRORS_ARE_FATAL) ends the job.
 * GPU buffers (tether_bench_msg_mpi_gpu, --mem device / host-device): passed to MPI as they are when the library says
 * at run time that it is CUDA-aware (Open MPI's MPIX_Query_cuda_support, declared weak: absent = not known to be);
 * otherwise those pairings are skipped with that reason (host staging is not implemented). */
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

/* Open MPI's extension (mpi-ext.h); weak, so libraries without it link and leave it NULL. */
extern int MPIX_Query_cuda_support(void) __attribute__((weak));

int mb_mem_ok(int mem_me, int mem_peer, const char** why) {
  if (mem_me == MB_HOST_MEM && mem_peer == MB_HOST_MEM) return 1;
  const int aware = MPIX_Query_cuda_support ? MPIX_Query_cuda_support() : 0;
  int all = 0;
  MPI_Allreduce(&aware, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all) return 1;
  *why = MPIX_Query_cuda_support ? "MPI library not CUDA-aware at run time (MPIX_Query_cuda_support() = 0); host "
                                   "staging not implemented"
                                 : "MPI library has no MPIX_Query_cuda_support: not known to be CUDA-aware; host "
                                   "staging not implemented";
  return 0;
}
int mb_rank(void) { return rank; }

/* Local rank: Open MPI's, MPICH/Hydra's or Slurm's environment (the GPU choice only), else the rank. */
int mb_local_rank(void) {
  const char* names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (getenv(names[i])) return atoi(getenv(names[i]));
  return rank;
}

const mb_model_t* mb_models(size_t* n) {
  static const mb_model_t host = {"host", "MPI_Send/Recv/Isend/Irecv/Waitall from the host", 0, 0, NULL};
  *n = 1;
  return &host;
}
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
