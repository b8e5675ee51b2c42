"""The shared judge client: against the real local llama.cpp server (slow) and a fake one that misbehaves."""

import logging
import os
import sqlite3
import subprocess
import sys
import threading
import time
from email.utils import formatdate

import pytest
from lm_eval_tasks.utils.models import free_port
from lm_eval_tasks.utils.openai_client import (
    ChatCache,
    ChatClient,
    ChatEndpoint,
    parse_endpoint_spec,
    prompt_hash,
    retry_after_seconds,
)

from tests.fake_openai import FakeChatServer, FakeReply

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


# ----------------------------------------------------------------------------- a fake server that misbehaves

KEY = "sk-live-0123456789abcdefghijKLMNOP"


class FakeClock:
    """Monotonic time that moves only when the client sleeps; every wait is kept."""

    def __init__(self):
        self.now, self.waits = 1000.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def scripted(*replies):
    """A respond function giving ``replies`` in order, then repeating the last one."""
    replies, lock = list(replies), threading.Lock()

    def respond(messages, model):
        with lock:
            return replies.pop(0) if len(replies) > 1 else replies[0]

    return respond


@pytest.fixture
def fake_server():
    servers = []

    def start(respond):
        servers.append(FakeChatServer(respond))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def client_for(server, tmp_path, clock=None, concurrency=1, **settings):
    clock = clock or FakeClock()
    endpoint = ChatEndpoint(server.base_url, "fake-judge", api_key_env="JUDGE_KEY", **settings)
    return ChatClient(
        endpoint, ChatCache(tmp_path / "calls.sqlite"), concurrency, sleep=clock.sleep, clock=clock.monotonic
    )


def test_a_key_straddling_the_300_character_cut_leaves_no_trace(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    body = "x" * 290 + f"Incorrect API key provided: {KEY}. You can find your API key at ..."
    server = fake_server(lambda messages, model: FakeReply(401, body))
    client = client_for(server, tmp_path)
    (result,) = client.complete_many([QUESTION])
    assert not result.ok and result.error.startswith("HTTP 401: " + "x" * 290)
    assert server.calls == 1 and server.authorizations == [f"Bearer {KEY}"]  # 401 is not retried
    assert all(KEY[i : i + 6] not in result.error for i in range(len(KEY) - 5))  # not even part of the key
    assert len(result.error) == len("HTTP 401: ") + 300 + len("...")


def test_an_error_body_echoing_the_key_in_json_is_scrubbed(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    server = fake_server(
        lambda messages, model: FakeReply(
            400, f'{{"error": {{"message": "bad request from key {KEY}", "code": "invalid_request"}}}}'
        )
    )
    (result,) = client_for(server, tmp_path).complete_many([QUESTION])
    assert result.error == 'HTTP 400: {"error": {"message": "bad request from key ***", "code": "invalid_request"}}'


@pytest.mark.parametrize(
    "content, kind",
    [(None, "null"), (7, "a number"), ({"text": "True"}, "an object"), ([{"type": "text", "text": "True"}], "a list")],
)
def test_content_that_is_not_text_is_a_failed_call_and_never_cached(fake_server, tmp_path, content, kind):
    server = fake_server(scripted(FakeReply.chat(content, finish_reason="length"), "True"))
    client = client_for(server, tmp_path, max_retries=3)
    (result,) = client.complete_many([QUESTION])
    assert not result.ok and result.text is None
    assert result.error == f"reply content is {kind}, not text (finish_reason 'length')"
    assert (server.calls, client.failures) == (1, 1)  # the same request would give the same reply: not retried
    assert client.cache.get(client.endpoint.cache_key(QUESTION)) is None
    again = client.complete(QUESTION)  # nothing was cached, so the next run asks again
    assert (again.text, again.cached, server.calls) == ("True", False, 2)


def test_retry_after_in_seconds_and_as_an_http_date_is_honoured(fake_server, tmp_path):
    in_30_s = formatdate(time.time() + 30, usegmt=True)
    server = fake_server(
        scripted(
            FakeReply(429, "slow down", {"Retry-After": "7"}), FakeReply(503, "busy", {"Retry-After": in_30_s}), "True"
        )
    )
    clock = FakeClock()
    client = client_for(server, tmp_path, clock, max_retries=3)
    (result,) = client.complete_many([QUESTION])
    assert (result.text, result.attempts, server.calls) == ("True", 3, 3)
    assert clock.waits[0] == 7 and 20 < clock.waits[1] <= 30  # not the 0.5 s and 1 s backoff


def test_retry_after_values():
    assert retry_after_seconds("120") == 120 and retry_after_seconds(" 1.5 ") == 1.5
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412420.0) == 60.0  # 07:27:00 GMT
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412500.0) == 0.0  # already past
    assert retry_after_seconds("-5") == 0.0
    for unreadable in (None, "", "soon", "nan", "inf", "Wed, 99 Foo 2015"):
        assert retry_after_seconds(unreadable) is None


def test_the_whole_retry_time_is_bounded(fake_server, tmp_path):
    # a Retry-After longer than the budget: given up at once, saying why
    server = fake_server(lambda messages, model: FakeReply(429, "quota", {"Retry-After": "3600"}))
    clock = FakeClock()
    (result,) = client_for(server, tmp_path, clock, max_retries=5, max_retry_seconds=60).complete_many([QUESTION])
    assert (server.calls, clock.waits) == (1, [])
    assert result.error == "HTTP 429: quota (not retried: waiting 3600 s would pass max_retry_seconds=60)"
    # backoff 0.5, 1, 2 s fits in 4 s; the next 4 s wait would end at 7.5 s
    server = fake_server(lambda messages, model: FakeReply(503, "busy"))
    clock = FakeClock()
    client = client_for(server, tmp_path, clock, max_retries=10, max_retry_seconds=4)
    (result,) = client.complete_many([QUESTION])
    assert (server.calls, result.attempts, clock.waits) == (4, 4, [0.5, 1.0, 2.0])


