"""The P4_16 abstract syntax tree that the front end produces and the back end consumes.

Why this module exists: it is the contract between ``p4sim.frontend`` (parser + type checker) and
``p4sim.backend`` (code generation, P4Info). Every node is a dataclass with ``loc`` (a
``SourceLocation``, keyword-only). Nodes compare by identity (``eq=False``); semantic *types*
(subclasses of ``Type``) are frozen and compare structurally.

What the parser produces and what the type checker (``typecheck.check_program``) fills in
------------------------------------------------------------------------------------------
After ``load_program`` returns, the tree is *checked*:

* Types. Every ``type`` field of a declaration (``Param.type``, ``Field.type``,
  ``VariableDecl.type``, ``ConstDecl.type``, ``FunctionDecl.return_type`` ...) holds a resolved
  semantic type: ``BitT(width, signed)``, ``BoolT``, ``VarbitT(max_width)``, ``HeaderT``,
  ``StructT``, ``HeaderUnionT``, ``HeaderStackT``, ``EnumT``, ``SerEnumT``, ``ErrorT``,
  ``MatchKindT``, ``TupleT``, ``StringT``, ``VoidT``, ``ExternT``, ``ParserT``, ``ControlT``,
  ``PackageT``. Typedefs and ``type`` declarations are resolved to their underlying type (a
  ``type`` is treated as an alias: no distinct-type checks). The parse-only placeholders
  ``TypeName``, ``BitTypeExpr``, ``VarbitTypeExpr``, ``StackTypeExpr``, ``SpecializedTypeName``
  never survive checking. ``TypeVarT`` only appears inside generic extern declarations.
* Every ``Expression`` has ``type`` set. Integer literals get their final type: ``BitT`` when a
  width is known (written ``8w5`` or inferred from context) or ``InfIntT`` only where P4 allows an
  unsized constant: shift amounts, stack/tuple indices, slice bounds, ``push_front``/``pop_front``
  counts, table ``size``, entry priorities, ``value_set`` sizes and ``minSizeInBits()`` results.
  (A generic extern's type parameter is never bound to ``int``: ``hash(.., 0, ..)`` is an error,
  as in p4c.) ``IntLiteral.value`` of an ``int<W>`` literal is the signed value.
* Every ``PathExpr`` has ``decl``: the declaration it names (``Param``, ``VariableDecl``,
  ``ConstDecl``, ``ActionDecl``, ``TableDecl``, ``Instantiation``, ``FunctionDecl``,
  ``ExternFunctionDecl``, ``ParserState``, ...).
* Compile-time constants are folded: references to ``const`` declarations, ``Enum.member`` of
  serializable enums, ``stack.size``, arithmetic on constants and casts of constants become
  ``IntLiteral``/``BoolLiteral`` (with ``type`` set). ``error.X`` becomes ``ErrorConst``;
  ``MyEnum.X`` of a plain enum becomes ``EnumConst``; serializable ``MyEnum.X`` becomes an
  ``IntLiteral`` whose ``type`` is the ``SerEnumT``.
* Implicit casts are explicit: wherever P4 converts implicitly (an unsized constant to ``bit<W>``,
  a serializable enum to its underlying type, ``{a, b}`` to a header/struct), the checker inserts a
  ``Cast`` node or rewrites the literal, so that after checking, both operands of a binary
  arithmetic/comparison operator have identical types (except shifts, ``++`` and ``&&&``/``..``).
  A ``ListExpr`` assigned/passed where a struct or header is expected is rewritten into a
  ``StructInit`` with ``fields`` in declaration order.
* ``MethodCall``: ``kind`` is one of ``METHOD_CALL_KINDS``; ``decl`` is the callee declaration
  (``ActionDecl``, ``FunctionDecl``, ``ExternFunctionDecl``, ``MethodDecl`` of an extern,
  ``TableDecl`` for ``t.apply()``, ``ParserDecl``/``ControlDecl`` for sub-parser/control apply,
  ``None`` for header/stack builtins); ``method`` is the method name; ``args`` are reordered into
  parameter order (named arguments resolved); an omitted defaulted argument becomes the
  parameter's default expression and an omitted ``@optional`` argument becomes ``None``; ``type_args`` are resolved (explicit or inferred, e.g. ``extract<ethernet_t>``).
  ``params`` is the callee's parameter list after type-argument substitution.
* ``Instantiation`` (extern/parser/control/package object): ``type`` resolved (``ExternT`` with
  its type args, e.g. ``register<bit<32>>`` -> ``ExternT("register", (BitT(32),))``), ``decl``
  is the ``ExternDecl``/``ParserDecl``/``ControlDecl``/``PackageTypeDecl``; constructor ``args``
  constant-folded; ``ctor`` is the chosen constructor ``MethodDecl`` for externs.
* ``TypeMember`` never survives checking (see above; a value named like a type, e.g. a parameter
  ``p`` next to ``parser p``, becomes a ``Member`` of a ``PathExpr``). Direct application
  ``MyCtrl.apply(...)`` becomes an apply of an implicit ``Instantiation`` named
  ``MyCtrl_inst_<n>`` appended to the enclosing control's/parser's ``locals``.
* ``Program.main`` is the ``Instantiation`` named ``main`` (its ``args`` become the
  ``ParserDecl``/``ControlDecl`` objects passed to the package); ``Program.main_blocks`` lists, in the
  package's parameter order, ``(param_name, ParserDecl | ControlDecl)`` -- for v1model:
  ``p, vr, ig, eg, ck, dep`` -> MyParser, MyVerifyChecksum, MyIngress, MyEgress,
  MyComputeChecksum, MyDeparser. ``Program.arch`` is ``"v1model"`` when ``main`` is a V1Switch.
* ``Program.errors`` is every ``error`` member in declaration order (core.p4's first: NoError,
  PacketTooShort, NoMatch, StackOutOfBounds, HeaderTooShort, ParserTimeout,
  ParserInvalidArgument, then the program's); ``Program.match_kinds`` likewise.
* ``HeaderDecl.width`` / ``StructDecl.width`` are the sizes in bits (varbit counted at max).
* ``TableDecl``: ``keys``, ``actions``, ``default_action``, ``entries``, ``size``,
  ``implementation``, ``counters``, ``meters`` are filled from properties (see ``TableDecl``).
  Every ``ActionRef`` has ``decl`` (the ``ActionDecl``) and ``args`` (the action-data binding in
  parameter order; for ``actions = { a; }`` list entries ``args`` is empty).
* ``ParserState.transition`` targets have ``state`` set (``ParserState`` or the builtin
  ``ACCEPT``/``REJECT`` states, whose names are ``accept``/``reject``).
* ``SwitchStmt``: for ``switch (t.apply().action_run)`` each label ``PathExpr`` has ``decl`` =
  the ``ActionDecl``; ``SwitchCase.body is None`` means fall through to the next case.

The semantic types (``BitT`` ... ``StackTypeExpr``, ``type_width``) are defined in
``asttypes.py`` and re-exported here: always use them as ``ast.BitT`` etc.

Stability: names here are a contract. Additions are fine; any rename will be announced here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4sim.errors import SourceLocation
from p4sim.frontend.asttypes import (  # noqa: F401 - re-exported as part of the AST
    ActionEnumT,
    ActionT,
    ApplyResultT,
    BitT,
    BitTypeExpr,
    BoolT,
    ControlT,
    DontCareT,
    EnumT,
    ErrorT,
    ExternT,
    HeaderStackT,
    HeaderT,
    HeaderUnionT,
    InfIntT,
    MatchKindT,
    PackageT,
    ParserT,
    SerEnumT,
    SpecializedTypeName,
    StackTypeExpr,
    StateT,
    StringT,
    StructT,
    TableT,
    TupleT,
    Type,
    TypeName,
    TypeVarT,
    VarbitT,
    VarbitTypeExpr,
    VoidT,
    type_width,
)

METHOD_CALL_KINDS = (
    "action",            # direct action call: a(x); decl = ActionDecl
    "function",          # P4 function: decl = FunctionDecl
    "extern_function",   # mark_to_drop(...), hash(...): decl = ExternFunctionDecl
    "extern_method",     # reg.read(...), pkt.extract(...): decl = MethodDecl, target = the object
    "table_apply",       # t.apply(): decl = TableDecl, type = ApplyResultT
    "parser_apply",      # sub-parser instance apply: decl = ParserDecl
    "control_apply",     # sub-control instance apply: decl = ControlDecl
    "constructor",       # `MyParser()` / `V1Switch(...)` argument: func is a TypeExpr, decl = the type decl
    "builtin",           # isValid/setValid/setInvalid/push_front/pop_front/minSizeInBits...
)

BUILTIN_METHODS = ("isValid", "setValid", "setInvalid", "push_front", "pop_front",
                   "minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


# --------------------------------------------------------------------------- base classes
@dataclass(eq=False)
class Node:
    """Base of every syntax node: carries its source location."""

    loc: SourceLocation | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class Annotation(Node):
    """``@name`` / ``@name(expr, ...)`` / ``@name[k=v, ...]``.

    ``args`` holds parsed expressions when the body parses as an expression list (``@name("x")``,
    ``@id(3)``); ``body`` always holds the raw text between the parentheses. Annotation bodies
    are not type-checked: literals carry their literal type, names stay unresolved.
    """

    name: str
    args: list[Expression] = field(default_factory=list)
    body: str = ""
    kv: dict[str, Expression] = field(default_factory=dict)


# --------------------------------------------------------------------------- expressions
@dataclass(eq=False)
class Expression(Node):
    """Base of expressions; ``type`` is filled by the type checker."""

    type: Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class IntLiteral(Expression):
    """An integer constant. ``width``/``signed`` as written (``8w5`` -> 8, False; ``5`` -> None)."""

    value: int
    width: int | None = None
    signed: bool = False
    base: int = 10  # as written, for messages/annotations


@dataclass(eq=False)
class BoolLiteral(Expression):
    value: bool


@dataclass(eq=False)
class StringLiteral(Expression):
    value: str


@dataclass(eq=False)
class PathExpr(Expression):
    """A name reference; ``global_scope`` for ``.name``. ``decl`` filled by the checker."""

    name: str
    global_scope: bool = False
    decl: Any = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class Member(Expression):
    """``expr.member``: field access, stack ``next``/``last``/``lastIndex``, apply-result members."""

    expr: Expression
    member: str


@dataclass(eq=False)
class TypeMember(Expression):
    """``Type.member`` where the left side names a type (``error.X``, ``Enum.X``); parse-time only
    when the parser can tell; the checker otherwise turns ``Member(PathExpr(type))`` into
    ``ErrorConst``/``EnumConst``/``IntLiteral``."""

    type_name: str
    member: str


@dataclass(eq=False)
class ErrorConst(Expression):
    name: str


@dataclass(eq=False)
class EnumConst(Expression):
    """A plain-enum member (``type`` is the ``EnumT``)."""

    enum: str
    member: str


@dataclass(eq=False)
class MatchKindConst(Expression):
    name: str


@dataclass(eq=False)
class Index(Expression):
    """``stack[i]`` (also ``tuple[i]``)."""

    expr: Expression
    index: Expression


@dataclass(eq=False)
class Slice(Expression):
    """``expr[hi:lo]``; after checking ``hi``/``lo`` are ``IntLiteral``s (``type`` is bit<hi-lo+1>)."""

    expr: Expression
    hi: Expression
    lo: Expression


UNARY_OPS = ("-", "~", "!", "+")
BINARY_OPS = ("*", "/", "%", "+", "-", "|+|", "|-|", "<<", ">>", "<", "<=", ">", ">=", "==", "!=",
              "&", "^", "|", "&&", "||", "++")


@dataclass(eq=False)
class Unary(Expression):
    op: str
    expr: Expression


@dataclass(eq=False)
class Binary(Expression):
    op: str
    left: Expression
    right: Expression


@dataclass(eq=False)
class Mask(Expression):
    """``value &&& mask`` (keysets)."""

    value: Expression
    mask: Expression


@dataclass(eq=False)
class Range(Expression):
    """``low .. high`` (keysets)."""

    low: Expression
    high: Expression


@dataclass(eq=False)
class DefaultExpr(Expression):
    """``default`` keyset."""


@dataclass(eq=False)
class DontCare(Expression):
    """``_`` (keyset wildcard, or a don't-care ``out`` argument)."""


@dataclass(eq=False)
class Cast(Expression):
    """``(T) expr``; ``type`` == ``target`` after checking."""

    target: Type
    expr: Expression


@dataclass(eq=False)
class Conditional(Expression):
    """``cond ? then : else``."""

    cond: Expression
    then: Expression
    else_: Expression


@dataclass(eq=False)
class Argument(Node):
    """A call argument as written; ``name`` for ``f(x = 1)``."""

    value: Expression
    name: str | None = None


@dataclass(eq=False)
class MethodCall(Expression):
    """``func<type_args>(args)``. ``func`` is a ``PathExpr`` or ``Member`` (the callee is not a
    value, so ``func`` itself stays untyped; use ``target``, ``method`` and ``decl``).

    Filled by the checker: ``kind`` (see ``METHOD_CALL_KINDS``), ``decl``, ``method`` (name),
    ``target`` (the object expression for extern methods/builtins/apply: e.g. the ``PathExpr``
    ``pkt`` in ``pkt.extract(h)``, ``hdr.ipv4`` in ``hdr.ipv4.isValid()``), ``params``, and
    ``args`` replaced by a list of ``Expression | None`` in parameter order (was ``Argument``s).
    """

    func: Expression
    type_args: list[Type]
    args: list[Any]  # list[Argument] after parsing; list[Expression | None] after checking
    kind: str | None = field(default=None, kw_only=True)
    decl: Any = field(default=None, kw_only=True, repr=False)
    method: str | None = field(default=None, kw_only=True)
    target: Expression | None = field(default=None, kw_only=True, repr=False)
    params: list[Param] | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ListExpr(Expression):
    """``{a, b, c}`` (tuple/list expression; type ``TupleT`` unless rewritten to ``StructInit``)."""

    items: list[Expression]


@dataclass(eq=False)
class StructInit(Expression):
    """``{ f1 = e1, f2 = e2 }`` or a ``ListExpr`` rewritten for a struct/header target.

    After checking ``type`` is ``StructT``/``HeaderT`` and ``fields`` follow declaration order.
    A header-typed ``StructInit`` denotes a *valid* header.
    """

    fields: list[tuple[str, Expression]]


@dataclass(eq=False)
class InvalidHeader(Expression):
    """``{#}``: an invalid header/union value (typed by context)."""


@dataclass(eq=False)
class TypeExpr(Expression):
    """A type used where an expression is expected (e.g. ``sizeInBits(T)``)."""

    of: Type


# --------------------------------------------------------------------------- statements
@dataclass(eq=False)
class Statement(Node):
    pass


@dataclass(eq=False)
class AssignStmt(Statement):
    lhs: Expression
    rhs: Expression
    compound: bool = field(default=False, kw_only=True)   # `a op= b`, kept as `a = a op b`


@dataclass(eq=False)
class MethodCallStmt(Statement):
    call: MethodCall


@dataclass(eq=False)
class BlockStmt(Statement):
    stmts: list[Statement]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class IfStmt(Statement):
    cond: Expression
    then: Statement
    else_: Statement | None = None


@dataclass(eq=False)
class SwitchCase(Node):
    """Labels are expressions (``PathExpr`` action names for ``action_run``) or ``DefaultExpr``.

    ``body is None`` means fall through to the next case.
    """

    labels: list[Expression]
    body: BlockStmt | None


@dataclass(eq=False)
class SwitchStmt(Statement):
    expr: Expression
    cases: list[SwitchCase]


@dataclass(eq=False)
class ExitStmt(Statement):
    pass


@dataclass(eq=False)
class ReturnStmt(Statement):
    value: Expression | None = None


@dataclass(eq=False)
class EmptyStmt(Statement):
    pass


@dataclass(eq=False)
class ForStmt(Statement):
    """``for (init; cond; update) body`` (P4_16 1.2.5). ``init`` holds ``DeclStmt`` /
    ``AssignStmt`` / ``MethodCallStmt``; ``cond`` may be None (loop until ``break``)."""

    init: list[Statement]
    cond: Expression | None
    update: list[Statement]
    body: Statement


@dataclass(eq=False)
class ForInStmt(Statement):
    """``for (T v in collection) body``: ``collection`` is a ``Range`` (inclusive bounds) or a
    header stack expression."""

    var: VariableDecl
    collection: Expression
    body: Statement


@dataclass(eq=False)
class BreakStmt(Statement):
    pass


@dataclass(eq=False)
class ContinueStmt(Statement):
    pass


@dataclass(eq=False)
class DeclStmt(Statement):
    """A local ``VariableDecl`` / ``ConstDecl`` / ``Instantiation`` inside a block or state."""

    decl: Declaration


# --------------------------------------------------------------------------- declarations
@dataclass(eq=False)
class Declaration(Node):
    name: str
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)

    def annotation(self, name: str) -> Annotation | None:
        for a in self.annotations:
            if a.name == name:
                return a
        return None


