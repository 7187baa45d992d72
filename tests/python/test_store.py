# SPDX-License-Identifier: Apache-2.0
"""crescent.Store against a real crescent-master and a serve peer (conftest.py): setup and
health, copying round trips of every buffer kind, zero-copy put_from / get_into with numpy
(through the transfer engine, nothing staged), the batch forms with per-key results, replicate
configs (replicas, preferred segments, pins), removal, replica clear, errors (one exception type
with Mooncake's names), buffers held while registered, threads and library lookup."""

import ctypes
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import crescent
from crescent import CrescentError, ReplicateConfig
from conftest import BUILD, LEASE_MS, ROOT, free_port, make_store

MiB = 1 << 20


def pattern(n, seed):
    return (np.arange(n, dtype=np.uint64) * 2654435761 + seed).astype(np.uint8)


# --- setup, health, errors ----------------------------------------------------------------


def test_health_check_follows_the_lifecycle(master, peer):
    st = crescent.Store()
    assert st.health_check() == 1
    st.setup(master_server_addr=master.addr, global_segment_size=0, local_buffer_size=MiB)
    assert st.health_check() == 0
    assert len(st.client_id) == 32 and int(st.client_id, 16) >= 0
    assert st.segment_names() == []
    st.close()
    assert st.health_check() == 1
    assert st.close() == 0  # idempotent


def test_setup_takes_a_dict_and_names_its_segment(master, peer):
    st = crescent.Store()
    st.setup({"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
              "global_segment_size": 4 * MiB, "local_buffer_size": MiB, "protocol": "tcp",
              "master_server_addr": master.addr})
    try:
        assert st.segment_names() == [st.client_id + "-0"]
    finally:
        st.close()


def test_setup_against_no_master_raises_rpc_fail():
    st = crescent.Store()
    with pytest.raises(CrescentError) as ei:
        st.setup(master_server_addr="127.0.0.1:%d" % free_port(), global_segment_size=0,
                 master_timeout_ms=1000)
    e = ei.value
    assert (e.name, e.code, e.mooncake_code, e.op) == ("RPC_FAIL", -5900, -900, "setup")
    assert str(e).startswith("setup: RPC_FAIL")
    assert st.health_check() == 1


def test_setup_refuses_unknown_and_unsupported_arguments(master):
    with pytest.raises(TypeError):
        crescent.Store().setup(master_server_addr=master.addr, no_such_option=1)
    with pytest.raises(CrescentError) as ei:
        crescent.Store().setup(master_server_addr=master.addr, enable_ssd_offload=True)
    assert ei.value.name == "INVALID_PARAMS" and ei.value.mooncake_code == -600
    # A master without enable_offload refuses the disk of a client.
    with pytest.raises(CrescentError) as ei:
        crescent.Store().setup(master_server_addr=master.addr, enable_ssd_offload=True,
                               ssd_offload_path="/tmp")
    assert ei.value.name == "UNABLE_OFFLOAD"


def test_calls_on_a_closed_store_raise(master):
    st = make_store(master)
    st.close()
    with pytest.raises(CrescentError) as ei:
        st.put("k", b"v")
    assert ei.value.name == "UNAVAILABLE_IN_CURRENT_STATUS"


def test_missing_object_errors_carry_mooncake_names(store):
    for call in (lambda: store.get("nope"), lambda: store.get_size("nope"),
                 lambda: store.remove("nope")):
        with pytest.raises(CrescentError) as ei:
            call()
        e = ei.value
        assert (e.name, e.code, e.mooncake_code) == ("OBJECT_NOT_FOUND", -5704, -704)
        assert "OBJECT_NOT_FOUND" in e.message
    assert store.is_exist("nope") == 0
    assert crescent.error_name(-5704) == "OBJECT_NOT_FOUND"
    assert crescent.error_name(-4105) == "INVALID_PARAMS"
    assert crescent.error_name(-110) == "ETIMEDOUT"


