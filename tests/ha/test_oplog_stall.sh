#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A stalled op-log store (SIGSTOP) must not expire the pool's clients: see test_oplog_stall.py.
exec python3 "$(dirname "$0")/test_oplog_stall.py"
