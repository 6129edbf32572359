"""``p4sim switch``: run a p4sim switch with simple_switch_grpc's flags (see docs/p4sim.md).

    p4sim switch --device-id 1 -i 1@veth1 -i 2@veth2 --grpc-server-addr 127.0.0.1:9559 \\
        --cpu-port 255 --ctl-addr 127.0.0.1:9090 build/dlcp.p4sim.json

The process prints one ``ready`` line on stdout once every endpoint listens, then forwards until
SIGINT/SIGTERM, when it stops the gRPC server, the control endpoint and the packet thread, and
closes every socket and pcap file.

The P4Runtime server listens on loopback unless told otherwise, and warns when it is bound
elsewhere without TLS (``--grpc-server-ssl``, simple_switch_grpc's TLS flags).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import sys
import threading

from p4sim.errors import UserError
from p4sim.switch import gcpause
from p4sim.switch.ctl_server import CtlServer
from p4sim.switch.device import INGRESS_ORDERS, SwitchDevice
from p4sim.switch.ports import parse_interface_spec
from p4sim.switch.ready import ready_line
from p4sim.switch.tm import DEFAULT_PRIORITY_QUEUES

log = logging.getLogger("p4sim.switch")

# simple_switch's --log-level names -> Python logging names
DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
STOP_JOIN_TIMEOUT = 5.0     # seconds shutdown waits for each part before leaving it behind

_LOG_LEVELS = {"trace": "debug", "debug": "debug", "info": "info", "warn": "warning", "warning": "warning",
               "error": "error", "critical": "critical", "off": "critical"}


def _log_level(text: str) -> str:
    try:
        return _LOG_LEVELS[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"{text!r}: one of {', '.join(_LOG_LEVELS)}") from None


def _int_arg(lo: int, hi: int | None = None):
    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"{value} is not in {lo}..{hi if hi is not None else ''}")
        return value
    return parse


def _port_rate(text: str) -> tuple[int, int]:
    port, sep, bits = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(port), int(float(bits))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected PORT:BITS_PER_S, e.g. 1:10e6") from None


def register(subparsers) -> None:
    p = subparsers.add_parser("switch", help="run a p4sim switch (simple_switch_grpc's flags)",
                              description=__doc__.replace("``", ""),   # reST quotes are noise in --help
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("program", nargs="?", help="compiled program (OUT/<name>.p4sim.json) or a .p4 source")
    p.add_argument("target_options", nargs="*", metavar="-- TARGET_OPTION",
                   help="simple_switch_grpc's target options after '--' (--grpc-server-addr, --cpu-port, "
                        "--priority-queues, --drop-port) are accepted there too")
    p.add_argument("--no-p4", action="store_true", help="start without a program; wait for one over P4Runtime")
    p.add_argument("--device-id", type=_int_arg(0), default=0, help="P4Runtime device id (default 0)")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                   help="attach interface IFACE as port PORT (repeatable)")
    p.add_argument("--packet-in", metavar="ADDR", help="BMv2 nanomsg packet interface, e.g. ipc:///tmp/bm.ipc")
    p.add_argument("--grpc-server-addr", metavar="HOST:PORT",
                   help=f"P4Runtime server address (default {DEFAULT_GRPC_ADDR}; simple_switch_grpc's "
                        "is 0.0.0.0:9559)")
    p.add_argument("--grpc-server-ssl", action="store_true", help="serve P4Runtime over TLS")
    p.add_argument("--grpc-server-cert", metavar="PEM", help="server certificate (with --grpc-server-ssl)")
    p.add_argument("--grpc-server-key", metavar="PEM", help="server private key (with --grpc-server-ssl)")
    p.add_argument("--grpc-server-cacert", metavar="PEM", help="CA certificate that signs client certificates")
    p.add_argument("--grpc-server-with-client-auth", action="store_true",
                   help="mutual TLS: refuse clients without a certificate signed by --grpc-server-cacert")
    p.add_argument("--no-grpc", action="store_true", help="do not start the P4Runtime server")
    p.add_argument("--cpu-port", type=_int_arg(0, 510), help="port that carries packet-in/packet-out")
    p.add_argument("--arch", choices=("v1model", "tna", "t2na"), default="v1model",
                   help="architecture of a .p4 program: v1model (default), tna (Tofino1) or t2na (Tofino2)")
    p.add_argument("--priority-queues", type=_int_arg(1, 32), default=DEFAULT_PRIORITY_QUEUES,
                   help=f"strict-priority queues per egress port (default {DEFAULT_PRIORITY_QUEUES}, as "
                        "simple_switch; a packet with priority >= N is dropped)")
    p.add_argument("--queue-depth", type=_int_arg(1), default=64, help="packets per queue (default 64)")
    p.add_argument("--ingress-priority", choices=INGRESS_ORDERS, default="fifo",
                   help="order of ingress within a loop turn: fifo (as the rings hold the frames, as BMv2; "
                        "default) or dscp (highest DSCP class selector first, stable within a class: a "
                        "line-rate parser's per-priority ingress buffers; p4sim only)")
    p.add_argument("--queue-rate", type=_int_arg(0), default=0,
                   help="packets/s per queue, BMv2 set_queue_rate semantics (default 0 = unlimited)")
    p.add_argument("--link-rate", type=float, default=0, metavar="BITS",
                   help="shared link rate of every port in bits/s (default 0 = unlimited)")
    p.add_argument("--port-rate", type=_port_rate, action="append", default=[], metavar="PORT:BITS",
                   help="shared link rate of one port in bits/s (repeatable)")
    p.add_argument("--ctl-addr", default=None, metavar="HOST:PORT",
                   help="runtime control endpoint for `p4sim ctl` (default 127.0.0.1:9090)")
    p.add_argument("--thrift-port", type=_int_arg(0, 65535), help="same as --ctl-addr 127.0.0.1:PORT")
    p.add_argument("--pcap", nargs="?", const=".", metavar="DIR",
                   help="write <iface>_in.pcap / <iface>_out.pcap per port into DIR (default .)")
    p.add_argument("--log-console", action="store_true", help="log to stderr")
    p.add_argument("--log-file", metavar="PATH", help="log to PATH")
    p.add_argument("--log-level", type=_log_level, default="info",
                   help="trace|debug|info|warn|error|off (default info)")
    p.add_argument("--name", help="name used as the log prefix (default p4sim<device-id>)")
    p.add_argument("--include-dir", action="append", default=[], metavar="DIR",
                   help="include directory when PROGRAM is a .p4 source")
    p.set_defaults(func=run)


def _setup_logging(args: argparse.Namespace) -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    level = getattr(logging, args.log_level.upper())
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(level if args.log_console else logging.WARNING)
    console.setFormatter(fmt)
    root.addHandler(console)
    if args.log_file:
        try:
            fh = logging.FileHandler(args.log_file)
        except OSError as err:
            raise UserError(f"--log-file {args.log_file}: {err.strerror}") from err
        fh.setLevel(level)
        fh.setFormatter(fmt)
        root.addHandler(fh)
    root.setLevel(min(level, logging.WARNING))


def load_program_file(path: str, include_dirs: list[str], arch: str = "v1model"):
    """A compiled program file (device config bytes) or a .p4 source compiled on the spot for
    ``arch`` (v1model, or tna/t2na: the Tofino model, __TARGET_TOFINO__ 1 or 2)."""
    if not os.path.isfile(path):
        raise UserError(f"{path}: no such program file")
    try:
        from p4sim.backend import CompiledProgram, compile_file
    except ImportError as err:
        raise UserError(f"{path}: the p4sim backend is not available ({err})") from err
    if path.endswith(".p4"):
        if arch in ("tna", "t2na"):
            from p4sim.tna.program import compile_tna
            return compile_tna(path, include_dirs, arch)
        return compile_file(path, include_dirs)
    with open(path, "rb") as f:
        return CompiledProgram.from_device_config(f.read())


def _target_parser() -> argparse.ArgumentParser:
    t = argparse.ArgumentParser(prog="p4sim switch ... --", add_help=False, exit_on_error=False)
    t.add_argument("--grpc-server-addr")
    t.add_argument("--cpu-port", type=_int_arg(0, 510))
    t.add_argument("--priority-queues", type=_int_arg(1, 32))
    t.add_argument("--drop-port", type=_int_arg(0, 511))
    t.add_argument("--grpc-server-ssl", action="store_true", default=None)
    t.add_argument("--grpc-server-cert")
    t.add_argument("--grpc-server-key")
    t.add_argument("--grpc-server-cacert")
    t.add_argument("--grpc-server-with-client-auth", action="store_true", default=None)
    return t


def merge_target_options(args: argparse.Namespace) -> None:
    """``p4sim switch prog.json -- --cpu-port 255`` as simple_switch_grpc takes it."""
    extra = list(args.target_options or [])
    if args.program and args.program.startswith("-"):     # everything came after '--'
        extra.insert(0, args.program)
        args.program = None
    if not args.program and extra and not extra[0].startswith("-"):
        args.program = extra.pop(0)
    if not extra:
        return
    try:
        parsed, unknown = _target_parser().parse_known_args(extra)
    except argparse.ArgumentError as err:
        raise UserError(f"target option: {err}") from None
    if unknown:
        raise UserError(f"unknown target option(s) after '--': {' '.join(unknown)}")
    for key, value in vars(parsed).items():
        if value is not None:
            setattr(args, key, value)


def build_switch(args: argparse.Namespace):
    """Device, control server and P4Runtime server from parsed flags; nothing left open on error."""
    merge_target_options(args)
    if args.program and args.no_p4:
        raise UserError("give either a PROGRAM or --no-p4, not both")
    if not args.program and not args.no_p4:
        raise UserError("no program: give OUT/<name>.p4sim.json (or a .p4) or --no-p4")
    specs = [parse_interface_spec(s) for s in args.interface]
    program = load_program_file(args.program, args.include_dir, args.arch) if args.program else None
    device = SwitchDevice(device_id=args.device_id, cpu_port=args.cpu_port,
                          priority_queues=args.priority_queues, queue_depth=args.queue_depth,
                          name=args.name, pcap_dir=args.pcap, drop_port=getattr(args, "drop_port", None) or 511,
                          ingress_priority=args.ingress_priority)
    ctl = grpc = None
    try:
        device.tm.set_queue_rate(args.queue_rate)
        device.tm.set_port_rate(None, int(args.link_rate))
        for port, bits in args.port_rate:
            device.tm.set_port_rate(port, bits)
        if program is not None:
            device.load_program(program)
        for port, ifname in specs:
            device.add_interface(port, ifname)
        if args.packet_in:
            device.add_nanomsg(args.packet_in)
        device.start()
        ctl_addr = args.ctl_addr or (f"127.0.0.1:{args.thrift_port}" if args.thrift_port is not None
                                     else "127.0.0.1:9090")
        ctl = CtlServer(device, ctl_addr)
        ctl.start()
        if not args.no_grpc:
            grpc = _start_grpc(device, args.grpc_server_addr, _tls_config(args))
    except BaseException:
        if ctl is not None:
            ctl.stop()
        device.stop()
        raise
    return device, ctl, grpc


def _tls_config(args: argparse.Namespace):
    """TlsConfig from simple_switch_grpc's TLS flags, or None; flags that need --grpc-server-ssl
    without it are an error rather than silently plaintext."""
    ssl = bool(getattr(args, "grpc_server_ssl", False))
    given = [flag for flag, value in (("--grpc-server-cert", args.grpc_server_cert),
                                      ("--grpc-server-key", args.grpc_server_key),
                                      ("--grpc-server-cacert", args.grpc_server_cacert),
                                      ("--grpc-server-with-client-auth", args.grpc_server_with_client_auth))
             if value]
    if not ssl:
        if given:
            raise UserError(f"{given[0]} needs --grpc-server-ssl (without it the server would be plaintext)")
        return None
    from p4sim.p4runtime_server.server import TlsConfig
    return TlsConfig.from_files(args.grpc_server_cert, args.grpc_server_key, args.grpc_server_cacert,
                                bool(args.grpc_server_with_client_auth))


def is_loopback_address(address: str) -> bool:
    """True when HOST:PORT names a loopback host (127.0.0.0/8, ::1, localhost)."""
    host = address.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _start_grpc(device: SwitchDevice, address: str | None, tls=None):
    try:
        from p4sim.p4runtime_server import P4RuntimeServer
    except ImportError as err:
        if address:
            raise UserError(f"--grpc-server-addr {address}: the P4Runtime server is not available ({err})") \
                from err
        device.log.warning("P4Runtime server not available (%s); running without it", err)
        return None
    address = address or DEFAULT_GRPC_ADDR
    if tls is None and not is_loopback_address(address):
        device.log.warning("P4Runtime on %s without TLS: anyone who reaches this address can program the "
                           "switch (use --grpc-server-ssl, or keep it on 127.0.0.1)", address)
    server = P4RuntimeServer(device, address, tls)
    port = server.start()
    server.bound_address = f"{address.rpartition(':')[0]}:{port}"
    return server


def run(args: argparse.Namespace) -> int:
    _setup_logging(args)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    gcpause.claim_heap()       # this process is the switch: its heap may be frozen (gcpause)
    try:
        device, ctl, grpc = build_switch(args)
        if device.program is not None:      # loaded from the command line: keep it out of full collections
            gcpause.freeze_heap()
        try:
            grpc_addr = getattr(grpc, "bound_address", "-") if grpc is not None else "-"
            ports = ",".join(f"{n}@{p.name}" for n, p in sorted(device.ports.items()))
            print(ready_line(device.name, device.device_id, ctl.address, grpc_addr, ports), flush=True)
            while not stop.wait(1.0):
                pass
            device.log.info("shutting down")
        finally:
            if grpc is not None:
                grpc.stop()
            ctl.stop()
            device.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
