"""The verified cache as a LangChain ``BaseCache``, in front of langchain-core's own
fake LLM and fake chat model (they count their calls), with the real MiniLM
ONNX embedder and the shipped verifier."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("lightgbm")

from langchain_core.globals import get_llm_cache, set_llm_cache  # noqa: E402
from langchain_core.language_models.fake import FakeListLLM  # noqa: E402
from langchain_core.language_models.fake_chat_models import (  # noqa: E402
    FakeListChatModel,
    FakeMessagesListChatModel,
)
from langchain_core.load import dumps  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import Generation  # noqa: E402

from adapters.integrations.langchain_cache import VerifiedLLMCache, prompt_request  # noqa: E402
from adapters.verified_cache import Request  # noqa: E402

SLOW = pytest.mark.slow(reason="loads MiniLM (ONNX Runtime) and the shipped verifier")

STORED = "How many ounces are in 3 pounds?"
PARAPHRASE = "How many ounces are there in 3 pounds?"
OTHER_NUMBER = "How many ounces are in 4 pounds?"
SWAPPED = "How many pounds are in 3 ounces?"


# --- how a prompt becomes a request (no model) -----------------------------------------


def test_importing_the_package_imports_neither_framework() -> None:
    code = (
        "import sys, adapters.integrations; "
        "print(sorted(m for m in ('gptcache', 'langchain_core') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_plain_prompt_is_the_query() -> None:
    assert prompt_request(STORED) == Request(STORED)
    assert prompt_request('[{"not": "a message"}]') == Request('[{"not": "a message"}]')
    assert prompt_request("[1, 2") == Request("[1, 2")


def test_a_chat_prompt_gives_system_prompt_turns_and_query() -> None:
    messages = [
        SystemMessage("Session of user u-1001."),
        SystemMessage("Answer briefly."),
        HumanMessage("What is the capital of France?"),
        AIMessage("Paris."),
        ChatMessage(role="user", content=[{"type": "text", "text": "And "}, "of Spain?"]),
    ]
    assert prompt_request(dumps(messages)) == Request(
        "And of Spain?",
        (
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "Paris."},
        ),
        "Session of user u-1001.\nAnswer briefly.",
    )
    assert prompt_request(dumps([HumanMessage("hi")])) == Request("hi")
    chat_roles = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="human", content="hi"),
    ]
    assert prompt_request(dumps(chat_roles)) == Request("hi", system_prompt="Be brief.")


def test_a_chat_prompt_it_cannot_read_faithfully_is_never_cached() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    calls = AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": "c1"}])
    for messages in (
        [HumanMessage(content=[{"type": "text", "text": "What is this?"}, image])],
        [HumanMessage("Find x"), calls, ToolMessage("42", tool_call_id="c1")],
        [HumanMessage("Find x"), AIMessage("The answer is")],
        [
            HumanMessage("Find x"),
            AIMessage("", additional_kwargs={"function_call": {"name": "f", "arguments": "{}"}}),
            HumanMessage("ok"),
        ],
    ):
        prompt = dumps(messages)
        assert prompt_request(prompt) is None
        cache = VerifiedLLMCache()
        cache.update(prompt, "llm", [Generation(text="stored")])
        assert len(cache) == 0 and cache.lookup(prompt, "llm") is None


# --- in front of LangChain's fake models -------------------------------------------------


@pytest.fixture(scope="module")
def verified() -> VerifiedLLMCache:
    pytest.importorskip("onnxruntime")
    return VerifiedLLMCache()


@pytest.fixture
def llm_cache(verified: VerifiedLLMCache) -> Iterator[VerifiedLLMCache]:
    """The verified cache as LangChain's global LLM cache, emptied, then unset."""
    before = get_llm_cache()
    verified.clear()
    set_llm_cache(verified)
    yield verified
    set_llm_cache(before)


def fake_llm() -> FakeListLLM:
    return FakeListLLM(responses=[f"response {i}" for i in range(10)])


@SLOW
def test_an_llm_behind_the_cache_is_not_called_for_a_paraphrase(llm_cache: Any) -> None:
    llm = fake_llm()
    assert llm.invoke(STORED) == "response 0" and llm.i == 1
    assert llm.invoke(PARAPHRASE) == "response 0" and llm.i == 1  # served from the cache
    assert asyncio.run(llm.ainvoke(PARAPHRASE)) == "response 0" and llm.i == 1
    assert llm.invoke(OTHER_NUMBER) == "response 1" and llm.i == 2  # a changed number
    assert llm.invoke(SWAPPED) == "response 2" and llm.i == 3  # the direction swapped
    assert llm.invoke(OTHER_NUMBER) == "response 1" and llm.i == 3  # now stored itself
    assert len(llm_cache) == 3
    # another model (another llm_string) never gets this model's answers
    other = FakeListLLM(responses=["other 0", "other 1"])
    assert other.invoke(PARAPHRASE) == "other 0" and other.i == 1


@SLOW
def test_a_chat_model_is_called_again_for_another_user(llm_cache: Any) -> None:
    chat = FakeListChatModel(responses=[f"reply {i}" for i in range(10)])

    def ask(user: str, question: str) -> str:
        system = SystemMessage(f"Session of user {user}. Answer briefly.")
        return str(chat.invoke([system, HumanMessage(question)]).content)

    assert ask("u-1001", "How do I reset my password?") == "reply 0" and chat.i == 1
    assert ask("u-1001", "How can I reset my password?") == "reply 0" and chat.i == 1
    assert ask("u-2002", "How can I reset my password?") == "reply 1" and chat.i == 2
    assert ask("u-1001", OTHER_NUMBER) == "reply 2" and chat.i == 3


@SLOW
def test_a_signed_in_users_profile_is_never_cached(llm_cache: Any) -> None:
    chat = FakeListChatModel(responses=[f"reply {i}" for i in range(10)])
    messages = [SystemMessage("Customer: Ana Silva, plan Gold."), HumanMessage(STORED)]
    assert chat.invoke(messages).content == "reply 0"
    assert chat.invoke(messages).content == "reply 1" and chat.i == 2
    assert len(llm_cache) == 0


@SLOW
def test_a_reply_that_calls_a_tool_is_never_stored(llm_cache: Any) -> None:
    call = {"name": "delete_account", "args": {"user": "u-1001"}, "id": "c1"}
    chat = FakeMessagesListChatModel(
        responses=[AIMessage("", tool_calls=[call]), AIMessage("", tool_calls=[call])]
    )
    messages = [HumanMessage("Delete my account")]
    assert chat.invoke(messages).tool_calls and chat.i == 1
    assert chat.invoke(messages).tool_calls and chat.i == 0  # called again (it cycles)
    assert len(llm_cache) == 0
    text = FakeMessagesListChatModel(responses=[AIMessage("48 ounces"), AIMessage("other")])
    assert text.invoke([HumanMessage(STORED)]).content == "48 ounces" and text.i == 1
    assert text.invoke([HumanMessage(PARAPHRASE)]).content == "48 ounces" and text.i == 1


@SLOW
def test_a_second_update_of_the_same_request_replaces_its_answer(llm_cache: Any) -> None:
    llm_cache.update(STORED, "llm", [Generation(text="old")])
    llm_cache.update(f"  {STORED} ", "llm", [Generation(text="new")])
    assert len(llm_cache) == 1
    hit = llm_cache.lookup(PARAPHRASE, "llm")
    assert isinstance(hit, list) and [g.text for g in hit] == ["new"]
    assert llm_cache.lookup(PARAPHRASE, "another llm") is None
