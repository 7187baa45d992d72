# tests/compat/: stock Redis clients (redis-cli, redis-benchmark, redis-py) and raw malformed
# RESP against the server. Each script starts its own server through tests/lib/server.sh;
# CRESCENT_TEST_SERVER=redis runs them against redis-server 7 instead of crescent-master.
TEST_SCRIPTS += \
    tests/compat/differential.sh \
    tests/compat/protocol.sh \
    tests/compat/pubsub.sh \
    tests/compat/redis_benchmark.sh \
    tests/compat/redis_cli.sh \
    tests/compat/redis_py.sh \
    # EOL
