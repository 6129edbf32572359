"""Helpers shared by the ``dlcpctl`` command modules: the loaded network, controllers for reading
(no arbitration), a session for writing one switch (as primary), and entry field access."""

from __future__ import annotations

import argparse

from p4.v1 import p4runtime_pb2

from controller import netconfig, reconcile, wire
from controller.controller import Controller, SwitchSession
from controller.errors import SwitchError

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_SWITCH, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

_NETS: dict[str, netconfig.NetConfig] = {}


def s_net(args: argparse.Namespace) -> netconfig.NetConfig:
    if args.config not in _NETS:
        _NETS[args.config] = netconfig.load(args.config)
    return _NETS[args.config]


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
    ctl.connect(require_primary=False, arbitrate=False)
    return ctl


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
