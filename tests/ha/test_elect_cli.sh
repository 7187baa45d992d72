#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# crescent-elect's command line, error messages and IPv6 backends against real processes
# (see test_elect_cli.py).
exec python3 "$(dirname "$0")/test_elect_cli.py"
