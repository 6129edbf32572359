"""``compile_file``, ``CompiledProgram`` and ``Pipeline`` (Contract 3 of docs/architecture.md).

A ``CompiledProgram`` holds the generated Python (compiled once to a code object), its resource
manifest and P4Info. ``instantiate`` executes the code object in a fresh namespace whose globals
are that pipeline's own tables and externs, so two pipelines of one program share nothing.

The device config (what ``p4sim compile`` writes and P4Runtime carries) is a JSON document with
the program's source files (the main file and every file it includes from its own tree or the
``-I`` directories; ``<core.p4>``/``<v1model.p4>`` ship with p4sim) and a sha256 over them;
loading it recompiles from source. It is validated strictly and never executed or unpickled.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from p4.config.v1 import p4info_pb2

from p4sim.backend import resources as res
from p4sim.backend.codegen import GeneratedModule, generate
from p4sim.backend.rt import ValueSet
from p4sim.errors import P4CompileError, P4UnsupportedError, SourceLocation, UserError
from p4sim.runtime import externs as rtx
from p4sim.runtime.action_profiles import ActionProfile
from p4sim.runtime.pre import PacketReplicationEngine
from p4sim.runtime.tables import ActionCall, KeyField, Table, TableEntry

log = logging.getLogger("p4sim.backend")

DEVICE_CONFIG_FORMAT = "p4sim-device-config"
DEVICE_CONFIG_VERSION = 1


class DeviceConfigError(UserError):
    """A device config that is not one ``p4sim compile`` wrote."""


class PacketContext:
    """Per-packet values externs read that P4 does not pass explicitly."""

    __slots__ = ("length", "now", "payload", "sm")

    def __init__(self) -> None:
        self.length = 0
        self.now = 0
        self.payload = b""
        self.sm = None


class Pipeline:
    """One switch's state for one program: tables, externs, PRE, and the bound generated code."""

    def __init__(self, program: CompiledProgram) -> None:
        self.program = program
        self.tables: dict[str, Table] = {}
        self.registers: dict[str, rtx.Register] = {}
        self.counters: dict[str, rtx.Counter] = {}
        self.direct_counters: dict[str, rtx.DirectCounter] = {}
        self.meters: dict[str, rtx.Meter] = {}
        self.direct_meters: dict[str, rtx.DirectMeter] = {}
        self.action_profiles: dict[str, ActionProfile] = {}
        self.value_sets: dict[str, ValueSet] = {}
        self.pre = PacketReplicationEngine()
        self.digest_sink: Callable[[str, tuple[int, ...]], None] | None = None
        self.log: Callable[[str], None] | None = None
        self.ctx = PacketContext()
        self.field_lists = program.module.field_lists
        self.errors = program.module.errors
        self.namespace = self._bind()

    def _bind(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"__name__": f"p4sim_generated_{self.program.name}", "_CTX": self.ctx,
                              "_DROP_PORT": 511, "_digest": self._digest, "_log": self._log}
        man = self.program.module.manifest
        for x in man.externs:
            obj = _make_extern(x, man)
            ns[x.pyname] = obj
            {"register": self.registers, "counter": self.counters, "direct_counter": self.direct_counters,
             "meter": self.meters, "direct_meter": self.direct_meters, "action_profile": self.action_profiles,
             "action_selector": self.action_profiles}[x.kind][x.name] = obj
        for t in man.tables:
            table = _make_table(t)
            ns[t.pyname] = table
            ns[t.pyname + "_A"] = {name: i for i, name in enumerate(t.dispatch)}
            self.tables[t.name] = table
        for vs in man.value_sets:
            obj = ValueSet(vs.name, vs.bitwidths, vs.size)
            ns[vs.pyname] = obj
            self.value_sets[vs.name] = obj
        exec(self.program.code, ns)   # noqa: S102 - our own generated code, never user data
        return ns

    def _digest(self, name: str, values: tuple[int, ...]) -> None:
        sink = self.digest_sink
        if sink is not None:
            sink(name, values)

    def _log(self, text: str) -> None:
        sink = self.log
        if sink is not None:
            sink(text)
        else:
            log.info("log_msg: %s", text)


