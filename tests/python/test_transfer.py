# SPDX-License-Identifier: Apache-2.0
"""crescent.TransferEngine: two engines in this process, one exposing numpy memory and one
reading and writing it over tcp and shm, by "host:port" and by descriptor bytes; batches;
shared (memfd) buffers; the errors of a refused request, an unreachable peer and a bad listen
address."""

import numpy as np
import pytest

import crescent
from crescent import CrescentError
from conftest import free_port


@pytest.fixture
def pair():
    target, initiator = crescent.TransferEngine(), crescent.TransferEngine()
    target.initialize("127.0.0.1")
    initiator.initialize("127.0.0.1")
    yield target, initiator
    initiator.close()
    target.close()


def test_read_and_write_by_host_port(pair):
    target, initiator = pair
    remote = np.arange(1 << 16, dtype=np.uint32).view(np.uint8)
    local = np.zeros(1 << 18, dtype=np.uint8)
    assert target.register_memory(remote) == 0
    assert initiator.register_memory(local) == 0
    peer = target.get_local_addr()
    assert peer.startswith("127.0.0.1:") and target.get_rpc_port() == int(peer.split(":")[1])
    base = initiator.get_first_buffer_address(peer)
    assert base == remote.ctypes.data
    assert initiator.transfer_sync_read(peer, local[:4096], base + 4096) == 0
    assert np.array_equal(local[:4096], remote[4096:8192])
    local[:100] = 0xAB
    assert initiator.transfer_sync_write(peer, local, base, 100) == 0
    assert (remote[:100] == 0xAB).all() and remote[100] == 25  # 25 = low byte of word 25
    seg = initiator.open_segment(peer)
    assert seg.transport == "tcp" and seg.buffers() == [(base, remote.nbytes)]
    seg.close()


def test_batches_and_descriptors(pair):
    target, initiator = pair
    remote = np.zeros(1 << 20, dtype=np.uint8)
    local = np.zeros(1 << 20, dtype=np.uint8)
    target.register_memory(remote)
    initiator.register_memory(local)
    desc = target.export_desc()
    assert desc == crescent.TransferEngine.fetch_desc(target.get_local_addr())
    seg = initiator.open_segment(desc)
    base = seg.buffers()[0][0]
    parts = [local[i * 1000:(i + 1) * 1000] for i in range(8)]
    for i, p in enumerate(parts):
        p[:] = i + 1
    assert initiator.batch_transfer_sync_write(seg, parts, [base + i * 4096 for i in range(8)]) == 0
    for i in range(8):
        assert (remote[i * 4096:i * 4096 + 1000] == i + 1).all()
        assert (remote[i * 4096 + 1000:(i + 1) * 4096] == 0).all()
    back = local[1 << 19:]
    assert initiator.batch_transfer_sync_read(seg, [back[:1000], back[1000:2000]],
                                              [base + 4096 * 7, base], [1000, 1000]) == 0
    assert (back[:1000] == 8).all() and (back[1000:2000] == 1).all()
    seg.close()


def test_shm_between_same_host_engines():
    a, b = crescent.TransferEngine(), crescent.TransferEngine()
    a.initialize("127.0.0.1", protocol="shm")
    b.initialize("127.0.0.1", protocol="shm")
    try:
        p = a.allocate_managed_buffer(1 << 20)
        a.register_memory(p, 1 << 20)
        local = np.full(1 << 16, 7, dtype=np.uint8)
        b.register_memory(local)
        seg = b.open_segment(a.get_local_addr())
        assert seg.transport == "shm"
        b.transfer_sync_write(seg, local, p + 100)
        local[:] = 0
        b.transfer_sync_read(seg, local, p + 100)
        assert (local == 7).all()
        seg.close()
        a.unregister_memory(p)
        assert a.free_managed_buffer(p) == 0
    finally:
        b.close()
        a.close()


def test_out_of_range_request_fails_with_its_index(pair):
    target, initiator = pair
    remote = np.zeros(4096, dtype=np.uint8)
    local = np.zeros(8192, dtype=np.uint8)
    target.register_memory(remote)
    initiator.register_memory(local)
    peer = target.get_local_addr()
    base = initiator.get_first_buffer_address(peer)
    with pytest.raises(CrescentError) as ei:
        initiator.batch_transfer_sync_read(peer, [local[:10], local[10:110]], [base, base + 4090])
    e = ei.value
    assert e.name == "TRANSFER_FAIL" and e.failed == [1]
    assert "INVALID" in e.message and "INVALID_PARAMS" in e.message


def test_unreachable_peer_and_bad_arguments():
    eng = crescent.TransferEngine()
    eng.initialize("127.0.0.1", handshake_timeout_ms=2000)
    try:
        with pytest.raises(CrescentError) as ei:
            eng.open_segment("127.0.0.1:%d" % free_port())
        assert ei.value.name == "ECONNREFUSED" and "127.0.0.1" in ei.value.message
        with pytest.raises(CrescentError) as ei:
            eng.open_segment(b"not a descriptor")
        assert ei.value.name in ("CORRUPT", "EINVAL")
        with pytest.raises(CrescentError) as ei:
            eng.install("no-such-transport")
        assert ei.value.code < 0
        with pytest.raises(CrescentError) as ei:
            eng.unregister_memory(12345)
        assert ei.value.name == "ENOENT"
    finally:
        eng.close()
    with pytest.raises(CrescentError) as ei:
        crescent.TransferEngine().initialize("256.0.0.1:99999")
    assert ei.value.op == "initialize"
    with pytest.raises(CrescentError) as ei:
        eng.get_local_addr()
    assert ei.value.name == "UNAVAILABLE_IN_CURRENT_STATUS"
