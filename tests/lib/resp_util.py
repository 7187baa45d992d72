# SPDX-License-Identifier: Apache-2.0
"""RESP helpers shared by the Python test and bench scripts (tests/ha/ha_harness.py,
tests/compat/differential.py and the scripts that import them)."""


def resp_command(*args):
    """One RESP2 request (an array of bulk strings) for args: bytes as they are, anything else
    as its str() in UTF-8."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
