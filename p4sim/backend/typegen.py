"""Generated Python classes for P4 headers, header unions and structs.

Each P4 aggregate type becomes a class with ``__slots__`` (one int/bool/object per field, plus
``_v`` for header validity) and specialised ``_copy``/``_eq`` methods; each fixed-size header also
gets a module-level extract function (one ``int.from_bytes`` then shifts and masks) and an emit
function (one big int, one ``to_bytes``). Field names that are Python keywords are mangled.
"""

from __future__ import annotations

import keyword
import re

from p4sim.frontend import ast

_ASCII_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def py_literal(value: str | int | bool | None) -> str:
    """The one way text or numbers that came from the program (names, file names, annotation and
    string values) enter generated source: as a Python literal that evaluates back to ``value``."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, str):
        return repr(str(value))
    raise TypeError(f"no literal for {type(value).__name__}")


def pyfield(name: str) -> str:
    """The Python attribute name for P4 field ``name``: the name itself when it is a plain ASCII
    identifier that cannot clash with p4sim's own attributes, else a mangled form."""
    if not _ASCII_IDENT.fullmatch(name):
        return "f_" + ident(name)
    if keyword.iskeyword(name) or name in ("h", "n", "size"):
        return f"f_{name}"
    return name


def ident(name: str) -> str:
    """A Python identifier fragment derived from a P4 name: ASCII letters, digits and ``_`` only
    (anything else -- dots, quotes, newlines, non-ASCII -- becomes ``_``), so no input text can
    leave the identifier it is part of."""
    return "".join(c if c.isascii() and c.isalnum() else "_" for c in name)


def mask(width: int) -> int:
    return (1 << width) - 1


def default_value(t: ast.Type, classes: TypeClasses) -> str:
    """Python expression for a fresh (zero / invalid) value of type ``t``."""
    if isinstance(t, ast.BoolT):
        return "False"
    if isinstance(t, (ast.HeaderT, ast.StructT, ast.HeaderUnionT)):
        return f"{classes.name(t)}()"
    if isinstance(t, ast.HeaderStackT):
        return f"_HeaderStack([{classes.name(t.element)}() for _ in range({t.size})])"
    if isinstance(t, ast.TupleT):
        return "(" + "".join(default_value(e, classes) + ", " for e in t.elements) + ")"
    return "0"


