#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# HA mode of crescent-master against a real redis-server (see test_master_ha.py), then
# libcrescent given redis://host:port as its master address (test_client_follow.py).
here=$(dirname "$0")
python3 "$here/test_master_ha.py" redis || exit $?
exec python3 "$here/test_client_follow.py" redis
