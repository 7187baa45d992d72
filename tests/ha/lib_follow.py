# SPDX-License-Identifier: Apache-2.0
"""A libcrescent client (the crescent Python package) given a standby's address: its calls are
answered -NOTLEADER <leader> and must follow to the leader. Usage: lib_follow.py STANDBY_ADDR KEY.
Puts KEY (4000 bytes), reads it back and prints "ok"; then waits for its standard input to
close (the test looks at the leader meanwhile), removes KEY, closes and exits 0. Raises on any
failure."""
import sys

from crescent import Store

addr, key = sys.argv[1], sys.argv[2]
st = Store()
st.setup(master_server_addr=addr, global_segment_size=16 << 20, local_buffer_size=4 << 20,
         protocol="tcp")
value = bytes(range(256)) * 15 + b"0123456789abcdef"
st.put(key, value)
got = st.get(key)
assert got == value, "read back %d bytes, want %d" % (len(got), len(value))
assert st.is_exist(key) == 1
print("ok", flush=True)
sys.stdin.read()
st.remove(key, force=True)  # the get above holds a read lease
st.close()
