"""What to run: :class:`ProcessRequest`, its environment policy, and how both become a spawn.

Commands. ``runtime`` chooses how ``command`` is started:

===========  ==================================  ============================================
runtime      ``command`` is a string             ``command`` is an argv list
===========  ==================================  ============================================
``shell``    ``/bin/sh -c <string>``             executed directly (no shell; PATH lookup)
``python``   ``<python> -c <string>`` (script)   ``<python> <argv...>`` (e.g. a script path)
``node``     ``<node> -e <string>`` (script)     ``<node> <argv...>``
===========  ==================================  ============================================

``<python>`` and ``<node>`` are the executor's configured interpreters (by default the running
interpreter, ``sys.executable``, and ``node`` from PATH).

Environment. Input bindings become environment variables named after the binding; names must
match ``^[A-Za-z_][A-Za-z0-9_]*$``. Values are stringified deterministically by
:func:`stringify_value`. Provenance (the bindings' origins) never enters the environment.

The parent environment is inherited through :class:`EnvPolicy`: by default only the names in
:data:`DEFAULT_ALLOW` (``PATH``, ``HOME``, ``LANG``, ``LC_*``, ``TZ``, ...) are inherited, so
``DATABASE_URL``, ``STRIPE_KEY`` or ``SENTRY_DSN`` never reach a command unless it asks for them;
names matching :data:`DEFAULT_DENY` (``*API_KEY*``, ``*APIKEY*``, ``*TOKEN*``, ``*SECRET*``,
``*PASSWORD*``, ``*PASSWD*``, ``*CREDENTIAL*``, ``*PRIVATE_KEY*``) are withheld even when allowed.
Inheriting everything (minus the deny-list) is an explicit opt-in: :meth:`EnvPolicy.inherit_all`.
Bindings are explicit and always set, even when their name would be denied.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tether.executors.provenance import Binding
from tether.executors.values import stringify_value

__all__ = [
    "DEFAULT_ALLOW",
    "DEFAULT_CAPTURE_LIMIT",
    "DEFAULT_DENY",
    "ENV_NAME_PATTERN",
    "EnvPolicy",
    "ProcessRequest",
    "Runtime",
    "Stream",
    "build_env",
    "resolve_argv",
    "stringify_value",
]

Runtime = Literal["shell", "python", "node"]
Stream = Literal["stdout", "stderr"]

ENV_NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""An environment variable name a binding may use (matched in full)."""

_FIELD_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
DEFAULT_CAPTURE_LIMIT = 64 * 1024
DEFAULT_DENY: tuple[str, ...] = (
    "*API_KEY*",
    "*APIKEY*",
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*PRIVATE_KEY*",
)
"""Parent variables withheld by default (shell-style globs, matched case-insensitively)."""
DEFAULT_ALLOW: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "TMPDIR", "TMP", "TEMP",
)
"""Parent variables a process inherits by default (shell-style globs, matched case-sensitively)."""


