// tether.Team: one team handle of this PE (tether_team_t), its queries, splits, syncs and collective destroy.
#pragma once

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/tuple.h>

#include <memory>
#include <string>
#include <tuple>

#include "ext_common.h"

namespace tether_py {

// One team handle of this PE (tether_team_t; docs/teams.md, docs/python.md "Teams"). Keeps the World state alive like
// Allocation, so a call after finalize() is a Python error; a Team made by a split is valid on its members only (the
// others get None). destroy() is collective here (a team sync, then the C API's local destroy): after the sync every
// member has finished the collectives this PE called on the team, which the local destroy requires. A Team dropped
// without destroy() is not destroyed (a garbage collector runs at different times on different PEs); finalize()
// releases every team.
struct Team;
using TeamPtr = std::shared_ptr<Team>;

struct Team {
  StatePtr state;
  tether_team_t handle = TETHER_TEAM_INVALID;
  const char* predefined = nullptr;  // "world" or "shared" for the predefined teams (never destroyed), else nullptr
  bool destroyed = false;

  static TeamPtr make(StatePtr state, tether_team_t h, const char* predefined = nullptr) {
    auto t = std::make_shared<Team>();
    t->state = std::move(state);
    t->handle = h;
    t->predefined = predefined;
    return t;
  }
  // The handle for `call`, or a raise: after finalize(), after destroy().
  tether_team_t live(const char* call) const {
    state->live();
    if (destroyed) fail(TETHER_ERR_INVALID_ARG, std::string(call) + ": the team was destroyed (destroy() or the end "
                                                                    "of its with block)");
    return handle;
  }
  // A local query's answer, or a raise with tether_last_error() when it says -1 (the handle is not valid here).
  static int answer(int v) {
    if (v < 0) fail(TETHER_ERR_INVALID_ARG, tether_last_error());
    return v;
  }
  int myPe() const { return answer(tether_team_my_pe(live("Team.my_pe"))); }
  int nPes() const { return answer(tether_team_n_pes(live("Team.n_pes"))); }
  int index() const { return answer(tether_team_index(live("Team.index"))); }
  // pe checked against [0, n_pes) of this team (the C queries answer -1 without a message for a PE outside it).
  tether_team_t withPe(const char* call, int pe) const {
    tether_team_t h = live(call);
    int n = answer(tether_team_n_pes(h));
    if (pe < 0 || pe >= n)
      fail(TETHER_ERR_INVALID_PE, std::string(call) + ": team PE " + std::to_string(pe) + " is outside the team's [0, " +
                                      std::to_string(n) + ")");
    return h;
  }
  int worldPe(int pe) const { return answer(tether_team_world_pe(withPe("Team.world_pe", pe), pe)); }
  // The number in `other` of this team's PE pe; None when that PE is not a member of `other`.
  nb::object translatePe(int pe, const Team& other) const {
    tether_team_t h = withPe("Team.translate_pe", pe), o = other.live("Team.translate_pe");
    if (other.state != state)
      fail(TETHER_ERR_INVALID_ARG, "Team.translate_pe: the two teams belong to different tether instances");
    answer(tether_team_n_pes(o));
    int r = tether_team_translate_pe(h, pe, o);
    if (r < 0) return nb::none();
    return nb::int_(r);
  }
  void sync() const {
    tether_team_t h = live("Team.sync");
    checkWithoutGil([h] { return tether_team_sync(h); });
  }
  void barrier() const {
    tether_team_t h = live("Team.barrier");
    checkWithoutGil([h] { return tether_team_barrier(h); });
  }
  // Collective over this team; the new team on its members, None on the others.
  nb::object splitStrided(int start, int stride, int size) const {
    tether_team_t h = live("Team.split_strided"), out = TETHER_TEAM_INVALID;
    checkWithoutGil([&] { return tether_team_split_strided(h, start, stride, size, nullptr, &out); });
    if (out == TETHER_TEAM_INVALID) return nb::none();
    return nb::cast(make(state, out));
  }
  // Collective over this team: (row, column) of this PE in a grid xrange wide.
  std::tuple<TeamPtr, TeamPtr> split2d(int xrange) const {
    tether_team_t h = live("Team.split_2d"), x = TETHER_TEAM_INVALID, y = TETHER_TEAM_INVALID;
    checkWithoutGil([&] { return tether_team_split_2d(h, xrange, nullptr, &x, nullptr, &y); });
    return {make(state, x), make(state, y)};
  }
  void destroy() {
    tether_team_t h = live("Team.destroy");
    if (predefined)
      fail(TETHER_ERR_INVALID_ARG, std::string("Team.destroy(): the ") + predefined +
                                       " team is predefined and cannot be destroyed");
    tether_status_t st;
    {
      nb::gil_scoped_release unlocked;
      st = tether_team_sync(h);
    }
    std::string why = st != TETHER_SUCCESS ? tether_last_error() : "";
    tether_status_t gone = tether_team_destroy(h);  // also after a failed sync: this PE's handle goes
    if (gone == TETHER_SUCCESS) destroyed = true;
    if (st != TETHER_SUCCESS)
      fail(st, "Team.destroy(): the team sync before the destroy failed (" + why + "); the team is " +
                   (destroyed ? "released on this PE" : "still live on this PE"));
    check(gone);
  }
  std::string repr() const {
    if (destroyed) return "<tether.Team destroyed>";
    if (!state->w) return "<tether.Team of a finalized instance>";
    return "<tether.Team " + std::string(predefined ? predefined : "split") + ": team PE " +
           std::to_string(tether_team_my_pe(handle)) + " of " + std::to_string(tether_team_n_pes(handle)) +
           ", index " + std::to_string(tether_team_index(handle)) + ">";
  }
};

}  // namespace tether_py
