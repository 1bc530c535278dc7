"""The verified cache as a LangChain LLM cache (a ``langchain-core`` ``BaseCache``).

::

    from langchain_core.globals import set_llm_cache
    from adapters.integrations.langchain_cache import VerifiedLLMCache

    set_llm_cache(VerifiedLLMCache())   # in front of every LangChain LLM and chat model

LangChain calls ``lookup(prompt, llm_string)`` before a model call and
``update(prompt, llm_string, generations)`` after one. ``llm_string`` names the
model and its call parameters (model name, temperature, stop words, bound
tools, ...): each distinct one gets its own
:class:`~adapters.verified_cache.VerifiedCache`, so an answer never crosses
models or settings. Within one, the answer stored for a request is served to
another request only when the verified cache says the new one needs exactly
that answer (policy, exact match, recall gate, verifier at its certified
operating point).

How a prompt becomes a :class:`~cacheeval.schema.Request` (:func:`prompt_request`):

* a plain LLM's prompt string is the query;
* a chat model's prompt is LangChain's serialisation of the message list
  (``langchain_core.load.dumps``). The system messages become the system
  prompt, the last message (a human message) the query, and every message
  before it a prior turn (``user``/``assistant``/...). The system prompt is
  how a user reaches the cache: the verified cache keeps entries under
  different system prompts apart, so put what tells users (or apps, or personas)
  apart - a user id, a tenant - in the system message. A system prompt that
  carries a signed-in user's profile ("Customer: Ana ...") is never cached at
  all (the policy tier).
* A chat prompt the verified cache cannot read faithfully - non-text content
  (images, files), a message carrying tool calls, or a last message that is not
  a human message - is never cached: ``lookup`` returns None and ``update``
  stores nothing.

A generation that calls a tool (a chat message with tool calls) is never
stored: it is an action to take, not an answer to reuse, and the verified
cache's policy tier cannot see the tools LangChain binds (they are part of
``llm_string``, so they key the cache exactly, but their definitions never
reach the policy rules on mutating and live-data tools).

The generations LangChain hands to ``update`` are kept in memory as given and
returned (as a new list) on a hit. A second ``update`` for an identical request
under the same ``llm_string`` replaces the stored generations.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.outputs import Generation

from adapters.verified_cache import Request, Resources, VerifiedCache
from adapters.verified_cache.cache import exact_key
from adapters.verified_cache.model import Verifier
from cacheeval.metrics.sweep import OperatingPoint

#: Message class name -> the role of a turn ("system": part of the system prompt).
ROLES = {
    "SystemMessage": "system",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
}
#: A ``ChatMessage``'s own role -> the role of a turn (other roles are kept as given).
CHAT_ROLES = {"human": "user", "ai": "assistant"}


def _text(content: Any) -> str | None:
    """A message's content as text: a string, or a list of strings and
    ``{"type": "text", "text": ...}`` blocks; None for anything else."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            return None
    return "".join(parts)


def calls_a_tool(generation: Generation) -> bool:
    """Whether a generation is a chat message that calls a tool (never stored)."""
    message = getattr(generation, "message", None)
    if message is None:
        return False
    extra = getattr(message, "additional_kwargs", None) or {}
    return bool(
        getattr(message, "tool_calls", None)
        or getattr(message, "invalid_tool_calls", None)
        or extra.get("tool_calls")
        or extra.get("function_call")
    )


def _serialised_messages(prompt: str) -> list[tuple[str, dict[str, Any]]] | None:
    """(class name, kwargs) of every message in a chat model's serialised prompt,
    or None when ``prompt`` is not one (then it is a plain LLM prompt)."""
    if not prompt.startswith("[{"):
        return None
    try:
        data = json.loads(prompt)
    except ValueError:
        return None
    if not isinstance(data, list) or not data:
        return None
    out = []
    for item in data:
        if not (
            isinstance(item, dict)
            and item.get("lc") == 1
            and item.get("type") == "constructor"
            and isinstance(item.get("id"), list)
            and item["id"]
            and isinstance(item.get("kwargs"), dict)
        ):
            return None
        name = str(item["id"][-1]).removesuffix("Chunk")
        if not name.endswith("Message"):
            return None
        out.append((name, item["kwargs"]))
    return out


