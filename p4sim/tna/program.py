"""Compile a TNA/T2NA program: front end with ``__TARGET_TOFINO__`` defined, ``TnaGen``, P4Info.

Why it exists: ``p4sim.backend.program`` compiles v1model programs; a Tofino program needs the
target macro the SDE's compiler defines (1 for ``tna``, 2 for ``t2na``), the TNA generator and a
pipeline whose packet context records parser errors. The compiled object is a
``CompiledProgram`` (same tables, externs, P4Info and runtime) with ``arch`` set; its P4Info also
lists DirectRegisters as bf-p4c does (``p4sim.tna.p4info_ext``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from p4sim.backend.program import CompiledProgram, PacketContext, Pipeline, _collect_sources
from p4sim.errors import P4CompileError, SourceLocation, UserError

ARCHES = {"tna": 1, "t2na": 2}


class TnaContext(PacketContext):
    """``PacketContext`` plus the error code the parser stopped with (None: no error), and what a
    deparser asked for: mirror copies (session id, mirror header bytes) and a resubmission (its
    header bytes). ``TnaPath`` empties the two lists after each deparser."""

    __slots__ = ("parser_error", "mirrors", "resubmit")

    def __init__(self) -> None:
        super().__init__()
        self.parser_error = None
        self.mirrors: list[tuple[int, bytes]] = []
        self.resubmit: list[bytes] = []


class TnaPipeline(Pipeline):
    """One switch's tables and externs for a TNA program (the packet path is ``TnaPath``)."""

    def _bind(self):  # type: ignore[override]
        from p4sim.tna.control_values import TNA_EXTERN_KINDS, make_tna_extern
        from p4sim.tna.runtime import DirectRegister, InitialisedRegister

        self.ctx = TnaContext()
        ns = super()._bind()
        self.direct_registers: dict[str, DirectRegister] = {}
        # Lpf, Wred (and Direct*), RegisterParam, the port-metadata table: p4sim.tna.control_values
        self.tna_externs: dict[str, object] = {}
        self.port_metadata: dict[int, int] = {}      # port -> its port metadata bits (TnaPath reads it)
        for pyname, kind, name, value in getattr(self.program.module, "tna_objects", ()):
            if kind in TNA_EXTERN_KINDS:
                ns[pyname] = self.tna_externs[name] = make_tna_extern(kind, name, value)
                if kind == "port_metadata":
                    self.port_metadata = self.tna_externs[name].values
            elif kind == "direct_register":
                ns[pyname] = self.direct_registers[name] = DirectRegister(name, value)
            elif kind == "register_initial":        # Register(size, initial_value)
                old = self.registers[name]
                ns[pyname] = self.registers[name] = InitialisedRegister(old.name, old.size, old.bitwidth, value)
        return ns


class TnaCompiledProgram(CompiledProgram):
    """A compiled TNA (``arch == "tna"``) or T2NA (``"t2na"``) program."""

    def __init__(self, *args, arch: str = "tna", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.arch = arch

    def instantiate(self) -> TnaPipeline:
        return TnaPipeline(self)


def compile_tna(path: str, include_dirs: Sequence[str] = (), arch: str = "tna", name: str | None = None,
                confine_to: Sequence[str] | None = None) -> TnaCompiledProgram:
    """Compile the TNA program at ``path`` for ``arch`` (``tna``: Tofino1, ``t2na``: Tofino2).
    ``confine_to``: as for v1model programs from the wire (includes stay inside)."""
    from p4sim.backend.p4info import build_p4info
    from p4sim.frontend import load_program
    from p4sim.tna.codegen import generate
    from p4sim.tna.p4info_ext import add_direct_registers, add_tna_externs

    if arch not in ARCHES:
        raise UserError(f"--arch {arch!r}: expected one of {', '.join(ARCHES)}")
    program = load_program(path, include_dirs, confine_to, defines={"__TARGET_TOFINO__": str(ARCHES[arch])})
    where = getattr(program.main, "loc", None) or SourceLocation(path, 1, 1)
    try:
        module = generate(program)
        p4info = build_p4info(program, module.manifest)
        p4info.pkg_info.arch = arch
        add_direct_registers(p4info, [(fq, width) for _, kind, fq, width in module.tna_objects
                                      if kind == "direct_register"], module.direct_register_tables)
        add_tna_externs(p4info, program, module)
        sources, main = _collect_sources(program.source_files, path)
        name = name or os.path.splitext(os.path.basename(path))[0]
        compiled = TnaCompiledProgram(name, module, p4info, sources, main, include_dirs, arch=arch)
        compiled.ast = program      # the architecture's metadata layouts, for TnaPath
        compiled.instantiate()
    except UserError:
        raise
    except Exception as err:  # noqa: BLE001 - a p4sim bug, still one line for the user
        raise P4CompileError(where, f"internal error in the TNA code generator: {type(err).__name__}: {err}") from None
    return compiled
