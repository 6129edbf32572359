"""Helpers shared by the ``dlcpctl`` command modules: the loaded network, controllers for reading
(no arbitration), a session for writing one switch (as primary), entry field access, and the
partial-failure rule of commands that span several switches: the reachable switches' output is
shown, each switch that failed is named on stderr with its reason, and the exit code is
``EXIT_PARTIAL`` (``EXIT_SWITCH`` when none could be reached)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

from p4.v1 import p4runtime_pb2

from controller import netconfig, reconcile, wire
from controller.controller import Controller, SwitchSession
from controller.errors import ControllerError, SwitchError

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_SWITCH, EXIT_PARTIAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
T = TypeVar("T")

_NETS: dict[str, netconfig.NetConfig] = {}


def s_net(args: argparse.Namespace) -> netconfig.NetConfig:
    if args.config not in _NETS:
        _NETS[args.config] = netconfig.load(args.config)
    return _NETS[args.config]


def forget_networks() -> None:
    """Drop the loaded network YAMLs (the next ``s_net`` reads the file again)."""
    _NETS.clear()


def controller_for(args: argparse.Namespace, switches: list[str] | None = None) -> Controller:
    net = s_net(args)
    return Controller(net, election_id=args.election_id, role=args.role, switches=switches)


def open_reader(args: argparse.Namespace, switch: str | list[str] | None, table_name: str | None = None) -> Controller:
    """A controller connected without arbitration (reads only), for show commands.

    ``table_name`` is resolved in every switch's P4Info first, so a typo fails before any connection.
    """
    names = [switch] if isinstance(switch, str) else switch
    ctl = controller_for(args, names)
    if table_name is not None:
        for s in ctl.sessions.values():
            s.index.table(table_name)
    try:
        ctl.connect(require_primary=False, arbitrate=False, partial=True)
    except ControllerError:
        ctl.close()
        raise
    for err in ctl.unreachable.values():
        name_failure(err)
    return ctl


def name_failure(err: ControllerError) -> None:
    """One switch left out of a multi-switch command: one line on stderr, as it happens."""
    print(f"dlcpctl: {err}", file=sys.stderr, flush=True)


def per_switch(ctl: Controller, fn: Callable[[SwitchSession], T]) -> dict[str, T]:
    """``fn`` on each connected switch in order; a switch whose ``fn`` fails joins ``ctl.unreachable``."""
    results: dict[str, T] = {}
    for name, s in list(ctl.sessions.items()):
        try:
            results[name] = fn(s)
        except SwitchError as err:
            ctl.unreachable[name] = err
            ctl.sessions.pop(name).close()
            name_failure(err)
    return results


def finish(ctl: Controller) -> int:
    """The exit code of a multi-switch command: ok, partial (some switches failed) or none answered."""
    if not ctl.unreachable:
        return EXIT_OK
    return EXIT_PARTIAL if ctl.sessions else EXIT_SWITCH


def writer_session(args: argparse.Namespace, switch: str) -> SwitchSession:
    """The (not yet connected) session of one switch: build and check entries before connecting."""
    return controller_for(args, [switch]).sessions[switch]


def connect_writer(session: SwitchSession) -> None:
    session.connect()
    session.client.require_primary()
    if session.check_pipeline(push=False).state != "ok":
        raise SwitchError(session.name, "has no DLCP pipeline; run 'dlcpctl apply' first")


def table_entries(session: SwitchSession, table_name: str, counters: bool = False) -> list[p4runtime_pb2.TableEntry]:
    tid = session.index.table(table_name).preamble.id
    return session.client.read_table_entries(tid, counter_data=counters)


def write_one(session: SwitchSession, entry: p4runtime_pb2.TableEntry) -> str:
    """MODIFY the entry if it exists, else INSERT it; one write. Returns what was done."""
    key = reconcile.entry_key(entry)
    existing = {reconcile.entry_key(e): e for e in session.client.read_table_entries(entry.table_id)}
    kind = p4runtime_pb2.Update.MODIFY if key in existing else p4runtime_pb2.Update.INSERT
    update = p4runtime_pb2.Update(type=kind)
    update.entity.table_entry.CopyFrom(wire.as_proto(entry))
    session.client.write([update], [session.index.describe(entry)])
    return "modified" if kind == p4runtime_pb2.Update.MODIFY else "inserted"


def entry_params(session: SwitchSession, entry: p4runtime_pb2.TableEntry) -> dict[str, int]:
    action = session.index.by_id(entry.action.action.action_id)
    names = {p.id: p.name for p in action.params} if action is not None else {}
    return {names.get(p.param_id, str(p.param_id)): int.from_bytes(p.value, "big")
            for p in entry.action.action.params}


def entry_match(session: SwitchSession, entry: p4runtime_pb2.TableEntry) -> dict[str, str]:
    return session.index.entry_fields(entry)


# -- commands --------------------------------------------------------------------------------------
