"""One Kafka request on a raw socket: ApiVersions v0, the smallest request every Kafka
version answers on any listener. A SIGSTOPped broker still accepts connections (the kernel
does), so only a complete reply counts as an answer. Used by the external backend to see a
fault act, and by the link faults to measure a degraded route."""

from __future__ import annotations

import socket
import struct

CORRELATION_ID = 0
API_VERSIONS = struct.pack(">hhih", 18, 0, CORRELATION_ID, 8) + b"kreplica"  # key 18, v0
FRAME = struct.pack(">i", len(API_VERSIONS)) + API_VERSIONS


def connect(host: str, port: int, timeout: float) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionResetError("connection closed by the other end")
        buf += chunk
    return bytes(buf)


def read_frame(sock: socket.socket) -> bytes:
    """One size-prefixed response: its body."""
    size = struct.unpack(">i", read_exact(sock, 4))[0]
    return read_exact(sock, size)


def answers(host: str, port: int, wait: float = 2.0) -> bool:
    """Whether ``host:port`` sends a complete ApiVersions reply (our correlation id) within
    ``wait`` seconds."""
    try:
        with connect(host, port, wait) as sock:
            sock.settimeout(wait)
            sock.sendall(FRAME)
            body = read_frame(sock)
    except OSError:
        return False
    return len(body) >= 4 and struct.unpack(">i", body[:4])[0] == CORRELATION_ID


def api_versions(host: str, port: int, wait: float = 5.0) -> dict[int, tuple[int, int]]:
    """The ApiVersions v0 answer: api key -> (min version, max version); raises OSError when
    the node does not answer, ValueError when it answers with an error code."""
    with connect(host, port, wait) as sock:
        sock.settimeout(wait)
        sock.sendall(FRAME)
        body = read_frame(sock)
    error, count = struct.unpack(">hi", body[4:10])
    if error:
        raise ValueError(f"ApiVersions error code {error}")
    return {key: (low, high) for key, low, high in
            (struct.unpack(">hhh", body[10 + 6 * i:16 + 6 * i]) for i in range(count))}
