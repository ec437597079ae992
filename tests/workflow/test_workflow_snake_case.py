"""Workflow files have one key convention, snake_case (as flow files): ``to_dict`` writes it, seed
001's camelCase v2 files still read, and a definition's digest does not depend on the keys' case,
so a run pinned before files were written snake_case resumes under the snake_case rewrite."""

from __future__ import annotations

from typing import Any

from store_backends import Backend

from tether.workflow import load_workflow
from tether.workflow_host import WorkflowRun

SEED_FILE = """\
$schema: https://tether.dev/schemas/workflow/v2.json
schemaVersion: 2
id: ship
version: "1"
name: Ship
input: {tier: max}
nodes:
  - id: sign
    label: Sign
    description: a person signs
    run: {kind: gate, prompt: "sign?", schema: {kind: file, maxSize: 1000}}
  - id: tier
    label: Tier
    description: which tier
    run: {kind: router, routes: [{when: "input.tier == 'max'", target: test}, {when: default, target: null}]}
  - id: test
    label: Test
    description: run the tests
    run: {kind: check, command: "true", successExit: [0, 3], onFail: fail}
    control: {timeoutSec: 30, parallelGroup: g, retries: 1}
  - id: ship
    label: Ship
    description: ship it
    run: {kind: function, command: "true"}
edges:
  - {id: sign-tier, source: sign, target: tier, type: flow}
  - {id: tier-test, source: tier, target: test, type: flow}
  - {id: test-ship, source: test, target: ship, type: optional}
"""

PINNED_BEFORE = "sha256:90e0af213e4edec81e319795ffe5c933da6c9081965402df6c5a4d8b5616962c"
"""The digest tether computed for ``SEED_FILE`` before workflow files were written snake_case."""

CAMEL = {"schemaVersion", "successExit", "onFail", "maxSize", "passContext", "timeoutSec", "parallelGroup",
         "researchDepth", "autoReview", "cliMode", "schema_"}


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {key for item in value.values() for key in _keys(item)}
    if isinstance(value, list):
        return {key for item in value for key in _keys(item)}
    return set()


def test_to_dict_writes_snake_case_and_reads_back_as_the_same_definition() -> None:
    seed = load_workflow(SEED_FILE)
    written = seed.workflow.to_dict()
    assert not _keys(written) & CAMEL
    assert list(written)[:2] == ["$schema", "schema_version"]
    sign, tier, test, _ = written["nodes"]
    assert sign["run"]["schema"] == {"kind": "file", "max_size": 1000, "multiple": False}
    assert tier["run"]["routes"][1] == {"target": None, "when": "default"}  # a null target is required: written
    assert (test["run"]["success_exit"], test["run"]["on_fail"]) == ([0, 3], "fail")
    assert (test["control"]["timeout_sec"], test["control"]["parallel_group"]) == (30, "g")
    again = load_workflow(written)
    assert again.workflow == seed.workflow and again.digest == seed.digest


def test_the_digest_does_not_depend_on_the_keys_case_and_is_the_one_runs_were_pinned_to() -> None:
    assert load_workflow(SEED_FILE).digest == PINNED_BEFORE
    assert load_workflow(load_workflow(SEED_FILE).workflow.to_dict()).digest == PINNED_BEFORE


async def test_a_run_pinned_to_a_camel_case_file_resumes_under_its_snake_case_rewrite(backend: Backend) -> None:
    store = await backend.make()
    run = WorkflowRun(SEED_FILE, store=store, run_id="old")
    await run.drain()
    assert run.status == "waiting" and run.snapshot.workflow_digest == PINNED_BEFORE
    rewritten = load_workflow(SEED_FILE).workflow.to_dict()
    loaded = await WorkflowRun.load(store, "old", rewritten)
    assert loaded.snapshot.workflow_digest == PINNED_BEFORE and loaded.status == "waiting"
