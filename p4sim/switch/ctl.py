"""``p4sim ctl``: change a running switch's queues, like BMv2's ``simple_switch_CLI``.

``CtlClient`` is the library form of the same calls (JSON lines over TCP, see ``ctl_server`` and
the wire protocol in docs/p4sim.md). ``HELP`` is what ``p4sim ctl --help`` prints (plain text).
"""

from __future__ import annotations

import argparse
import json
import socket
from typing import Any

from p4sim.switch.ctl_server import CtlError, parse_host_port

DEFAULT_CTL_ADDR = "127.0.0.1:9090"
HELP = """Change the queues of a running p4sim switch, like BMv2's simple_switch_CLI.

    p4sim ctl --addr 127.0.0.1:9090 set_queue_depth DEPTH [PORT [PRIO]]
    p4sim ctl --addr 127.0.0.1:9090 set_queue_rate RATE_PPS [PORT [PRIO]]
    p4sim ctl --addr 127.0.0.1:9090 set_port_rate PORT BITS_PER_S
    p4sim ctl --addr 127.0.0.1:9090 show_queues
    p4sim ctl --addr 127.0.0.1:9090 stats

Without PORT a setting applies to every port and to ports that appear later.
The wire protocol (JSON lines over TCP) is described in docs/p4sim.md."""


class CtlClient:
    """A connection to a switch's control endpoint; raises ``CtlError`` on any failure."""

    def __init__(self, address: str = DEFAULT_CTL_ADDR, timeout: float = 5.0) -> None:
        host, port = parse_host_port(address, "--addr")
        self.address = address
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as err:
            raise CtlError(f"--addr {address}: cannot connect to the switch: {err.strerror or err}") from err
        self._file = self._sock.makefile("rb")

    def call(self, cmd: str, **args: Any) -> Any:
        request = {"cmd": cmd, "args": {k: v for k, v in args.items() if v is not None}}
        try:
            self._sock.sendall(json.dumps(request).encode() + b"\n")
            line = self._file.readline()
        except OSError as err:
            raise CtlError(f"{self.address}: {cmd}: connection failed: {err}") from err
        if not line:
            raise CtlError(f"{self.address}: {cmd}: the switch closed the connection")
        reply = json.loads(line)
        if "error" in reply:
            raise CtlError(f"{self.address}: {cmd}: {reply['error']}")
        return reply.get("result")

    def set_queue_depth(self, depth: int, port: int | None = None, prio: int | None = None) -> None:
        self.call("set_queue_depth", depth=depth, port=port, prio=prio)

    def set_queue_rate(self, rate_pps: int, port: int | None = None, prio: int | None = None) -> None:
        self.call("set_queue_rate", rate_pps=rate_pps, port=port, prio=prio)

    def set_port_rate(self, port: int, bits: int) -> None:
        self.call("set_port_rate", port=port, bits=bits)

    def show_queues(self) -> dict:
        return self.call("show_queues")

    def stats(self) -> dict:
        return self.call("stats")

    def close(self) -> None:
        self._file.close()
        self._sock.close()

    def __enter__(self) -> CtlClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _rate(value: int, unit: str) -> str:
    return f"{value} {unit}" if value else "unlimited"


def format_queues(snap: dict) -> str:
    """Human table for ``show_queues``: a line per port, then a line per priority queue (idle ones
    too) with its current depth / limit, pacing rate and counters."""
    lines = [f"priority queues per port: {snap['priority_queues']}, default depth {snap['default_depth']}, "
             f"default rate {_rate(snap['default_rate_pps'], 'pps')}, priority drops: {snap['priority_drops']}"]
    for port, p in snap["ports"].items():
        lines.append(f"port {port}: link {_rate(p['rate_bps'], 'bit/s')}, queued {p['size']}, "
                     f"sent {p['sent_bytes']} B")
        for q in p["queues"]:
            lines.append(f"  prio {q['prio']}: depth {q['depth']}/{q['limit']} rate {_rate(q['rate_pps'], 'pps')} "
                         f"enq {q['enqueued']} deq {q['dequeued']} tail_drops {q['tail_drops']}")
    if not snap["ports"]:
        lines.append("no ports yet")
    return "\n".join(lines)


def _nonneg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def register(subparsers) -> None:
    p = subparsers.add_parser("ctl", help="change queue depth/rate of a running p4sim switch",
                              description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--addr", default=DEFAULT_CTL_ADDR, help="the switch's --ctl-addr (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print replies as JSON")
    sub = p.add_subparsers(dest="ctl_command", required=True, metavar="COMMAND")
    s = sub.add_parser("set_queue_depth", help="packets per queue (all ports if PORT omitted)")
    s.add_argument("depth", type=_nonneg)
    s.add_argument("port", type=_nonneg, nargs="?")
    s.add_argument("prio", type=_nonneg, nargs="?")
    s = sub.add_parser("set_queue_rate", help="packets/s per queue, 0 = unlimited (BMv2 semantics)")
    s.add_argument("rate_pps", type=_nonneg)
    s.add_argument("port", type=_nonneg, nargs="?")
    s.add_argument("prio", type=_nonneg, nargs="?")
    s = sub.add_parser("set_port_rate", help="shared link rate of a port in bits/s, 0 = unlimited")
    s.add_argument("port", type=_nonneg)
    s.add_argument("bits", type=_nonneg)
    sub.add_parser("show_queues", help="queue depths, limits, rates, drop counters")
    sub.add_parser("stats", help="switch counters and queues as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with CtlClient(args.addr) as client:
        cmd = args.ctl_command
        if cmd == "set_queue_depth":
            client.set_queue_depth(args.depth, args.port, args.prio)
        elif cmd == "set_queue_rate":
            client.set_queue_rate(args.rate_pps, args.port, args.prio)
        elif cmd == "set_port_rate":
            client.set_port_rate(args.port, args.bits)
        elif cmd == "show_queues":
            snap = client.show_queues()
            print(json.dumps(snap, indent=1) if args.json else format_queues(snap))
        elif cmd == "stats":
            print(json.dumps(client.stats(), indent=1))
    return 0
