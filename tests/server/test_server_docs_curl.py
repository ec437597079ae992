"""The curl commands of docs/server.md run against a real ``tether serve`` (open, no keys) whose
agent ``Sam`` answers ``reply N: TEXT``; ``localhost:8000`` becomes the server's address and ``ID``
a session the test started. A stream never ends by itself: the test stops it after 1.5 s (the
records it must show are stored before it starts: the server sends them at once)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import httpx
from serve_process import app_file, tether_serve

DOC = Path(__file__).resolve().parents[2] / "docs" / "server.md"
FENCE = re.compile(r"^```sh\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _documents(text: str) -> list[dict[str, object]]:
    """The JSON documents curl printed one after another (with no newline between them)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        document, at = decoder.raw_decode(text, at)
        found.append(document)
        while at < len(text) and text[at].isspace():
            at += 1
    return found


def _curl_blocks() -> list[str]:
    return [block for block in FENCE.findall(DOC.read_text()) if "curl " in block]


def test_the_curl_examples_of_the_server_docs_run(tmp_path: Path) -> None:
    blocks = _curl_blocks()
    assert len(blocks) >= 3
    env = {k: v for k, v in os.environ.items() if k != "TETHER_API_KEYS"}
    flows = tmp_path / "workflows"  # the workflow the workflow runs example starts
    flows.mkdir()
    (flows / "release.json").write_text(json.dumps({
        "schemaVersion": 2, "id": "release", "version": "1", "name": "Release", "input": {"version": "0"},
        "nodes": [{"id": "sign", "label": "Sign", "description": "sign the release off",
                   "run": {"kind": "gate", "prompt": "Release it?", "schema": {"kind": "text"}}}], "edges": []}))
    with tether_serve([str(app_file(tmp_path, 'echo_agent("Sam")')), "--store", str(tmp_path / "d.db"),
                       "--workflows", str(flows)], cwd=tmp_path, env=env) as served:
        session = httpx.post(f"{served.base}/v1/agents/Sam/sessions").json()["session"]
        outputs = []
        for block in blocks:
            script = block.replace("localhost:8000", served.base.removeprefix("http://"))
            streams = "/stream" in block
            if streams:
                script = script.replace("curl ", "curl --max-time 1.5 ", 1)
            done = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, timeout=60,
                                  env={**os.environ, "ID": session})
            assert done.returncode == (28 if streams else 0), (block, done.stdout, done.stderr)  # 28: curl's timeout
            outputs.append(done.stdout)
    started, message, transcript, state = _documents(outputs[0])
    assert started["agent"] == "Sam" and started["session"] != session
    assert message == {"success": True, "completed": True, "message": "reply 1: where is my order?",
                       "session": session, "content_type": "text/plain", "code": None}
    assert [m["text"] for m in transcript["messages"]] == ["where is my order?", "reply 1: where is my order?"]
    assert state["id"] == session and state["status"] == "running"
    stream = outputs[1]
    assert "id: 2\n" in stream and "id: 1\n" not in stream and "event: " in stream  # resumed after record 1
    chunks = [line.removeprefix("data: ") for line in outputs[2].splitlines() if line.startswith("data: ")]
    assert chunks[-1] == "[DONE]"
    said = "".join(json.loads(chunk)["choices"][0]["delta"].get("content") or "" for chunk in chunks[:-1])
    assert said == "reply 2: where is my order?"
    run = next(_documents(out)[0] for out in outputs if '"workflow":"release"' in out.replace(" ", ""))
    assert run["status"] == "running" and run["input"] == {"version": "2.1"} and run["tenant"] == "public"
