"""ProcessRequest validation, deterministic stringification, env policy and argv resolution (no processes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from tether.executors import (
    DEFAULT_DENY,
    Binding,
    EnvPolicy,
    Origin,
    ProcessRequest,
    build_env,
    stringify_value,
    truncation_marker,
)
from tether.executors.capture import StreamSink
from tether.executors.request import resolve_argv


def request(**overrides: object) -> ProcessRequest:
    fields: dict[str, object] = {"node": "n1", "command": "true", "cwd": Path("/tmp")}
    fields.update(overrides)
    return ProcessRequest.model_validate(fields)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain text", "plain text"),
        ("", ""),
        (True, "true"),
        (False, "false"),
        (None, ""),
        (0, "0"),
        (-42, "-42"),
        (10**20, "100000000000000000000"),
        (1.0, "1.0"),
        (0.1, "0.1"),
        (1e20, "1e+20"),
        ({"b": 1, "a": [True, None, 1.5], "é": "ü"}, '{"a":[true,null,1.5],"b":1,"é":"ü"}'),
        ([3, "x", {"z": {}, "y": []}], '[3,"x",{"y":[],"z":{}}]'),
    ],
)
def test_stringification_is_deterministic(value: object, text: str) -> None:
    assert stringify_value(value) == text  # type: ignore[arg-type]


def test_dict_key_order_does_not_change_the_text() -> None:
    assert stringify_value({"a": 1, "b": 2}) == stringify_value({"b": 2, "a": 1})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "a\x00b", {"k": float("-inf")}])
def test_unrepresentable_values_are_rejected(value: object) -> None:
    with pytest.raises(ValueError):
        stringify_value(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "", "ÄB", "A.B", "A\n"])
def test_bad_binding_names_are_rejected_naming_the_binding(name: str) -> None:
    with pytest.raises(ValidationError) as info:
        request(inputs={name: Binding(value="x")})
    assert repr(name) in str(info.value)
    assert "not a valid environment variable name" in str(info.value)


@pytest.mark.parametrize("name", ["A", "_", "_a1", "lower_case", "X9_Y"])
def test_good_binding_names_are_accepted(name: str) -> None:
    assert name in request(inputs={name: Binding(value=1)}).inputs


def test_a_nan_binding_is_rejected_at_construction_naming_it() -> None:
    with pytest.raises(ValidationError, match="binding 'RATIO'"):
        request(inputs={"RATIO": Binding(value=float("nan"))})


@pytest.mark.parametrize("target", ["report", "field.report", "fields.", "fields.a.b", "output.fields.x"])
def test_capture_targets_must_be_fields(target: str) -> None:
    with pytest.raises(ValidationError, match=r"fields\.<name>"):
        request(capture={"stdout": target})


def test_capture_rejects_unknown_streams_and_shared_targets() -> None:
    with pytest.raises(ValidationError):
        request(capture={"stdin": "fields.x"})
    with pytest.raises(ValidationError, match="same field"):
        request(capture={"stdout": "fields.x", "stderr": "fields.x"})
    assert request(capture={"stdout": "fields.out", "stderr": "fields.err"}).capture["stderr"] == "fields.err"


@pytest.mark.parametrize(
    "overrides",
    [
        {"command": ""},
        {"command": []},
        {"command": ["", "x"]},
        {"command": "a\x00b"},
        {"success_exit": []},
        {"success_exit": [256]},
        {"success_exit": [-1]},
        {"timeout": 0},
        {"capture_limit": -1},
        {"node": ""},
        {"runtime": "ruby"},
        {"provenance": "verified"},
    ],
)
def test_invalid_requests_are_rejected(overrides: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        request(**overrides)


def test_no_field_lets_a_caller_claim_provenance() -> None:
    names = set(ProcessRequest.model_fields)
    assert not {n for n in names if "proven" in n or "verified" in n}
    with pytest.raises(ValidationError):
        Binding(value=1, provenance="verified")  # type: ignore[call-arg]


def test_request_round_trips_through_json() -> None:
    original = request(
        command=["echo", "hi"],
        inputs={"X": Binding(value={"a": 1}, origins=(Origin(kind="literal"),))},
        capture={"stdout": "fields.out"},
        success_exit=[0, 3],
        timeout=1.5,
    )
    assert ProcessRequest.model_validate_json(original.model_dump_json()) == original


def test_default_allow_list_inherits_only_the_basics_and_withholds_secrets() -> None:
    parent = {
        "PATH": "/bin",
        "HOME": "/root",
        "OPENAI_API_KEY": "sk",
        "GITHUB_TOKEN": "t",
        "github_token": "t",
        "MY_SECRET_THING": "s",
        "DB_PASSWORD": "p",
        "AWS_SECRET_ACCESS_KEY": "s",
        "LANG": "C",
        "DATABASE_URL": "postgres://prod",
        "STRIPE_KEY": "sk_live",
        "SENTRY_DSN": "https://k@sentry",
        "SLACK_WEBHOOK_URL": "https://hooks",
    }
    env = build_env(request(), parent)
    assert env == {"PATH": "/bin", "HOME": "/root", "LANG": "C"}
    assert "*TOKEN*" in DEFAULT_DENY
    inherited = build_env(request(inherit_env=EnvPolicy.inherit_all()), parent)
    assert set(inherited) == {"PATH", "HOME", "LANG", "DATABASE_URL", "STRIPE_KEY", "SENTRY_DSN", "SLACK_WEBHOOK_URL"}


def test_allow_list_and_prefixes_with_deny_winning() -> None:
    policy = EnvPolicy(allow=("PATH", "LC_*", "APP_*"), deny=("*TOKEN*",))
    parent = {"PATH": "/bin", "HOME": "/root", "LC_ALL": "C", "APP_MODE": "x", "APP_TOKEN": "t", "path": "p"}
    assert build_env(request(inherit_env=policy), parent) == {"PATH": "/bin", "LC_ALL": "C", "APP_MODE": "x"}
    assert build_env(request(inherit_env=EnvPolicy(allow=())), parent) == {}
    everything = build_env(request(inherit_env=EnvPolicy.inherit_all(deny=())), {"X_TOKEN": "t"})
    assert everything == {"X_TOKEN": "t"}


def test_bindings_are_always_set_and_override_the_parent() -> None:
    req = request(inputs={"GITHUB_TOKEN": Binding(value="explicit"), "HOME": Binding(value=7)})
    assert build_env(req, {"HOME": "/root", "GITHUB_TOKEN": "inherited"}) == {
        "HOME": "7",
        "GITHUB_TOKEN": "explicit",
    }


def test_argv_resolution_per_runtime() -> None:
    py, node = sys.executable, "/usr/bin/node"
    assert resolve_argv(request(command="echo hi"), python=py, node=node) == ["/bin/sh", "-c", "echo hi"]
    assert resolve_argv(request(command=["echo", "hi"]), python=py, node=node) == ["echo", "hi"]
    assert resolve_argv(request(runtime="python", command="print(1)"), python=py, node=node) == [
        py,
        "-c",
        "print(1)",
    ]
    assert resolve_argv(request(runtime="python", command=["s.py", "a"]), python=py, node=node) == [
        py,
        "s.py",
        "a",
    ]
    assert resolve_argv(request(runtime="node", command="1"), python=py, node=node) == [node, "-e", "1"]
    assert resolve_argv(request(runtime="node", command=["s.js"]), python=py, node=node) == [node, "s.js"]


def test_sink_keeps_the_cap_counts_the_rest_and_marks_it() -> None:
    sink = StreamSink(limit=5)
    for chunk in (b"abc", b"defgh", b"ij"):
        sink.feed(chunk)
    assert sink.total == 10 and sink.truncated
    assert sink.text() == "abcde" + truncation_marker(5)
    exact = StreamSink(limit=3)
    exact.feed(b"abc")
    assert not exact.truncated and exact.text() == "abc"


def test_sink_does_not_render_a_character_cut_by_the_cap() -> None:
    sink = StreamSink(limit=3)
    sink.feed("aaé!".encode())  # 'é' is 2 bytes: the cap cuts it in half
    assert sink.text() == "aa" + truncation_marker(2)