DIRECTIONS = ("in", "out", "inout", "")  # "" = directionless


@dataclass(eq=False)
class Param(Declaration):
    direction: str
    type: Type
    default: Expression | None = None

    @property
    def optional(self) -> bool:
        return self.annotation("optional") is not None


@dataclass(eq=False)
class ConstDecl(Declaration):
    """``const T name = value;`` -- after checking ``value`` is a folded literal (or aggregate)."""

    type: Type
    value: Expression


@dataclass(eq=False)
class VariableDecl(Declaration):
    type: Type
    init: Expression | None = None


@dataclass(eq=False)
class TypedefDecl(Declaration):
    """``typedef T name;`` and (``is_newtype``) ``type T name;``."""

    type: Type
    is_newtype: bool = False


@dataclass(eq=False)
class Field(Declaration):
    type: Type


@dataclass(eq=False)
class HeaderDecl(Declaration):
    fields: list[Field]
    width: int | None = field(default=None, kw_only=True)  # filled: bits (varbit at max)


@dataclass(eq=False)
class HeaderUnionDecl(Declaration):
    fields: list[Field]


@dataclass(eq=False)
class StructDecl(Declaration):
    fields: list[Field]
    width: int | None = field(default=None, kw_only=True)  # filled when all fields fixed-size


