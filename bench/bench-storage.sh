#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-storage: storage/ (sto-bench) beside fio on the same file system, same block
# size, queue depth and O_DIRECT, fio with its io_uring engine; medians of alternating rounds.
#   1. sequential write, then read-back, of 1 MiB objects at queue depth 16 (MB/s)
#   2. 4 KiB random reads of stored objects at queue depth 16 (IOPS)
#   3. restart scan (sto_open) of 1,000,000 stored objects (seconds)
#   4. crescent-master --enable_offload: redis-benchmark GET over a data set 4x --memory beside
#      an all-in-memory master (bench/bench-offload.sh; ops/s and p99)
# Knobs: BENCH_STORAGE_DIR (default /var/tmp/crescent-bench-storage.PID; a disk, not tmpfs),
# BENCH_ROUNDS (3), BENCH_SEQ_MB (1024), BENCH_RAND_OBJS (131072), BENCH_RAND_OPS (50000),
# BENCH_SCAN_KEYS (1000000), MOONCAKE_OFFLOAD_USE_URING (true here).
set -euo pipefail
BUILD=${1:-$(pwd)/build}
BENCH=$BUILD/bench/sto-bench
ROUNDS=${BENCH_ROUNDS:-3}
SEQ_MB=${BENCH_SEQ_MB:-1024}
RAND_OBJS=${BENCH_RAND_OBJS:-131072}
RAND_OPS=${BENCH_RAND_OPS:-50000}
SCAN_KEYS=${BENCH_SCAN_KEYS:-1000000}
DIR=${BENCH_STORAGE_DIR:-/var/tmp/crescent-bench-storage.$$}
export MOONCAKE_OFFLOAD_USE_URING=${MOONCAKE_OFFLOAD_USE_URING:-true}
export MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES=${MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES:-268435456}

command -v fio >/dev/null || { echo "bench-storage: fio is missing (scripts/install-deps.sh)"; exit 1; }
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
echo "bench-storage: $DIR on $(df -PT "$DIR" | awk 'NR==2 {print $1" ("$2")"}'), fio $(fio --version)"
mkdir -p "$DIR/probe"
"$BENCH" write "$DIR/probe" 1 4096 1 2>&1 >/dev/null | sed 's/^/bench-storage: /'
rm -rf "$DIR/probe"

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# fio_run RW BS SIZE [IO_SIZE]: prints MB/s (sequential) or IOPS (random) of one fio job.
# FIO_EXTRA adds options (the batched variant: submit 16, wait for all 16, like a batch get).
fio_run() {
    local rw=$1 bs=$2 size=$3 io=${4:-$3}
    # shellcheck disable=SC2086
    fio --name=b --filename="$DIR/fio.dat" --rw="$rw" --bs="$bs" --iodepth=16 --direct=1 ${FIO_EXTRA:-} \
        --ioengine=io_uring --size="$size" --io_size="$io" --output-format=terse \
        --terse-version=3 | awk -F';' -v rw="$rw" '{
            if (rw == "write") print $48 * 1.024 / 1000;   # KiB/s -> MB/s
            else if (rw == "read") print $7 * 1.024 / 1000;
            else print $8 }'
}

SEQ_N=$SEQ_MB
declare -a sw sr fw fr sri fri frib
for r in $(seq 1 "$ROUNDS"); do
    for who in $( ((r % 2)) && echo "sto fio" || echo "fio sto"); do
        if [ "$who" = sto ]; then
            rm -rf "$DIR/s"; mkdir -p "$DIR/s"
            sw+=("$("$BENCH" write "$DIR/s" "$SEQ_N" 1048576 16 2>/dev/null | awk '{print $2}')")
            sr+=("$("$BENCH" read "$DIR/s" "$SEQ_N" 1048576 16 2>/dev/null | awk '{print $2}')")
            rm -rf "$DIR/s"
        else
            rm -f "$DIR/fio.dat"
            fw+=("$(fio_run write 1M "${SEQ_MB}M")")
            fr+=("$(fio_run read 1M "${SEQ_MB}M")")
            rm -f "$DIR/fio.dat"
        fi
    done
