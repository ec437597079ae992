"""The guide: it builds with ``mkdocs build --strict`` (a warning fails), and the CLI reference
documents every command and option the CLI has."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer

from tether.cli._app import app

ROOT = Path(__file__).resolve().parents[2]


def _commands(group: click.Group, prefix: str) -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            found.extend(_commands(command, path))
        else:
            found.append((path, command))
    return found


def test_the_cli_reference_names_every_command_and_option() -> None:
    reference = (ROOT / "docs" / "cli.md").read_text()
    missing: list[str] = []
    for path, command in _commands(typer.main.get_command(app), "tether"):  # type: ignore[arg-type]
        if path not in reference:
            missing.append(path)
        for param in command.params:
            missing.extend(f"{path} {opt}" for opt in param.opts if opt.startswith("--") and opt != "--help"
                           and f"`{opt}`" not in reference and f"[{opt}" not in reference)
    assert missing == [], f"docs/cli.md does not document: {missing}"


def test_the_guide_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("material", reason="the guide needs the docs extra: pip install -e '.[docs]'")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "concepts" / "index.html").exists()
    pages = {p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    built = (tmp_path / "site" / "index.html").read_text()
    unlisted = [p for p in pages if p != "index" and f'href="{p}/"' not in built]
    assert unlisted == [], f"pages missing from the navigation: {unlisted}"


def test_the_drawn_example_in_the_cli_reference_is_what_tether_graph_draws() -> None:
    import importlib.util

    from tether.flow.mermaid import agent_to_mermaid

    spec = importlib.util.spec_from_file_location("guide_pizza", ROOT / "examples" / "pizza.py")
    assert spec and spec.loader
    pizza = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pizza)
    drawn = (ROOT / "docs" / "cli.md").read_text().split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert drawn == agent_to_mermaid(pizza.agent)