@dataclass(eq=False)
class EnumMember(Node):
    name: str
    value: Expression | None = None  # folded IntLiteral for serializable enums


@dataclass(eq=False)
class EnumDecl(Declaration):
    """Plain (``underlying is None``) or serializable (``enum bit<8> E { A = 1 }``) enum."""

    members: list[EnumMember]
    underlying: Type | None = None


@dataclass(eq=False)
class ErrorDecl(Declaration):
    """``error { A, B }`` (name is ``"error"``); merged into ``Program.errors``."""

    members: list[str]


@dataclass(eq=False)
class MatchKindDecl(Declaration):
    members: list[str]


@dataclass(eq=False)
class MethodDecl(Declaration):
    """A method (or constructor, ``is_constructor``) of an extern; ``abstract`` is unsupported."""

    return_type: Type | None
    type_params: list[str]
    params: list[Param]
    is_constructor: bool = False
    is_abstract: bool = False


@dataclass(eq=False)
class ExternDecl(Declaration):
    type_params: list[str]
    methods: list[MethodDecl]

    def constructors(self) -> list[MethodDecl]:
        return [m for m in self.methods if m.is_constructor]

    def find_methods(self, name: str) -> list[MethodDecl]:
        return [m for m in self.methods if m.name == name and not m.is_constructor]


