"""The shared judge client against the real local llama.cpp server (OpenAI-compatible)."""

import pytest
from lm_eval_tasks.utils.models import free_port
from lm_eval_tasks.utils.openai_client import ChatCache, ChatClient, ChatEndpoint, prompt_hash

QUESTION = [
    {"role": "system", "content": "Answer with one word."},
    {"role": "user", "content": "Is aspirin an antiplatelet drug? Answer True or False."},
]


@pytest.mark.slow
def test_answers_are_cached_and_a_rerun_makes_no_calls(llama_server, tmp_path):
    endpoint = ChatEndpoint(llama_server.base_url, llama_server.model, max_tokens=16)
    cache_path = tmp_path / "judge.sqlite"
    first = ChatClient(endpoint, ChatCache(cache_path), concurrency=2)
    answers = first.complete_many([QUESTION, QUESTION[:1] + [{"role": "user", "content": "Say hello."}]])
    assert all(a.ok and a.text and not a.cached for a in answers)
    assert (first.calls, first.cache_hits, first.failures) == (2, 0, 0)
    # a new client over the same cache file: same answers, no HTTP request at all
    rerun = ChatClient(endpoint, ChatCache(cache_path))
    again = rerun.complete_many([QUESTION, QUESTION[:1] + [{"role": "user", "content": "Say hello."}]])
    assert [a.text for a in again] == [a.text for a in answers] and all(a.cached for a in again)
    assert (rerun.calls, rerun.cache_hits) == (0, 2)


def test_failures_are_returned_not_scored_and_keys_stay_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "sk-very-secret")
    endpoint = ChatEndpoint(
        f"http://127.0.0.1:{free_port()}/v1", "judge", api_key_env="JUDGE_KEY", max_retries=1, timeout=2
    )
    client = ChatClient(endpoint, ChatCache(tmp_path / "c.sqlite"))
    (result,) = client.complete_many([QUESTION])
    assert result.text is None and not result.ok and "Connection" in result.error
    assert (client.calls, client.failures, result.attempts) == (2, 1, 2)  # one retry, then reported
    assert "sk-very-secret" not in repr(result) and "sk-very-secret" not in repr(endpoint.record())
    assert client._headers()["Authorization"] == "Bearer sk-very-secret"  # sent only in the header


def test_cache_key_covers_model_messages_and_sampling_but_not_the_url():
    a = ChatEndpoint("http://127.0.0.1:1/v1", "m")
    assert a.cache_key(QUESTION) == ChatEndpoint("http://127.0.0.1:2/v1", "m").cache_key(QUESTION)
    assert a.cache_key(QUESTION) != ChatEndpoint("http://127.0.0.1:1/v1", "other").cache_key(QUESTION)
    assert a.cache_key(QUESTION) != ChatEndpoint("http://127.0.0.1:1/v1", "m", temperature=0.7).cache_key(QUESTION)
    assert a.cache_key(QUESTION) != a.cache_key(QUESTION[:1])
    assert a.url == "http://127.0.0.1:1/v1/chat/completions"
    assert prompt_hash("Judge: {fact}") == prompt_hash("Judge: {fact}") != prompt_hash("Judge: {fact}.")
