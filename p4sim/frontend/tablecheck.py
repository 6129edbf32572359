"""Type checking of table declarations: keys, actions, default action, entries, properties.

Why it exists: tables are where the control plane meets the program, so their checks decide
what P4Info and the runtime will see: match kinds, action references (with ``@defaultonly`` /
``@tableonly``), the default action and its action data, ``const entries`` keysets and
priorities, and the ``size``/``implementation``/``counters``/``meters`` properties.
"""

from __future__ import annotations

from typing import Any

from p4sim.frontend import ast as A
from p4sim.frontend.scope import Scope, did_you_mean
from p4sim.frontend.typeresolve import type_str

KEY_KINDS_NEEDING_BITS = ("lpm", "ternary", "range", "optional")


class TableChecker:
    """Mixin (used by ``typecheck.Checker``) checking ``TableDecl``s."""

    def table_decl(self: Any, t: A.TableDecl, scope: Scope) -> None:
        self._table_keys(t, scope)
        self._table_actions(t, scope)
        if t.default_action is not None:
            ref = t.default_action
            listed = self._listed(t, ref)
            if listed is None:
                raise self.err(ref, f"default action '{ref.name}' is not in the actions list "
                                    f"of table '{t.name}'")
            if listed.has_annotation("tableonly"):
                raise self.err(ref, f"action '{ref.name}' is @tableonly and cannot be the "
                                    f"default action of table '{t.name}'")
            ref.decl = listed.decl
            self._action_args(ref, scope, require_all=True, prefix=listed.args)
        if t.entries is not None:
            for e in t.entries:
                self._entry(t, e, scope)
            self._legacy_priorities(t, scope)
        self._table_properties(t, scope)

    # ---------------------------------------------------------------- keys
    def _table_keys(self: Any, t: A.TableDecl, scope: Scope) -> None:
        lpm = 0
        for k in t.keys:
            k.expr = self.expr(k.expr, scope)
            self._check_key_type(k.expr, f"key of table '{t.name}'")
            if isinstance(k.expr.type, A.InfIntT):
                raise self.err(k.expr, f"key of table '{t.name}' needs a width")
            if k.match_kind not in self.match_kinds:
                raise self.err(k, f"unknown match kind '{k.match_kind}' (declared: "
                                  f"{', '.join(self.match_kinds)})")
            if k.match_kind in KEY_KINDS_NEEDING_BITS and not isinstance(
                    k.expr.type, (A.BitT, A.SerEnumT)):
                raise self.err(k, f"'{k.match_kind}' key must be bit<W>, not "
                                  f"{type_str(k.expr.type)}")
            if k.match_kind == "lpm":
                lpm += 1
        if lpm > 1:
            raise self.err(t, f"table '{t.name}' has more than one lpm key")

    # ---------------------------------------------------------------- actions
    def _resolve_action(self: Any, ref: A.ActionRef, scope: Scope) -> A.ActionDecl:
        found = [d for d in scope.lookup(ref.name) if isinstance(d, A.ActionDecl)]
        if not found:
            if scope.lookup(ref.name):
                raise self.err(ref, f"'{ref.name}' is not an action")
            raise self.err(ref, f"action '{ref.name}' is not declared"
                                f"{did_you_mean(ref.name, scope.visible())}")
        return found[0]

    def _table_actions(self: Any, t: A.TableDecl, scope: Scope) -> None:
        if not t.actions and not getattr(t, "actions_declared", False):
            raise self.err(t, f"table '{t.name}' has no actions property")
        seen: set[str] = set()
        for ref in t.actions:
            ref.decl = self._resolve_action(ref, scope)
            if ref.decl.name in seen:
                raise self.err(ref, f"action '{ref.name}' is listed twice in table '{t.name}'")
            seen.add(ref.decl.name)
            if ref.has_annotation("defaultonly") and ref.has_annotation("tableonly"):
                raise self.err(ref, f"action '{ref.name}' cannot be both @defaultonly and "
                                    f"@tableonly")
            self._action_args(ref, scope, require_all=False, prefix=[])

    def _listed(self: Any, t: A.TableDecl, ref: A.ActionRef) -> A.ActionRef | None:
        for r in t.actions:
            if r.name == ref.name or (r.decl is not None and r.decl.name == ref.name):
                return r
        return None

    def _action_args(self: Any, ref: A.ActionRef, scope: Scope, require_all: bool,
                     prefix: list[Any]) -> None:
        decl: A.ActionDecl = ref.decl
        raw = list(ref.args)
        if any(isinstance(a, A.Argument) and a.name for a in raw):
            by_name = {a.name: a for a in raw if a.name}
            unknown = [n for n in by_name if n not in {p.name for p in decl.params}]
            if unknown:
                raise self.err(ref, f"action '{decl.name}' has no parameter '{unknown[0]}'")
            raw = [by_name.get(p.name) for p in decl.params]
            while raw and raw[-1] is None:
                raw.pop()
        n_dir = sum(1 for p in decl.params if p.direction)
        if not require_all and raw and len(raw) > n_dir:
            raise self.err(ref, f"action '{decl.name}': the actions list can only bind its "
                                f"{n_dir} directional parameter(s); action data comes from "
                                f"the control plane")
        if not require_all and raw and len(raw) < n_dir:
            raise self.err(ref, f"action '{decl.name}': all {n_dir} directional parameter(s) "
                                f"must be bound in the actions list")
        if require_all:
            if not raw and prefix:
                raw = list(prefix)
            elif len(raw) == len(decl.params) - n_dir and prefix and n_dir:
                raw = list(prefix) + raw
            # omitted trailing (or named-away) arguments take the parameters' default values --
            # except action data: a table entry or default action names every value the control
            # plane will see (p4c: "parameter should be assigned in call")
            while len(raw) < len(decl.params) and decl.params[len(raw)].default is not None:
                raw.append(None)
            for i, a in enumerate(raw):
                p = decl.params[i] if i < len(decl.params) else None
                if a is None and p is not None and not p.direction and p.default is not None:
                    raise self.err(ref, f"{p.name}: parameter should be assigned in call of action "
                                        f"'{decl.name}' (a table entry or default action gives every "
                                        f"action-data value; defaults apply to direct calls only)")
            raw = [decl.params[i].default if a is None and i < len(decl.params) and
                   decl.params[i].default is not None else a for i, a in enumerate(raw)]
            if len(raw) != len(decl.params):
                raise self.err(ref, f"action '{decl.name}' expects {len(decl.params)} "
                                    f"argument(s), got {len(raw)}")
        out: list[A.Expression] = []
        for p, a in zip(decl.params, raw, strict=False):
            if a is None:
                raise self.err(ref, f"missing argument '{p.name}' of action '{decl.name}'")
            value = a.value if isinstance(a, A.Argument) else a
            if value.type is not None and not isinstance(a, A.Argument):
                out.append(value)
                continue
            what = f"argument '{p.name}' of action '{decl.name}'"
            e = self.coerce(self.expr(value, scope, p.type), p.type, what)
            if p.direction in ("out", "inout"):
                self.check_lvalue(e, what)
            elif not p.direction and not isinstance(e, (A.IntLiteral, A.BoolLiteral,
                                                        A.EnumConst, A.ErrorConst)):
                raise self.err(e, f"{what}: action data must be a compile-time constant")
            out.append(e)
        ref.args = out

    # ---------------------------------------------------------------- entries
    def _entry(self: Any, t: A.TableDecl, e: A.TableEntry, scope: Scope) -> None:
        if not t.keys:
            raise self.err(e, f"table '{t.name}' has entries but no key")
        if len(e.keys) != len(t.keys):
            raise self.err(e, f"entry has {len(e.keys)} key value(s) but table '{t.name}' has "
                              f"{len(t.keys)} key(s)")
        new_keys = []
        for ks, k in zip(e.keys, t.keys, strict=True):
            kt = k.expr.type
            v = self.simple_keyset(ks, kt, scope)
            kind = k.match_kind
            if kind == "exact" and isinstance(v, (A.Mask, A.Range, A.DontCare, A.DefaultExpr)):
                raise self.err(ks, f"exact key '{self._key_name(k)}' needs a value, not a "
                                   f"{'mask' if isinstance(v, A.Mask) else 'wildcard or range'}")
            if kind in ("lpm", "optional") and isinstance(v, A.Range):
                raise self.err(ks, f"{kind} key '{self._key_name(k)}' cannot use a range")
            if kind == "ternary" and isinstance(v, A.Range):
                raise self.err(ks, f"ternary key '{self._key_name(k)}' cannot use a range")
            if kind in ("range", "optional") and isinstance(v, A.Mask):
                raise self.err(ks, f"{kind} key '{self._key_name(k)}' cannot use a mask")
            if kind == "lpm" and isinstance(v, A.Mask) and isinstance(v.mask, A.IntLiteral) \
                    and isinstance(kt, A.BitT):
                m = v.mask.value & ((1 << kt.width) - 1)
                inv = ~m & ((1 << kt.width) - 1)
                if inv & (inv + 1):
                    raise self.err(ks, f"lpm key '{self._key_name(k)}': mask {hex(m)} is not a "
                                       f"prefix")
            new_keys.append(v)
        e.keys = new_keys
        listed = self._listed(t, e.action)
        if listed is None:
            raise self.err(e.action, f"action '{e.action.name}' is not in the actions list of "
                                     f"table '{t.name}'")
        if listed.has_annotation("defaultonly"):
            raise self.err(e.action, f"action '{e.action.name}' is @defaultonly and cannot be "
                                     f"used in entries")
        e.action.decl = listed.decl
        self._action_args(e.action, scope, require_all=True, prefix=listed.args)
        if e.priority is not None:
            p = self.const_int(e.priority, scope, "entry priority")
            if p < 0:
                raise self.err(e.priority, "entry priority must not be negative")
            e.priority = A.IntLiteral(p, type=A.InfIntT(), loc=e.priority.loc)

    def _legacy_priorities(self: Any, t: A.TableDecl, scope: Scope) -> None:
        """Turn legacy ``@priority(n)`` entry annotations into larger-wins ``priority`` values.

        p4c gives BMv2 each const entry the priority of its ``@priority`` annotation, or its
        1-based position when it has none, and BMv2 lets the *smallest* value win; the AST
        contract is larger-wins, so the order is inverted over the whole table.
        """
        entries = t.entries or []
        annotated = [e for e in entries if e.annotation_value("priority") is not None]
        if not annotated:
            return
        if any(e.priority is not None for e in entries):
            raise self.err(annotated[0], f"table '{t.name}': do not mix @priority annotations "
                                         f"with 'priority =' entries")
        smallest_wins = []
        for i, e in enumerate(entries):
            anno = e.annotation_value("priority")
            if anno is None:
                smallest_wins.append(i + 1)
                continue
            value = self.const_int(anno, scope, "@priority value")
            if value < 0:
                raise self.err(anno, "@priority value must not be negative")
            smallest_wins.append(value)
        top = max(smallest_wins) + 1
        for e, p in zip(entries, smallest_wins, strict=True):
            e.priority = A.IntLiteral(top - p, type=A.InfIntT(), loc=e.loc)

    @staticmethod
    def _key_name(k: A.KeyElement) -> str:
        if k.name:
            return k.name
        parts: list[str] = []
        e: Any = k.expr
        while isinstance(e, A.Member):
            parts.append(e.member)
            e = e.expr
        if isinstance(e, A.PathExpr):
            parts.append(e.name)
        return ".".join(reversed(parts)) or "key"

    # ---------------------------------------------------------------- properties
    def _instance_prop(self: Any, t: A.TableDecl, p: A.TableProperty, scope: Scope,
                       kinds: tuple[str, ...]) -> A.Instantiation:
        v = p.value
        if isinstance(v, A.MethodCall):
            return self._inline_instance(t, p, scope, kinds)
        if not isinstance(v, A.PathExpr):
            raise self.err(v, f"table property '{p.name}' must name an {' or an '.join(kinds)} "
                              f"instance")
        v = self.expr(v, scope)
        p.value = v
        inst = v.decl
        if not isinstance(inst, A.Instantiation) or not isinstance(inst.type, A.ExternT) or \
                inst.type.name not in kinds:
            raise self.err(v, f"table property '{p.name}' must name an {' or an '.join(kinds)} "
                              f"instance; '{v.name}' is not one")
        return inst

    def _inline_instance(self: Any, t: A.TableDecl, p: A.TableProperty, scope: Scope,
                         kinds: tuple[str, ...]) -> A.Instantiation:
        """``implementation = action_profile(N)``: an instance owned by the table. p4c names it
        by the property's ``@name`` as written (no control prefix); without one p4c's P4Info
        generation refuses it, so p4sim names it ``<table>_<property>``."""
        v = p.value
        func = v.func
        tname = getattr(func, "name", None) or getattr(getattr(func, "of", None), "name", None)
        if tname not in kinds:
            raise self.err(v, f"table property '{p.name}' must be an {' or an '.join(kinds)} "
                              f"instance")
        anno = next((a for a in p.annotations if a.name == "name"), None)
        if anno is not None and anno.args and isinstance(anno.args[0], A.StringLiteral):
            name = anno.args[0].value.lstrip(".")
            annos = [A.Annotation("name", [A.StringLiteral("." + name)], loc=anno.loc)]
        else:
            name = f"{t.name}_{p.name}"
            annos = []
        annos += [a for a in p.annotations if a.name != "name"]
        inst = A.Instantiation(name, A.TypeName(tname, loc=func.loc), v.args,
                               annotations=annos, loc=v.loc)
        self.instantiation(inst, scope)
        inst.inline_in = t   # the backend declares it with the table
        path = A.PathExpr(name, type=inst.type, loc=v.loc)
        path.decl = inst
        p.value = path
        return inst

    def _table_properties(self: Any, t: A.TableDecl, scope: Scope) -> None:
        for p in t.properties:
            if p.name == "size":
                size = self.const_int(p.value, scope, f"size of table '{t.name}'")
                if size <= 0:
                    raise self.err(p.value, f"size of table '{t.name}' must be positive")
                t.size = size
                p.value = A.IntLiteral(size, type=A.InfIntT(), loc=p.value.loc)
            elif p.name == "implementation":
                t.implementation = self._instance_prop(t, p, scope,
                                                       ("action_profile", "action_selector",
                                                        "ActionProfile", "ActionSelector"))   # v1model, TNA
                if t.implementation.type.name in ("action_selector", "ActionSelector") and not any(
                        k.match_kind == "selector" for k in t.keys):
                    raise self.err(p, f"table '{t.name}' uses an action_selector but has no "
                                      f"'selector' key")
            elif p.name == "counters":
                t.counters = self._instance_prop(t, p, scope, ("direct_counter", "DirectCounter"))
            elif p.name == "meters":
                t.meters = self._instance_prop(t, p, scope, ("direct_meter", "DirectMeter"))
            elif p.name in ("support_timeout", "largest_priority_wins"):
                v = self.expr(p.value, scope, A.BoolT())
                if not isinstance(v, A.BoolLiteral):
                    raise self.err(p.value, f"table property '{p.name}' must be true or false")
                p.value = v
                if p.name == "largest_priority_wins":
                    t.largest_priority_wins = v.value
            elif p.name == "priority_delta":
                t.priority_delta = self.const_int(p.value, scope, "priority_delta")
            else:
                p.value = self.expr(p.value, scope)
        if any(k.match_kind == "selector" for k in t.keys) and t.implementation is None:
            raise self.err(t, f"table '{t.name}' has a 'selector' key but no action_selector "
                              f"implementation")

    def note_table_apply(self: Any, table: A.TableDecl, call: A.MethodCall) -> None:
        self.applied_tables[id(table)] = self.applied_tables.get(id(table), 0) + 1
