"""``dlcpctl``: the operator's command for a DLCP network described by one YAML file.

    dlcpctl -c net.yaml apply [--dry-run] [--force-pipeline] [--watch]
    dlcpctl -c net.yaml status
    dlcpctl -c net.yaml thresholds show [SWITCH] | set SWITCH --queue Q --mag M --drop N --ecn N
    dlcpctl -c net.yaml priority show [SWITCH]   | set SWITCH RULE --queue Q   (RULE: a policy rule name)
    dlcpctl -c net.yaml ecmp show [SWITCH]       | set SWITCH --group G --spray on|off
    dlcpctl -c net.yaml entries TABLE [--switch S]
    dlcpctl -c net.yaml stats [--switch S] [--watch SECONDS] [--json]
    dlcpctl -c net.yaml queues set SWITCH [--port P [--queue Q]] [--depth N] [--rate PPS]

Exit codes: 0 success; 1 bad input (YAML, names, values); 2 command-line usage; 3 a switch could
not do it (unreachable, not primary, wrong pipeline, write refused and rolled back; for commands
over several switches: none of them could); 4 partial: a command over several switches (apply,
status, show, entries, stats) served the reachable ones and named each other on stderr with the
reason; 130 interrupted.
Errors are one line on stderr. ``set`` commands change the live switch with one write; the next
``apply`` brings the switch back to the YAML, so persist a change by editing the YAML.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from controller import reconcile
from controller.cli_common import (
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_SWITCH,
    EXIT_USAGE,
    controller_for,
    finish,
    forget_networks,
    name_failure,
    s_net,
)
from controller.cli_tables import (
    cmd_ecmp_set,
    cmd_ecmp_show,
    cmd_entries,
    cmd_priority_set,
    cmd_priority_show,
    cmd_stats,
    cmd_thresholds_set,
    cmd_thresholds_show,
)
from controller.controller import Controller, SwitchSession
from controller.errors import ApplyFailed, ControllerError, NoSwitchReachable, SwitchError
from controller.netconfig import MAX_ELECTION_ID
from controller.output import emit, emit_json, table

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_INPUT", "EXIT_USAGE", "EXIT_SWITCH", "EXIT_PARTIAL",
           "EXIT_INTERRUPTED"]

APPLY_LINES = 10   # diff lines per switch that `apply` prints (`apply --dry-run` prints all)


def _nonneg(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def _election_id(text: str) -> int:
    value = _nonneg(text)
    if value > MAX_ELECTION_ID:
        raise argparse.ArgumentTypeError(f"{value} does not fit P4Runtime's 128-bit election id")
    return value


def _on_off(text: str) -> bool:
    if text.lower() in ("on", "1", "true", "yes"):
        return True
    if text.lower() in ("off", "0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"'{text}' is not on/off")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dlcpctl", description="DLCP controller for network operators",
                                epilog="exit codes: 0 ok, 1 bad input, 2 usage, 3 switch error, "
                                       "4 partial (some switches unreachable; the others served), 130 interrupted")
    p.add_argument("-c", "--config", required=True, metavar="NET.YAML", help="network description")
    p.add_argument("--election-id", type=_election_id, help="P4Runtime election id (default: the YAML's)")
    p.add_argument("--role", help="P4Runtime role name (default: the YAML's, else the default role)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="log to stderr: -v progress and warnings, -vv debug")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    a = sub.add_parser("apply", help="make every switch match the YAML (prints the diff)")
    a.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    a.add_argument("--force-pipeline", action="store_true", help="replace a different program on a switch")
    a.add_argument("--watch", action="store_true", help="keep running; restore switches that restart")
    a.add_argument("--switch", action="append", help="only these switches")
    a.set_defaults(func=cmd_apply)

    s = sub.add_parser("status", help="switches, primary, pipeline, entry counts")
    s.set_defaults(func=cmd_status)

    t = sub.add_parser("thresholds", help="per (queue, magnitude class) drop and ECN depths",
                       description="Selective drop and ECN marking thresholds of DLCP packets, one entry "
                                   "per (queue, magnitude class) in DlcpIngress.drop_thresholds.")
    tsub = t.add_subparsers(dest="action", required=True, metavar="{show,set}")
    ts = tsub.add_parser("show", help="list the thresholds of every switch (or one)",
                         description="Read the thresholds the switches hold now (no arbitration needed).")
    ts.add_argument("switch", nargs="?", help="only this switch (default: every switch of the YAML)")
    ts.set_defaults(func=cmd_thresholds_show)
    tt = tsub.add_parser("set", help="change one (queue, magnitude class) entry on one switch",
                         description="Write one threshold entry as primary; --ecn must not exceed --drop. "
                                     "The next 'apply' restores the YAML's value.")
    tt.add_argument("switch")
    tt.add_argument("--queue", type=_nonneg, required=True, help="priority queue (0 .. policy queues - 1)")
    tt.add_argument("--mag", type=_nonneg, required=True, help="magnitude class (0..15)")
    tt.add_argument("--drop", type=_nonneg, required=True, help="drop depth (packets)")
    tt.add_argument("--ecn", type=_nonneg, required=True, help="ECN marking depth (packets), at most --drop")
    tt.set_defaults(func=cmd_thresholds_set)

    pr = sub.add_parser("priority", help="DLCP class -> queue mapping")
    psub = pr.add_subparsers(dest="action", required=True, metavar="{show,set}")
    ps = psub.add_parser("show", help="list the priority map of every switch (or one)")
    ps.add_argument("switch", nargs="?")
    ps.set_defaults(func=cmd_priority_show)
    pt = psub.add_parser("set", help="send one policy rule's packets to another queue on one switch")
    pt.add_argument("switch")
    pt.add_argument("rule", help="priority_map rule name from the policy (e.g. layer-7)")
    pt.add_argument("--queue", type=_nonneg, required=True)
    pt.set_defaults(func=cmd_priority_set)

    e = sub.add_parser("ecmp", help="ECMP groups, members, spraying")
    esub = e.add_subparsers(dest="action", required=True, metavar="{show,set}")
    es = esub.add_parser("show", help="list groups, members and per-member packets")
    es.add_argument("switch", nargs="?")
    es.set_defaults(func=cmd_ecmp_show)
    et = esub.add_parser("set", help="turn spraying of one group on or off on one switch")
    et.add_argument("switch")
    et.add_argument("--group", type=_nonneg, required=True)
    et.add_argument("--spray", type=_on_off, required=True, metavar="on|off")
    et.set_defaults(func=cmd_ecmp_set)

    en = sub.add_parser("entries", help="dump one table")
    en.add_argument("table", help="table name (e.g. DlcpIngress.nexthops or nexthops)")
    en.add_argument("--switch", action="append")
    en.set_defaults(func=cmd_entries)

    st = sub.add_parser("stats", help="tx per port/queue, selective drops, ECN marks, spray")
    st.add_argument("--switch", action="append")
    st.add_argument("--watch", type=float, metavar="SECONDS", help="repeat every SECONDS with rates")
    st.add_argument("--count", type=_nonneg, default=0, help="with --watch: stop after N rounds")
    st.set_defaults(func=cmd_stats)

    q = sub.add_parser("queues", help="queue depth/rate via the target's runtime CLI")
    qsub = q.add_subparsers(dest="action", required=True, metavar="{set}")
    qs = qsub.add_parser("set", help="queue depth and/or pacing rate of one switch",
                         description="Checked against the switch's ports and queues first (p4sim reports "
                                     "them; otherwise the ports the YAML attaches and the policy's queues).")
    qs.add_argument("switch")
    qs.add_argument("--port", type=_nonneg, help="one port (default: every port)")
    qs.add_argument("--queue", type=_nonneg, help="one priority queue of --port (default: every queue)")
    qs.add_argument("--depth", type=_nonneg, help="queue limit (packets, at least 1)")
    qs.add_argument("--rate", type=_nonneg, help="packets per second")
    qs.set_defaults(func=cmd_queues_set)
    return p


# -- helpers ---------------------------------------------------------------------------------------
def cmd_apply(args: argparse.Namespace) -> int:
    ctl = controller_for(args, args.switch)
    try:
        # --watch waits for every switch; a one-shot apply serves the reachable ones (exit 4)
        # a dry run only reads: it never joins the election (it must not demote the running primary)
        ctl.connect(require_primary=not args.dry_run, arbitrate=not args.dry_run, partial=not args.watch)
        for err in ctl.unreachable.values():
            name_failure(err)
        _check_queues(ctl)
        reports = ctl.apply(dry_run=args.dry_run, force_pipeline=args.force_pipeline)
        if args.json:
            emit_json({name: {"pipeline": r.pipeline, "changes": r.plan.counts(),
                              "batches": r.result.batches if r.result else 0,
                              "diff": r.plan.lines(ctl.sessions[name].index)} for name, r in reports.items()})
        else:
            limit = None if args.dry_run else APPLY_LINES
            for name, r in reports.items():
                for line in r.plan.lines(ctl.sessions[name].index, limit):
                    emit(f"{name}: {line}")
                if limit is not None and r.plan.size() > limit:
                    emit(f"{name}: ... and {r.plan.size() - limit} more (--dry-run lists every change)")
            rows = [(name, r.pipeline, r.plan.counts()["insert"], r.plan.counts()["modify"],
                     r.plan.counts()["delete"], r.result.batches if r.result else 0)
                    for name, r in reports.items()]
            emit(table(("switch", "pipeline", "insert", "modify", "delete", "batches"), rows))
            emit("dry run: nothing written" if args.dry_run else
                 "in sync" if all(r.plan.empty() for r in reports.values()) else "applied")
        if not args.dry_run:
            _apply_queues(ctl, quiet=args.json)
        if args.watch and not args.dry_run:
            emit("watching switches (Ctrl-C or SIGTERM to stop)")
            stop = threading.Event()
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
            ctl.supervise(stop, on_restore=lambda n, r: emit(
                f"{n}: restored (pipeline {r.pipeline}, {r.plan.counts()})"))
        return finish(ctl)
    finally:
        ctl.close()


def _check_queues(ctl: Controller) -> None:
    """The YAML's per-port queue settings name ports each switch has: checked before any write."""
    from controller.runtime_cli import check_queue_config, has_runtime
    for s in ctl.sessions.values():
        if has_runtime(s.conf):
            check_queue_config(s.conf)


