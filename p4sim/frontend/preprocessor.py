"""A C-style preprocessor for P4 source, keeping a line map back to the original files.

Why it exists: P4 programs use ``#include``, ``#define`` and conditionals the way p4c's ``cpp``
pass expects. p4sim has no cpp, so this module implements the subset P4 programs use
(``#include "x"``/``<x>`` with ``-I`` paths, object-like ``#define``, ``#undef``,
``#if/#ifdef/#ifndef/#elif/#else/#endif`` with integer expressions and ``defined``) and records,
for each output line, the file and line it came from, so every later error points at the
original ``file:line:col``. ``<core.p4>`` and ``<v1model.p4>`` resolve to the declaration files
shipped in ``p4sim/frontend/p4include`` first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from p4sim.errors import P4CompileError, P4UnsupportedError, SourceLocation

P4INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "p4include")
MAX_INCLUDE_DEPTH = 64
# bounds on macro expansion per source line: a 30-level doubling #define would otherwise expand to
# 2**30 tokens (hours, gigabytes); real programs stay orders of magnitude below these
MAX_MACRO_EXPANSIONS = 100_000
MAX_MACRO_DEPTH = 200
MAX_EXPANDED_CHARS = 4_000_000

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIRECTIVE_RE = re.compile(r"^\s*#\s*([A-Za-z_]*)(.*)$", re.S)


@dataclass
class Preprocessed:
    """Preprocessor output: ``text`` and, per output line (0-based), its (file, line) origin."""

    text: str
    line_map: list[tuple[str, int]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def location(self, line: int, col: int) -> SourceLocation:
        """Map a 1-based output line/column to the original source location."""
        if 1 <= line <= len(self.line_map):
            f, ln = self.line_map[line - 1]
            return SourceLocation(f, ln, col)
        if self.line_map:
            f, ln = self.line_map[-1]
            return SourceLocation(f, ln, col)
        return SourceLocation("<input>", line, col)

    def offset_location(self, offset: int) -> SourceLocation:
        """Map a character offset in ``text`` to the original source location."""
        line = self.text.count("\n", 0, offset) + 1
        start = self.text.rfind("\n", 0, offset) + 1
        return self.location(line, offset - start + 1)


def read_source(path: str) -> str:
    """The text of the P4 file at ``path``; invalid UTF-8 is an error at its line and column.
    (``OSError`` propagates: callers word it.)"""
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise P4CompileError(SourceLocation(path, line, col),
                             f"invalid UTF-8 (byte 0x{data[err.start]:02x}): P4 source must be UTF-8 text") from None


def strip_comments(text: str, filename: str) -> str:
    """Replace comments by spaces (keeping newlines, so lines and columns do not move)."""
    out: list[str] = []
    i, n = 0, len(text)
    line = 1
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                col = i - text.rfind("\n", 0, i)
                raise P4CompileError(SourceLocation(filename, line, col), "unterminated comment")
            chunk = text[i:j + 2]
            out.append("".join(ch if ch == "\n" else " " for ch in chunk))
            line += chunk.count("\n")
            i = j + 2
        else:
            if c == "\n":
                line += 1
            out.append(c)
            i += 1
    return "".join(out)


_EXPAND_TOKEN_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"?|[A-Za-z_][A-Za-z0-9_]*|[0-9][A-Za-z0-9_]*|.', re.S)
_IDENT_SUB_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*')


@dataclass
class Macro:
    """A ``#define``: ``params`` is None for object-like macros."""

    params: list[str] | None
    body: str


def _substitute_params(body: str, values: dict[str, str]) -> str:
    def repl(m: re.Match[str]) -> str:
        tok = m.group(0)
        return tok if tok[0] == '"' else values.get(tok, tok)

    return _IDENT_SUB_RE.sub(repl, body)


def _split_macro_args(text: str, start: int) -> tuple[list[str], int] | None:
    """Split ``(a, (b, c), "x,y")`` starting at ``text[start] == '('``; None if unbalanced."""
    depth = 0
    args: list[str] = []
    cur: list[str] = []
    i = start
    while i < len(text):
        c = text[i]
        if c == '"':
            m = re.compile(r'"(?:[^"\\\n]|\\.)*"').match(text, i)
            chunk = m.group(0) if m else c
            cur.append(chunk)
            i += len(chunk)
            continue
        if c == "(":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append("".join(cur))
                return args, i + 1
        elif c == "," and depth == 1:
            args.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return None