class EnvPolicy(BaseModel):
    """Which parent environment variables a process inherits.

    Attributes:
        allow: shell-style glob patterns (``PATH``, ``LC_*``) of names to inherit, matched
            case-sensitively; defaults to :data:`DEFAULT_ALLOW`; ``None`` inherits every name
            (see :meth:`inherit_all`), ``()`` none.
        deny: patterns never inherited, matched case-insensitively; deny wins over allow.
            Defaults to :data:`DEFAULT_DENY`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    allow: tuple[str, ...] | None = DEFAULT_ALLOW
    deny: tuple[str, ...] = DEFAULT_DENY

    @classmethod
    def inherit_all(cls, deny: tuple[str, ...] = DEFAULT_DENY) -> EnvPolicy:
        """The explicit opt-in: inherit every parent variable except those matching ``deny``."""
        return cls(allow=None, deny=deny)

    @classmethod
    def allowing(cls, *names: str) -> EnvPolicy:
        """The default allow-list plus ``names`` (globs), e.g. ``EnvPolicy.allowing("DATABASE_URL")``."""
        return cls(allow=(*DEFAULT_ALLOW, *names))

    def admits(self, name: str) -> bool:
        """Whether the parent variable ``name`` is inherited."""
        upper = name.upper()
        if any(fnmatchcase(upper, pattern.upper()) for pattern in self.deny):
            return False
        return self.allow is None or any(fnmatchcase(name, pattern) for pattern in self.allow)


class ProcessRequest(BaseModel):
    """One deterministic process to run for a ``function`` or ``check`` node.

    Attributes:
        node: the node id (named in errors and echoed on the result).
        runtime: ``shell``, ``python`` or ``node`` (see the module table).
        command: a string (shell command line or inline script) or an argv list.
        cwd: working directory — the session workspace. It must exist when the process is
            spawned; otherwise spawning raises :class:`~tether.errors.SpawnError`.
        inputs: resolved bindings, passed as environment variables (values only).
        inherit_env: which parent variables are inherited (see :class:`EnvPolicy`).
        success_exit: exit codes that count as success (default ``(0,)``).
        timeout: seconds before the process group is terminated; ``None`` for no limit.
        capture: stream -> output key, e.g. ``{"stdout": "fields.report"}``; keys must be
            ``fields.<name>`` and distinct.
        capture_limit: bytes of each stream kept; the rest is counted and marked truncated.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str = Field(min_length=1)
    runtime: Runtime = "shell"
    command: str | tuple[str, ...]
    cwd: Path
    inputs: dict[str, Binding] = Field(default_factory=dict)
    inherit_env: EnvPolicy = Field(default_factory=EnvPolicy)
    success_exit: tuple[int, ...] = (0,)
    timeout: float | None = Field(default=None, gt=0)
    capture: dict[Stream, str] = Field(default_factory=dict)
    capture_limit: int = Field(default=DEFAULT_CAPTURE_LIMIT, ge=0)

    @field_validator("command")
    @classmethod
    def _command_is_runnable(cls, command: str | tuple[str, ...]) -> str | tuple[str, ...]:
        parts = [command] if isinstance(command, str) else list(command)
        if not parts or not parts[0]:
            raise ValueError("command must not be empty")
        if any("\x00" in part for part in parts):
            raise ValueError("command must not contain NUL characters")
        return command

    @field_validator("success_exit")
    @classmethod
    def _exit_codes(cls, codes: tuple[int, ...]) -> tuple[int, ...]:
        if not codes:
            raise ValueError("success_exit must name at least one exit code")
        bad = [code for code in codes if not 0 <= code <= 255]
        if bad:
            raise ValueError(f"success_exit codes must be within 0..255, got {bad}")
        return codes

    @field_validator("capture")
    @classmethod
    def _capture_targets(cls, capture: dict[Stream, str]) -> dict[Stream, str]:
        for stream, target in capture.items():
            prefix, _, name = target.partition(".")
            if prefix != "fields" or not _FIELD_NAME.fullmatch(name):
                raise ValueError(f"capture of {stream} must target 'fields.<name>', got {target!r}")
        if len(set(capture.values())) != len(capture):
            raise ValueError("stdout and stderr cannot be captured into the same field")
        return capture

    @model_validator(mode="after")
    def _inputs_are_env_safe(self) -> ProcessRequest:
        for name, binding in self.inputs.items():
            if not ENV_NAME_PATTERN.fullmatch(name):
                raise ValueError(
                    f"node {self.node!r}: binding {name!r} is not a valid environment variable name "
                    f"(must match {ENV_NAME_PATTERN.pattern})"
                )
            try:
                stringify_value(binding.value)
            except ValueError as exc:
                raise ValueError(f"node {self.node!r}: binding {name!r}: {exc}") from None
        return self

    def env_values(self) -> dict[str, str]:
        """The bindings as environment variables (name -> stringified value), sorted by name."""
        return {name: stringify_value(self.inputs[name].value) for name in sorted(self.inputs)}

    def describe_command(self) -> str:
        """The command as one readable line (for messages)."""
        if isinstance(self.command, str):
            return self.command
        return " ".join(self.command)


def build_env(request: ProcessRequest, parent: Mapping[str, str]) -> dict[str, str]:
    """The full environment of the process: admitted parent variables, then the bindings."""
    env = {name: value for name, value in parent.items() if request.inherit_env.admits(name)}
    env.update(request.env_values())
    return env


def resolve_argv(request: ProcessRequest, *, python: str, node: str) -> list[str]:
    """The argv to exec for ``request`` (see the module table)."""
    command = request.command
    if request.runtime == "shell":
        return ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    interpreter, flag = (python, "-c") if request.runtime == "python" else (node, "-e")
    return [interpreter, flag, command] if isinstance(command, str) else [interpreter, *command]
