"""``tether workflow run/graph/schema`` and ``tether check`` on workflow files (each command once in a
subprocess)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_helpers import EXAMPLES, ROOT, tether

RELEASE = EXAMPLES / "release.yaml"
RESUME = re.compile(r"resume with: .* --run (\S+) ")


def test_check_validates_workflow_files(tmp_path: Path) -> None:
    done = tether("check", RELEASE)
    assert done.code == 0 and done.out.strip() == "ok: workflow 'release' (6 node(s), 6 edge(s))"
    broken = tmp_path / "broken.yaml"
    broken.write_text(RELEASE.read_text() + "whoops: 1\n")
    done = tether("check", broken)
    assert done.code == 1
    assert done.out.splitlines() == ['<root>: Unrecognized key: "whoops"', "1 problem(s)"]
    seed = tmp_path / "seed.yaml"  # seed 001's camelCase keys: read, and listed as the older form
    seed.write_text(RELEASE.read_text().replace("schema_version", "schemaVersion").replace("timeout_sec", "timeoutSec"))
    done = tether("check", seed)
    assert done.code == 0 and done.out.splitlines() == [
        "warning [old-form] schemaVersion: schemaVersion is the older camelCase form of the key (write schema_version)",
        "warning [old-form] nodes.1.control.timeoutSec: timeoutSec is the older camelCase form of the key "
        "(write timeout_sec)",
        "ok: workflow 'release' (6 node(s), 6 edge(s)) (2 warning(s))"]


def test_release_runs_with_no_api_key_parks_at_the_gate_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "runs" / "t.db"
    first = tether("workflow", "run", RELEASE, "--input", "version=2.0.0", "--db", db, "--workspace", tmp_path,
                   stdin="q\n", process=True)  # the real path: parked, then resumed by another process
    assert first.code == 0, first.err
    assert re.search(r"sign\s+│ gate\s+│ awaiting_approval", first.out), first.out
    found = RESUME.search(first.out)
    assert found, first.out
    second = tether("workflow", "run", RELEASE, "--run", found.group(1), "--db", db, "--workspace", tmp_path,
                    stdin="a\nlooks good\n", process=True)
    assert second.code == 0, second.err
    assert f"run {found.group(1)} complete" in second.out
    assert '"artifact": "release-2.0.0.tar.gz"' in second.out and '"decision": "approved"' in second.out


def test_a_rejection_keeps_the_run_parked_and_the_router_prunes_by_tier(tmp_path: Path) -> None:
    done = tether("workflow", "run", RELEASE, "--input", "tier=min", "--db", tmp_path / "t.db",
                  "--workspace", tmp_path, stdin="r\nnot yet\n")
    assert done.code == 0, done.err
    assert re.search(r"smoke\s+│ check\s+│ skipped\s+│ branch not taken", done.out), done.out
    assert "sign stays parked with the rejection" in done.out


def test_bad_input_is_a_one_line_error(tmp_path: Path) -> None:
    done = tether("workflow", "run", RELEASE, "--input", "nonsense", "--db", tmp_path / "t.db")
    assert done.code == 2 and done.err.strip() == "error: --input takes name=value, got 'nonsense'"
    done = tether("workflow", "run", RELEASE, "--input", "teir=min", "--db", tmp_path / "t.db")
    assert done.code == 1 and "declares no input 'teir'" in done.err


def test_graph_draws_edges_and_routes() -> None:
    done = tether("workflow", "graph", RELEASE, process=True)  # the real path
    assert done.code == 0
    lines = done.out.splitlines()
    assert lines[0] == "flowchart TD" and '    n2{{"tier: Tier (router)"}}' in lines
    assert "    n1 --> n2" in lines and "    n2 -. \"input.tier == 'max'\" .-> n3" in lines


def test_schema_command_prints_the_published_schema() -> None:
    done = tether("workflow", "schema", process=True)  # the real path
    assert done.code == 0
    assert json.loads(done.out) == json.loads((ROOT / "schemas" / "workflow.v2.schema.json").read_text())


def test_a_choice_gate_asks_for_its_response_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    flow = tmp_path / "pick.yaml"
    flow.write_text(
        "schemaVersion: 2\nid: pick\nversion: '1'\nname: Pick\nedges: []\n"
        "output: {channel: '${ask.output.fields.response}'}\n"
        "nodes:\n  - id: ask\n    label: Ask\n    description: which channel\n"
        "    run: {kind: gate, prompt: 'Which channel?', schema: {kind: choice, options: [stable, beta]}}\n")
    done = tether("workflow", "run", flow, "--db", tmp_path / "t.db", "--workspace", tmp_path,
                  stdin="a\nnightly\n\na\nbeta\nok\n")
    assert done.code == 0, done.err
    assert "refused: gate 'ask': 'nightly' is not one of ['stable', 'beta']" in done.out
    assert '"channel": "beta"' in done.out


def test_check_refuses_a_sub_flow_cycle_across_files(tmp_path: Path) -> None:
    for me, other in (("a", "b"), ("b", "a")):
        (tmp_path / f"{me}.yaml").write_text(
            f"schemaVersion: 2\nid: {me}\nversion: '1'\nname: {me}\nedges: []\n"
            f"nodes:\n  - {{id: to_{other}, label: x, description: x, run: {{kind: sub-flow, flow: {other}}}}}\n")
    done = tether("check", tmp_path / "a.yaml")
    assert done.code == 1
    assert done.out.splitlines() == ["b: nodes.0.run.flow: sub-flow cycle: a -> b -> a", "1 problem(s)"]


def test_the_echo_example_runs_with_scripted_replies_and_no_key(tmp_path: Path) -> None:
    echo = EXAMPLES / "echo_workflow.yaml"
    done = tether("workflow", "run", echo, "--script", EXAMPLES / "echo_workflow.script.json", "--db",
                  tmp_path / "t.db", "--workspace", tmp_path, stdin="Ada\na\nlooks good\n")
    assert done.code == 0, done.err
    assert "ask-name asks: Whom should I greet?" in done.out and "sign-off: greeting.txt says: Hello, Ada!" in done.out
    assert '"greeting": "Hello, Ada!"' in done.out and "9 model call(s)" in done.out
    assert (tmp_path / "greeting.txt").read_text().startswith("Hello, Ada!\n")
    keyless = tether("workflow", "run", echo, "--db", tmp_path / "t2.db", "--workspace", tmp_path)
    assert keyless.code == 1
    assert "needs agent work at ask-name: set TETHER_MODEL, --model or --script to run it" in keyless.out
