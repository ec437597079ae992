"""Check verdicts and their derived provenance: verified / asserted / absent, live / flow-local."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tether.errors import SpawnError
from tether.executors import (
    Binding,
    CheckVerdict,
    Origin,
    ProcessRequest,
    ProcessResult,
    SubprocessExecutor,
    check_verdict,
    derive_inputs,
    derive_provenance,
    is_flow_local,
    is_runtime_obtained,
)

LITERAL = Origin(kind="literal")
DEFAULT = Origin(kind="default")
FLOW_INPUT = Origin(kind="flow-input", path="run_input.repo")
AGENT = Origin(kind="agent", node="writer", obtained_by="agent")
SUBPROMPT = Origin(kind="node-output", node="classify", obtained_by="agent", origins=(LITERAL,))
CLEAN_FUNCTION = Origin(
    kind="node-output", node="measure", obtained_by="runtime", origins=(LITERAL, FLOW_INPUT)
)
NO_INPUT_FUNCTION = Origin(kind="node-output", node="clock", obtained_by="runtime", origins=())
PASSTHROUGH = Origin(kind="node-output", node="copy", obtained_by="runtime", origins=(AGENT,))
DEEP_PASSTHROUGH = Origin(
    kind="node-output",
    node="copy2",
    obtained_by="runtime",
    origins=(LITERAL, Origin(kind="node-output", node="copy", obtained_by="runtime", origins=(SUBPROMPT,))),
)
LEGACY_UNKNOWN = Origin(kind="node-output", node="old")  # recorded before origins existed
LEGACY_NO_ORIGINS = Origin(kind="node-output", node="old", obtained_by="runtime")
AGENT_CLAIMING_RUNTIME = Origin(kind="agent", node="writer", obtained_by="runtime")
LITERAL_MARKED_AGENT = Origin(kind="literal", obtained_by="agent")
FLOW_INPUT_FROM_AGENT = Origin(kind="flow-input", origins=(AGENT,))  # e.g. a sub-flow's passed context


@pytest.mark.parametrize(
    ("origins", "runtime", "flow_local"),
    [
        ((LITERAL,), True, True),
        ((DEFAULT,), True, True),
        ((FLOW_INPUT,), True, True),
        ((LITERAL, DEFAULT, FLOW_INPUT), True, True),
        ((CLEAN_FUNCTION,), True, False),
        ((NO_INPUT_FUNCTION,), True, False),
        ((AGENT,), False, False),
        ((SUBPROMPT,), False, False),
        ((PASSTHROUGH,), False, False),
        ((DEEP_PASSTHROUGH,), False, False),
        ((LEGACY_UNKNOWN,), False, False),
        ((LEGACY_NO_ORIGINS,), False, False),
        ((AGENT_CLAIMING_RUNTIME,), False, False),
        ((LITERAL_MARKED_AGENT,), False, True),
        ((FLOW_INPUT_FROM_AGENT,), False, False),
        ((LITERAL, AGENT), False, False),
        ((), False, False),  # no origin record at all: fail-closed
    ],
)
def test_the_origin_table(origins: tuple[Origin, ...], runtime: bool, flow_local: bool) -> None:
    binding = Binding(value="v", origins=origins)
    assert is_runtime_obtained(binding) is runtime
    assert is_flow_local(binding) is flow_local


@pytest.mark.parametrize(
    ("compared", "provenance", "inputs"),
    [
        ({}, None, "live"),
        ({"A": (LITERAL,), "B": (FLOW_INPUT,)}, "verified", "flow-local"),
        ({"A": (LITERAL,), "B": (CLEAN_FUNCTION,)}, "verified", "live"),
        ({"A": (LITERAL,), "B": (AGENT,)}, "asserted", "live"),
        ({"A": (CLEAN_FUNCTION,), "B": (PASSTHROUGH,)}, "asserted", "live"),
        ({"A": (LEGACY_UNKNOWN,)}, "asserted", "live"),
        ({"A": (LITERAL_MARKED_AGENT,)}, "asserted", "flow-local"),
    ],
)
def test_derivation_over_compared_bindings(
    compared: dict[str, tuple[Origin, ...]], provenance: str | None, inputs: str
) -> None:
    bindings = {name: Binding(value=1, origins=origins) for name, origins in compared.items()}
    assert derive_provenance(bindings) == provenance
    assert derive_inputs(bindings) == inputs


def test_a_very_deep_origin_chain_is_walked_without_recursion() -> None:
    origin = AGENT
    for depth in range(5000):
        origin = Origin(kind="node-output", node=f"n{depth}", obtained_by="runtime", origins=(origin,))
    assert not is_runtime_obtained(Binding(value=1, origins=(origin,)))


def request(tmp_path: Path, command: str | list[str], **fields: object) -> ProcessRequest:
    return ProcessRequest.model_validate({"node": "verify", "command": command, "cwd": tmp_path, **fields})


async def test_a_passing_check_is_a_passing_verdict(executor: SubprocessExecutor, tmp_path: Path) -> None:
    req = request(
        tmp_path,
        '[ "$EXPECTED" = "$ACTUAL" ]',
        inputs={
            "EXPECTED": Binding(value=3, origins=(LITERAL,)),
            "ACTUAL": Binding(value=3, origins=(CLEAN_FUNCTION,)),
        },
    )
    verdict = check_verdict(req, await executor.execute(req))
    assert verdict is not None and verdict.passed
    assert verdict.exit_code == 0 and verdict.provenance == "verified" and verdict.inputs == "live"


async def test_exit_inside_success_exit_passes(executor: SubprocessExecutor, tmp_path: Path) -> None:
    req = request(tmp_path, "exit 3", success_exit=[0, 3])
    verdict = check_verdict(req, await executor.execute(req))
    assert verdict is not None and verdict.passed and verdict.exit_code == 3
    assert verdict.provenance is None


async def test_a_failing_check_carries_evidence(executor: SubprocessExecutor, tmp_path: Path) -> None:
    inputs = {
        "EXPECTED": Binding(value={"status": "ok"}, origins=(LITERAL,)),
        "ACTUAL": Binding(value={"status": "broken"}, origins=(PASSTHROUGH,)),
    }
    req = request(tmp_path, ["sh", "-c", '[ "$EXPECTED" = "$ACTUAL" ]'], inputs=inputs)
    verdict = check_verdict(req, await executor.execute(req))
    assert verdict is not None and not verdict.passed
    assert verdict.exit_code == 1
    assert verdict.provenance == "asserted"  # the passthrough function cannot launder the agent value
    assert verdict.inputs == "live"
    assert verdict.compared == inputs
    assert verdict.process.command == ("sh", "-c", '[ "$EXPECTED" = "$ACTUAL" ]')
    assert verdict.process.cwd == str(tmp_path) and verdict.process.success_exit == (0,)
    data = json.loads(verdict.model_dump_json())
    assert data["compared"]["ACTUAL"]["value"] == {"status": "broken"}
    assert CheckVerdict.model_validate_json(verdict.model_dump_json()) == verdict


async def test_provenance_is_omitted_when_nothing_was_compared(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    req = request(tmp_path, "exit 1")
    verdict = check_verdict(req, await executor.execute(req))
    assert verdict is not None and not verdict.passed
    assert verdict.provenance is None and verdict.inputs == "live"
    assert "provenance" not in verdict.model_dump() and "provenance" not in json.loads(
        verdict.model_dump_json()
    )
    assert CheckVerdict.model_validate_json(verdict.model_dump_json()) == verdict


async def test_flow_local_failing_check(executor: SubprocessExecutor, tmp_path: Path) -> None:
    req = request(tmp_path, "exit 2", inputs={"A": Binding(value=1, origins=(DEFAULT,))})
    verdict = check_verdict(req, await executor.execute(req))
    assert verdict is not None and verdict.provenance == "verified" and verdict.inputs == "flow-local"


async def test_a_timeout_is_no_verdict(executor: SubprocessExecutor, tmp_path: Path) -> None:
    req = request(tmp_path, "sleep 100", timeout=0.1, success_exit=[0, 1])
    assert check_verdict(req, await executor.execute(req)) is None


async def test_a_spawn_failure_is_no_verdict(executor: SubprocessExecutor, tmp_path: Path) -> None:
    req = request(tmp_path, ["no-such-checker-binary"], inputs={"A": Binding(value=1, origins=(LITERAL,))})
    with pytest.raises(SpawnError) as info:
        await executor.execute(req)
    assert check_verdict(req, info.value) is None
    assert check_verdict(req, None) is None


async def test_abort_and_signal_deaths_are_no_verdict(executor: SubprocessExecutor, tmp_path: Path) -> None:
    abort = asyncio.Event()
    abort.set()
    req = request(tmp_path, "exit 0")
    assert check_verdict(req, await executor.execute(req, abort)) is None
    killed = request(tmp_path, "kill -9 $$")
    assert check_verdict(killed, await executor.execute(killed)) is None
    abandoned = ProcessResult.unstarted(req, abandoned=True)
    assert check_verdict(req, abandoned) is None


def test_a_result_of_another_node_is_refused(tmp_path: Path) -> None:
    other = ProcessResult.unstarted(request(tmp_path, "x").model_copy(update={"node": "other"}))
    finished = other.model_copy(update={"exit_code": 0})
    with pytest.raises(ValueError, match="other"):
        check_verdict(request(tmp_path, "x"), finished)
