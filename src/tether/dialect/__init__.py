"""Flow files: agents and flows as YAML or JSON, the same objects as Python authoring.

    from tether.dialect import load
    agent = load("examples/shipping.yaml")

See ``docs/flow-files.md``. Everything here but :func:`load` is pure (it parses what it is given).
"""

from tether.dialect.build import agent_options, build_flow
from tether.dialect.files import load, register_flows
from tether.dialect.parse import parse_document
from tether.dialect.registry import Registry
from tether.dialect.schema import flow_file_schema
from tether.dialect.text import parse_text
from tether.dialect.unbuild import canonical, to_spec
from tether.dialect.validate import validate, validate_spec

__all__ = ["Registry", "agent_options", "build_flow", "canonical", "flow_file_schema", "load", "parse_document",
           "parse_text", "register_flows", "to_spec", "validate", "validate_spec"]
