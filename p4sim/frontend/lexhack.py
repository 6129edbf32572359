"""The P4 "lexer hack": tells type names from other identifiers before LALR parsing.

Why it exists: P4_16, like C, is not context-free at the token level: ``T x;`` is a declaration
only if ``T`` names a type, and ``f<T>(x)`` is a generic call only if ``<`` opens type arguments.
p4c solves this with a symbol table in its lexer. p4sim pre-scans the whole (preprocessed) text
once, learns the declared type names (headers, structs, enums, typedefs, externs, parsers,
controls, packages and scoped type parameters), then the post-lexer (``TypeNamePostLex``)
reclassifies tokens by their offset: ``IDENTIFIER`` -> ``TYPE_IDENTIFIER``, ``<`` ->
``TYPEARG_LT`` for generic calls, and the first ``>`` of ``>>`` -> ``GT_SHIFT`` when it is a
shift (``>`` closing nested type arguments stays a plain ``>``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lark import Token

_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<anno>@[A-Za-z_][A-Za-z0-9_]*(?:[ \t]*\((?:"(?:[^"\\\n]|\\.)*"|[^()"]|\((?:"(?:[^"\\\n]|\\.)*"|[^()"])*\))*\)|[ \t]*\[[^\]]*\])?)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<num>[0-9][0-9a-zA-Z_]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&&|\|\+\||\|-\||&&|\|\||==|!=|<=|>=|<<|\.\.|\+\+|.)
""", re.X | re.S)

_TYPE_KEYWORDS = {"bit", "int", "varbit", "bool", "void", "error", "string", "tuple", "match_kind"}
_KEYWORDS = {
    "action", "actions", "apply", "bool", "bit", "const", "control", "default", "else", "entries",
    "enum", "error", "exit", "extern", "false", "header", "header_union", "if", "in", "inout",
    "int", "key", "match_kind", "out", "package", "parser", "return", "select", "state", "string",
    "struct", "switch", "table", "transition", "true", "tuple", "typedef", "type", "value_set",
    "varbit", "void", "abstract", "this",
}


@dataclass
class _Tok:
    kind: str  # id, num, str, op
    text: str
    pos: int


@dataclass
class LexInfo:
    """Offsets (into the preprocessed text) of reclassified tokens."""

    type_ids: set[int] = field(default_factory=set)
    typearg_lt: set[int] = field(default_factory=set)
    gt_shift: set[int] = field(default_factory=set)


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind in ("ws", "anno"):
            continue
        toks.append(_Tok(kind or "op", m.group(0), m.start()))
    return toks


def _decl_end(toks: list[_Tok], i: int) -> int:
    """Index of the token ending the declaration that continues at ``i`` (``;`` or its ``}``)."""
    paren = 0
    n = len(toks)
    while i < n:
        t = toks[i].text
        if t == "(":
            paren += 1
        elif t == ")":
            paren -= 1
        elif t == ";" and paren <= 0:
            return i
        elif t == "{" and paren <= 0:
            depth = 0
            while i < n:
                if toks[i].text == "{":
                    depth += 1
                elif toks[i].text == "}":
                    depth -= 1
                    if depth == 0:
                        return i
                i += 1
            return n - 1
        i += 1
    return n - 1


def _angle_list(toks: list[_Tok], i: int) -> tuple[list[str], int] | None:
    """If ``toks[i]`` is ``<`` opening ``<A, B>``, return the names and the index of ``>``."""
    names: list[str] = []
    j = i + 1
    while j < len(toks):
        t = toks[j]
        if t.kind == "id" and t.text not in _KEYWORDS:
            names.append(t.text)
        elif t.text == "," and names:
            pass
        elif t.text == ">" and names:
            return names, j
        else:
            return None
        j += 1
    return None


