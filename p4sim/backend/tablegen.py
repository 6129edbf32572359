"""Tables in generated code: P4Info-facing descriptors, const entries, action profiles.

A mixin of ``codegen.BlockGen``: turns each ``TableDecl`` of a control instance into a
``resources.TableDesc`` (fully-qualified name, keys named as p4c names them, action refs with
scopes, default action, const entries as runtime match tuples) and emits the code that resolves
an action-profile member or selector group at lookup time.
"""

from __future__ import annotations

from typing import Any

from p4sim.backend import resources as res
from p4sim.backend.exprgen import width_of
from p4sim.backend.typegen import mask
from p4sim.errors import P4CompileError, P4UnsupportedError
from p4sim.frontend import ast
from p4sim.runtime import tables as rtt


def control_plane_name(prefix: str, decl: ast.Declaration) -> str:
    """p4c's fully-qualified name: ``@name`` wins (``.x`` is absolute), else prefix.name."""
    anno = decl.annotation("name")
    name = decl.name
    if anno is not None and anno.args and isinstance(anno.args[0], ast.StringLiteral):
        name = anno.args[0].value
        if name.startswith("."):
            return name[1:]
    return f"{prefix}.{name}" if prefix else name


def key_source(e: ast.Expression) -> str:
    """The key's text as p4c prints it (the default P4Info match-field name)."""
    if isinstance(e, ast.PathExpr):
        return e.name
    if isinstance(e, ast.Member):
        return f"{key_source(e.expr)}.{e.member}"
    if isinstance(e, ast.Index):
        return f"{key_source(e.expr)}[{key_source(e.index)}]"
    if isinstance(e, ast.IntLiteral):
        return str(e.value)
    if isinstance(e, ast.Slice):
        return f"{key_source(e.expr)}[{e.hi.value}:{e.lo.value}]"
    if isinstance(e, ast.MethodCall) and e.target is not None:
        if e.method == "isValid":     # p4c names a validity key after the hidden field
            return f"{key_source(e.target)}.$valid$"
        return f"{key_source(e.target)}.{e.method}()"
    if isinstance(e, ast.Cast):
        return key_source(e.expr)
    if isinstance(e, ast.Binary) and e.op == "&":    # p4c: `bits & 0x3` is named after `bits`
        if isinstance(e.right, ast.IntLiteral):
            return key_source(e.left)
        if isinstance(e.left, ast.IntLiteral):
            return key_source(e.right)
    raise P4CompileError(e.loc, "complex key expression requires a @name annotation")



