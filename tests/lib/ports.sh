# SPDX-License-Identifier: Apache-2.0
# Free loopback ports for shell tests. Source it:  . "$(dirname "$0")/../lib/ports.sh"
# free_port prints a TCP port on 127.0.0.1 that nothing listens on right now (the kernel picks
# it by binding port 0); a small race with other processes remains, so callers that start a
# server should check that it came up.

free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}
