"""The controller installs and runs without p4sim (issue 16): an operator driving BMv2 or Tofino
needs none of the simulator's code. A subprocess blocks every ``p4sim`` import with a meta-path
finder, then imports the whole controller, runs ``dlcpctl`` and speaks p4sim's ctl protocol with
the controller's own client against a real ctl server (the server side runs in this process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCKER = textwrap.dedent("""\
    import sys

    class NoP4sim:
        def find_spec(self, name, path=None, target=None):
            if name == "p4sim" or name.startswith("p4sim."):
                raise ImportError(f"p4sim is not installed here ({name})")
            return None

    sys.meta_path.insert(0, NoP4sim())
    for mod in [m for m in sys.modules if m == "p4sim" or m.startswith("p4sim.")]:
        del sys.modules[mod]
    """)


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKER + textwrap.dedent(code), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_blocker_really_blocks_p4sim():
    proc = _run("import p4sim.errors\n")
    assert proc.returncode != 0 and "p4sim is not installed here" in proc.stderr


def test_every_controller_module_imports_without_p4sim(tmp_path):
    net = tmp_path / "net.yaml"
    net.write_text("switches: {s1: {grpc: 'x'}}\n")
    proc = _run("""
        import importlib, pkgutil, sys
        import controller
        for info in pkgutil.iter_modules(controller.__path__):
            importlib.import_module(f"controller.{info.name}")
        import controller.cli
        assert not any(m == "p4sim" or m.startswith("p4sim.") for m in sys.modules)
        sys.exit(controller.cli.main(["-c", sys.argv[1], "status"]))
        """, str(net))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith(f"dlcpctl: {net}:1: switches.s1") and proc.stderr.count("\n") == 1


def test_own_ctl_client_against_the_real_ctl_server():
    """The server is p4sim's (this process); the client subprocess cannot import p4sim at all."""
    from p4sim.switch.ctl_server import CtlServer
    from p4sim.switch.device import SwitchDevice
    device = SwitchDevice(device_id=1, priority_queues=4, name="s1")
    device.start()
    server = CtlServer(device, "127.0.0.1:0")
    port = server.start()
    try:
        proc = _run("""
            import sys
            from controller.errors import SwitchError
            from controller.p4sim_ctl import P4simCtl
            with P4simCtl("s1", sys.argv[1]) as ctl:
                ctl.set_queue_depth(16, 2, 3)
                queues, _ports = ctl.limits()
                tm = ctl.call("show_queues")
                print(queues, tm["ports"]["2"]["queues"][3]["limit"])
                try:
                    ctl.set_queue_depth(0)
                except SwitchError as err:
                    print(err)
            """, f"127.0.0.1:{port}")
    finally:
        server.stop()
        device.stop()
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "4 16"
    assert lines[1].startswith(f"switch s1: ctl 127.0.0.1:{port}: set_queue_depth: ") and "at least 1" in lines[1]


def test_a_tofino_programs_p4info_reads_without_p4sim(tmp_path):
    """The Tofino program's P4Info lists its port-metadata table with a ``barefoot.PortMetadata``
    info, as bf-p4c writes it; text protobuf refuses an ``Any`` whose type it does not know, so
    ``dlcpctl apply`` (and ``dlcp-exp --arch tna``) failed with "Type barefoot.PortMetadata not found
    in descriptor pool". The controller must read it on its own, and keep the info intact."""
    from p4sim.tna.program import compile_tna

    program = compile_tna(str(ROOT / "p4src/tofino/dlcp.p4"), [str(ROOT / "p4src/include")], "tna")
    path = tmp_path / "dlcp.p4info.txtpb"
    path.write_text(str(program.p4info))
    infos = {i.info.type_url: i.info.value for e in program.p4info.externs for i in e.instances}
    assert "type.googleapis.com/barefoot.PortMetadata" in infos
    proc = _run("""
        import sys
        from controller.p4info_index import load_p4info
        p4info = load_p4info(sys.argv[1])
        for e in p4info.externs:
            for i in e.instances:
                print(i.info.type_url, i.info.value.hex())
        """, str(path))
    assert proc.returncode == 0, proc.stderr
    read = dict(line.split(" ") if " " in line else (line, "") for line in proc.stdout.splitlines())
    assert read == {url: value.hex() for url, value in infos.items()}
