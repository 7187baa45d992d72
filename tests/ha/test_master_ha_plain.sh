#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Plain Redis commands (SET/GET/DEL/FLUSHALL) on HA masters without --memory, op-log in a real
# redis-server (see test_master_ha_plain.py; "etcd" as argument there runs it on etcd).
exec python3 "$(dirname "$0")/test_master_ha_plain.py" redis
