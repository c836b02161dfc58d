/* tether two-sided messaging (issue #20), the CPU-synchronous, stream and kernel models: tagged send/receive between PEs, in the shape of
 * MPI's point-to-point calls and libmp's mp_isend/mp_irecv/mp_wait. Docs: docs/msg.md.
 *
 * Contracts:
 *  - tether_msg_init is collective (every PE of the world, once); it allocates the message rings in the symmetric
 *    heap (HOST segment). Every other call needs it first (TETHER_ERR_INVALID_ARG otherwise). tether_msg_finalize
 *    is collective too; tether_finalize releases the messaging state as well.
 *  - Buffers may be anywhere: host memory (pageable or pinned, symmetric or not) or GPU memory. A send or receive
 *    posted from the host (tether_send/recv, tether_isend/irecv, tether_msg_post) with a GPU buffer first waits for
 *    the work already queued on the legacy default stream (so a buffer filled or cleared there is ready); work on
 *    your own streams must be synchronised first (or start the send on the stream). tether moves GPU bytes on
 *    streams that do not wait for the legacy default stream, so kernels and stream waits on any stream may wait for
 *    messages. A send buffer must not be changed, and a receive buffer not read, until the request completes.
 *  - Matching is MPI's: a receive matches the earliest arrived message whose source and tag fit (TETHER_ANY_PE,
 *    TETHER_ANY_TAG match any); messages from one source to one destination are matched in the order they were sent,
 *    so two messages from one PE with fitting tags never overtake each other. Tags are 0 .. TETHER_TAG_MAX.
 *  - Protocols: a message of at most eager_bytes travels in one ring slot (one put with signal) and its send completes
 *    at once; a longer one sends a request-to-send and moves when the receiver has matched it (rendezvous), in
 *    fragments through the ring, straight into the posted buffer. A message that arrives before its receive is kept
 *    (eager: its bytes in the unexpected pool, or beside its header when at most 64 bytes; rendezvous: only its
 *    header).
 *  - Progress happens inside tether's completion calls (test, wait, waitall, waitany, the blocking send and recv):
 *    a rendezvous send moves while either side is in such a call, as in MPI (and, while stream-ordered requests are
 *    pending, in a progress thread: see the stream model below). Posting is cheap: tether_isend writes what it can
 *    at once (an eager message, or the rendezvous request, while the ring to pe has room); tether_irecv only posts
 *    (what already arrived is matched by the next completion call, with MPI's matching order).
 *  - A receive buffer shorter than the message: the first `bytes` bytes arrive and the receive completes with
 *    TETHER_ERR_TRUNCATED (status.bytes = the bytes delivered); the send completes normally.
 *  - Waits are bounded by TETHER_TIMEOUT (TETHER_ERR_TIMEOUT naming the request). A blocking send or recv that fails
 *    withdraws its message or receive (the buffer is not touched after the call returns; the peer's matching receive
 *    then fails with TETHER_ERR_TIMEOUT); a non-blocking request stays pending after a failed tether_msg_wait.
 *  - Thread safety: calls may be made from several threads of a PE (serialised inside).
 */
#ifndef TETHER_MSG_H
#define TETHER_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "tether/datatype.h"
#include "tether/tether.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define TETHER_ANY_PE (-1)
#define TETHER_ANY_TAG (-1)
#define TETHER_TAG_MAX 0x7fffffff

/* A pending operation, or a persistent request (tether_send_init / tether_recv_init, below). 0 (TETHER_REQUEST_NULL)
 * is no request: wait/test on it complete at once with an empty status; they set a completed request back to
 * TETHER_REQUEST_NULL (a persistent one stays, inactive). */
typedef uint64_t tether_request_t;
#define TETHER_REQUEST_NULL ((tether_request_t)0)

