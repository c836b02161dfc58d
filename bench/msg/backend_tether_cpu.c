/* tether_bench_msg (host memory only): no measured models beyond "host" (the stream and kernel models are GPU ones:
 * backend_tether_gpu.cu in tether_bench_msg_gpu). One opt-in model, "program", checks on CPUs what the GPU models
 * rely on: msg_program.h's list of operations for a batch, run from the host in chunks of 64 as the GPU models run
 * it (a send: tether_isend, freed with its chunk; a receive: tether_irecv + tether_msg_wait), exchanges the host
 * model's messages without deadlock and passes msg_bench's data check (ctest bench_msg_program). */
#include "backend_tether.h"
#include "msg_program.h"
#include "tether/msg.h"

enum { CHUNK = 64 };
static char ack[MP_ACK_BYTES];

/* As the GPU models: a chunk's sends are freed after the NEXT chunk's operations are issued (a chunk may end in
 * the middle of a bibw window, whose rendezvous sends need receives the peer posts in its next chunk). */
static void program_batch(const mb_batch_t* b) {
  tether_t w = mbt_world();
  tether_request_t sends[2][CHUNK];
  size_t ns[2] = {0, 0};
  const size_t n = mp_count(b);
  int slot = 0;
  for (size_t i0 = 0; i0 < n; i0 += CHUNK, slot ^= 1) {
    for (size_t i = i0; i < n && i < i0 + CHUNK; ++i) {
      const mp_op_t op = mp_op(b, i);
      const size_t bytes = op.ack ? MP_ACK_BYTES : b->size;
      const int tag = op.ack ? MP_TAG_ACK : MP_TAG_DATA;
      if (op.send) {
        mbt_ok(tether_isend(w, op.ack ? ack : b->sbuf, bytes, b->peer, tag, &sends[slot][ns[slot]++]),
               "tether_isend");
      } else {
        tether_request_t r = TETHER_REQUEST_NULL;
        mbt_ok(tether_irecv(w, op.ack ? ack : b->rbuf, bytes, b->peer, tag, &r), "tether_irecv");
        mbt_ok(tether_msg_wait(w, &r, NULL), "tether_msg_wait");
      }
    }
    mbt_ok(tether_msg_waitall(w, ns[slot ^ 1], sends[slot ^ 1], NULL), "tether_msg_waitall");
    ns[slot ^ 1] = 0;
  }
  mbt_ok(tether_msg_waitall(w, ns[slot ^ 1], sends[slot ^ 1], NULL), "tether_msg_waitall");
}

static const mb_model_t models[] = {
    {"program", "check: msg_program.h's op list from the host (isend; irecv + wait), chunks of 64", 0, 1,
     program_batch},
};

const mb_model_t* mbt_gpu_models(size_t* n) {
  *n = 1;
  return models;
}