def _apply_queues(ctl: Controller, quiet: bool) -> None:
    """Queue depths/rates from the YAML, through each switch's runtime interface (when it has one)."""
    from controller.runtime_cli import apply_queue_config, has_runtime
    for name, s in ctl.sessions.items():
        if not has_runtime(s.conf):
            continue
        for text in apply_queue_config(s.conf, ctl.net.queues, yaml_ports=ctl.net.switch_ports(name),
                                       queues=ctl.net.policy.queues):
            if not quiet:
                emit(f"{name}: queues: {text}")


def cmd_status(args: argparse.Namespace) -> int:
    net = s_net(args)
    ctl = Controller(net, election_id=args.election_id, role=args.role)
    rows, data = [], {}
    try:
        def probe(s: SwitchSession) -> dict:
            info = {"address": s.conf.grpc, "device_id": s.conf.device_id, "target": s.conf.target}
            try:
                s.client.observer = True   # arbitrate without an election id: learn the primary
                s.connect(timeout=2.0)
                info["primary"] = (f"id {s.client.primary_election_id}"
                                   if s.client.primary_election_id is not None else "none")
                state = s.check_pipeline(push=False)
                info["pipeline"] = state.state
                info["cookie"] = f"{state.cookie:#x}" if state.cookie is not None else None
                info["reachable"] = True
                if state.state == "ok":
                    info["entries"] = len(reconcile.read_current(s.client, s.index))
            except ControllerError as err:
                info.setdefault("reachable", False)
                info["error"] = str(err)
            return info
        data = ctl._each(probe)
    finally:
        ctl.close()
    if args.json:
        emit_json(data)
    else:
        for name, i in data.items():
            rows.append((name, i["address"], i["device_id"], i["target"], "yes" if i["reachable"] else "NO",
                         i.get("primary", "-"), i.get("pipeline", "-"), i.get("entries", "-")))
        emit(table(("switch", "address", "device", "target", "reachable", "primary", "pipeline", "entries"), rows))
        for i in data.values():
            if "error" in i:
                emit(i["error"])
    reachable = [i["reachable"] for i in data.values()]
    return EXIT_OK if all(reachable) else EXIT_PARTIAL if any(reachable) else EXIT_SWITCH


def cmd_queues_set(args: argparse.Namespace) -> int:
    from controller.runtime_cli import set_queues
    net = s_net(args)
    done = set_queues(net.switch(args.switch), args.port, args.queue, args.depth, args.rate,
                      yaml_ports=net.switch_ports(args.switch), queues=net.policy.queues)
    for text in done:
        emit(f"{args.switch}: {text}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    forget_networks()          # each run reads its YAML afresh (main may run many times in-process)
    level = [logging.ERROR, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        return int(args.func(args) or 0)
    except SwitchError as err:
        print(f"dlcpctl: {err}", file=sys.stderr)
        return EXIT_SWITCH
    except (ApplyFailed, NoSwitchReachable) as err:
        print(f"dlcpctl: {err}", file=sys.stderr)
        return EXIT_SWITCH
    except ControllerError as err:
        print(f"dlcpctl: {err}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:   # `dlcpctl ... | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
