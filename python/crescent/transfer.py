# SPDX-License-Identifier: Apache-2.0
"""TransferEngine: Mooncake's Python transfer engine over libcrescent's transfer API
(crescent/transfer.h, docs/transfer.md), through ctypes. Peers are named by the "host:port"
of their engine's listener (Mooncake's P2PHANDSHAKE mode) or by descriptor bytes; the
synchronous calls submit one batch and wait for it with the GIL released."""

import ctypes
import threading

from ctypes import c_size_t, c_uint64, c_void_p

from . import _lib as L
from ._lib import Buffer, CrescentError


def _listen(host):
    """The listen address for a Mooncake-style local_hostname: a bare host gets port 0."""
    if host is None or host == "":
        return None if host is None else b""
    if host.startswith("[") or host.count(":") == 1:
        return host.encode()
    if ":" in host:  # a bare IPv6 address
        return ("[%s]:0" % host).encode()
    return (host + ":0").encode()


class Segment:
    """An opened remote segment (a peer engine's registered memory)."""

    def __init__(self, engine, handle):
        self._engine = engine
        self._seg = handle

    @property
    def transport(self):
        """The transport serving the segment: "shm", "tcp", "local", ..."""
        return L.xfer_segment_transport(self._h()).decode()

    def buffers(self):
        """The peer's remote-visible buffers as (address, length) pairs."""
        out, i, a, n = [], 0, c_uint64(), c_uint64()
        while L.xfer_segment_buffer(self._h(), i, ctypes.byref(a), ctypes.byref(n)) == 0:
            out.append((a.value, n.value))
            i += 1
        return out

    def warmup(self):
        """Pre-connects to the peer (a no-op for transports without connections)."""
        L.xfer_segment_warmup(self._h())

    def close(self):
        """Closes the segment once its in-flight tasks finish. Idempotent."""
        seg, self._seg = self._seg, None
        if seg is not None:
            L.xfer_segment_close(seg)

    def _h(self):
        if self._seg is None:
            raise CrescentError("EBADF", -9, None, "the segment is closed")
        return self._seg


