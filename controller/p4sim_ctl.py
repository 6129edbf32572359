"""The controller's own client of p4sim's queue-management (ctl) channel.

P4Runtime has no queues, so depths and rates go through the target's runtime interface; for p4sim
that is the ctl endpoint. This speaks its documented wire protocol (docs/p4sim.md, "The ctl wire
protocol": one JSON request line, one JSON reply line, over TCP) without importing anything from
p4sim, so the controller installs and runs where the simulator is absent. Every failure is a
one-line ``SwitchError`` naming the switch.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from controller.errors import SwitchError

MAX_REPLY = 4 << 20     # bytes of one reply line we are prepared to read (show_queues on many ports)


class P4simCtl:
    """One connection to a switch's ctl endpoint at ``address`` (``HOST:PORT``); use as a context."""

    def __init__(self, switch: str, address: str, timeout: float = 5.0) -> None:
        self.switch, self.address = switch, address
        host, _, port = address.rpartition(":")
        try:
            self._sock = socket.create_connection((host, int(port)), timeout=timeout)
        except (OSError, ValueError) as err:
            reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
            raise SwitchError(switch, f"ctl {address}: cannot connect: {reason}") from None
        self._sock.settimeout(timeout)
        self._buf = bytearray()

    def __enter__(self) -> P4simCtl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def call(self, cmd: str, **args: int | None) -> Any:
        """Send one request and return its ``result``; SwitchError on an error reply or I/O failure."""
        request = {"cmd": cmd, "args": {k: v for k, v in args.items() if v is not None}}
        try:
            self._sock.sendall(json.dumps(request).encode() + b"\n")
            line = self._read_line()
        except OSError as err:
            reason = "no answer in time" if isinstance(err, TimeoutError) else (err.strerror or str(err))
            raise SwitchError(self.switch, f"ctl {self.address}: {cmd}: {reason}") from None
        try:
            reply = json.loads(line)
        except ValueError:
            raise SwitchError(self.switch, f"ctl {self.address}: {cmd}: the reply is not JSON") from None
        if not isinstance(reply, dict):
            raise SwitchError(self.switch, f"ctl {self.address}: {cmd}: the reply is not a JSON object")
        if "error" in reply:
            raise SwitchError(self.switch, f"ctl {self.address}: {cmd}: {str(reply['error']).splitlines()[0]}")
        return reply.get("result")

    def _read_line(self) -> bytes:
        while b"\n" not in self._buf:
            if len(self._buf) > MAX_REPLY:
                raise OSError(0, f"reply longer than {MAX_REPLY} bytes")
            chunk = self._sock.recv(65536)
            if not chunk:
                raise OSError(0, "the switch closed the connection")
            self._buf += chunk
        line, _, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        return line

    # -- the commands the controller uses ------------------------------------------------------
    def set_queue_depth(self, depth: int, port: int | None = None, prio: int | None = None) -> None:
        self.call("set_queue_depth", depth=depth, port=port, prio=prio)

    def set_queue_rate(self, rate_pps: int, port: int | None = None, prio: int | None = None) -> None:
        self.call("set_queue_rate", rate_pps=rate_pps, port=port, prio=prio)

    def limits(self) -> tuple[int, list[int]]:
        """The switch's priority queues per port and its attached ports (``show_queues``, ``stats``).

        The port list is empty when the switch has no interfaces of its own (packets through
        nanomsg or the P4Runtime packet path only): then it cannot say which ports exist.
        """
        tm, stats = self.call("show_queues"), self.call("stats")
        try:
            return int(tm["priority_queues"]), sorted(int(p) for p in stats.get("ports") or {})
        except (TypeError, KeyError, ValueError, AttributeError):
            raise SwitchError(self.switch, f"ctl {self.address}: unexpected show_queues/stats reply") from None
