/* A batch of msg_bench (msg_bench.c, "Rows") as a flat list of operations, for the models that run a batch their own
 * way (tether's stream and kernel models, NCCL's stream model): op i of a batch is a send of the data (or the ack)
 * or a receive of it, in the order the host model's calls make them on this rank:
 *   latency  first rank: send, recv per round trip; second rank: recv, send                 (2k ops)
 *   bw       per window: first: send x W, recv(ack); second: recv x W, send(ack)             (k + k/W ops)
 *   bibw     per window: send x W, recv x W (the host model posts the receives first; both ranks' sends start
 *            before either waits, so the order in which a rank posts them does not change the traffic)  (2k ops)
 * A rank that executes its list in order, each receive complete before the next op, exchanges exactly the host
 * model's messages (same sizes, tags, buffers, matching order). Header-only (C and C++). */
#ifndef TETHER_BENCH_MSG_PROGRAM_H
#define TETHER_BENCH_MSG_PROGRAM_H

#include <stddef.h>

#include "msg_backend.h"

enum { MP_TAG_DATA = 1, MP_TAG_ACK = 2, MP_ACK_BYTES = 4 }; /* msg_bench.c's tags and ack size */

typedef struct mp_op_s {
  int send; /* 1: send, 0: receive */
  int ack;  /* 1: the 4-byte ack (tag MP_TAG_ACK, the model's own ack buffer), 0: data (sbuf/rbuf, size, TAG_DATA) */
} mp_op_t;

static inline size_t mp_count(const mb_batch_t* b) {
  return b->row == MB_BW ? b->k + b->k / b->window : 2 * b->k;
}

static inline mp_op_t mp_op(const mb_batch_t* b, size_t i) {
  mp_op_t op = {0, 0};
  if (b->row == MB_LAT) {
    op.send = (int)(i % 2 == 0) == b->first;
  } else if (b->row == MB_BW) {
    const size_t j = i % (b->window + 1);
    op.ack = j == b->window;
    op.send = op.ack ? !b->first : b->first;
  } else {
    op.send = i % (2 * b->window) < b->window;
  }
  return op;
}

#endif /* TETHER_BENCH_MSG_PROGRAM_H */