class TypeClasses:
    """Collects the aggregate types a program uses and writes their classes."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._types: dict[str, ast.Type] = {}
        self._order: list[str] = []
        self.extra_slots: dict[str, tuple[str, ...]] = {}

    def name(self, t: ast.Type) -> str:
        key = f"{type(t).__name__}:{t.name}"
        if key not in self._names:
            prefix = {"HeaderT": "H_", "StructT": "S_", "HeaderUnionT": "U_"}[type(t).__name__]
            self._names[key] = prefix + ident(t.name)
            self._types[key] = t
            for _, ft in t.fields:
                self._touch(ft)
            self._order.append(key)
        return self._names[key]

    def _touch(self, t: ast.Type) -> None:
        if isinstance(t, (ast.HeaderT, ast.StructT, ast.HeaderUnionT)):
            self.name(t)
        elif isinstance(t, ast.HeaderStackT):
            self.name(t.element)

    def source(self) -> str:
        out: list[str] = []
        for key in self._order:
            t = self._types[key]
            cls = self._names[key]
            if isinstance(t, ast.HeaderT):
                out.append(self._header(cls, t))
            elif isinstance(t, ast.HeaderUnionT):
                out.append(self._union(cls, t))
            else:
                out.append(self._struct(cls, t))
        return "\n".join(out)

    # ---- headers ---------------------------------------------------------------------------
    def _header(self, cls: str, t: ast.HeaderT) -> str:
        fields = [(pyfield(n), ft) for n, ft in t.fields]
        varbits = [f for f, ft in fields if isinstance(ft, ast.VarbitT)]
        slots = ["_v"] + [f for f, _ in fields] + [f"{f}_len" for f in varbits]
        lines = [f"class {cls}:", f"    __slots__ = {tuple(slots)!r}", "    def __init__(self):",
                 "        self._v = False"]
        structs = {f: ft for f, ft in fields if isinstance(ft, ast.StructT)}
        lines += [f"        self.{s} = {self.name(structs[s]) + '()' if s in structs else 'False' if _is_bool(t, s) else '0'}"
                  for s in slots[1:]]
        lines += ["    def _copy(self):", f"        n = _new({cls})"]
        lines += [f"        n.{s} = self.{s}._copy()" if s in structs else f"        n.{s} = self.{s}" for s in slots]
        lines += ["        return n", "    def _eq(self, o):",
                  "        if self._v != o._v: return False",
                  "        return not self._v or (" + " and ".join(
                      [f"self.{f}._eq(o.{f})" if f in structs else f"self.{f} == o.{f}" for f in slots[1:]]
                      or ["True"]) + ")",
                  "    def _setinvalid(self):", "        self._v = False",
                  f"    def _mk(self, {', '.join(['v'] + [f'a{i}' for i in range(len(fields))])}):",
                  "        self._v = v"]
        lines += [f"        self.{f} = a{i}" for i, (f, _) in enumerate(fields)]
        lines.append("        return self")
        if not varbits:
            lines += self._header_codec(cls, t, fields)
        return "\n".join(lines) + "\n"

    def _header_codec(self, cls: str, t: ast.HeaderT, fields: list[tuple[str, ast.Type]]) -> list[str]:
        width = wire_width(t)
        fmt, _ = struct_layout(t)
        lines = [f"_HW_{cls} = {width}", f"_ST_{cls} = _Struct({fmt!r})", f"def _x_{cls}(h, d, b):"]
        lines += ["    " + x for x in extract_lines(t, "h", "d", "b", "v", f"_ST_{cls}")]
        lines += [f"def _e_{cls}(h):", f"    return {emit_expr(t, 'h', f'_ST_{cls}')}"]
        return lines

    # ---- unions and structs ----------------------------------------------------------------
    def _union(self, cls: str, t: ast.HeaderUnionT) -> str:
        fields = [(pyfield(n), ft) for n, ft in t.fields]
        lines = [f"class {cls}:", f"    __slots__ = {tuple(f for f, _ in fields)!r}", "    def __init__(self):"]
        lines += [f"        self.{f} = {self.name(ft)}()" for f, ft in fields] or ["        pass"]
        lines += ["    def _copy(self):", f"        n = _new({cls})"]
        lines += [f"        n.{f} = self.{f}._copy()" for f, _ in fields]
        lines += ["        return n", "    def _eq(self, o):",
                  "        return " + " and ".join([f"self.{f}._eq(o.{f})" for f, _ in fields] or ["True"]),
                  "    def _setinvalid(self):"]
        lines += [f"        self.{f}._v = False" for f, _ in fields] or ["        pass"]
        lines += ["    @property", "    def _v(self):",
                  "        return " + " or ".join([f"self.{f}._v" for f, _ in fields] or ["False"])]
        return "\n".join(lines) + "\n"

    def field_init_lines(self, f: str, ft: ast.Type, obj: str = "self", indent: str = " " * 8) -> list[str]:
        """``__init__`` lines giving struct field ``f`` (of type ``ft``) of ``obj`` its default
        value; a header without struct fields is built inline in a local ``h`` (hot path: one per
        header per packet)."""
        if isinstance(ft, ast.HeaderT) and not any(isinstance(t2, ast.StructT) for _, t2 in ft.fields):
            hslots = ["_v"] + [pyfield(n) for n, _ in ft.fields] + \
                [f"{pyfield(n)}_len" for n, t2 in ft.fields if isinstance(t2, ast.VarbitT)]
            return [f"{indent}h = _new({self.name(ft)})",
                    *[f"{indent}h.{x} = {'False' if x == '_v' or _is_bool(ft, x) else '0'}" for x in hslots],
                    f"{indent}{obj}.{f} = h"]
        return [f"{indent}{obj}.{f} = {default_value(ft, self)}"]

    def _struct(self, cls: str, t: ast.StructT) -> str:
        fields = [(pyfield(n), ft) for n, ft in t.fields]
        extra = self.extra_slots.get(t.name, ())
        slots = tuple(f for f, _ in fields) + tuple(s for s, _ in extra)
        lines = [f"class {cls}:", f"    __slots__ = {slots!r}", "    def __init__(self):"]
        for f, ft in fields:
            lines += self.field_init_lines(f, ft)
        lines += [f"        self.{s} = {v}" for s, v in extra]
        if not slots:
            lines.append("        pass")
        lines += ["    def _copy(self):", f"        n = _new({cls})"]
        for f, ft in fields:
            agg = isinstance(ft, (ast.HeaderT, ast.StructT, ast.HeaderUnionT, ast.HeaderStackT))
            lines.append(f"        n.{f} = self.{f}._copy()" if agg else f"        n.{f} = self.{f}")
        lines += [f"        n.{s} = self.{s}" for s, _ in extra]
        lines += ["        return n", "    def _eq(self, o):"]
        conds = []
        for f, ft in fields:
            agg = isinstance(ft, (ast.HeaderT, ast.StructT, ast.HeaderUnionT, ast.HeaderStackT))
            conds.append(f"self.{f}._eq(o.{f})" if agg else f"self.{f} == o.{f}")
        lines.append("        return " + (" and ".join(conds) or "True"))
        lines.append("    def _setinvalid(self):")
        inv = [f"        self.{f}._setinvalid()" for f, ft in fields
               if isinstance(ft, (ast.HeaderT, ast.StructT, ast.HeaderUnionT))]
        inv += [f"        self.{f}._invalidate()" for f, ft in fields if isinstance(ft, ast.HeaderStackT)]
        lines += inv or ["        pass"]
        params = ", ".join(f"a{i}" for i in range(len(fields)))
        lines.append(f"    def _mk(self{', ' + params if params else ''}):")
        lines += [f"        self.{f} = a{i}" for i, (f, _) in enumerate(fields)]
        lines.append("        return self")
        return "\n".join(lines) + "\n"


def _is_bool(t: ast.HeaderT, slot: str) -> bool:
    for n, ft in t.fields:
        if pyfield(n) == slot:
            return isinstance(ft, ast.BoolT)
    return False


def check_byte_aligned(t: ast.HeaderT, loc) -> None:
    """Kept for callers: every header is extracted in whole bytes (see ``wire_width``)."""


def wire_width(t: ast.HeaderT) -> int:
    """Bits a header occupies on the wire: BMv2 rounds a header that is not a whole number of
    bytes up to whole bytes (the pad bits follow the last field; emitted as zeros)."""
    width = sum(ast.type_width(ft) for _, ft in t.fields)
    return (width + 7) // 8 * 8


_PART = {8: "Q", 4: "I", 2: "H", 1: "B"}


def struct_layout(t: ast.HeaderT) -> tuple[str, list[tuple[list[tuple[int, int]], list[tuple[str | None, ast.Type, int, int]]]]]:
    """Split a header into byte-aligned chunks read with one ``struct`` format.

    Returns (format, chunks); each chunk is (parts, fields): ``parts`` are (index in the
    unpacked tuple, width in bits) from most significant, ``fields`` are (attr, type, width,
    shift within the chunk; None for the pad bits of a header that is not whole bytes).
    """
    fields = header_leaves(t)
    pad = (-sum(w for _, _, w in fields)) % 8
    if pad:      # a header that is not whole bytes: pad bits at its end (BMv2)
        fields.append((None, ast.BitT(pad), pad))
    fmt = "!"
    chunks = []
    current: list[tuple[str, ast.Type, int]] = []
    acc = 0
    index = 0
    for f, ft, w in fields:
        current.append((f, ft, w))
        acc += w
        if acc % 8:
            continue
        nbytes = acc // 8
        parts = []
        while nbytes:
            size = next(sz for sz in (8, 4, 2, 1) if sz <= nbytes)
            fmt += _PART[size]
            parts.append((index, size * 8))
            index += 1
            nbytes -= size
        shift = acc
        placed = []
        for cf, ct, cw in current:
            shift -= cw
            placed.append((cf, ct, cw, shift))
        chunks.append((parts, placed))
        current, acc = [], 0
    return fmt, chunks


def header_leaves(t: ast.Type, prefix: str = "") -> list[tuple[str, ast.Type, int]]:
    """A header's scalar fields in wire order as (attribute path, type, width): a field whose type
    is a struct (P4_16 allows structs of bit<>/bool fields in headers) contributes its own
    fields as ``field.sub`` paths."""
    out: list[tuple[str, ast.Type, int]] = []
    for n, ft in t.fields:
        if isinstance(ft, ast.StructT):
            out += header_leaves(ft, f"{prefix}{pyfield(n)}.")
        else:
            out.append((prefix + pyfield(n), ft, ast.type_width(ft)))
    return out


def _field_value(expr: str, ft: ast.Type, w: int) -> str:
    if isinstance(ft, ast.BoolT):
        return f"({expr}) != 0"
    if isinstance(ft, ast.BitT) and ft.signed:
        h = 1 << (w - 1)
        return f"((({expr}) ^ {hex(h)}) - {hex(h)})"
    return expr


def extract_lines(t: ast.HeaderT, obj: str, data: str, byte: str, tmp: str, struct_name: str) -> list[str]:
    """Statements that fill header ``obj`` from ``data`` at byte offset ``byte`` and validate it:
    one ``Struct.unpack_from`` into small ints, then shifts and masks within each chunk."""
    fmt, chunks = struct_layout(t)
    nparts = sum(len(parts) for parts, _ in chunks)
    if nparts == 0:
        return [f"{obj}._v = True"]
    names = [f"{tmp}_{i}" for i in range(nparts)]
    lines = [f"{', '.join(names)}{',' if nparts == 1 else ''} = {struct_name}.unpack_from({data}, {byte})"]
    for parts, placed in chunks:
        if len(parts) == 1:
            value = names[parts[0][0]]
        else:
            total = sum(w for _, w in parts)
            terms = []
            for i, w in parts:
                total -= w
                terms.append(names[i] if total == 0 else f"({names[i]} << {total})")
            value = f"({' | '.join(terms)})"
            if len(placed) > 1:
                lines.append(f"{tmp} = {value}")
                value = tmp
        chunk_w = sum(w for _, w in parts)
        for f, ft, w, shift in placed:
            if f is None:
                continue
            e = value if shift == 0 else f"({value} >> {shift})"
            if shift + w != chunk_w:
                e = f"{e} & {hex(mask(w))}"
            lines.append(f"{obj}.{f} = {_field_value(e, ft, w)}")
    lines.append(f"{obj}._v = True")
    return lines


def emit_expr(t: ast.HeaderT, obj: str, struct_name: str) -> str:
    """An expression giving the wire bytes of valid header ``obj`` (one ``Struct.pack``)."""
    fmt, chunks = struct_layout(t)
    args = []
    for parts, placed in chunks:
        terms = []
        for f, ft, w, shift in placed:
            if f is None:
                continue
            v = f"{obj}.{f}"
            if (isinstance(ft, ast.BitT) and ft.signed) or isinstance(ft, ast.BoolT):
                v = f"(int({v}) & {hex(mask(w))})"
            terms.append(v if shift == 0 else f"({v} << {shift})")
        if not terms:
            terms = ["0"]
        value = terms[0] if len(terms) == 1 else f"({' | '.join(terms)})"
        total = sum(w for _, w in parts)
        for _, w in parts:
            total -= w
            part = value if total == 0 else f"({value} >> {total})"
            if len(parts) > 1 and total + w != sum(pw for _, pw in parts):
                part = f"{part} & {hex(mask(w))}"
            args.append(part)
    if not args:
        return "b''"
    return f"{struct_name}.pack({', '.join(args)})"
