// msg_bench backend: NCCL point-to-point (ncclSend / ncclRecv on one communicator of every rank), GPU buffers only:
// tether_bench_msg_nccl, the reference for tether_bench_msg_gpu (bench/msg/compare_gpu.py). tether starts the ranks
// (tetherrun) and carries NCCL's unique id: rank 0 makes it and puts it into every rank's HOST symmetric box, a
// barrier, then ncclCommInitRank on every rank (as bench/coll does). Barriers are tether_barrier_all. NCCL needs one
// GPU per rank: when ranks share a GPU, no model runs (mb_detail says why) and the run has no rows.
// Models:
//   host    the calls: send / recv = ncclSend / ncclRecv + cudaStreamSynchronize (osu_xccl style); isend / irecv
//           open a group (ncclGroupStart) on the first call after a waitall, mb_waitall = ncclGroupEnd +
//           cudaStreamSynchronize: a bw window is one group of W sends, a bibw window one group of W recvs + W sends.
//   stream  a whole batch enqueued on the stream with no host synchronisation until its end (msg_program.h's list):
//           latency: every send and every recv on its own (stream order makes the ping-pong); bw and bibw: each
//           window's data messages in one group, the ack on its own. Host clock to the final cudaStreamSynchronize.
// NCCL_NVLS_ENABLE defaults to 0 here (NVLink multicast off on shared machines), as scripts/gpu-check sets it.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "msg_backend.h"
#include "msg_mem.h"
#include "msg_program.h"
#include "tether/tether.h"

namespace {

tether_t world;
ncclComm_t comm;
cudaStream_t stream;
void* dAck;
bool inGroup;
char detail[256] = "NCCL not started";

void tk(tether_status_t s, const char* call) {
  if (s == TETHER_SUCCESS) return;
  std::fprintf(stderr, "msg_bench: %s failed: %s\n", call, tether_status_string(s));
  std::fflush(nullptr);
  std::exit(1);
}
void ck(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "msg_bench: %s failed: %s\n", call, cudaGetErrorString(e));
  std::fflush(nullptr);
  std::exit(1);
}
void nk(ncclResult_t r, const char* call) {
  if (r == ncclSuccess) return;
  std::fprintf(stderr, "msg_bench: %s failed: %s (%s)\n", call, ncclGetErrorString(r), ncclGetLastError(comm));
  std::fflush(nullptr);
  std::exit(1);
}

// NCCL on every rank, or false with detail saying why not (the same decision on every rank: one host).
bool startNccl() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    (void)cudaGetLastError();
    std::snprintf(detail, sizeof detail, "NCCL not run: no GPU visible");
    return false;
  }
  if (tether_local_size(world) > ndev) {
    std::snprintf(detail, sizeof detail, "NCCL not run: %d ranks share %d GPUs (NCCL needs one GPU per rank)",
                  tether_local_size(world), ndev);
    return false;
  }
  struct Box {
    ncclUniqueId id;
    int status;
  };
  void* p = nullptr;
  tk(tether_malloc_kind(world, TETHER_SEG_HOST, 64, sizeof(Box), &p), "tether_malloc_kind");
  Box* box = static_cast<Box*>(p);
  if (tether_my_pe(world) == 0) {
    Box b;
    std::memset(&b, 0, sizeof b);
    b.status = ncclGetUniqueId(&b.id);
    for (int pe = 0; pe < tether_n_pes(world); ++pe) tk(tether_put(world, box, &b, sizeof b, pe), "tether_put");
  }
  tk(tether_barrier_all(world), "tether_barrier_all");
  Box b;
  std::memcpy(&b, box, sizeof b);
  tk(tether_free(world, box), "tether_free");
  nk(static_cast<ncclResult_t>(b.status), "ncclGetUniqueId (rank 0)");
  nk(ncclCommInitRank(&comm, tether_n_pes(world), b.id, tether_my_pe(world)), "ncclCommInitRank");
  int v = 0;
  nk(ncclGetVersion(&v), "ncclGetVersion");
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  std::snprintf(detail, sizeof detail, "NCCL %d.%d.%d (header %d.%d.%d), NCCL_NVLS_ENABLE=%s", v / 10000,
                v / 100 % 100, v % 100, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, nvls ? nvls : "(unset)");
  return true;
}