typedef struct tether_msg_status_s {
  int source;            /* the sending PE (receives); the destination PE (sends) */
  int tag;               /* the message's tag */
  size_t bytes;          /* bytes received (receives) or sent (sends) */
  tether_status_t error; /* TETHER_SUCCESS, or why this request failed (TETHER_ERR_TRUNCATED, ...) */
} tether_msg_status_t;

typedef struct tether_msg_attr_s {
  size_t eager_bytes;      /* largest message sent eagerly; 0 = default 8192 (TETHER_MSG_EAGER) */
  size_t slots;            /* ring slots from each PE to each PE; 0 = default 16 (TETHER_MSG_SLOTS), at least 2 */
  size_t unexpected_bytes; /* pool for eager messages that arrive before their receive; 0 = default 4 MiB
                              (TETHER_MSG_UNEXPECTED). Beyond it they are kept in private host memory. */
} tether_msg_attr_t;

/* Collective. attr may be NULL (defaults). Every PE must pass the same values (TETHER_ERR_MISMATCH otherwise). */
tether_status_t tether_msg_init(tether_t world, const tether_msg_attr_t* attr);
/* Collective. Requests still pending are dropped (TETHER_ERR_INVALID_ARG reports how many, after the release). */
tether_status_t tether_msg_finalize(tether_t world);

/* Blocking forms: send returns when buf may be reused; recv when buf holds the message. status may be NULL. */
tether_status_t tether_send(tether_t world, const void* buf, size_t bytes, int pe, int tag);
tether_status_t tether_recv(tether_t world, void* buf, size_t bytes, int pe, int tag, tether_msg_status_t* status);

/* Non-blocking forms: *req names the operation until wait/test report it complete. irecv's pe and tag may be the
 * wildcards. */
tether_status_t tether_isend(tether_t world, const void* buf, size_t bytes, int pe, int tag, tether_request_t* req);
tether_status_t tether_irecv(tether_t world, void* buf, size_t bytes, int pe, int tag, tether_request_t* req);

/* Completion. wait: blocks until *req completes, then sets *req = TETHER_REQUEST_NULL and returns the request's own
 * result (also in status->error). test: *done = 1 and the same when complete, else *done = 0 (and *req untouched).
 * waitall: every request (statuses may be NULL, else n entries); returns the first failure, each entry its own.
 * waitany: one of the non-null requests (*index; SIZE_MAX and success when all are null). */
tether_status_t tether_msg_wait(tether_t world, tether_request_t* req, tether_msg_status_t* status);
tether_status_t tether_msg_test(tether_t world, tether_request_t* req, int* done, tether_msg_status_t* status);
tether_status_t tether_msg_waitall(tether_t world, size_t n, tether_request_t* reqs, tether_msg_status_t* statuses);
tether_status_t tether_msg_waitany(tether_t world, size_t n, tether_request_t* reqs, size_t* index,
                               tether_msg_status_t* status);

/* Typed messages (MPI's (buf, count, datatype)): count instances of a committed datatype (tether/datatype.h) at buf
 * travel as their packed bytes, in type-map order; the receiver's type may lay them out differently (only the byte
 * count matters for matching and truncation, as MPI's type signatures). A typed send packs when it is posted (buf may
 * be reused when the call returns); a typed receive is unpacked when it completes -- before wait/test/waitall/waitany
 * report it, and before a stream (tether_msg_wait_on_stream / waitall_on_stream) or a kernel (tether_msg_wait_desc)
 * waiting for it goes on -- also a truncated one: the bytes that arrived, and nothing past them. status.bytes counts
 * packed bytes. Host buffers are packed by the host packer; GPU buffers by the GPU engine through GPU staging memory of
 * tether's, a send's on the legacy default stream (synchronously: after that stream's earlier work), a receive's on
 * a stream of tether's own (so a kernel that waits for a typed receive into GPU memory must leave the GPU room for one
 * more kernel); the engine's metadata of each type used with GPU buffers is kept until tether_msg_finalize. The
 * caller may free its type handle at once. Untyped and typed calls match each other. Stream model:
 * tether_isend_typed_on_stream below; kernel model: tether_send_prepare_typed below; receives are posted from the
 * host and waited for in any model. Persistent: tether_send_init_typed / tether_recv_init_typed below. */
