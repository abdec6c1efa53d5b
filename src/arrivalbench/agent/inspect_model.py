"""The Model protocol on top of an Inspect AI model, so any provider Inspect reaches can sit in the loop.

Inspect does the provider work (clients, retries with backoff, rate limits, usage accounting);
this adapter only translates. A Request becomes Inspect chat messages and a GenerateConfig
carrying the sample's temperature and the output cap; the ModelOutput becomes a Reply. For
`generate`, an error that survives Inspect's retries becomes Reply(stop="error"), never an
exception, so one failed cell never stops a sweep; inside an Inspect eval it raises, so the
sample fails and `inspect eval-retry` can run it again. Inspect's own control flow (sample limits, an opted-in
fail_on_refusal, cancellation) still propagates: those end the sample, not the cell.

This module imports Inspect at load time; it is imported only when an Inspect model is asked for.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    ModelRefusalError,
    get_model,
)
from inspect_ai.model import Model as InspectAIModel
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolInfo, ToolParam, ToolParams
from inspect_ai.util import LimitExceededError

from arrivalbench.agent.models import Message, Reply, Request, ToolCall, ToolSpec
from arrivalbench.errors import UsageError

STOP = {"max_tokens": "length", "model_length": "length", "content_filter": "refusal"}
"""Inspect stop reasons that are not a plain finish; the rest (stop, tool_calls, unknown) are "stop"."""

PASS_THROUGH = (LimitExceededError, ModelRefusalError)
"""Inspect's own control flow: a sample limit, or a refusal the eval asked to fail on. These end the sample."""

TEMPERATURE_DROPPED = "temperature not sent: the provider rejected the parameter"


def _chat(message: Message) -> ChatMessage:
    if message.role == "system":
        return ChatMessageSystem(content=message.content)
    if message.role == "user":
        return ChatMessageUser(content=message.content)
    if message.role == "assistant" and message.tool_calls:
        calls = [
            InspectToolCall(id=c.id, function=c.function, arguments=c.arguments)
            for c in message.tool_calls
        ]
        return ChatMessageAssistant(content=message.content, tool_calls=calls)
    if message.role == "assistant":
        return ChatMessageAssistant(content=message.content)
    if message.role == "tool":
        return ChatMessageTool(
            content=message.content, tool_call_id=message.tool_call_id, function=message.function
        )
    raise ValueError(f"message role {message.role!r}: expected system, user, assistant or tool")


def tool_info(spec: ToolSpec) -> ToolInfo:
    """An agent tool as Inspect's JSON-Schema tool description (every parameter a required string)."""
    return ToolInfo(
        name=spec.name,
        description=spec.description,
        parameters=ToolParams(
            properties={
                name: ToolParam(type="string", description=meaning)
                for name, meaning in spec.parameters.items()
            },
            required=list(spec.parameters),
        ),
    )


def without_markup(text: str) -> str:
    """`text` with Inspect's Rich markup tags ([bold], [blue]...[/blue]) removed and everything
    else kept: Rich's own markup parser decides what is a tag, so `[1, 2]` stays as it is."""
    from rich.errors import MarkupError
    from rich.markup import render

    try:
        return render(text).plain
    except MarkupError:  # a closing tag without its opening one: drop the tags by their shape
        return re.sub(r"\[/?[a-z#@][^\[\]]*\]", "", text)


def _one_line(exc: Exception) -> str:
    """Inspect's prerequisite messages carry Rich markup and line breaks; the CLI prints one plain line."""
    text = without_markup(str(exc))
    return " ".join(text.split()).removeprefix("ERROR: ") or type(exc).__name__


def _provider_message(exc: Exception) -> str:
    """The provider's own words, without Rich markup: Inspect's ModelGenerateError also carries
    the whole request, which names every parameter sent (temperature included), so its full text
    would match anything."""
    text = getattr(exc, "provider_message", None) or str(exc) or type(exc).__name__
    return without_markup(text).strip()


def _rejects_temperature(exc: Exception) -> bool:
    return "temperature" in _provider_message(exc).lower()


