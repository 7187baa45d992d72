#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Python side of bench/bench-python.sh: crescent.Store.get_into of --object_size objects
into one registered numpy buffer, one thread, for --duration seconds, cycling over --keys keys
written once before the clock starts (what `crescent-bench store --operation get` does in C).
Prints one JSON line: get_GBps (10^9 bytes per second), get_ops, p50/p99 per call in µs."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402

import crescent  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--object_size", type=int, default=1 << 20)
    ap.add_argument("--keys", type=int, default=64)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--protocol", default="tcp")
    o = ap.parse_args()
    st = crescent.Store()
    st.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, o.protocol, "", o.master)
    buf = np.zeros(2 * o.object_size, dtype=np.uint8)
    st.register_buffer(buf)
    src, dst = buf[:o.object_size], buf[o.object_size:]
    src[:] = np.arange(o.object_size, dtype=np.uint64).astype(np.uint8)
    keys = ["pybench-%d-%d" % (os.getpid(), i) for i in range(o.keys)]
    for k in keys:
        st.put_from(k, src)
    lat = []
    get_into, now = st.get_into, time.perf_counter_ns
    t0 = now()
    end = t0 + int(o.duration * 1e9)
    n = 0
    while True:
        for k in keys:
            a = now()
            got = get_into(k, dst)
            lat.append(now() - a)
            n += got == o.object_size
        if now() >= end:
            break
    secs = (now() - t0) / 1e9
    assert np.array_equal(src, dst)
    st.remove_by_regex("^pybench-%d-" % os.getpid(), force=True)
    st.close()
    lat.sort()
    print(json.dumps({"get_GBps": n * o.object_size / secs / 1e9, "get_ops": n,
                      "get_p50_us": lat[len(lat) // 2] / 1e3,
                      "get_p99_us": lat[len(lat) * 99 // 100] / 1e3, "errors": len(lat) - n}))


if __name__ == "__main__":
    main()
