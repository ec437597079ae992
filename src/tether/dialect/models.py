"""JSON Schemas in flow files, turned into the pydantic models the engine works with.

A collect or decide node's ``schema`` (and any node's ``output_schema``) is a JSON Schema object.
The engine takes a pydantic model, so the schema becomes one: properties of type string, number,
integer, boolean, array (of a simple type) and object, ``enum``, ``description``, ``minLength``,
``maxLength``, ``minimum``, ``maximum``, ``pattern`` and ``required``. The original schema rides
on the model (:func:`source_schema`) so :func:`tether.dialect.to_spec` gives it back unchanged.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, create_model

__all__ = ["SCHEMA_ATTR", "UnsupportedSchema", "model_from_schema", "schema_properties", "source_schema"]

SCHEMA_ATTR = "__dialect_schema__"
_SIMPLE: dict[str, type] = {"string": str, "number": float, "integer": int, "boolean": bool}
_CONSTRAINTS = {"minLength": "min_length", "maxLength": "max_length", "minimum": "ge", "maximum": "le",
                "pattern": "pattern", "minItems": "min_length", "maxItems": "max_length"}
_KNOWN = {"type", "enum", "description", "items", "title", "default", *_CONSTRAINTS}


class UnsupportedSchema(ValueError):
    """A schema this dialect cannot turn into a model; ``path`` names the offending part."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def _annotation(prop: dict[str, Any], path: str) -> Any:
    if "enum" in prop:
        values = prop["enum"]
        if not isinstance(values, list) or not values:
            raise UnsupportedSchema(path, "enum must be a non-empty list")
        return Literal[tuple(values)]
    kind = prop.get("type", "string")
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        items = prop.get("items", {"type": "string"})
        if not isinstance(items, dict):
            raise UnsupportedSchema(f"{path}.items", "items must be a schema object")
        return list[_annotation(items, f"{path}.items")]  # type: ignore[misc]
    if kind == "object":
        return dict[str, Any]
    raise UnsupportedSchema(f"{path}.type", f"unsupported type {kind!r} (string, number, integer, boolean, "
                                            "array, object)")


def schema_properties(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``properties`` of an object schema ({} when absent or malformed)."""
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def model_from_schema(schema: dict[str, Any], name: str) -> type[BaseModel]:
    """A pydantic model for the object ``schema`` (fields not in ``required`` default to None).

    Raises:
        UnsupportedSchema: naming the path of what it cannot express.
    """
    if schema.get("type", "object") != "object":
        raise UnsupportedSchema("type", "a node schema must be an object schema (type: object)")
    unknown = sorted(set(schema) - {"type", "properties", "required", "title", "description",
                                    "additionalProperties"})
    if unknown:
        raise UnsupportedSchema(unknown[0], f"unsupported schema keyword {unknown[0]!r}")
    props = schema_properties(schema)
    required = schema.get("required", list(props))
    if not isinstance(required, list) or any(r not in props for r in required):
        raise UnsupportedSchema("required", f"required names {required!r}, not all of them properties")
    definitions: dict[str, Any] = {}
    for key, prop in props.items():
        path = f"properties.{key}"
        if not isinstance(prop, dict):
            raise UnsupportedSchema(path, "a property must be a schema object")
        extra = sorted(set(prop) - _KNOWN)
        if extra:
            raise UnsupportedSchema(f"{path}.{extra[0]}", f"unsupported schema keyword {extra[0]!r}")
        constraints = {_CONSTRAINTS[k]: v for k, v in prop.items() if k in _CONSTRAINTS}
        annotation = _annotation(prop, path)
        if key in required:
            definitions[key] = (annotation, Field(description=prop.get("description"), **constraints))
        else:
            definitions[key] = (annotation | None, Field(default=None, description=prop.get("description"),
                                                         **constraints))
    model = create_model(name, __config__=ConfigDict(extra="ignore"), **definitions)
    setattr(model, SCHEMA_ATTR, schema)
    return cast(type[BaseModel], model)


def source_schema(model: type[BaseModel] | None) -> dict[str, Any] | None:
    """The JSON Schema a dialect model was built from; a Python model's generated schema."""
    if model is None:
        return None
    original = getattr(model, SCHEMA_ATTR, None)
    return original if isinstance(original, dict) else model.model_json_schema()
