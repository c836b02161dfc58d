// tether_bench_msg_gpu: tether's stream and kernel models for msg_bench (GPU buffers on both ranks; the "host" model
// is backend_tether.c's calls). Both run a batch as msg_program.h's list of operations, in chunks of at most kChunk
// operations, on one stream created with cudaStreamNonBlocking (a host-posted receive or send with a GPU buffer
// first synchronises the legacy default stream, which a blocking stream would join: docs/msg.md "GPU buffers and
// streams"). A chunk's requests are freed (tether_msg_waitall on the host) after the NEXT chunk is enqueued, so at
// most two chunks (2 x kChunk = 128 requests) are pending: well under the 4096 stream-ordered/prepared requests per PE
// (tether/msg.h), while the GPU always has the next chunk queued behind the one it runs.
//
//  stream  a send: tether_isend_on_stream(sbuf) on the stream; consecutive receives: tether_irecv from the host,
//          then ONE tether_msg_waitall_on_stream over them (the stream's later sends wait for them).
//  kernel  the host posts the chunk's receives (tether_irecv + tether_msg_wait_desc) and prepares its sends
//          (tether_send_prepare + tether_msg_send_desc) in list order, then launches ONE kernel per chunk (1 thread)
//          that walks the list: msg_send(desc) for a send, msg_wait(desc) for a receive. The descriptors travel as
//          the kernel's parameter (kChunk x 33 B, under the 4 KiB parameter limit): no copy, no extra stream work.
//          A chunk's requests are freed only after its kernel has finished (an event per chunk): the descriptors
//          must not outlive their requests.
//          One kernel per chunk of up to kChunk operations (32 round trips in latency) rather than one persistent
//          kernel for the whole batch: requests are bounded (4096 per PE), so a persistent kernel would need the host
//          to feed descriptors through memory while it runs; chunks keep each kernel's descriptors fixed and the
//          launch cost is shared by 32 round trips (and overlapped: the next chunk is queued while one runs).
// Timing is msg_bench.c's: the host clock around the whole batch, which ends when every request is freed and the
// stream is synchronised (so it includes the enqueue cost the GPU did not hide).
// Kernels are loaded (cudaFuncGetAttributes) in mbt_gpu_models, before any stream wait exists: docs/msg.md "Load your
// kernels first".
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "backend_tether.h"
#include "msg_mem.h"
#include "msg_program.h"
#include "tether/msg.h"
#include "tether/msg_device.cuh"

namespace {

constexpr size_t kChunk = 64;

struct Program {
  int n;
  unsigned char send[kChunk];
  tether_msg_send_desc_t sd[kChunk];  // for sends
  tether_msg_wait_desc_t wd[kChunk];  // for receives
};

__global__ void kProgram(tether_device_handle_t h, Program p) {
  for (int i = 0; i < p.n; ++i) {
    if (p.send[i]) tether::device::msg_send<tether::device::Scope::Thread>(h, p.sd[i]);
    else tether::device::msg_wait<tether::device::Scope::Thread>(h, p.wd[i]);
  }
}

cudaStream_t stream;
tether_device_handle_t handle;
void* dAck;                       // the models' ack buffer (GPU memory)
tether_request_t reqs[2][kChunk]; // two chunks' requests
size_t pending[2];                // requests of each chunk slot
cudaEvent_t done[2];              // kernel model: recorded after each chunk's kernel
bool launched[2];                 // kernel model: done[slot] was recorded and not yet waited for

void ck(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "msg_bench: %s failed: %s\n", call, cudaGetErrorString(e));
  std::exit(2);
}

// Frees a chunk slot's requests. Kernel model: only after its kernel has finished (a descriptor must not be used
// after the host frees its request: tether/msg.h), which the chunk's event says.
void freeSlot(int slot) {
  if (launched[slot]) ck(cudaEventSynchronize(done[slot]), "cudaEventSynchronize");
  launched[slot] = false;
  if (pending[slot]) mbt_ok(tether_msg_waitall(mbt_world(), pending[slot], reqs[slot], nullptr), "tether_msg_waitall");
  pending[slot] = 0;
}