class TransferEngine(L.Closing):
    """A transfer engine: registers local memory and moves bytes to and from the registered
    memory of peers. initialize() first; close() (or a with block) releases it."""

    def __init__(self):
        self._eng = None
        self._segments = {}  # target string -> Segment (transfer_sync_* cache)
        self._registered = {}  # addr -> Buffer held while registered
        self._lock = threading.Lock()

    def initialize(self, local_hostname="127.0.0.1", metadata_server="P2PHANDSHAKE",
                   protocol="tcp", device_name="", timeout_ms=0, handshake_timeout_ms=0,
                   local_name=None):
        """Creates the engine with its listener on local_hostname ("host" for an ephemeral
        port, "host:port", "[v6]:port"; "" for none) and installs protocol: "tcp", "shm"
        (shm and tcp: shm serves same-host peers), "rdma" or "fabric" (device_name: NICs,
        comma-separated). metadata_server is accepted and ignored: peers exchange descriptors
        directly. timeout_ms bounds a transfer, handshake_timeout_ms a segment open (0:
        defaults). Returns 0."""
        if self._eng is not None:
            raise CrescentError("UNAVAILABLE_IN_CURRENT_STATUS", -6010, -1010,
                                "initialize() was already called", "initialize")
        o = L.XferOpts()
        o.struct_size = ctypes.sizeof(L.XferOpts)
        o.local_name = local_name.encode() if local_name else None
        o.listen = _listen(local_hostname)
        o.timeout_ms = int(timeout_ms)
        o.handshake_timeout_ms = int(handshake_timeout_ms)
        out = c_void_p()
        rc = L.xfer_engine_create(ctypes.byref(o), ctypes.byref(out))
        if rc < 0:
            raise L.xfer_error(rc, "initialize")
        self._eng = out
        try:
            names = {"shm": ["shm", "tcp"]}.get(protocol, [protocol])
            args = None
            if protocol in ("rdma", "fabric") and device_name:
                args = "devices=" + device_name.replace(",", ";")
            for n in names:
                self.install(n, args if n == protocol else None)
        except BaseException:
            self.close()
            raise
        return 0

    def close(self):
        """Closes cached segments, unregisters held buffers, destroys the engine. Idempotent;
        not thread-safe."""
        eng, self._eng = self._eng, None
        if eng is None:
            return 0
        for seg in self._segments.values():
            seg.close()
        self._segments.clear()
        for addr, buf in self._registered.items():
            L.xfer_unregister(eng, addr)
            buf.release()
        self._registered.clear()
        L.xfer_engine_destroy(eng)
        return 0

    def _h(self):
        if self._eng is None:
            raise CrescentError("UNAVAILABLE_IN_CURRENT_STATUS", -6010, -1010,
                                "the engine is not initialized or is closed")
        return self._eng

    def _check(self, rc, op):
        if rc < 0:
            raise L.xfer_error(rc, op)
        return rc

    # --- engine ---------------------------------------------------------------------------

    def install(self, name, args=None):
        """Installs a transport ("shm", "tcp", "fabric", "rdma", "fault") with "k=v,..."
        arguments. Returns 0."""
        self._check(L.xfer_install(self._h(), name.encode(), args.encode() if args else None),
                    "install")
        return 0

    def uninstall(self, name):
        """Uninstalls a transport. Returns 0."""
        self._check(L.xfer_uninstall(self._h(), name.encode()), "uninstall")
        return 0

    def get_local_addr(self):
        """The listener's "host:port" (what peers pass to open_segment)."""
        buf = ctypes.create_string_buffer(128)
        self._check(L.xfer_engine_local_addr(self._h(), buf, len(buf)), "get_local_addr")
        return buf.value.decode()

    def get_rpc_port(self):
        """The listener's port."""
        return int(self.get_local_addr().rsplit(":", 1)[1])

    def register_memory(self, buffer, size=None, location="cpu:0", remote=True):
        """Registers memory with every transport: a writable buffer, a torch CPU tensor, or
        an int address with size; remote lets peers read and write it. The buffer is held
        until unregister_memory() or close(). Returns 0."""
        b = Buffer(buffer, size, writable=not isinstance(buffer, int))
        rc = L.xfer_register(self._h(), b.addr, b.size, location.encode() if location else None,
                             L.XFER_REMOTE if remote else 0)
        if rc < 0:
            b.release()
            raise L.xfer_error(rc, "register_memory")
        self._registered[b.addr] = b
        return 0

    def unregister_memory(self, buffer):
        """Unregisters memory (the object or its address). Returns 0."""
        if isinstance(buffer, int):
            addr = buffer
        else:
            with Buffer(buffer) as b:
                addr = b.addr
        self._check(L.xfer_unregister(self._h(), addr), "unregister_memory")
        held = self._registered.pop(addr, None)
        if held is not None:
            held.release()
        return 0

    def allocate_managed_buffer(self, length):
        """Allocates shared (memfd) memory that same-host peers map directly; returns its
        address. Register it to use it; free with free_managed_buffer()."""
        out = c_void_p()
        self._check(L.xfer_alloc_shared(self._h(), int(length), ctypes.byref(out)),
                    "allocate_managed_buffer")
        return out.value

    def free_managed_buffer(self, addr, length=None):
        """Frees allocate_managed_buffer() memory (unregister it first). Returns 0."""
        self._check(L.xfer_free_shared(self._h(), addr), "free_managed_buffer")
        return 0

    def export_desc(self):
        """This engine's segment descriptor (bytes to hand to peers out of band)."""
        eng = self._h()
        n = self._check(L.xfer_export_desc(eng, None, 0), "export_desc")
        buf = ctypes.create_string_buffer(n)
        n = self._check(L.xfer_export_desc(eng, buf, n), "export_desc")
        return buf.raw[:n]

    @staticmethod
    def fetch_desc(hostport, timeout_ms=5000):
        """A peer's descriptor fetched from its listener."""
        p, n = c_void_p(), c_size_t()
        rc = L.xfer_fetch_desc(hostport.encode(), int(timeout_ms), ctypes.byref(p),
                               ctypes.byref(n))
        if rc < 0:
            raise L.xfer_error(rc, "fetch_desc")
        try:
            return ctypes.string_at(p, n.value)
        finally:
            L.xfer_desc_free(p)

    # --- segments -------------------------------------------------------------------------

    def open_segment(self, target):
        """Opens a peer's segment from its "host:port" or its descriptor bytes."""
        eng, out = self._h(), c_void_p()
        if isinstance(target, str):
            rc = L.xfer_segment_open_addr(eng, target.encode(), ctypes.byref(out))
        else:
            desc = bytes(target)
            rc = L.xfer_segment_open(eng, desc, len(desc), ctypes.byref(out))
        if rc < 0:
            raise L.xfer_error(rc, "open_segment")
        return Segment(self, out)

    def _segment(self, target):
        if isinstance(target, Segment):
            return target
        with self._lock:
            seg = self._segments.get(target)
            if seg is None:
                seg = self.open_segment(target)
                self._segments[target] = seg
            return seg

    def get_first_buffer_address(self, target):
        """Address of the peer's first remote-visible buffer (target: "host:port" or a
        Segment)."""
        bufs = self._segment(target).buffers()
        if not bufs:
            raise CrescentError("ENOENT", -2, None, "the peer registered no remote buffer",
                                "get_first_buffer_address")
        return bufs[0][0]

    # --- transfers ------------------------------------------------------------------------

    def transfer_sync_read(self, target, buffer, peer_buffer_address, length=None):
        """Reads length bytes (default: the buffer's size) at the peer's absolute address into
        buffer (registered local memory). target is "host:port" (segments are cached) or a
        Segment. Returns 0."""
        return self._sync(L.XFER_READ, target, [buffer], [peer_buffer_address],
                          None if length is None else [length], "transfer_sync_read")

    def transfer_sync_write(self, target, buffer, peer_buffer_address, length=None):
        """Writes buffer (registered local memory) to the peer's absolute address. Returns 0."""
        return self._sync(L.XFER_WRITE, target, [buffer], [peer_buffer_address],
                          None if length is None else [length], "transfer_sync_write")

    def batch_transfer_sync_read(self, target, buffers, peer_buffer_addresses, lengths=None):
        """Many reads from one peer in one batch. Returns 0; raises TRANSFER_FAIL (attribute
        failed: indices of the requests that did not complete)."""
        return self._sync(L.XFER_READ, target, buffers, peer_buffer_addresses, lengths,
                          "batch_transfer_sync_read")

    def batch_transfer_sync_write(self, target, buffers, peer_buffer_addresses, lengths=None):
        """Many writes to one peer in one batch. Returns 0 or raises like the read form."""
        return self._sync(L.XFER_WRITE, target, buffers, peer_buffer_addresses, lengths,
                          "batch_transfer_sync_write")

    def _sync(self, op, target, buffers, addrs, lengths, name):
        eng, seg = self._h(), self._segment(target)
        n = len(buffers)
        if len(addrs) != n or (lengths is not None and len(lengths) != n):
            raise ValueError("buffers, addresses and lengths differ in length")
        bufs = [Buffer(b, None if lengths is None else lengths[i], writable=False)
                for i, b in enumerate(buffers)]
        batch = c_void_p()
        try:
            self._check(L.xfer_batch_alloc(eng, max(1, n), ctypes.byref(batch)), name)
            reqs = (L.XferRequest * max(1, n))()
            for i, b in enumerate(bufs):
                reqs[i].op, reqs[i].local, reqs[i].seg = op, b.addr, seg._h()
                reqs[i].remote_addr, reqs[i].length = int(addrs[i]), b.size
            self._check(L.xfer_batch_submit(batch, reqs, n, None), name)
            failed = (c_size_t * max(1, n))()
            nf = c_size_t()
            rc = L.xfer_batch_wait(batch, -1, failed, n, ctypes.byref(nf))
            if rc < 0:
                err = L.xfer_error(rc, name)
                ids = list(failed[:nf.value])
                if ids:
                    st = L.XferTaskStatus()
                    L.xfer_batch_status(batch, ids[0], ctypes.byref(st))
                    first = L.xfer_error(st.error, name) if st.error < 0 else None
                    status = L._s(L.xfer_status_name(st.status))
                    detail = "request %d %s" % (ids[0], status)
                    if first is not None:
                        detail += ": %s (%s)" % (first.name, first.message)
                    err = CrescentError(err.name, err.code, err.mooncake_code, detail, name)
                err.failed = ids
                raise err
            return 0
        finally:
            if batch:
                L.xfer_batch_free(batch)
            for b in bufs:
                b.release()