def test_bad_keys(store):
    with pytest.raises(CrescentError) as ei:
        store.put("", b"v")
    assert ei.value.name == "INVALID_KEY" and ei.value.mooncake_code == -400
    with pytest.raises(ValueError):
        store.put("a\0b", b"v")
    with pytest.raises(TypeError):
        store.put(7, b"v")


# --- copying calls ------------------------------------------------------------------------


def test_put_get_every_buffer_kind(store):
    arr = pattern(100_000, 3)
    values = {"bytes": b"hello crescent", "bytearray": bytearray(b"\x00\xff" * 5000),
              "memoryview": memoryview(b"0123456789")[2:7], "numpy": arr,
              "numpy2d": np.arange(64, dtype=np.float32).reshape(8, 8)}
    for k, v in values.items():
        assert store.put(k, v) == 0
    for k, v in values.items():
        want = v.tobytes() if isinstance(v, np.ndarray) else bytes(v)
        assert store.get(k) == want, k
        assert store.get_size(k) == len(want), k
        assert store.is_exist(k) == 1
    got = np.frombuffer(store.get("numpy2d"), dtype=np.float32).reshape(8, 8)
    assert np.array_equal(got, values["numpy2d"])
    with pytest.raises(CrescentError) as ei:
        store.put("empty", b"")  # the master refuses empty objects
    assert ei.value.name == "INVALID_PARAMS"


def test_put_existing_raises_and_upsert_overwrites(store):
    store.put("k", b"one")
    with pytest.raises(CrescentError) as ei:
        store.put("k", b"two")
    assert (ei.value.name, ei.value.mooncake_code) == ("OBJECT_ALREADY_EXISTS", -705)
    assert store.upsert("k", b"three!") == 0
    assert store.get("k") == b"three!"
    assert store.upsert("new", b"x") == 0 and store.get("new") == b"x"


def test_put_parts_concatenates(store):
    assert store.put_parts("p", b"ab", bytearray(b"cd"), np.frombuffer(b"ef", np.uint8)) == 0
    assert store.get("p") == b"abcdef"


def test_noncontiguous_buffer_is_refused(store):
    with pytest.raises(TypeError):
        store.put("k", np.arange(16, dtype=np.uint8)[::2])


def test_put_batch_and_get_batch(store):
    keys = ["b%d" % i for i in range(10)]
    vals = [bytes([i]) * (i * 1000 + 1) for i in range(10)]
    assert store.put_batch(keys, vals) == 0
    got = store.get_batch(keys + ["missing"])
    assert got[:10] == vals and got[10] is None
    assert store.batch_is_exist(["b0", "missing", "b9"]) == [1, 0, 1]


def test_put_batch_failure_carries_per_key_results(store):
    store.put("dup", b"x")
    with pytest.raises(CrescentError) as ei:
        store.put_batch(["fresh", "dup"], [b"1", b"2"])
    assert ei.value.name == "OBJECT_ALREADY_EXISTS"
    assert ei.value.results == [0, -5705]
    assert store.get("fresh") == b"1" and store.get("dup") == b"x"


# --- zero-copy calls ----------------------------------------------------------------------


def test_zero_copy_put_from_get_into_numpy(store):
    buf = np.zeros(8 * MiB, dtype=np.uint8)
    assert store.register_buffer(buf) == 0
    src, dst = buf[:MiB], buf[4 * MiB:]
    src[:] = pattern(MiB, 11)
    before = store.metrics()
    assert store.put_from("zc", src) == 0
    dst[:MiB] = 0
    assert store.get_into("zc", dst) == MiB
    assert np.array_equal(dst[:MiB], src)
    after = store.metrics()
    # Nothing was staged: the bytes went between the numpy buffer and the peer over tcp.
    assert after["staging_bytes"] == before["staging_bytes"]
    assert after["read_bytes"]["tcp"] - before["read_bytes"]["tcp"] == MiB
    assert after["write_bytes"]["tcp"] - before["write_bytes"]["tcp"] == MiB
    assert store.unregister_buffer(buf) == 0


