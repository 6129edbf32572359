"""Plain-TCP parameter server: the second baseline (kernel reliability, no tags, no loss).

Same interface as collectives.PSServer/PSWorker (``step`` returns CommStats), so every experiment
can run the identical workload over TCP; ``TcpRing`` is the TCP twin of the ring all-reduce. Framing per tensor: ``!HHI`` (tensor id, worker id,
payload bytes) then the raw float32 bytes; parameters come back the same way.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from host_agent.collectives import CommStats
from host_agent.errors import TransportError

FRAME = struct.Struct("!HHI")


def recv_exact(sock: socket.socket, buf: memoryview) -> None:
    got = 0
    while got < len(buf):
        n = sock.recv_into(buf[got:])
        if n == 0:
            raise TransportError("TCP peer closed the connection")
        got += n


def send_tensor(sock: socket.socket, tid: int, wid: int, arr: np.ndarray) -> int:
    data = np.ascontiguousarray(arr, np.float32)
    sock.sendall(FRAME.pack(tid, wid, data.nbytes))
    sock.sendall(memoryview(data).cast("B"))
    return FRAME.size + data.nbytes


def recv_tensor(sock: socket.socket, out: np.ndarray) -> tuple[int, int]:
    head = bytearray(FRAME.size)
    recv_exact(sock, memoryview(head))
    tid, wid, nbytes = FRAME.unpack(head)
    if nbytes != out.nbytes:
        raise TransportError(f"TCP frame of {nbytes} bytes for a tensor of {out.nbytes}")
    recv_exact(sock, memoryview(out.reshape(-1)).cast("B"))
    return tid, wid


class TcpPSServer:
    """Accepts ``n_workers`` connections on ``bind``; ``step`` sums, updates, sends parameters."""

    def __init__(self, bind: tuple[str, int], shapes: Sequence[tuple[int, ...]], n_workers: int,
                 update: Callable[[int, np.ndarray], np.ndarray] | None = None) -> None:
        self.shapes, self.n_workers = list(shapes), n_workers
        self.update = update or (lambda tid, s: s)
        self.listener = socket.create_server(bind)
        self.conns: list[socket.socket] = []
        self.last_sum: list[np.ndarray] = []

    @property
    def address(self) -> tuple[str, int]:
        return self.listener.getsockname()

    def accept_all(self, timeout: float = 30.0) -> None:
        self.listener.settimeout(timeout)
        while len(self.conns) < self.n_workers:
            conn, _ = self.listener.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns.append(conn)

    def step(self, iteration: int) -> CommStats:
        if len(self.conns) < self.n_workers:
            self.accept_all()
        t0 = time.perf_counter()
        stats = CommStats()
        sums = [np.zeros(s, np.float32) for s in self.shapes]
        buf = [np.empty(s, np.float32) for s in self.shapes]
        for conn in self.conns:
            for _ in self.shapes:
                probe = bytearray(FRAME.size)
                recv_exact(conn, memoryview(probe))
                tid, _wid, nbytes = FRAME.unpack(probe)
                if tid >= len(self.shapes) or nbytes != buf[tid].nbytes:
                    raise TransportError(f"TCP frame for unknown tensor {tid} ({nbytes} bytes)")
                recv_exact(conn, memoryview(buf[tid].reshape(-1)).cast("B"))
                sums[tid] += buf[tid]
        self.last_sum = sums
        params = [self.update(tid, s) for tid, s in enumerate(sums)]
        for conn in self.conns:
            for tid, p in enumerate(params):
                stats.bytes_sent += send_tensor(conn, tid, 0xFFFF, p)
        stats.seconds = time.perf_counter() - t0
        return stats

    def close(self) -> None:
        for c in self.conns:
            c.close()
        self.listener.close()


class TcpPSWorker:
    def __init__(self, server: tuple[str, int], worker_id: int, params: Sequence[np.ndarray],
                 timeout: float = 60.0, start_timeout: float = 30.0) -> None:
        # The server may start later than this worker on a loaded machine: retry for a bounded time.
        end = time.monotonic() + start_timeout
        while True:
            try:
                self.sock = socket.create_connection(server, timeout=timeout)
                break
            except OSError as exc:
                if time.monotonic() > end:
                    raise TransportError(f"server {server[0]}:{server[1]} did not accept a TCP connection "
                                         f"within {start_timeout:.0f}s ({exc})") from None
                time.sleep(0.1)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.worker_id, self.params = worker_id, list(params)

    def step(self, iteration: int, grads: Sequence[np.ndarray]) -> CommStats:
        t0 = time.perf_counter()
        stats = CommStats()
        for tid, g in enumerate(grads):
            stats.bytes_sent += send_tensor(self.sock, tid, self.worker_id, g)
        for p in self.params:
            recv_tensor(self.sock, p)
        stats.seconds = time.perf_counter() - t0
        return stats

    def close(self) -> None:
        self.sock.close()


class TcpRing:
    """Ring all-reduce over TCP (the baseline of ``ring_allreduce``): rank r listens on
    ``addrs[r]``, connects to its right neighbour, accepts its left one. ``open_rings`` makes
    several independent rings over one listener (one per bucket in flight, as gloo's threads)."""

    def __init__(self, rank: int, addrs: Sequence[tuple[str, int]], timeout: float = 60.0,
                 congestion_control: str | None = None) -> None:
        ring = open_rings(rank, addrs, 1, timeout, congestion_control)[0]
        self.rank, self.n, self.right, self.left, self.listener = ring.rank, ring.n, ring.right, ring.left, ring.listener

    @classmethod
    def _of(cls, rank: int, n: int, right: socket.socket, left: socket.socket,
            listener: socket.socket | None) -> TcpRing:
        ring = cls.__new__(cls)
        ring.rank, ring.n, ring.right, ring.left, ring.listener = rank, n, right, left, listener
        return ring

    def _exchange(self, send: np.ndarray, recv: np.ndarray) -> int:
        err: list[BaseException] = []

        def push() -> None:
            try:
                send_tensor(self.right, 0, self.rank, send)
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                err.append(exc)
        t = threading.Thread(target=push, daemon=True)   # both directions at once: no deadlock
        t.start()
        recv_tensor(self.left, recv)
        t.join()
        if err:
            raise TransportError(f"TCP ring send failed: {err[0]}")
        return FRAME.size + send.nbytes

    def allreduce(self, data: np.ndarray) -> CommStats:
        """In-place sum of the flat float32 ``data`` over all ranks (reduce-scatter + all-gather)."""
        t0 = time.perf_counter()
        stats = CommStats()
        n, r = self.n, self.rank
        flat = data.reshape(-1)
        bounds = np.linspace(0, flat.size, n + 1).astype(np.int64)
        chunk = [flat[bounds[i]:bounds[i + 1]] for i in range(n)]
        for s in range(n - 1):
            tmp = np.empty_like(chunk[(r - s - 1) % n])
            stats.bytes_sent += self._exchange(chunk[(r - s) % n], tmp)
            chunk[(r - s - 1) % n] += tmp
        for s in range(n - 1):
            stats.bytes_sent += self._exchange(np.ascontiguousarray(chunk[(r + 1 - s) % n]), chunk[(r - s) % n])
        stats.seconds = time.perf_counter() - t0
        return stats

    def close(self) -> None:
        for s in (self.right, self.left, self.listener):
            if s is not None:
                s.close()


SLOT = struct.Struct("!H")            # first bytes on a ring connection: which ring it belongs to


def _connect(addr: tuple[str, int], who: str, slot: int, timeout: float, cc: str | None) -> socket.socket:
    end = time.monotonic() + timeout
    while True:                                       # the neighbour may not be listening yet
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if cc:                                        # per socket, as users pick it (TCP_CONGESTION)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        sock.settimeout(timeout)
        try:
            sock.connect(addr)
            sock.sendall(SLOT.pack(slot))
            return sock
        except (ConnectionRefusedError, TimeoutError, OSError):
            sock.close()
            if time.monotonic() > end:
                raise TransportError(f"{who} at {addr[0]}:{addr[1]} never listened") from None
            time.sleep(0.05)


def open_rings(rank: int, addrs: Sequence[tuple[str, int]], count: int, timeout: float = 60.0,
               congestion_control: str | None = None) -> list[TcpRing]:
    """``count`` TCP rings among ``addrs`` (rank r listens on ``addrs[r]``): each has its own
    connection to the right neighbour and from the left one, so they run in parallel threads."""
    n = len(addrs)
    listener = socket.create_server(addrs[rank])
    listener.settimeout(timeout)
    right_addr = addrs[(rank + 1) % n]
    rights = [_connect(right_addr, f"rank {(rank + 1) % n}", slot, timeout, congestion_control)
              for slot in range(count)]
    lefts: dict[int, socket.socket] = {}
    while len(lefts) < count:
        conn, _ = listener.accept()
        conn.settimeout(timeout)
        head = bytearray(SLOT.size)
        recv_exact(conn, memoryview(head))
        (slot,) = SLOT.unpack(head)
        if slot >= count or slot in lefts:
            conn.close()
            raise TransportError(f"rank {rank}: left neighbour opened ring {slot}, expected 0..{count - 1} once each")
        lefts[slot] = conn
    rings = []
    for slot in range(count):
        for s in (rights[slot], lefts[slot]):
            if congestion_control:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion_control.encode())
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.settimeout(timeout)
        rings.append(TcpRing._of(rank, n, rights[slot], lefts[slot], listener if slot == 0 else None))
    return rings
