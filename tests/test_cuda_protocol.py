"""The messages between the grader and its GPU worker (grader.backends.cuda.protocol),
which run without a GPU: frames, launches and the pipe they cross."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from grader.backends.cuda import protocol
from grader.model.launch import Buffer, Drawn, Launch, Repeated, Scalar


def test_message_round_trip_keeps_dtypes_and_shapes():
    arrays = [
        np.arange(10, dtype=np.float32),
        np.array([[1, 2], [3, 4]], np.int64),
        np.zeros(0, np.float32),
    ]
    message = protocol.Message({"op": "run", "nested": {"a": [1, 2]}}, arrays)
    data = protocol.encode(message)
    head_len, payload_len = protocol._FRAME.unpack(data[: protocol._FRAME.size])
    body = data[protocol._FRAME.size :]
    back = protocol.decode(body[:head_len], body[head_len : head_len + payload_len])
    assert back.header == {"op": "run", "nested": {"a": [1, 2]}}
    for got, want in zip(back.arrays, arrays, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_large_message_crosses_a_pipe():
    read_fd, write_fd = os.pipe()
    big = np.random.default_rng(0).random(3_000_000).astype(np.float32)
    sender = threading.Thread(
        target=protocol.send, args=(write_fd, protocol.Message({"n": 1}, [big]))
    )
    sender.start()
    got = protocol.receive(read_fd, time.monotonic() + 30)
    sender.join()
    os.close(read_fd)
    os.close(write_fd)
    np.testing.assert_array_equal(got.arrays[0], big)


def test_a_load_request_s_cubin_crosses_whole():
    """The worker loads the bytes ModuleSpec.load_request sends (worker.op_load)."""
    from grader.backends.cuda.backend import ModuleSpec

    cubin = b"\x7fELF" + bytes(range(256)) * 41 + b"\x00"  # an odd length, every byte value
    header, arrays = ModuleSpec("k", cubin, "sm_90", "nvcc", ("x",)).load_request()
    read_fd, write_fd = os.pipe()
    try:
        protocol.send(write_fd, protocol.Message(header, arrays))
        got = protocol.receive(read_fd, time.monotonic() + 30)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert got.header["key"] == "k" and got.arrays[0].tobytes() == cubin


def test_received_arrays_are_writable_aligned_and_share_no_memory_with_the_sender():
    """Arrays cross without copies on either side (a timing's sparse structure is 44 MB),
    yet each received one is the grader's own: writable, aligned to its type (one after
    an odd number of bytes is copied), apart from the others and from what was sent."""
    read_fd, write_fd = os.pipe()
    odd = np.arange(7, dtype=np.uint8)
    values = np.arange(1000, dtype=np.float32)[::2]  # not contiguous: sent as a copy
    ints = np.arange(5, dtype=np.int64)
    sender = threading.Thread(
        target=protocol.send, args=(write_fd, protocol.Message({}, [odd, values, ints]))
    )
    sender.start()
    got = protocol.receive(read_fd, time.monotonic() + 30)
    sender.join()
    os.close(read_fd)
    os.close(write_fd)
    for back, sent in zip(got.arrays, [odd, values, ints], strict=True):
        np.testing.assert_array_equal(back, sent)
        assert back.flags.writeable and back.flags.aligned and back.dtype == sent.dtype
        assert not np.shares_memory(back, sent)
    got.arrays[1][:] = -1
    assert (got.arrays[2] == ints).all() and (values >= 0).all()


def test_receive_times_out_and_notices_a_closed_pipe():
    read_fd, write_fd = os.pipe()
    with pytest.raises(protocol.ChannelTimeout):
        protocol.receive(read_fd, time.monotonic() + 0.1)
    os.close(write_fd)
    with pytest.raises(protocol.ChannelClosed):
        protocol.receive(read_fd, time.monotonic() + 1)
    os.close(read_fd)


def test_a_reply_s_deadline_starts_again_once_the_worker_holds_the_gate():
    """Another process's kernel may hold a batch's gate for longer than this request's
    whole deadline (a hung one): the wait there is not the request's, so it never times
    it out; a request that names no gate gets no such wait."""

    def worker(write_fd: int, gated: bool) -> None:
        time.sleep(1.3)  # waiting at the gate, longer than the request's timeout
        if gated:
            protocol.send(write_fd, protocol.Message({protocol.GATE_TAKEN: True}))
        time.sleep(0.6)  # the request's own work
        protocol.send(write_fd, protocol.Message({"ok": True}))

    for gated in (True, False):
        read_fd, write_fd = os.pipe()
        answering = threading.Thread(target=worker, args=(write_fd, gated))
        answering.start()
        try:
            if gated:
                reply = protocol.receive_reply(read_fd, timeout=1.0, gated=True)
                assert reply.header == {"ok": True}
            else:
                with pytest.raises(protocol.ChannelTimeout):
                    protocol.receive_reply(read_fd, timeout=1.0)
        finally:
            answering.join()
            os.close(read_fd)
            os.close(write_fd)


def test_send_to_a_closed_pipe_raises_channel_closed():
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    with pytest.raises(protocol.ChannelClosed):
        protocol.send(write_fd, protocol.Message({"op": "exit"}))
    os.close(write_fd)


def _launch(m: np.ndarray, n: np.ndarray) -> Launch:
    return Launch(
        "matmul",
        (2, 3, 1),
        (16, 16, 1),
        128,
        [
            Buffer("M", m, False),
            Buffer("N", n, False),
            Buffer("P", np.zeros(4, np.float32), True),
            Scalar("Width", "int", 2),
            Scalar("pitch", "size_t", 1 << 40),
        ],
        {"Mc": np.ones(9, np.float32)},
    )


def test_launch_round_trip_and_shared_inputs_cross_once():
    m, n = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    table = protocol.ArrayTable()
    first = protocol.encode_launch(_launch(m, n), ["_Z6matmulPKfS0_Pfi"], table)
    second = protocol.encode_launch(_launch(m, n), ["_Z6matmulPKfS0_Pfi"], table)
    # M and N are the same objects in both launches; P and Mc are new arrays each time.
    assert len(table.arrays) == 2 + 2 + 2
    assert first["steps"][0]["args"][0]["array"] == second["steps"][0]["args"][0]["array"]
    launch, symbols = protocol.decode_launch(second, table.arrays)
    assert symbols == ["_Z6matmulPKfS0_Pfi"]
    assert (launch.grid, launch.block, launch.shared_bytes) == ((2, 3, 1), (16, 16, 1), 128)
    assert [b.name for b in launch.buffers()] == ["M", "N", "P"]
    assert [b.output for b in launch.buffers()] == [False, False, True]
    np.testing.assert_array_equal(launch.buffers()[0].data, m)
    scalars = [a for a in launch.args if isinstance(a, Scalar)]
    values = [protocol.scalar_value(s) for s in scalars]
    assert [v.dtype for v in values] == [np.int32, np.uint64]
    assert int(values[1]) == 1 << 40
    np.testing.assert_array_equal(launch.constants["Mc"], np.ones(9))


def test_repeated_buffers_send_only_their_pattern():
    pattern = np.arange(3, dtype=np.float32)
    launch = _launch(np.ones(4, np.float32), np.ones(4, np.float32))
    launch.args[0] = Buffer("M", Repeated(pattern, 1 << 28), False)
    table = protocol.ArrayTable()
    spec = protocol.encode_launch(launch, ["matmul"], table)
    assert sum(a.size for a in table.arrays) == 3 + 4 + 4 + 9
    back, _ = protocol.decode_launch(spec, table.arrays)
    m = back.buffers()[0].data
    assert isinstance(m, Repeated) and m.size == 1 << 28
    np.testing.assert_array_equal(m.pattern, pattern)


def test_drawn_buffers_send_only_their_size():
    launch = _launch(np.ones(4, np.float32), np.ones(4, np.float32))
    launch.args[0] = Buffer("M", Drawn(1 << 30), False)
    table = protocol.ArrayTable()
    spec = protocol.encode_launch(launch, ["matmul"], table)
    assert sum(a.size for a in table.arrays) == 4 + 4 + 9
    back, _ = protocol.decode_launch(spec, table.arrays)
    assert back.buffers()[0].data == Drawn(1 << 30)
    assert [b.name for b in back.buffers()] == ["M", "N", "P"]


def test_unknown_scalar_type_is_refused():
    launch = _launch(np.ones(4, np.float32), np.ones(4, np.float32))
    launch.args[3] = Scalar("Width", "double", 2)
    with pytest.raises(ValueError, match="double"):
        protocol.encode_launch(launch, ["matmul"], protocol.ArrayTable())