def test_mooncake_pointer_form(store):
    buf = np.zeros(2 * MiB, dtype=np.uint8)
    ptr = buf.ctypes.data
    store.register_buffer(ptr, buf.nbytes)
    buf[:1000] = pattern(1000, 5)
    assert store.put_from("ptr", ptr, 1000) == 0
    assert store.get_into("ptr", ptr + MiB, MiB) == 1000
    assert np.array_equal(buf[MiB:MiB + 1000], buf[:1000])
    assert store.upsert_from("ptr", ptr + 10, 20) == 0
    assert store.get("ptr") == buf[10:30].tobytes()
    store.unregister_buffer(ptr)


def test_get_into_errors(store):
    buf = np.zeros(MiB, dtype=np.uint8)
    store.register_buffer(buf)
    buf[:4096] = 1
    store.put_from("big", buf[:4096])
    with pytest.raises(CrescentError) as ei:
        store.get_into("big", buf[8192:8192 + 100])
    assert (ei.value.name, ei.value.mooncake_code) == ("BUFFER_OVERFLOW", -10)
    with pytest.raises(CrescentError) as ei:
        store.get_into("big", np.zeros(8192, dtype=np.uint8))  # not registered
    assert ei.value.name == "INVALID_PARAMS"
    with pytest.raises(CrescentError) as ei:
        store.get_into("absent", buf[8192:])
    assert ei.value.name == "OBJECT_NOT_FOUND"
    with pytest.raises(TypeError):
        store.get_into("big", b"read-only bytes")
    with pytest.raises(ValueError):
        store.get_into("big", buf[:10], 11)  # size beyond the buffer


def test_batch_put_from_and_batch_get_into(store):
    n, size = 8, 64 * 1024
    buf = np.zeros(2 * n * size, dtype=np.uint8)
    store.register_buffer(buf)
    srcs = [buf[i * size:(i + 1) * size] for i in range(n)]
    for i, s in enumerate(srcs):
        s[:] = pattern(size, i)
    keys = ["bz%d" % i for i in range(n)]
    assert store.batch_put_from(keys, srcs) == [0] * n
    dsts = [buf[(n + i) * size:(n + i + 1) * size] for i in range(n)]
    res = store.batch_get_into(keys + ["absent"], dsts + [buf[:16]])
    assert res == [size] * n + [-5704]
    for s, d in zip(srcs, dsts):
        assert np.array_equal(s, d)
    # Per-key failures come back in the list; sizes with int addresses (Mooncake's form).
    res = store.batch_put_from(["bz0", "bz-new"], [buf.ctypes.data, buf.ctypes.data + 16],
                               [16, 16])
    assert res == [-5705, 0]
    assert crescent.error_name(res[0]) == "OBJECT_ALREADY_EXISTS"
    assert store.get("bz-new") == buf[16:32].tobytes()


def test_torch_like_tensor_goes_through_data_ptr(store):
    """A torch CPU tensor is passed by data_ptr(); this stand-in has torch's duck type."""
    backing = np.zeros(MiB, dtype=np.float32)

    class Tensor:
        __module__ = "torch"

        class device:
            type = "cpu"

        def data_ptr(self):
            return backing.ctypes.data

        def numel(self):
            return backing.size

        def element_size(self):
            return backing.itemsize

        def is_contiguous(self):
            return True

    t = Tensor()
    store.register_buffer(t)
    backing[:] = np.arange(MiB, dtype=np.float32)
    assert store.put_from("tensor", t) == 0
    backing[:] = 0
    assert store.get_into("tensor", t) == 4 * MiB
    assert np.array_equal(backing, np.arange(MiB, dtype=np.float32))
    store.unregister_buffer(t)


