# SPDX-License-Identifier: Apache-2.0
"""Store and ReplicateConfig: Mooncake's MooncakeDistributedStore over libcrescent's store API
(crescent/store.h, docs/api/store.md), through ctypes. Every call releases the GIL while the
library works; a Store may be used from several threads at once, except close()."""

import ctypes

from ctypes import POINTER, c_char_p, c_int, c_int64, c_size_t, c_void_p

from . import _lib as L
from ._lib import Buffer, CrescentError, key_array, key_bytes

MiB = 1 << 20
_UNSET = -(1 << 31)  # a per-key result the library never writes

# setup() arguments of Mooncake that Crescent accepts and ignores (peers find each other
# through the master, not a metadata server).
_IGNORED = ("metadata_server", "engine", "ipc_socket_path", "enable_client_http_server",
            "client_http_port")


class ReplicateConfig:
    """Placement of one put (Mooncake's ReplicateConfig). replica_num copies on distinct
    segments (1..8, best effort); with_soft_pin (evicted only in a second pass, for
    soft_pin_ttl_ms, 0 = the master's default); with_hard_pin (never evicted, removable only
    with force); preferred_segments tried first in order (preferred_segment, Mooncake's older
    single form, is appended to them); prefer_alloc_in_same_node tries this host's segments
    first."""

    __slots__ = ("replica_num", "with_soft_pin", "soft_pin_ttl_ms", "with_hard_pin",
                 "preferred_segments", "preferred_segment", "prefer_alloc_in_same_node")

    def __init__(self, replica_num=1, with_soft_pin=False, soft_pin_ttl_ms=0,
                 with_hard_pin=False, preferred_segments=None, preferred_segment="",
                 prefer_alloc_in_same_node=False):
        self.replica_num = replica_num
        self.with_soft_pin = with_soft_pin
        self.soft_pin_ttl_ms = soft_pin_ttl_ms
        self.with_hard_pin = with_hard_pin
        self.preferred_segments = list(preferred_segments or [])
        self.preferred_segment = preferred_segment
        self.prefer_alloc_in_same_node = prefer_alloc_in_same_node

    def __repr__(self):
        return "ReplicateConfig(%s)" % ", ".join("%s=%r" % (k, getattr(self, k))
                                                 for k in self.__slots__)

    def _to_c(self):
        segs = [key_bytes(s) for s in self.preferred_segments]
        if self.preferred_segment:
            segs.append(key_bytes(self.preferred_segment))
        arr = (c_char_p * len(segs))(*segs) if segs else None
        c = L.ReplicateConfigC(int(self.replica_num), int(bool(self.with_soft_pin)),
                               int(self.soft_pin_ttl_ms), int(bool(self.with_hard_pin)),
                               int(bool(self.prefer_alloc_in_same_node)),
                               ctypes.cast(arr, POINTER(c_char_p)) if arr else None, len(segs))
        c._keep = (arr, segs)  # the strings must outlive the call
        return c


def _rc(config):
    if config is None:
        return None
    if not isinstance(config, ReplicateConfig):
        raise TypeError("config must be a ReplicateConfig, not %s" % type(config).__name__)
    return ctypes.byref(config._to_c())


def _buffers(objs, sizes, writable):
    """Buffer views of objs (sizes: None, or one size per object, None entries allowed)."""
    if sizes is not None and len(sizes) != len(objs):
        raise ValueError("%d buffers but %d sizes" % (len(objs), len(sizes)))
    out = []
    try:
        for i, o in enumerate(objs):
            out.append(Buffer(o, None if sizes is None else sizes[i], writable))
    except BaseException:
        for b in out:
            b.release()
        raise
    return out


def _batch_results(rc, results, op):
    """Per-key results of a batch call; raises when the call failed as a whole (no result
    written)."""
    vals = list(results)
    if rc < 0 and all(v == _UNSET for v in vals):
        raise L.store_error(rc, op)
    return [rc if v == _UNSET else v for v in vals]


