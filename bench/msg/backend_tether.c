/* msg_bench backend: tether's two-sided messaging (include/tether/msg.h). tether_msg_init with the default
 * attributes; MSG_BENCH_EAGER=N (bytes) passes eager_bytes = N instead (TETHER_MSG_EAGER does the same through
 * tether's own configuration). The "host" model is the calls below; the GPU build adds the stream and kernel models
 * (backend_tether_gpu.cu; backend_tether_cpu.c has none). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_tether.h"
#include "msg_backend.h"
#include "tether/msg.h"
#include "tether/tether.h"

static tether_t world;
static char detail[160];

static void ok(tether_status_t s, const char* call) {
  if (s == TETHER_SUCCESS) return;
  fprintf(stderr, "msg_bench: rank %d: %s failed: %s\n", world ? tether_my_pe(world) : -1, call,
          tether_status_string(s));
  fflush(NULL);
  exit(1); /* tetherrun ends the other PEs when one exits non-zero */
}

void mb_init(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  ok(tether_init(&world), "tether_init");
  tether_msg_attr_t attr = {0, 0, 0};
  const char* e = getenv("MSG_BENCH_EAGER");
  if (e && *e) attr.eager_bytes = (size_t)strtoull(e, NULL, 10);
  ok(tether_msg_init(world, &attr), "tether_msg_init");
  int major = 0, minor = 0, patch = 0;
  tether_version(&major, &minor, &patch);
  snprintf(detail, sizeof detail, "tether %d.%d.%d, tether_msg_init(%s)", major, minor, patch,
           attr.eager_bytes ? "eager_bytes from MSG_BENCH_EAGER" : "default attributes");
  if (e && *e) snprintf(detail + strlen(detail), sizeof detail - strlen(detail), " = %s", e);
}

void mb_finalize(void) {
  ok(tether_msg_finalize(world), "tether_msg_finalize");
  ok(tether_finalize(world), "tether_finalize");
}

tether_t mbt_world(void) { return world; }
void mbt_ok(tether_status_t s, const char* call) { ok(s, call); }

int mb_rank(void) { return tether_my_pe(world); }
int mb_local_rank(void) { return tether_local_pe(world); }

const mb_model_t* mb_models(size_t* n) {
  static mb_model_t models[8] = {{"host", "tether_send/recv/isend/irecv/msg_waitall from the host", 0, 0, NULL}};
  static size_t count = 0;
  if (!count) {
    size_t more = 0;
    const mb_model_t* m = mbt_gpu_models(&more);
    for (size_t i = 0; i < more && i + 1 < sizeof models / sizeof models[0]; ++i) models[i + 1] = m[i];
    count = 1 + more;
  }
  *n = count;
  return models;
}

int mb_mem_ok(int mem_me, int mem_peer, const char** why) {
  (void)mem_me, (void)mem_peer, (void)why;
  return 1; /* tether's messaging takes any buffer */
}
int mb_size(void) { return tether_n_pes(world); }
const char* mb_name(void) { return "tether"; }
const char* mb_detail(void) { return detail; }

void mb_send(const void* buf, size_t bytes, int peer, int tag) {
  ok(tether_send(world, buf, bytes, peer, tag), "tether_send");
}

void mb_recv(void* buf, size_t bytes, int peer, int tag) {
  ok(tether_recv(world, buf, bytes, peer, tag, NULL), "tether_recv");
}

void* mb_reqs_alloc(size_t n) { return calloc(n, sizeof(tether_request_t)); }

void mb_isend(const void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i) {
  ok(tether_isend(world, buf, bytes, peer, tag, (tether_request_t*)reqs + i), "tether_isend");
}

void mb_irecv(void* buf, size_t bytes, int peer, int tag, void* reqs, size_t i) {
  ok(tether_irecv(world, buf, bytes, peer, tag, (tether_request_t*)reqs + i), "tether_irecv");
}

void mb_waitall(void* reqs, size_t n) { ok(tether_msg_waitall(world, n, reqs, NULL), "tether_msg_waitall"); }
void mb_barrier(void) { ok(tether_barrier_all(world), "tether_barrier_all"); }

void mb_abort(int code) {
  fflush(NULL);
  exit(code);
}