@dataclass(eq=False)
class ExternFunctionDecl(Declaration):
    return_type: Type
    type_params: list[str]
    params: list[Param]


@dataclass(eq=False)
class FunctionDecl(Declaration):
    return_type: Type
    type_params: list[str]
    params: list[Param]
    body: BlockStmt


@dataclass(eq=False)
class ActionDecl(Declaration):
    """``action a(in bit<8> x, bit<9> port)``: directionless params are action data."""

    params: list[Param]
    body: BlockStmt

    def data_params(self) -> list[Param]:
        return [p for p in self.params if p.direction == ""]


@dataclass(eq=False)
class ParserTypeDecl(Declaration):
    type_params: list[str]
    params: list[Param]


@dataclass(eq=False)
class ControlTypeDecl(Declaration):
    type_params: list[str]
    params: list[Param]


@dataclass(eq=False)
class PackageTypeDecl(Declaration):
    type_params: list[str]
    params: list[Param]  # constructor parameters (the blocks)


@dataclass(eq=False)
class Instantiation(Declaration):
    """``T(args) name;``; checker fills ``decl`` (the ExternDecl/ParserDecl/ControlDecl/
    PackageTypeDecl), ``ctor`` (extern constructor) and resolves ``type``. ``args`` are
    ``Argument``s after parsing, folded ``Expression``s in constructor-parameter order after
    checking."""

    type: Type
    args: list[Any]
    decl: Any = field(default=None, kw_only=True, repr=False)
    ctor: MethodDecl | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class SelectCase(Node):
    """``keyset: state;``. ``keyset`` is an expression, ``ListExpr`` for tuples, ``DefaultExpr``
    or ``DontCare``. ``state`` (checker) is the target ``ParserState``."""

    keyset: Expression
    next_state: str
    state: Any = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class SelectExpr(Node):
    keys: list[Expression]
    cases: list[SelectCase]


