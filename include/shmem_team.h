/* OpenSHMEM 1.5 teams on tether. Included by shmem.h (after the shmem_team_t / shmem_ctx_t handle types); not meant
 * to be included on its own. The team collectives and the OpenSHMEM 1.4 active-set collectives are in
 * shmem_coll.h (included at the end of this header). Reference: docs/shmem/teams-collectives.md.
 *
 * A team is an ordered list of world PEs; a member's index in it is its team PE number. SHMEM_TEAM_WORLD (every PE)
 * and SHMEM_TEAM_SHARED (the PEs whose symmetric heap this PE can load/store: every PE today) are predefined; the
 * split routines create more. Each live team holds one of SHMEM_TEAM_MAX_TEAMS_ internal slots of symmetric
 * synchronisation words (two are the predefined teams'); a PE can be a member of at most that many teams at once.
 *
 * Return values follow OpenSHMEM 1.5: the split routines and shmem_team_get_config return 0 on success and non-zero
 * otherwise (invalid or SHMEM_TEAM_INVALID parent, invalid PE triplet or xrange, unknown config_mask bits, config
 * NULL with a non-zero mask, no free team slot); the queries return -1 for an invalid team. A split whose PEs pass
 * different triplets, or a destroy of a predefined team, ends the program with a message naming the routine.
 */
#ifndef SHMEM_TEAM_H
#define SHMEM_TEAM_H

#include <stddef.h>
#include <stdint.h>

/* Team configuration (OpenSHMEM 1.5): fields are selected by a bit mask. num_contexts is recorded and reported by
 * shmem_team_get_config; tether sets no limit on contexts per team (default 0). */
typedef struct {
  int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* Number of internal team slots (predefined teams included): the most teams a PE can be a member of at once. */
#define SHMEM_TEAM_MAX_TEAMS_ 64

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* This PE's number in team / the number of PEs in team; -1 when team is SHMEM_TEAM_INVALID, destroyed, or a team
 * this PE is not a member of. */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
/* Team PE number, in dest_team, of src_pe of src_team; -1 when either team is invalid, src_pe is outside
 * [0, size of src_team), or that PE is not a member of dest_team. */
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
/* Load/store address of team PE pe's copy of the symmetric object dest (shmem_ptr with a team-relative PE); NULL when
 * team is invalid, pe is out of range, or that memory is not directly addressable. */
void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe);

/* Copies the fields selected by config_mask of team's configuration to *config. Returns non-zero (and writes
 * nothing) when team is invalid, config is NULL, or config_mask has bits other than SHMEM_TEAM_NUM_CONTEXTS. */
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t* config);

/* Collective over parent_team. The new team is the parent PEs start + i*stride, i = 0 .. size-1 (stride may be
 * negative; 0 only with size 1; every index inside the parent). Members get the new team in *new_team, the other
 * parent PEs SHMEM_TEAM_INVALID; every parent PE gets 0. On failure every parent PE gets SHMEM_TEAM_INVALID and a
 * non-zero return. config/config_mask: see shmem_team_config_t (config may be NULL when config_mask is 0). */
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t* config, long config_mask, shmem_team_t* new_team);
/* Collective over parent_team: the parent PEs are laid out row by row in rows of xrange (xrange >= 1; larger than the
 * parent is allowed: one row). *xaxis_team = this PE's row (team PE number = x coordinate), *yaxis_team = its column
 * (team PE number = y coordinate). Returns 0 when both teams were created; a team that could not be created (no
 * free slot) is SHMEM_TEAM_INVALID and the return is non-zero. Invalid parent or xrange < 1: both INVALID,
 * non-zero. */
int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t* xaxis_config,
                        long xaxis_mask, shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team);
/* Releases team and its slot; no communication (a member may destroy it once it has finished its own operations on
 * it). SHMEM_TEAM_INVALID: nothing happens. A predefined team, or a handle already destroyed: the program ends with
 * a message. */
void shmem_team_destroy(shmem_team_t team);

/* Collective over team: returns once every member has called it; this PE's stores made before the call are visible
 * to the members after it (puts are not completed: use shmem_quiet first, or shmem_barrier_all). Returns 0, or
 * non-zero (no synchronisation) for an invalid team. */
int shmem_team_sync(shmem_team_t team);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
} /* extern "C" */
#endif

#include "shmem_coll.h"

#endif /* SHMEM_TEAM_H */
