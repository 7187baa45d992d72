# SPDX-License-Identifier: Apache-2.0
"""Loading libcrescent.so with ctypes, the C prototypes the package calls, the one exception
type (CrescentError) and the buffer helper that turns any buffer-protocol object, a torch CPU
tensor or a raw address into a pointer and a length without copying.

Library lookup, first hit wins: $CRESCENT_LIB (a path), libcrescent.so[.0] next to the
package, the build tree of a source checkout (<repo>/build/lib), the lib directory of an
install prefix (<prefix>/lib/python3/dist-packages/crescent -> <prefix>/lib), then the
dynamic linker's search (ldconfig cache, LD_LIBRARY_PATH)."""

import ctypes
import ctypes.util
import os

from ctypes import (POINTER, c_char, c_char_p, c_int, c_int64, c_size_t, c_ssize_t, c_uint,
                    c_uint32, c_uint64, c_void_p, py_object)

_HERE = os.path.dirname(os.path.abspath(__file__))
_SONAMES = ("libcrescent.so.0", "libcrescent.so")


def _candidates():
    env = os.environ.get("CRESCENT_LIB")
    if env:
        yield env
        return
    dirs = [
        _HERE,
        os.path.join(_HERE, "..", "..", "build", "lib"),  # source checkout: python/crescent
        # <prefix>/lib/python3/dist-packages/crescent or <prefix>/lib/python3.X/site-packages
        os.path.join(_HERE, "..", "..", ".."),
    ]
    for d in dirs:
        for so in _SONAMES:
            p = os.path.normpath(os.path.join(d, so))
            if os.path.exists(p):
                yield p
    found = ctypes.util.find_library("crescent")
    if found:
        yield found
    yield "libcrescent.so.0"


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError("crescent: cannot load libcrescent.so (set CRESCENT_LIB to its path): " +
                      "; ".join(errors))


LIB, LIB_PATH = _load()


class CrescentError(Exception):
    """Every failure of a libcrescent call. Attributes: name (Mooncake's error name such as
    "OBJECT_NOT_FOUND", or an errno name such as "ETIMEDOUT"), code (the negative C code),
    mooncake_code (Mooncake's ErrorCode number such as -704, or None for codes Mooncake does
    not have) and message (the library's text about the failure, possibly empty)."""

    def __init__(self, name, code, mooncake_code=None, message="", op=None):
        self.name = name
        self.code = code
        self.mooncake_code = mooncake_code
        self.message = message
        self.op = op
        text = name
        if op:
            text = "%s: %s" % (op, text)
        if message:
            text += ": " + message
        super().__init__(text)