@dataclass(eq=False)
class Transition(Node):
    """``transition name;`` (``select is None``) or ``transition select(...) {...}``."""

    next_state: str | None = None
    select: SelectExpr | None = None
    state: Any = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ParserState(Declaration):
    stmts: list[Statement]
    transition: Transition | None  # None only for accept/reject (builtin)


ACCEPT = ParserState("accept", [], None)
REJECT = ParserState("reject", [], None)


@dataclass(eq=False)
class ValueSetDecl(Declaration):
    """``value_set<T>(size) name;``"""

    type: Type
    size: Expression


@dataclass(eq=False)
class ParserDecl(Declaration):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Declaration]
    states: list[ParserState]

    def state(self, name: str) -> ParserState | None:
        for s in self.states:
            if s.name == name:
                return s
        return None


@dataclass(eq=False)
class ControlDecl(Declaration):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Declaration]
    apply: BlockStmt


@dataclass(eq=False)
class KeyElement(Node):
    expr: Expression
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)

    @property
    def name(self) -> str | None:
        """The ``@name`` annotation's value, if any (P4Info uses it for the match-field name)."""
        for a in self.annotations:
            if a.name == "name" and a.args and isinstance(a.args[0], StringLiteral):
                return a.args[0].value
        return None


@dataclass(eq=False)
class ActionRef(Node):
    """An action named in a table: ``a``, ``a(1, 2)`` (default action / entries), with
    ``@defaultonly``/``@tableonly`` annotations. ``decl`` = ActionDecl after checking; ``args``
    are the action-data arguments in parameter order."""

    name: str
    args: list[Any] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    decl: Any = field(default=None, kw_only=True, repr=False)

    def has_annotation(self, name: str) -> bool:
        return any(a.name == name for a in self.annotations)


