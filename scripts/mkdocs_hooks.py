"""mkdocs hook: every page of docs/ is in the guide's navigation.

A page that ``mkdocs.yml``'s ``nav`` does not list is added under "Reference", titled by its first
``# heading``, so a page someone adds never silently drops out of the guide.
"""

from __future__ import annotations

from typing import Any


def _listed(nav: Any) -> set[str]:
    found: set[str] = set()
    for entry in nav if isinstance(nav, list) else []:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found |= _listed(value) if isinstance(value, list) else {value}
    return found


def _title(text: str, fallback: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return fallback


def on_files(files: Any, config: Any) -> Any:
    nav = config["nav"]
    listed = _listed(nav)
    extra = [{_title(f.content_string, f.src_uri): f.src_uri} for f in files.documentation_pages()
             if f.src_uri not in listed]
    if extra:
        reference = next((e for e in nav if isinstance(e, dict) and "Reference" in e), None)
        if reference is None:
            reference = {"Reference": []}
            nav.append(reference)
        reference["Reference"].extend(sorted(extra, key=lambda e: next(iter(e.values()))))
    return files
