"""The html page of ``tether graph --format html``: the charts, drawn in the browser by the mermaid
script shipped with tether (``vendor/mermaid.min.js.gz``, inlined: the page needs no network)."""

from __future__ import annotations

import gzip
from functools import cache
from html import escape
from pathlib import Path

__all__ = ["MERMAID_SCRIPT", "graph_page", "mermaid_script"]

MERMAID_SCRIPT = Path(__file__).with_name("vendor") / "mermaid.min.js.gz"
"""mermaid 11 (MIT), gzip-compressed; see ``vendor/README.md``."""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
  body {{ font-family: system-ui, sans-serif; margin: 2rem; }}
  h2 {{ font-size: 1.1rem; margin-top: 2rem; }}
  details {{ margin-top: 0.5rem; color: #555; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>Solid edges are static transitions and a flow file's routes (labelled with their condition);
dashed edges are transitions made in code (to the targets a node declares) and <code>stay</code>.</p>
{charts}
<script>{mermaid}</script>
<script>
  mermaid.initialize({{ startOnLoad: false, securityLevel: "strict" }});
  mermaid.run({{ querySelector: "pre.mermaid" }}).then(() => {{ document.body.dataset.rendered = "true"; }});
</script>
</body>
</html>
"""

_CHART = """<h2>{heading}</h2>
<pre class="mermaid">
{source}</pre>
<details><summary>mermaid source</summary><pre>{source}</pre></details>
"""


@cache
def mermaid_script() -> str:
    """The shipped mermaid script, safe to inline in a ``<script>`` element."""
    text = gzip.decompress(MERMAID_SCRIPT.read_bytes()).decode("utf-8")
    return text.replace("</script", "<\\/script")


def graph_page(app: str, charts: list[tuple[str, str]]) -> str:
    """A standalone html page drawing ``charts`` (``(heading, mermaid source)`` pairs), offline."""
    body = "".join(_CHART.format(heading=escape(heading), source=escape(source)) for heading, source in charts)
    return _PAGE.format(title=escape(f"tether graph · {app}"), charts=body, mermaid=mermaid_script())
