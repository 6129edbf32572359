"""Generated Python for TNA/T2NA programs: ``Pipeline(...)`` blocks and the Tofino externs.

Why it exists: the v1model generator (``p4sim.backend.codegen.BlockGen``) already turns parsers,
controls, actions and tables into Python; a TNA program differs in its package (six blocks,
plus Tofino2's ghost control, inside ``Switch(Pipeline(...))``) and its externs (``Hash``,
``Checksum``, ``Register`` with ``RegisterAction``, ``Counter``, ``Random``). This subclass
adds exactly those; everything else is shared. Externs it does not model are refused at
compile time as ``unsupported: extern instance of X`` with the instance's location.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from p4sim.backend import resources as res
from p4sim.backend.codegen import PRELUDE, BlockGen, GeneratedModule
from p4sim.backend.exprgen import width_of
from p4sim.backend.externgen import enum_member
from p4sim.backend.tablegen import control_plane_name
from p4sim.backend.typegen import default_value, mask, pyfield
from p4sim.backend.writer import Env
from p4sim.errors import P4CompileError, P4UnsupportedError
from p4sim.frontend import ast
from p4sim.tna.parser_check import first_extract, fresh_default_stores
from p4sim.tna.pipe_structs import fresh_function, named_fields, sentinel_source, unnamed_headers

ROLES = ("ingress_parser", "ingress", "ingress_deparser", "egress_parser", "egress", "egress_deparser", "ghost")

# HashAlgorithm_t -> p4sim.runtime.hashes algorithm (same CRC parameters as bf-p4c's defaults:
# CRC16 = poly 0x8005 reflected, init 0; CRC32 = the IEEE CRC-32)
HASH_ALGORITHMS = {"CRC16": "crc16", "CRC32": "crc32", "IDENTITY": "identity", "XOR16": "xor16"}

# the pipe each role belongs to (its blocks share the per-pipe headers struct)
PIPE_OF = dict(zip(ROLES, ("ingress",) * 3 + ("egress",) * 3 + ("ghost",), strict=True))

# parser, control and deparser prototypes: the architecture's types for each role's parameters
PROTOTYPES = {"ingress_parser": "IngressParserT", "ingress": "IngressT", "ingress_deparser": "IngressDeparserT",
              "egress_parser": "EgressParserT", "egress": "EgressT", "egress_deparser": "EgressDeparserT",
              "ghost": "GhostT"}


@dataclass
class RegisterActionDesc:
    register: str                   # Python global of the Register
    apply: ast.FunctionDecl


class TnaGen(BlockGen):
    """``BlockGen`` for a ``Switch(Pipeline(...))`` program."""

    def __init__(self, program: ast.Program) -> None:
        self.reg_actions: dict[int, RegisterActionDesc] = {}
        self.stateless: dict[int, tuple[str, Any]] = {}
        self.profiles: dict[int, tuple[str, str, int, ast.Instantiation]] = {}
        self.tna_objects: list[tuple[str, str, str, int]] = []    # (global, kind, name, width): p4sim.tna.runtime
        # DirectRegister: instance id -> name, and global -> owning table (``registers = r`` or the
        # table whose action runs its DirectRegisterAction): P4Info's direct resource
        self.direct_register_names: dict[int, str] = {}
        self.direct_register_tables: dict[str, str] = {}
        # DirectLpf/DirectWred: instance id -> name, and global -> owning table (``filters = f``
        # or the table whose action executes it): P4Info's direct resource
        self.direct_filter_names: dict[int, str] = {}
        self.direct_filter_tables: dict[str, str] = {}
        # RegisterParam global -> the Register/DirectRegister global whose RegisterAction reads it
        self.register_param_users: dict[str, str] = {}
        self.current_register: str | None = None     # the register of the apply body being generated
        self.role: str | None = None                 # the block being generated (ROLES)
        self.port_metadata_header: Any = None        # the header port_metadata_unpack fills
        # the parser being generated: its start state's stores that leave a fresh object's default
        # as it is (p4sim.tna.parser_check.fresh_default_stores), and its first extract of the
        # egress intrinsic metadata (skipped when TnaPath filled the header: ``_PREFILL_egress``)
        self.fresh_stores: set[int] = set()
        self.prefill_extract: int | None = None
        super().__init__(program)

    # ---- externs -------------------------------------------------------------------------
    def instantiate_extern(self, inst: ast.Instantiation, prefix: str) -> None:
        ext = inst.decl.name
        t = inst.type
        targs = t.type_args if isinstance(t, ast.ExternT) else ()
        args = inst.args
        fq = control_plane_name(prefix, inst)
        py = self.gname(inst.name)
        if ext == "Counter":
            params = {"size": self.const_value(args[0]), "kind": enum_member(args[1]).lower()}
            self.manifest.externs.append(res.ExternDesc("counter", py, fq, params, inst.annotations, inst))
        elif ext == "Register":
            params = {"size": self.const_value(args[0]), "bitwidth": self.cell_width(targs[0], inst.loc)}
            initial = self.initial_cell(args[1] if len(args) > 1 else None, targs[0], inst)
            if initial:
                self.tna_objects.append((py, "register_initial", fq, initial))
            self.manifest.externs.append(res.ExternDesc("register", py, fq, params, inst.annotations, inst))
        elif ext == "RegisterParam":
            width = width_of(targs[0])
            self.stateless[id(inst)] = ("register_param", None)
            self.tna_objects.append((py, "register_param", fq,
                                     {"width": width, "initial": self.const_value(args[0]) & mask(width)}))
        elif ext in ("Lpf", "Wred"):
            size = self.const_value(args[0])
            if not 0 < size <= (1 << 22):
                raise P4UnsupportedError(inst.loc, f"{ext} {inst.name} of size {size}")
            params = {"size": size, "width": width_of(targs[0])}
            if ext == "Wred":
                params.update(drop_value=self.const_value(args[1]) & 0xFF, no_drop_value=self.const_value(args[2]) & 0xFF)
            self.tna_objects.append((py, ext.lower(), fq, params))
        elif ext in ("DirectLpf", "DirectWred"):
            params = {"width": width_of(targs[0])}
            if ext == "DirectWred":
                params.update(drop_value=self.const_value(args[0]) & 0xFF, no_drop_value=self.const_value(args[1]) & 0xFF)
            self.tna_objects.append((py, "direct_" + ext[6:].lower(), fq, params))
            self.direct_filter_names[id(inst)] = fq
        elif ext in ("RegisterAction", "DirectRegisterAction"):
            reg = self.env.lookup(args[0].decl) if isinstance(args[0], ast.PathExpr) else None
            if reg is None:
                raise P4UnsupportedError(inst.loc, f"{ext} {inst.name}: its {ext[:-6]} here")
            apply = next(f for f in inst.initializer if f.name == "apply")
            self.reg_actions[id(inst)] = RegisterActionDesc(reg, apply)
        elif ext == "Hash":
            algo = enum_member(args[0])
            if algo not in HASH_ALGORITHMS or (len(args) > 1 and args[1] is not None):
                raise P4UnsupportedError(inst.loc, f"Hash {inst.name} with algorithm {algo}")
            self.stateless[id(inst)] = ("hash", (HASH_ALGORITHMS[algo], width_of(targs[0])))
        elif ext == "Random":
            self.stateless[id(inst)] = ("random", width_of(targs[0]))
        elif ext == "Checksum":
            self.stateless[id(inst)] = ("checksum", None)
            # the fields added in this parser/deparser run, concatenated: their bits (``_a``)
            # and how many (``_b``); two locals, no per-packet list of (value, width) pairs
            self.w.line(f"{py}_a = {py}_b = 0")
        elif ext == "DirectCounter":
            params = {"kind": enum_member(args[0]).lower()}
            self.manifest.externs.append(res.ExternDesc("direct_counter", py, fq, params, inst.annotations, inst))
        elif ext in ("Meter", "DirectMeter"):
            first = 1 if ext == "Meter" else 0
            colors = [self.const_value(a) for a in args[first + 1:first + 4] if a is not None]
            # execute() returns the program's encodings: (green, yellow, red), default 0, 1, 3
            self.stateless[id(inst)] = ("meter", tuple(reversed(colors)) if len(colors) == 3 else (0, 1, 3))
            params = {"kind": enum_member(args[first]).lower()}
            if ext == "Meter":
                params["size"] = self.const_value(args[0])
            kind = "meter" if ext == "Meter" else "direct_meter"
            self.manifest.externs.append(res.ExternDesc(kind, py, fq, params, inst.annotations, inst))
        elif ext == "ActionProfile":
            # registered when a table names it (an ActionSelector's profile only sizes the selector)
            self.profiles[id(inst)] = (py, fq, self.const_value(args[0]), inst)
        elif ext == "ActionSelector":
            self.action_selector(inst, py, fq)
        elif ext == "DirectRegister":
            if args and args[0] is not None and self.const_value(args[0]) != 0:
                raise P4UnsupportedError(inst.loc, f"DirectRegister {inst.name} with an initial value")
            self.tna_objects.append((py, "direct_register", fq, self.cell_width(targs[0], inst.loc)))
            self.direct_register_names[id(inst)] = fq
        elif ext in ("Digest", "Mirror", "Resubmit"):
            self.stateless[id(inst)] = (ext.lower(), None)
        elif ext == "ParserCounter":
            if not self.in_parser:
                raise P4UnsupportedError(inst.loc, "ParserCounter outside a parser")
            self.w.line(f"{py} = [0]")       # the counter of this parser run (8 bits)
        else:
            raise P4UnsupportedError(inst.loc, f"extern instance of {ext}")
        size = self.manifest.externs[-1].params.get("size") if ext in ("Counter", "Register", "Meter") else None
        if isinstance(size, int) and not 0 <= size <= (1 << 22):
            raise P4UnsupportedError(inst.loc, f"{ext} {inst.name} of size {size}")
        self.env.bind(inst, py)

    def extern_method(self, call: ast.MethodCall) -> str | None:
        target = call.target
        ext = target.type.name if isinstance(target.type, ast.ExternT) else None
        m, a = call.method, call.args
        if ext in ("packet_in", "packet_out"):
            if id(call) == self.prefill_extract:
                return self.prefilled_extract(call)
            return super().extern_method(call)
        inst = getattr(target, "decl", None)
        obj = self.ex(target)
        kind = self.stateless.get(id(inst))
        if ext == "Counter" and m == "count":
            return f"{obj}.count({self.as_int(a[0])}, {self.adjusted_length(a[1] if len(a) > 1 else None)})"
        if ext == "Register" and m == "read":
            return f"{obj}.read({self.as_int(a[0])})"
        if ext == "Register" and m == "write":
            return f"{obj}.write({self.as_int(a[0])}, {self.as_int(a[1])})"
        if ext == "RegisterParam" and m == "read":
            if self.current_register is not None:
                self.register_param_users.setdefault(obj, self.current_register)
            return f"{obj}.value"
        if ext in ("Lpf", "Wred") and m == "execute":
            return f"{obj}.execute({self.as_int(a[0])}, {self.as_int(a[1])}, _CTX.now)"
        if ext in ("DirectLpf", "DirectWred") and m == "execute":
            entry = self.entry_here(call, f"{ext}.execute")
            self.direct_filter_tables.setdefault(obj, self.current_entry[1].name)
            return f"{obj}.execute({self.as_int(a[0])}, {entry}, _CTX.now)"
        if ext == "RegisterAction" and m == "execute":
            desc = self.reg_actions[id(inst)]
            return self.register_action_execute(call, desc, f"{desc.register}.read({{i}})",
                                                f"{desc.register}.write({{i}}, {{v}})", self.as_int(call.args[0]))
        if ext == "DirectRegisterAction" and m == "execute":
            desc = self.reg_actions[id(inst)]
            entry = self.entry_here(call, "DirectRegisterAction.execute")
            self.direct_register_tables.setdefault(desc.register, self.current_entry[1].name)
            return self.register_action_execute(call, desc, f"{desc.register}.read({{i}})",
                                                f"{desc.register}.write({{i}}, {{v}})", entry)
        if ext == "DirectCounter" and m == "count":
            entry = self.entry_here(call, "DirectCounter.count")
            return f"{obj}.count({entry}, {self.adjusted_length(a[0] if a else None)})"
        if ext in ("Meter", "DirectMeter") and m == "execute":
            colors = kind[1]
            rest = list(a[1:] if ext == "Meter" else a)
            pre = rest.pop(0) if rest and rest[0] is not None and isinstance(rest[0].type, (ast.EnumT, ast.SerEnumT)) else None
            length = self.adjusted_length(rest[0] if rest else None)
            if ext == "Meter":
                color = f"{obj}.execute({self.as_int(a[0])}, {length}, _CTX.now)"
            else:
                color = f"{obj}.execute({self.entry_here(call, 'DirectMeter.execute')}, {length}, _CTX.now)"
            if pre is not None:     # colour-aware: never better than the colour the packet came with
                color = f"max({color}, {{0: 0, 1: 1}}.get({self.as_int(pre)}, 2))"   # MeterColor_t: 0, 1, 3
            return f"{colors!r}[{color}]"
        if ext == "Digest" and m == "pack":
            return self.digest(SimpleNamespace(args=[None, a[0]]))
        if ext in ("Mirror", "Resubmit") and m == "emit":
            hdr = a[-1] if len(a) > (1 if ext == "Mirror" else 0) else None
            parts = self.w.tmp("mp")
            self.w.line(f"{parts} = []")
            if hdr is not None and isinstance(hdr.type, ast.HeaderT):
                # a digest of the header's fields: Tofino sends them whether or not the
                # header was made valid (tna_resubmit's metadata headers never are)
                self.w.line(f"{parts}.append(_e_{self.classes.name(hdr.type)}({self.ex(hdr)}))")
            elif hdr is not None:
                self.emit(hdr, parts)
            if ext == "Mirror":
                return f"_CTX.mirrors.append(({self.as_int(a[0])}, b''.join({parts})))"
            return f"_CTX.resubmit.append(b''.join({parts}))"
        if ext == "ParserCounter":
            if m == "set" and len(a) == 1:
                return f"{obj}.__setitem__(0, {self.as_int(a[0])} & 0xff)"
            if m == "set":
                f, mx, rot, msk, add = (self.as_int(x) for x in a)
                value = f"((((({f}) >> ({rot})) | (({f}) << (8 - ({rot})))) & ((1 << (({msk}) + 1)) - 1)) + ({add}))"
                return f"{obj}.__setitem__(0, min({value}, {mx}) & 0xff)"
            if m == "increment":
                return f"{obj}.__setitem__(0, ({obj}[0] + {self.as_int(a[0])}) & 0xff)"
            if m == "decrement":
                return f"{obj}.__setitem__(0, ({obj}[0] - {self.as_int(a[0])}) & 0xff)"
            if m == "is_zero":
                return f"({obj}[0] == 0)"
            if m == "is_negative":
                return f"({obj}[0] >= 0x80)"
        if ext == "Hash" and m == "get":
            algo, width = kind[1]
            fields = self.bind_common(self.flatten(a[0]))
            packed = self.packed_bytes(fields)
            if packed is None:      # a varbit field: its width is known per packet only
                packed = "_pack_fields([" + ", ".join(f"({c}, {w})" for c, w in fields) + "])"
            return f"(_hash_compute({algo!r}, {packed}) & {hex(mask(width))})"
        if ext == "Random" and m == "get":
            return f"_randint(0, {hex(mask(kind[1]))})"
        if ext == "Checksum":
            if m == "add":
                acc, bits = self.packed_fields(a[0])
                self.checksum_append(obj, acc, bits)
                return None
            if m == "subtract":         # the fields' words negated (ones' complement), 16-bit aligned
                acc, bits = self.packed_fields(a[0])
                w16 = f"{bits + (-bits % 16)}" if isinstance(bits, int) else f"({bits} + (-{bits} % 16))"
                pad = f"{-bits % 16}" if isinstance(bits, int) else f"(-{bits} % 16)"
                self.checksum_append(obj, f"(((1 << {w16}) - 1) ^ ({acc} << {pad}))", w16)
                return None
            # the concatenation zero-padded to 16-bit words, summed (as csum16 over its bytes)
            total = f"_csum16_int({obj}_a << (-{obj}_b % 16))"
            if m == "verify":           # Tofino: TRUE when the checksum is WRONG (the parser's error bit)
                return f"({total} != 0)"
            if m == "get":              # the residual: the ones' complement sum of added - subtracted
                return f"(~{total} & 0xFFFF)"
            if m == "update":
                acc, bits = self.packed_fields(a[0])
                pad = f"{-bits % 16}" if isinstance(bits, int) else f"(-{bits} % 16)"
                zeros_as_ones = len(a) > 1 and a[1] is not None and self.const_value(a[1])
                if zeros_as_ones:       # a result of 0 is sent as 0xFFFF (UDP)
                    return f"(_csum16_int({acc} << {pad}) or 0xFFFF)"
                return f"_csum16_int({acc} << {pad})"
        raise P4UnsupportedError(call.loc, f"method {m} of extern {ext}")

    def prefilled_extract(self, call: ast.MethodCall) -> None:
        """The egress parser's first ``pkt.extract(eg_intr_md)``: TnaPath may fill the header (and
        mark it valid) before the parser runs, with what it would have packed in front of the
        packet; then reading those bytes back is skipped (issue 15). Unfilled: extracted as usual."""
        header = self.ex(call.args[0])
        bits = sum(width_of(ft) for _, ft in call.args[0].type.fields)
        with self.w.block(f"if {header}._v:"):
            self.w.line(f"_p += {bits}")
        with self.w.block("else:"):
            super().extern_method(call)

    def checksum_append(self, obj: str, value: str, bits: int | str) -> None:
        """Concatenate ``value`` (``bits`` wide) to what Checksum ``obj`` has added so far."""
        self.w.line(f"{obj}_a = ({obj}_a << ({bits})) | {value}")
        self.w.line(f"{obj}_b += {bits}")

    def packed_fields(self, e: ast.Expression) -> tuple[str, int | str]:
        """A checksum's field list as one int and its bit count, folded by generated shifts (no
        per-packet list of (value, width) pairs): Python expressions (the count an int when every
        width is static). Fields of an invalid header are left out, as BMv2's checksums do."""
        fields = self.bind_common(self.flatten(e))
        guards = self.guards(e)
        if len(guards) != len(fields):
            guards = [None] * len(fields)
        groups: list[tuple[str | None, list[tuple[str, Any]]]] = []
        for field, guard in zip(fields, guards, strict=True):
            if groups and groups[-1][0] == guard:
                groups[-1][1].append(field)
            else:
                groups.append((guard, [field]))
        if len(groups) == 1 and groups[0][0] is None:
            (code, width), *rest = groups[0][1]
            acc, bits = code, width
            for code, width in rest:
                acc = f"(({acc}) << {width} | {code})"
                bits = bits + width if isinstance(bits, int) and isinstance(width, int) else f"{bits} + {width}"
            return acc, bits
        acc, bits = self.w.tmp("ca"), self.w.tmp("cb")
        self.w.line(f"{acc} = {bits} = 0")
        for guard, items in groups:
            (code, width), *rest = items
            value, total = code, [width]
            for code, width in rest:
                value = f"(({value}) << {width} | {code})"
                total.append(width)
            static = sum(w for w in total if isinstance(w, int))
            count = " + ".join([str(static)] * bool(static) + [f"{w}" for w in total if not isinstance(w, int)]) or "0"
            if guard is None:
                self.w.line(f"{acc} = ({acc} << ({count})) | {value}")
                self.w.line(f"{bits} += {count}")
            else:
                with self.w.block(f"if {guard}:"):
                    self.w.line(f"{acc} = ({acc} << ({count})) | {value}")
                    self.w.line(f"{bits} += {count}")
        return acc, bits

    def register_action_execute(self, call: ast.MethodCall, desc: RegisterActionDesc, read: str, write: str,
                                index: str) -> str:
        """``ra.execute(i)`` (or a DirectRegisterAction's ``execute()``, ``index`` then the matched
        entry): read the cell, run the apply body inline (it may read the enclosing control's
        values), write the cell back; the expression is the ``rv`` out value."""
        f = desc.apply
        if any(isinstance(s, ast.ReturnStmt) for s in _walk(f.body)):
            raise P4UnsupportedError(call.loc, "return inside a RegisterAction apply body")
        idx, value, rv = self.w.tmp("ri"), self.w.tmp("rval"), self.w.tmp("rv")
        self.w.line(f"{idx} = {index}")
        self.w.line(f"{value} = {read.format(i=idx)}")
        self.w.line(f"{rv} = 0")
        cell = self.struct_cell(f.params[0].type, call.loc) if f.params else None
        bound = value
        if cell is not None:        # a struct cell: unpacked into its fields, packed back after
            bound = self.w.tmp("rs")
            self.w.line(f"{bound} = {self.classes.name(f.params[0].type)}()")
            for fname, shift, fmask in cell:
                self.w.line(f"{bound}.{fname} = ({value} >> {shift}) & {fmask}")
        outer, outer_register = self.env, self.current_register
        self.env = Env(outer)
        self.current_register = desc.register
        try:
            for p, name in zip(f.params, (bound, rv), strict=False):
                self.env.bind(p, name)
            self.stmts(f.body.stmts)
        finally:
            self.env, self.current_register = outer, outer_register
        if cell is not None:
            self.w.line(f"{value} = " + " | ".join(f"(({bound}.{fname} & {fmask}) << {shift})"
                                                    for fname, shift, fmask in cell))
        self.w.line(write.format(i=idx, v=value))
        return rv

    def cell_width(self, t: Any, loc: Any) -> int:
        """Bits of a register cell of type ``t`` (a struct: the sum of its bit<W> fields)."""
        layout = self.struct_cell(t, loc)
        return width_of(t) if layout is None else sum(width_of(ft) for _, ft in t.fields)

    @staticmethod
    def struct_cell(t: Any, loc: Any) -> list[tuple[str, int, int]] | None:
        """(field, shift, mask) of a struct-valued register cell, its first field in the high bits
        (None: not a struct). Fields must be bit<W>."""
        if not isinstance(t, ast.StructT):
            return None
        out, shift = [], sum(width_of(ft) for _, ft in t.fields)
        for name, ft in t.fields:
            if not isinstance(ft, ast.BitT) or ft.signed:
                raise P4UnsupportedError(loc, f"register cell field {name} of type {ft}: only bit<W> fields")
            shift -= width_of(ft)
            out.append((pyfield(name), shift, mask(width_of(ft))))
        return out

    def initial_cell(self, value: Any, cell_t: Any, inst: ast.Instantiation) -> int:
        """A Register's ``initial_value`` as the packed cell (0 when absent): a constant, or a
        struct literal ``{a, b}`` packed as ``struct_cell`` lays it out."""
        if value is None:
            return 0
        layout = self.struct_cell(cell_t, inst.loc)
        if layout is None:
            return self.const_value(value) & mask(width_of(cell_t))
        if isinstance(value, ast.StructInit):
            items = [e for _, e in value.fields]
        else:
            items = getattr(value, "items", None)
        if items is None or len(items) != len(layout):
            raise P4UnsupportedError(inst.loc, f"Register {inst.name}: initial value {type(value).__name__}")
        return sum((self.const_value(v) & fmask) << shift for v, (_, shift, fmask) in zip(items, layout, strict=True))

    def entry_here(self, call: ast.MethodCall, what: str) -> str:
        """The table entry that matched, for a direct extern called in a table's action."""
        if not self.current_entry:
            raise P4UnsupportedError(call.loc, f"{what} outside an action of the table that owns it")
        return self.current_entry[0]

    def adjusted_length(self, adjust: ast.Expression | None) -> str:
        """The packet length a counter or meter counts: less ``adjust_byte_count`` when given."""
        return "_CTX.length" if adjust is None else f"max(_CTX.length - {self.as_int(adjust)}, 0)"

    def action_selector(self, inst: ast.Instantiation, py: str, fq: str) -> None:
        """``ActionSelector(profile, hash, mode, max_group_size, num_groups)`` (or the deprecated
        ``(size, hash, mode)``): a selector over the profile's members, hashing the table's
        ``selector`` keys with the Hash's algorithm."""
        args = inst.args
        first = args[0]
        if isinstance(first, ast.PathExpr) and id(first.decl) in self.profiles:
            size = self.profiles[id(first.decl)][2]
        else:
            size = self.const_value(first)
        hash_inst = getattr(args[1], "decl", None)
        kind = self.stateless.get(id(hash_inst))
        if kind is None or kind[0] != "hash":
            raise P4UnsupportedError(inst.loc, f"ActionSelector {inst.name}: its Hash here")
        algo, width = kind[1]
        if enum_member(args[2]) != "FAIR":
            raise P4UnsupportedError(inst.loc, f"ActionSelector {inst.name} in mode {enum_member(args[2])}")
        if any(isinstance(getattr(a, "type", None), ast.ExternT) and a.type.name == "Register" for a in args[3:]):
            raise P4UnsupportedError(inst.loc, f"ActionSelector {inst.name} with a member-state Register")
        params = {"algorithm": algo, "size": size, "output_width": width}
        self.manifest.externs.append(res.ExternDesc("action_selector", py, fq, params, inst.annotations, inst))

    # ---- tables -------------------------------------------------------------------------
    def declare_table(self, t: ast.TableDecl) -> None:
        impl = t.implementation
        if impl is not None and id(impl) in self.profiles and \
                not any(x.decl is impl for x in self.manifest.externs):
            py, fq, size, inst = self.profiles[id(impl)]
            self.manifest.externs.append(res.ExternDesc("action_profile", py, fq, {"size": size},
                                                        inst.annotations, inst))
        super().declare_table(t)

    def apply_table(self, call: ast.MethodCall, hit: str | None, act: str | None) -> None:
        # a TNA DirectCounter counts where an action calls count(), not on every hit as v1model's
        desc = self.table_desc(call.decl)
        owner, desc.direct_counter = desc.direct_counter, None
        try:
            super().apply_table(call, hit, act)
        finally:
            desc.direct_counter = owner

    # ---- statements ----------------------------------------------------------------------
    def st_AssignStmt(self, s: ast.AssignStmt) -> None:
        rhs = s.rhs
        if isinstance(rhs, ast.MethodCall) and rhs.method == "port_metadata_unpack":
            # ``h = port_metadata_unpack<T>(pkt)``: the port metadata in front of the packet,
            # extracted into h (a header: valid afterwards)
            if not self.in_parser or not isinstance(s.lhs.type, ast.HeaderT):
                raise P4UnsupportedError(s.loc, "port_metadata_unpack outside a parser or into a non-header")
            if self.role == "ingress_parser":
                self.port_metadata_header = s.lhs.type
            self.extract(s.lhs, None, s.loc)
            return
        if id(s) in self.fresh_stores and not isinstance(s.lhs, ast.PathExpr) \
                and self.value(s.rhs) == default_value(s.lhs.type, self.classes):
            return              # the field of a fresh object holds that value already
        if not self.literal_struct_store(s):
            super().st_AssignStmt(s)

    def literal_struct_store(self, s: ast.AssignStmt) -> bool:
        """``md = {0, 0, ..., false}`` into an out/inout struct parameter of scalar fields (TNA
        parsers zero their metadata so, twice per packet): one store per field, not a fresh
        struct copied slot by slot into the caller's. False: not that shape, generate as usual."""
        lhs, rhs = s.lhs, s.rhs
        if not (isinstance(lhs, ast.PathExpr) and isinstance(lhs.decl, ast.Param)
                and lhs.decl.direction in ("out", "inout") and isinstance(lhs.type, ast.StructT)
                and isinstance(rhs, ast.StructInit)
                and all(isinstance(e, (ast.IntLiteral, ast.BoolLiteral)) for _, e in rhs.fields)):
            return False
        target = self.env.lookup(lhs.decl)
        if target is None:
            return False
        types = dict(lhs.type.fields)
        for name, e in rhs.fields:
            value = self.value(e)
            if id(s) in self.fresh_stores and value == default_value(types[name], self.classes):
                continue        # the field of a fresh object holds that value already
            self.w.line(f"{target}.{pyfield(name)} = {value}")
        return True

    # ---- module --------------------------------------------------------------------------
    def generate(self) -> GeneratedModule:
        main = self.program.main
        pipes = [d for d in self.program.decls if isinstance(d, ast.Instantiation)
                 and isinstance(d.decl, ast.PackageTypeDecl) and d.decl.name == "Pipeline"]
        if len(pipes) != 1 or len(main.args) != 1:
            raise P4UnsupportedError(main.loc, "a Switch of more than one Pipeline (p4sim runs one pipe)")
        pipe = pipes[0]
        decls = list(pipe.args)
        blocks: dict[str, str] = {}
        tail: list[str] = []
        pipe_code: dict[str, list[str]] = {}      # ingress/egress/ghost -> its generated functions
        for role, d in zip(ROLES, decls, strict=False):
            # bf-p4c qualifies control-plane names with the Pipeline instance (pipe.Ingress.t);
            # absolute @name(".x") names stay as written
            prefix = f"{pipe.name}.{control_plane_name('', d)}"
            self.role = role
            first = len(self.functions)
            if isinstance(d, ast.ParserDecl):
                self.fresh_stores = fresh_default_stores(d)
                intrinsic = first_extract(d, "egress_intrinsic_metadata_t") if role == "egress_parser" else None
                self.prefill_extract = id(intrinsic) if intrinsic is not None else None
                blocks[role] = self.gen_parser(d, prefix)
                self.fresh_stores, self.prefill_extract = set(), None
                if role == "egress_parser" and intrinsic is None:
                    blocks[role] = self.past_intrinsic(blocks[role], d, "egress_intrinsic_metadata_t")
                if intrinsic is not None:
                    tail.append("_PREFILL_egress = True")
            else:
                blocks[role] = self.gen_control(d, prefix)
            pipe_code.setdefault(PIPE_OF[role], []).extend(self.functions[first:])
        arg_types: dict[str, list[str]] = {}
        pipe_types: dict[str, dict[str, ast.StructT]] = {}     # pipe -> class name -> its struct type
        role_types: dict[str, list[Any]] = {}                   # role -> its arguments' types
        for role, d in zip(ROLES, decls, strict=False):
            proto = self.program.find(PROTOTYPES[role])
            names, types = [], []
            for i, p in enumerate(proto.params):
                if i < len(d.params) and not isinstance(p.type, ast.ExternT):
                    t = d.params[i].type
                elif isinstance(p.type, (ast.StructT, ast.HeaderT)):
                    t = p.type
                else:
                    names.append(None)
                    types.append(None)
                    continue
                names.append(self.classes.name(t) if isinstance(t, (ast.StructT, ast.HeaderT)) else None)
                types.append(t if isinstance(t, (ast.StructT, ast.HeaderT)) else None)
                if isinstance(t, ast.StructT):
                    pipe_types.setdefault(PIPE_OF[role], {})[names[-1]] = t
            arg_types[role] = names
            role_types[role] = types
        # each pipe's _FRESH_ builds only the headers its code names (p4sim.tna.pipe_structs): its
        # code is every function but those the other pipe's blocks generated (P4 functions count
        # for both: one generated body may be called from either pipe)
        used: dict[tuple[str, str], set[str]] = {}       # (pipe, class) -> the fields its code names
        sentinels: dict[str, str] = {}                    # header class -> its shared unused instance
        pipe_classes: list[str] = []
        for pipe_name, by_class in pipe_types.items():
            others = {id(f) for p, fs in pipe_code.items() if p != pipe_name for f in fs
                      if not re.match(r"def G\d+_fn_", f)}
            code = "\n".join(f for f in self.functions if id(f) not in others)
            for base, t in by_class.items():
                used[pipe_name, base] = named_fields(code, t)
                for header in unnamed_headers(t, used[pipe_name, base]).values():
                    if self.classes.name(header) not in sentinels:
                        global_name, source = sentinel_source(self.classes, header)
                        sentinels[self.classes.name(header)] = global_name
                        pipe_classes.append(source)
        tail += self.fresh_functions(arg_types, role_types, used, sentinels)
        for role, fn in blocks.items():
            tail.append(f"_BLOCK_{role} = {fn}")
            tail.append(f"_NEW_{role} = ({', '.join(n or 'None' for n in arg_types[role])},)")
            tail.append(f"_NPARAMS_{role} = {len(decls[ROLES.index(role)].params)}")
        prelude = PRELUDE
        src = "\n".join([prelude, self.classes.source(), *pipe_classes, *self.functions, *tail]) + "\n"
        if self.may_exit:
            raise P4UnsupportedError(main.loc, "exit in a TNA program")
        module = GeneratedModule(src, self.manifest, blocks, {}, list(self.program.errors),
                                 aliases={}, empty_blocks=frozenset(), uses_ctx=True, sm_aliases={})
        self.tna_objects.append(("_PORT_METADATA", "port_metadata", f"{pipe.name}.{control_plane_name('', decls[0])}"
                                 ".$PORT_METADATA", self.port_metadata_params(decls[0])))
        self.resolve_register_params()
        module.tna_objects = list(self.tna_objects)
        module.direct_register_tables = self.direct_register_owners()
        module.direct_filter_tables = self.direct_filter_owners()
        return module

    def past_intrinsic(self, parse: str, parser: ast.ParserDecl, intrinsic: str) -> str:
        """A wrapper of generated parser ``parse`` whose payload starts no earlier than the end of
        the ``intrinsic`` header in front of the packet: a parser that does not extract it (Intel's
        ``EmptyEgressParser``) leaves the packet as it came, the metadata never reaches the wire."""
        nbytes = sum(width_of(f.type) for f in self.program.find(intrinsic).fields) // 8
        name = self.gname("past_intrinsic")
        args = ", ".join(["_d"] + [f"a{i}" for i in range(1, len(parser.params))])
        self.functions.append(f"def {name}({args}):\n    return max({parse}({args}), {nbytes})\n")
        return name

    def fresh_functions(self, arg_types: dict[str, list[str | None]], role_types: dict[str, list[Any]],
                        used: dict[tuple[str, str], set[str]], sentinels: dict[str, str]) -> list[str]:
        """``_FRESH_ingress()`` -> (hdr, meta, ig_intr_md, for_tm, from_prsr, for_dprsr) and
        ``_FRESH_egress()`` -> (hdr, meta, eg_intr_md, from_prsr, for_dprsr, for_oport): each pipe's
        per-packet objects from one call (p4sim.tna.pipe_structs), fresh for every packet. Ingress
        presets ``ucast_egress_port`` and ``resubmit_type`` one above their range: Tofino sends no
        unicast copy and resubmits nothing unless the program wrote them."""
        out = []
        for pipe, parser, control, last in (("ingress", "ingress_parser", "ingress", 4),
                                            ("egress", "egress_parser", "egress", 5)):
            if parser not in arg_types or control not in arg_types:
                continue
            names = arg_types[parser][1:] + [arg_types[control][last]]
            types = role_types[parser][1:] + [role_types[control][last]]
            if None in names or None in types:
                continue
            presets: dict[int, list[tuple[str, int]]] = {}
            if pipe == "ingress":
                for i, field in ((3, "ucast_egress_port"), (5, "resubmit_type")):
                    width = next((width_of(ft) for n, ft in types[i].fields if n == field), None)
                    if width is not None:
                        presets[i] = [(field, 1 << width)]
            objects = [(n, t, used.get((pipe, self.classes.name(t)), set())) for n, t in zip(names, types, strict=True)]
            out.append(fresh_function(self.classes, pipe, objects, presets, sentinels))
        return out

    def port_metadata_params(self, parser: Any) -> dict[str, Any]:
        """The port-metadata table of the ingress parser, as bf-p4c lists it: keyed by the
        parser's ``ingress_intrinsic_metadata_t`` parameter's ``ingress_port``; its data the
        header ``port_metadata_unpack`` fills (else all PORT_METADATA_SIZE bits, untyped)."""
        md_bits = int(self.program.find("PORT_METADATA_SIZE").value.value)
        key = next((p.name for p in getattr(parser, "params", ())
                    if getattr(p.type, "name", None) == "ingress_intrinsic_metadata_t"), "ig_intr_md")
        header = self.port_metadata_header
        width = md_bits if header is None else sum(width_of(ft) for _, ft in header.fields)
        return {"width": min(width, md_bits), "md_bits": md_bits, "key_name": key, "header": header}

    def resolve_register_params(self) -> None:
        """Each RegisterParam's ``register`` (the Register name) or ``direct_table`` (the table
        of the DirectRegister) its RegisterAction runs on: bf-p4c's ``table_id``."""
        registers = {x.pyname: x.name for x in self.manifest.externs if x.kind == "register"}
        direct = {py: fq for py, kind, fq, _ in self.tna_objects if kind == "direct_register"}
        owners = self.direct_register_owners()
        for py, kind, _, params in self.tna_objects:
            if kind != "register_param" or py not in self.register_param_users:
                continue
            user = self.register_param_users[py]
            if user in registers:
                params["register"] = registers[user]
            elif user in direct and direct[user] in owners:
                params["direct_table"] = owners[direct[user]]

    def direct_filter_owners(self) -> dict[str, str]:
        """DirectLpf/DirectWred name -> the table it belongs to (its ``filters`` property first)."""
        return self.direct_owners(("direct_lpf", "direct_wred"), self.direct_filter_tables, "filters",
                                  self.direct_filter_names)

    def direct_register_owners(self) -> dict[str, str]:
        """DirectRegister name -> the table it belongs to (its ``registers`` property first)."""
        return self.direct_owners(("direct_register",), self.direct_register_tables, "registers",
                                  self.direct_register_names)

    def direct_owners(self, kinds: tuple[str, ...], by_call: dict[str, str], prop_name: str,
                      names: dict[int, str]) -> dict[str, str]:
        """Direct extern name -> its table: the table whose ``prop_name`` property names it, else
        the table whose action calls it (``by_call``: global -> table)."""
        by_global = {py: fq for py, kind, fq, _ in self.tna_objects if kind in kinds}
        owners = {by_global[py]: table for py, table in by_call.items() if py in by_global}
        for t in self.manifest.tables:
            for prop in getattr(t.decl, "properties", ()):
                inst = getattr(prop.value, "decl", None)
                if prop.name == prop_name and id(inst) in names:
                    owners[names[id(inst)]] = t.name
        return owners

    def bind_params(self, params: list[ast.Param]) -> list[str]:
        names = super().bind_params(params)
        if self.in_parser:
            self.sm_expr = "_CTX"      # a parser error is recorded in _CTX.parser_error
        return names


def _walk(node: Any):
    yield node
    for s in getattr(node, "stmts", None) or []:
        yield from _walk(s)
    for attr in ("then", "otherwise", "body"):
        child = getattr(node, attr, None)
        if isinstance(child, ast.Statement):
            yield from _walk(child)


def generate(program: ast.Program) -> GeneratedModule:
    """Generate the Python module for a checked TNA/T2NA program."""
    if program.arch != "Switch":
        raise P4CompileError(getattr(program.main, "loc", None), "not a TNA program (main is not a Switch)")
    return TnaGen(program).generate()
