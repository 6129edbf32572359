"""``dlcpctl`` commands that show and change the DLCP tables and counters of live switches:
``thresholds``, ``priority``, ``ecmp`` (show | set), ``entries`` and ``stats``.

``set`` commands write one entry (MODIFY when it exists, else INSERT) as the primary; show
commands read without arbitrating. Show commands and ``stats`` over several switches print what
the reachable ones hold and name the others (``cli_common.finish``: exit 4 for a partial answer).
"""

from __future__ import annotations

import argparse
import time

from p4.v1 import p4runtime_pb2

from controller import dlcp_tables as api
from controller import reconcile
from controller import stats as stats_mod
from controller.cli_common import (
    EXIT_OK,
    connect_writer,
    entry_match,
    entry_params,
    finish,
    open_reader,
    per_switch,
    s_net,
    table_entries,
    write_one,
    writer_session,
)
from controller.controller import SwitchSession
from controller.errors import SwitchError, ValueError_
from controller.output import emit, emit_json, table


def _show(args: argparse.Namespace, table_name: str, render, reverse: bool = False) -> int:
    ctl = open_reader(args, args.switch, table_name)
    try:
        def read(s: SwitchSession) -> list[dict]:
            items = [render(s, e) for e in table_entries(s, table_name)]
            items.sort(key=lambda d: tuple(d.values()), reverse=reverse)
            return items
        data = per_switch(ctl, read)
        rows = [(name, *d.values()) for name, items in data.items() for d in items]
        if args.json:
            emit_json(data)
        elif rows:
            first = next(d for items in data.values() for d in items)
            emit(table(("switch", *first.keys()), rows))
        elif data:
            emit("(no entries)")
        return finish(ctl)
    finally:
        ctl.close()


def cmd_thresholds_show(args: argparse.Namespace) -> int:
    def render(s: SwitchSession, e: p4runtime_pb2.TableEntry) -> dict:
        m, p = entry_match(s, e), entry_params(s, e)
        return {"queue": int(m["queue"]), "mag": int(m["mag_class"]),
                "drop": p.get("drop_depth", "-"), "ecn": p.get("ecn_depth", "-")}
    return _show(args, api.DROP_THRESHOLDS, render)


def check_queue(args: argparse.Namespace, queue: int) -> None:
    """A queue the switches of this network have (the policy's ``queues``), before any connection."""
    queues = s_net(args).policy.queues
    if not 0 <= queue < queues:
        raise ValueError_(f"--queue {queue}: the switches have queues 0..{queues - 1} (policy 'queues: {queues}')")


def cmd_thresholds_set(args: argparse.Namespace) -> int:
    if args.ecn > args.drop:
        raise ValueError_(f"--ecn {args.ecn} is above --drop {args.drop}: packets would be dropped before any "
                          "is marked; give an ECN depth at most the drop depth")
    check_queue(args, args.queue)
    session = writer_session(args, args.switch)
    try:
        entry = api.threshold(session.index, args.queue, args.mag, args.drop, args.ecn)
        connect_writer(session)
        done = write_one(session, entry)
        emit(f"{args.switch}: thresholds queue {args.queue} mag {args.mag}: drop {args.drop} ecn {args.ecn} ({done})")
        return EXIT_OK
    finally:
        session.close()


def cmd_priority_show(args: argparse.Namespace) -> int:
    names: dict[tuple, str] = {}

    def render(s: SwitchSession, e: p4runtime_pb2.TableEntry) -> dict:
        if not names:
            for r in s_net(args).policy.priority_map:
                names[reconcile.entry_key(api.priority_rule(s.index, dict(r.match), r.queue, r.priority))] = r.name
        rule = names.get(reconcile.entry_key(e), "(not in policy)")
        return {"priority": e.priority, "rule": rule, **entry_match(s, e), "queue": entry_params(s, e).get("queue", "-")}
    return _show(args, api.PRIORITY_MAP, render, reverse=True)


def cmd_priority_set(args: argparse.Namespace) -> int:
    check_queue(args, args.queue)
    session = writer_session(args, args.switch)
    try:
        rule = s_net(args).policy.rule(args.rule)
        entry = api.priority_rule(session.index, dict(rule.match), args.queue, rule.priority)
        connect_writer(session)
        done = write_one(session, entry)
        emit(f"{args.switch}: priority rule {rule.name} -> queue {args.queue} ({done})")
        return EXIT_OK
    finally:
        session.close()


