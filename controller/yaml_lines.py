"""YAML loading that remembers where every value came from, so errors can say ``file:line``.

``load_with_lines(text, file)`` returns ``(data, lines)``: plain Python data (mapping keys as
strings, so JSON Schema can check them) and ``{path: line}`` for every mapping key and list item,
where ``path`` is the tuple of keys/indexes leading to the value. Duplicate keys are errors.

Expansion is bounded: aliases may repeat at most ``max(MIN_ALIAS_BUDGET, len(text))`` values in
all (a "billion laughs" file is refused in milliseconds with a one-line error instead of growing
to gigabytes) and values nest at most ``MAX_DEPTH`` deep.
"""

from __future__ import annotations

import yaml

from controller.errors import ConfigError

Path_ = tuple[object, ...]


# libyaml's parser when PyYAML was built with it (10x faster on a 10,000-route file).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR = "tag:yaml.org,2002:str"
MIN_ALIAS_BUDGET = 20_000    # values aliases may repeat, at least (more for a larger file)
MAX_DEPTH = 64               # nesting of mappings and lists (the network YAML needs about 6)


def load_with_lines(text: str, file: str) -> tuple[object, dict[Path_, int]]:
    loader = _LOADER(text)
    lines: dict[Path_, int] = {}
    seen: set[int] = set()
    ok = False
    try:
        node = loader.get_single_node()
        if node is None:
            ok = True
            return None, lines

        budget = max(MIN_ALIAS_BUDGET, len(text))
        repeated = 0

        def guard(n: yaml.Node, path: Path_) -> None:
            nonlocal repeated
            if id(n) in seen:               # reached again through an alias: count its items too
                repeated += 1 + len(n.value)
                if repeated > budget:
                    raise ConfigError(file, n.start_mark.line + 1, ".".join(map(str, path)),
                                      f"aliases expand to more than {budget} values (alias bomb?)")
            else:
                seen.add(id(n))
            if len(path) > MAX_DEPTH:
                raise ConfigError(file, n.start_mark.line + 1, ".".join(map(str, path[:3])) + "...",
                                  f"values nested more than {MAX_DEPTH} deep")

        def construct(n: yaml.Node) -> object:
            """PyYAML's constructor; its own bugs on odd tagged values (``!!timestamp 2001-12-14x``
            raises AttributeError, ``!!int x`` ValueError) become one-line errors too."""
            try:
                return loader.construct_object(n, deep=True)
            except yaml.YAMLError:
                raise
            except (ValueError, TypeError, AttributeError, OverflowError, KeyError, IndexError) as err:
                raise ConfigError(file, n.start_mark.line + 1, "", f"cannot read the {n.tag.rsplit(':', 1)[-1]} "
                                  f"value {str(n.value)[:40]!r} ({type(err).__name__})") from None

        def scalar(n: yaml.Node) -> object:
            # plain strings (most keys and values) skip the constructor's bookkeeping
            if n.tag == _STR and type(n) is yaml.ScalarNode:
                return n.value
            return construct(n)

        def convert(n: yaml.Node, path: Path_) -> object:
            if path not in lines:
                lines[path] = n.start_mark.line + 1
            if type(n) is yaml.ScalarNode:
                return scalar(n)
            guard(n, path)
            if isinstance(n, yaml.MappingNode):
                loader.flatten_mapping(n)
                out: dict[str, object] = {}
                for key_node, value_node in n.value:
                    key = scalar(key_node)
                    if not isinstance(key, (str, int, float, bool)) or key is None:
                        raise ConfigError(file, key_node.start_mark.line + 1, ".".join(map(str, path)),
                                          f"unsupported key {key!r}")
                    skey = str(key).lower() if isinstance(key, bool) else str(key)
                    if skey in out:
                        raise ConfigError(file, key_node.start_mark.line + 1,
                                          ".".join(map(str, (*path, skey))), "duplicate key")
                    lines[(*path, skey)] = key_node.start_mark.line + 1
                    out[skey] = convert(value_node, (*path, skey))
                return out
            if isinstance(n, yaml.SequenceNode):
                return [convert(item, (*path, i)) for i, item in enumerate(n.value)]
            return construct(n)

        data = convert(node, ()), lines
        ok = True
        return data
    except RecursionError:
        raise ConfigError(file, None, "", f"values nested too deeply (at most {MAX_DEPTH} levels)") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(file, line, "", f"malformed YAML: {problem}") from None
    finally:
        loader.dispose()
        # the nested functions above form a reference cycle (convert calls itself) that keeps
        # these alive until a full collection, which the controller pauses: empty them now
        seen.clear()
        if not ok:
            lines.clear()


def line_of(lines: dict[Path_, int], path: Path_) -> int | None:
    """The line of ``path`` or of its nearest ancestor that has one."""
    path = tuple(path)
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())
