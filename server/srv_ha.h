/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HA mode of crescent-master (--enable_ha, docs/ha.md "HA master"): an elector (ha/) campaigns
 * for the cluster's lease; the master moves through starting -> standby -> recovering ->
 * leader_warmup -> serving. Only a serving leader whose lease is still valid by its own clock
 * runs data commands; every other state answers them with -NOTLEADER <leader host:port> (or
 * -LOADING while it replays the op-log). A leader that loses its lease stops at once: the
 * dispatch gate checks the lease per command.
 *
 * Threads: the elector's callbacks run on its thread, recovery (fence, replay, pool swap) on a
 * thread of its own; the gate and the replies run on the event-loop threads.
 */
#ifndef CRESCENT_SERVER_SRV_HA_H
#define CRESCENT_SERVER_SRV_HA_H

#include "common/cm_buf.h"

#include <stdint.h>

struct srv_client;
struct srv_cmd;

/* States, in the order a leader goes through them. */
enum srv_ha_state {
    SRV_HA_STARTING = 0,      /* elector started, nothing observed yet */
    SRV_HA_STANDBY = 1,       /* another master leads (or nobody): data commands refused */
    SRV_HA_RECOVERING = 2,    /* won the lease: fencing and replaying the op-log */
    SRV_HA_LEADER_WARMUP = 3, /* replay done, pool swapped in: re-checking the lease */
    SRV_HA_SERVING = 4,       /* leader: data commands run */
};

/*
 * Starts HA mode when srv_cfg.enable_ha is set (otherwise does nothing and returns 0): opens
 * the op-log store (--oplog_store), creates and starts the elector and the recovery thread.
 * Returns 0, or -1 with one line in err (bad flags, backend or store unreachable). Main thread,
 * after srv_mc_start and before the workers start.
 */
int srv_ha_start(char *err, size_t errlen);

/* Stops the elector (a leader releases its lease), the recovery thread and the op-log. Main
   thread, after the workers stopped. */
void srv_ha_stop(void);

/* True when HA mode runs. */
int srv_ha_enabled(void);

/*
 * True when this master serves as leader of epoch by its own clock right now (the lease is
 * valid). Any thread; cheap.
 */
int srv_ha_lease_valid(uint64_t epoch);

/*
 * The epoch this master serves as leader of right now (state serving, lease valid by its own
 * clock), else 0 (also without HA mode). Any thread; cheap.
 */
uint64_t srv_ha_serving_epoch(void);

/* Marks at start-up whether command name (with RC_CMD_* flags) still runs on a standby. */
int srv_ha_allowed_on_standby(const char *name, unsigned flags);

/*
 * Dispatch gate: in HA mode, a command not allowed on a standby is refused (reply written,
 * returns 1) unless this master serves with a valid lease; returns 0 to go on. Loop thread.
 */
int srv_ha_gate(struct srv_client *c, const struct srv_cmd *cmd);

/* What the admin HTTP routes report in HA mode. */
struct srv_ha_view {
    int serving;       /* serving leader with a valid lease */
    const char *state; /* static state name */
    char leader[300];  /* advertised address of the leader ("" = none known) */
    uint64_t epoch;    /* its epoch */
};

/* Fills *v (only meaningful when srv_ha_enabled()). Any thread. */
void srv_ha_get_view(struct srv_ha_view *v);

/* INFO section "ha". */
void srv_ha_info(struct cm_buf *b);

/* ROLE: ["master", epoch, []] while serving, else ["slave", host, port, state, epoch]. */
void srv_role_command(struct srv_client *c);

#endif
