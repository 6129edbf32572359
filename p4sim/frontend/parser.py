"""P4_16 parser: the lark LALR grammar (``grammar.lark``) driven with the type-name lexer hack.

Why it exists: turns preprocessed text into the untyped AST (built by ``transform.py``) and
lark's exceptions into one-line ``file:line:col: error: syntax error, unexpected <token>``
messages. The parser tables are built once per process and cached on disk.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading

import lark
from lark import Lark, Token
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedToken,
    VisitError,
)

from p4sim.errors import P4CompileError
from p4sim.frontend import ast as A
from p4sim.frontend.lexhack import TypeNamePostLex, scan
from p4sim.frontend.preprocessor import Preprocessed
from p4sim.frontend.transform import AstBuilder, parse_int_literal

_GRAMMAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grammar.lark")
_lock = threading.Lock()
_parser: Lark | None = None
_postlex = TypeNamePostLex()


def _build(grammar: str, cache: str | bool) -> Lark:
    return Lark(grammar, parser="lalr", lexer="contextual", postlex=_postlex,
                propagate_positions=True, maybe_placeholders=True,
                start=["start", "annotation_body"], cache=cache)


def _get_parser() -> Lark:
    """The LALR parser, built once per process; the grammar analysis (~1 s) is cached on disk
    (written atomically, keyed by grammar and lark version) so later processes load in ~0.1 s."""
    global _parser
    with _lock:
        if _parser is None:
            with open(_GRAMMAR, encoding="utf-8") as fh:
                grammar = fh.read()
            key = hashlib.sha256((grammar + lark.__version__).encode()).hexdigest()[:16]
            final = os.path.join(tempfile.gettempdir(), f"p4sim-grammar-{key}.lark")
            try:
                if os.path.exists(final):
                    _parser = _build(grammar, final)
                else:
                    tmp = f"{final}.{os.getpid()}.{threading.get_ident()}.tmp"
                    _parser = _build(grammar, tmp)
                    os.replace(tmp, final)
            except OSError:
                _parser = _build(grammar, False)
        return _parser


def _describe(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    text = str(tok)
    if tok.type in ("IDENTIFIER", "TYPE_IDENTIFIER"):
        return f"identifier '{text}'"
    if tok.type == "INTEGER":
        return f"integer '{text}'"
    if tok.type == "STRING":
        return f"string {text}"
    if tok.type == "ANNOTATION":
        return f"annotation '{text.split('(')[0]}'"
    return f"'{text}'"


_KEYWORDS = frozenset({
    "action", "actions", "apply", "bool", "bit", "const", "control", "default", "else",
    "entries", "enum", "error", "exit", "extern", "false", "header", "header_union", "if", "in",
    "inout", "int", "key", "match_kind", "out", "package", "parser", "return", "select", "state",
    "string", "struct", "switch", "table", "transition", "true", "tuple", "typedef", "type",
    "value_set", "varbit", "void", "for", "break", "continue"})


def _undeclared_type_hint(text: str, tok: Token) -> str:
    """`` (is 'foo_t' an undeclared type?)`` when an identifier follows another identifier."""
    if tok.type != "IDENTIFIER" or tok.start_pos is None:
        return ""
    m = re.search(r"(?<![.\w])([A-Za-z_]\w*)\s+$", text[:tok.start_pos])
    if m is None or m.group(1) in _KEYWORDS:
        return ""
    return f" (is '{m.group(1)}' an undeclared type?)"


def parse_program(pre: Preprocessed) -> A.Program:
    """Parse preprocessed text into an (unchecked) ``ast.Program``."""
    parser = _get_parser()
    with _lock:
        _postlex.set_info(scan(pre.text))
        try:
            tree = parser.parse(pre.text, start="start")
        except UnexpectedToken as err:
            tok = err.token
            if tok.type == "$END":
                loc = pre.offset_location(max(len(pre.text.rstrip()), 0))
            else:
                loc = pre.location(tok.line or 1, tok.column or 1)
            raise P4CompileError(loc, f"syntax error, unexpected {_describe(tok)}"
                                      f"{_undeclared_type_hint(pre.text, tok)}") from None
        except UnexpectedCharacters as err:
            loc = pre.location(err.line, err.column)
            ch = pre.text[err.pos_in_stream] if err.pos_in_stream < len(pre.text) else "?"
            raise P4CompileError(loc, f"syntax error, unexpected character '{ch}'") from None
        except UnexpectedEOF:
            loc = pre.offset_location(len(pre.text.rstrip()))
            raise P4CompileError(loc, "syntax error, unexpected end of file") from None
    try:
        return AstBuilder(pre).transform(tree)
    except RecursionError:
        raise P4CompileError(pre.location(1, 1), "program nests too deeply") from None
    except VisitError as err:
        if isinstance(err.orig_exc, P4CompileError):
            raise err.orig_exc from None
        meta = getattr(err.obj, "meta", None)
        loc = pre.location(meta.line, meta.column) if meta is not None and not meta.empty else None
        if isinstance(err.orig_exc, RecursionError):
            raise P4CompileError(loc, "expressions or statements nest too deeply for p4sim") from None
        raise P4CompileError(loc, f"internal error while building the AST ({err.rule}): "
                                  f"{type(err.orig_exc).__name__}: {err.orig_exc}") from None


__all__ = ["parse_program", "parse_int_literal", "AstBuilder"]
