#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Snapshots in HA mode: op-log and election in a real etcd, Redis snapshot catalog
# (see test_master_ha_snapshot.py).
exec python3 "$(dirname "$0")/test_master_ha_snapshot.py" etcd
