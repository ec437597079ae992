"""Flow-file text: YAML (1.2 booleans, so ``on:`` is a key and ``yes`` is text) or JSON."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.syntax_errors import syntax_error

__all__ = ["parse_text"]


class _Loader(yaml.SafeLoader):
    """A safe loader whose only booleans are true and false."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _first in "tTfF":
    _Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                  [_first])


def parse_text(text: str, *, json_only: bool = False, source: str = "<text>") -> Any:
    """The document in ``text`` (JSON when ``json_only``, else YAML, which reads JSON too).

    Raises:
        FlowDefinitionError: ``dialect-syntax`` naming ``source`` and what is wrong.
    """
    try:
        return json.loads(text) if json_only else yaml.load(text, Loader=_Loader)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        message = syntax_error(exc, source, "JSON" if json_only else "YAML")
        raise FlowDefinitionError(DefinitionIssue("dialect-syntax", message, path="<root>"),
                                  title=f"{source} cannot be read") from None
