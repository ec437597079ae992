"""``tether graph``: links between flows, dashed edges to the targets a node declares for its code
transitions, and ``--format html``."""

from __future__ import annotations

from html import unescape
from pathlib import Path

from cli_helpers import EXAMPLES, tether

TWO_FLOWS = """\
from tether import Agent, Field, Flow, action, collect, end, goto, on_message, reply, start_flow

def route(state, ctx):
    return start_flow("refund") if state.get("topic") == "refund" else goto("bye")

menu = Flow("menu", nodes=[
    collect("topic", fields=["topic"], ask="Orders or refunds?"),
    action("route", route, targets=[start_flow("refund"), "bye"]),
    reply("bye", response="Bye.", next=start_flow("orders")),
], on=[on_message()])
orders = Flow("orders", nodes=[reply("status", response="Shipped.", next=start_flow("{topic}"))])
refund = Flow("refund", nodes=[reply("sorry", response="Refund opened.", next=end("refund"))])
agent = Agent("Desk", fields={"topic": Field("string")}, flows=[menu, orders, refund])
"""


def _app(tmp_path: Path) -> Path:
    path = tmp_path / "desk.py"
    path.write_text(TWO_FLOWS)
    return path


def test_start_flow_links_flows_and_declared_targets_are_dashed(tmp_path: Path) -> None:
    done = tether("graph", _app(tmp_path))
    assert done.code == 0, done.err
    lines = [line.strip() for line in done.out.splitlines()]
    assert lines[:3] == ["%% agent Desk", "flowchart TD", "%% flow menu"]
    assert 'subgraph refund__flow["refund"]' in lines
    assert "menu__n_bye -->|start_flow| orders__start" in lines            # a static start_flow: solid
    assert "menu__n_route -.->|start_flow| refund__start" in lines         # declared in targets: dashed
    assert "menu__n_route -.-> menu__n_bye" in lines
    assert not [line for line in lines if line.startswith("menu__n_route") and "((?))" in line]
    # a template names no flow until run time: a terminal that shows it
    assert "orders__n_status --> orders__t_flow__topic_" in lines
    assert "orders__t_flow__topic_([\"start_flow {topic}\"])" in lines


def test_one_flow_alone_names_the_flow_it_starts(tmp_path: Path) -> None:
    done = tether("graph", _app(tmp_path), "menu")
    assert done.code == 0, done.err
    assert done.out.startswith("%% flow menu\nflowchart TD\n")
    assert "n_route -.-> t_flow_refund" in done.out and 't_flow_refund(["start_flow refund"])' in done.out


def test_html_writes_a_page_that_renders_the_charts(tmp_path: Path) -> None:
    page = tmp_path / "graph.html"
    done = tether("graph", EXAMPLES / "pizza.py", "--format", "html", "--output", str(page))
    assert done.code == 0, done.err
    assert done.out.strip() == f"wrote {page}"
    text = page.read_text()
    assert text.startswith("<!doctype html>")
    assert "https://" not in text.split("<script>", 1)[0] and "cdn.jsdelivr" not in text  # mermaid is inlined
    chart = text.split('<pre class="mermaid">\n', 1)[1].split("</pre>", 1)[0]
    assert unescape(chart) == tether("graph", EXAMPLES / "pizza.py").out.split("\n", 1)[1]
    assert "order__n_place -.-> order__n_placed" in unescape(chart)


def test_an_unknown_format_is_refused(tmp_path: Path) -> None:
    done = tether("graph", _app(tmp_path), "--format", "svg")
    assert done.code == 2 and done.err.strip() == "error: unknown --format 'svg' (use mermaid or html)"


def test_the_support_examples_draw_the_menu_s_links_and_flow_file_routes() -> None:
    python = tether("graph", EXAMPLES / "support.py", process=True)
    assert python.code == 0, python.err
    lines = [line.strip() for line in python.out.splitlines()]
    for flow in ("orders", "address", "refund", "human"):  # on_complete in code, its targets declared: dashed
        assert f"menu__n_topic -.->|start_flow| {flow}__start" in lines
    assert not [line for line in lines if "menu__n_topic_code" in line]

    files = tether("graph", EXAMPLES / "support.yaml", process=True)
    assert files.code == 0, files.err
    lines = [line.strip() for line in files.out.splitlines()]
    for topic, flow in (("order", "orders"), ("address", "address"), ("refund", "refund"), ("person", "human")):
        assert f"menu__n_topic -->|topic == '{topic}'| {flow}__start" in lines  # a static route: solid, labelled
    assert "menu__n_topic -->|otherwise| menu__t_end" in lines
    assert not [line for line in lines if "menu__n_topic_code" in line]
    # a registered action's handler may still return a transition of its own
    assert "address__n_address_save --> address__n_address_done" in lines
    assert "address__n_address_save -.->|code| address__n_address_save_code((?))" in lines

    shipping = tether("graph", EXAMPLES / "shipping.yaml", process=True)
    lines = [line.strip() for line in shipping.out.splitlines()]
    assert "ship__n_book --> ship__n_done" in lines  # a tool action's static next
    assert not [line for line in lines if "((?))" in line]
