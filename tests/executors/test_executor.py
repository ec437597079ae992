"""SubprocessExecutor on real processes: exit codes, environment, capture, cwd, spawn failures."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from tether.errors import ExecutorError, SpawnError
from tether.executors import (
    Binding,
    EnvPolicy,
    Executor,
    Origin,
    ProcessRequest,
    ProcessResult,
    SubprocessExecutor,
    truncation_marker,
)

PRINT_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


def request(tmp_path: Path, command: str | list[str], **fields: object) -> ProcessRequest:
    return ProcessRequest.model_validate({"node": "fn", "command": command, "cwd": tmp_path, **fields})


def test_the_executor_satisfies_the_protocol(executor: SubprocessExecutor) -> None:
    assert isinstance(executor, Executor)


@pytest.mark.parametrize(
    ("code", "success_exit", "passed"),
    [
        (0, [0], True),
        (1, [0], False),
        (3, [0], False),
        (3, [0, 3], True),
        (0, [3], False),
        (255, [255], True),
    ],
)
async def test_exit_codes_and_success_exit(
    executor: SubprocessExecutor, tmp_path: Path, code: int, success_exit: list[int], passed: bool
) -> None:
    result = await executor.execute(request(tmp_path, f"exit {code}", success_exit=success_exit))
    assert result.exit_code == code
    assert result.signal is None
    assert result.passed is passed
    assert not (result.timed_out or result.aborted or result.group_killed)
    assert result.process.success_exit == tuple(success_exit)


async def test_death_by_signal_is_reported_as_a_signal_not_an_exit_code(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    result = await executor.execute(request(tmp_path, ["sh", "-c", "kill -9 $$"]))
    assert result.exit_code is None
    assert result.signal == 9
    assert not result.passed


async def test_bindings_reach_the_child_stringified_and_provenance_does_not(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    agent = Origin(kind="agent", node="writer", obtained_by="agent")
    inputs = {
        "TEXT": Binding(value="héllo wörld", origins=(agent,)),
        "FLAG": Binding(value=True, origins=(Origin(kind="literal"),)),
        "OFF": Binding(value=False),
        "NOTHING": Binding(value=None),
        "COUNT": Binding(value=42),
        "RATIO": Binding(value=0.5),
        "DOC": Binding(value={"b": [1, 2], "a": {"z": None}}),
    }
    req = request(tmp_path, PRINT_ENV, runtime="python", inputs=inputs, capture={"stdout": "fields.env"})
    result = await executor.execute(req)
    assert result.passed, result
    env = json.loads(result.fields["env"])
    assert env["TEXT"] == "héllo wörld"
    assert env["FLAG"] == "true" and env["OFF"] == "false" and env["NOTHING"] == ""
    assert env["COUNT"] == "42" and env["RATIO"] == "0.5"
    assert env["DOC"] == '{"a":{"z":null},"b":[1,2]}'
    everything = json.dumps(env)
    for marker in ("origins", "obtained_by", "writer", "verified", "asserted"):
        assert marker not in everything
    assert result.origins == {name: binding.origins for name, binding in inputs.items()}


async def test_parent_environment_inheritance_allow_and_deny(tmp_path: Path) -> None:
    parent = {
        "PATH": os.environ["PATH"],
        "KEEP_ME": "1",
        "LC_TEST": "c",
        "SERVICE_API_KEY": "sk",
        "GH_TOKEN": "t",
        "DB_PASSWORD": "p",
        "OTHER": "o",
        "DATABASE_URL": "postgres://u:p@db/prod",
        "STRIPE_KEY": "sk_live",
        "SENTRY_DSN": "https://k@sentry",
        "SLACK_WEBHOOK_URL": "https://hooks",
    }
    executor = SubprocessExecutor(environ=parent)
    default = await executor.execute(
        request(tmp_path, PRINT_ENV, runtime="python", capture={"stdout": "fields.e"})
    )
    env = json.loads(default.fields["e"])
    assert set(env) - {"LC_CTYPE"} == {"LC_TEST", "PATH"}  # the allow-list: nothing undeclared leaks

    everything = await executor.execute(
        request(tmp_path, PRINT_ENV, runtime="python", inherit_env=EnvPolicy.inherit_all(),
                capture={"stdout": "fields.e"})
    )
    env = json.loads(everything.fields["e"])
    assert {"KEEP_ME", "LC_TEST", "OTHER", "PATH", "DATABASE_URL", "SENTRY_DSN"} <= set(env)
    assert not {"SERVICE_API_KEY", "GH_TOKEN", "DB_PASSWORD"} & set(env)

    declared = await executor.execute(
        request(tmp_path, PRINT_ENV, runtime="python", inherit_env=EnvPolicy.allowing("DATABASE_URL"),
                capture={"stdout": "fields.e"})
    )
    assert set(json.loads(declared.fields["e"])) - {"LC_CTYPE"} == {"LC_TEST", "PATH", "DATABASE_URL"}

    policy = EnvPolicy(allow=("PATH", "LC_*", "GH_*"), deny=("*TOKEN*",))
    allowed = await executor.execute(
        request(
            tmp_path,
            PRINT_ENV,
            runtime="python",
            inherit_env=policy,
            inputs={"BOUND": Binding(value="b")},
            capture={"stdout": "fields.e"},
        )
    )
    names = set(json.loads(allowed.fields["e"])) - {"LC_CTYPE"}  # the interpreter may set LC_CTYPE itself
    assert names == {"PATH", "LC_TEST", "BOUND"}


async def test_real_os_environ_is_the_default_parent(
    executor: SubprocessExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_VISIBLE", "yes")
    monkeypatch.setenv("TETHER_TEST_SECRET", "no")
    result = await executor.execute(
        request(tmp_path, PRINT_ENV, runtime="python", inherit_env=EnvPolicy.allowing("TETHER_TEST_*"),
                capture={"stdout": "fields.e"})
    )
    env = json.loads(result.fields["e"])
    assert env["TETHER_TEST_VISIBLE"] == "yes"
    assert "TETHER_TEST_SECRET" not in env


async def test_capture_maps_streams_to_fields(executor: SubprocessExecutor, tmp_path: Path) -> None:
    req = request(
        tmp_path,
        "printf 'out\\n'; printf 'err' >&2; exit 2",
        capture={"stdout": "fields.report", "stderr": "fields.diag"},
    )
    result = await executor.execute(req)
    assert result.fields == {"report": "out\n", "diag": "err"}
    assert (result.stdout_bytes, result.stderr_bytes) == (4, 3)
    assert not (result.stdout_truncated or result.stderr_truncated)
    assert result.exit_code == 2 and not result.passed  # captures stay on failed attempts


async def test_a_megabyte_of_output_is_capped_counted_and_does_not_deadlock(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    script = "import sys; sys.stdout.write('x' * 1_000_000); sys.stderr.write('e' * 300_000)"
    started = time.monotonic()
    result = await executor.execute(
        request(tmp_path, script, runtime="python", timeout=20, capture={"stdout": "fields.out"})
    )
    assert time.monotonic() - started < 10
    assert result.passed
    assert result.stdout_bytes == 1_000_000 and result.stdout_truncated
    assert result.stderr_bytes == 300_000 and result.stderr_truncated  # uncaptured: counted, not kept
    assert result.fields["out"] == "x" * 65536 + truncation_marker(1_000_000 - 65536)
    assert result.fields["out"].endswith("\n…[truncated 934464 bytes]")
    assert "stderr" not in result.fields


async def test_capture_limit_is_configurable(executor: SubprocessExecutor, tmp_path: Path) -> None:
    result = await executor.execute(
        request(tmp_path, "printf abcdefgh", capture={"stdout": "fields.o"}, capture_limit=3)
    )
    assert result.fields["o"] == "abc" + truncation_marker(5)


async def test_cwd_is_honoured(executor: SubprocessExecutor, tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("here")
    result = await executor.execute(request(tmp_path, "pwd; cat marker.txt", capture={"stdout": "fields.o"}))
    assert result.fields["o"] == f"{tmp_path.resolve()}\nhere"
    assert result.process.cwd == str(tmp_path)


async def test_a_missing_cwd_is_a_spawn_error(executor: SubprocessExecutor, tmp_path: Path) -> None:
    with pytest.raises(SpawnError) as info:
        await executor.execute(request(tmp_path / "gone", "echo hi"))
    assert info.value.code == "spawn-failed"
    assert "'fn'" in str(info.value) and "echo hi" in str(info.value)
    assert isinstance(info.value, ExecutorError)


async def test_a_file_as_cwd_is_a_spawn_error(executor: SubprocessExecutor, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(SpawnError, match="not a directory"):
        await executor.execute(request(tmp_path / "file", "echo hi"))


async def test_a_missing_binary_is_a_spawn_error_not_an_exit_code(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    with pytest.raises(SpawnError) as info:
        await executor.execute(request(tmp_path, ["definitely-not-a-binary-xyz", "--flag"]))
    assert "'fn'" in str(info.value) and "definitely-not-a-binary-xyz --flag" in str(info.value)


async def test_a_non_executable_file_is_a_spawn_error(executor: SubprocessExecutor, tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    with pytest.raises(SpawnError, match="ermission denied"):
        await executor.execute(request(tmp_path, [str(script)]))


async def test_a_missing_interpreter_is_a_spawn_error(tmp_path: Path) -> None:
    executor = SubprocessExecutor(python=str(tmp_path / "no-python"))
    with pytest.raises(SpawnError):
        await executor.execute(request(tmp_path, "print(1)", runtime="python"))


async def test_python_runtime_with_argv_runs_a_script(executor: SubprocessExecutor, tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("import sys; print(sys.argv[1:]); sys.exit(4)")
    result = await executor.execute(
        request(tmp_path, ["s.py", "a", "b"], runtime="python", capture={"stdout": "fields.o"})
    )
    assert result.fields["o"] == "['a', 'b']\n"
    assert result.exit_code == 4


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_node_runtime(executor: SubprocessExecutor, tmp_path: Path) -> None:
    result = await executor.execute(
        request(
            tmp_path,
            "process.stdout.write(process.env.WHO); process.exit(5)",
            runtime="node",
            inputs={"WHO": Binding(value="node")},
            capture={"stdout": "fields.o"},
        )
    )
    assert result.fields["o"] == "node"
    assert result.exit_code == 5


async def test_stdin_is_closed(executor: SubprocessExecutor, tmp_path: Path) -> None:
    result = await executor.execute(
        request(tmp_path, "cat; echo done", capture={"stdout": "fields.o"}, timeout=5)
    )
    assert result.fields["o"] == "done\n" and result.passed


async def test_result_round_trips_through_json(executor: SubprocessExecutor, tmp_path: Path) -> None:
    req = request(
        tmp_path,
        ["sh", "-c", "echo $X; exit 3"],
        inputs={
            "X": Binding(
                value=[1], origins=(Origin(kind="node-output", node="a", obtained_by="runtime", origins=()),)
            )
        },
        capture={"stdout": "fields.o"},
        success_exit=[3],
    )
    result = await executor.execute(req)
    data = json.loads(result.model_dump_json())
    assert data["passed"] is True
    assert data["process"] == {
        "runtime": "shell",
        "command": ["sh", "-c", "echo $X; exit 3"],
        "cwd": str(tmp_path),
        "success_exit": [3],
    }
    assert ProcessResult.model_validate_json(result.model_dump_json()) == result
    assert result.duration > 0


async def test_an_already_aborted_attempt_spawns_nothing(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    import asyncio

    abort = asyncio.Event()
    abort.set()
    marker = tmp_path / "ran"
    result = await executor.execute(request(tmp_path, f"touch {marker}"), abort)
    assert result.aborted and not result.passed and result.exit_code is None
    assert not marker.exists()


def test_the_executor_rejects_nonsense_configuration() -> None:
    with pytest.raises(ValueError):
        SubprocessExecutor(grace=-1)
    with pytest.raises(ValueError):
        SubprocessExecutor(settle_timeout=0)
    assert SubprocessExecutor().grace == 2.0
    assert SubprocessExecutor().python == sys.executable
