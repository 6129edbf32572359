"""Real p4sim switches in this process for controller tests: a ``SwitchDevice`` running the
compiled DLCP program (``p4src/bmv2/dlcp.p4``) behind p4sim's real P4Runtime gRPC server on an
ephemeral loopback port. Starting one takes milliseconds, so the gRPC tests stay fast; tests that
need packets through a separate process use ``switch_proc.SwitchProcess``.

The programs are compiled by p4sim itself, once per test session; a compile failure fails the
tests that need it (p4sim is part of this repository: a regression must show, not skip).
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DLCP_P4 = ROOT / "p4src" / "bmv2" / "dlcp.p4"
INCLUDE = ROOT / "p4src" / "include"
OTHER_P4 = Path(__file__).parent / "fixtures" / "other_program.p4"


@functools.cache
def dlcp_program():
    """The ``CompiledProgram`` of the DLCP program, as ``p4sim compile`` builds it."""
    from p4sim.backend import compile_file
    return compile_file(str(DLCP_P4), [str(INCLUDE)])


@functools.cache
def dlcp_program_with(**sizes: int):
    """DLCP compiled with some of ``sizes.p4``'s sizes replaced (``DROP_THRESHOLDS_SIZE=10``):
    the same program and P4Info API on a switch with smaller tables."""
    from p4sim.backend import compile_file
    text = (INCLUDE / "sizes.p4").read_text()
    for name, value in sizes.items():
        lines = [ln for ln in text.splitlines() if ln.startswith(f"#define {name} ")]
        assert len(lines) == 1, f"sizes.p4 has no single #define {name}"
        text = text.replace(lines[0], f"#define {name} {value}")
    with tempfile.TemporaryDirectory(prefix="dlcp-sizes-") as tmp:
        (Path(tmp) / "sizes.p4").write_text(text)       # found before p4src/include's own
        return compile_file(str(DLCP_P4), [tmp, str(INCLUDE)])


@functools.cache
def other_program():
    """A program that is not DLCP: one table, ``Other.routes``."""
    from p4sim.backend import compile_file
    return compile_file(str(OTHER_P4))


class DeviceSwitch:
    """A started ``SwitchDevice`` with ``program`` loaded (as ``p4sim switch PROGRAM`` does) and a
    P4Runtime server; ``restart`` replaces both on the same port, losing all state like a crash."""

    def __init__(self, device_id: int, program=None, port: int = 0) -> None:
        self.device_id = device_id
        self.program = program if program is not None else dlcp_program()
        self._start(f"127.0.0.1:{port}")

    def _start(self, address: str) -> None:
        from p4sim.p4runtime_server.server import P4RuntimeServer
        from p4sim.switch.device import SwitchDevice
        self.device = SwitchDevice(device_id=self.device_id, priority_queues=8, name=f"s{self.device_id}")
        self.device.load_program(self.program)
        self.device.start()
        self.server = P4RuntimeServer(self.device, address)
        self.port = self.server.start()
        self.address = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.stop(grace=0)
        self.device.stop()

    def restart(self) -> None:
        self.stop()
        self._start(self.address)

    def entries(self, table: str) -> list:
        """What the switch's table holds (read from the device, not through P4Runtime)."""
        with self.device.lock:
            return list(self.device.pipeline.tables[table])


def dlcp_yaml(ports: list[int], extra: str = "") -> str:
    """``ctl_support.three_switch_yaml`` with the compiled DLCP P4Info and device config."""
    from ctl_support import three_switch_yaml
    from switch_proc import compiled_dlcp
    p4info, config = compiled_dlcp()
    return three_switch_yaml(ports, p4info=p4info, config=str(config), extra=extra)
