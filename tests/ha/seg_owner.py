# SPDX-License-Identifier: Apache-2.0
"""A libcrescent client (the crescent Python package) that only contributes memory: it mounts
a segment of SIZE bytes on the master at ADDR, prints its client id and waits for its standard
input to close, then exits without unmounting (the test kills masters under it). Usage:
seg_owner.py ADDR SIZE. The test pings its client id on every master, since libcrescent talks to
one address and a killed leader's address answers nothing."""
import os
import sys

from crescent import Store

addr, size = sys.argv[1], int(sys.argv[2])
st = Store()
st.setup(master_server_addr=addr, global_segment_size=size, local_buffer_size=1 << 20,
         protocol="tcp")
print(st.client_id, flush=True)
sys.stdin.read()
os._exit(0)  # no unmount: the master it knows may be gone