def _proto(name, restype, *argtypes):
    f = getattr(LIB, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


# --- store.h -------------------------------------------------------------------------------

LOG_CB = ctypes.CFUNCTYPE(None, c_int, c_char_p, c_void_p)


class StoreConfig(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("local_hostname", c_char_p),
                ("protocol", c_char_p), ("device_names", c_char_p),
                ("global_segment_size", c_uint64), ("local_buffer_size", c_uint64),
                ("tenant", c_char_p), ("master_timeout_ms", c_uint32),
                ("log_cb", c_void_p), ("log_arg", c_void_p), ("daemon", c_char_p),
                ("ssd_offload_path", c_char_p)]


class ReplicateConfigC(ctypes.Structure):
    _fields_ = [("replica_num", c_uint), ("with_soft_pin", c_int),
                ("soft_pin_ttl_ms", c_uint64), ("with_hard_pin", c_int),
                ("prefer_same_node", c_int), ("preferred_segments", POINTER(c_char_p)),
                ("n_preferred_segments", c_size_t)]


class ReplicaC(ctypes.Structure):
    _fields_ = [("segment", c_char * 256), ("endpoint", c_char * 128),
                ("protocol", c_char * 16), ("complete", c_int), ("is_memory", c_int),
                ("addr", c_uint64), ("size", c_uint64)]


class StoreMetricsC(ctypes.Structure):
    _fields_ = [("read_bytes", c_uint64 * 4), ("write_bytes", c_uint64 * 4),
                ("read_ops", c_uint64 * 4), ("write_ops", c_uint64 * 4),
                ("read_us", c_uint64 * 4), ("write_us", c_uint64 * 4),
                ("staging_bytes", c_uint64), ("remounts", c_uint64),
                ("master_reconnects", c_uint64)]


P = c_void_p
PP = POINTER(c_void_p)
KEYS = POINTER(c_char_p)
RC = POINTER(ReplicateConfigC)

store_create = _proto("crescent_store_create", c_int, c_char_p, POINTER(StoreConfig), PP)
store_destroy = _proto("crescent_store_destroy", None, P)
store_health_check = _proto("crescent_store_health_check", c_int, P)
store_client_id = _proto("crescent_store_client_id", c_char_p, P)
store_mount_segment = _proto("crescent_store_mount_segment", c_int, P, P, c_size_t, c_char_p)
store_unmount_segment = _proto("crescent_store_unmount_segment", c_int, P, c_char_p)
store_segment_name = _proto("crescent_store_segment_name", c_int, P, c_size_t, c_char_p,
                            c_size_t)
store_register_buffer = _proto("crescent_store_register_buffer", c_int, P, P, c_size_t)
store_unregister_buffer = _proto("crescent_store_unregister_buffer", c_int, P, P)
store_put = _proto("crescent_store_put", c_int, P, c_char_p, P, c_size_t, RC)
store_put_parts = _proto("crescent_store_put_parts", c_int, P, c_char_p, PP,
                         POINTER(c_size_t), c_size_t, RC)
store_put_from = _proto("crescent_store_put_from", c_int, P, c_char_p, P, c_size_t, RC)
store_upsert = _proto("crescent_store_upsert", c_int, P, c_char_p, P, c_size_t, RC)
store_upsert_from = _proto("crescent_store_upsert_from", c_int, P, c_char_p, P, c_size_t, RC)
store_get = _proto("crescent_store_get", c_int, P, c_char_p, PP, POINTER(c_size_t))
store_free = _proto("crescent_store_free", None, P)
store_get_into = _proto("crescent_store_get_into", c_int64, P, c_char_p, P, c_size_t)
store_batch_put_from = _proto("crescent_store_batch_put_from", c_int, P, KEYS, PP,
                              POINTER(c_size_t), c_size_t, RC, POINTER(c_int))
store_batch_put = _proto("crescent_store_batch_put", c_int, P, KEYS, PP, POINTER(c_size_t),
                         c_size_t, RC, POINTER(c_int))
store_batch_get_into = _proto("crescent_store_batch_get_into", c_int, P, KEYS, PP,
                              POINTER(c_size_t), c_size_t, POINTER(c_int64))
store_batch_get = _proto("crescent_store_batch_get", c_int, P, KEYS, c_size_t, PP,
                         POINTER(c_size_t), POINTER(c_int64))
store_is_exist = _proto("crescent_store_is_exist", c_int, P, c_char_p)
store_batch_is_exist = _proto("crescent_store_batch_is_exist", c_int, P, KEYS, c_size_t,
                              POINTER(c_int))
store_get_size = _proto("crescent_store_get_size", c_int64, P, c_char_p)
store_remove = _proto("crescent_store_remove", c_int, P, c_char_p, c_int)
store_remove_by_regex = _proto("crescent_store_remove_by_regex", c_int64, P, c_char_p, c_int)
store_remove_all = _proto("crescent_store_remove_all", c_int64, P, c_int)
store_batch_replica_clear = _proto("crescent_store_batch_replica_clear", c_int, P, KEYS,
                                   c_size_t, c_char_p, POINTER(c_int))
store_get_replica_desc = _proto("crescent_store_get_replica_desc", c_int, P, c_char_p,
                                POINTER(ReplicaC), c_size_t)
store_metrics = _proto("crescent_store_metrics", c_int, P, POINTER(StoreMetricsC))
store_err_name = _proto("crescent_store_err_name", c_char_p, c_int)
store_mooncake_code = _proto("crescent_store_mooncake_code", c_int, c_int)
store_last_error = _proto("crescent_store_last_error", c_char_p)

# --- transfer.h ----------------------------------------------------------------------------


class XferOpts(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("local_name", c_char_p), ("listen", c_char_p),
                ("timeout_ms", c_uint32), ("handshake_timeout_ms", c_uint32)]


class XferRequest(ctypes.Structure):
    _fields_ = [("op", c_int), ("local", c_void_p), ("seg", c_void_p),
                ("remote_addr", c_uint64), ("length", c_uint64)]


class XferTaskStatus(ctypes.Structure):
    _fields_ = [("status", c_int), ("transferred", c_uint64), ("error", c_int)]


XFER_READ, XFER_WRITE = 0, 1
XFER_REMOTE = 1

xfer_engine_create = _proto("crescent_xfer_engine_create", c_int, POINTER(XferOpts), PP)
xfer_engine_destroy = _proto("crescent_xfer_engine_destroy", None, P)
xfer_engine_local_addr = _proto("crescent_xfer_engine_local_addr", c_int, P, c_char_p,
                                c_size_t)
xfer_install = _proto("crescent_xfer_install", c_int, P, c_char_p, c_char_p)
xfer_uninstall = _proto("crescent_xfer_uninstall", c_int, P, c_char_p)
xfer_register = _proto("crescent_xfer_register", c_int, P, P, c_size_t, c_char_p, c_uint)
xfer_unregister = _proto("crescent_xfer_unregister", c_int, P, P)
xfer_alloc_shared = _proto("crescent_xfer_alloc_shared", c_int, P, c_size_t, PP)
xfer_free_shared = _proto("crescent_xfer_free_shared", c_int, P, P)
xfer_export_desc = _proto("crescent_xfer_export_desc", c_ssize_t, P, P, c_size_t)
xfer_fetch_desc = _proto("crescent_xfer_fetch_desc", c_int, c_char_p, c_uint32, PP,
                         POINTER(c_size_t))
xfer_desc_free = _proto("crescent_xfer_desc_free", None, P)
xfer_segment_open = _proto("crescent_xfer_segment_open", c_int, P, P, c_size_t, PP)
xfer_segment_open_addr = _proto("crescent_xfer_segment_open_addr", c_int, P, c_char_p, PP)
xfer_segment_close = _proto("crescent_xfer_segment_close", None, P)
xfer_segment_transport = _proto("crescent_xfer_segment_transport", c_char_p, P)
xfer_segment_buffer = _proto("crescent_xfer_segment_buffer", c_int, P, c_size_t,
                             POINTER(c_uint64), POINTER(c_uint64))
xfer_segment_warmup = _proto("crescent_xfer_segment_warmup", c_int, P)
xfer_batch_alloc = _proto("crescent_xfer_batch_alloc", c_int, P, c_size_t, PP)
xfer_batch_free = _proto("crescent_xfer_batch_free", None, P)
xfer_batch_submit = _proto("crescent_xfer_batch_submit", c_int, P, POINTER(XferRequest),
                           c_size_t, POINTER(c_size_t))
xfer_batch_status = _proto("crescent_xfer_batch_status", c_int, P, c_size_t,
                           POINTER(XferTaskStatus))
xfer_batch_wait = _proto("crescent_xfer_batch_wait", c_int, P, c_int, POINTER(c_size_t),
                         c_size_t, POINTER(c_size_t))
xfer_batch_reset = _proto("crescent_xfer_batch_reset", c_int, P)
xfer_status_name = _proto("crescent_xfer_status_name", c_char_p, c_int)
xfer_strerror = _proto("crescent_xfer_strerror", c_char_p, c_int)
xfer_err_name = _proto("crescent_xfer_err_name", c_char_p, c_int)
xfer_last_error = _proto("crescent_xfer_last_error", c_char_p)

# --- errors --------------------------------------------------------------------------------


def _s(b):
    return b.decode("utf-8", "replace") if b else ""


def err_name(code):
    """Mooncake-style name of a negative C code: "OBJECT_NOT_FOUND" for store codes,
    "INVALID_PARAMS" for -CRESCENT_XFER_EINVALID_PARAMS, "ETIMEDOUT" for -errno values."""
    name = _s(store_err_name(code))
    if name.startswith("CRESCENT_XFER_E"):
        name = name[len("CRESCENT_XFER_E"):]
    return name or "UNKNOWN"


def store_error(code, op=None):
    """CrescentError for a negative code returned by a crescent_store_* call (read at once,
    on the calling thread, so that the thread's last-error message is the call's)."""
    mc = store_mooncake_code(code)
    msg = _s(store_last_error())
    if not msg:
        msg = _s(xfer_strerror(code))
    return CrescentError(err_name(code), code, mc if mc != 0 else None, msg, op)


def xfer_error(code, op=None):
    """CrescentError for a negative code returned by a crescent_xfer_* call."""
    mc = store_mooncake_code(code)
    msg = _s(xfer_strerror(code))
    last = _s(xfer_last_error())
    if last and op in ("open_segment", "fetch_desc"):
        msg = last
    return CrescentError(err_name(code), code, mc if mc != 0 else None, msg, op)


# --- buffers -------------------------------------------------------------------------------


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer (stable layout since 3.3)."""
    _fields_ = [("buf", c_void_p), ("obj", py_object), ("len", c_ssize_t),
                ("itemsize", c_ssize_t), ("readonly", c_int), ("ndim", c_int),
                ("format", c_char_p), ("shape", POINTER(c_ssize_t)),
                ("strides", POINTER(c_ssize_t)), ("suboffsets", POINTER(c_ssize_t)),
                ("internal", c_void_p)]


_PyBUF_WRITABLE = 0x0001
_PyBUF_ND = 0x0008
_PyBUF_STRIDES = 0x0010 | _PyBUF_ND
_PyBUF_C_CONTIGUOUS = 0x0020 | _PyBUF_STRIDES
_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.restype = c_int
_get_buffer.argtypes = [py_object, POINTER(_PyBuffer), c_int]
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.restype = None
_release_buffer.argtypes = [POINTER(_PyBuffer)]


class Closing:
    """Base of the handle classes (Store, TransferEngine): a context manager whose exit, and
    the object's collection, call close(); an error in close() at collection is ignored."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Buffer:
    """A view of caller memory as (addr, size): an exported buffer-protocol view (held until
    release(), so the object cannot be resized or freed under the library), a torch CPU
    tensor's data (held by reference), or a raw integer address (the caller's business).
    Use as a context manager or call release()."""

    __slots__ = ("addr", "size", "_view", "_ref")

    def __init__(self, obj, size=None, writable=False):
        self._view = None
        self._ref = None
        if isinstance(obj, int):
            if size is None:
                raise TypeError("a raw address needs a size")
            self.addr, self.size = obj, int(size)
        elif _is_torch_tensor(obj):
            self._ref = obj
            self.addr, self.size = _torch_span(obj)
        else:
            view = _PyBuffer()
            flags = _PyBUF_C_CONTIGUOUS | (_PyBUF_WRITABLE if writable else 0)
            try:
                _get_buffer(obj, ctypes.byref(view), flags)
            except (BufferError, TypeError, ValueError) as e:
                raise TypeError("expected a C-contiguous%s buffer (bytearray, memoryview, "
                                "numpy array), a torch CPU tensor or an int address, got %s: %s"
                                % (" writable" if writable else "", type(obj).__name__, e))
            self._view = view
            self.addr, self.size = view.buf or 0, view.len
        if size is not None and not isinstance(obj, int):
            size = int(size)
            if size < 0 or size > self.size:
                self.release()
                raise ValueError("size %d outside the buffer's %d bytes" % (size, self.size))
            self.size = size

    def release(self):
        if self._view is not None:
            _release_buffer(ctypes.byref(self._view))
            self._view = None
        self._ref = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        self.release()


def _is_torch_tensor(obj):
    t = type(obj)
    return t.__module__.startswith("torch") and hasattr(obj, "data_ptr")


def _torch_span(t):
    if t.device.type != "cpu":
        raise TypeError("only CPU tensors can be passed (got device %s)" % t.device)
    if not t.is_contiguous():
        raise TypeError("the tensor must be contiguous")
    return t.data_ptr(), t.numel() * t.element_size()



def key_bytes(key):
    """A key as NUL-free bytes for a C string (str is UTF-8 encoded)."""
    if isinstance(key, str):
        b = key.encode("utf-8")
    elif isinstance(key, (bytes, bytearray, memoryview)):
        b = bytes(key)
    else:
        raise TypeError("key must be str or bytes, not %s" % type(key).__name__)
    if b"\0" in b:
        raise ValueError("key must not contain NUL bytes")
    return b


def key_array(keys):
    """(c_char_p array, list of bytes keeping them alive) for a sequence of keys."""
    bs = [key_bytes(k) for k in keys]
    arr = (c_char_p * max(1, len(bs)))(*bs)
    return arr, bs