@pytest.mark.parametrize(
    "malformed",
    [
        FakeReply(200, "<html>gateway</html>"),
        FakeReply(200, '{"choices": []}'),
        FakeReply(200, '{"error": "overloaded"}'),
        FakeReply(200, '["x"]'),
        FakeReply(200, '{"choices": [{"message": {}}]}'),
    ],
)
def test_a_malformed_200_is_retried_once(fake_server, tmp_path, malformed):
    server = fake_server(scripted(malformed, "True"))
    client = client_for(server, tmp_path, max_retries=5)
    assert (client.complete(QUESTION).text, server.calls) == ("True", 2)
    server = fake_server(lambda messages, model: malformed)
    client = client_for(server, tmp_path / "again", max_retries=5)
    result = client.complete(QUESTION)
    assert (result.ok, result.attempts, server.calls) == (False, 2, 2)  # once, not max_retries times
    assert result.error.startswith("malformed reply (")


def test_the_connection_pool_holds_one_connection_per_worker(fake_server, tmp_path, caplog):
    workers = 16
    all_in_flight = threading.Barrier(workers, timeout=30)

    def respond(messages, model):
        all_in_flight.wait()  # each reply waits until 16 requests are open at once
        return messages[-1]["content"].upper()

    server = fake_server(respond)
    client = client_for(server, tmp_path, concurrency=workers)
    prompts = [[{"role": "user", "content": f"prompt {i}"}] for i in range(workers)]
    with caplog.at_level(logging.WARNING, logger="urllib3"):
        results = client.complete_many(prompts)
    assert [r.text for r in results] == [f"PROMPT {i}" for i in range(workers)]
    assert not [r for r in caplog.records if "Connection pool is full" in r.getMessage()]


def test_credentials_in_the_url_reach_no_file(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    server = fake_server(lambda messages, model: "True")
    endpoint = ChatEndpoint(
        server.base_url.replace("http://", "http://judge:pw-9f8e7d6c@") + "?key=url-key-5a4b3c",
        "fake-judge",
        api_key_env="JUDGE_KEY",
    )
    assert endpoint.record()["base_url"] == server.base_url.replace("http://", "http://judge:***@") + "?key=***"
    cache_path = tmp_path / "calls.sqlite"
    assert ChatClient(endpoint, ChatCache(cache_path)).complete(QUESTION).text == "True"
    stored = cache_path.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("calls.sqlite-*"))
    assert b"True" in stored and b"fake-judge" in stored
    for secret in (KEY, "pw-9f8e7d6c", "url-key-5a4b3c"):
        assert secret.encode() not in stored


def test_max_retry_seconds_is_part_of_the_spec():
    endpoint = parse_endpoint_spec("base_url=http://127.0.0.1:1/v1,model=m,max_retries=2,max_retry_seconds=30")
    assert (endpoint.max_retries, endpoint.max_retry_seconds) == (2, 30.0)
    assert ChatEndpoint("http://x/v1", "m").max_retry_seconds == 600.0


CLIENT_RUN = """
import sys
from lm_eval_tasks.utils.openai_client import ChatCache, ChatClient, ChatEndpoint
base_url, cache_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = ChatClient(ChatEndpoint(base_url, "fake-judge", max_retries=0), ChatCache(cache_path), concurrency=1)
client.complete_many([[{"role": "user", "content": f"prompt {i}"}] for i in range(n)])
"""


def test_a_killed_run_resumes_from_the_cache_and_makes_only_the_missing_calls(fake_server, tmp_path):
    n, answered_before_kill = 12, 5
    held, release, answered = threading.Event(), threading.Event(), []

    def respond(messages, model):
        prompt = messages[-1]["content"]
        if not release.is_set() and len(answered) >= answered_before_kill:
            held.set()  # the client has stored every answer it got: it sends the next request only then
            release.wait(60)
            return FakeReply(503, "the client is gone")
        answered.append(prompt)
        return f"answer to {prompt}"

    server = fake_server(respond)
    cache_path = tmp_path / "calls.sqlite"
    run = subprocess.Popen(
        [sys.executable, "-c", CLIENT_RUN, server.base_url, str(cache_path), str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        reached = held.wait(60)
    finally:
        run.kill()  # SIGKILL: no clean-up, no final commit
        _, stderr = run.communicate(timeout=30)
        release.set()
    assert reached, f"the client never reached request {answered_before_kill + 1}:\n{stderr[-3000:]}"
    assert run.returncode != 0 and answered == [f"prompt {i}" for i in range(answered_before_kill)]
    with sqlite3.connect(cache_path) as db:
        assert db.execute("SELECT COUNT(*) FROM answers").fetchone() == (answered_before_kill,)
    seen_before = server.calls  # the answered requests and the one held when the run was killed
    assert seen_before == answered_before_kill + 1

    rerun = ChatClient(ChatEndpoint(server.base_url, "fake-judge"), ChatCache(cache_path), concurrency=3)
    results = rerun.complete_many([[{"role": "user", "content": f"prompt {i}"}] for i in range(n)])
    assert [r.text for r in results] == [f"answer to prompt {i}" for i in range(n)]
    assert [r.cached for r in results] == [True] * answered_before_kill + [False] * (n - answered_before_kill)
    assert sorted(server.prompts()[seen_before:]) == sorted(f"prompt {i}" for i in range(answered_before_kill, n))
    assert (rerun.calls, rerun.cache_hits, server.calls) == (
        n - answered_before_kill,
        answered_before_kill,
        seen_before + n - answered_before_kill,
    )