tether_status_t tether_send_typed(tether_t world, const void* buf, int64_t count, tether_type_t type, int pe, int tag);
tether_status_t tether_recv_typed(tether_t world, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                  tether_msg_status_t* status);
tether_status_t tether_isend_typed(tether_t world, const void* buf, int64_t count, tether_type_t type, int pe,
                                   int tag, tether_request_t* req);
tether_status_t tether_irecv_typed(tether_t world, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                   tether_request_t* req);

/* Stream model (libmp's mp_isend_on_stream / mp_wait_on_stream). stream: a cudaStream_t (NULL = the legacy default
 * stream); without a GPU, tether's CPU stream emulation.
 *  isend_on_stream: the send starts when the stream reaches this point (after the stream's earlier work, e.g. the
 *    kernel that filled buf); *req names it as for tether_isend. Sends from one PE to one PE match in the order they
 *    start. Receives are posted from the host (tether_irecv).
 *  msg_wait_on_stream: the stream's later work waits until req (a send or a receive) completes; req stays pending on
 *    the host, which still frees it with tether_msg_wait/test (at any time; it does not wait for the stream).
 *  Up to 4096 stream-ordered requests per PE may be pending (TETHER_ERR_NO_MEMORY beyond). While any is, a progress
 *  thread of the PE moves messages, so the host thread may be busy elsewhere. A stream wait (wait_on_stream,
 *  waitall_on_stream, persistent requests included) is bounded by TETHER_TIMEOUT from when the stream reaches it, as
 *  the stream's kernel waits are (tether.h): a request that has not completed by then fails the stream -- on a GPU
 *  the waiting kernel prints the word it waited for and traps (a CUDA error on the stream, and the context is
 *  unusable after it, as after any trap); with the CPU stream emulation the stream's sticky error is
 *  TETHER_ERR_TIMEOUT. The request itself stays pending on the host.
 *  CUDA graphs: a one-time request's stream calls (isend_on_stream, isend_typed_on_stream, post_on_stream /
 *  post_all_on_stream, and wait_on_stream / waitall_on_stream of ordinary requests) on a stream being captured
 *  return TETHER_ERR_UNSUPPORTED: every replay would repeat them after the request is gone. Persistent requests
 *  (tether_send_init below) replay: their stream calls capture no round number. */
tether_status_t tether_isend_on_stream(tether_t world, const void* buf, size_t bytes, int pe, int tag, void* stream,
                                       tether_request_t* req);
/*  isend_typed_on_stream: a typed send (above) packed when the stream reaches this point (after the stream's earlier
 *    work, e.g. the kernel that filled buf; buf may be written again by the stream's later work), then started as
 *    tether_isend_on_stream's. GPU buffers: packed by the GPU engine on the stream into a GPU stage of tether's; host
 *    buffers: by the host packer in a stream host call (cudaLaunchHostFunc). A GPU buffer needs a CUDA stream. */
tether_status_t tether_isend_typed_on_stream(tether_t world, const void* buf, int64_t count, tether_type_t type, int pe,
                                             int tag, void* stream, tether_request_t* req);
tether_status_t tether_msg_wait_on_stream(tether_t world, tether_request_t req, void* stream);
tether_status_t tether_msg_waitall_on_stream(tether_t world, size_t n, const tether_request_t* reqs, void* stream);

