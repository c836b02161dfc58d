/* OpenSHMEM 1.5 teams and collectives on tether. Included by shmem.h (after the shmem_team_t / shmem_ctx_t
 * handle types); not meant to be included on its own.
 *
 * (Being written: team management, team collectives and the OpenSHMEM 1.4 active-set collectives.)
 */
#ifndef SHMEM_TEAM_H
#define SHMEM_TEAM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SHMEM_TEAM_H */
