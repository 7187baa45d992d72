#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# HA mode of crescent-master against a real redis-server (see test_master_ha.py).
exec python3 "$(dirname "$0")/test_master_ha.py" redis