/* Prepared sends (libmp's mp_send_prepare + mp_isend_post_on_stream / mp_isend_post_all_on_stream): the host does
 * the send's bookkeeping ahead, and the start is one cheap step -- from the host, a stream, or a kernel.
 *  send_prepare: *req names a send that has not started; it starts exactly once, by ONE of tether_msg_post (now),
 *    tether_msg_post_on_stream / post_all_on_stream (when the stream reaches that point) or a kernel's
 *    tether::device::msg_send on its descriptor (tether_msg_send_desc). Sends from one PE to one PE match in the
 *    order they START. Until then buf may still be written (by the host, a kernel, or stream work before the post).
 *  A prepared or posted request is completed and freed as any other (tether_msg_wait/test/...); waiting on a prepared
 *  send that nobody starts times out (TETHER_TIMEOUT). Posting a request twice, or one that is not a prepared send,
 *  is TETHER_ERR_INVALID_ARG. Prepared and stream-ordered requests share the 4096 words per PE (see above); while any
 *  is pending, the progress thread runs. */
tether_status_t tether_send_prepare(tether_t world, const void* buf, size_t bytes, int pe, int tag,
                                    tether_request_t* req);
/*  send_prepare_typed: a typed prepared send (typed messages above): packed when it STARTS -- by tether_msg_post at
 *    the call (GPU buffers: after the legacy default stream's earlier work), by post_on_stream / post_all_on_stream in
 *    stream order (as tether_isend_typed_on_stream), or, started by a kernel's msg_send, by the PE's progress thread
 *    when it sees the start (GPU buffers: the GPU engine on a stream of tether's, so the GPU needs room for that
 *    kernel while the starting kernel runs on). Until it starts, buf may still be written. */
tether_status_t tether_send_prepare_typed(tether_t world, const void* buf, int64_t count, tether_type_t type, int pe,
                                          int tag, tether_request_t* req);
tether_status_t tether_msg_post(tether_t world, tether_request_t req);
tether_status_t tether_msg_post_on_stream(tether_t world, tether_request_t req, void* stream);
tether_status_t tether_msg_post_all_on_stream(tether_t world, size_t n, const tether_request_t* reqs, void* stream);

/* Kernel model (libmp's mp::device send/wait descriptors): plain structs that kernels take by value and use with
 * tether::device::msg_send / msg_wait / msg_test (tether/msg_device.cuh), with the device handle of the same world
 * (tether_device_handle for kernels, tether_device_handle_cpu for CPU threads). word is a symmetric address in this
 * PE's HOST segment; the device functions translate it through the handle.
 *  msg_send_desc: req must be a prepared send not yet started; a kernel's msg_send(desc) starts it (its group's
 *    earlier stores to buf are visible to the send: release at system scope).
 *  msg_wait_desc: req is any pending request of this PE (a receive, or a send); a kernel's msg_wait(desc) returns
 *    when it is complete (acquire: a receive's bytes are visible to the group after it), bounded by TETHER_TIMEOUT
 *    as every device API wait (the handle's timeout_ns: on expiry it prints the word and traps; aborts on a CPU
 *    thread). The host still frees req with tether_msg_wait/test; a descriptor must not be used after that.
 *  Progress: the PE's progress thread moves the messages while such requests are pending; the GPU work that a
 *  kernel waits for may run on any stream, the legacy default stream included. */
typedef struct tether_msg_send_desc_s {
  uint64_t* word;  /* trigger word (symmetric address, this PE's HOST segment) */
  uint64_t value;  /* stored to start the send */
} tether_msg_send_desc_t;
typedef struct tether_msg_wait_desc_s {
  const uint64_t* word; /* completion word (symmetric address, this PE's HOST segment) */
  uint64_t value;       /* the request is complete once *word >= value */
} tether_msg_wait_desc_t;
tether_status_t tether_msg_send_desc(tether_t world, tether_request_t req, tether_msg_send_desc_t* desc);
tether_status_t tether_msg_wait_desc(tether_t world, tether_request_t req, tether_msg_wait_desc_t* desc);

