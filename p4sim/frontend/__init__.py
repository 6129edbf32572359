"""p4sim's P4_16 front end: preprocess, parse and type-check a program into a typed AST.

Public API: ``load_program(path, include_dirs)`` returns a checked ``ast.Program`` or raises
``P4CompileError``; ``parse_source(text, filename)`` parses (without checking) for tests;
``check_source(text, filename)`` does both. The AST contract (what the checker fills in) is
documented at the top of ``ast.py``.

Stages: ``preprocessor`` (cpp subset with a line map) -> ``lexhack`` (type-name pre-scan) ->
``parser`` + ``grammar.lark`` (LALR) -> ``typecheck`` (with ``typeresolve``, ``exprcheck``,
``callcheck``, ``tablecheck``, ``v1check``, ``constfold``).

Supported: the P4_16 language as p4c's v1model programs use it -- constants, typedefs and
``type``, plain and serializable enums, errors, match kinds, headers, header stacks and unions,
structs, tuples, ``bit``/``int``/``bool``/``varbit``; parsers (extract, lookahead, advance,
verify, select with masks/ranges/tuples/value sets, sub-parsers); controls with actions,
tables (every match kind, const entries with priorities and ``@priority``, action profiles and
selectors, direct counters/meters), ``switch``, ``exit``, ``return``, functions (generic ones
specialised per type-argument list), for loops, compound assignments, direct application,
parsers and controls with constructor parameters (values, parser/control instances,
counter/meter/register instances); all v1model externs; generic parsers and controls (per
instantiation). Rejected as ``unsupported``: other extern-typed constructor parameters,
abstract extern methods, constructs BMv2 refuses to load (``HashAlgorithm.random``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from p4sim.frontend import ast

__all__ = ["ast", "load_program", "parse_source", "check_source"]


def parse_source(text: str, filename: str = "<string>", include_dirs: Sequence[str] = (),
                 confine_to: Sequence[str] | None = None, defines: Mapping[str, str] | None = None) -> ast.Program:
    """Preprocess and parse ``text`` (no type checking). ``confine_to``: see ``preprocess``.
    The program's ``source_files`` lists every file the preprocessor read."""
    from p4sim.errors import P4CompileError, SourceLocation
    from p4sim.frontend.parser import parse_program
    from p4sim.frontend.preprocessor import preprocess

    try:
        pre = preprocess(text, filename, include_dirs, confine_to, defines)
        program = parse_program(pre)
        program.source_files = list(pre.files)
        return program
    except P4CompileError:
        raise
    except RecursionError:
        raise P4CompileError(SourceLocation(filename, 1, 1), "program nests too deeply") from None
    except Exception as exc:  # noqa: BLE001 - never a traceback for users
        raise P4CompileError(SourceLocation(filename, 1, 1), f"internal error while parsing: "
                             f"{type(exc).__name__}: {exc}") from None


def check_source(text: str, filename: str = "<string>", include_dirs: Sequence[str] = (),
                 confine_to: Sequence[str] | None = None, defines: Mapping[str, str] | None = None) -> ast.Program:
    """Preprocess, parse and type-check ``text``."""
    from p4sim.frontend.typecheck import check_program

    return check_program(parse_source(text, filename, include_dirs, confine_to, defines))


def load_program(path: str, include_dirs: Sequence[str] = (),
                 confine_to: Sequence[str] | None = None, defines: Mapping[str, str] | None = None) -> ast.Program:
    """Load, preprocess, parse and type-check the P4 file at ``path``. With ``confine_to``
    (programs from the wire), includes resolve only inside those directories and the shipped
    architecture files."""
    from p4sim.errors import P4CompileError, SourceLocation
    from p4sim.frontend.preprocessor import read_source

    try:
        text = read_source(path)
    except OSError as err:
        raise P4CompileError(SourceLocation(path, 1, 1), f"cannot read file: {err.strerror}") from None
    return check_source(text, path, include_dirs, confine_to, defines)