class Store(L.Closing):
    """A client of the distributed store (Mooncake's MooncakeDistributedStore). Create, then
    setup(); close() (or a with block) releases it. Failures raise CrescentError carrying
    Mooncake's error name; batch calls return per-key results instead (a negative entry is a
    C code, crescent.error_name() names it)."""

    def __init__(self):
        self._st = None
        self._registered = {}  # addr -> Buffer held while registered
        self._segments = {}  # segment name -> Buffer held while mounted

    # --- lifecycle ------------------------------------------------------------------------

    def setup(self, local_hostname="127.0.0.1", metadata_server="P2PHANDSHAKE",
              global_segment_size=16 * MiB, local_buffer_size=16 * MiB, protocol="tcp",
              rdma_devices="", master_server_addr="127.0.0.1:50051", tenant_id="default",
              master_timeout_ms=0, enable_ssd_offload=False, ssd_offload_path="", **extra):
        """Connects to crescent-master at master_server_addr, contributes global_segment_size
        bytes of this process's memory to the pool (0: none) and registers a staging buffer of
        local_buffer_size bytes for the copying calls. protocol is tcp, shm, rdma or fabric
        (rdma_devices names the NICs). local_hostname is the address peers reach this client
        at (host, or host:port for a fixed transfer port). Mooncake's metadata_server,
        engine, ipc_socket_path and client HTTP arguments are accepted and ignored.
        enable_ssd_offload with ssd_offload_path (an existing directory) gives this client an
        SSD tier (docs/storage.md, "The pool tier"; the master needs enable_offload). A dict
        as the first argument gives the arguments by name. Returns 0."""
        if isinstance(local_hostname, dict):
            return self.setup(**local_hostname)
        for k in extra:
            if k not in _IGNORED:
                raise TypeError("setup() got an unexpected keyword argument %r" % k)
        if enable_ssd_offload and not ssd_offload_path:
            raise CrescentError("INVALID_PARAMS", -5600, -600,
                                "enable_ssd_offload needs ssd_offload_path", "setup")
        if self._st is not None:
            raise CrescentError("UNAVAILABLE_IN_CURRENT_STATUS", -6010, -1010,
                                "setup() was already called", "setup")
        cfg = L.StoreConfig()
        cfg.struct_size = ctypes.sizeof(L.StoreConfig)
        cfg.local_hostname = local_hostname.encode() if local_hostname else None
        cfg.protocol = protocol.encode() if protocol else None
        cfg.device_names = rdma_devices.encode() if rdma_devices else None
        cfg.global_segment_size = int(global_segment_size)
        cfg.local_buffer_size = int(local_buffer_size)
        cfg.tenant = tenant_id.encode() if tenant_id else None
        cfg.master_timeout_ms = int(master_timeout_ms)
        if enable_ssd_offload:
            cfg.ssd_offload_path = ssd_offload_path.encode()
        out = c_void_p()
        rc = L.store_create(master_server_addr.encode(), ctypes.byref(cfg), ctypes.byref(out))
        if rc < 0:
            raise L.store_error(rc, "setup")
        self._st = out
        return 0

    def close(self):
        """Unregisters every registered buffer, unmounts this client's segments and frees the
        store. Idempotent. Not thread-safe: no other call may run or follow. Returns 0."""
        st, self._st = self._st, None
        if st is None:
            return 0
        for addr, buf in list(self._registered.items()):
            L.store_unregister_buffer(st, addr)
            buf.release()
        self._registered.clear()
        L.store_destroy(st)  # unmounts every segment before the held buffers go
        for buf in self._segments.values():
            buf.release()
        self._segments.clear()
        return 0

    def _h(self):
        if self._st is None:
            raise CrescentError("UNAVAILABLE_IN_CURRENT_STATUS", -6010, -1010,
                                "the store is not set up (call setup()) or is closed")
        return self._st

    def health_check(self):
        """0 healthy, 1 not set up or closed, 2 master unreachable (the last ping failed)."""
        return 1 if self._st is None else L.store_health_check(self._st)

    @property
    def client_id(self):
        """The 32-hex-digit id this client registered with."""
        return L.store_client_id(self._h()).decode()

    def segment_names(self):
        """Names of the segments this client has mounted (its global segment first)."""
        st, names, buf = self._h(), [], ctypes.create_string_buffer(512)
        while L.store_segment_name(st, len(names), buf, len(buf)) == 0:
            names.append(buf.value.decode())
        return names

    def mount_segment(self, buffer=None, size=None, name=None):
        """Contributes memory to the pool as a segment: a writable buffer (held until
        unmount_segment() or close()), an int address with size, or buffer None and a size
        for memory the library allocates. name defaults to "<client id>-<n>". Returns the
        segment's name."""
        st = self._h()
        if buffer is None:
            if not size:
                raise ValueError("mount_segment needs a buffer or a size")
            b, addr, n = None, None, int(size)
        else:
            b = Buffer(buffer, size, writable=not isinstance(buffer, int))
            addr, n = b.addr, b.size
        before = set(self.segment_names())
        rc = L.store_mount_segment(st, addr, n, key_bytes(name) if name else None)
        if rc < 0:
            if b is not None:
                b.release()
            raise L.store_error(rc, "mount_segment")
        seg = name or [x for x in self.segment_names() if x not in before][0]
        if b is not None:
            self._segments[seg] = b
        return seg

    def unmount_segment(self, name):
        """Unmounts a segment this client mounted (its replicas are dropped). Returns 0."""
        rc = L.store_unmount_segment(self._h(), key_bytes(name))
        if rc < 0:
            raise L.store_error(rc, "unmount_segment")
        held = self._segments.pop(name, None)
        if held is not None:
            held.release()
        return 0

    # --- copying calls --------------------------------------------------------------------

    def put(self, key, value, config=None):
        """Stores value (bytes or any buffer) under key, staged through the local buffer.
        Raises OBJECT_ALREADY_EXISTS for an existing key. Returns 0."""
        return self._put(L.store_put, "put", key, value, config)

    def upsert(self, key, value, config=None):
        """Like put, but overwrites an existing object. Returns 0."""
        return self._put(L.store_upsert, "upsert", key, value, config)

    def _put(self, fn, op, key, value, config):
        st, k, rc_ = self._h(), key_bytes(key), _rc(config)
        with Buffer(value) as b:
            rc = fn(st, k, b.addr, b.size, rc_)
        if rc < 0:
            raise L.store_error(rc, op)
        return 0

    def put_parts(self, key, *parts, config=None):
        """Stores the concatenation of parts under key. Returns 0."""
        st, k, rc_ = self._h(), key_bytes(key), _rc(config)
        bufs = _buffers(parts, None, False)
        try:
            n = len(bufs)
            ptrs = (c_void_p * max(1, n))(*[b.addr for b in bufs])
            sizes = (c_size_t * max(1, n))(*[b.size for b in bufs])
            rc = L.store_put_parts(st, k, ptrs, sizes, n, rc_)
        finally:
            for b in bufs:
                b.release()
        if rc < 0:
            raise L.store_error(rc, "put_parts")
        return 0

    def get(self, key):
        """The object's bytes. Raises OBJECT_NOT_FOUND when there is no such object (where
        Mooncake returns empty bytes)."""
        st, val, size = self._h(), c_void_p(), c_size_t()
        rc = L.store_get(st, key_bytes(key), ctypes.byref(val), ctypes.byref(size))
        if rc < 0:
            raise L.store_error(rc, "get")
        try:
            return ctypes.string_at(val, size.value) if size.value else b""
        finally:
            L.store_free(val)

    def put_batch(self, keys, values, config=None):
        """Stores values[i] under keys[i] (copying; one master command for all keys).
        Returns 0; when a key fails raises its CrescentError, whose results attribute holds
        every key's result (0 or a negative code)."""
        st, rc_ = self._h(), _rc(config)
        if len(keys) != len(values):
            raise ValueError("%d keys but %d values" % (len(keys), len(values)))
        karr, _keep = key_array(keys)
        bufs = _buffers(values, None, False)
        n = len(keys)
        res = (c_int * max(1, n))(*([_UNSET] * max(1, n)))
        try:
            ptrs = (c_void_p * max(1, n))(*[b.addr for b in bufs])
            sizes = (c_size_t * max(1, n))(*[b.size for b in bufs])
            rc = L.store_batch_put(st, karr, ptrs, sizes, n, rc_, res)
        finally:
            for b in bufs:
                b.release()
        results = _batch_results(rc, res[:n], "put_batch")
        if rc < 0:
            err = L.store_error(rc, "put_batch")
            err.results = results
            raise err
        return 0

    def get_batch(self, keys):
        """The bytes of every key, in order; None for a key that could not be read (missing,
        or another per-key failure)."""
        st, n = self._h(), len(keys)
        karr, _keep = key_array(keys)
        vals = (c_void_p * max(1, n))()
        sizes = (c_size_t * max(1, n))()
        res = (c_int64 * max(1, n))(*([_UNSET] * max(1, n)))
        rc = L.store_batch_get(st, karr, n, vals, sizes, res)
        out = []
        try:
            results = _batch_results(rc, res[:n], "get_batch")
            for i in range(n):
                if results[i] < 0:
                    out.append(None)
                else:
                    out.append(ctypes.string_at(vals[i], sizes[i]) if sizes[i] else b"")
        finally:
            for i in range(n):
                if vals[i]:
                    L.store_free(vals[i])
        return out

    # --- zero-copy calls ------------------------------------------------------------------

    def register_buffer(self, buffer, size=None):
        """Registers memory for put_from / get_into: a writable buffer (bytearray, numpy array,
        memoryview), a torch CPU tensor, or an int address with size. The buffer is held (a
        bytearray cannot be resized) until unregister_buffer() or close(). Returns 0."""
        st = self._h()
        b = Buffer(buffer, size, writable=not isinstance(buffer, int))
        rc = L.store_register_buffer(st, b.addr, b.size)
        if rc < 0:
            b.release()
            raise L.store_error(rc, "register_buffer")
        self._registered[b.addr] = b
        return 0

    def unregister_buffer(self, buffer):
        """Unregisters memory registered with register_buffer (the object or its address).
        Returns 0."""
        st = self._h()
        if isinstance(buffer, int):
            addr = buffer
        else:
            with Buffer(buffer) as b:
                addr = b.addr
        rc = L.store_unregister_buffer(st, addr)
        if rc < 0:
            raise L.store_error(rc, "unregister_buffer")
        held = self._registered.pop(addr, None)
        if held is not None:
            held.release()
        return 0

    def put_from(self, key, buffer, size=None, config=None):
        """Zero-copy put of size bytes (default: the whole buffer) from registered memory.
        Mooncake's put_from(key, ptr, size, config) form works too. Returns 0."""
        return self._put_from(L.store_put_from, "put_from", key, buffer, size, config)

    def upsert_from(self, key, buffer, size=None, config=None):
        """Zero-copy upsert from registered memory. Returns 0."""
        return self._put_from(L.store_upsert_from, "upsert_from", key, buffer, size, config)

    def _put_from(self, fn, op, key, buffer, size, config):
        st, k, rc_ = self._h(), key_bytes(key), _rc(config)
        with Buffer(buffer, size) as b:
            rc = fn(st, k, b.addr, b.size, rc_)
        if rc < 0:
            raise L.store_error(rc, op)
        return 0

    def get_into(self, key, buffer, size=None):
        """Zero-copy read of the object into registered memory of at least its size (size:
        capacity to use, default the whole buffer). Returns the object's size. Raises
        BUFFER_OVERFLOW when it does not fit (nothing read)."""
        st, k = self._h(), key_bytes(key)
        with Buffer(buffer, size, writable=not isinstance(buffer, int)) as b:
            n = L.store_get_into(st, k, b.addr, b.size)
        if n < 0:
            raise L.store_error(n, "get_into")
        return n

    def batch_put_from(self, keys, buffers, sizes=None, config=None):
        """Zero-copy put of many keys (one master command, one transfer batch). buffers are
        objects or int addresses (then sizes is required). Returns per-key results: 0 or a
        negative code."""
        st, rc_, n = self._h(), _rc(config), len(keys)
        if len(buffers) != n:
            raise ValueError("%d keys but %d buffers" % (n, len(buffers)))
        karr, _keep = key_array(keys)
        bufs = _buffers(buffers, sizes, False)
        res = (c_int * max(1, n))(*([_UNSET] * max(1, n)))
        try:
            ptrs = (c_void_p * max(1, n))(*[b.addr for b in bufs])
            szs = (c_size_t * max(1, n))(*[b.size for b in bufs])
            rc = L.store_batch_put_from(st, karr, ptrs, szs, n, rc_, res)
        finally:
            for b in bufs:
                b.release()
        return _batch_results(rc, res[:n], "batch_put_from")

    def batch_get_into(self, keys, buffers, sizes=None):
        """Zero-copy read of many keys into registered memory (one master command). Returns
        per-key results: the object's size, or a negative code (crescent.error_name())."""
        st, n = self._h(), len(keys)
        if len(buffers) != n:
            raise ValueError("%d keys but %d buffers" % (n, len(buffers)))
        karr, _keep = key_array(keys)
        bufs = _buffers(buffers, sizes, True)
        res = (c_int64 * max(1, n))(*([_UNSET] * max(1, n)))
        try:
            ptrs = (c_void_p * max(1, n))(*[b.addr for b in bufs])
            caps = (c_size_t * max(1, n))(*[b.size for b in bufs])
            rc = L.store_batch_get_into(st, karr, ptrs, caps, n, res)
        finally:
            for b in bufs:
                b.release()
        return _batch_results(rc, res[:n], "batch_get_into")

    # --- queries and removal --------------------------------------------------------------

    def is_exist(self, key):
        """1 when the object is readable, 0 when not (grants a read lease, as Mooncake)."""
        rc = L.store_is_exist(self._h(), key_bytes(key))
        if rc < 0:
            raise L.store_error(rc, "is_exist")
        return rc

    def batch_is_exist(self, keys):
        """Per key 1 / 0 (or a negative code)."""
        st, n = self._h(), len(keys)
        karr, _keep = key_array(keys)
        res = (c_int * max(1, n))(*([_UNSET] * max(1, n)))
        rc = L.store_batch_is_exist(st, karr, n, res)
        return _batch_results(rc, res[:n], "batch_is_exist")

    def get_size(self, key):
        """The object's size in bytes; raises OBJECT_NOT_FOUND."""
        n = L.store_get_size(self._h(), key_bytes(key))
        if n < 0:
            raise L.store_error(n, "get_size")
        return n

    def remove(self, key, force=False):
        """Removes an object; without force a leased or hard-pinned one raises
        OBJECT_HAS_LEASE. Returns 0."""
        rc = L.store_remove(self._h(), key_bytes(key), int(bool(force)))
        if rc < 0:
            raise L.store_error(rc, "remove")
        return 0

    def remove_by_regex(self, pattern, force=False):
        """Removes the objects whose keys match a POSIX extended regular expression. Returns
        how many."""
        n = L.store_remove_by_regex(self._h(), key_bytes(pattern), int(bool(force)))
        if n < 0:
            raise L.store_error(n, "remove_by_regex")
        return n

    def remove_all(self, force=False):
        """Removes every object (leased ones only with force). Returns how many."""
        n = L.store_remove_all(self._h(), int(bool(force)))
        if n < 0:
            raise L.store_error(n, "remove_all")
        return n

    def batch_replica_clear(self, keys, segment_name=""):
        """Drops the replicas of keys that live on this client's segments (only on
        segment_name when given). Per key 1 (dropped), 0 (nothing here) or a negative code."""
        st, n = self._h(), len(keys)
        karr, _keep = key_array(keys)
        res = (c_int * max(1, n))(*([_UNSET] * max(1, n)))
        seg = key_bytes(segment_name) if segment_name else None
        rc = L.store_batch_replica_clear(st, karr, n, seg, res)
        return _batch_results(rc, res[:n], "batch_replica_clear")

    def get_replica_desc(self, key):
        """The object's replicas (every status, no lease), as dicts with segment, endpoint,
        protocol, complete, is_memory, addr and size."""
        st, k, cap = self._h(), key_bytes(key), 8
        while True:
            arr = (L.ReplicaC * cap)()
            n = L.store_get_replica_desc(st, k, arr, cap)
            if n < 0:
                raise L.store_error(n, "get_replica_desc")
            if n <= cap:
                break
            cap = n
        return [{"segment": r.segment.decode(), "endpoint": r.endpoint.decode(),
                 "protocol": r.protocol.decode(), "complete": bool(r.complete),
                 "is_memory": bool(r.is_memory), "addr": r.addr, "size": r.size}
                for r in arr[:n]]

    def metrics(self):
        """Client transfer counters: per interface (local, shm, tcp, other) read/write bytes,
        operations and summed microseconds, plus staging_bytes, remounts and
        master_reconnects."""
        m = L.StoreMetricsC()
        rc = L.store_metrics(self._h(), ctypes.byref(m))
        if rc < 0:
            raise L.store_error(rc, "metrics")
        names = ("local", "shm", "tcp", "other")
        out = {}
        for f in ("read_bytes", "write_bytes", "read_ops", "write_ops", "read_us", "write_us"):
            out[f] = dict(zip(names, getattr(m, f)))
        for f in ("staging_bytes", "remounts", "master_reconnects"):
            out[f] = getattr(m, f)
        return out
