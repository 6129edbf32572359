"""Builds the ``p4sim.frontend.ast`` tree from lark's parse tree.

Why it exists: the grammar (``grammar.lark``) yields a generic lark tree; this transformer turns
each rule into the matching AST node, maps every position back to the original ``file:line:col``
through the preprocessor's line map, and parses annotation bodies as expression lists.
"""

from __future__ import annotations

import ast as pyast
import copy
import re
from typing import Any

from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedInput

from p4sim.errors import P4CompileError, SourceLocation
from p4sim.frontend import ast as A
from p4sim.frontend.lexhack import scan
from p4sim.frontend.preprocessor import Preprocessed

MAX_WIDTH = 2048          # p4c's largest bit<>/int<>/varbit<> width (also in typeresolve)
MAX_LITERAL_BITS = 4096   # twice p4c's widest type: no literal beyond it can be used


def parse_int_literal(text: str) -> tuple[int, int | None, bool, int]:
    """Parse a P4 integer literal -> (value, width or None, signed, base). ``ValueError`` (with a
    message for the user) for a literal too large to be any P4 value."""
    width: int | None = None
    signed = False
    m = re.match(r"([0-9]+)([ws])(.*)$", text)
    if m and not text.lower().startswith(("0x", "0b", "0o", "0d")):
        if len(m.group(1)) > 6:
            raise ValueError(f"integer literal width {m.group(1)[:20]}... is too large")
        width, signed, text = int(m.group(1)), m.group(2) == "s", m.group(3)
    body = text.replace("_", "")
    low = body.lower()
    digits = len(body) - (2 if low[:2] in ("0x", "0b", "0o", "0d") else 0)
    bits_per_digit = {"0x": 4, "0b": 1, "0o": 3}.get(low[:2], 3.33)
    if digits * bits_per_digit > MAX_LITERAL_BITS + 4:
        raise ValueError(f"integer literal too large ({digits} digits; at most {MAX_LITERAL_BITS} bits)")
    if low.startswith("0x"):
        return int(body[2:], 16), width, signed, 16
    if low.startswith("0b"):
        return int(body[2:], 2), width, signed, 2
    if low.startswith("0o"):
        return int(body[2:], 8), width, signed, 8
    if low.startswith("0d"):
        return int(body[2:], 10), width, signed, 10
    return int(body, 10), width, signed, 10


_ANNO_RE = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\)|\[(.*)\])?\s*$", re.S)


def _is_decl(x: Any) -> bool:
    return isinstance(x, A.Declaration)