def prompt_request(prompt: str) -> Request | None:
    """The request a LangChain prompt stands for (module docstring); None when
    it cannot be read faithfully (never cached).

    >>> prompt_request("What is 2 + 2?")
    Request(query='What is 2 + 2?', context=None, system_prompt=None, tools=None)
    """
    messages = _serialised_messages(prompt)
    if messages is None:
        return Request(query=prompt)
    system: list[str] = []
    turns: list[dict[str, str]] = []
    for name, kwargs in messages:
        text = _text(kwargs.get("content", ""))
        extra = kwargs.get("additional_kwargs") or {}
        calls = (kwargs.get(k) or extra.get(k) for k in ("tool_calls", "invalid_tool_calls"))
        if text is None or any(calls) or extra.get("function_call"):
            return None
        role = ROLES.get(name, "")
        if name == "ChatMessage":
            own = str(kwargs.get("role", ""))
            role = CHAT_ROLES.get(own, own)
        if not role:
            return None
        if role == "system":
            system.append(text)
        else:
            turns.append({"role": role, "content": text})
    if not turns or turns[-1]["role"] != "user":
        return None
    return Request(
        query=turns[-1]["content"],
        context=tuple(turns[:-1]) or None,
        system_prompt="\n".join(system) or None,
    )


class VerifiedLLMCache(BaseCache):
    """A LangChain LLM cache backed by the verified cache (module docstring).

    ``operating_point``/``gate_threshold``: serve at these instead of the shipped
    model's certified ones; ``model_dir``: another saved verifier; ``resources``:
    share an embedder and verifier with other verified caches; ``top_k``: how
    many stored requests the verifier examines per lookup.
    """

    def __init__(
        self,
        *,
        operating_point: OperatingPoint | None = None,
        gate_threshold: float | None = None,
        model_dir: str | Path | None = None,
        resources: Resources | None = None,
        top_k: int = 3,
    ) -> None:
        if resources is None:
            verifier = Verifier.load(Path(model_dir)) if model_dir is not None else None
            resources = Resources(verifier=verifier)
        self.resources = resources
        self.operating_point = operating_point
        self.gate_threshold = gate_threshold
        self.top_k = top_k
        self._caches: dict[str, VerifiedCache] = {}
        #: per llm_string: exact request key -> the id its generations are kept under
        self._ids: dict[str, dict[str, str]] = {}
        self._values: dict[str, list[Generation]] = {}
        self._next_id = 0
        self._lock = threading.Lock()

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        request = prompt_request(prompt)
        if request is None:
            return None
        with self._lock:
            cache = self._caches.get(llm_string)
            if cache is None:
                return None
            answer_id = cache.get(request)
            if answer_id is None:
                return None
            return list(self._values[answer_id])

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        request = prompt_request(prompt)
        if request is None or any(calls_a_tool(g) for g in return_val):
            return
        with self._lock:
            ids = self._ids.setdefault(llm_string, {})
            key = exact_key(request)
            if key in ids:
                self._values[ids[key]] = list(return_val)
                return
            cache = self._caches.get(llm_string)
            if cache is None:
                cache = VerifiedCache(
                    resources=self.resources,
                    operating_point=self.operating_point,
                    gate_threshold=self.gate_threshold,
                    top_k=self.top_k,
                )
                self._caches[llm_string] = cache
            answer_id = str(self._next_id)
            if cache.put(request, answer_id).stored:
                self._next_id += 1
                ids[key] = answer_id
                self._values[answer_id] = list(return_val)

    def clear(self, **kwargs: Any) -> None:
        """Forget every stored answer (the embedder and verifier stay loaded)."""
        with self._lock:
            self._caches.clear()
            self._ids.clear()
            self._values.clear()

    def __len__(self) -> int:
        """Stored requests, over every ``llm_string``."""
        return sum(len(ids) for ids in self._ids.values())