class TableGen:
    """Mixin: table declaration and action-profile resolution."""

    def table_desc(self, table: ast.TableDecl) -> res.TableDesc:
        desc = self.table_descs.get(id(table))
        if desc is None:
            raise P4CompileError(table.loc, f"table {table.name} is not declared in this control")
        return desc

    def declare_table(self, t: ast.TableDecl) -> None:
        fq = control_plane_name(self.prefix, t)
        keys = []
        for k in t.keys:
            if k.match_kind == "selector":
                continue
            if k.match_kind not in rtt.MATCH_KINDS:
                raise P4UnsupportedError(k.loc, f"match kind {k.match_kind}")
            keys.append(res.KeyDesc(k.name or key_source(k.expr), k.match_kind, width_of(k.expr.type),
                                    k.annotations, type=k.expr.type))
        actions = []
        for ref in self.listed_action_refs(t):
            scope = "defaultonly" if ref.has_annotation("defaultonly") else \
                "tableonly" if ref.has_annotation("tableonly") else ""
            actions.append(res.TableActionRef(self.action_name(ref.decl), scope, ref.annotations))
        default = None
        default_ref = self.default_ref(t)
        if default_ref is not None:
            default_fq = self.action_name(default_ref.decl)
            default = (default_fq, self.action_data(default_ref, self.manifest.actions[default_fq].params))
        impl = self.env.lookup(t.implementation) if t.implementation is not None else None
        desc = res.TableDesc(
            pyname=self.gname(t.name), name=fq, keys=keys, actions=actions, size=t.size or 1024,
            default_action=default, default_is_const=t.default_is_const, entries=[],
            entries_const=t.entries_const,
            implementation=self._extern_fq(t.implementation) if impl else None,
            direct_counter=self._extern_fq(t.counters) if t.counters is not None else None,
            direct_meter=self._extern_fq(t.meters) if t.meters is not None else None,
            annotations=t.annotations, decl=t)
        desc.entries = self.const_entries(t, desc)
        desc.dispatch = [self.action_name(a) for a in self.table_action_decls(t)]
        self.table_descs[id(t)] = desc
        self.manifest.tables.append(desc)

    def _extern_fq(self, inst: Any) -> str:
        for x in self.manifest.externs:
            if x.decl is inst:
                return x.name
        raise P4CompileError(getattr(inst, "loc", None), "table property names an unknown extern instance")

    def const_entries(self, t: ast.TableDecl, desc: res.TableDesc) -> list[res.ConstEntry]:
        if not t.entries:
            return []
        out = []
        keys = [k for k in t.keys if k.match_kind != "selector"]
        needs_priority = any(k.match_kind in ("ternary", "range", "optional") for k in keys)
        n = len(t.entries)
        for i, entry in enumerate(t.entries):
            match = []
            for k, ks in zip(keys, entry.keys, strict=True):
                match.append(self.keyset_to_match(k.match_kind, width_of(k.expr.type), ks))
            if entry.priority is not None:
                prio = self.const_value(entry.priority)
            else:
                prio = (n - i) * t.priority_delta if needs_priority else 0
            fq = self.action_name(entry.action.decl)
            args = self.action_data(entry.action, self.manifest.actions[fq].params)
            out.append(res.ConstEntry(tuple(match), fq, args, prio))
        return out

    def action_data(self, ref: ast.ActionRef, params: list[tuple[str, int, Any]]) -> tuple[int, ...]:
        """The constant action data of ``a(x, 1, 2)``: the args after the directional ones."""
        n_dir = sum(1 for p in ref.decl.params if p.direction != "")
        data = ref.args[n_dir:] if len(ref.args) > n_dir else []
        return tuple(self.const_value(a) & mask(w) for a, (_, w, _) in zip(data, params, strict=False))

    def keyset_to_match(self, kind: str, width: int, ks: ast.Expression) -> Any:
        full = mask(width)
        if isinstance(ks, (ast.DefaultExpr, ast.DontCare)):
            return None
        if isinstance(ks, ast.Mask):
            v, m = self.const_value(ks.value) & full, self.const_value(ks.mask) & full
            if kind == "lpm":
                plen = bin(m).count("1")
                return rtt.Lpm(v & m, plen)
            return rtt.Ternary(v & m, m)
        if isinstance(ks, ast.Range):
            return rtt.Range(self.const_value(ks.low) & full, self.const_value(ks.high) & full)
        v = self.const_value(ks) & full
        return {"exact": rtt.Exact(v), "lpm": rtt.Lpm(v, width), "ternary": rtt.Ternary(v, full),
                "range": rtt.Range(v, v), "optional": rtt.Optional_(v)}[kind]

    def resolve_profile_action(self, table: ast.TableDecl, desc: res.TableDesc, e: str, c: str) -> None:
        prof = next(x for x in self.manifest.externs if x.name == desc.implementation)
        with self.w.block(f"if {c} is None:"):
            with self.w.block(f"if {e}.member_id is not None:"):
                self.w.line(f"{c} = {prof.pyname}.member_action({e}.member_id)")
            with self.w.block(f"elif {e}.group_id is not None:"):
                if prof.kind == "action_selector":
                    sel = [k for k in table.keys if k.match_kind == "selector"]
                    fields = "[" + ", ".join(f"({self.as_int(k.expr)}, {width_of(k.expr.type)})" for k in sel) + "]"
                    h = f"_hash_compute({prof.params['algorithm']!r}, _pack_fields({fields}))"
                else:
                    h = "0"
                self.w.line(f"{c} = {prof.pyname}.select({e}.group_id, {h})")