def _generic_args_end(toks: list[_Tok], i: int, is_type: Callable[[_Tok], bool]) -> int | None:
    """If ``toks[i]`` (``<``) opens type arguments of a call ``f<...>(``, return index of ``>``.

    Every identifier inside must name a type (so ``f(a < b, c > (d))`` stays two comparisons).
    """
    depth = 0
    j = i
    while j < len(toks) and j < i + 64:
        t = toks[j]
        if t.text == "<":
            depth += 1
        elif t.text == ">":
            depth -= 1
            if depth == 0:
                return j if j + 1 < len(toks) and toks[j + 1].text == "(" else None
        elif t.kind == "id":
            if t.text not in _TYPE_KEYWORDS and t.text != "_" and not is_type(t):
                return None
        elif t.kind == "num" or t.text in (",", "[", "]", "(", ")"):
            pass
        else:
            return None
        j += 1
    return None


def _bracket_matches(toks: list[_Tok]) -> tuple[dict[int, int], list[int]]:
    """Index of the closing bracket for each ``(``/``{``; and, per token, the index of the
    innermost open bracket around it (-1 at top level)."""
    match: dict[int, int] = {}
    inner: list[int] = []
    stack: list[int] = []
    for i, t in enumerate(toks):
        inner.append(stack[-1] if stack else -1)
        if t.text in ("(", "{"):
            stack.append(i)
        elif t.text in (")", "}") and stack:
            match[stack.pop()] = i
    return match, inner


def _value_shadows(toks: list[_Tok], global_types: set[str]) -> list[tuple[str, int, int]]:
    """Parameters, variables and instances named like a global type shadow it in their scope
    (``control d(packet_out p, ...)`` next to ``parser p(...)``): (name, from, to) ranges."""
    candidates = [i for i, t in enumerate(toks) if t.kind == "id" and t.text in global_types]
    if not candidates:
        return []
    match, inner = _bracket_matches(toks)
    n = len(toks)
    out: list[tuple[str, int, int]] = []
    for i in candidates:
        if i == 0 or i + 1 >= n:
            continue
        p, nxt = toks[i - 1], toks[i + 1].text
        follows_type = (p.kind == "id" and (p.text not in _KEYWORDS or p.text in _TYPE_KEYWORDS)
                        and nxt in (",", ")", ";", "="))
        follows_type = follows_type or (p.text in (">", "]") and nxt in (",", ")", ";", "="))
        follows_type = follows_type or (p.text == ")" and nxt == ";")
        if not follows_type:
            continue
        j = i - 1
        while j >= 0 and toks[j].text not in (";", "{", "}"):
            if toks[j].text in ("typedef", "type"):
                break
            j -= 1
        if j >= 0 and toks[j].text in ("typedef", "type"):
            continue
        opener = inner[i]
        if opener < 0:
            continue
        if toks[opener].text == "{":
            end = match.get(opener, n - 1)
        else:  # a parameter: visible in the body after the parameter list(s)
            k = match.get(opener, n - 1) + 1
            if k < n and toks[k].text == "(":
                k = match.get(k, n - 1) + 1
            if k < n and toks[k].text == "{":
                end = match.get(k, n - 1)
            else:
                end = min(k, n - 1)
        out.append((toks[i].text, toks[i].pos, toks[end].pos))
    return out