def test_real_torch_tensor_when_installed(store):
    torch = pytest.importorskip("torch")
    t = torch.arange(1000, dtype=torch.int32)
    store.register_buffer(t)
    store.put_from("torch", t)
    u = torch.zeros(1000, dtype=torch.int32)
    store.register_buffer(u)
    assert store.get_into("torch", u) == 4000 and torch.equal(t, u)


def test_registered_bytearray_is_held(store):
    ba = bytearray(MiB)
    store.register_buffer(ba)
    with pytest.raises(BufferError):
        ba.extend(b"x")  # resizing would move memory the library holds
    store.unregister_buffer(ba)
    ba.extend(b"x")
    assert len(ba) == MiB + 1


# --- replicate configs, removal, replica clear --------------------------------------------


def test_replicate_config_two_replicas_on_distinct_segments(owning_store, peer):
    st = owning_store
    cfg = ReplicateConfig(replica_num=2)
    assert cfg.replica_num == 2 and "replica_num=2" in repr(cfg)
    st.put("two", b"x" * 5000, cfg)
    reps = st.get_replica_desc("two")
    assert len(reps) == 2
    assert {r["segment"] for r in reps} == {st.segment_names()[0], peer.segment}
    assert all(r["complete"] and r["is_memory"] and r["size"] == 5000 for r in reps)


def test_preferred_segments(owning_store, peer):
    st = owning_store
    for target in (peer.segment, st.segment_names()[0]):
        key = "pref-" + target
        st.put(key, b"v", ReplicateConfig(preferred_segments=[target]))
        assert [r["segment"] for r in st.get_replica_desc(key)] == [target]
    st.put("pref-old", b"v", ReplicateConfig(preferred_segment=peer.segment))
    assert [r["segment"] for r in st.get_replica_desc("pref-old")] == [peer.segment]


def test_hard_pin_needs_force_to_remove(store):
    store.put("pinned", b"v", ReplicateConfig(with_hard_pin=True))
    with pytest.raises(CrescentError) as ei:
        store.remove("pinned")
    assert (ei.value.name, ei.value.mooncake_code) == ("OBJECT_HAS_LEASE", -706)
    assert store.remove("pinned", force=True) == 0
    assert store.is_exist("pinned") == 0


def test_soft_pin_is_accepted(store):
    store.put("soft", b"v", ReplicateConfig(with_soft_pin=True, soft_pin_ttl_ms=60000))
    assert store.get("soft") == b"v"


def test_bad_replica_num(store):
    with pytest.raises(CrescentError) as ei:
        store.put("r9", b"v", ReplicateConfig(replica_num=9))
    assert ei.value.name == "INVALID_PARAMS"
    with pytest.raises(TypeError):
        store.put("r", b"v", {"replica_num": 2})


def test_read_lease_blocks_remove_until_it_expires(store):
    store.put("leased", b"v")
    assert store.get("leased") == b"v"  # grants a read lease
    with pytest.raises(CrescentError) as ei:
        store.remove("leased")
    assert ei.value.name == "OBJECT_HAS_LEASE"
    deadline = time.monotonic() + 10 * LEASE_MS / 1000
    while True:
        try:
            assert store.remove("leased") == 0
            break
        except CrescentError as e:
            assert e.name == "OBJECT_HAS_LEASE" and time.monotonic() < deadline
            time.sleep(0.1)


def test_remove_by_regex_and_remove_all(store):
    for k in ("layer0/a", "layer0/b", "layer1/a", "other"):
        store.put(k, b"v")
    assert store.remove_by_regex("^layer0/") == 2
    assert store.batch_is_exist(["layer0/a", "layer0/b", "layer1/a"]) == [0, 0, 1]
    with pytest.raises(CrescentError) as ei:
        store.remove_by_regex("(")
    assert ei.value.name == "INVALID_PARAMS"
    assert store.remove_all(force=True) == 2
    assert store.is_exist("other") == 0