class _CondEval:
    """Evaluates ``#if`` expressions (C integer semantics, unknown identifiers are 0)."""

    _BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
               ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

    def __init__(self, text: str, loc: SourceLocation) -> None:
        self.loc = loc
        self.toks = re.findall(r"0[xX][0-9a-fA-F]+|\d+|[A-Za-z_]\w*|\|\||&&|==|!=|<=|>=|<<|>>|\S",
                               text)
        self.pos = 0

    def error(self, msg: str) -> P4CompileError:
        return P4CompileError(self.loc, f"invalid #if expression: {msg}")

    def peek(self) -> str | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end of expression")
        self.pos += 1
        return tok

    def evaluate(self) -> int:
        value = self.ternary()
        if self.peek() is not None:
            raise self.error(f"unexpected '{self.peek()}'")
        return value

    def ternary(self) -> int:
        cond = self.binary(0)
        if self.peek() == "?":
            self.take()
            a = self.ternary()
            if self.take() != ":":
                raise self.error("expected ':'")
            b = self.ternary()
            return a if cond else b
        return cond

    def binary(self, level: int) -> int:
        if level == len(self._BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._BINARY[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = self._apply(op, left, right)
        return left

    def _apply(self, op: str, a: int, b: int) -> int:
        if op in ("/", "%") and b == 0:
            raise self.error("division by zero")
        ops = {"||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)),
               "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
               "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
               ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
               "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b,
               "-": lambda: a - b, "*": lambda: a * b,
               "/": lambda: int(a / b), "%": lambda: a - int(a / b) * b}
        return ops[op]()

    def unary(self) -> int:
        tok = self.take()
        if tok == "!":
            return int(not self.unary())
        if tok == "-":
            return -self.unary()
        if tok == "+":
            return self.unary()
        if tok == "~":
            return ~self.unary()
        if tok == "(":
            v = self.ternary()
            if self.take() != ")":
                raise self.error("expected ')'")
            return v
        if tok[0].isdigit():
            return int(tok, 0) if not re.fullmatch(r"0\d+", tok) else int(tok, 8)
        if _IDENT_RE.fullmatch(tok):
            return 0
        raise self.error(f"unexpected '{tok}'")


class Preprocessor:
    """Runs the preprocessor over one top-level file and its includes."""

    def __init__(self, include_dirs: Sequence[str] = (), confine_to: Sequence[str] | None = None,
                 defines: Mapping[str, str] | None = None) -> None:
        self.include_dirs = [str(d) for d in include_dirs]
        # a program from the wire (a pushed device config) may include only its own files and the
        # shipped architecture files: every include must resolve (symlinks followed) inside these
        self.confine: list[str] | None = None
        if confine_to is not None:
            self.confine = [os.path.realpath(d) for d in [*confine_to, P4INCLUDE_DIR]]
        # predefined object-like macros (a compiler's -D, e.g. __TARGET_TOFINO__ for TNA)
        self.macros: dict[str, Macro] = {k: Macro(None, str(v)) for k, v in (defines or {}).items()}
        self.out_lines: list[str] = []
        self.line_map: list[tuple[str, int]] = []
        self.files: list[str] = []
        self._expand_depth = 0
        self._expansions = 0
        self._expanded_chars = 0

    # ---------------------------------------------------------------- macro expansion
    def expand(self, text: str, hide: frozenset[str] = frozenset(),
               loc: SourceLocation | None = None) -> str:
        """Expand object-like and function-like macros in ``text`` (not inside strings), within
        the ``MAX_MACRO_*`` bounds (a one-line error beyond them)."""
        if not self.macros:
            return text
        if self._expand_depth == 0:
            self._expansions = self._expanded_chars = 0
        if self._expand_depth >= MAX_MACRO_DEPTH:
            raise P4CompileError(loc, f"macro expansion nests deeper than {MAX_MACRO_DEPTH} levels")
        self._expand_depth += 1
        try:
            return self._expand(text, hide, loc)
        finally:
            self._expand_depth -= 1

    def _count_expansion(self, tok: str, body: str, loc: SourceLocation | None) -> None:
        self._expansions += 1
        self._expanded_chars += len(body)
        if self._expansions > MAX_MACRO_EXPANSIONS or self._expanded_chars > MAX_EXPANDED_CHARS:
            raise P4CompileError(loc, f"macro expansion too large (expanding '{tok}': more than "
                                      f"{MAX_MACRO_EXPANSIONS} expansions or {MAX_EXPANDED_CHARS} characters "
                                      f"on one line)")

    def _expand(self, text: str, hide: frozenset[str], loc: SourceLocation | None) -> str:
        out: list[str] = []
        pos = 0
        n = len(text)
        while pos < n:
            m = _EXPAND_TOKEN_RE.match(text, pos)
            assert m is not None
            tok = m.group(0)
            pos = m.end()
            if tok[0] == '"' or tok not in self.macros or tok in hide:
                out.append(tok)
                continue
            macro = self.macros[tok]
            self._count_expansion(tok, macro.body, loc)
            if macro.params is None:
                out.append(self.expand(macro.body, hide | {tok}, loc))
                continue
            j = pos
            while j < n and text[j] in " \t":
                j += 1
            call = _split_macro_args(text, j) if j < n and text[j] == "(" else None
            if call is None:
                out.append(tok)  # a function-like macro name not followed by arguments
                continue
            args, pos = call
            if args == [""] and not macro.params:
                args = []
            if len(args) != len(macro.params):
                raise P4CompileError(loc, f"macro '{tok}' expects {len(macro.params)} "
                                          f"argument(s), got {len(args)}")
            values = {p: self.expand(a.strip(), hide, loc) for p, a in
                      zip(macro.params, args, strict=True)}
            body = _substitute_params(macro.body, values)
            body = re.sub(r"\s*##\s*", "", body)
            out.append(self.expand(body, hide | {tok}, loc))
        return "".join(out)

    def _open_macro_call(self, line: str) -> bool:
        """True if ``line`` calls a function-like macro whose ``(`` is not closed on it."""
        if not any(m.params is not None for m in self.macros.values()):
            return False
        for m in _IDENT_SUB_RE.finditer(line):
            macro = self.macros.get(m.group(0))
            if macro is None or macro.params is None:
                continue
            j = m.end()
            while j < len(line) and line[j] in " \t":
                j += 1
            if j >= len(line) or (line[j] == "(" and _split_macro_args(line, j) is None):
                return True
        return False

    def _eval_condition(self, expr: str, loc: SourceLocation) -> bool:
        # defined(X) / defined X before macro expansion
        def defined(m: re.Match[str]) -> str:
            return "1" if m.group(1) in self.macros else "0"

        expr = re.sub(r"\bdefined\s*\(\s*([A-Za-z_]\w*)\s*\)", defined, expr)
        expr = re.sub(r"\bdefined\s+([A-Za-z_]\w*)", defined, expr)
        expr = self.expand(expr, loc=loc)
        expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr)
        if not expr.strip():
            raise P4CompileError(loc, "#if with no expression")
        return bool(_CondEval(expr, loc).evaluate())

    # ---------------------------------------------------------------- includes
    def _resolve_include(self, name: str, angled: bool, current: str) -> str | None:
        candidates: list[str] = []
        if angled:
            candidates.append(P4INCLUDE_DIR)
            candidates.extend(self.include_dirs)
        else:
            candidates.append(os.path.dirname(os.path.abspath(current)))
            candidates.extend(self.include_dirs)
            candidates.append(P4INCLUDE_DIR)
        if self.confine is not None and (os.path.isabs(name) or "\0" in name):
            return None
        for d in candidates:
            path = os.path.join(d, name)
            if self.confine is not None and not self._inside_confinement(path):
                continue
            if os.path.isfile(path):
                return path
        return None

    def _inside_confinement(self, path: str) -> bool:
        real = os.path.realpath(path)
        return any(real == root or real.startswith(root + os.sep) for root in self.confine or ())

    def run_file(self, path: str, text: str, depth: int = 0) -> None:
        self.files.append(path)
        text = strip_comments(text.replace("\r\n", "\n"), path)
        lines = text.split("\n")
        # (taking, any_branch_taken, seen_else) per open conditional; plus opening location
        stack: list[tuple[bool, bool, bool, SourceLocation]] = []
        i = 0
        while i < len(lines):
            start = i
            line = lines[i]
            # join continuation lines (keeps output line count by emitting blanks)
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i]
            i += 1
            nlines = i - start
            active = all(s[0] for s in stack)
            m = _DIRECTIVE_RE.match(line)
            if m:
                col = line.index("#") + 1
                loc = SourceLocation(path, start + 1, col)
                self._directive(m.group(1), m.group(2).strip(), loc, stack, active, path, depth)
                for k in range(nlines):
                    if m.group(1) != "include" or not active:
                        self._emit("", path, start + 1 + k)
                continue
            if active:
                # a function-like macro call whose arguments continue on the next lines
                while self._open_macro_call(line) and i < len(lines) and \
                        not _DIRECTIVE_RE.match(lines[i]):
                    line = line + " " + lines[i]
                    i += 1
                nlines = i - start
                self._emit(self.expand(line, loc=SourceLocation(path, start + 1, 1)), path,
                           start + 1)
                for k in range(1, nlines):
                    self._emit("", path, start + 1 + k)
            else:
                for k in range(nlines):
                    self._emit("", path, start + 1 + k)
        if stack:
            raise P4CompileError(stack[-1][3], "unterminated conditional directive")

    def _emit(self, line: str, path: str, lineno: int) -> None:
        self.out_lines.append(line)
        self.line_map.append((path, lineno))

    def _directive(self, name: str, rest: str, loc: SourceLocation,
                   stack: list[tuple[bool, bool, bool, SourceLocation]], active: bool,
                   path: str, depth: int) -> None:
        if name in ("if", "ifdef", "ifndef"):
            if not active:
                stack.append((False, True, False, loc))
                return
            if name == "if":
                cond = self._eval_condition(rest, loc)
            else:
                ident = rest.split()[0] if rest.split() else ""
                if not _IDENT_RE.fullmatch(ident):
                    raise P4CompileError(loc, f"#{name} expects a macro name")
                cond = (ident in self.macros) == (name == "ifdef")
            stack.append((cond, cond, False, loc))
            return
        if name in ("elif", "else", "endif"):
            if not stack:
                raise P4CompileError(loc, f"#{name} without #if")
            taking, taken, seen_else, open_loc = stack[-1]
            if name == "endif":
                stack.pop()
                return
            if seen_else:
                raise P4CompileError(loc, f"#{name} after #else")
            parent_active = all(s[0] for s in stack[:-1])
            if name == "else":
                stack[-1] = (parent_active and not taken, True, True, open_loc)
            else:
                cond = (parent_active and not taken and self._eval_condition(rest, loc))
                stack[-1] = (cond, taken or cond, False, open_loc)
            return
        if not active:
            return
        if name == "include":
            self._include(rest, loc, path, depth)
        elif name == "define":
            m = re.match(r"([A-Za-z_]\w*)(\(([^)]*)\))?(.*)$", rest, re.S)
            if not m:
                raise P4CompileError(loc, "#define expects a macro name")
            params = None
            if m.group(2) is not None:
                params = [p.strip() for p in m.group(3).split(",")] if m.group(3).strip() else []
                if any(not _IDENT_RE.fullmatch(p) for p in params):
                    raise P4UnsupportedError(loc, f"macro '{m.group(1)}' with parameters "
                                                  f"'{m.group(3).strip()}'")
            self.macros[m.group(1)] = Macro(params, m.group(4).strip())
        elif name == "undef":
            self.macros.pop(rest.split()[0] if rest.split() else "", None)
        elif name == "error":
            raise P4CompileError(loc, f"#error {rest}".rstrip())
        elif name in ("pragma", "warning", "line", ""):
            return
        else:
            raise P4CompileError(loc, f"unknown preprocessor directive '#{name}'")

    def _include(self, rest: str, loc: SourceLocation, path: str, depth: int) -> None:
        rest = self.expand(rest, loc=loc).strip()
        m = re.fullmatch(r'"([^"]+)"|<([^>]+)>', rest)
        if not m:
            raise P4CompileError(loc, f"#include expects \"FILE\" or <FILE>, got '{rest}'")
        name = m.group(1) or m.group(2)
        target = self._resolve_include(name, m.group(2) is not None, path)
        if target is None:
            raise P4CompileError(loc, f"cannot find include file '{name}'")
        if depth >= MAX_INCLUDE_DEPTH:
            raise P4CompileError(loc, f"#include nested too deeply (recursive include of '{name}'?)")
        try:
            text = read_source(target)
        except OSError as err:
            if self.confine is not None:    # the same answer as for a path that does not exist
                raise P4CompileError(loc, f"cannot find include file '{name}'") from None
            raise P4CompileError(loc, f"cannot read include file '{name}': {err}") from None
        self.run_file(target, text, depth + 1)


def preprocess(text: str, filename: str = "<string>", include_dirs: Sequence[str] = (),
               confine_to: Sequence[str] | None = None, defines: Mapping[str, str] | None = None) -> Preprocessed:
    """Preprocess ``text`` (the contents of ``filename``). With ``confine_to``, ``#include``
    resolves only to files inside those directories or the shipped ``p4include``."""
    pp = Preprocessor(include_dirs, confine_to, defines)
    pp.run_file(filename, text)
    return Preprocessed("\n".join(pp.out_lines) + "\n", pp.line_map, pp.files)
