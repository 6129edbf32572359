"""Errors the controller reports to operators: one line each, naming switch, table and field.

All derive from ``ControllerError``, the controller's own base (the controller never imports a
target's code, p4sim included), so ``dlcpctl`` prints every one the same way: one line,
non-zero exit, no traceback.
"""

from __future__ import annotations

import difflib


class ControllerError(Exception):
    """Base class of every controller error shown to an operator."""


class NameNotFound(ControllerError):
    """A table/action/field/counter name that the P4Info does not have."""

    def __init__(self, kind: str, name: str, candidates: list[str], where: str = "") -> None:
        self.kind, self.name = kind, name
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.5)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}unknown {kind} '{name}'{hint}")


class ValueError_(ControllerError):
    """A value that does not fit its field (too wide, malformed, wrong match kind)."""


class ConfigError(ControllerError):
    """A problem in the network YAML: ``file:line: key: message``."""

    def __init__(self, file: str, line: int | None, key: str, message: str) -> None:
        self.file, self.line, self.key, self.message = file, line, key, message
        where = f"{file}:{line}" if line else file
        key_part = f" {key}:" if key else ""
        super().__init__(f"{where}:{key_part} {message}")


class SwitchError(ControllerError):
    """A switch could not do what was asked (unreachable, refused, wrong pipeline)."""

    def __init__(self, switch: str, message: str) -> None:
        self.switch, self.message = switch, message
        super().__init__(f"switch {switch}: {message}")


class NoSwitchReachable(ControllerError):
    """Every switch a command needed failed to connect: one line naming each with its reason."""

    def __init__(self, errors: list[ControllerError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


class NotPrimaryError(SwitchError):
    """This controller is only a backup for the switch; ``primary`` is who is primary."""

    def __init__(self, switch: str, our_election_id: int, primary_election_id: int | None) -> None:
        self.our_election_id, self.primary_election_id = our_election_id, primary_election_id
        who = (f"election id {primary_election_id}" if primary_election_id is not None
               else "no primary")
        super().__init__(switch, f"not primary (our election id {our_election_id}; primary is {who})")


class WriteError(SwitchError):
    """A Write the switch refused, unpacked from the gRPC trailer into one line per failed update.

    ``details`` holds ``(index, code_name, message)`` for every failed update of the batch; ``str``
    gives ``switch S: write failed: At index i: CODE, message (table T, match ...)`` joined by "; ".
    """

    def __init__(self, switch: str, details: list[tuple[int, str, str]], describe: list[str] | None = None,
                 summary: str = "") -> None:
        self.details = details
        lines = []
        for index, code, msg in details:
            what = f" ({describe[index]})" if describe and index < len(describe) else ""
            lines.append(f"At index {index}: {code}, {msg}{what}")
        text = "; ".join(lines) if lines else summary
        super().__init__(switch, f"write failed: {text}")


class PipelineMismatch(SwitchError):
    """The switch runs a different P4 program than the network YAML names."""


class ApplyFailed(ControllerError):
    """A change a switch refused, after undoing what it had applied (message says what was undone)."""
