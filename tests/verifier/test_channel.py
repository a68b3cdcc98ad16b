"""The judge's channel: what the runner sends is parsed with no code execution, and every way
to break the framing is a ProtocolError, a closed channel or a timeout, never a hang."""
import os
import struct
import threading

import pytest
import torch

from verifier.core.channel import MAGIC, Channel, ChannelClosed, ProtocolError


@pytest.fixture
def pair():
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    judge = Channel(a_read, a_write, nonblocking=True)
    runner = Channel(b_read, b_write)
    yield judge, runner, b_write
    for fd in (a_read, a_write, b_read, b_write):
        try:
            os.close(fd)
        except OSError:
            pass


def test_tensors_and_values_round_trip(pair):
    judge, runner, _ = pair
    tensors = [torch.randn(3, 4), torch.arange(5, dtype=torch.int64), torch.randn(2, dtype=torch.bfloat16),
               torch.empty(0, 7), torch.tensor([True, False]), torch.randn(2, 3).t()]
    runner.send({"type": "trial", "id": 7}, tensors, values={"seed": 3, "nested": [1, None, "x"]})
    header, got = judge.recv(timeout=5)
    assert header["type"] == "trial" and header["id"] == 7 and header["values"]["nested"] == [1, None, "x"]
    for want, have in zip(tensors, got):
        assert have.dtype == want.dtype and have.shape == want.shape and torch.equal(have, want.contiguous())


def test_a_large_payload_passes_both_ways_within_its_deadline(pair):
    judge, runner, _ = pair
    big = torch.randn(4 << 20)  # 16 MiB: far more than a pipe holds, so both sides must interleave
    reader = threading.Thread(target=lambda: got.append(runner.recv()))
    got = []
    reader.start()
    judge.send({"type": "batch", "id": 1}, [big], timeout=30)
    reader.join(30)
    assert torch.equal(got[0][1][0], big)


@pytest.mark.parametrize("frame, message", [
    (b"EVIL" + struct.pack("<IQ", 2, 0) + b"{}", "does not start"),
    (MAGIC + struct.pack("<IQ", 64 << 20, 0), "over the limit"),
    (MAGIC + struct.pack("<IQ", 9, 0) + b"not json!", "not JSON"),
    (MAGIC + struct.pack("<IQ", 2, 0) + b"[]", "object with a type"),
    (MAGIC + struct.pack("<IQ", 2, 1 << 40), "over the limit"),
])
def test_malformed_frames_are_protocol_errors(pair, frame, message):
    judge, _, runner_write = pair
    os.write(runner_write, frame)
    with pytest.raises(ProtocolError, match=message):
        judge.recv(timeout=5)


def test_tensor_entries_are_checked_against_the_payload(pair):
    judge, _, runner_write = pair
    for entry, payload, message in (
            ({"dtype": "object", "shape": [1]}, b"", "known dtype"),
            ({"dtype": "float32", "shape": [-1]}, b"", "bad tensor shape"),
            ({"dtype": "float32", "shape": [4]}, b"\0" * 8, "runs past the payload"),
            ({"dtype": "float32", "shape": [1]}, b"\0" * 8, "not described")):
        head = ('{"type": "trial", "id": 1, "tensors": [%s]}' % str(entry).replace("'", '"')).encode()
        os.write(runner_write, MAGIC + struct.pack("<IQ", len(head), len(payload)) + head + payload)
        with pytest.raises(ProtocolError, match=message):
            judge.recv(timeout=5)


def test_silence_is_a_timeout_and_a_closed_end_is_reported(pair):
    judge, _, runner_write = pair
    with pytest.raises(TimeoutError):
        judge.recv(timeout=0.2)
    os.write(runner_write, MAGIC[:2])
    os.close(runner_write)
    with pytest.raises(ChannelClosed):
        judge.recv(timeout=5)


def test_a_runner_that_never_reads_cannot_block_the_judge(pair):
    judge, _, _ = pair
    with pytest.raises(TimeoutError):
        judge.send({"type": "timing_setup", "id": 1}, [torch.zeros(8 << 20)], timeout=0.5)
