#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A/B of two crescent-master binaries with the SSD tier (docs/storage.md): each runs
# --memory MB with --enable_offload, both are loaded with the same data set (4x --memory of
# 4 KiB values, so most reads come from disk), then redis-benchmark runs GETEX (no options:
# a read through GETEX's path) and GET against each, alternating which goes first, ROUNDS
# rounds; prints medians and every round. For before/after checks of a change, e.g.
#   bench/bench-offload-ab.sh /tmp/master-before build/bin/crescent-master
# Environment: ROUNDS (5), MB (32), REQS (50000), CLIENTS (16). Never a test: timing only.
set -euo pipefail
A=$(realpath "$1") B=$(realpath "$2") ROUNDS=${ROUNDS:-5} MB=${MB:-32} REQS=${REQS:-50000} CLIENTS=${CLIENTS:-16}
VAL=4096; KEYS=$((MB * 4 * 1024 * 1024 / VAL))
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup bench-offload-ab
DIR=/var/tmp/ssd-bench-getex.$$; mkdir -p $DIR/a $DIR/b
trap 'bench_cleanup; rm -rf "$DIR"' EXIT
export MOONCAKE_OFFLOAD_USE_URING=true MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES=268435456
cli() { redis-cli -h 127.0.0.1 -p "$@"; }
info() { cli "$1" INFO everything | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'; }
# start VAR BINARY DIR: a master with the tier in DIR; its port goes to VAR (no subshell, so
# PIDS keeps the pid for the cleanup).
start() { local port=$(free_port); "$2" --port $port --bind 127.0.0.1 --metrics_port 0 --memory ${MB}mb --enable_offload --ssd_offload_path $3 >$3.log 2>&1 & PIDS+=($!);
  for _ in $(seq 100); do cli $port PING >/dev/null 2>&1 && break; sleep 0.1; done; printf -v "$1" '%s' $port; }
run() { redis-benchmark -h 127.0.0.1 -p $1 -n $2 -r $KEYS -c $CLIENTS --csv $3 key:__rand_int__ 2>/dev/null | awk -F'"' 'NR==2 { print $4, $14 }'; }
start PA $A $DIR/a; start PB $B $DIR/b
bench_load_strings $PA $KEYS $VAL; bench_load_strings $PB $KEYS $VAL
echo "keys $KEYS; offloaded: before $(info $PA offloaded_keys) after $(info $PB offloaded_keys); load $(cut -d' ' -f1-3 /proc/loadavg)"
for cmd in GETEX GET; do
  run $PA $((REQS/4)) $cmd >/dev/null; run $PB $((REQS/4)) $cmd >/dev/null
  ao=(); ap=(); bo=(); bp=()
  for r in $(seq $ROUNDS); do
    for who in $( ((r % 2)) && echo "a b" || echo "b a"); do
      if [ $who = a ]; then read -r o p < <(run $PA $REQS $cmd); ao+=($o); ap+=($p)
      else read -r o p < <(run $PB $REQS $cmd); bo+=($o); bp+=($p); fi
    done
  done
  med() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
  echo "$cmd before: ops/s median $(med ${ao[@]}) p99 median $(med ${ap[@]}) ms  [${ao[*]} | ${ap[*]}]"
  echo "$cmd after:  ops/s median $(med ${bo[@]}) p99 median $(med ${bp[@]}) ms  [${bo[*]} | ${bp[*]}]"
done
echo "read failures: $(info $PA offload_read_failures) $(info $PB offload_read_failures); load $(cut -d' ' -f1-3 /proc/loadavg)"