def cmd_ecmp_show(args: argparse.Namespace) -> int:
    ctl = open_reader(args, args.switch)
    try:
        rows = []

        def read(s: SwitchSession) -> dict:
            groups: dict = {}
            for e in table_entries(s, api.ECMP_GROUPS):
                p = entry_params(s, e)
                groups[int(entry_match(s, e)["group_id"])] = {"members": p.get("num_members"),
                                                         "spray": bool(p.get("spray")), "nexthops": {}}
            for e in table_entries(s, api.ECMP_MEMBERS, counters=True):
                m = entry_match(s, e)
                g = groups.setdefault(int(m["group_id"]), {"members": None, "spray": None, "nexthops": {}})
                g["nexthops"][int(m["member_index"])] = {"nexthop": entry_params(s, e).get("nexthop_id"),
                                                         "packets": e.counter_data.packet_count}
            return groups
        data = per_switch(ctl, read)
        for name, groups in data.items():
            for gid, g in sorted(groups.items()):
                for idx, member in sorted(g["nexthops"].items()):
                    rows.append((name, gid, "on" if g["spray"] else "off", idx, member["nexthop"], member["packets"]))
        if args.json:
            emit_json(data)
        elif data:
            emit(table(("switch", "group", "spray", "member", "nexthop", "packets"), rows) if rows else "(no groups)")
        return finish(ctl)
    finally:
        ctl.close()


def cmd_ecmp_set(args: argparse.Namespace) -> int:
    session = writer_session(args, args.switch)
    try:
        api.ecmp_group(session.index, args.group, 1, args.spray)   # checks the group id's width
        connect_writer(session)
        for e in table_entries(session, api.ECMP_GROUPS):
            if int(entry_match(session, e)["group_id"]) == args.group:
                members = entry_params(session, e)["num_members"]
                break
        else:
            raise SwitchError(args.switch, f"table {api.ECMP_GROUPS}: no group_id {args.group}")
        done = write_one(session, api.ecmp_group(session.index, args.group, members, args.spray))
        emit(f"{args.switch}: ecmp group {args.group} spray {'on' if args.spray else 'off'} ({done})")
        return EXIT_OK
    finally:
        session.close()


def cmd_entries(args: argparse.Namespace) -> int:
    ctl = open_reader(args, args.switch, args.table)
    try:
        def read(s: SwitchSession) -> list[dict]:
            tname = s.index.table(args.table).preamble.name
            return [{**entry_match(s, e), "priority": e.priority, "action": s.index.action_text(e)}
                    for e in table_entries(s, tname)]
        data = per_switch(ctl, read)
        rows = [(name, *item.values()) for name, items in data.items() for item in items]
        headers = next((("switch", *item.keys()) for items in data.values() for item in items), ())
        if args.json:
            emit_json(data)
        elif data:
            emit(table(headers, rows) if rows else "(no entries)")
        return finish(ctl)
    finally:
        ctl.close()


def _render_stats(snaps: dict, prev: dict | None) -> str:
    out = []
    tx_rows, drop_rows, spray_rows = [], [], []
    for name, snap in snaps.items():
        rate = stats_mod.rates(prev[name], snap) if prev else {}
        for (port, queue), (pk, by) in sorted(snap.port_queue_tx.items()):
            tx_rows.append((name, port, queue, pk, by, f"{rate[(port, queue)]:.1f}" if prev else "-",
                            snap.depth.get((port, queue), 0), snap.port_depth.get(port, 0)))
        keys = sorted(set(snap.selective_drops) | set(snap.ecn_marks) | set(snap.egress_safety_drops))
        for q, m in keys:
            drop_rows.append((name, q, m, snap.selective_drops.get((q, m), (0, 0))[0],
                              snap.ecn_marks.get((q, m), (0, 0))[0], snap.egress_safety_drops.get((q, m), (0, 0))[0]))
        for (g, member), (pk, _) in sorted(snap.spray.items()):
            spray_rows.append((name, g, member, pk))
    out.append(table(("switch", "port", "queue", "tx_pkts", "tx_bytes", "pkts/s", "q_depth", "port_depth"), tx_rows) if tx_rows
               else "tx: (nothing sent)")
    out.append(table(("switch", "queue", "mag", "sel_drops", "ecn_marks", "safety_drops"), drop_rows) if drop_rows
               else "drops/marks: (none)")
    if spray_rows:
        out.append(table(("switch", "group", "member", "packets"), spray_rows))
    mal = [f"{n}: " + " ".join(f"{k}={v}" for k, v in s.malformed.items()) for n, s in snaps.items()
           if any(s.malformed.values())]
    out.append("malformed: " + ("; ".join(mal) if mal else "0"))
    return "\n\n".join(out)


def cmd_stats(args: argparse.Namespace) -> int:
    ctl = open_reader(args, args.switch)
    try:
        prev = None
        rounds = 0
        while True:
            snaps = per_switch(ctl, lambda s: stats_mod.snapshot(s.client, s.index))
            if args.json:
                emit_json({n: s.as_json() for n, s in snaps.items()})
            elif snaps:
                emit(_render_stats(snaps, {n: p for n, p in prev.items() if n in snaps} if prev else None))
            rounds += 1
            if not args.watch or (args.count and rounds >= args.count) or not ctl.sessions:
                return finish(ctl)
            prev = snaps
            time.sleep(args.watch)
            if not args.json:
                emit("")
    finally:
        ctl.close()
