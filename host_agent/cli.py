"""``dlcp-agent``: the host agent as processes (run by experiments inside Mininet hosts).

Subcommands: ``recv`` (accept any tensors, report each), ``gen`` (send synthetic profile traffic),
``ps-server`` / ``worker`` (parameter-server push/pull), ``allreduce`` (one ring rank), ``train``
(the whole digits job in one process). Results are JSON lines (``--out``, default stdout); bad
input gives one ``dlcp-agent: error: ...`` line and exit status 1 (argparse usage errors: 2).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import socket
import sys
import time
from dataclasses import replace

import numpy as np

from host_agent import overlap
from host_agent.collectives import PS_SERVER_ID
from host_agent.endpoint import Endpoint, EndpointConfig, RecvHandle, last_as_probe, shed_droppable
from host_agent.errors import HostAgentError, TransportError, UserError
from host_agent.overlap import ComputeModel
from host_agent.packetizer import packetize
from host_agent.policy import BASELINE_POLICY, TagPolicy, load_policy
from host_agent.ratecontrol import RateConfig
from host_agent.receiver import SHED_SENDERS
from host_agent.tcp_baseline import FRAME, recv_exact, send_tensor
from host_agent.training import TrainConfig, train, write_jsonl
from host_agent.workloads import make_workload

MODES = ("dlcp", "baseline", "tcp")
COMPUTE_LINK_MBPS = 20.0     # link speed the emulated compute is scaled to when --link-mbps is not given


def hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return v


def _common(p: argparse.ArgumentParser, bind_default: str = "0.0.0.0:9290") -> None:
    p.add_argument("--bind", type=hostport, default=hostport(bind_default),
                   help=f"local UDP (tcp mode: TCP) address HOST:PORT (default {bind_default})")
    p.add_argument("--job", type=int, default=1, help="DLCP job id (default 1)")
    p.add_argument("--mode", choices=MODES, default="dlcp",
                   help="dlcp: tagged, bounded loss; baseline: same packets untagged, fully reliable; tcp")
    p.add_argument("--policy", help="tag policy file (JSON or YAML; fields of host_agent.policy.TagPolicy)")
    p.add_argument("--loss-bound", type=fraction, help="p: share of non-critical packets allowed lost (default 0.1)")
    p.add_argument("--rate", type=float, help="initial sending rate in Mbit/s (default: unpaced until ECN/loss)")
    p.add_argument("--mtu", type=int, default=1500, help="IP MTU used to size packets (default 1500)")
    p.add_argument("--offload", choices=("auto", "on", "off"), default="auto",
                   help="UDP GSO/GRO: auto = GRO, and GSO only to 127.0.0.0/8 (safe with AF_PACKET software "
                        "switches); on = GSO everywhere; off = one datagram per syscall")
    p.add_argument("--receive-deadline", type=float,
                   help="seconds after a tensor's OPEN after which it completes as soon as the loss bound is met")
    p.add_argument("--shed-droppable", action=argparse.BooleanOptionalAction, default=None,
                   help="shed droppable packets while a receiver holds senders (default on; environment "
                        "DLCP_SHED_DROPPABLE=0/1 when neither flag is given): as a receiver with more than "
                        f"{SHED_SENDERS} active senders, flag GRANTs; as a sender to a receiver whose last GRANT "
                        "was flagged, leave out the packets it can do without by design (not CRITICAL, magnitude "
                        "below the protected class, not LAST, within the loss bound); --no-shed-droppable: never")
    p.add_argument("--last-as-probe", action=argparse.BooleanOptionalAction, default=None,
                   help="as a receiver, take a tensor's LAST DATA packet (first transmission) arriving before any "
                        "PROBE as PROBE(0): DONE at once when the loss bound is met, else BITMAP(0) after the "
                        "hold-off, then DONE on the DATA that meets the bound, without waiting for the sender's "
                        "PROBE (default on; environment DLCP_LAST_AS_PROBE=0/1 when neither flag is given); "
                        "--no-last-as-probe: only PROBEs do")
    p.add_argument("--out", default="-", help="JSON-lines output file, appended to (default stdout)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds before giving up (recv: seconds without traffic) (default 60)")
    p.add_argument("--seed", type=int, default=0, help="seed of synthetic data (default 0)")


def _schedule_args(p: argparse.ArgumentParser) -> None:
    """How an iteration runs: emulated compute, overlap, TCP flavour, start-up patience."""
    p.add_argument("--compute-ratio", type=float, default=0.0,
                   help="emulated compute per iteration as a multiple of the time this worker's gradients take "
                        "on one --link-mbps link (0: no compute, communication only) (default 0)")
    p.add_argument("--link-mbps", type=float, help="this host's link speed: the compute is scaled to it (default 20), "
                        "and DLCP paces each destination at most at it and grants its senders a share of it "
                        "(default: unknown, no grants, unpaced until ECN/loss)")
    p.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=True,
                   help="push each layer when backprop produces it and start the forward pass layer by layer "
                        "as parameters arrive (--no-overlap: compute, then all communication)")
    p.add_argument("--tcp-cc", help="tcp mode: congestion control per socket (TCP_CONGESTION), e.g. cubic, bbr "
                                    "(default: the system's)")
    p.add_argument("--start-timeout", type=float, default=30.0,
                   help="seconds to keep retrying to reach peers that are still starting (default 30)")


def _workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", default="digits",
                   help="digits, digits-wide (real MLP training) or a model profile: resnet50, vgg16, bert-base, "
                        "gpt2-small")
    p.add_argument("--scale", type=float, default=1.0, help="profile size factor in (0, 1] (default 1)")
    p.add_argument("--iterations", type=int, default=10, help="training iterations (default 10)")
    p.add_argument("--workers", type=int, required=True, help="number of workers in the job")
    _schedule_args(p)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="dlcp-agent", description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true", help="debug logging to stderr")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("recv", help="receive tensors from any sender, one JSON line per tensor")
    _common(p)
    p.add_argument("--count", type=int, default=0, help="exit after this many tensors (0: until --timeout idle)")
    p.set_defaults(func=cmd_recv)
    p = sub.add_parser("gen", help="send synthetic gradient traffic of a model profile")
    _common(p, "0.0.0.0:0")
    p.add_argument("--dest", type=hostport, required=True, help="receiver HOST:PORT")
    p.add_argument("--profile", default="resnet50", help="model profile name or JSON file (default resnet50)")
    p.add_argument("--scale", type=float, default=0.01, help="profile size factor in (0, 1] (default 0.01)")
    p.add_argument("--iterations", type=int, default=1, help="iterations to send (default 1)")
    p.add_argument("--worker", type=int, default=0, help="worker id put in the packets (default 0)")
    p.set_defaults(func=cmd_gen)
    p = sub.add_parser("ps-server", help="parameter server: sum gradients, push parameters back")
    _common(p)
    _workload_args(p)
    p.set_defaults(func=cmd_ps_server)
    p = sub.add_parser("worker", help="parameter-server worker: push gradients, pull parameters")
    _common(p, "0.0.0.0:0")
    _workload_args(p)
    p.add_argument("--server", type=hostport, required=True, help="ps-server HOST:PORT")
    p.add_argument("--rank", type=int, required=True, help="this worker's rank (0..workers-1)")
    p.add_argument("--save-npz", help="write the final parameters to this .npz file")
    p.set_defaults(func=cmd_worker)
    p = sub.add_parser("allreduce", help="one rank of a ring all-reduce of profile gradients")
    _common(p)
    p.add_argument("--rank", type=int, required=True, help="this rank (index into --peers)")
    p.add_argument("--peers", required=True, help="comma-separated HOST:PORT of every rank, in ring order")
    p.add_argument("--workload", default="resnet50", help="model profile (default resnet50)")
    p.add_argument("--scale", type=float, default=0.01, help="profile size factor (default 0.01)")
    p.add_argument("--iterations", type=int, default=1, help="all-reduces to run (default 1)")
    p.add_argument("--buckets", type=int, default=4, help="gradient buckets, reduced last first (default 4)")
    p.add_argument("--buckets-in-flight", type=int, default=1,
                   help="buckets reduced at once, in every mode (default 1; gloo runs 2 worker threads)")
    p.add_argument("--save-npz", help="write the reduced gradients of the last iteration to this .npz")
    _schedule_args(p)
    p.set_defaults(func=cmd_allreduce)
    p = sub.add_parser("relay", help="lossy UDP relay: drop non-critical DLCP DATA at random, mark CE")
    p.add_argument("--bind", type=hostport, required=True, help="address clients send to HOST:PORT")
    p.add_argument("--target", type=hostport, required=True, help="receiver HOST:PORT")
    p.add_argument("--drop-noncritical", type=fraction, default=0.0, help="drop probability (default 0)")
    p.add_argument("--mark-ce", action="store_true", help="set ECN CE on every forwarded packet")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--duration", type=float, default=0.0, help="seconds to run (0: until SIGTERM/SIGINT)")
    p.add_argument("--out", default="-")
    p.set_defaults(func=cmd_relay)
    sub.add_parser("torch-train", help="PyTorch DDP digits CNN over DLCP or gloo (torch-train -h for its flags)")
    p = sub.add_parser("train", help="whole digits data-parallel job in this process (threads, loopback)")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--mode", choices=MODES, default="dlcp")
    p.add_argument("--loss-rate", type=fraction, default=0.0, help="random loss of non-critical gradient packets")
    p.add_argument("--loss-bound", type=fraction, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="-")
    p.set_defaults(func=cmd_train)
    return ap


# -- helpers ------------------------------------------------------------------------------------
def make_policy(args: argparse.Namespace) -> TagPolicy:
    if args.mode == "baseline":
        return BASELINE_POLICY
    pol = load_policy(args.policy) if args.policy else TagPolicy()
    if args.loss_bound is not None:
        pol = replace(pol, loss_bound=args.loss_bound)
    return pol


def make_endpoint(args: argparse.Namespace, worker_id: int) -> Endpoint:
    """The agent's endpoint; as a receiver it counts droppable packets by its tag policy's protected class."""
    rate = RateConfig(initial_rate=args.rate * 1e6 / 8) if args.rate else RateConfig()
    link_mbps = getattr(args, "link_mbps", None)
    link_rate = link_mbps * 1e6 / 8 if link_mbps else None
    shed = getattr(args, "shed_droppable", None)
    last = getattr(args, "last_as_probe", None)
    try:
        return Endpoint(EndpointConfig(job_id=args.job, worker_id=worker_id, bind=args.bind, rate=rate,
                                       link_rate=link_rate,
                                       give_up_after=min(args.timeout, 30.0), offload=args.offload,
                                       receive_deadline=args.receive_deadline,
                                       shed_droppable=shed_droppable() if shed is None else shed,
                                       last_as_probe=last_as_probe() if last is None else last,
                                       protected_mag_class=make_policy(args).protected_mag_class))
    except OSError as exc:
        raise UserError(f"--bind {args.bind[0]}:{args.bind[1]}: {exc.strerror}") from None


def tensor_record(h: RecvHandle, arr: np.ndarray) -> dict:
    s = h.stats
    assert s is not None
    return {"event": "tensor", "worker": h.worker_id, "iteration": h.iteration, "tensor_id": h.tensor_id,
            "elements": int(arr.size), "sha256": hashlib.sha256(arr.tobytes()).hexdigest(),
            "layer_class": h.layer_class, "packets": s.n_packets, "received": s.received,
            "zero_filled_packets": s.zero_filled_packets, "zero_filled_elements": s.zero_filled_elements,
            "duplicates": s.duplicates, "ce_marks": s.ce_marks}


# -- subcommands --------------------------------------------------------------------------------
def cmd_recv(args: argparse.Namespace) -> int:
    out = write_jsonl(args.out)
    if args.mode == "tcp":
        return _recv_tcp(args, out)
    ep = make_endpoint(args, 0)
    done: list[RecvHandle] = []
    ep.on_unexpected = done.append
    out({"event": "listening", "address": f"{ep.address[0]}:{ep.address[1]}"})
    last = time.monotonic()
    n = seen = 0
    while not args.count or n < args.count:
        ep.poll(0.05)
        while done:
            h = done.pop(0)
            assert h.assembly is not None
            out(tensor_record(h, h.assembly.out))
            ep.release(h)
            n += 1
        activity = ep.packets_received + sum(ep.drops.values()) + n
        if activity != seen:                      # idle timeout: --timeout without any packet
            seen, last = activity, time.monotonic()
        elif time.monotonic() - last > args.timeout:
            break
    out({"event": "summary", "tensors": n, "drops": dict(ep.drops)})
    ep.close(linger=0.5)
    if args.count and n < args.count:
        raise TransportError(f"recv: {n} of {args.count} tensors arrived before {args.timeout:g}s without traffic")
    return 0


def _recv_tcp(args: argparse.Namespace, out) -> int:
    srv = socket.create_server(args.bind)
    srv.settimeout(args.timeout)
    out({"event": "listening", "address": "{}:{}".format(*srv.getsockname())})
    conn, _ = srv.accept()
    n = 0
    head = bytearray(FRAME.size)
    while not args.count or n < args.count:
        try:
            recv_exact(conn, memoryview(head))
        except HostAgentError:
            break
        tid, wid, nbytes = FRAME.unpack(head)
        arr = np.empty(nbytes // 4, np.float32)
        recv_exact(conn, memoryview(arr).cast("B"))
        out({"event": "tensor", "worker": wid, "tensor_id": tid, "elements": int(arr.size),
             "sha256": hashlib.sha256(arr.tobytes()).hexdigest()})
        n += 1
    conn.close()
    srv.close()
    return 0


def cmd_gen(args: argparse.Namespace) -> int:
    from host_agent.workloads import ProfileWorkload
    out = write_jsonl(args.out)
    wl = ProfileWorkload(args.profile, args.scale, args.seed)
    n = len(wl.shapes)
    if args.mode == "tcp":
        sock = socket.create_connection(args.dest, timeout=args.timeout)
        for it in range(args.iterations):
            t0 = time.perf_counter()
            grads = wl.gradients(args.worker, it, [])
            nbytes = sum(send_tensor(sock, tid, args.worker, g) for tid, g in enumerate(grads))
            out({"event": "iteration", "iteration": it, "mode": "tcp", "bytes_sent": nbytes,
                 "comm_seconds": round(time.perf_counter() - t0, 6),
                 "sha256": [hashlib.sha256(g.tobytes()).hexdigest() for g in grads]})
        sock.close()
        return 0
    policy = make_policy(args)
    ep = make_endpoint(args, args.worker)
    for it in range(args.iterations):
        grads = wl.gradients(args.worker, it, [])
        t0 = time.perf_counter()
        sends = [ep.send(packetize(g, tensor_id=tid, policy=policy, position=tid, num_layers=n, job_id=args.job,
                                   worker_id=args.worker, iteration=it, mtu=args.mtu), args.dest)
                 for tid, g in enumerate(grads)]
        ep.run(sends, timeout=args.timeout)
        out({"event": "iteration", "iteration": it, "mode": args.mode,
             "comm_seconds": round(time.perf_counter() - t0, 6),
             "bytes_sent": sum(h.stats.bytes for h in sends),
             "retransmissions": sum(h.stats.retransmitted for h in sends),
             "shed_packets": sum(h.stats.shed for h in sends),
             "zero_filled_elements": sum(h.stats.zero_filled_elements for h in sends),
             "ce_marks": sum(h.stats.ce_marks for h in sends),
             "sha256": [hashlib.sha256(g.tobytes()).hexdigest() for g in grads]})
    ep.close()
    return 0


def _compute(args: argparse.Namespace, wl) -> ComputeModel:
    return ComputeModel.scaled([int(np.prod(x)) for x in wl.shapes], args.link_mbps or COMPUTE_LINK_MBPS,
                               args.compute_ratio)


def cmd_ps_server(args: argparse.Namespace) -> int:
    out = write_jsonl(args.out)
    wl = make_workload(args.workload, args.workers, args.scale, args.seed)
    endpoints: list[Endpoint] = []          # the DLCP endpoint, once made (its counters go into records)

    def emit(it: int, st) -> None:
        rec = st.as_record()
        rec["packets_by_class"] = {str(k): v for k, v in sorted(st.packets_by_class.items())}
        rec["missing_by_class"] = {str(k): v for k, v in sorted(st.missing_by_class.items())}
        if endpoints:
            rec["transport"] = endpoints[0].counters()
        out({"event": "iteration", "role": "ps-server", "iteration": it, "mode": args.mode, **rec})

    if args.mode == "tcp":
        overlap.ps_server_tcp(args.bind, args.tcp_cc, wl, args.workers, args.iterations, args.timeout, emit,
                              on_listening=lambda a: out({"event": "listening", "address": "{}:{}".format(*a)}),
                              start_timeout=args.start_timeout, mtu=args.mtu)
        return 0
    ep = make_endpoint(args, PS_SERVER_ID)
    endpoints.append(ep)
    out({"event": "listening", "address": "{}:{}".format(*ep.address)})
    overlap.ps_server_udp(ep, wl, args.workers, args.iterations, make_policy(args), args.mtu, args.timeout, emit)
    ep.close(linger=0.5)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    if not 0 <= args.rank < args.workers:
        raise UserError(f"--rank {args.rank}: must be in 0..{args.workers - 1}")
    out = write_jsonl(args.out)
    wl = make_workload(args.workload, args.workers, args.scale, args.seed)
    compute = _compute(args, wl)

    def emit(rec: overlap.IterationRecord, params: list[np.ndarray]) -> None:
        out({"event": "iteration", "role": "worker", "rank": args.rank, "iteration": rec.iteration,
             "mode": args.mode, **rec.as_record(), **wl.evaluate(params)})

    if args.mode == "tcp":
        params = overlap.ps_worker_tcp(args.server, args.tcp_cc, wl, args.rank, args.iterations, compute,
                                       args.overlap, args.timeout, args.start_timeout, emit, mtu=args.mtu)
    else:
        ep = make_endpoint(args, args.rank)
        params = overlap.ps_worker_udp(ep, args.server, wl, args.rank, args.iterations, compute, args.overlap,
                                       make_policy(args), args.mtu, args.timeout, emit)
        ep.close(linger=0.5)
    if args.save_npz:
        np.savez(args.save_npz, *params)
    return 0


def cmd_allreduce(args: argparse.Namespace) -> int:
    try:
        peers = [hostport(x) for x in args.peers.split(",")]
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"--peers: {exc}") from None
    if not 0 <= args.rank < len(peers):
        raise UserError(f"--rank {args.rank}: must be in 0..{len(peers) - 1}")
    if args.buckets < 1:
        raise UserError(f"--buckets {args.buckets}: must be >= 1")
    if args.buckets_in_flight < 1:
        raise UserError(f"--buckets-in-flight {args.buckets_in_flight}: must be >= 1")
    out = write_jsonl(args.out)
    wl = make_workload(args.workload, len(peers), args.scale, args.seed)
    compute = _compute(args, wl)
    last: list[np.ndarray] = []

    def emit(rec: overlap.IterationRecord, data: np.ndarray) -> None:
        last[:] = [data]
        out({"event": "iteration", "role": "allreduce", "rank": args.rank, "iteration": rec.iteration,
             "mode": args.mode, **rec.as_record(), "sha256": hashlib.sha256(data.tobytes()).hexdigest()})

    if args.mode == "tcp":
        overlap.allreduce_worker_tcp(args.rank, peers, args.tcp_cc, wl, args.iterations, compute, args.overlap,
                                     args.timeout, args.start_timeout, args.buckets, emit, args.buckets_in_flight)
    else:
        ep = make_endpoint(args, args.rank)
        overlap.allreduce_worker_udp(ep, args.rank, peers, wl, args.iterations, compute, args.overlap,
                                     make_policy(args), args.mtu, args.timeout, args.buckets, emit,
                                     args.buckets_in_flight)
        ep.close(linger=0.5)
    if args.save_npz and last:
        np.savez(args.save_npz, last[0])
    return 0


def cmd_relay(args: argparse.Namespace) -> int:
    import signal
    import threading

    from host_agent.relay import LossyRelay, drop_noncritical
    out = write_jsonl(args.out)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    rule = drop_noncritical(args.drop_noncritical, args.seed) if args.drop_noncritical else None
    try:
        relay = LossyRelay(args.target, rule, mark_ce=args.mark_ce, bind=args.bind)
    except OSError as exc:
        raise UserError(f"--bind {args.bind[0]}:{args.bind[1]}: {exc.strerror}") from None
    with relay:
        out({"event": "listening", "address": "{}:{}".format(*relay.address)})
        try:
            stop.wait(args.duration or None)
        except KeyboardInterrupt:
            pass
    out({"event": "summary", "forwarded": relay.forwarded, "dropped": dict(relay.dropped)})
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    acc = train(TrainConfig(workers=args.workers, epochs=args.epochs, mode=args.mode, loss_rate=args.loss_rate,
                            loss_bound=args.loss_bound, seed=args.seed), write_jsonl(args.out))
    write_jsonl(args.out)({"event": "final", "accuracy": acc, "mode": args.mode, "loss_rate": args.loss_rate})
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["torch-train"]:   # own flags (host_agent/torch_train.py); imports torch only here
        from host_agent.torch_train import main as torch_train
        return torch_train(argv[1:])
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="dlcp-agent %(name)s: %(message)s")
    try:
        return args.func(args)
    except (HostAgentError, OSError) as exc:
        print(f"dlcp-agent: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