def _make_extern(x: res.ExternDesc, man: res.Manifest) -> Any:
    p = x.params
    if x.kind == "register":
        return rtx.Register(x.name, p["size"], p["bitwidth"])
    if x.kind == "counter":
        return rtx.Counter(x.name, p["size"], p["kind"])
    if x.kind == "meter":
        return rtx.Meter(x.name, p["size"], p["kind"])
    owner = next((t.name for t in man.tables if x.name in (t.direct_counter, t.direct_meter, t.implementation)), None)
    if x.kind == "direct_counter":
        return rtx.DirectCounter(x.name, p["kind"], table=owner)
    if x.kind == "direct_meter":
        return rtx.DirectMeter(x.name, p["kind"], table=owner)
    actions = next((t.dispatch for t in man.tables if t.implementation == x.name), [])
    if x.kind == "action_profile":
        return ActionProfile(x.name, p["size"], actions)
    return ActionProfile(x.name, p["size"], actions, with_selector=True, algorithm=p["algorithm"])


def _make_table(t: res.TableDesc) -> Table:
    default = ActionCall(*t.default_action) if t.default_action is not None else None
    table = Table(t.name, [KeyField(k.name, k.match_kind, k.bitwidth) for k in t.keys], t.size,
                  [a.name for a in t.actions], default, t.default_is_const, t.implementation)
    for e in t.entries:
        table.insert(TableEntry(e.match, ActionCall(e.action, e.args), e.priority, is_const=t.entries_const))
    return table


class CompiledProgram:
    """A compiled v1model program: generated code, resources, P4Info, and its device config."""

    arch = "v1model"

    def __init__(self, name: str, module: GeneratedModule, p4info: p4info_pb2.P4Info,
                 sources: dict[str, str], main_file: str, include_dirs: Sequence[str]) -> None:
        self.name = name
        self.module = module
        self.p4info = p4info
        self.source = module.source
        self.code = compile(module.source, f"<p4sim:{name}>", "exec")
        self._sources = sources
        self._main_file = main_file
        self._include_dirs = list(include_dirs)

    def instantiate(self) -> Pipeline:
        """A fresh pipeline: tables empty except const entries, externs zeroed."""
        return Pipeline(self)

    def device_config(self) -> bytes:
        doc = {"format": DEVICE_CONFIG_FORMAT, "version": DEVICE_CONFIG_VERSION, "name": self.name,
               "arch": self.arch, "main": self._main_file, "sources": self._sources}
        doc["sha256"] = hashlib.sha256(json.dumps(doc["sources"], sort_keys=True).encode()).hexdigest()
        return json.dumps(doc, sort_keys=True).encode()

    @classmethod
    def from_device_config(cls, data: bytes) -> CompiledProgram:
        try:
            doc = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            raise DeviceConfigError(f"device config is not a p4sim JSON document: {err}") from None
        if not isinstance(doc, dict) or doc.get("format") != DEVICE_CONFIG_FORMAT:
            raise DeviceConfigError("device config: missing format \"p4sim-device-config\"")
        if doc.get("version") != DEVICE_CONFIG_VERSION:
            raise DeviceConfigError(f"device config: unsupported version {doc.get('version')!r}")
        sources, main = doc.get("sources"), doc.get("main")
        if not isinstance(sources, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in sources.items()):
            raise DeviceConfigError("device config: field 'sources' must map file names to text")
        if not isinstance(main, str) or main not in sources:
            raise DeviceConfigError("device config: field 'main' must name one of the sources")
        name = doc.get("name")
        if name is not None and not isinstance(name, str):
            raise DeviceConfigError("device config: field 'name' must be text")
        for rel in sources:
            if rel.startswith("/") or ".." in rel.split("/"):
                raise DeviceConfigError(f"device config: source name {rel!r} escapes the program directory")
            if not rel.strip("/.") or "\0" in rel or rel.endswith("/"):
                raise DeviceConfigError(f"device config: source name {rel!r} is not a file name")
        digest = hashlib.sha256(json.dumps(sources, sort_keys=True).encode()).hexdigest()
        if doc.get("sha256") != digest:
            raise DeviceConfigError("device config: sha256 does not match the sources (corrupted?)")
        with tempfile.TemporaryDirectory(prefix="p4sim-devcfg-") as tmp:
            for rel, text in sources.items():
                path = os.path.join(tmp, rel)
                try:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w", encoding="utf-8") as fh:
                        fh.write(text)
                except (OSError, UnicodeEncodeError):
                    raise DeviceConfigError(f"device config: cannot store source {rel!r} "
                                            f"(a name used as both file and directory?)") from None
            # Each file's own directory, then the sources' common root: the program was compiled
            # with that root on its include path when one file includes a sibling directory's
            # (``#include "common/headers.p4"`` from ``tna_counter/tna_counter.p4``).
            inc = [*sorted({os.path.dirname(os.path.join(tmp, r)) for r in sources}), tmp]
            try:
                if doc.get("arch") in ("tna", "t2na"):      # a Tofino program (p4sim/tna)
                    from p4sim.tna.program import compile_tna
                    return compile_tna(os.path.join(tmp, main), inc, doc["arch"], name=name, confine_to=[tmp])
                return _compile(os.path.join(tmp, main), inc, name=name, confine_to=[tmp])
            except P4CompileError as err:
                raise _relative_to(err, tmp) from None