def test_batch_replica_clear(owning_store, peer):
    st = owning_store
    mine = st.segment_names()[0]
    st.put("here", b"v", ReplicateConfig(preferred_segments=[mine]))
    st.put("there", b"v", ReplicateConfig(preferred_segments=[peer.segment]))
    assert st.batch_replica_clear(["here", "there"]) == [1, 0]
    assert st.is_exist("here") == 0 and st.get("there") == b"v"
    st.put("here2", b"v", ReplicateConfig(preferred_segments=[mine]))
    with pytest.raises(CrescentError) as ei:
        st.batch_replica_clear(["here2"], "no-such-segment")
    assert ei.value.name == "SEGMENT_NOT_FOUND"
    assert st.batch_replica_clear(["here2"], mine) == [1]


def test_mount_segment_of_caller_memory(store, peer):
    pool = np.zeros(8 * MiB, dtype=np.uint8)
    name = store.mount_segment(pool, name="py-pool")
    assert name == "py-pool" and store.segment_names() == ["py-pool"]
    store.put("on-mine", b"abc" * 100, ReplicateConfig(preferred_segments=["py-pool"]))
    rep = store.get_replica_desc("on-mine")[0]
    assert rep["segment"] == "py-pool"
    off = rep["addr"] - pool.ctypes.data
    assert 0 <= off < pool.nbytes and pool[off:off + 300].tobytes() == b"abc" * 100
    auto = store.mount_segment(size=4 * MiB)
    assert auto == store.client_id + "-1" and store.segment_names() == ["py-pool", auto]
    with pytest.raises(CrescentError) as ei:
        store.mount_segment(pool, name="again")  # overlaps the first registration
    assert ei.value.code < 0
    assert store.unmount_segment("py-pool") == 0
    assert store.is_exist("on-mine") == 0  # its replica went with the segment
    with pytest.raises(CrescentError) as ei:
        store.unmount_segment("py-pool")
    assert ei.value.name == "SEGMENT_NOT_FOUND"
    store.unmount_segment(auto)


# --- threads, library lookup --------------------------------------------------------------


def test_threads_share_one_store(store):
    buf = np.zeros(8 * 128 * 1024, dtype=np.uint8)
    store.register_buffer(buf)
    errors = []

    def worker(t):
        try:
            mine = buf[t * 128 * 1024:(t + 1) * 128 * 1024]
            src, dst = mine[:64 * 1024], mine[64 * 1024:]
            for i in range(20):
                src[:] = pattern(64 * 1024, t * 100 + i)
                key = "t%d-%d" % (t, i)
                store.put_from(key, src)
                assert store.get_into(key, dst) == 64 * 1024
                assert np.array_equal(src, dst)
                assert store.get(key) == src.tobytes()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _import_in_child(env):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), **env)
    return subprocess.run([sys.executable, "-c", "import crescent; print(crescent.LIB_PATH)"],
                          env=env, capture_output=True, text=True)


def test_library_lookup_honours_crescent_lib():
    lib = os.path.join(BUILD, "lib", "libcrescent.so.0")
    r = _import_in_child({"CRESCENT_LIB": lib})
    assert r.returncode == 0 and r.stdout.strip() == lib
    r = _import_in_child({"CRESCENT_LIB": "/nonexistent/libcrescent.so"})
    assert r.returncode != 0 and "CRESCENT_LIB" in r.stderr and "ImportError" in r.stderr


def test_library_lookup_finds_the_build_tree():
    want = os.path.join(ROOT, "build", "lib", "libcrescent.so.0")
    if not os.path.exists(want):
        pytest.skip("no build/ tree in the checkout")
    env = {k: v for k, v in os.environ.items() if k != "CRESCENT_LIB"}
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    r = subprocess.run([sys.executable, "-c", "import crescent; print(crescent.LIB_PATH)"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == want
    assert ctypes.CDLL(r.stdout.strip()) is not None
