#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# HA mode of crescent-master with a real etcd for the election and the op-log
# (see test_master_ha.py).
exec python3 "$(dirname "$0")/test_master_ha.py" etcd --oplog=etcd
