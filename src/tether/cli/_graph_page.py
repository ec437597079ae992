"""The html page of ``tether graph --format html``: the charts, drawn by mermaid in the browser."""

from __future__ import annotations

from html import escape

__all__ = ["MERMAID_URL", "graph_page"]

MERMAID_URL = "https://cdn.jsdelivr.net/npm/mermaid@11/dist/mermaid.esm.min.mjs"
"""Where the page loads mermaid from (the browser fetches it; tether downloads nothing)."""

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
<p>Solid edges are static transitions; dashed edges are transitions made in code (to the targets a
node declares) and <code>stay</code>.</p>
{charts}
<script type="module">
  import mermaid from "{mermaid}";
  mermaid.initialize({{ startOnLoad: false, securityLevel: "strict" }});
  await mermaid.run({{ querySelector: "pre.mermaid" }});
  document.body.dataset.rendered = "true";
</script>
</body>
</html>
"""

_CHART = """<h2>{heading}</h2>
<pre class="mermaid">
{source}</pre>
<details><summary>mermaid source</summary><pre>{source}</pre></details>
"""


def graph_page(app: str, charts: list[tuple[str, str]]) -> str:
    """A standalone html page drawing ``charts`` (``(heading, mermaid source)`` pairs)."""
    body = "".join(_CHART.format(heading=escape(heading), source=escape(source)) for heading, source in charts)
    return _PAGE.format(title=escape(f"tether graph · {app}"), charts=body, mermaid=MERMAID_URL)