void groupOpen() {
  if (!inGroup) nk(ncclGroupStart(), "ncclGroupStart");
  inGroup = true;
}

void op(const mb_batch_t* b, const mp_op_t& o) {
  void* buf = o.ack ? dAck : (o.send ? b->sbuf : b->rbuf);
  const size_t bytes = o.ack ? MP_ACK_BYTES : b->size;
  if (o.send) nk(ncclSend(buf, bytes, ncclChar, b->peer, comm, stream), "ncclSend");
  else nk(ncclRecv(buf, bytes, ncclChar, b->peer, comm, stream), "ncclRecv");
}

void streamBatch(const mb_batch_t* b) {
  const size_t n = mp_count(b);
  for (size_t i = 0; i < n;) {
    const mp_op_t o = mp_op(b, i);
    if (b->row == MB_LAT || o.ack) {
      op(b, o);
      ++i;
      continue;
    }
    nk(ncclGroupStart(), "ncclGroupStart");  // one window's data messages
    const size_t end = i + (b->row == MB_BW ? b->window : 2 * b->window);
    for (; i < end; ++i) op(b, mp_op(b, i));
    nk(ncclGroupEnd(), "ncclGroupEnd");
  }
  ck(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

const mb_model_t kModels[] = {
    {"host",
     "ncclSend/ncclRecv + cudaStreamSynchronize per call; a window = one ncclGroupStart/End + sync", 1, 0, nullptr},
    {"stream",
     "a whole batch of ncclSend/ncclRecv on one stream (a window's messages grouped), one sync at the end", 1,
     0, streamBatch},
};
bool started;

}  // namespace

extern "C" {

void mb_init(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  tk(tether_init(&world), "tether_init");
}

void mb_finalize(void) {
  if (comm) nk(ncclCommDestroy(comm), "ncclCommDestroy");
  if (stream) ck(cudaStreamDestroy(stream), "cudaStreamDestroy");
  tk(tether_finalize(world), "tether_finalize");
}

int mb_rank(void) { return tether_my_pe(world); }
int mb_size(void) { return tether_n_pes(world); }
int mb_local_rank(void) { return tether_local_pe(world); }
const char* mb_name(void) { return "nccl"; }
const char* mb_detail(void) { return detail; }

// After mm_init (the GPU is chosen): NCCL starts here.
const mb_model_t* mb_models(size_t* n) {
  *n = 0;
  if (!started) {
    started = true;
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    if (!startNccl()) return nullptr;
    ck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    ck(cudaMalloc(&dAck, 64), "cudaMalloc");
  }
  if (!comm) return nullptr;
  *n = sizeof kModels / sizeof kModels[0];
  return kModels;
}

int mb_mem_ok(int mem_me, int mem_peer, const char** why) {
  if (mem_me == MB_DEVICE_MEM && mem_peer == MB_DEVICE_MEM) return 1;
  *why = "NCCL takes GPU buffers only";
  return 0;
}

void mb_send(const void* buf, size_t bytes, int peer, int tag) {
  (void)tag;
  nk(ncclSend(buf, bytes, ncclChar, peer, comm, stream), "ncclSend");
  ck(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void mb_recv(void* buf, size_t bytes, int peer, int tag) {
  (void)tag;
  nk(ncclRecv(buf, bytes, ncclChar, peer, comm, stream), "ncclRecv");
  ck(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void* mb_reqs_alloc(size_t n) { return std::calloc(n ? n : 1, 1); }  // NCCL has no requests: the group is the set

void mb_isend(const void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i) {
  (void)tag, (void)reqs, (void)i;
  groupOpen();
  nk(ncclSend(buf, bytes, ncclChar, peer, comm, stream), "ncclSend");
}

void mb_irecv(void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i) {
  (void)tag, (void)reqs, (void)i;
  groupOpen();
  nk(ncclRecv(buf, bytes, ncclChar, peer, comm, stream), "ncclRecv");
}

void mb_waitall(void* reqs, size_t n) {
  (void)reqs, (void)n;
  if (inGroup) nk(ncclGroupEnd(), "ncclGroupEnd");
  inGroup = false;
  ck(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void mb_barrier(void) { tk(tether_barrier_all(world), "tether_barrier_all"); }

void mb_abort(int code) {
  std::fflush(nullptr);
  std::exit(code);
}

}  // extern "C"