/* Persistent requests (MPI's MPI_Send_init / MPI_Recv_init / MPI_Start / MPI_Startall / MPI_Request_free), in the three
 * models: the bookkeeping is done once, and each use of the request -- a ROUND -- starts with one cheap step from the
 * host, a stream or a kernel. Rounds are numbered by the starts: round k is the k-th start of the request (counted
 * from its init, or from the tether_msg_persist_desc call for a kernel's round numbers).
 *  send_init / recv_init: *req names an INACTIVE persistent request with fixed arguments (checked as tether_isend's /
 *    tether_irecv's; recv_init's pe and tag may be TETHER_ANY_PE / TETHER_ANY_TAG, matched afresh each round). Each
 *    holds one of the 4096 stream-area words of the PE (shared with the stream model) until it is freed.
 *  A round of a send is a send made when the round starts (matched, among the sends from this PE to pe, in the order
 *    sends are made, as tether_isend's; behind a prepared send to pe that has not started); a round of a receive is a
 *    receive posted when the round starts (it matches what has arrived by then first, as tether_irecv's). So buf
 *    belongs to the request from a round's start until its completion, and to the program between rounds.
 *  When a start takes effect: a host start at the call (startall: in an arbitrary order); a start from a stream or a
 *    kernel when the PE's progress thread sees it -- the rounds of ONE request in order, but the pending starts of
 *    DIFFERENT requests in no defined order. So two requests that could match the same message (sends from this PE
 *    to one PE with one tag; receives whose source and tag both fit one message) must not have stream or kernel
 *    starts pending at the same time: give them different tags (e.g. by round parity, as the applications in
 *    examples/gpu do), or start one only after the other's round has completed.
 *  Rounds of one request run one at a time, in order: a start that comes while a round is in flight (possible from a
 *    stream or a kernel) begins its round when that one completes. A request's rounds are started by one agent at a
 *    time (the host, one stream, or one kernel): the start word is not atomic against concurrent starters.
 *  msg_start / msg_startall: start one round of each request now (MPI_Start / MPI_Startall: a receive is posted, a
 *    send begins; startall in an arbitrary order). Each must be INACTIVE: starting an active request (a round started
 *    -- by any agent -- whose completion tether_msg_wait/test has not reported) is TETHER_ERR_INVALID_ARG naming it,
 *    as are a request listed twice and anything that is not a persistent request of this world. GPU buffers: as for
 *    tether_isend (the legacy default stream's earlier work lands first).
 *  msg_startall_on_stream: starts one round of each request when the stream reaches this point (after the stream's
 *    earlier work: the kernel that packed a send buffer, or the last reader of a receive buffer); the receive is
 *    posted then (not at the call), so matching sees it as a receive posted at that moment; the requests start in an
 *    arbitrary order. The stream adds 1 to each request's start word and captures no round number: a CUDA graph that
 *    holds this call starts one more round at each replay. No activity check at the call (the stream orders the
 *    rounds); a request listed twice or not persistent is TETHER_ERR_INVALID_ARG, nothing enqueued.
 *  Completion: tether_msg_wait / test / waitall / waitany on a persistent request complete EVERY round started (by
 *    any agent) when they first look at it, report them (status: the last round's source, tag and bytes; result and
 *    status.error: the first failure among them, e.g. TETHER_ERR_TRUNCATED) and leave the request INACTIVE and
 *    reusable: *req is NOT set to TETHER_REQUEST_NULL. On an inactive request they return at once with an empty
 *    status (source TETHER_ANY_PE, tag TETHER_ANY_TAG, 0 bytes; test: *done = 1); waitany skips inactive ones like
 *    null ones (*index = SIZE_MAX when all are). Rounds started from a stream or a kernel need no host wait each:
 *    wait once before freeing (or before a host start), e.g. after synchronising the stream.
 *  msg_wait_on_stream / msg_waitall_on_stream on a persistent request: the stream's later work waits until every
 *    round started by the time the stream gets there is complete (the done word reaches the start word: no value
 *    captured, so a graph replay waits for its own round). The host's view is unchanged (no report: the request
 *    stays active for tether_msg_wait/test until they report its rounds).
 *  msg_request_free: frees an INACTIVE persistent request and sets *req = TETHER_REQUEST_NULL (TETHER_REQUEST_NULL:
 *    nothing to do). An active request, or one that is not persistent (ordinary requests are freed by wait/test), is
 *    TETHER_ERR_INVALID_ARG. No stream work or kernel may start or wait on it afterwards (its words are reused).
 *  Other calls on a persistent request (tether_msg_post*, send_desc, wait_desc) are TETHER_ERR_INVALID_ARG.
 *  tether_msg_finalize drops inactive persistent requests quietly and reports active ones as pending.
 *  Progress: while a persistent request has been started on a stream, waited on by a stream, or described for a
 *  kernel, the PE's progress thread polls its start word and moves its messages (until it is freed). */
