"""Find the python samples of README.md and docs/, their ``<!-- not-run: why -->`` markers, and
the samples a page tells the reader to save as a file (``<!-- file: NAME -->`` on the line before
the fence; a later block marked with the same name is added to that file, as the page says)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.+?)\s*-->\s*$")
FILE = re.compile(r"<!--\s*file:\s*(\S+?)\s*-->\s*$")


@dataclass(frozen=True)
class Sample:
    page: Path
    line: int
    code: str
    not_run: str | None
    file: str | None = None

    @property
    def is_test_file(self) -> bool:
        """Whether the page saves this sample as (part of) a pytest file."""
        return self.file is not None and Path(self.file).name.startswith("test_")

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def samples(page: Path) -> list[Sample]:
    """The python samples of ``page``, in order."""
    found: list[Sample] = []
    for sample, language in _fenced(page):
        if language == "python":
            found.append(sample)
    return found


def saved_files(page: Path) -> dict[str, str]:
    """The files the page tells the reader to save (any language), by name, blocks of one name joined."""
    files: dict[str, str] = {}
    for sample, _ in _fenced(page):
        if sample.file is not None:
            files[sample.file] = files.get(sample.file, "") + ("\n\n" if sample.file in files else "") + sample.code
    return files


def _fenced(page: Path) -> list[tuple[Sample, str]]:
    text = page.read_text()
    found: list[tuple[Sample, str]] = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker, file = NOT_RUN.search(before), FILE.search(before)
        line = text.count("\n", 0, match.start()) + 2
        found.append((Sample(page, line, match.group(2), marker.group(1) if marker else None,
                             file.group(1) if file else None), match.group(1)))
    return found


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))
