"""Model providers: one interface for chat/VLM models, one for embeddings, chosen by name.

All outbound HTTP to model servers goes through these classes.
"""

from rag.providers.base import (
    ChatEvent,
    ChatMessage,
    ChatModel,
    Done,
    EmbeddingModel,
    TextDelta,
    ToolCall,
    ToolSpec,
)
from rag.providers.registry import (
    Listing,
    available_models,
    get_chat_model,
    get_embedding_model,
    is_available,
    is_available_on_second_look,
)

__all__ = [
    "ChatEvent",
    "ChatMessage",
    "ChatModel",
    "Done",
    "EmbeddingModel",
    "Listing",
    "TextDelta",
    "ToolCall",
    "ToolSpec",
    "available_models",
    "get_chat_model",
    "get_embedding_model",
    "is_available",
    "is_available_on_second_look",
]