@dataclass(eq=False)
class TableEntry(Node):
    """An entry of ``entries = { ... }``: keyset (one expression per key), action, optional
    explicit ``priority``; ``is_const`` when the property or the entry is ``const``.

    After checking, ``priority`` is an ``IntLiteral`` (larger wins) when the entry has
    ``priority = N`` or when the table uses legacy ``@priority(n)`` entry annotations (p4c/BMv2:
    smaller ``n`` wins, unannotated entries get their 1-based position); the checker inverts the
    latter into larger-wins values for every entry of that table.
    """

    keys: list[Expression]
    action: ActionRef
    priority: Expression | None = None
    is_const: bool = True
    annotations: list[Annotation] = field(default_factory=list)

    def annotation_value(self, name: str) -> Expression | None:
        for a in self.annotations:
            if a.name == name and a.args:
                return a.args[0]
        return None


@dataclass(eq=False)
class TableProperty(Node):
    """Any other table property (``size``, ``implementation``, ``counters``, ...)."""

    name: str
    value: Expression
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableDecl(Declaration):
    """A table. Parser fills ``keys``, ``actions``, ``default_action`` (+ ``default_is_const``),
    ``entries`` (+ ``entries_const``), ``properties`` (the rest). Checker fills ``size`` (int or
    None), ``implementation``/``counters``/``meters`` (the ``Instantiation`` named, or None),
    ``largest_priority_wins`` (bool, default True), ``priority_delta`` (default 1)."""

    keys: list[KeyElement] = field(default_factory=list)
    actions: list[ActionRef] = field(default_factory=list)
    default_action: ActionRef | None = None
    default_is_const: bool = False
    entries: list[TableEntry] | None = None
    entries_const: bool = True
    properties: list[TableProperty] = field(default_factory=list)
    size: int | None = field(default=None, kw_only=True)
    implementation: Any = field(default=None, kw_only=True, repr=False)
    counters: Any = field(default=None, kw_only=True, repr=False)
    meters: Any = field(default=None, kw_only=True, repr=False)
    largest_priority_wins: bool = field(default=True, kw_only=True)
    priority_delta: int = field(default=1, kw_only=True)

    def prop(self, name: str) -> TableProperty | None:
        for p in self.properties:
            if p.name == name:
                return p
        return None


@dataclass(eq=False)
class Program(Node):
    """A whole program: top-level ``decls`` in source order (includes core.p4/v1model.p4)."""

    decls: list[Declaration]
    main: Instantiation | None = field(default=None, kw_only=True, repr=False)
    main_blocks: list[tuple[str, Any]] = field(default_factory=list, kw_only=True, repr=False)
    arch: str | None = field(default=None, kw_only=True)
    errors: list[str] = field(default_factory=list, kw_only=True)
    match_kinds: list[str] = field(default_factory=list, kw_only=True)
    source_files: list[str] = field(default_factory=list, kw_only=True, repr=False)  # read by the preprocessor

    def find(self, name: str) -> Declaration | None:
        for d in self.decls:
            if d.name == name:
                return d
        return None

    def block(self, param_name: str) -> Any:
        for n, d in self.main_blocks:
            if n == param_name:
                return d
        return None


__all__ = [name for name in dir() if not name.startswith("_")]
