"""The model seam: request/response types, adapters, the catalog.

Importing this package imports neither ``openai`` nor ``anthropic``: the adapters import their SDK
when they are constructed.
"""

from tether.models.anthropic_model import AnthropicModel
from tether.models.catalog import (
    DEFAULT_CATALOG,
    ModelCatalog,
    ModelSelection,
    ModelSpec,
    ProviderPreset,
    UncatalogedModelWarning,
    default_model_from_env,
    register_model,
    register_provider,
    resolve_model,
    validate_selection,
)
from tether.models.credentials import strip_secrets
from tether.models.openai_model import OpenAIModel, is_reasoning_model
from tether.models.params import AnthropicParams, CatalogParams, OpenAIChatParams, OpenAIReasoningParams
from tether.models.parsing import ReplyParseError, extract_json, parse_structured
from tether.models.retry import RetryingModel
from tether.models.tiers import ModelTiers
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
    "AnthropicModel",
    "AnthropicParams",
    "CALL_NAMES",
    "CallName",
    "Capabilities",
    "CatalogParams",
    "ChatMessage",
    "DEFAULT_CATALOG",
    "Model",
    "ModelCatalog",
    "ModelRequest",
    "ModelResponse",
    "ModelSelection",
    "ModelSpec",
    "ModelTiers",
    "OpenAIChatParams",
    "OpenAIModel",
    "OpenAIReasoningParams",
    "ProviderPreset",
    "ReplyParseError",
    "ResponseFormat",
    "RetryingModel",
    "StreamChunk",
    "ToolCall",
    "ToolSpec",
    "UncatalogedModelWarning",
    "Usage",
    "default_model_from_env",
    "extract_json",
    "is_reasoning_model",
    "parse_structured",
    "register_model",
    "register_provider",
    "resolve_model",
    "strip_secrets",
    "validate_selection",
]
