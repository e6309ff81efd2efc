// Team management: queries, translation, splits, destroy, and the 1.6 team_ptr. The objects and
// the slot agreement live in lib/core/team.*.
#include "lib/api/api.h"
#include "lib/core/team.h"

using namespace hoshmem;

extern "C" {

int pshmem_team_my_pe(shmem_team_t team) {
  if (!team) return -1;
  check_team(team, HOSHMEM_ROUTINE);
  return team->view.rank;
}

int pshmem_team_n_pes(shmem_team_t team) {
  if (!team) return -1;
  check_team(team, HOSHMEM_ROUTINE);
  return team->view.size;
}

// 1.6: the current configuration; a zero mask asks for nothing (config may then be NULL).
int pshmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config) {
  if (!team) return -1;
  check_team(team, HOSHMEM_ROUTINE);
  if (config_mask == 0) return 0;
  if (!config) fatal(HOSHMEM_ROUTINE, "config is NULL with a nonzero config_mask");
  if (config_mask & ~SHMEM_TEAM_NUM_CONTEXTS) return -1;
  config->num_contexts = team->config.num_contexts;
  return 0;
}

int pshmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
  if (!src_team || !dest_team) return -1;
  check_team(src_team, HOSHMEM_ROUTINE);
  check_team(dest_team, HOSHMEM_ROUTINE);
  if (src_pe < 0 || src_pe >= src_team->view.size) return -1;
  return team_rank_of(dest_team, src_team->view.world[src_pe]);
}

int pshmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                              const shmem_team_config_t *config, long config_mask,
                              shmem_team_t *new_team) {
  return team_split_strided(parent_team, start, stride, size, config, config_mask, new_team,
                            HOSHMEM_ROUTINE);
}

int pshmem_team_split_2d(shmem_team_t parent_team, int xrange,
                         const shmem_team_config_t *xaxis_config, long xaxis_mask,
                         shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                         long yaxis_mask, shmem_team_t *yaxis_team) {
  return team_split_2d(parent_team, xrange, xaxis_config, xaxis_mask, xaxis_team, yaxis_config,
                       yaxis_mask, yaxis_team, HOSHMEM_ROUTINE);
}

void pshmem_team_destroy(shmem_team_t team) { team_destroy(team, HOSHMEM_ROUTINE); }

// 1.6: like shmem_ptr with `pe` numbered in `team`; NULL for SHMEM_TEAM_INVALID, for a PE outside
// the team, and whenever loads and stores cannot reach the target.
void *pshmem_team_ptr(shmem_team_t team, const void *dest, int pe) {
  if (!team) return nullptr;
  check_team(team, HOSHMEM_ROUTINE);
  if (pe < 0 || pe >= team->view.size) return nullptr;
  return pshmem_ptr(dest, team->view.world[pe]);
}

}  // extern "C"

HOSHMEM_ALIAS(shmem_team_my_pe);
HOSHMEM_ALIAS(shmem_team_n_pes);
HOSHMEM_ALIAS(shmem_team_get_config);
HOSHMEM_ALIAS(shmem_team_translate_pe);
HOSHMEM_ALIAS(shmem_team_split_strided);
HOSHMEM_ALIAS(shmem_team_split_2d);
HOSHMEM_ALIAS(shmem_team_destroy);
HOSHMEM_ALIAS(shmem_team_ptr);
