"""v1model and core externs in generated code.

Functions (``mark_to_drop``, ``hash``, checksums, ``clone``, ``digest`` ...) and methods
(``register.read``, ``counter.count``, ``packet_in.extract``, ``packet_out.emit`` ...) become
inline Python or calls on ``p4sim.runtime`` objects bound as module globals. Per-packet values
that externs need but P4 does not pass (packet length, time, payload) come from ``_CTX``, which
the v1model path fills before each block.
"""

from __future__ import annotations

from typing import Any

from p4sim.backend.exprgen import width_of
from p4sim.backend.typegen import (
    check_byte_aligned,
    emit_expr,
    extract_lines,
    mask,
    py_literal,
    pyfield,
    wire_width,
)
from p4sim.errors import P4CompileError, P4UnsupportedError
from p4sim.frontend import ast
from p4sim.runtime import hashes

# extern functions p4c-bm2-ss 1.2.5 refuses (its message), by argument count
BMV2_REFUSED = {
    "clone3": lambda n: "clone3: unknown extern function (p4c's BMv2 back end dropped it; use "
                        "clone_preserving_field_list with @field_list)",
    "resubmit": lambda n: "resubmit: unknown extern function (p4c's BMv2 back end dropped it; use "
                          "resubmit_preserving_field_list with @field_list)",
    "recirculate": lambda n: "recirculate: unknown extern function (p4c's BMv2 back end dropped it; use "
                             "recirculate_preserving_field_list with @field_list)",
    "mark_to_drop": lambda n: None if n else "Expected 1 argument for mark_to_drop(). Are you using an "
                                             "up-to-date v1model.p4?",
}

SM_INTRINSICS = (("_clone", "None"), ("_resubmit", "None"), ("_recirc", "None"), ("_trunc", "0"))


def enum_member(e: Any) -> str:
    if isinstance(e, ast.EnumConst):
        return e.member
    raise P4CompileError(getattr(e, "loc", None), "expected a constant enum member here")