def reply_of(output: ModelOutput) -> Reply:
    """A Reply from an Inspect ModelOutput: the first choice's text, stop reason and usage."""
    usage = output.usage
    input_tokens = output_tokens = None
    if usage is not None:
        # Inspect counts cached input apart from full-rate input; the prompt's size is their sum.
        input_tokens = (
            usage.input_tokens
            + (usage.input_tokens_cache_read or 0)
            + (usage.input_tokens_cache_write or 0)
        )
        output_tokens = usage.output_tokens
    text = output.completion or ""
    reason = output.stop_reason if not output.empty else "unknown"
    stop = STOP.get(reason, "stop")
    error = output.error
    if error and stop != "refusal":
        stop = "error"
    calls = tuple(
        ToolCall(
            id=c.id, function=c.function, arguments=dict(c.arguments), parse_error=c.parse_error
        )
        for c in (output.message.tool_calls or [] if output.choices else [])
    )
    return Reply(
        text=text,
        stop=stop,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        error=error,
        served_model=output.model or None,
        tool_calls=calls,
    )


def _estimated_tokens(text: str) -> int:
    """About four characters a token: the estimate mockllm's usage gets instead of tiktoken's."""
    return max(1, -(-len(text) // 4))


def _count_tokens_offline(model: Any) -> None:
    """Inspect's mock model (`mockllm/model`) counts the tokens of its usage with tiktoken's
    o200k_base, which downloads on first use: offline the eval ended "Task interrupted". The mock
    model's counts are estimates either way, so it counts characters instead (four a token) and
    the eval runs with no network; every other provider is left as it is."""
    api = getattr(model, "api", None)
    if api is not None and type(api).__name__ == "MockLLM":

        async def count_text_tokens(text: str) -> int:
            return _estimated_tokens(text)

        api.count_text_tokens = count_text_tokens


class ModelCallError(RuntimeError):
    """A model call that failed after the provider's retries, raised to fail an Inspect sample."""


class InspectModel:
    """An Inspect model as a loop Model: `InspectModel("openai/gpt-4o")` or `InspectModel(model)`.

    Given a spec, the model is built with its own retry budget and timeout; given an Inspect
    `Model` (the solver passes the eval's model), it is used as it is, with the eval's settings.
    The sample's temperature is sent when the provider accepts it: a request that the provider
    rejects over the temperature is sent once more without it, the model remembers this for later
    requests, and every reply produced without it says so in its notes.

    A call that still fails after Inspect's retries is a Reply(stop="error") for `generate`
    (the cell records `model_error`, and the sweep goes on); with `raise_errors` (the Inspect
    solver) it raises instead, so the sample fails and `inspect eval-retry` reruns it.
    """

    def __init__(
        self,
        model: str | InspectAIModel,
        *,
        max_retries: int = 5,
        timeout: int = 600,
        raise_errors: bool = False,
    ) -> None:
        if isinstance(model, str):
            try:
                model = get_model(
                    model, config=GenerateConfig(max_retries=max_retries, timeout=timeout)
                )
            except Exception as exc:
                raise UsageError(
                    f"--model {model!r}: Inspect could not load it: {_one_line(exc)}"
                ) from None
        _count_tokens_offline(model)
        self.model = model
        self.name = str(model)
        self.omit_temperature = False
        self.raise_errors = raise_errors

    async def _generate(self, request: Request, temperature: float | None) -> ModelOutput:
        config = GenerateConfig(max_tokens=request.max_tokens, temperature=temperature)
        messages = [_chat(m) for m in request.messages]
        if request.tools:  # the agent scaffold; the loop's requests are sent exactly as before
            tools = [tool_info(t) for t in request.tools]
            return await self.model.generate(messages, tools=tools, config=config)
        return await self.model.generate(messages, config=config)

    async def _send(self, request: Request) -> ModelOutput:
        if not self.omit_temperature:
            try:
                return await self._generate(request, request.temperature)
            except PASS_THROUGH:
                raise
            except Exception as exc:
                if not _rejects_temperature(exc):
                    raise
                self.omit_temperature = True
        return await self._generate(request, None)

    async def complete(self, request: Request) -> Reply:
        try:
            output = await self._send(request)
        except PASS_THROUGH:
            raise
        except Exception as exc:
            if self.raise_errors:
                raise
            reply = Reply(
                text="", stop="error", error=f"{type(exc).__name__}: {_provider_message(exc)}"
            )
        else:
            reply = reply_of(output)
            if self.raise_errors and reply.stop == "error":
                raise ModelCallError(f"{self.name}: {reply.error}")
        return replace(reply, notes=(TEMPERATURE_DROPPED,)) if self.omit_temperature else reply
