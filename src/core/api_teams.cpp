// The C API of teams and team collectives (#21; core/teams.h, core/collectives.h): team handles as checked ids, the
// split and query calls, and the data collectives in their host and stream forms.
#include <cstdint>
#include <memory>
#include <string>

#include "base/enum_arg.h"
#include "core/api_support.h"
#include "core/collectives.h"
#include "core/teams.h"
#include "core/world.h"

using tether::World;
using namespace tether::capi;  // report, guarded, contained, liveWorld, ... (api_support.h)

namespace {

using tether::TeamRef;

// A tether_team_t is an id like a tether_t, never an address: bit 0 set, then the World's slot in LiveWorlds, the
// team's slot in that World, the low kGenBits bits of the World's generation and the team's serial (core/teams.h).
// So a handle of a finalized World or of a destroyed team, and garbage, are refused, never dereferenced -- except
// for an alias no program meets in practice: a handle kept across 2^20 re-initialisations of the same instance slot,
// or across 2^27 later teams of its World.
struct TeamId {
  static constexpr unsigned kWorldBits = LiveWorlds::kSlotBits, kSlotBits = 6, kGenBits = 20;
  static_assert(1 + kWorldBits + kSlotBits + kGenBits + tether::kTeamSerialBits == 64, "a team id fills 64 bits");
  static_assert(sizeof(void*) == sizeof(uint64_t), "team ids need 64-bit handles");
  static_assert(tether::kTeamSlots == 1 << kSlotBits, "team slots fill their bits");
  size_t world = 0;  // LiveWorlds slot
  uint64_t gen = 0;  // its generation's low kGenBits bits
  TeamRef ref;

  tether_team_t encode() const {
    const uint64_t v = 1u | uint64_t{world} << 1 | uint64_t(ref.slot) << (1 + kWorldBits) |
                       (gen & ((uint64_t{1} << kGenBits) - 1)) << (1 + kWorldBits + kSlotBits) |
                       ref.serial << (1 + kWorldBits + kSlotBits + kGenBits);
    return reinterpret_cast<tether_team_t>(static_cast<uintptr_t>(v));
  }
  static bool decode(tether_team_t t, TeamId* id) {
    const uint64_t v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t));
    id->world = static_cast<size_t>(v >> 1) & (LiveWorlds::kSlots - 1);
    id->ref.slot = static_cast<int>(v >> (1 + kWorldBits)) & (tether::kTeamSlots - 1);
    id->gen = (v >> (1 + kWorldBits + kSlotBits)) & ((uint64_t{1} << kGenBits) - 1);
    id->ref.serial = v >> (1 + kWorldBits + kSlotBits + kGenBits);
    return (v & 1u) && id->ref.serial != 0;
  }
};

// The World behind a team handle (*id decoded), or a reported TETHER_ERR_INVALID_ARG naming call and what. Whether
// the team itself is live is the Teams room's check.
tether_status_t teamWorld(tether_team_t t, const char* call, const char* what, World** out, TeamId* id) {
  *out = nullptr;
  if (!t) return report(tether::Status(TETHER_ERR_INVALID_ARG, tether::strprintf("%s: %s is TETHER_TEAM_INVALID",
                                                                                  call, what)));
  if (!TeamId::decode(t, id))
    return report(tether::Status(TETHER_ERR_INVALID_ARG, tether::strprintf(
        "%s: %s %p is not a team handle (not a value a tether_team_* call returned)", call, what,
        static_cast<void*>(t))));
  *out = liveWorlds().findLow(id->world, id->gen, TeamId::kGenBits);
  if (*out) return TETHER_SUCCESS;
  return report(tether::Status(TETHER_ERR_INVALID_ARG, tether::strprintf(
      "%s: %s %p belongs to an instance that was finalized (or is not a team handle)", call, what,
      static_cast<void*>(t))));
}

// Runs f(World&, TeamId) -> Status on a team handle, exceptions contained.
template <typename F>
tether_status_t guardedTeam(tether_team_t t, const char* call, F&& f) {
  World* x = nullptr;
  TeamId id;
  const tether_status_t live = teamWorld(t, call, "team", &x, &id);
  if (live != TETHER_SUCCESS) return live;
  return contained(call, [&] { return f(*x, id); });
}

