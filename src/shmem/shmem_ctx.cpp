// OpenSHMEM 1.5 communication contexts (include/shmem_ctx.h, docs/shmem/contexts.md).
//
// A context is its team plus its options. Every context of a PE drives the one default tether instance (tether calls
// are thread-safe), so a context needs no communication resources of its own; quiet and fence act on the instance.
// Created contexts come from a process-wide pool and are never freed, only recycled: a handle ever returned stays
// readable, so an operation on a destroyed context is reported (it aborts) instead of reading freed memory — unless a
// later shmem_ctx_create got the same object back.
#include <shmem.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "shmem_internal.h"

struct tether_shmem_ctx_s {
  shmem_team_t team;       // PE numbers of this context's operations are relative to this team
  long options;            // SHMEM_CTX_* bits, recorded only
  std::atomic<bool> live;  // created and not destroyed (always true for SHMEM_CTX_DEFAULT)
};

struct tether_shmem_ctx_s tether_shmem_ctx_default_ = {SHMEM_TEAM_WORLD, 0, {true}};

namespace tether_shmem {
namespace {

constexpr long kKnownOptions = SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE;

// Every context object ever created (owned here until the process ends) and those free for reuse.
struct Pool {
  std::mutex mutex;
  std::vector<std::unique_ptr<tether_shmem_ctx_s>> all;
  std::vector<tether_shmem_ctx_s*> free;
};
Pool& pool() {
  static Pool p;
  return p;
}

// Shared by shmem_ctx_create and shmem_team_create_ctx: 0 and *ctx set, or non-zero and *ctx = SHMEM_CTX_INVALID.
int createCtx(shmem_team_t team, long options, shmem_ctx_t* ctx, const char* call) {
  shmemWorld(call);
  if (ctx == nullptr) return 1;
  *ctx = SHMEM_CTX_INVALID;
  if ((options & ~kKnownOptions) != 0 || !shmemTeamValid(team)) return 1;
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  tether_shmem_ctx_s* c = nullptr;
  if (!p.free.empty()) {
    c = p.free.back();
    p.free.pop_back();
  } else {
    p.all.push_back(std::make_unique<tether_shmem_ctx_s>());
    c = p.all.back().get();
  }
  c->team = team;
  c->options = options;
  c->live.store(true, std::memory_order_release);
  *ctx = c;
  return 0;
}

// The checks every context operation starts with (see shmemCtxTarget).
tether_t checkedWorld(shmem_ctx_t ctx, const char* call) {
  tether_t w = shmemWorld(call);
  if (ctx == SHMEM_CTX_INVALID) shmemAbortMsg(call, "the context is SHMEM_CTX_INVALID");
  if (!ctx->live.load(std::memory_order_acquire)) shmemAbortMsg(call, "the context was destroyed");
  return w;
}

}  // namespace

tether_t shmemCtxWorld(shmem_ctx_t ctx, const char* call) { return checkedWorld(ctx, call); }

ShmemTarget shmemCtxTarget(shmem_ctx_t ctx, int pe, const char* call) {
  if (ctx == SHMEM_CTX_DEFAULT) return {shmemWorld(call), pe};  // always live while initialised; world team
  tether_t w = checkedWorld(ctx, call);
  if (ctx->team == SHMEM_TEAM_WORLD) return {w, pe};
  if (!shmemTeamValid(ctx->team)) shmemAbortMsg(call, "the context's team was destroyed");
  const int worldPe = shmemTeamWorldPe(ctx->team, pe);
  if (worldPe < 0) {
    char msg[128];
    std::snprintf(msg, sizeof msg, "PE %d is outside the context's team (PEs 0..%d)", pe,
                  shmem_team_n_pes(ctx->team) - 1);
    shmemAbortMsg(call, msg);
  }
  return {w, worldPe};
}

void shmemCtxFinalize() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.free.clear();
  for (auto& c : p.all) {
    c->live.store(false, std::memory_order_release);
    p.free.push_back(c.get());
  }
}

}  // namespace tether_shmem

using namespace tether_shmem;

extern "C" {

int shmem_ctx_create(long options, shmem_ctx_t* ctx) {
  return createCtx(SHMEM_TEAM_WORLD, options, ctx, "shmem_ctx_create");
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx) {
  return createCtx(team, options, ctx, "shmem_team_create_ctx");
}

void shmem_ctx_destroy(shmem_ctx_t ctx) {
  const char* call = "shmem_ctx_destroy";
  if (ctx == SHMEM_CTX_INVALID) return;
  if (ctx == SHMEM_CTX_DEFAULT) shmemAbortMsg(call, "SHMEM_CTX_DEFAULT cannot be destroyed");
  // The implicit quiet of shmem_ctx_destroy (after the same checks as any context operation).
  shmemCheck(tether_quiet(checkedWorld(ctx, call)), call);
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  // Two threads destroying the same context: the loser sees it dead here and aborts like any use after destroy.
  if (!ctx->live.exchange(false, std::memory_order_acq_rel)) shmemAbortMsg(call, "the context was destroyed");
  p.free.push_back(ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team) {
  if (team == nullptr) return 1;
  if (ctx == SHMEM_CTX_INVALID || !ctx->live.load(std::memory_order_acquire)) {
    *team = SHMEM_TEAM_INVALID;
    return 1;
  }
  *team = ctx->team;
  return 0;
}

}  // extern "C"
