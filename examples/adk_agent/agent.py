"""A Google ADK agent, as its developer writes it, run by rollchat:
`rollchat examples/adk_agent/agent.py`.

Needs `pip install google-adk` (and `litellm` for an OpenAI-compatible model). With
OPENAI_API_KEY set, the model is `LiteLlm("openai/" + EXAMPLE_MODEL)` (default gpt-5.4-mini;
OPENAI_BASE_URL for another server, a local one works). Without a key it runs offline: ADK
takes any `BaseLlm`, and `OfflineModel` below is rollchat's built-in offline model as one (ask
it `use word_count {"text": "one two"}`). rollchat keeps the transcript, compacts and resumes;
ADK runs the model and the tools, and asks rollchat before each call.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext
from google.genai import types


def word_count(text: str, tool_context: ToolContext) -> str:
    """Count the words of a text.

    Args:
        text: The text to count.
    """
    counted = tool_context.state.get("texts_counted", 0) + 1  # ADK session state
    tool_context.state["texts_counted"] = counted
    return f"{len(text.split())} words (text {counted} counted in this session)"


class OfflineModel(BaseLlm):
    """rollchat's built-in offline model (deterministic, no network) as an ADK model."""

    model: str = "offline"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        from rollchat.domain import Message, ToolCall
        from rollchat.providers.base import (
            ChatRequest,
            TextDelta,
            ToolCallEvent,
            ToolSpec,
            UsageEvent,
        )
        from rollchat.providers.offline import OfflineProvider

        messages: list[Message] = []
        for content in llm_request.contents:
            for part in content.parts or []:
                if part.function_call is not None:
                    call = part.function_call
                    messages.append(Message("assistant", "", (ToolCall(
                        call.id or "", call.name or "", dict(call.args or {})),)))
                elif part.function_response is not None:
                    done = part.function_response
                    messages.append(Message("tool", json.dumps(done.response),
                                            tool_call_id=done.id, name=done.name))
                elif part.text and not part.thought:
                    role = "assistant" if content.role == "model" else "user"
                    messages.append(Message(role, part.text))
        config = llm_request.config
        tools = tuple(ToolSpec(d.name or "", d.description or "")
                      for tool in (config.tools or []) if isinstance(tool, types.Tool)
                      for d in tool.function_declarations or [])
        system = config.system_instruction if isinstance(config.system_instruction, str) else ""
        # ADK says nothing of a call's purpose: rollchat's summary request is its last message
        last = messages[-1].content if messages else ""
        purpose = "summary" if "<summary-request>" in last or last.startswith(
            "Summarize the session") else "chat"
        text, parts, usage = "", [], None
        for event in OfflineProvider().stream(ChatRequest(
                self.model, system, tuple(messages), tools=tools, purpose=purpose)):
            if isinstance(event, TextDelta):
                text += event.text
                if stream:
                    yield LlmResponse(content=types.Content(
                        role="model", parts=[types.Part(text=event.text)]), partial=True)
            elif isinstance(event, ToolCallEvent):
                parts.append(types.Part(function_call=types.FunctionCall(
                    id=event.call.id, name=event.call.name, args=dict(event.call.arguments))))
            elif isinstance(event, UsageEvent):
                usage = types.GenerateContentResponseUsageMetadata(
                    prompt_token_count=event.usage.input_tokens,
                    candidates_token_count=event.usage.output_tokens)
        yield LlmResponse(content=types.Content(
            role="model", parts=[types.Part(text=text), *parts]), usage_metadata=usage)


def _model() -> Any:
    if not os.environ.get("OPENAI_API_KEY"):
        return OfflineModel()
    from google.adk.models.lite_llm import LiteLlm

    return LiteLlm(model="openai/" + os.environ.get("EXAMPLE_MODEL", "gpt-5.4-mini"),
                   api_base=os.environ.get("OPENAI_BASE_URL") or None)


root_agent = LlmAgent(
    name="counter",
    model=_model(),
    instruction="You are a helpful assistant. Use word_count when asked to count words.",
    tools=[word_count],
)