def _relative_to(err: P4CompileError, root: str) -> P4CompileError:
    """``err`` with its location named as in the device config (not the temporary directory)."""
    loc = err.location
    if loc is not None and loc.file.startswith(root + os.sep):
        loc = SourceLocation(loc.file[len(root) + 1:], loc.line, loc.col)
    return type(err)(loc, err.message) if type(err) is P4UnsupportedError else \
        P4CompileError(loc, err.message, err.kind)


def _collect_sources(files: Sequence[str], main_path: str) -> tuple[dict[str, str], str]:
    """The program's own files: the main file and every file the preprocessor actually read,
    except the architecture files p4sim ships (``<core.p4>``, ``<v1model.p4>``)."""
    from p4sim.frontend.preprocessor import P4INCLUDE_DIR

    shipped = os.path.realpath(P4INCLUDE_DIR) + os.sep
    main = os.path.abspath(main_path)
    found: dict[str, str] = {}
    for f in [main, *files]:
        f = os.path.abspath(f)
        if f in found or os.path.realpath(f).startswith(shipped):
            continue
        try:
            with open(f, encoding="utf-8") as fh:
                found[f] = fh.read()
        except (OSError, UnicodeDecodeError):
            raise P4CompileError(SourceLocation(f, 1, 1), "cannot read file") from None
    common = os.path.commonpath(list(found))
    if os.path.isfile(common):
        common = os.path.dirname(common)
    rel = {os.path.relpath(f, common): t for f, t in found.items()}
    return rel, os.path.relpath(main, common)


def _compile(path: str, include_dirs: Sequence[str], name: str | None = None,
             confine_to: Sequence[str] | None = None) -> CompiledProgram:
    from p4sim.backend.p4info import build_p4info
    from p4sim.frontend import load_program

    program = load_program(path, include_dirs, confine_to)
    where = getattr(program.main, "loc", None) or SourceLocation(path, 1, 1)
    try:
        module = generate(program)
        p4info = build_p4info(program, module.manifest)
        name = name or os.path.splitext(os.path.basename(path))[0]
        sources, main = _collect_sources(program.source_files, path)
        compiled = CompiledProgram(name, module, p4info, sources, main, include_dirs)
        compiled.instantiate()     # validates const entries and extern parameters now, not at load
    except (RecursionError, MemoryError):
        raise P4CompileError(where, "program nests too deeply for p4sim's code generator") from None
    except SyntaxError as err:     # Python's own limits (e.g. too many nested parentheses)
        raise P4UnsupportedError(where, f"program too deeply nested for Python ({err.msg})") from None
    except UserError:
        raise
    except Exception as err:  # noqa: BLE001 - a p4sim bug, still one line for the user (never a traceback)
        raise P4CompileError(where, f"internal error in the code generator: {type(err).__name__}: {err}") from None
    return compiled


def compile_file(path: str, include_dirs: Sequence[str] = ()) -> CompiledProgram:
    """Compile the v1model P4 program at ``path`` (``P4CompileError`` on a bad program)."""
    return _compile(path, include_dirs)
