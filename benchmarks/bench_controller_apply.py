"""Controller benchmark: 10,000 routes plus the DLCP policy onto one switch, and a no-op ``apply``
on a 10-switch network.

Switches are real ``p4sim switch`` processes (``--target p4sim``, the default; the controller pushes
the compiled DLCP program) or, in this process, p4sim ``SwitchDevice``s running the same program
behind p4sim's real P4Runtime gRPC server (``--target inproc``, ``tests/controller/device_switch.py``:
no process start-up, the pipeline already loaded). Figures are printed as ratios against a
baseline measured in the same run: the same entries written with one raw pre-built WriteRequest
after a raw pipeline push (the cost of the switch alone), so the ratio is the controller's
overhead. With real switches it also times ``dlcpctl apply`` as a new process (what an operator
runs: interpreter start and imports included).

    .venv/bin/python benchmarks/bench_controller_apply.py [--routes N] [--switches N]
        [--target p4sim|inproc] [--quick]
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "controller"))  # the switch harnesses live with the tests

from benchmode import add_quick_flag, announce  # noqa: E402
from device_switch import DeviceSwitch  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402
from switch_proc import SwitchProcess  # noqa: E402

from controller import netconfig  # noqa: E402
from controller.controller import Controller  # noqa: E402
from controller.p4rt_client import P4RuntimeClient  # noqa: E402


class ProcSwitch:
    """A real ``p4sim switch`` process with the interface of ``DeviceSwitch`` used here."""

    def __init__(self, device_id: int, workdir: Path) -> None:
        self.proc = SwitchProcess(workdir, device_id)
        self.proc.start()
        self.device_id = device_id
        self.port = self.proc.grpc_port
        self.address = self.proc.grpc_addr

    def stop(self) -> None:
        self.proc.stop()


TARGET = {"name": "p4sim", "workdir": Path("/tmp")}


def make_switch(device_id: int):
    if TARGET["name"] == "p4sim":
        return ProcSwitch(device_id, TARGET["workdir"])
    return DeviceSwitch(device_id, program=TARGET["program"])


def compile_resized(routes: int, workdir: Path):
    """The DLCP program with ipv4_routes resized to hold ``routes`` (the shipped size is smaller)."""
    import re
    import shutil

    from google.protobuf import text_format

    from p4sim.backend import compile_file
    inc = workdir / "include"
    shutil.copytree(ROOT / "p4src" / "include", inc)
    sizes = inc / "sizes.p4"
    size = max(1024, 1 << (routes + 64).bit_length())
    sizes.write_text(re.sub(r"#define IPV4_ROUTES_SIZE\s+\d+", f"#define IPV4_ROUTES_SIZE {size}", sizes.read_text()))
    program = compile_file(str(ROOT / "p4src" / "bmv2" / "dlcp.p4"), include_dirs=[str(inc)])
    p4info, config = workdir / "dlcp.p4info.txtpb", workdir / "dlcp.p4sim.json"
    p4info.write_text(text_format.MessageToString(program.p4info))
    config.write_bytes(program.device_config())
    return program, p4info, config


def pipeline_paths() -> tuple[Path, str]:
    p4info, config = TARGET["compiled"]
    return p4info, str(config)


def net_yaml(ports: list[int], routes: int) -> str:
    p4info, config = pipeline_paths()
    # a generous RPC timeout: pushing the pipeline to 10 switches at once (set-up, not measured)
    # recompiles it in every switch process, which takes more than the default 10 s on a loaded machine
    lines = ["defaults:", f"  pipeline: {{p4info: {p4info}, config: {config}}}", "controller: {timeout: 120}",
             "switches:"]
    lines += [f'  s{i + 1}: {{grpc: "127.0.0.1:{p}", device_id: {i + 1}}}' for i, p in enumerate(ports)]
    lines += ["hosts:", '  h1: {ip: 10.255.0.1, mac: "00:00:00:00:00:01", switch: s1, port: 1}']
    lines += ['  h2: {ip: 10.255.0.2, mac: "00:00:00:00:00:02", switch: s1, port: 2}']
    if len(ports) > 1:
        lines += ["links:"] + [f"  - [s{i}:3, s{i + 1}:4]" for i in range(1, len(ports))]
    if routes:
        lines.append("routes:")
        base = int(ipaddress.IPv4Address("20.0.0.0"))
        for i in range(routes):
            prefix = ipaddress.IPv4Address(base + (i << 8))
            ports_ = "[1, 2]" if i % 2 else "[1]"
            lines.append(f"  - {{switch: s1, prefix: {prefix}/24, ports: {ports_}}}")
    return "\n".join(lines) + "\n"


def bench_install(routes: int, tmp: Path) -> None:
    sw = make_switch(1)
    path = tmp / "one.yaml"
    path.write_text(net_yaml([sw.port], routes))
    try:
        t0 = time.perf_counter()
        net = netconfig.load(path)
        t1 = time.perf_counter()
        ctl = Controller(net)
        ctl.connect()
        want = ctl.desired(ctl.sessions["s1"])     # built once, cached: apply uses the same
        t2 = time.perf_counter()
        entries = len(want.entries)
        reports = ctl.apply()
        t3 = time.perf_counter()
        assert reports["s1"].result.counts["insert"] == entries
        noop = ctl.apply()
        t4 = time.perf_counter()
        assert noop["s1"].plan.empty()
        ctl.close()
    finally:
        sw.stop()

    # baseline: the same entries, pre-built, one raw WriteRequest, fresh switch
    sw = make_switch(1)
    try:
        client = P4RuntimeClient("base", sw.address, 1)
        client.connect()
        session = ctl.sessions["s1"]
        config, cookie = session.config_bytes, session.cookie
        updates = [(p4runtime_pb2.Update.INSERT, e) for e in want.entries]
        p0 = time.perf_counter()
        if TARGET["name"] == "p4sim":
            client.set_pipeline(session.p4info, config, cookie)
        b0 = time.perf_counter()
        client.write_entities(updates)      # one WriteRequest of the pre-serialized entries
        b1 = time.perf_counter()
        client.close()
    finally:
        sw.stop()

    apply_s = t3 - t1
    end_to_end = t3 - t0
    base = b1 - b0
    print(f"target: {TARGET['name']}")
    print(f"install: {entries} entries ({routes} routes + nexthops, groups, policy) on one switch")
    print(f"  load+validate YAML        {t1 - t0:8.3f} s")
    print(f"  connect + build entries   {t2 - t1:8.3f} s")
    print(f"  apply (read, diff, write) {t3 - t2:8.3f} s")
    print(f"  end to end                {end_to_end:8.3f} s  = {entries / end_to_end:8.0f} entries/s")
    print(f"  controller apply only     {apply_s:8.3f} s  = {entries / apply_s:8.0f} entries/s")
    print(f"  baseline raw Write        {base:8.3f} s  = {entries / base:8.0f} entries/s")
    print(f"  ratio apply / raw Write   {apply_s / base:8.2f}x")
    push = b0 - p0
    print(f"  baseline raw SetPipeline + Write {push + base:.3f} s (pipeline push {push:.3f} s); "
          f"ratio apply / that {apply_s / (push + base):.2f}x")
    print(f"  no-op apply (read+diff)   {t4 - t3:8.3f} s  ({(t4 - t3) / base:.2f}x the raw Write)")


def bench_cli(routes: int, tmp: Path) -> None:
    """``dlcpctl -c net.yaml apply`` as an operator runs it (a new process: interpreter start,
    imports, YAML, connect, pipeline push, write), on a fresh switch, then again (nothing to do)."""
    import subprocess
    sw = make_switch(1)
    path = tmp / "cli.yaml"
    path.write_text(net_yaml([sw.port], routes))
    cmd = [sys.executable, "-m", "controller.cli", "-c", str(path), "apply"]
    try:
        times: list[float] = []
        first = ""
        for _ in range(2):
            t0 = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            times.append(time.perf_counter() - t0)
            if done.returncode != 0:
                raise SystemExit(f"dlcpctl apply failed: {done.stderr.strip()}")
            first = first if times[1:] else done.stdout
        i0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import controller.cli"], check=True)
        imports = time.perf_counter() - i0
    finally:
        sw.stop()
    inserted = int(next(line.split()[2] for line in first.splitlines() if line.startswith("s1 ")))
    print(f"dlcpctl apply (new process) on a fresh switch, {inserted} entries: {times[0]:.3f} s "
          f"= {inserted / times[0]:.0f} entries/s; "
          f"again, nothing to change: {times[1]:.3f} s; interpreter start + imports alone: {imports:.3f} s")


def bench_noop(tmp: Path, n: int) -> None:
    sws = [make_switch(i + 1) for i in range(n)]
    path = tmp / "ten.yaml"
    path.write_text(net_yaml([s.port for s in sws], 0))
    try:
        ctl = Controller(netconfig.load(path))
        ctl.connect()
        ctl.apply()
        ctl.close()
        t0 = time.perf_counter()
        ctl = Controller(netconfig.load(path))        # what `dlcpctl apply` does, from scratch
        ctl.connect()
        reports = ctl.apply()
        t1 = time.perf_counter()
        ctl.close()
        assert all(r.plan.empty() for r in reports.values())
        # baseline: one bare Read of all entries per switch, sequential, already connected
        clients = [P4RuntimeClient(f"b{i}", s.address, s.device_id) for i, s in enumerate(sws)]
        for c in clients:
            c.connect(arbitrate=False)
        b0 = time.perf_counter()
        total = sum(len(c.read_table_entries(0)) for c in clients)
        b1 = time.perf_counter()
        for c in clients:
            c.close()
    finally:
        for s in sws:
            s.stop()
    print(f"no-op apply on {n} switches ({total} entries in all): {t1 - t0:.3f} s "
          f"(connect, arbitrate, pipeline check, read, diff); bare reads {b1 - b0:.3f} s; "
          f"ratio {(t1 - t0) / (b1 - b0):.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", type=int, default=None, help="routes on one switch (default 10000)")
    parser.add_argument("--switches", type=int, default=None, help="switches of the no-op apply (default 10)")
    parser.add_argument("--target", choices=("p4sim", "inproc"), default="p4sim",
                        help="p4sim: `p4sim switch` processes (default); inproc: SwitchDevices in this process")
    add_quick_flag(parser)
    args = parser.parse_args()
    announce(args.quick)
    routes = args.routes if args.routes is not None else (200 if args.quick else 10000)
    switches = args.switches if args.switches is not None else (2 if args.quick else 10)
    TARGET["name"] = args.target
    with tempfile.TemporaryDirectory() as tmp:
        TARGET["workdir"] = Path(tmp)
        TARGET["program"], *TARGET["compiled"] = compile_resized(routes, Path(tmp))
        bench_install(routes, Path(tmp))
        if TARGET["name"] == "p4sim":
            bench_cli(routes, Path(tmp))
        bench_noop(Path(tmp), switches)
    return 0


if __name__ == "__main__":
    sys.exit(main())
