"""The one YAML reader: a user's file with its nesting bounded, as :mod:`harness.io.jsontext`
bounds JSON, alias bombs and duplicate keys refused (configs, tolerances: every YAML the harness reads).

PyYAML composes and constructs recursively: a document nested a few hundred levels deep raises
``RecursionError`` from deep inside the parser. :func:`node_depth` measures a composed document
without recursion, so a reader can refuse one deeper than :data:`MAX_YAML_DEPTH` with its file, and
:func:`safe_load` is ``yaml.safe_load`` with that bound, the alias bound, one value per key and
located errors.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from harness.errors import InputError
from harness.io.jsontext import MAX_JSON_DEPTH

#: The deepest nesting a YAML input may have (the same bound as JSON).
MAX_YAML_DEPTH = MAX_JSON_DEPTH
#: Most values a YAML input may expand to through aliases (``&a`` / ``*a``): an "alias bomb" of a
#: few hundred bytes expands to billions.
MAX_YAML_VALUES = 100_000


class StrictLoader(yaml.SafeLoader):
    """``safe_load`` that refuses duplicate keys (naming both lines) instead of keeping the last."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = (key_node.tag, key_node.value)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key_node.value!r} on lines {seen[key]} and {line} (a YAML mapping "
                        "keeps only one: remove or rename one of them)",
                        key_node.start_mark,
                    )
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def expanded_size(root: Any, cap: int = MAX_YAML_VALUES) -> int:
    """How many nodes the document has with every alias expanded, counted without expanding (each
    node's size memoised), stopping past ``cap``."""

    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [x for pair in node.value for x in pair]
        else:
            sizes[id(node)] = 1
            continue
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        sizes[id(node)] = min(1 + sum(sizes.get(id(c), 0) for c in children), cap + 1)
    return sizes.get(id(root), 0)


def node_depth(root: Any) -> int:
    """How deep a composed YAML node's sequences and mappings nest (a scalar is 0), iteratively;
    an alias is one node, measured once."""

    deepest = 0
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        node, d = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [x for pair in node.value for x in pair]
        else:
            continue
        d += 1
        deepest = max(deepest, d)
        if deepest > MAX_YAML_DEPTH:
            return deepest
        stack.extend((c, d) for c in children)
    return deepest


def too_deep(path: str | os.PathLike[str] | None = None) -> InputError:
    return InputError(f"invalid YAML: nested more than {MAX_YAML_DEPTH} levels deep", path=path)


def safe_load(text: str, *, path: str | os.PathLike[str] | None = None) -> Any:
    """``yaml.safe_load(text)`` refusing nesting past :data:`MAX_YAML_DEPTH`, more than
    :data:`MAX_YAML_VALUES` values through aliases and a key given twice; errors name ``path`` and
    the line."""
    try:
        # the reader checks every character when it is made: a control character raises here
        loader = StrictLoader(text)
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1 if isinstance(e.position, int) else None
        code = e.character if isinstance(e.character, int) else ord(str(e.character)[:1] or "\0")
        raise InputError(
            f"invalid YAML: character U+{code:04X} is not allowed in YAML text (control characters must be "
            'written as escapes inside double quotes, e.g. "\\x01")',
            path=path,
            line=line,
        ) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if node_depth(node) > MAX_YAML_DEPTH:
            raise too_deep(path)
        if expanded_size(node) > MAX_YAML_VALUES:
            raise InputError(
                f"the YAML expands to more than {MAX_YAML_VALUES:,} values through aliases (&anchor/*alias); "
                "write the values out",
                path=path,
            )
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"invalid YAML: {problem}", path=path, line=mark.line + 1 if mark else None) from None
    except RecursionError:
        raise too_deep(path) from None
    finally:
        loader.dispose()