// Queries: q(const Team&) on a live team; -1 otherwise (TETHER_TEAM_INVALID silently, like a NULL world).
template <typename Q>
int teamQuery(tether_team_t t, const char* call, Q q) {
  World* x = nullptr;
  TeamId id;
  std::shared_ptr<tether::Team> team;
  if (!t || teamWorld(t, call, "team", &x, &id) != TETHER_SUCCESS) return -1;
  const tether::Status s = x->teams().find(call, "team", id.ref, &team);
  return s.isOk() ? q(*team) : (report(s), -1);
}

// The predefined team of w at ref (world or shared).
template <typename R>
tether_team_t predefinedTeam(tether_t w, const char* call, R ref) {
  World* x = nullptr;
  if (liveWorld(w, call, &x) != TETHER_SUCCESS) return TETHER_TEAM_INVALID;
  TeamId id;
  LiveWorlds::decode(w, &id.world, &id.gen);
  id.ref = ref(x->teams());
  return id.encode();
}

// config's flags, and whether it is valid (NULL: all zero).
bool teamConfig(const tether_team_config_t* config, uint32_t* flags) {
  *flags = config ? config->flags : 0;
  return *flags == 0;
}

}  // namespace

extern "C" {

tether_team_t tether_team_world(tether_t w) {
  return predefinedTeam(w, "tether_team_world", [](tether::Teams& t) { return t.world(); });
}
tether_team_t tether_team_shared(tether_t w) {
  return predefinedTeam(w, "tether_team_shared", [](tether::Teams& t) { return t.shared(); });
}

tether_status_t tether_team_split_strided(tether_team_t parent, int start, int stride, int size,
                                          const tether_team_config_t* config, tether_team_t* new_team) {
  const char* call = "tether_team_split_strided";
  if (!new_team) return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": new_team is NULL"));
  *new_team = TETHER_TEAM_INVALID;
  return guardedTeam(parent, call, [&](World& x, TeamId id) {
    uint32_t flags = 0;
    const bool ok = teamConfig(config, &flags);
    TETHER_TRY(x.teams().splitStrided(call, id.ref, start, stride, size, flags, ok, &id.ref));
    if (id.ref.slot >= 0) *new_team = id.encode();
    return tether::Status::ok();
  });
}

tether_status_t tether_team_split_2d(tether_team_t parent, int xrange, const tether_team_config_t* xaxis_config,
                                     tether_team_t* xaxis_team, const tether_team_config_t* yaxis_config,
                                     tether_team_t* yaxis_team) {
  const char* call = "tether_team_split_2d";
  if (!xaxis_team || !yaxis_team)
    return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": xaxis_team or yaxis_team is NULL"));
  *xaxis_team = *yaxis_team = TETHER_TEAM_INVALID;
  return guardedTeam(parent, call, [&](World& x, TeamId id) {
    uint32_t xflags = 0, yflags = 0;
    const bool ok = teamConfig(xaxis_config, &xflags) & teamConfig(yaxis_config, &yflags);
    TeamId xid = id, yid = id;
    TETHER_TRY(x.teams().split2d(call, id.ref, xrange, xflags, yflags, ok, &xid.ref, &yid.ref));
    *xaxis_team = xid.encode();
    *yaxis_team = yid.encode();
    return tether::Status::ok();
  });
}

tether_status_t tether_team_destroy(tether_team_t team) {
  if (!team) return TETHER_SUCCESS;
  return guardedTeam(team, "tether_team_destroy", [](World& x, TeamId id) {
    return x.teams().destroy(
        "tether_team_destroy", id.ref, [&x](tether::Team& t) { return x.colls().settle("tether_team_destroy", t); },
        [&x](int slot) { return x.colls().resetDeviceWords(slot); });
  });
}

