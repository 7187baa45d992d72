#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hot standbys with snapshots and trimming: op-log and election in a real redis-server, Redis
# snapshot catalog (see test_master_ha_hot.py).
exec python3 "$(dirname "$0")/test_master_ha_hot.py" redis
