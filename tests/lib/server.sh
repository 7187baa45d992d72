# SPDX-License-Identifier: Apache-2.0
# Shell helpers for tests that need a running RESP server: free loopback ports, starting
# crescent-master (or a real redis-server when CRESCENT_TEST_SERVER=redis) and tearing it down.
# Source it from a bash test script:  . "$(dirname "$0")/../lib/server.sh"
#
# start_server takes crescent-master options. Under CRESCENT_TEST_SERVER=redis they are
# translated: --memory M becomes --maxmemory M --maxmemory-policy allkeys-lru, options redis
# does not know (--threads, --eviction_*) are dropped, the rest is passed through.
# CRESCENT_IO_BACKEND=epoll|uring adds --io-backend to crescent-master (make test runs the
# integration and stress suites on both backends).
# After start_server: SERVER_PORT, SERVER_PID, SERVER_LOG, SERVER_DIR describe the last server.
# On exit every started server is stopped with SIGTERM; its log is printed when the test failed.
# A sanitizer report in any log, or a server that crashed (died by a signal other than SIGTERM)
# or did not exit within 10 s, turns the exit status into a failure.

: "${CRESCENT_BUILD:=$(pwd)/build}"
: "${CRESCENT_TEST_SERVER:=crescent}"
export CRESCENT_BUILD CRESCENT_TEST_SERVER

SRV_PIDS=()
SRV_LOGS=()
SRV_TMP=$(mktemp -d /tmp/crescent-srv.XXXXXX)

# Prints a TCP port on 127.0.0.1 that nothing listens on right now (the kernel picks it).
free_port() {
    /usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# True when the tests run against a real redis-server instead of crescent-master.
server_is_redis() {
    [ "$CRESCENT_TEST_SERVER" = redis ]
}

# Translates crescent-master options into redis-server options (printed one per line).
srv_redis_args() {
    while [ $# -gt 0 ]; do
        case $1 in
        --memory)
            printf '%s\n' --maxmemory "$2" --maxmemory-policy allkeys-lru
            shift 2 ;;
        --threads | --eviction_high_watermark_ratio | --eviction_ratio | --logfile | \
            --metrics_port | --metrics_host)
            shift 2 ;;
        *)
            printf '%s\n' "$1"
            shift ;;
        esac
    done
}

# srv_ping PORT: true when the server on PORT answers PING with PONG (or, when it has a
# password, with NOAUTH).
srv_ping() {
    local out
    out=$(timeout 5 redis-cli -h 127.0.0.1 -p "$1" ping 2>&1)
    [ "$out" = PONG ] || [[ "$out" == NOAUTH* ]]
}

# Starts a server on a free port with the given crescent-master options and waits until it
# answers PING (60 s bound, generous for sanitizer builds). Exits the test on failure.
start_server() {
    local port dir log pid i bin
    local -a cmd
    port=$(free_port)
    dir="$SRV_TMP/srv${#SRV_PIDS[@]}"
    mkdir -p "$dir"
    log="$dir/server.log"
    if server_is_redis; then
        mapfile -t cmd < <(srv_redis_args "$@")
        cmd=(redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no
             --dir "$dir" --daemonize no "${cmd[@]}")
    else
        bin="$CRESCENT_BUILD/bin/crescent-master"
        if [ ! -x "$bin" ]; then
            echo "skip: $bin not built (CRESCENT_TEST_SERVER=redis tests redis-server)"
            exit 77
        fi
        # No admin HTTP unless the test asks for it (--metrics_port P later wins).
        cmd=("$bin" --port "$port" --bind 127.0.0.1 --metrics_port 0)
        if [ -n "${CRESCENT_IO_BACKEND:-}" ]; then
            cmd+=(--io-backend "$CRESCENT_IO_BACKEND")
        fi
        cmd+=("$@")
    fi
    echo "start_server: ${cmd[*]}"
    "${cmd[@]}" >"$log" 2>&1 </dev/null &
    pid=$!
    SRV_PIDS+=("$pid")
    SRV_LOGS+=("$log")
    for ((i = 0; i < 600; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "start_server: server exited during start-up; log:"
            sed 's/^/    server| /' "$log"
            exit 1
        fi
        if srv_ping "$port"; then
            break
        fi
        sleep 0.1
    done
    if ! srv_ping "$port"; then
        echo "start_server: no PONG from port $port within 60 s; log:"
        sed 's/^/    server| /' "$log"
        exit 1
    fi
    SERVER_PORT=$port
    SERVER_PID=$pid
    SERVER_LOG=$log
    SERVER_DIR=$dir
}

# Stops the server with the given pid: SIGTERM, then SIGKILL after 10 s (under sanitizers
# the exit can take a while). Prints nothing; returns the server's exit status as `wait`
# reports it (128+N for a death by signal N), or 124 when it needed SIGKILL.
stop_server() {
    local pid=$1 i rc
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        return 124
    fi
    wait "$pid" 2>/dev/null
    rc=$?
    return $rc
}

# cli ARGS...: redis-cli against the last started server.
cli() {
    redis-cli -h 127.0.0.1 -p "$SERVER_PORT" "$@"
}

# fail MSG...: prints the message and exits with status 1 (the EXIT trap cleans up).
fail() {
    echo "FAIL: $*"
    exit 1
}

# assert_eq WHAT EXPECTED GOT: fails the test unless EXPECTED equals GOT.
assert_eq() {
    if [ "$2" != "$3" ]; then
        printf 'FAIL: %s\n  expected: %q\n  got:      %q\n' "$1" "$2" "$3"
        exit 1
    fi
}

# Server is alive check: the process runs and answers PING.
assert_server_alive() {
    kill -0 "$SERVER_PID" 2>/dev/null || fail "server process $SERVER_PID died"
    srv_ping "$SERVER_PORT" || fail "server on port $SERVER_PORT does not answer PING"
}

srv_cleanup() {
    local rc=$? i log src
    for i in "${!SRV_PIDS[@]}"; do
        stop_server "${SRV_PIDS[$i]}"
        src=$?
        # 0: clean exit on SIGTERM; 143: killed by the SIGTERM itself (no handler). Anything
        # else (a crash now or earlier, a hang) fails the test.
        if [ $src -ne 0 ] && [ $src -ne 143 ]; then
            if [ $src -eq 124 ]; then
                echo "FAIL: server ${SRV_PIDS[$i]} did not exit within 10 s of SIGTERM"
            elif [ $src -gt 128 ]; then
                echo "FAIL: server ${SRV_PIDS[$i]} died by signal $((src - 128))" \
                    "($(kill -l $((src - 128)) 2>/dev/null))"
            else
                echo "FAIL: server ${SRV_PIDS[$i]} exited with status $src"
            fi
            [ "$rc" -eq 0 ] && rc=1
            [ "$rc" -eq 77 ] && rc=1
        fi
    done
    for log in "${SRV_LOGS[@]}"; do
        if grep -qE '^(SUMMARY|==[0-9]+==ERROR): .*Sanitizer|runtime error:' "$log"; then
            echo "server log $log has a sanitizer report:"
            sed 's/^/    server| /' "$log" | head -200
            [ "$rc" -eq 0 ] && rc=99
        elif [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
            echo "server log $log (last 60 lines):"
            tail -60 "$log" | sed 's/^/    server| /'
        fi
    done
    rm -rf "$SRV_TMP"
    exit "$rc"
}
trap srv_cleanup EXIT
