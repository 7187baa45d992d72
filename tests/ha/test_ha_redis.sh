#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Leader-election tests against a real redis on free loopback ports (see test_election.py).
exec python3 "$(dirname "$0")/test_election.py" redis
