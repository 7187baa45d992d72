#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when redis-compat/commands.def or commands_meta.def is stale against the JSON files
# in redis-compat/commands/ (run tools/gen-commands.py to refresh them).
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
exec python3 "$root/tools/gen-commands.py" --check