class ExternGen:
    """Mixin of ``BlockGen``: extern function and method calls."""

    # provided by the generator
    w: Any
    current_entry: Any
    drop_port_global = "_DROP_PORT"

    def packet_length_expr(self) -> str:
        return "_CTX.length"

    def flatten(self, e: ast.Expression) -> list[tuple[str, int]]:
        """(Python int expr, bit width) for each scalar in a field list (tuple/struct/header)."""
        if isinstance(e, ast.ListExpr):
            return [f for item in e.items for f in self.flatten(item)]
        if isinstance(e, ast.StructInit):
            return [f for _, v in e.fields for f in self.flatten(v)]
        t = e.type
        if isinstance(t, (ast.StructT, ast.HeaderT)):
            base = self.ex(e)
            out = []
            for fname, ft in t.fields:
                if isinstance(ft, (ast.StructT, ast.HeaderT)):
                    sub = ast.Member(e, fname, type=ft)
                    out.extend(self.flatten(sub))
                elif isinstance(ft, ast.VarbitT):     # width known only at run time
                    out.append((f"{base}.{pyfield(fname)}", f"{base}.{pyfield(fname)}_len"))
                else:
                    code = f"{base}.{pyfield(fname)}"
                    if isinstance(ft, ast.BoolT) or (isinstance(ft, ast.BitT) and ft.signed):
                        code = f"(int({code}) & {hex(mask(width_of(ft)))})"
                    out.append((code, width_of(ft)))
            return out
        if isinstance(t, ast.VarbitT):
            code = self.ex(e)
            return [(code, f"{code}_len")]
        return [(self.as_int(e), width_of(t))]

    def guards(self, e: ast.Expression, valid: str | None = None) -> list[str | None]:
        """For each scalar ``flatten(e)`` yields, the validity test of the header it belongs to
        (None for metadata and values): BMv2 leaves fields of invalid headers out of checksum
        inputs (``BufBuilder`` skips them); hashes include them (see ``extern_function``)."""
        if isinstance(e, ast.ListExpr):
            return [g for item in e.items for g in self.guards(item)]
        if isinstance(e, ast.StructInit):
            return [g for _, v in e.fields for g in self.guards(v)]
        t = e.type
        if isinstance(t, (ast.StructT, ast.HeaderT)):
            if isinstance(t, ast.HeaderT):
                valid = f"{self.ex(e)}._v"
            out: list[str | None] = []
            for fname, ft in t.fields:
                if isinstance(ft, (ast.StructT, ast.HeaderT)):
                    out.extend(self.guards(ast.Member(e, fname, type=ft)))
                else:
                    out.append(valid)
            return out
        if isinstance(e, ast.Member) and isinstance(e.expr.type, ast.HeaderT):
            return [f"{self.ex(e.expr)}._v"]
        return [None]

    def guarded(self, e: ast.Expression, fields: list[tuple[str, Any]]) -> tuple[str | None, list[tuple[str, Any]]]:
        """(all headers valid test or None, the field list with invalid headers' widths 0)."""
        guards = self.guards(e)
        if len(guards) != len(fields) or not any(guards):
            return None, fields
        cond = " and ".join(dict.fromkeys(g for g in guards if g))
        slow = [(c, w if g is None else f"({w} if {g} else 0)") for (c, w), g in zip(fields, guards, strict=True)]
        return cond, slow

    def bind_common(self, fields: list[tuple[str, int]]) -> list[tuple[str, int]]:
        """Hoist an attribute chain shared by several field reads (``hdr.ipv4.x``, ``hdr.ipv4.y``)
        into one local, read just before the fields are used."""
        import re
        bases: dict[str, int] = {}
        pattern = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\.[A-Za-z_][A-Za-z0-9_]*$")
        for code, _ in fields:
            m = pattern.match(code)
            if m and "." in m.group(1):
                bases[m.group(1)] = bases.get(m.group(1), 0) + 1
        out = fields
        for base, count in bases.items():
            if count < 2:
                continue
            tmp = self.w.tmp("fb")
            self.w.line(f"{tmp} = {base}")
            out = [(tmp + c[len(base):] if c.startswith(base + ".") and pattern.match(c) and
                     pattern.match(c).group(1) == base else c, w) for c, w in out]
        return out

    @staticmethod
    def packed_bytes(fields: list[tuple[str, Any]]) -> str | None:
        """``pack_fields`` done at compile time: the fields back to back, MSB first, zero bits
        after the last one up to a whole byte; None when a width is only known at run time."""
        if not all(isinstance(w, int) for _, w in fields):
            return None
        total = sum(w for _, w in fields)
        if total == 0:
            return "b''"
        shift = total + (-total) % 8
        parts = []
        for code, w in fields:
            if w <= 0:
                continue
            shift -= w
            parts.append(code if shift == 0 else f"({code} << {shift})")
        return f"({' | '.join(parts)}).to_bytes({(total + 7) // 8}, 'big')"

    def csum16_inline(self, e: ast.Expression) -> str:
        """csum16 of a field list as one big int folded in 16-bit words (no bytes built); when
        a header in the list is invalid, its fields are left out (the generic path)."""
        fields = self.bind_common(self.flatten(e))
        cond, slow = self.guarded(e, fields)
        if cond is not None and all(isinstance(w, int) for _, w in fields):
            listed = "[" + ", ".join(f"({c}, {w})" for c, w in slow) + "]"
            return f"({self._csum16_fast(fields)} if {cond} else _compute_checksum('csum16', {listed}, b'', 16))"
        tail = self._csum16_varbit(e, fields, slow)
        if tail is not None:
            return tail
        fields = slow
        if not all(isinstance(w, int) for _, w in fields):
            listed = "[" + ", ".join(f"({c}, {w})" for c, w in fields) + "]"
            return f"_compute_checksum('csum16', {listed}, b'', 16)"
        return self._csum16_fast(fields)

    def _csum16_varbit(self, e: ast.Expression, fields: list[tuple[str, Any]],
                       slow: list[tuple[str, Any]]) -> str | None:
        """csum16 of fixed-width fields followed by ONE field of run-time width (IPv4's
        options), without building the (value, width) list per packet; None for any other
        shape. The fixed fields' positions modulo 16 do not depend on the last field's width
        (the padding makes the total a multiple of 16), so they keep their compile-time shifts;
        the last field is ``_csum16_tail``. When a header of the fixed fields is invalid, the
        generic path (its fields left out)."""
        if len(fields) < 2 or isinstance(fields[-1][1], int) or \
                not all(isinstance(w, int) for _, w in fields[:-1]):
            return None
        guards = self.guards(e)
        fixed_guards = guards[:-1] if len(guards) == len(fields) else []
        cond = " and ".join(dict.fromkeys(g for g in fixed_guards if g)) or None
        before = sum(w for _, w in fields[:-1])
        padded = (before + 15) // 16 * 16
        parts = []
        shift = padded
        for code, w in fields[:-1]:
            shift -= w
            s16 = shift % 16
            parts.append(code if s16 == 0 else f"({code} << {s16})")
        last_code, last_width = slow[-1]            # its width tested for its header's validity
        parts.append(f"_csum16_tail({last_code}, {last_width}, {before})")
        fast = f"_csum16_int({' + '.join(parts)})"
        if cond is None:
            return fast
        listed = "[" + ", ".join(f"({c}, {w})" for c, w in slow) + "]"
        return f"({fast} if {cond} else _compute_checksum('csum16', {listed}, b'', 16))"

    @staticmethod
    def _csum16_fast(fields: list[tuple[str, Any]]) -> str:
        total = sum(w for _, w in fields)
        padded = (total + 15) // 16 * 16     # pack_fields pads to bytes, csum16 to 16-bit words
        # 2**16 == 1 (mod 0xFFFF): a field at bit offset s counts as field << (s % 16), so the
        # sum stays a small int; csum16_int folds it and keeps 0xFFFF for a non-zero multiple
        parts = []
        shift = padded
        for code, w in fields:
            shift -= w
            s16 = shift % 16
            parts.append(code if s16 == 0 else f"({code} << {s16})")
        return f"_csum16_int({' + '.join(parts) or '0'})"

    def fields_code(self, e: ast.Expression) -> str:
        _, fields = self.guarded(e, self.bind_common(self.flatten(e)))
        return "[" + ", ".join(f"({c}, {w})" for c, w in fields) + "]"

    def out_assign(self, target: ast.Expression | None, code: str) -> None:
        if target is None:
            return
        t = target.type
        w = width_of(t)
        if w and not (isinstance(t, ast.BitT) and t.signed):
            code = f"({code}) & {hex(mask(w))}"
        elif w:
            h = 1 << (w - 1)
            code = f"(((({code}) & {hex(mask(w))}) ^ {hex(h)}) - {hex(h)})"
        self.assign(target, code)

    # ---- functions -------------------------------------------------------------------------
    def extern_function(self, call: ast.MethodCall) -> str | None:
        name = call.decl.name
        a = call.args
        if name not in ("verify", "static_assert"):    # p4c's P4Info then carries type_info
            # (core's verify does not count; static_assert is folded away at compile time)
            self.manifest.extern_function_calls = True
        if name in BMV2_REFUSED:
            # declared (deprecated) in p4c 1.2.5's v1model.p4 but refused by its BMv2 back end:
            # p4sim refuses them too, so a program is valid on both or on neither
            message = BMV2_REFUSED[name](len([x for x in a if x is not None]))
            if message:
                raise P4CompileError(call.loc, message)
        sm = self.sm_expr
        if name == "mark_to_drop":
            target = self.ex(a[0]) if a and a[0] is not None else sm
            if target is None:
                raise P4UnsupportedError(call.loc, "mark_to_drop() without standard_metadata here")
            self.w.line(f"{target}.egress_spec = {self.drop_port_global}")
            self.w.line(f"{target}.mcast_grp = 0")
            return None
        if name == "hash":
            algo = enum_member(a[1])
            self._check_algo(algo, call.loc)
            # every listed field counts, valid header or not: p4c's BMv2 back end copies a hash's
            # field list into temporaries first, so BMv2 1.15.5 hashes an invalid header's
            # fields too (measured: hash_skips_invalid_header_fields on simple_switch)
            fields = self.bind_common(self.flatten(a[3]))
            packed = self.packed_bytes(fields)
            listed = "[" + ", ".join(f"({c}, {w})" for c, w in fields) + "]"
            if packed is not None:    # fields packed into bytes with one int, no per-field loop
                code = f"_hash_packed({algo!r}, {self.as_int(a[2])}, {packed}, {self.as_int(a[4])})"
            else:
                code = f"_v1model_hash({algo!r}, {self.as_int(a[2])}, {listed}, {self.as_int(a[4])})"
            self.out_assign(a[0], code)
            return None
        if name == "static_assert":      # checked at compile time (frontend v1check)
            return "True"
        if name == "random":
            self.out_assign(a[0], f"_randint({self.as_int(a[1])}, {self.as_int(a[2])})")
            return None
        if name in ("verify_checksum", "verify_checksum_with_payload"):
            algo = enum_member(a[3])
            self._check_algo(algo, call.loc)
            payload = "_CTX.payload" if name.endswith("payload") else "b''"
            ck_w = width_of(a[2].type)
            target = self.sm_expr or "_CTX.sm"
            if algo == "csum16" and not name.endswith("payload") and ck_w:
                # the csum16 fast paths of update_checksum, not a (value, width) list per packet
                cond, computed = self.ex(a[0]), self.csum16_inline(a[1])
                with self.w.block(f"if ({cond}) and (({computed}) & {hex(mask(ck_w))}) != "
                                  f"({self.as_int(a[2])}):"):
                    self.w.line(f"{target}.checksum_error = 1")
                return None
            with self.w.block(f"if not _verify_checksum({self.ex(a[0])}, {self.fields_code(a[1])}, "
                              f"{self.as_int(a[2])}, {algo!r}, {payload}, {ck_w}):"):
                self.w.line(f"{target}.checksum_error = 1")
            return None
        if name in ("update_checksum", "update_checksum_with_payload"):
            algo = enum_member(a[3])
            self._check_algo(algo, call.loc)
            payload = "_CTX.payload" if name.endswith("payload") else "b''"
            ck_w = width_of(a[2].type)
            with self.w.block(f"if {self.ex(a[0])}:"):
                if algo == "csum16" and not name.endswith("payload"):
                    self.out_assign(a[2], self.csum16_inline(a[1]))
                else:
                    self.out_assign(a[2], f"_compute_checksum({algo!r}, {self.fields_code(a[1])}, {payload}, {ck_w})")
            return None
        if name in ("clone", "clone_preserving_field_list", "clone3"):
            kind = enum_member(a[0])
            if name == "clone_preserving_field_list":
                fl = self.as_int(a[2])
            else:
                fl = str(self.synthetic_field_list(a[2] if name == "clone3" else None))
            self.w.line(f"{self._sm(call)}._clone = ({1 if kind == 'E2E' else 0}, {self.as_int(a[1])}, {fl})")
            return None
        if name in ("resubmit_preserving_field_list", "resubmit"):
            fl = self.as_int(a[0]) if name.endswith("list") else str(self.synthetic_field_list(a[0]))
            self.w.line(f"{self._sm(call)}._resubmit = {fl}")
            return None
        if name in ("recirculate_preserving_field_list", "recirculate"):
            fl = self.as_int(a[0]) if name.endswith("list") else str(self.synthetic_field_list(a[0]))
            self.w.line(f"{self._sm(call)}._recirc = {fl}")
            return None
        if name == "truncate":
            self.w.line(f"{self._sm(call)}._trunc = {self.as_int(a[0])}")
            return None
        if name == "digest":
            return self.digest(call)
        if name == "log_msg":
            if len(a) > 1 and a[1] is not None:
                vals = "(" + "".join(c + ", " for c, _ in self.flatten(a[1])) + ")"
                return f"_log(_format_log({self.ex(a[0])}, {vals}))"
            return f"_log({self.ex(a[0])})"
        if name in ("assert", "assume"):
            with self.w.block(f"if not {self.ex(a[0])}:"):
                # the location names a user-chosen file: it enters the code only as a literal
                self.w.line(f"raise _AssertionFailed({py_literal(f'{name} failed at {call.loc}')})")
            return None
        if name == "verify":
            with self.w.block(f"if not {self.ex(a[0])}:"):
                self.w.line(f"raise _ParserReject({self.ex(a[1])})")
            return None
        raise P4UnsupportedError(call.loc, f"extern function {name}")

    def synthetic_field_list(self, data: ast.Expression | None) -> int:
        """A field list for the old ``resubmit(data)``/``recirculate(data)``/``clone3(.., data)``
        forms: the user-metadata fields named in ``data`` (as dotted paths). Returns its id
        (negative, so it never collides with ``@field_list`` indices)."""
        paths: list[str] = []

        def collect(e: Any) -> None:
            if e is None:
                return
            if isinstance(e, ast.ListExpr):
                for item in e.items:
                    collect(item)
                return
            if isinstance(e, ast.StructInit):
                for _, v in e.fields:
                    collect(v)
                return
            chain = []
            node = e
            while isinstance(node, ast.Member):
                chain.append(pyfield(node.member))
                node = node.expr
            if isinstance(node, ast.PathExpr) and isinstance(node.decl, ast.Param) \
                    and getattr(node.decl.type, "name", None) == getattr(self.meta_type, "name", object()):
                if chain:
                    paths.append(".".join(reversed(chain)))
                else:    # the whole metadata struct
                    paths.extend(pyfield(f) for f, _ in self.meta_type.fields)

        collect(data)
        fid = -1 - len(self.synthetic_lists)
        self.synthetic_lists[fid] = paths
        return fid

    def _sm(self, call: ast.MethodCall) -> str:
        if self.sm_expr is None:
            raise P4UnsupportedError(call.loc, f"{call.decl.name} outside ingress/egress")
        return self.sm_expr

    def _check_algo(self, algo: str, loc: Any) -> None:
        try:
            hashes.check_algorithm(algo)
        except Exception as err:   # HashError: BMv2 would refuse to load the program
            raise P4UnsupportedError(loc, str(err)) from None

    def digest(self, call: ast.MethodCall) -> str:
        data = call.args[1]
        t = data.type
        name = t.name if isinstance(t, ast.StructT) else f"digest_{len(self.manifest.digests)}"
        fields = self.flatten(data)
        if name not in self.manifest.digests:
            from p4sim.backend.resources import DigestDesc
            names = [f for f, _ in t.fields] if isinstance(t, ast.StructT) else \
                [f"f{i}" for i in range(len(fields))]
            self.manifest.digests[name] = DigestDesc(name, list(zip(names, [w for _, w in fields], strict=False)),
                                                     decl=t.decl if isinstance(t, ast.StructT) else None,
                                                     field_types=[ft for _, ft in t.fields]
                                                     if isinstance(t, ast.StructT) else [])
        vals = "(" + "".join(c + ", " for c, _ in fields) + ")"
        return f"_digest({name!r}, {vals})"

    # ---- methods ---------------------------------------------------------------------------
    def extern_method(self, call: ast.MethodCall) -> str | None:
        target = call.target
        ext = target.type.name if isinstance(target.type, ast.ExternT) else None
        m = call.method
        a = call.args
        if ext == "packet_in":
            return self.packet_in_method(call)
        if ext == "packet_out" and m == "emit":
            self.emit(a[0], self.ex(target))
            return None
        obj = self.ex(target)
        if ext == "register":
            # Register.read / Register.write inlined (a DLCP packet makes 25 of these calls; the
            # method call was most of their cost): the same range test, mask and cells list
            if m == "read":   # out of range reads 0 (simple_switch 1.15.5, measured)
                i = self.w.tmp("ri")
                self.out_assign(a[0], f"({obj}.cells[{i}] if 0 <= ({i} := {self.as_int(a[1])}) < {obj}.size else 0)")
                return None
            if m == "write":  # out of range does nothing
                i = self.w.tmp("wi")
                self.w.line(f"{i} = {self.as_int(a[0])}")
                with self.w.block(f"if 0 <= {i} < {obj}.size:"):
                    self.w.line(f"{obj}.cells[{i}] = ({self.as_int(a[1])}) & {obj}._mask")
                return None
        if ext == "counter" and m == "count":
            return f"{obj}.count({self.as_int(a[0])}, _CTX.length)"
        if ext == "direct_counter" and m == "count":
            return None    # BMv2 counts every hit of the owning table
        if ext == "meter" and m == "execute_meter":
            # out of range gives 0 (simple_switch 1.15.5, measured)
            self.out_assign(a[1], f"{obj}.execute({self.as_int(a[0])}, _CTX.length, _CTX.now)")
            return None
        if ext == "direct_meter" and m == "read":
            entry = self.current_entry[0] if self.current_entry else "None"
            self.out_assign(a[0], f"{obj}.execute({entry}, _CTX.length, _CTX.now)")
            return None
        raise P4UnsupportedError(call.loc, f"method {m} of extern {ext}")

    def emit(self, e: ast.Expression, out: str) -> None:
        t = e.type
        if isinstance(t, ast.HeaderT):
            obj = self.ex(e)
            self.classes.name(t)
            if any(isinstance(ft, ast.VarbitT) for _, ft in t.fields):
                with self.w.block(f"if {obj}._v:"):
                    self.w.line(f"{out}.append(_emit_generic({obj}, {self.layout(t)}))")
                return
            check_byte_aligned(t, e.loc)
            if "." in obj or "(" in obj:
                tmp = self.w.tmp("eh")
                self.w.line(f"{tmp} = {obj}")
                obj = tmp
            with self.w.block(f"if {obj}._v:"):
                self.w.line(f"{out}.append({emit_expr(t, obj, '_ST_' + self.classes.name(t))})")
        elif isinstance(t, ast.HeaderStackT):
            for i in range(t.size):
                self.emit(ast.Index(e, ast.IntLiteral(i, type=ast.InfIntT()), type=t.element), out)
        elif isinstance(t, (ast.StructT, ast.HeaderUnionT)):
            for fname, ft in t.fields:
                self.emit(ast.Member(e, fname, type=ft), out)
        else:
            raise P4UnsupportedError(e.loc, "emit of a non-header value")

    def layout(self, t: ast.HeaderT) -> str:
        if any(isinstance(ft, ast.StructT) for _, ft in t.fields):
            raise P4UnsupportedError(getattr(t.decl, "loc", None) if hasattr(t, "decl") else None,
                                     f"header {t.name} with both a varbit and a struct-typed field")
        return repr(tuple((pyfield(n), ast.type_width(ft) if not isinstance(ft, ast.VarbitT) else -1,
                           isinstance(ft, ast.BitT) and ft.signed) for n, ft in t.fields))

    def packet_in_method(self, call: ast.MethodCall) -> str | None:
        m = call.method
        a = call.args
        if not self.in_parser:
            if m == "length":
                return "(len(_d))"
            raise P4UnsupportedError(call.loc, f"packet_in.{m} outside the parser")
        too_short = self.error_index["PacketTooShort"]
        if m == "extract":
            self.extract(a[0], a[1] if len(a) > 1 else None, call.loc,
                         call.type_args[0] if call.type_args else None)
            return None
        if m == "advance":
            n = self.w.tmp("adv")
            self.w.line(f"{n} = {self.as_int(a[0])}")
            with self.w.block(f"if _p + {n} > _n:"):
                self.w.line(f"raise _ParserReject({too_short})")
            self.w.line(f"_p += {n}")
            return None
        if m == "lookahead":
            t = call.type_args[0] if call.type_args else call.type
            if isinstance(t, (ast.BitT, ast.SerEnumT)):
                w = width_of(t)
                code = f"_lookahead(_d, _p, {w}, _n, {too_short})"
                if isinstance(t, ast.BitT) and t.signed:
                    h = 1 << (w - 1)
                    code = f"(({code} ^ {hex(h)}) - {hex(h)})"
                return code
            if isinstance(t, ast.BoolT):
                return f"(_lookahead(_d, _p, 1, _n, {too_short}) != 0)"
            if isinstance(t, ast.HeaderT):
                cls = self.classes.name(t)
                check_byte_aligned(t, call.loc)
                tmp = self.w.tmp("la")
                with self.w.block(f"if _p + _HW_{cls} > _n:"):
                    self.w.line(f"raise _ParserReject({too_short})")
                self.w.line(f"{tmp} = {cls}()")
                self.w.line(f"_x_{cls}({tmp}, _d, _p >> 3)")
                return tmp
            if isinstance(t, ast.StructT) and self.splittable(t):
                total = ast.type_width(t)
                bits, tmp = self.w.tmp("lb"), self.w.tmp("la")
                self.w.line(f"{bits} = _lookahead(_d, _p, {total}, _n, {too_short})")
                self.w.line(f"{tmp} = {self.classes.name(t)}()")
                self.split_bits(tmp, t, bits, total)
                return tmp
            raise P4UnsupportedError(call.loc, "lookahead of this type")
        if m == "length":
            return "(len(_d))"
        raise P4UnsupportedError(call.loc, f"packet_in.{m}")

    def splittable(self, t: ast.Type) -> bool:
        """Whether a lookahead of ``t`` can be split field by field (fixed-width leaves)."""
        if isinstance(t, (ast.StructT, ast.HeaderT)):
            return all(self.splittable(ft) for _, ft in t.fields)
        return isinstance(t, (ast.BitT, ast.SerEnumT, ast.BoolT))

    def split_bits(self, obj: str, t: ast.Type, bits: str, end: int) -> int:
        """Fill ``obj`` (struct/header of type ``t``) from the int ``bits``, first field in the
        most significant bits; ``end`` is the bit position after ``t``'s first bit. Returns the
        position after ``t``."""
        if isinstance(t, ast.HeaderT):
            self.w.line(f"{obj}._v = True")
        pos = end
        for name, ft in t.fields:
            field = f"{obj}.{pyfield(name)}"
            if isinstance(ft, (ast.StructT, ast.HeaderT)):
                pos = self.split_bits(field, ft, bits, pos)
                continue
            width = ast.type_width(ft)
            pos -= width
            code = f"(({bits} >> {pos}) & {hex((1 << width) - 1)})"
            if isinstance(ft, ast.BoolT):
                code = f"({code} != 0)"
            elif isinstance(ft, ast.BitT) and ft.signed:
                h = 1 << (width - 1)
                code = f"(({code} ^ {hex(h)}) - {hex(h)})"
            self.w.line(f"{field} = {code}")
        return pos

    def extract(self, target: ast.Expression, size: ast.Expression | None, loc: Any,
                type_arg: ast.Type | None = None) -> None:
        t = target.type
        w = self.w
        too_short = self.error_index["PacketTooShort"]
        if isinstance(target, ast.DontCare):     # extract<T>(_): parse and discard a T
            t = type_arg if type_arg is not None else t
            if not isinstance(t, ast.HeaderT):
                raise P4UnsupportedError(loc, "extract into _ without a header type argument")
            obj = w.tmp("h")
            w.line(f"{obj} = {self.classes.name(t)}()")
            self._extract_into(obj, t, size, loc, too_short)
            return
        if isinstance(target, ast.Member) and target.member == "next" and isinstance(target.expr.type, ast.HeaderStackT):
            stack = w.tmp("stk")
            w.line(f"{stack} = {self.ex(target.expr)}")
            with w.block(f"if {stack}.n >= {stack}.size:"):
                w.line(f"raise _ParserReject({self.error_index['StackOutOfBounds']})")
            obj = w.tmp("h")
            w.line(f"{obj} = {stack}.h[{stack}.n]")
            self._extract_into(obj, t, size, loc, too_short)
            w.line(f"{stack}.n += 1")
            return
        union = target.expr if isinstance(target, ast.Member) else None
        if union is not None and isinstance(union, ast.Member) and union.member == "next" \
                and isinstance(union.expr.type, ast.HeaderStackT) and isinstance(union.type, ast.HeaderUnionT):
            # `s.next.a` of a header-union stack: fill member a of element next, then advance
            stack = w.tmp("stk")
            w.line(f"{stack} = {self.ex(union.expr)}")
            with w.block(f"if {stack}.n >= {stack}.size:"):
                w.line(f"raise _ParserReject({self.error_index['StackOutOfBounds']})")
            elem = w.tmp("u")
            w.line(f"{elem} = {stack}.h[{stack}.n]")
            w.line(f"{elem}._setinvalid()")
            obj = w.tmp("h")
            w.line(f"{obj} = {elem}.{pyfield(target.member)}")
            self._extract_into(obj, t, size, loc, too_short)
            w.line(f"{stack}.n += 1")
            return
        if not isinstance(t, ast.HeaderT):
            raise P4UnsupportedError(loc, "extract into a non-header")
        obj = w.tmp("h")
        w.line(f"{obj} = {self.ex(target)}")
        if isinstance(target, ast.Member) and isinstance(target.expr.type, ast.HeaderUnionT):
            w.line(f"{self.ex(target.expr)}._setinvalid()")
        self._extract_into(obj, t, size, loc, too_short)

    def _extract_into(self, obj: str, t: ast.HeaderT, size: ast.Expression | None, loc: Any, too_short: int) -> None:
        w = self.w
        self.classes.name(t)
        if any(isinstance(ft, ast.VarbitT) for _, ft in t.fields):
            vb = next(ft for _, ft in t.fields if isinstance(ft, ast.VarbitT))
            fixed = sum(ast.type_width(ft) for _, ft in t.fields if not isinstance(ft, ast.VarbitT))
            sz = self.as_int(size) if size is not None else "0"
            w.line(f"_p = _extract_generic({obj}, _d, _p, _n, {self.layout(t)}, {sz}, {vb.max_width}, {fixed}, "
                   f"{too_short}, {self.error_index['HeaderTooShort']}, "
                   f"{self.error_index['ParserInvalidArgument']})")
            return
        width = wire_width(t)
        with w.block(f"if _p + {width} > _n:"):
            w.line(f"raise _ParserReject({too_short})")
        b = w.tmp("b")
        w.line(f"{b} = _p >> 3")
        for line in extract_lines(t, obj, "_d", b, w.tmp("v"), "_ST_" + self.classes.name(t)):
            w.line(line)
        w.line(f"_p += {width}")