int tether_team_my_pe(tether_team_t t) {
  return teamQuery(t, "tether_team_my_pe", [](const tether::Team& x) { return x.me; });
}
int tether_team_n_pes(tether_team_t t) {
  return teamQuery(t, "tether_team_n_pes", [](const tether::Team& x) { return static_cast<int>(x.pes.size()); });
}
int tether_team_index(tether_team_t t) {
  return teamQuery(t, "tether_team_index", [](const tether::Team& x) { return x.slot; });
}
int tether_team_world_pe(tether_team_t t, int pe) {
  return teamQuery(t, "tether_team_world_pe", [pe](const tether::Team& x) {
    return pe >= 0 && static_cast<size_t>(pe) < x.pes.size() ? x.pes[static_cast<size_t>(pe)] : -1;
  });
}
int tether_team_translate_pe(tether_team_t src_team, int src_pe, tether_team_t dest_team) {
  const char* call = "tether_team_translate_pe";
  const int world = tether_team_world_pe(src_team, src_pe);
  if (world < 0) return -1;
  TeamId a, b;
  TeamId::decode(src_team, &a);
  if (dest_team && TeamId::decode(dest_team, &b) && (a.world != b.world || a.gen != b.gen)) {
    report(tether::Status(TETHER_ERR_INVALID_ARG,
                          std::string(call) + ": src_team and dest_team belong to different instances"));
    return -1;
  }
  return teamQuery(dest_team, call, [world](const tether::Team& x) {
    for (size_t i = 0; i < x.pes.size(); ++i)
      if (x.pes[i] == world) return static_cast<int>(i);
    return -1;
  });
}

tether_status_t tether_team_sync(tether_team_t team) {
  return guardedTeam(team, "tether_team_sync",
                     [](World& x, TeamId id) { return x.teams().sync("tether_team_sync", id.ref, false); });
}
tether_status_t tether_team_barrier(tether_team_t team) {
  return guardedTeam(team, "tether_team_barrier",
                     [](World& x, TeamId id) { return x.teams().sync("tether_team_barrier", id.ref, true); });
}

}  // extern "C"

namespace {

// The data collectives (core/collectives.h): the enum arguments are checked here, before they are used as enums.
// stream: the _on_stream forms (onStream true), which check on this PE only.
tether_status_t teamColl(tether_team_t team, const char* call, tether::CollKind kind, void* dest, const void* src,
                         size_t count, const tether_dtype_t& type, const tether_red_op_t* op, int root,
                         bool onStream = false, void* stream = nullptr, bool eager = false) {
  // A bad enum fails on every member (agreed like any bad argument), not only here: the others would wait.
  tether::CollArgs a;
  a.invalid = tether::enumArg(call, "type", type);
  if (a.invalid.isOk() && op) a.invalid = tether::enumArg(call, "op", *op);
  if (a.invalid.isOk()) {
    a.type = type;
    if (op) a.op = *op;
  }
  a.kind = kind;
  a.dest = dest;
  a.src = src;
  a.count = count;
  a.root = root;
  a.eager = eager;
  if (onStream) {
    if (!a.invalid.isOk()) return report(a.invalid);
    return guardedTeam(team, call, [&](World& x, TeamId id) { return x.colls().enqueue(call, id.ref, a, false, stream); });
  }
  return guardedTeam(team, call, [&](World& x, TeamId id) { return x.colls().run(call, id.ref, a); });
}

}  // namespace

extern "C" {

tether_status_t tether_team_device_view(tether_team_t team, const tether_device_handle_t* handle,
                                        tether_device_team_t* view) {
  const char* call = "tether_team_device_view";
  if (!handle || !view)
    return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": handle or view is NULL"));
  return guardedTeam(team, call, [&](World& x, TeamId id) { return x.colls().deviceView(call, id.ref, *handle, view); });
}

