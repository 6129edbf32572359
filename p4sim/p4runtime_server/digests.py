"""Digest delivery: the program's digest tuples -> DigestList messages to the primary controllers.

Only digests the controller enabled with a DigestEntry are sent. Every digest goes out at once
as a list of one (``max_timeout_ns``/``max_list_size`` bound how long and how much the server may
batch; sending immediately honours both). With ``ack_timeout_ns`` set, the same data is not sent
again until its list is acknowledged (DigestListAck) or the ack timeout passes, as the spec asks.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable

from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server.packet_io import digest_data

__all__ = ["DigestEngine"]

log = logging.getLogger("p4sim.p4runtime")


class DigestEngine:
    """Turns digest callbacks into DigestList messages; remembers unacknowledged data."""

    def __init__(self, get_session: Callable, send_to_primaries: Callable) -> None:
        self._get_session = get_session
        self._send = send_to_primaries
        self._lock = threading.Lock()
        self._list_ids = itertools.count(1)
        self._pending: dict[tuple[int, tuple], float] = {}    # (digest id, values) -> expiry
        self._lists: dict[tuple[int, int], tuple] = {}        # (digest id, list id) -> values
        self.suppressed = 0

    def on_digest(self, name: str, values: tuple[int, ...]) -> None:
        session = self._get_session()
        if session is None:
            return
        info = session.index.digest_by_name.get(name)
        if info is None:
            log.warning("digest '%s' is not in the P4Info", name)
            return
        config = session.digest_configs.get(info.id)
        if config is None:
            return
        now = time.monotonic()
        with self._lock:
            key = (info.id, tuple(values))
            if config.ack_timeout_ns:
                expiry = self._pending.get(key)
                if expiry is not None and expiry > now:
                    self.suppressed += 1
                    return
                self._pending[key] = now + config.ack_timeout_ns / 1e9
            list_id = next(self._list_ids)
            if config.ack_timeout_ns:
                self._lists[(info.id, list_id)] = key[1]
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.digest.digest_id = info.id
        msg.digest.list_id = list_id
        msg.digest.timestamp = time.time_ns()
        msg.digest.data.append(digest_data(info, values))
        self._send(msg)

    def on_ack(self, ack: p4runtime_pb2.DigestListAck) -> None:
        with self._lock:
            values = self._lists.pop((ack.digest_id, ack.list_id), None)
            if values is not None:
                self._pending.pop((ack.digest_id, values), None)

    def reset(self) -> None:
        with self._lock:
            self._pending.clear()
            self._lists.clear()
