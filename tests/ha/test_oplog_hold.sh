#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Replies wait for their op-log entries without blocking the event loop: see test_oplog_hold.py.
exec python3 "$(dirname "$0")/test_oplog_hold.py"
