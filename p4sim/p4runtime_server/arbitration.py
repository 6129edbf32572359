"""Client arbitration: who is the primary controller of each (device, role), per the P4Runtime spec.

Each StreamChannel that sends a MasterArbitrationUpdate becomes a live ``Controller``. For a role,
the controller whose election id is at least the highest id ever seen becomes primary; everybody
else is a backup. Only the primary may Write or set the pipeline. When the primary changes,
steps down or disconnects, every controller of the role is told (status OK for the primary,
ALREADY_EXISTS for backups while a primary exists, NOT_FOUND when there is none). A primary that
disconnects is not replaced until some controller re-arbitrates with a high enough id.

An election id already held by a live controller of the role is refused (INVALID_ARGUMENT), as
simple_switch_grpc does. A controller that closes its connection and reconnects at once with the
same id (p4lang/tutorials' p4runtime_lib does, between tests) is accepted: the server may not have
noticed the old stream end yet, so the newcomer waits up to ``REPLACE_GRACE`` for it, and a stream
whose RPC is no longer active is forgotten on the spot.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server.errors import P4RuntimeError, grpc_code_number, invalid

__all__ = ["Controller", "Arbitrator", "election_id_of", "role_name_of"]

log = logging.getLogger("p4sim.p4runtime")
REPLACE_GRACE = 1.0      # seconds a reconnecting controller waits for its old stream to go away


def election_id_of(msg) -> int | None:
    """The 128-bit election id of a message, or None when unset."""
    if not msg.HasField("election_id"):
        return None
    return (msg.election_id.high << 64) | msg.election_id.low


def role_name_of(role: p4runtime_pb2.Role | None) -> str:
    if role is None:
        return ""
    return role.name or (f"#{role.id}" if role.id else "")


@dataclass(eq=False)
class Controller:
    """One live StreamChannel after its first arbitration message."""

    device_id: int
    role: str
    election_id: int | None
    send: Callable[[p4runtime_pb2.StreamMessageResponse], None]
    role_msg: p4runtime_pb2.Role | None = None
    is_active: Callable[[], bool] | None = None     # False once the stream's RPC has ended


@dataclass
class _RoleState:
    controllers: list[Controller] = field(default_factory=list)
    primary: Controller | None = None
    highest: int | None = None


class Arbitrator:
    """Primary/backup bookkeeping for one device; thread-safe."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._roles: dict[str, _RoleState] = {}

    def arbitrate(self, current: Controller | None, msg: p4runtime_pb2.MasterArbitrationUpdate,
                  send: Callable, is_active: Callable[[], bool] | None = None) -> Controller:
        """Handle an arbitration message from a stream; returns the stream's Controller.

        Raises P4RuntimeError with the code the stream must be terminated with.
        """
        role = role_name_of(msg.role if msg.HasField("role") else None)
        eid = election_id_of(msg)
        if eid == 0:
            raise invalid("election id 0 is not valid (leave it unset to stay a backup)")
        if current is None and eid is not None:
            self._wait_for_stale_holder(role, eid)
        with self._lock:
            if current is None:
                if msg.device_id != self.device_id:
                    raise P4RuntimeError(grpc.StatusCode.NOT_FOUND,
                                         f"device id {msg.device_id} is not this switch ({self.device_id})")
                state = self._roles.setdefault(role, _RoleState())
                self._check_unique(state, eid, None)
                current = Controller(msg.device_id, role, eid, send,
                                     msg.role if msg.HasField("role") else None, is_active)
                state.controllers.append(current)
            else:
                if msg.device_id != current.device_id:
                    raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                         f"device id {msg.device_id} differs from this stream's "
                                         f"{current.device_id}")
                if role != current.role:
                    raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                         f"role '{role}' differs from this stream's '{current.role}'; "
                                         f"open a new stream to change roles")
                state = self._roles[role]
                self._check_unique(state, eid, current)
                current.election_id = eid
            was_primary = state.primary is current
            if eid is not None and (state.highest is None or eid >= state.highest):
                state.primary = current
                state.highest = eid
                notify = list(state.controllers)
            else:
                if was_primary:
                    state.primary = None
                    notify = list(state.controllers)
                else:
                    notify = [current]
            messages = [(c, self._notification(state, c, role)) for c in notify]
        for c, m in messages:
            c.send(m)
        log.info("arbitration: role '%s' election id %s -> %s", role, eid,
                 "primary" if state.primary is current else "backup")
        return current

    def _wait_for_stale_holder(self, role: str, eid: int) -> None:
        """If a controller of ``role`` holds ``eid``, give its stream up to REPLACE_GRACE to end
        (a reconnecting client), forgetting it as soon as its RPC is no longer active."""
        deadline = time.monotonic() + REPLACE_GRACE
        while True:
            with self._lock:
                state = self._roles.get(role)
                holder = next((c for c in state.controllers if c.election_id == eid), None) if state else None
            if holder is None:
                return
            if holder.is_active is not None and not holder.is_active():
                self.remove(holder)
                return
            if time.monotonic() >= deadline:
                return          # still live: _check_unique refuses the newcomer
            time.sleep(0.01)

    @staticmethod
    def _check_unique(state: _RoleState, eid: int | None, me: Controller | None) -> None:
        if eid is None:
            return
        for c in state.controllers:
            if c is not me and c.election_id == eid:
                raise invalid(f"election id {eid} is already used by another controller of this role")

    def _notification(self, state: _RoleState, c: Controller, role: str) -> p4runtime_pb2.StreamMessageResponse:
        out = p4runtime_pb2.StreamMessageResponse()
        arb = out.arbitration
        arb.device_id = self.device_id
        if c.role_msg is not None:
            arb.role.CopyFrom(c.role_msg)
        if state.highest is not None:
            arb.election_id.high = state.highest >> 64
            arb.election_id.low = state.highest & ((1 << 64) - 1)
        if state.primary is c:
            code, text = grpc.StatusCode.OK, "you are the primary"
        elif state.primary is not None:
            code, text = grpc.StatusCode.ALREADY_EXISTS, "a primary controller exists; you are a backup"
        else:
            code, text = grpc.StatusCode.NOT_FOUND, "there is no primary controller"
        arb.status.CopyFrom(status_pb2.Status(code=grpc_code_number(code), message=text))
        return out

    def remove(self, c: Controller) -> None:
        """The stream of ``c`` closed: forget it; if it was primary, tell the others."""
        with self._lock:
            state = self._roles.get(c.role)
            if state is None or c not in state.controllers:
                return
            state.controllers.remove(c)
            if state.primary is not c:
                return
            state.primary = None
            messages = [(o, self._notification(state, o, c.role)) for o in state.controllers]
        for o, m in messages:
            o.send(m)
        log.info("arbitration: primary of role '%s' disconnected", c.role)

    def check_primary(self, device_id: int, role: str, election_id: int | None, what: str) -> None:
        """Raise unless (device_id, role, election_id) is the role's current primary."""
        if device_id != self.device_id:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND,
                                 f"device id {device_id} is not this switch ({self.device_id})")
        with self._lock:
            state = self._roles.get(role)
            primary = state.primary if state else None
            if primary is None or election_id is None or primary.election_id != election_id:
                raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED,
                                     f"{what}: only the primary controller may do this "
                                     f"(election id {election_id} is not the primary of role '{role}')")

    def is_primary(self, c: Controller) -> bool:
        with self._lock:
            state = self._roles.get(c.role)
            return state is not None and state.primary is c

    def primaries(self) -> list[Controller]:
        with self._lock:
            return [s.primary for s in self._roles.values() if s.primary is not None]
