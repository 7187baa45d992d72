#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# HA mode of crescent-master with a real etcd for the election and the op-log
# (see test_master_ha.py), then libcrescent given etcd://host:port;host:port as its master
# address (test_client_follow.py).
here=$(dirname "$0")
python3 "$here/test_master_ha.py" etcd --oplog=etcd || exit $?
exec python3 "$here/test_client_follow.py" etcd