def scan(text: str) -> LexInfo:
    """Pre-scan preprocessed P4 text and compute the token reclassifications."""
    toks = _tokenize(text)
    n = len(toks)
    global_types: set[str] = set()
    scopes: list[tuple[set[str], int, int]] = []  # (names, start pos, end pos)

    def prev(i: int) -> str | None:
        return toks[i - 1].text if i > 0 else None

    for i, tok in enumerate(toks):
        if tok.kind != "id" or prev(i) == ".":
            continue
        word = tok.text
        if word in ("header", "struct", "header_union", "enum"):
            j = i + 1
            while j < n and toks[j].text != "{":
                j += 1
            if j - 1 > i and toks[j - 1].kind == "id":
                global_types.add(toks[j - 1].text)
        elif word in ("typedef", "type") and prev(i) in (None, ";", "}", "{", ")") \
                and i + 1 < n and toks[i + 1].text not in (";", "=", ",", ")"):
            j = i + 1
            while j < n and toks[j].text != ";":
                j += 1
            if toks[j - 1].kind == "id":
                global_types.add(toks[j - 1].text)
        elif word in ("extern", "parser", "control", "package") and i + 1 < n:
            nxt = toks[i + 1]
            if nxt.kind != "id" or nxt.text in _TYPE_KEYWORDS:
                continue
            if word == "extern" and not (i + 2 < n and toks[i + 2].text in ("<", "{")):
                continue
            global_types.add(nxt.text)
            if i + 2 < n and toks[i + 2].text == "<":
                lst = _angle_list(toks, i + 2)
                if lst:
                    end = _decl_end(toks, lst[1])
                    scopes.append((set(lst[0]), toks[i + 2].pos, toks[end].pos))
        elif i + 1 < n and toks[i + 1].text == "<" and i > 0 and word not in _KEYWORDS:
            # generic function / method declaration: `T name<A, B>(`, preceded by a type
            p = toks[i - 1]
            if p.kind == "id" and p.text not in _KEYWORDS - _TYPE_KEYWORDS or p.text == ">":
                lst = _angle_list(toks, i + 1)
                if lst and lst[1] + 1 < n and toks[lst[1] + 1].text == "(":
                    end = _decl_end(toks, lst[1])
                    scopes.append((set(lst[0]), p.pos, toks[end].pos))

    info = LexInfo()
    shadows = _value_shadows(toks, global_types)

    def is_type(t: _Tok) -> bool:
        if t.kind != "id":
            return False
        if any(t.text == name and lo <= t.pos <= hi for name, lo, hi in shadows):
            return False
        if t.text in global_types:
            return True
        return any(t.text in names and lo <= t.pos <= hi for names, lo, hi in scopes)

    angle_stack: list[int] = []
    skip_next_gt = False
    for i, tok in enumerate(toks):
        if tok.kind == "id" and is_type(tok):
            info.type_ids.add(tok.pos)
        if tok.text == "<":
            p = toks[i - 1] if i > 0 else None
            if p is None:
                continue
            if p.text in ("bit", "int", "varbit", "tuple", "value_set") or is_type(p):
                angle_stack.append(i)
            elif p.kind == "id" and p.text not in _KEYWORDS:
                pp = toks[i - 2].text if i > 1 else None
                declared = any(lo in (tok.pos, toks[i - 2].pos if i > 1 else -1)
                               for _, lo, _ in scopes)
                if declared:
                    angle_stack.append(i)
                elif pp is not None and (toks[i - 2].kind == "op" or pp in (
                        "return", "else", "in", "out", "inout")) and pp not in (">",):
                    if _generic_args_end(toks, i, is_type) is not None:
                        info.typearg_lt.add(tok.pos)
                        angle_stack.append(i)
        elif tok.text == ">":
            if skip_next_gt:
                skip_next_gt = False
                continue
            if angle_stack:
                angle_stack.pop()
            elif i + 1 < n and toks[i + 1].text == ">" and toks[i + 1].pos == tok.pos + 1:
                info.gt_shift.add(tok.pos)
                skip_next_gt = True
        elif tok.text in (";", "{", "}") and angle_stack:
            angle_stack.clear()
    return info


class TypeNamePostLex:
    """Lark post-lexer applying a ``LexInfo`` computed for the text being parsed."""

    always_accept = ("IDENTIFIER", "LESSTHAN", "MORETHAN")

    def __init__(self) -> None:
        self._local = threading.local()

    def set_info(self, info: LexInfo) -> None:
        self._local.info = info

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        info: LexInfo = self._local.info
        for tok in stream:
            if tok.type == "IDENTIFIER" and tok.start_pos in info.type_ids:
                yield Token.new_borrow_pos("TYPE_IDENTIFIER", tok, tok)
            elif tok.type == "LESSTHAN" and tok.start_pos in info.typearg_lt:
                yield Token.new_borrow_pos("TYPEARG_LT", tok, tok)
            elif tok.type == "MORETHAN" and tok.start_pos in info.gt_shift:
                yield Token.new_borrow_pos("GT_SHIFT", tok, tok)
            else:
                yield tok
