"""Find the python samples of README.md and docs/, and their ``<!-- not-run: why -->`` markers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Sample:
    page: Path
    line: int
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def samples(page: Path) -> list[Sample]:
    text = page.read_text()
    found: list[Sample] = []
    for match in FENCE.finditer(text):
        if match.group(1) != "python":
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        line = text.count("\n", 0, match.start()) + 2
        found.append(Sample(page, line, match.group(2), marker.group(1) if marker else None))
    return found


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))