done

rm -rf "$DIR/r"; mkdir -p "$DIR/r"
"$BENCH" write "$DIR/r" "$RAND_OBJS" 4096 256 >/dev/null 2>&1
RAND_FILE_MB=$((RAND_OBJS * 8 / 1024)) # each 4 KiB object takes 8 KiB on disk (header block)
rm -f "$DIR/fio.dat"
fio_run write 1M "${RAND_FILE_MB}M" >/dev/null
for r in $(seq 1 "$ROUNDS"); do
    for who in $( ((r % 2)) && echo "sto fio" || echo "fio sto"); do
        if [ "$who" = sto ]; then
            sri+=("$("$BENCH" randread "$DIR/r" "$RAND_OBJS" 4096 16 "$RAND_OPS" 2>/dev/null |
                awk '{print $2}')")
        else
            fri+=("$(fio_run randread 4k "${RAND_FILE_MB}M" $((RAND_OPS * 4))k)")
            frib+=("$(FIO_EXTRA="--iodepth_batch_submit=16 --iodepth_batch_complete_min=16" \
                fio_run randread 4k "${RAND_FILE_MB}M" $((RAND_OPS * 4))k)")
        fi
    done
done
rm -rf "$DIR/r" "$DIR/fio.dat"

rm -rf "$DIR/scan"; mkdir -p "$DIR/scan"
"$BENCH" fill "$DIR/scan" "$SCAN_KEYS" 16 256 >/dev/null 2>&1
declare -a so
for r in $(seq 1 "$ROUNDS"); do
    so+=("$("$BENCH" open "$DIR/scan" | awk '{print $2}')")
done
rm -rf "$DIR/scan"

m() { printf '%s\n' "$@" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
msw=$(m "${sw[@]}") mfw=$(m "${fw[@]}") msr=$(m "${sr[@]}") mfr=$(m "${fr[@]}")
msri=$(m "${sri[@]}") mfri=$(m "${fri[@]}") mfrib=$(m "${frib[@]}") mso=$(m "${so[@]}")
echo
printf '%-44s %12s %12s %7s  %s\n' "medians of $ROUNDS alternating rounds" sto fio ratio target
printf '%-44s %12.1f %12.1f %7s  %s\n' "seq write, 1 MiB objects, qd 16 (MB/s)" "$msw" "$mfw" \
    "$(ratio "$msw" "$mfw")" ">= 0.80"
printf '%-44s %12.1f %12.1f %7s  %s\n' "seq read-back, 1 MiB objects, qd 16 (MB/s)" "$msr" \
    "$mfr" "$(ratio "$msr" "$mfr")" ">= 0.80"
printf '%-44s %12.0f %12.0f %7s  %s\n' "random 4 KiB reads, qd 16 (IOPS)" "$msri" "$mfri" \
    "$(ratio "$msri" "$mfri")" ">= 0.80"
printf '%-44s %12.0f %12.0f %7s  %s\n' "  same, fio in batches of 16 (IOPS)" "$msri" "$mfrib" \
    "$(ratio "$msri" "$mfrib")" "(reference)"
printf '%-44s %12.2f %12s %7s  %s\n' "restart scan of $SCAN_KEYS objects (s)" "$mso" - - "<= 5 s"
echo "rounds: sto write ${sw[*]} | fio write ${fw[*]} | sto read ${sr[*]} | fio read ${fr[*]}"
echo "rounds: sto randread ${sri[*]} | fio randread ${fri[*]} | fio batched ${frib[*]}"
echo "rounds: scan ${so[*]}"

# 4. The single-process master with the tier: redis-benchmark GET over 4x --memory.
echo
"$(dirname "$0")/bench-offload.sh" "$BUILD" "$DIR"