tether_status_t tether_send_init(tether_t world, const void* buf, size_t bytes, int pe, int tag, tether_request_t* req);
tether_status_t tether_recv_init(tether_t world, void* buf, size_t bytes, int pe, int tag, tether_request_t* req);
/*  send_init_typed / recv_init_typed: typed persistent requests (MPI_Send_init / MPI_Recv_init with a datatype):
 *    every round is a typed send / receive (typed messages above) of count instances of type at buf; everything else
 *    is as for send_init / recv_init. The caller may free its type handle at once. A send packs buf when its round
 *    BEGINS: a host start (msg_start / startall) at the call (GPU buffers: after the legacy default stream's earlier
 *    work; done on return); a start from a stream or a kernel when the PE's progress thread begins the round -- after
 *    the stream's earlier work or the kernel's stores before its msg_start, and only after the request's previous
 *    round has completed (GPU buffers: the GPU engine on a stream of tether's, so a kernel that starts it must leave
 *    the GPU room for that kernel). A receive unpacks into buf when each round completes, before its done word moves
 *    (so a stream's msg_wait_on_stream and a kernel's msg_wait see the user's layout). The packed bytes live in a
 *    buffer of the request's own (GPU buffers: GPU memory of tether's) until tether_msg_request_free. */
tether_status_t tether_send_init_typed(tether_t world, const void* buf, int64_t count, tether_type_t type, int pe,
                                       int tag, tether_request_t* req);
tether_status_t tether_recv_init_typed(tether_t world, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                       tether_request_t* req);
tether_status_t tether_msg_start(tether_t world, tether_request_t req);
tether_status_t tether_msg_startall(tether_t world, size_t n, const tether_request_t* reqs);
tether_status_t tether_msg_startall_on_stream(tether_t world, size_t n, const tether_request_t* reqs, void* stream);
tether_status_t tether_msg_request_free(tether_t world, tether_request_t* req);

/* Kernel model of persistent requests (tether::device::msg_start / msg_wait / msg_test with a round number,
 * tether/msg_device.cuh): ONE descriptor per request, valid for every round until the request is freed.
 *  persist_desc: a persistent request of this PE (send or receive). Round k (k = 1, 2, ...) of the descriptor is the
 *    k-th start of the request after this call: a kernel's msg_start(h, d, k) stores base + k into the start word
 *    (the progress thread then starts the round: posts the receive, or begins the send), and msg_wait(h, d, k)
 *    returns once round k is complete (done word >= base + k). So a kernel can start round k of a send and of a
 *    receive and wait for both with no host call in between, round after round. Take it when no start of the
 *    request is still queued on a stream. The host completes the rounds for its own view with tether_msg_wait/test
 *    (once, at the end, is enough) before freeing the request. */
typedef struct tether_msg_persist_desc_s {
  uint64_t* start;      /* start word (symmetric address, this PE's HOST segment): round k starts at base + k */
  const uint64_t* done; /* done word (same segment): round k is complete once *done >= base + k */
  uint64_t base;
} tether_msg_persist_desc_t;
tether_status_t tether_msg_persist_desc(tether_t world, tether_request_t req, tether_msg_persist_desc_t* desc);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* TETHER_MSG_H */
