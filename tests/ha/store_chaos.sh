#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Chaos run of three HA masters (not part of make test): kill -9 / SIGSTOP of the leader every
# 2-6 s for SECONDS, with the election and the op-log in BACKEND; see store_chaos.py.
#   tests/ha/store_chaos.sh redis|etcd SECONDS [SEED]
exec python3 "$(dirname "$0")/store_chaos.py" "$@"