tether_status_t tether_team_broadcast(tether_team_t team, void* dest, const void* src, size_t count,
                                      tether_dtype_t type, int root) {
  return teamColl(team, "tether_team_broadcast", tether::CollKind::Broadcast, dest, src, count, type, nullptr, root);
}
tether_status_t tether_team_broadcast_eager(tether_team_t team, void* dest, const void* src, size_t count,
                                            tether_dtype_t type, int root) {
  return teamColl(team, "tether_team_broadcast_eager", tether::CollKind::Broadcast, dest, src, count, type, nullptr,
                  root, false, nullptr, true);
}
tether_status_t tether_team_alltoall_eager(tether_team_t team, void* dest, const void* src, size_t count,
                                           tether_dtype_t type) {
  return teamColl(team, "tether_team_alltoall_eager", tether::CollKind::Alltoall, dest, src, count, type, nullptr, 0,
                  false, nullptr, true);
}
tether_status_t tether_team_reduce(tether_team_t team, void* dest, const void* src, size_t count, tether_dtype_t type,
                                   tether_red_op_t op, int root) {
  return teamColl(team, "tether_team_reduce", tether::CollKind::Reduce, dest, src, count, type, &op, root);
}
tether_status_t tether_team_allreduce(tether_team_t team, void* dest, const void* src, size_t count,
                                      tether_dtype_t type, tether_red_op_t op) {
  return teamColl(team, "tether_team_allreduce", tether::CollKind::Allreduce, dest, src, count, type, &op, 0);
}
tether_status_t tether_team_allgather(tether_team_t team, void* dest, const void* src, size_t count,
                                      tether_dtype_t type) {
  return teamColl(team, "tether_team_allgather", tether::CollKind::Allgather, dest, src, count, type, nullptr, 0);
}
tether_status_t tether_team_reduce_scatter(tether_team_t team, void* dest, const void* src, size_t count,
                                           tether_dtype_t type, tether_red_op_t op) {
  return teamColl(team, "tether_team_reduce_scatter", tether::CollKind::ReduceScatter, dest, src, count, type, &op,
                  0);
}
tether_status_t tether_team_alltoall(tether_team_t team, void* dest, const void* src, size_t count,
                                     tether_dtype_t type) {
  return teamColl(team, "tether_team_alltoall", tether::CollKind::Alltoall, dest, src, count, type, nullptr, 0);
}
tether_status_t tether_team_alltoallv(tether_team_t team, void* dest, const size_t* rcounts, const size_t* rdispls,
                                      const void* src, const size_t* scounts, const size_t* sdispls,
                                      tether_dtype_t type) {
  const char* call = "tether_team_alltoallv";
  tether::CollArgs a;
  a.invalid = tether::enumArg(call, "type", type);
  if (a.invalid.isOk()) a.type = type;
  a.kind = tether::CollKind::Alltoallv;
  a.dest = dest;
  a.src = src;
  a.rcounts = rcounts;
  a.rdispls = rdispls;
  a.scounts = scounts;
  a.sdispls = sdispls;
  return guardedTeam(team, call, [&](World& x, TeamId id) { return x.colls().run(call, id.ref, a); });
}

tether_status_t tether_team_sync_on_stream(tether_team_t team, void* stream) {
  const char* call = "tether_team_sync_on_stream";
  return guardedTeam(team, call, [&](World& x, TeamId id) {
    return x.colls().enqueue(call, id.ref, tether::CollArgs(), true, stream);
  });
}
tether_status_t tether_team_broadcast_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                tether_dtype_t type, int root, void* stream) {
  return teamColl(team, "tether_team_broadcast_on_stream", tether::CollKind::Broadcast, dest, src, count, type, nullptr,
                  root, true, stream);
}
tether_status_t tether_team_reduce_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                             tether_dtype_t type, tether_red_op_t op, int root, void* stream) {
  return teamColl(team, "tether_team_reduce_on_stream", tether::CollKind::Reduce, dest, src, count, type, &op, root,
                  true, stream);
}
tether_status_t tether_team_allreduce_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                tether_dtype_t type, tether_red_op_t op, void* stream) {
  return teamColl(team, "tether_team_allreduce_on_stream", tether::CollKind::Allreduce, dest, src, count, type, &op, 0,
                  true, stream);
}
tether_status_t tether_team_allgather_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                tether_dtype_t type, void* stream) {
  return teamColl(team, "tether_team_allgather_on_stream", tether::CollKind::Allgather, dest, src, count, type, nullptr,
                  0, true, stream);
}
tether_status_t tether_team_reduce_scatter_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                     tether_dtype_t type, tether_red_op_t op, void* stream) {
  return teamColl(team, "tether_team_reduce_scatter_on_stream", tether::CollKind::ReduceScatter, dest, src, count, type,
                  &op, 0, true, stream);
}
tether_status_t tether_team_alltoall_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                               tether_dtype_t type, void* stream) {
  return teamColl(team, "tether_team_alltoall_on_stream", tether::CollKind::Alltoall, dest, src, count, type, nullptr,
                  0, true, stream);
}

}  // extern "C"
