"""The judge's protocol with the runner: framed messages over two pipes, parsed with no code
execution (no pickle), with deadlines on both directions.

A frame is ``MAGIC``, a 4-byte header length, an 8-byte payload length, a JSON header and
the payload. The header names the message (``type``), its request ``id`` and, under
``tensors``, the dtype, shape and byte range in the payload of each tensor it carries.
Everything the runner sends is evidence: the judge checks the framing, the ids, the sizes and
the dtypes, and any violation is a ``ProtocolError`` that fails the candidate.
"""
from __future__ import annotations

import json
import os
import select
import struct
import threading
import time
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

MAGIC = b"KBV2"
_PREFIX = struct.Struct("<4sIQ")
MAX_HEADER_BYTES = 8 << 20
DEFAULT_MAX_PAYLOAD_BYTES = 8 << 30
DTYPES = {name: getattr(torch, name) for name in (
    "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
    "complex64", "complex128")}
_NAMES = {dtype: name for name, dtype in DTYPES.items()}


class ProtocolError(Exception):
    """The other side broke the protocol (malformed, oversized, late or unexpected message)."""


class ChannelClosed(ProtocolError):
    """The other side closed its end (it exited or died)."""


def encode_tensor(t: torch.Tensor) -> tuple[dict[str, Any], bytes]:
    """(header entry, bytes) of a plain CPU copy of ``t``."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("not a tensor: %s" % type(t).__name__)
    t = t.detach().to("cpu").contiguous()
    if t.dtype not in _NAMES:
        raise TypeError("dtype %s cannot travel" % t.dtype)
    data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return {"dtype": _NAMES[t.dtype], "shape": list(t.shape)}, data


def decode_tensor(entry: Any, payload: bytes | bytearray, offset: int) -> tuple[torch.Tensor, int]:
    """A tensor from a header entry and the payload, checking every field."""
    if not isinstance(entry, dict) or entry.get("dtype") not in DTYPES:
        raise ProtocolError("tensor entry without a known dtype: %r" % (entry,))
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1 << 40
                                              for n in shape) or len(shape) > 16:
        raise ProtocolError("bad tensor shape %r" % (shape,))
    dtype = DTYPES[entry["dtype"]]
    numel = 1
    for n in shape:
        numel *= n
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    if offset + nbytes > len(payload):
        raise ProtocolError("tensor of %d bytes runs past the payload (%d bytes)" % (nbytes, len(payload)))
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype), offset
    raw = torch.frombuffer(payload, dtype=torch.uint8, count=nbytes, offset=offset).clone()
    return raw.view(dtype).reshape(shape), offset + nbytes


class Channel:
    """One end: ``send`` writes a frame, ``recv`` reads exactly one, each within a deadline."""

    def __init__(self, read_fd: int, write_fd: int, max_payload: int = DEFAULT_MAX_PAYLOAD_BYTES,
                 nonblocking: bool = False) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        if nonblocking:  # the judge's end: a stalled runner can never block it past a deadline
            os.set_blocking(read_fd, False)
            os.set_blocking(write_fd, False)
        self.max_payload = max_payload
        self.bytes_in = self.bytes_out = 0

    def send(self, header: dict[str, Any], tensors: Iterable[torch.Tensor] = (), timeout: float | None = None,
             values: Any = None) -> None:
        """``tensors``: a list of tensors; ``values``: JSON values riding along in the header."""
        entries, chunks = [], []
        for t in tensors:
            entry, data = encode_tensor(t)
            entries.append(entry)
            chunks.append(data)
        header = dict(header, tensors=entries)
        if values is not None:
            header["values"] = values
        head = json.dumps(header, allow_nan=True).encode()
        payload_len = sum(len(c) for c in chunks)
        deadline = None if timeout is None else time.monotonic() + timeout
        self._write(_PREFIX.pack(MAGIC, len(head), payload_len) + head, deadline)
        for data in chunks:
            self._write(data, deadline)

    def recv(self, timeout: float | None = None) -> tuple[dict[str, Any], list[torch.Tensor]]:
        """(header dict, list of tensors)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        magic, head_len, payload_len = _PREFIX.unpack(self._read(_PREFIX.size, deadline))
        if magic != MAGIC:
            raise ProtocolError("frame does not start with %r: %r" % (MAGIC, magic))
        if head_len > MAX_HEADER_BYTES:
            raise ProtocolError("header of %d bytes is over the limit" % head_len)
        if payload_len > self.max_payload:
            raise ProtocolError("payload of %d bytes is over the limit of %d" % (payload_len, self.max_payload))
        try:
            header = json.loads(self._read(head_len, deadline).decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProtocolError("header is not JSON: %s" % exc) from None
        if not isinstance(header, dict) or not isinstance(header.get("type"), str):
            raise ProtocolError("header is not an object with a type")
        payload = bytearray(self._read(payload_len, deadline)) if payload_len else bytearray()
        entries = header.get("tensors", [])
        if not isinstance(entries, list):
            raise ProtocolError("tensors is not a list")
        tensors, offset = [], 0
        for entry in entries:
            t, offset = decode_tensor(entry, payload, offset)
            tensors.append(t)
        if offset != len(payload):
            raise ProtocolError("%d payload bytes not described by the header" % (len(payload) - offset))
        return header, tensors

    def pending(self) -> bool:
        """True when bytes are waiting to be read (an unsolicited message)."""
        ready, _, _ = select.select([self.read_fd], [], [], 0)
        return bool(ready)

    def _wait(self, fd, for_write, deadline):
        if deadline is None:
            select.select([], [fd], []) if for_write else select.select([fd], [], [])
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no answer in time")
        ready = select.select([], [fd], [], left) if for_write else select.select([fd], [], [], left)
        if not (ready[1] if for_write else ready[0]):
            raise TimeoutError("no answer in time")

    def _read(self, n, deadline):
        buf = bytearray()
        while len(buf) < n:
            self._wait(self.read_fd, False, deadline)
            try:
                chunk = os.read(self.read_fd, min(n - len(buf), 1 << 24))
            except BlockingIOError:  # a non-blocking end woken with nothing to read yet
                continue
            if not chunk:
                raise ChannelClosed("the other end closed the channel after %d of %d bytes" % (len(buf), n))
            buf += chunk
        self.bytes_in += n
        return bytes(buf)

    def _write(self, data, deadline):
        view = memoryview(data)
        while view:
            self._wait(self.write_fd, True, deadline)
            try:
                written = os.write(self.write_fd, view[:1 << 20])
            except BlockingIOError:  # the pipe is full: wait for room, within the deadline
                continue
            except BrokenPipeError:
                raise ChannelClosed("the other end closed the channel") from None
            view = view[written:]
        self.bytes_out += len(data)


def round_trip_ms(seeds: list[int], batch: int) -> float:
    """What a batch's request and answer cost on the channel, measured by the judge alone (a
    thread of its own echoing over a pipe pair): the runner cannot inflate it to hide time."""
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    near, far = Channel(a_read, a_write), Channel(b_read, b_write)
    answer = {"ms": [0.5] * batch, "host_ms": [0.5] * batch, "fingerprints": [[123.456]] * batch,
              "flags": [{"name": "x", "blocking": False, "evidence": "y" * 200}]}

    def echo():
        for _ in range(7):
            header, _ = far.recv()
            far.send({"type": "batch", "id": header["id"]}, values=answer)

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    times = []
    try:
        for i in range(7):
            t0 = time.perf_counter()
            near.send({"type": "batch", "id": i}, values={"calls": seeds})
            near.recv()
            times.append((time.perf_counter() - t0) * 1e3)
    finally:
        thread.join(5)
        for fd in (a_read, a_write, b_read, b_write):
            os.close(fd)
    return min(times)
