"""The model seam: request/response types, adapters, the catalog."""

from tether.models.types import (
    CALL_NAMES,
    CallName,
    Capabilities,
    ChatMessage,
    Model,
    ModelRequest,
    ModelResponse,
    ResponseFormat,
    StreamChunk,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "CALL_NAMES",
    "CallName",
    "Capabilities",
    "ChatMessage",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ResponseFormat",
    "StreamChunk",
    "ToolCall",
    "ToolSpec",
    "Usage",
]
