// softhca raw doorbells: how the model notices the stores a program makes to the pages that
// mlx5dv_init_obj hands out (a QP's BlueFlame register, a CQ's arm doorbell in cq_uar).
//   trap  the pages are write-protected; each store faults, is single-stepped and rung at once
//         (exact: the doorbell takes effect inside the store; two signals per store)
//   poll  the pages stay writable; a doorbell thread polls them (spinning shortly after activity,
//         then protecting them and sleeping until the next store faults once to wake it)
// SOFTHCA_DOORBELL selects the mode.
#pragma once
#include "model.h"

namespace softhca {

bool doorbell_trap_mode();

// Poll mode (called by trap_bf_page/untrap_bf_page and for CQ pages).
void watch_bf_page(Qp* qp);
void unwatch_bf_page(Qp* qp);
uint8_t* watch_cq_page(Cq* cq);  // a fresh arm doorbell page of the CQ's own
void unwatch_cq_page(Cq* cq);
// A DevX UAR page (mlx5dv_devx_alloc_uar), in both modes: several DevX QPs may share it, so a
// store to it rings every DevX QP whose UAR it is (each executes what its doorbell record says).
void watch_uar_page(uint8_t* page);
void unwatch_uar_page(uint8_t* page);

// Handles doorbell stores made so far that the doorbell thread has not handled yet, so that a
// verbs post that follows them in program order also follows them in the model (an arm stored
// to cq_uar before an ibv_post_send is in effect when that post completes). Call with no lock held.
void doorbell_sync();

// Arms the CQ an arm doorbell names: {sn << 28 | command | ci, cqn}, both big-endian.
void ring_cq_arm(const uint32_t db[2]);

}  // namespace softhca