// Enqueues ops [i0, i1) of b in the stream model into chunk slot `slot`.
void streamChunk(const mb_batch_t* b, size_t i0, size_t i1, int slot) {
  tether_t w = mbt_world();
  tether_request_t* r = reqs[slot];
  size_t n = 0;
  for (size_t i = i0; i < i1;) {
    const mp_op_t op = mp_op(b, i);
    void* buf = op.ack ? dAck : (op.send ? b->sbuf : b->rbuf);
    const size_t bytes = op.ack ? MP_ACK_BYTES : b->size;
    const int tag = op.ack ? MP_TAG_ACK : MP_TAG_DATA;
    if (op.send) {
      mbt_ok(tether_isend_on_stream(w, buf, bytes, b->peer, tag, stream, &r[n++]), "tether_isend_on_stream");
      ++i;
      continue;
    }
    const size_t first = n;  // a run of receives: posted now, one stream wait for all of them
    for (; i < i1; ++i) {
      const mp_op_t o2 = mp_op(b, i);
      if (o2.send) break;
      mbt_ok(tether_irecv(w, o2.ack ? dAck : b->rbuf, o2.ack ? MP_ACK_BYTES : b->size, b->peer,
                          o2.ack ? MP_TAG_ACK : MP_TAG_DATA, &r[n++]),
             "tether_irecv");
    }
    mbt_ok(tether_msg_waitall_on_stream(w, n - first, r + first, stream), "tether_msg_waitall_on_stream");
  }
  pending[slot] = n;
}

// Prepares ops [i0, i1) of b in the kernel model into chunk slot `slot` and launches their kernel.
void kernelChunk(const mb_batch_t* b, size_t i0, size_t i1, int slot) {
  tether_t w = mbt_world();
  tether_request_t* r = reqs[slot];
  Program p;
  p.n = static_cast<int>(i1 - i0);
  for (size_t i = i0; i < i1; ++i) {
    const mp_op_t op = mp_op(b, i);
    const size_t j = i - i0;
    const size_t bytes = op.ack ? MP_ACK_BYTES : b->size;
    const int tag = op.ack ? MP_TAG_ACK : MP_TAG_DATA;
    p.send[j] = static_cast<unsigned char>(op.send);
    if (op.send) {
      mbt_ok(tether_send_prepare(w, op.ack ? dAck : b->sbuf, bytes, b->peer, tag, &r[j]), "tether_send_prepare");
      mbt_ok(tether_msg_send_desc(w, r[j], &p.sd[j]), "tether_msg_send_desc");
    } else {
      mbt_ok(tether_irecv(w, op.ack ? dAck : b->rbuf, bytes, b->peer, tag, &r[j]), "tether_irecv");
      mbt_ok(tether_msg_wait_desc(w, r[j], &p.wd[j]), "tether_msg_wait_desc");
    }
  }
  pending[slot] = i1 - i0;
  kProgram<<<1, 1, 0, stream>>>(handle, p);
  ck(cudaGetLastError(), "kProgram launch");
  ck(cudaEventRecord(done[slot], stream), "cudaEventRecord");
  launched[slot] = true;
}

void runChunks(const mb_batch_t* b, void (*chunk)(const mb_batch_t*, size_t, size_t, int)) {
  const size_t n = mp_count(b);
  int slot = 0;
  for (size_t i = 0; i < n; i += kChunk, slot ^= 1) {
    chunk(b, i, i + kChunk < n ? i + kChunk : n, slot);
    freeSlot(slot ^ 1);  // the chunk before: the GPU has this one queued behind it
  }
  freeSlot(slot ^ 1);
  ck(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void streamBatch(const mb_batch_t* b) { runChunks(b, streamChunk); }
void kernelBatch(const mb_batch_t* b) { runChunks(b, kernelChunk); }

const mb_model_t kModels[] = {
    {"stream",
     "tether_isend_on_stream + host irecv + msg_waitall_on_stream on a created non-blocking stream, chunks of 64 ops; "
     "host clock to stream sync",
     1, 0, streamBatch},
    {"kernel",
     "one 1-thread kernel per chunk of 64 ops: msg_send/msg_wait on host-prepared descriptors (send_prepare, irecv); "
     "host clock to stream sync",
     1, 0, kernelBatch},
};

}  // namespace

extern "C" const mb_model_t* mbt_gpu_models(size_t* n) {
  *n = 0;
  if (!mm_gpus()) return nullptr;  // no GPU: the host model only
  ck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  ck(cudaMalloc(&dAck, 64), "cudaMalloc");
  for (cudaEvent_t& e : done) ck(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  cudaFuncAttributes attr;
  ck(cudaFuncGetAttributes(&attr, kProgram), "cudaFuncGetAttributes");  // loaded before any stream wait exists
  mbt_ok(tether_device_handle(mbt_world(), &handle), "tether_device_handle");
  *n = sizeof kModels / sizeof kModels[0];
  return kModels;
}
