"""YAML that refuses what would change a file's meaning silently: a key given twice in one
mapping (PyYAML keeps the last value without a word)."""

from __future__ import annotations

from typing import Any


class DuplicateKey(Exception):
    def __init__(self, key: Any, line: int):
        super().__init__(f"{key!r} at line {line}")
        self.key, self.line = key, line


def unique_key_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader that refuses a key given twice in one mapping (``acks: [1]`` then
        ``acks: [-1]`` would otherwise flip a case's meaning without a word)."""

        def construct_mapping(self, node, deep=False):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise DuplicateKey(key, key_node.start_mark.line + 1)
                seen.add(key)
            return super().construct_mapping(node, deep)

    return Loader