@v_args(meta=True)
class AstBuilder(Transformer):
    """lark parse tree -> AST (positions mapped through the preprocessor line map)."""

    def __init__(self, pre: Preprocessed) -> None:
        super().__init__()
        self.pre = pre

    # ------------------------------------------------------------------ helpers
    def loc(self, meta: Any) -> SourceLocation | None:
        if meta is None or getattr(meta, "empty", True):
            return None
        return self.pre.location(meta.line, meta.column)

    def tloc(self, tok: Token) -> SourceLocation:
        return self.pre.location(tok.line or 1, tok.column or 1)

    @staticmethod
    def _annos(x: Any) -> list[A.Annotation]:
        return x if isinstance(x, list) else []

    # ------------------------------------------------------------------ top level
    def start(self, meta: Any, ch: list[Any]) -> A.Program:
        return A.Program([c for c in ch if _is_decl(c)], loc=self.loc(meta))

    def annotation_body(self, meta: Any, ch: list[Any]) -> list[A.Expression]:
        return ch[0]

    def annotation_kv(self, meta: Any, ch: list[Any]) -> dict[str, A.Expression]:
        return {k: v for k, v in (c for c in ch if c is not None)}

    def annos(self, meta: Any, ch: list[Any]) -> list[A.Annotation]:
        out = []
        for tok in ch:
            if not isinstance(tok, Token):
                continue
            m = _ANNO_RE.match(str(tok))
            loc = self.tloc(tok)
            if not m:
                out.append(A.Annotation(str(tok)[1:], loc=loc))
                continue
            name, body, kvbody = m.group(1), m.group(2), m.group(3)
            anno = A.Annotation(name, body=body if body is not None else (kvbody or ""), loc=loc)
            if body is not None and body.strip():
                anno.args = self._sub_parse(body, tok, kv=False) or []
            elif kvbody is not None and kvbody.strip():
                anno.kv = self._sub_parse(kvbody, tok, kv=True) or {}
            out.append(anno)
        return out

    def _sub_parse(self, body: str, tok: Token, kv: bool) -> Any:
        """Parse an annotation body as an expression list / key-value list (None if it isn't)."""
        try:
            text = body
            from p4sim.frontend.parser import _get_parser, _postlex

            _postlex.set_info(scan(text))
            tree = _get_parser().parse(text, start="annotation_body")
            sub = AstBuilder(_AnnoPre(self.tloc(tok)))
            result = sub.transform(tree)
        except (UnexpectedInput, P4CompileError):
            return None
        if kv and isinstance(result, dict):
            for v in result.values():
                _type_literal(v)
            return result
        if not kv and isinstance(result, list):
            for v in result:
                _type_literal(v)
            return result
        return None

    def name(self, meta: Any, ch: list[Any]) -> str:
        return str(ch[0])

    def member_name(self, meta: Any, ch: list[Any]) -> str:
        return str(ch[0])

    def type_params(self, meta: Any, ch: list[Any]) -> list[str]:
        return list(ch)

    def name_list(self, meta: Any, ch: list[Any]) -> list[str]:
        return [c for c in ch if c is not None]

    # ------------------------------------------------------------------ types
    def bool_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.BoolT()

    def error_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.ErrorT()

    def string_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.StringT()

    def match_kind_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.MatchKindT()

    def bit1_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.BitT(1)

    def infint_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.InfIntT()

    def _width(self, tok: Token) -> int:
        try:
            value = parse_int_literal(str(tok))[0]
        except ValueError as err:
            raise P4CompileError(self.tloc(tok), str(err)) from None
        if value <= 0:
            raise P4CompileError(self.tloc(tok), f"invalid type width {value}: must be positive")
        if value > MAX_WIDTH:
            raise P4CompileError(self.tloc(tok), f"width {value}: widths up to {MAX_WIDTH} are supported (as p4c)")
        return value

    def bit_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.BitT(self._width(ch[0]))

    def int_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.BitT(self._width(ch[0]), True)

    def bit_type_expr(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.BitTypeExpr(ch[0], False, loc=self.loc(meta))

    def int_type_expr(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.BitTypeExpr(ch[0], True, loc=self.loc(meta))

    def bit_type_id(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.BitTypeExpr(A.PathExpr(str(ch[0]), loc=self.tloc(ch[0])), False, loc=self.loc(meta))

    def int_type_id(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.BitTypeExpr(A.PathExpr(str(ch[0]), loc=self.tloc(ch[0])), True, loc=self.loc(meta))

    def varbit_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.VarbitT(self._width(ch[0]))

    def varbit_type_expr(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.VarbitTypeExpr(ch[0], loc=self.loc(meta))

    def type_name(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.TypeName(str(ch[0]), loc=self.loc(meta))

    global_type_name = type_name

    def specialized_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.SpecializedTypeName(ch[0].name, tuple(ch[1]), loc=self.loc(meta))

    def stack_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.StackTypeExpr(ch[0], ch[1], loc=self.loc(meta))

    def tuple_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.TupleT(tuple(ch[0]))

    def type_args(self, meta: Any, ch: list[Any]) -> list[A.Type]:
        return list(ch)

    def void_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.VoidT()

    def dontcare_type(self, meta: Any, ch: list[Any]) -> A.Type:
        return A.DontCareT()

    # ------------------------------------------------------------------ declarations
    def const_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, typ, name, value = ch
        return A.ConstDecl(name, typ, value, annotations=self._annos(annos), loc=self.loc(meta))

    def typedef_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, typ, name = ch
        return A.TypedefDecl(name, typ, annotations=self._annos(annos), loc=self.loc(meta))

    def newtype_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, typ, name = ch
        return A.TypedefDecl(name, typ, True, annotations=self._annos(annos), loc=self.loc(meta))

    def field(self, meta: Any, ch: list[Any]) -> A.Field:
        annos, typ, name = ch
        return A.Field(name, typ, annotations=self._annos(annos), loc=self.loc(meta))

    def header_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        return A.HeaderDecl(ch[1], list(ch[2:]), annotations=self._annos(ch[0]), loc=self.loc(meta))

    def header_union_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        return A.HeaderUnionDecl(ch[1], list(ch[2:]), annotations=self._annos(ch[0]),
                                 loc=self.loc(meta))

    def struct_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        return A.StructDecl(ch[1], list(ch[2:]), annotations=self._annos(ch[0]), loc=self.loc(meta))

    def enum_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, name, names = ch
        return A.EnumDecl(name, [A.EnumMember(n, loc=self.loc(meta)) for n in names],
                          annotations=self._annos(annos), loc=self.loc(meta))

    def ser_member(self, meta: Any, ch: list[Any]) -> A.EnumMember:
        return A.EnumMember(ch[0], ch[1], loc=self.loc(meta))

    def ser_enum_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        members = [c for c in ch[3:] if isinstance(c, A.EnumMember)]
        return A.EnumDecl(ch[2], members, ch[1], annotations=self._annos(ch[0]), loc=self.loc(meta))

    def error_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        return A.ErrorDecl("error", ch[1], annotations=self._annos(ch[0]), loc=self.loc(meta))

    def match_kind_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        return A.MatchKindDecl("match_kind", ch[1], annotations=self._annos(ch[0]),
                               loc=self.loc(meta))

    def extern_object(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, name, tparams = ch[0], str(ch[1]), ch[2] or []
        return A.ExternDecl(name, tparams, [m for m in ch[3:] if isinstance(m, A.MethodDecl)],
                            annotations=self._annos(annos), loc=self.loc(meta))

    def fn_proto(self, meta: Any, ch: list[Any]) -> dict[str, Any]:
        ret, name, tparams, params = ch
        return {"ret": ret, "name": name, "tparams": tparams or [], "params": params,
                "loc": self.loc(meta)}

    def void_fn_proto(self, meta: Any, ch: list[Any]) -> dict[str, Any]:
        name, tparams, params = ch
        return {"ret": A.VoidT(), "name": name, "tparams": tparams or [], "params": params,
                "loc": self.loc(meta)}

    def extern_function(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, p = ch
        return A.ExternFunctionDecl(p["name"], p["ret"], p["tparams"], p["params"],
                                    annotations=self._annos(annos), loc=self.loc(meta))

    def method_proto(self, meta: Any, ch: list[Any]) -> A.MethodDecl:
        annos, p = ch
        return A.MethodDecl(p["name"], p["ret"], p["tparams"], p["params"],
                            annotations=self._annos(annos), loc=self.loc(meta))

    def abstract_method(self, meta: Any, ch: list[Any]) -> A.MethodDecl:
        m = self.method_proto(meta, ch)
        m.is_abstract = True
        return m

    def constructor_proto(self, meta: Any, ch: list[Any]) -> A.MethodDecl:
        annos, name, params = ch
        return A.MethodDecl(str(name), None, [], params, True, annotations=self._annos(annos),
                            loc=self.loc(meta))

    def function_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, p, body = ch
        return A.FunctionDecl(p["name"], p["ret"], p["tparams"], p["params"], body,
                              annotations=self._annos(annos), loc=self.loc(meta))

    def params(self, meta: Any, ch: list[Any]) -> list[A.Param]:
        return [c for c in ch if c is not None]

    def param(self, meta: Any, ch: list[Any]) -> A.Param:
        annos, direction, typ, name, default = (ch + [None])[:5]
        return A.Param(name, direction or "", typ, default, annotations=self._annos(annos),
                       loc=self.loc(meta))

    def direction(self, meta: Any, ch: list[Any]) -> str:
        return str(ch[0])

    def parser_type_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, name, tparams, params = ch
        return A.ParserTypeDecl(name, tparams or [], params, annotations=self._annos(annos),
                                loc=self.loc(meta))

    def control_type_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, name, tparams, params = ch
        return A.ControlTypeDecl(name, tparams or [], params, annotations=self._annos(annos),
                                 loc=self.loc(meta))

    def package_type_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, name, tparams, params = ch
        return A.PackageTypeDecl(name, tparams or [], params, annotations=self._annos(annos),
                                 loc=self.loc(meta))

    def ctor_params(self, meta: Any, ch: list[Any]) -> list[A.Param]:
        return ch[0]

    def instantiation(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, typ, args, name = ch
        return A.Instantiation(name, typ, args, annotations=self._annos(annos), loc=self.loc(meta))

    def instantiation_init(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, typ, args, name, functions = ch
        inst = A.Instantiation(name, typ, args, annotations=self._annos(annos), loc=self.loc(meta))
        inst.initializer = functions    # type: ignore[attr-defined]  # abstract methods' bodies
        return inst

    def obj_initializer(self, meta: Any, ch: list[Any]) -> list[A.FunctionDecl]:
        return list(ch)

    def value_set_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, typ, size, name = ch
        return A.ValueSetDecl(name, typ, size, annotations=self._annos(annos), loc=self.loc(meta))

    def var_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, typ, name, init = (ch + [None])[:4]
        return A.VariableDecl(name, typ, init, annotations=self._annos(annos), loc=self.loc(meta))

    # ------------------------------------------------------------------ parsers
    def parser_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, name, tparams, params, ctor = ch[:5]
        rest = ch[5:]
        states = [c for c in rest if isinstance(c, A.ParserState)]
        locals_ = [c for c in rest if _is_decl(c) and not isinstance(c, A.ParserState)]
        return A.ParserDecl(name, tparams or [], params, ctor or [], locals_, states,
                            annotations=self._annos(annos), loc=self.loc(meta))

    def _stmts(self, items: list[Any]) -> list[A.Statement]:
        out: list[A.Statement] = []
        for c in items:
            if isinstance(c, A.Statement):
                out.append(c)
            elif _is_decl(c):
                out.append(A.DeclStmt(c, loc=c.loc))
        return out

    def parser_state(self, meta: Any, ch: list[Any]) -> A.ParserState:
        annos, name = ch[0], ch[1]
        return A.ParserState(name, self._stmts(ch[2:-1]), ch[-1], annotations=self._annos(annos),
                             loc=self.loc(meta))

    def parser_state_no_transition(self, meta: Any, ch: list[Any]) -> A.ParserState:
        annos, name = ch[0], ch[1]
        tr = A.Transition("reject", loc=self.loc(meta))
        return A.ParserState(name, self._stmts(ch[2:]), tr, annotations=self._annos(annos),
                             loc=self.loc(meta))

    def transition_goto(self, meta: Any, ch: list[Any]) -> A.Transition:
        return A.Transition(ch[0], loc=self.loc(meta))

    def transition_select(self, meta: Any, ch: list[Any]) -> A.Transition:
        return A.Transition(None, ch[0], loc=self.loc(meta))

    def select_expr(self, meta: Any, ch: list[Any]) -> A.SelectExpr:
        return A.SelectExpr(ch[0], list(ch[1:]), loc=self.loc(meta))

    def select_case(self, meta: Any, ch: list[Any]) -> A.SelectCase:
        return A.SelectCase(ch[0], ch[1], loc=self.loc(meta))

    def tuple_keyset(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.ListExpr(list(ch), loc=self.loc(meta))

    def mask(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Mask(ch[0], ch[1], loc=self.loc(meta))

    def range(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Range(ch[0], ch[1], loc=self.loc(meta))

    def default_keyset(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.DefaultExpr(loc=self.loc(meta))

    def dontcare_keyset(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.DontCare(loc=self.loc(meta))

    # ------------------------------------------------------------------ controls
    def control_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, name, tparams, params, ctor = ch[:5]
        locals_ = [c for c in ch[5:-1] if _is_decl(c)]
        return A.ControlDecl(name, tparams or [], params, ctor or [], locals_, ch[-1],
                             annotations=self._annos(annos), loc=self.loc(meta))

    def action_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        annos, name, params, body = ch
        return A.ActionDecl(name, params, body, annotations=self._annos(annos), loc=self.loc(meta))

    def table_decl(self, meta: Any, ch: list[Any]) -> A.Declaration:
        t = A.TableDecl(ch[1], annotations=self._annos(ch[0]), loc=self.loc(meta))
        seen: dict[str, Any] = {}
        for prop in ch[2:]:
            kind = prop[0] if isinstance(prop, tuple) else prop.name
            ploc = prop[-1] if isinstance(prop, tuple) else prop.loc
            if kind in seen:
                raise P4CompileError(ploc, f"table '{t.name}': duplicate property '{kind}'")
            seen[kind] = True
            if isinstance(prop, A.TableProperty):
                t.properties.append(prop)
            elif kind == "key":
                t.keys = prop[1]
            elif kind == "actions":
                t.actions = prop[1]
                t.actions_declared = True      # `actions = { }` is valid (p4c accepts it)
            elif kind == "default_action":
                t.default_action, t.default_is_const = prop[1], prop[2]
            elif kind == "entries":
                t.entries, t.entries_const = prop[1], prop[2]
        return t

    def key_prop(self, meta: Any, ch: list[Any]) -> tuple[Any, ...]:
        return ("key", list(ch[1:]), self.loc(meta))

    def key_element(self, meta: Any, ch: list[Any]) -> A.KeyElement:
        expr, kind, annos = ch
        return A.KeyElement(expr, kind, self._annos(annos), loc=self.loc(meta))

    def actions_prop(self, meta: Any, ch: list[Any]) -> tuple[Any, ...]:
        return ("actions", list(ch[1:]), self.loc(meta))

    def action_item(self, meta: Any, ch: list[Any]) -> A.ActionRef:
        annos, ref = ch
        ref.annotations = self._annos(annos)
        return ref

    def action_ref(self, meta: Any, ch: list[Any]) -> A.ActionRef:
        path: A.PathExpr = ch[0]
        args = ch[1] if len(ch) > 1 else []
        ref = A.ActionRef(path.name, args, loc=self.loc(meta))
        return ref

    def default_action_prop(self, meta: Any, ch: list[Any]) -> tuple[Any, ...]:
        annos, const, ref = ch
        return ("default_action", ref, const is not None, self.loc(meta))

    def entries_prop(self, meta: Any, ch: list[Any]) -> tuple[Any, ...]:
        const = ch[1] is not None
        entries = [e for e in ch[2:] if isinstance(e, A.TableEntry)]
        for e in entries:
            e.is_const = e.is_const or const
        return ("entries", entries, const, self.loc(meta))

    def entry(self, meta: Any, ch: list[Any]) -> A.TableEntry:
        annos, const, prio, keyset, ref, annos2 = ch
        keys = keyset.items if isinstance(keyset, A.ListExpr) and getattr(
            keyset, "_tuple", True) else [keyset]
        return A.TableEntry(list(keys), ref, prio, const is not None,
                            self._annos(annos) + self._annos(annos2), loc=self.loc(meta))

    def entry_priority(self, meta: Any, ch: list[Any]) -> A.Expression:
        c = ch[0]
        if isinstance(c, Token):
            return self.int_lit(meta, [c])
        return c

    def generic_prop(self, meta: Any, ch: list[Any]) -> A.TableProperty:
        annos, const, name, value = ch
        return A.TableProperty(name, value, const is not None, self._annos(annos),
                               loc=self.loc(meta))

    # ------------------------------------------------------------------ statements
    def block(self, meta: Any, ch: list[Any]) -> A.BlockStmt:
        return A.BlockStmt(self._stmts(ch), loc=self.loc(meta))

    def assignment(self, meta: Any, ch: list[Any]) -> A.Statement:
        return A.AssignStmt(ch[0], ch[1], loc=self.loc(meta))

    def compound_assignment(self, meta: Any, ch: list[Any]) -> A.Statement:
        """``a op= b`` (p4c's compound assignment) as ``a = a op b``."""
        lhs, op, rhs = ch
        value = A.Binary(str(op)[:-1], copy.deepcopy(lhs), rhs, loc=self.loc(meta))
        return A.AssignStmt(lhs, value, compound=True, loc=self.loc(meta))

    for_compound_assign = compound_assignment

    def call_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        call = A.MethodCall(ch[0], [], ch[1], loc=self.loc(meta))
        return A.MethodCallStmt(call, loc=self.loc(meta))

    def generic_call_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        ch = [c for c in ch if not isinstance(c, Token)]
        call = A.MethodCall(ch[0], ch[1], ch[2], loc=self.loc(meta))
        return A.MethodCallStmt(call, loc=self.loc(meta))

    def if_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        return A.IfStmt(ch[0], ch[1], ch[2] if len(ch) > 2 else None, loc=self.loc(meta))

    def switch_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        return A.SwitchStmt(ch[0], list(ch[1:]), loc=self.loc(meta))

    def switch_case(self, meta: Any, ch: list[Any]) -> A.SwitchCase:
        return A.SwitchCase([ch[0]], ch[1], loc=self.loc(meta))

    def switch_fallthrough(self, meta: Any, ch: list[Any]) -> A.SwitchCase:
        return A.SwitchCase([ch[0]], None, loc=self.loc(meta))

    def default_label(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.DefaultExpr(loc=self.loc(meta))

    def direct_apply(self, meta: Any, ch: list[Any]) -> A.Statement:
        _annos, typ, member, args = ch
        func = A.TypeMember(typ.name, member, loc=self.loc(meta))
        call = A.MethodCall(func, [], args, loc=self.loc(meta))
        return A.MethodCallStmt(call, loc=self.loc(meta))

    def annotated_block(self, meta: Any, ch: list[Any]) -> A.Statement:
        block: A.BlockStmt = ch[1]
        block.annotations = self._annos(ch[0])
        return block

    def for_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        init, cond, update, body = ch
        return A.ForStmt(init or [], cond, update or [], body, loc=self.loc(meta))

    def for_in_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        typ, name, _in, coll, body = ch
        var = A.VariableDecl(name, typ, loc=self.loc(meta))
        return A.ForInStmt(var, coll, body, loc=self.loc(meta))

    def for_in_range_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        typ, name, _in, lo, hi, body = ch
        var = A.VariableDecl(name, typ, loc=self.loc(meta))
        rng = A.Range(lo, hi, loc=lo.loc)
        return A.ForInStmt(var, rng, body, loc=self.loc(meta))

    def for_list(self, meta: Any, ch: list[Any]) -> list[A.Statement]:
        return list(ch)

    def for_var(self, meta: Any, ch: list[Any]) -> A.Statement:
        typ, name, init = ch
        decl = A.VariableDecl(name, typ, init, loc=self.loc(meta))
        return A.DeclStmt(decl, loc=self.loc(meta))

    def for_assign(self, meta: Any, ch: list[Any]) -> A.Statement:
        return A.AssignStmt(ch[0], ch[1], loc=self.loc(meta))

    def for_call(self, meta: Any, ch: list[Any]) -> A.Statement:
        call = A.MethodCall(ch[0], [], ch[1], loc=self.loc(meta))
        return A.MethodCallStmt(call, loc=self.loc(meta))

    def break_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        return A.BreakStmt(loc=self.loc(meta))

    def continue_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        return A.ContinueStmt(loc=self.loc(meta))

    def exit_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        return A.ExitStmt(loc=self.loc(meta))

    def return_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        return A.ReturnStmt(ch[0] if ch and ch[0] is not None else None, loc=self.loc(meta))

    def empty_stmt(self, meta: Any, ch: list[Any]) -> A.Statement:
        return A.EmptyStmt(loc=self.loc(meta))

    # ------------------------------------------------------------------ expressions
    def expr_list(self, meta: Any, ch: list[Any]) -> list[A.Expression]:
        return [c for c in ch if c is not None]

    def args(self, meta: Any, ch: list[Any]) -> list[A.Argument]:
        out = []
        for c in ch:
            if c is None:
                continue
            out.append(c if isinstance(c, A.Argument) else A.Argument(c, loc=c.loc))
        return out

    def dontcare_arg(self, meta: Any, ch: list[Any]) -> A.Argument:
        return A.Argument(A.DontCare(loc=self.loc(meta)), loc=self.loc(meta))

    def named_arg(self, meta: Any, ch: list[Any]) -> A.Argument:
        return A.Argument(ch[1], ch[0], loc=self.loc(meta))

    def named_dontcare_arg(self, meta: Any, ch: list[Any]) -> A.Argument:
        return A.Argument(A.DontCare(loc=self.loc(meta)), ch[0], loc=self.loc(meta))

    def conditional(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Conditional(ch[0], ch[1], ch[2], loc=self.loc(meta))

    def _bin(op: str):  # noqa: N805 - factory used in the class body
        def method(self: AstBuilder, meta: Any, ch: list[Any]) -> A.Expression:
            operands = [c for c in ch if not isinstance(c, Token)]
            return A.Binary(op, operands[0], operands[1], loc=self.loc(meta))
        return method

    lor = _bin("||")
    land = _bin("&&")
    eq = _bin("==")
    ne = _bin("!=")
    lt = _bin("<")
    gt = _bin(">")
    le = _bin("<=")
    ge = _bin(">=")
    bor = _bin("|")
    bxor = _bin("^")
    band = _bin("&")
    shl = _bin("<<")
    shr = _bin(">>")
    add = _bin("+")
    sub = _bin("-")
    sat_add = _bin("|+|")
    sat_sub = _bin("|-|")
    concat = _bin("++")
    mul = _bin("*")
    div = _bin("/")
    mod = _bin("%")

    def lnot(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Unary("!", ch[0], loc=self.loc(meta))

    def bnot(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Unary("~", ch[0], loc=self.loc(meta))

    def neg(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Unary("-", ch[0], loc=self.loc(meta))

    def pos(self, meta: Any, ch: list[Any]) -> A.Expression:
        return ch[0]

    def cast(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Cast(ch[0], ch[1], loc=self.loc(meta))

    def member(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Member(ch[0], ch[1], loc=self.loc(meta))

    def index(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Index(ch[0], ch[1], loc=self.loc(meta))

    def slice(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.Slice(ch[0], ch[1], ch[2], loc=self.loc(meta))

    def call(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.MethodCall(ch[0], [], ch[1], loc=self.loc(meta))

    def generic_call(self, meta: Any, ch: list[Any]) -> A.Expression:
        ch = [c for c in ch if not isinstance(c, Token)]
        return A.MethodCall(ch[0], ch[1], ch[2], loc=self.loc(meta))

    def int_lit(self, meta: Any, ch: list[Any]) -> A.Expression:
        tok = ch[0]
        loc = self.tloc(tok)
        try:
            value, width, signed, base = parse_int_literal(str(tok))
        except ValueError as err:
            raise P4CompileError(loc, str(err)) from None
        if width is not None and width <= 0:
            raise P4CompileError(loc, f"invalid width {width} in integer literal '{tok}'")
        return A.IntLiteral(value, width, signed, base, loc=loc)

    def true_lit(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.BoolLiteral(True, loc=self.loc(meta))

    def false_lit(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.BoolLiteral(False, loc=self.loc(meta))

    def string_lit(self, meta: Any, ch: list[Any]) -> A.Expression:
        raw = str(ch[0])
        try:
            value = pyast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw[1:-1]
        return A.StringLiteral(value, loc=self.tloc(ch[0]))

    def name_ref(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.PathExpr(str(ch[0]), loc=self.tloc(ch[0]))

    def global_name_ref(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.PathExpr(str(ch[0]), True, loc=self.loc(meta))

    def type_member(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.TypeMember(ch[0].name, ch[1], loc=self.loc(meta))

    def error_member(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.TypeMember("error", ch[0], loc=self.loc(meta))

    def ctor_call(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.MethodCall(A.TypeExpr(ch[0], loc=self.loc(meta)), [], ch[1], loc=self.loc(meta))

    def list_expr(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.ListExpr(ch[0], loc=self.loc(meta))

    def kv_pair(self, meta: Any, ch: list[Any]) -> tuple[str, A.Expression]:
        return (ch[0], ch[1])

    def struct_init(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.StructInit([c for c in ch if c is not None], loc=self.loc(meta))

    def invalid_header(self, meta: Any, ch: list[Any]) -> A.Expression:
        return A.InvalidHeader(loc=self.loc(meta))


def _type_literal(e: A.Expression) -> None:
    """Give annotation-body literals their literal type (bodies are not type-checked)."""
    if isinstance(e, A.StringLiteral):
        e.type = A.StringT()
    elif isinstance(e, A.BoolLiteral):
        e.type = A.BoolT()
    elif isinstance(e, A.IntLiteral):
        e.type = A.BitT(e.width, e.signed) if e.width else A.InfIntT()


class _AnnoPre(Preprocessed):
    """A line map that places every node of an annotation body at the annotation itself."""

    def __init__(self, loc: SourceLocation) -> None:
        super().__init__("", [])
        self._loc = loc

    def location(self, line: int, col: int) -> SourceLocation:
        return self._loc
