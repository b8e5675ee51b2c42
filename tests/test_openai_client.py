"""The shared judge client: against the real local llama.cpp server (slow) and a fake one that misbehaves."""

import os
import sqlite3
import subprocess
import sys
import threading
import time
from email.utils import formatdate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.models import free_port
from lm_eval_tasks.utils.openai_client import (
    ChatCache,
    ChatClient,
    ChatEndpoint,
    parse_endpoint_spec,
    prompt_hash,
    retry_after_seconds,
)

from tests.conftest import examples
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
    # llama.cpp reports usage; the cached answers keep it
    assert all(a.usage is not None and a.usage.prompt_tokens > 0 for a in answers)
    assert [a.usage for a in again] == [a.usage for a in answers]
    assert 0 < sum(a.usage.completion_tokens for a in answers) <= 2 * 16


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


@pytest.mark.parametrize("key", [f"{KEY}\n", f"sk-{KEY}é", f"{KEY[:10]}\r{KEY[10:]}"])
def test_a_key_that_cannot_be_a_header_value_fails_unsent_and_unnamed(fake_server, tmp_path, monkeypatch, key):
    monkeypatch.setenv("JUDGE_KEY", key)
    server = fake_server(lambda messages, model: "True")
    client = client_for(server, tmp_path, max_retries=3)
    result = client.complete(QUESTION)
    assert (result.ok, result.attempts, server.calls) == (False, 1, 0)  # not sent, and not retried
    assert all(part not in result.error for part in (KEY[:10], KEY[10:]))


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


def test_each_worker_has_its_own_connection(fake_server, tmp_path):
    workers = 16
    all_in_flight = threading.Barrier(workers, timeout=30)

    def respond(messages, model):
        all_in_flight.wait()  # each reply waits until 16 requests are open at once
        return messages[-1]["content"].upper()

    server = fake_server(respond)
    client = client_for(server, tmp_path, concurrency=workers)
    prompts = [[{"role": "user", "content": f"prompt {i}"}] for i in range(workers)]
    results = client.complete_many(prompts)
    assert [r.text for r in results] == [f"PROMPT {i}" for i in range(workers)]
    assert len(set(server.ports)) == workers


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


# ----------------------------------------------------------------------------- current models


def test_a_reasoning_model_refuses_max_tokens_and_temperature_and_takes_its_own_parameters(fake_server, tmp_path):
    server = fake_server(lambda messages, model: "True")
    default = client_for(server, tmp_path, max_retries=3)  # temperature 0, max_tokens 512: what older judges send
    default.endpoint = ChatEndpoint(server.base_url, "o3-mini", api_key_env=None)
    result = default.complete(QUESTION)
    assert not result.ok and result.error.startswith("HTTP 400: ") and "'max_tokens' is not supported" in result.error
    assert server.calls == 1  # a 400 is not retried
    spec = (
        f"base_url={server.base_url},model=o3-mini,temperature=none,max_completion_tokens=2000,reasoning_effort=high,"
        'extra_body={"service_tier": "flex", "metadata": {"run": "a,b=c"}},max_retries=0'
    )
    endpoint = parse_endpoint_spec(spec)
    result = ChatClient(endpoint, ChatCache(tmp_path / "r.sqlite")).complete(QUESTION)
    assert (result.text, result.usage) == ("True", (4 + 9, 1 + 256, 256))  # prompt words 4 + 9; 256 = high effort
    assert server.requests[-1] == {
        "model": "o3-mini",
        "messages": QUESTION,
        "max_completion_tokens": 2000,
        "reasoning_effort": "high",
        "service_tier": "flex",
        "metadata": {"run": "a,b=c"},
    }
    assert endpoint.record() == {
        "model": "o3-mini",
        "base_url": server.base_url,
        "temperature": None,
        "max_tokens": None,
        "max_completion_tokens": 2000,
        "reasoning_effort": "high",
        "extra_body": {"service_tier": "flex", "metadata": {"run": "a,b=c"}},
    }
    # temperature 1 is the one value a reasoning model takes; a non-reasoning model refuses reasoning_effort
    one = parse_endpoint_spec(f"base_url={server.base_url},model=gpt-5-mini,temperature=1,max_completion_tokens=64")
    assert ChatClient(one).complete(QUESTION).text == "True"
    other = parse_endpoint_spec(f"base_url={server.base_url},model=gpt-4o,reasoning_effort=low,max_retries=0")
    refused = ChatClient(other).complete(QUESTION)
    assert "'reasoning_effort' is not supported" in refused.error and server.requests[-1]["max_tokens"] == 512


def test_a_cache_key_made_before_the_new_fields_is_unchanged():
    # answers cached by earlier versions (no max_completion_tokens / reasoning_effort) keep their key
    import hashlib
    import json

    payload = {"model": "m", "messages": QUESTION, "temperature": 0.0, "max_tokens": 512, "extra_body": {}}
    old = hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    assert ChatEndpoint("http://x/v1", "m").cache_key(QUESTION) == old
    assert ChatEndpoint("http://x/v1", "m", reasoning_effort="low").cache_key(QUESTION) != old


@pytest.mark.parametrize(
    "spec, message",
    [
        ('extra_body={"a": 1', "extra_body is not JSON"),
        ("extra_body=[1, 2]", "extra_body must be a JSON object, not a list"),
        ('extra_body={"temperature": 0.2}', "extra_body may not set temperature: use the field of that name"),
        ('extra_body={"a": 1} x', "extra_body's JSON must be followed by a comma"),
        ("max_tokens=64,max_completion_tokens=64", "give max_tokens or max_completion_tokens, not both"),
        ("model=other", "model is given twice"),
        ("temperature=warm", "could not convert string to float: 'warm'"),
        ("api_key=sk-1", "pass the key's environment variable as api_key_env=VAR"),
        ("oops", "expected key=value pairs"),
    ],
)
def test_bad_judge_specs_say_what_is_wrong(spec, message):
    from lm_eval_tasks.utils.data import DataError

    with pytest.raises(DataError, match=None) as caught:
        parse_endpoint_spec(f"base_url=http://127.0.0.1:1/v1,model=m,{spec}")
    assert message in str(caught.value)


@given(st.text(alphabet=st.sampled_from(list('=,{}[]"\\: none1.-_abextra_bodymodelbase_url')), max_size=80))
@settings(max_examples=examples(300), deadline=None)
def test_any_spec_is_an_endpoint_or_a_data_error(text):
    from lm_eval_tasks.utils.data import DataError

    for spec in (text, f"base_url=http://h/v1,model=m,{text}", f"base_url=http://h/v1,model=m,extra_body={text}"):
        try:
            parse_endpoint_spec(spec)
        except DataError:
            pass


@pytest.mark.parametrize(
    "field, message",
    [
        ("temperature=nan", "temperature must be a finite number >= 0, not nan"),
        ("timeout=-1", "timeout must be a finite number >= 0, not -1.0"),
        ("max_tokens=0", "max_tokens must be at least 1, not 0"),
        ("max_response_bytes=0", "max_response_bytes must be at least 1, not 0"),
        ("max_retries=-2", "max_retries must be >= 0, not -2"),
        ("extra_body=" + "[" * 100000, "extra_body is nested deeper than can be read"),
    ],
)
def test_out_of_range_spec_values_are_refused(field, message):
    from lm_eval_tasks.utils.data import DataError

    with pytest.raises(DataError) as caught:
        parse_endpoint_spec(f"base_url=http://h/v1,model=m,{field}")
    assert message in str(caught.value)


def test_omitted_and_none_fields():
    endpoint = parse_endpoint_spec("base_url=http://h/v1,model=m,temperature=none,max_tokens=none")
    assert endpoint.body(QUESTION) == {"model": "m", "messages": QUESTION}
    endpoint = parse_endpoint_spec('base_url=http://h/v1 , model=m , extra_body = {"top_p": 0.5} , timeout=9')
    assert (endpoint.extra_body, endpoint.timeout, endpoint.max_tokens) == ({"top_p": 0.5}, 9.0, 512)


def test_an_azure_base_url_keeps_its_query_after_the_path(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv("AZURE_KEY", KEY)
    server = fake_server(lambda messages, model: "True")
    base = server.base_url + "/openai/deployments/judge-4o?api-version=2024-10-21"
    endpoint = parse_endpoint_spec(f"base_url={base},model=judge-4o,api_key_env=AZURE_KEY,api_key_header=api-key")
    assert endpoint.url == server.base_url + "/openai/deployments/judge-4o/chat/completions?api-version=2024-10-21"
    assert ChatEndpoint(endpoint.url, "m").url == endpoint.url  # the full URL is kept as it is
    assert ChatEndpoint("https://h/v1/?a=1&b=2", "m").url == "https://h/v1/chat/completions?a=1&b=2"
    assert ChatClient(endpoint).complete(QUESTION).text == "True"
    assert server.paths == ["/v1/openai/deployments/judge-4o/chat/completions?api-version=2024-10-21"]
    assert (server.api_keys, server.authorizations) == ([KEY], [None])  # Azure's header, the key as it is
    assert KEY not in repr(endpoint.record())


# ----------------------------------------------------------------------------- deadline and size cap


def test_a_reply_dripped_slowly_is_cut_off_at_the_deadline(fake_server, tmp_path):
    reply = FakeReply.chat("True " * 40)
    server = fake_server(lambda messages, model: FakeReply(200, reply.body, drip=0.05))  # ~25 s in all
    client = client_for(server, tmp_path, max_retries=0, timeout=1)
    result = client.complete(QUESTION)
    assert result.error == "no complete reply within timeout=1 s"
    for _ in range(200):  # the handler stops at its first write after the client hung up
        if server.bytes_sent:
            break
        time.sleep(0.05)
    assert 0 < server.bytes_sent[0] < len(reply.body)  # the client hung up long before the body's end


def test_headers_dripped_slowly_are_cut_off_at_the_deadline_too(fake_server, tmp_path):
    reply = FakeReply.chat("True")
    server = fake_server(scripted(FakeReply(200, reply.body, drip=0.05, drip_headers=True), "True"))
    client = client_for(server, tmp_path, max_retries=0, timeout=1)
    result = client.complete(QUESTION)
    assert result.error == "no complete reply within timeout=1 s"
    for _ in range(200):
        if server.bytes_sent:
            break
        time.sleep(0.05)
    headers = len("HTTP/1.1 200 Whatever\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n")
    assert 0 < server.bytes_sent[0] < headers  # still in the headers when the client hung up
    # the connection cut is not used again: the next request gets a new one, and its answer
    assert client.complete([{"role": "user", "content": "next"}]).text == "True"
    assert len(set(server.ports)) == 2


def test_a_connection_is_reused_after_a_deadline_passed_elsewhere(fake_server, tmp_path):
    # the watch of a finished request never touches its connection again, pooled or in use by the next request
    server = fake_server(lambda messages, model: "True")
    client = client_for(server, tmp_path, timeout=0.5)
    assert [client.complete([{"role": "user", "content": f"q{i}"}]).text for i in range(3)] == ["True"] * 3
    time.sleep(0.7)  # past every earlier request's deadline
    assert client.complete([{"role": "user", "content": "late"}]).text == "True"
    assert len(server.ports) == 4 and len(set(server.ports)) == 1  # all on the one kept-alive connection


def test_a_50_mb_body_is_refused_without_being_read(fake_server, tmp_path):
    huge = FakeReply.chat("x" * (50 * 2**20))
    server = fake_server(lambda messages, model: huge)
    result = client_for(server, tmp_path, max_retries=3).complete(QUESTION)
    assert result.error == f"HTTP 200: reply of {len(huge.body)} bytes is over max_response_bytes=8388608"
    assert server.calls == 1  # the same reply again would be as big: not retried


def gzipped(data_parts, count=1) -> bytes:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(packer.compress(part) for part in data_parts for _ in range(count)) + packer.flush()


def test_a_gzip_bomb_costs_the_cap_not_its_expanded_size(fake_server, tmp_path):
    import tracemalloc

    bomb = gzipped([bytes(2**20)], count=200)  # 200 MB of zeros in about 200 kB
    server = fake_server(lambda messages, model: FakeReply(200, bomb, {"Content-Encoding": "gzip"}))
    client = client_for(server, tmp_path, max_retries=3, max_response_bytes=2**20)
    tracemalloc.start()
    try:
        result = client.complete(QUESTION)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.error == "HTTP 200: reply is over max_response_bytes=1048576 (after decompression)"
    assert server.calls == 1 and peak < 16 * 2**20  # a few times the cap, never the 200 MB


def test_gzip_and_deflate_replies_under_the_cap_are_read(fake_server, tmp_path):
    import zlib

    text = FakeReply.chat("Supported").body.encode()
    for encoding, body in [("gzip", gzipped([text[:10], text[10:]])), ("deflate", zlib.compress(text))]:
        server = fake_server(
            lambda messages, model, body=body, e=encoding: FakeReply(200, body, {"Content-Encoding": e})
        )
        assert (
            client_for(server, tmp_path / encoding, max_response_bytes=len(text)).complete(QUESTION).text == "Supported"
        )
    two_members = gzipped([text[:20]]) + gzipped([text[20:]])
    server = fake_server(lambda messages, model: FakeReply(200, two_members, {"Content-Encoding": "gzip"}))
    assert client_for(server, tmp_path / "members").complete(QUESTION).text == "Supported"
    server = fake_server(lambda messages, model: FakeReply(200, gzipped([text])[:-12], {"Content-Encoding": "gzip"}))
    assert "gzip body ends early" in client_for(server, tmp_path / "cut", max_retries=0).complete(QUESTION).error
    server = fake_server(lambda messages, model: FakeReply(200, text, {"Content-Encoding": "br"}))
    result = client_for(server, tmp_path / "br").complete(QUESTION)
    assert "unsupported Content-Encoding 'br'" in result.error and server.calls == 1


# ----------------------------------------------------------------------------- proxies


def test_the_client_goes_through_the_proxies_the_environment_names_unless_no_proxy_names_the_host(
    fake_server, tmp_path, monkeypatch
):
    from tests.fake_openai import ForwardProxy

    server = fake_server(lambda messages, model: "True")
    proxy = ForwardProxy()
    try:
        for name in ("NO_PROXY", "no_proxy", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        client = ChatClient(ChatEndpoint(server.base_url, "fake-judge", api_key_env=None))
        assert client.complete(QUESTION).text == "True"
        assert proxy.urls == [server.base_url + "/chat/completions"] and server.calls == 1
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        assert client.complete([{"role": "user", "content": "again"}]).text == "True"
        assert len(proxy.urls) == 2  # a client reads the environment when it is made
        client = ChatClient(ChatEndpoint(server.base_url, "fake-judge", api_key_env=None))
        assert client.complete([{"role": "user", "content": "direct"}]).text == "True"
        assert len(proxy.urls) == 2 and server.calls == 3  # straight to the server
        # an https judge goes through HTTPS_PROXY (a CONNECT tunnel, which this proxy refuses)
        monkeypatch.delenv("NO_PROXY")
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        host = server.base_url.removeprefix("http://").removesuffix("/v1")
        judge = ChatEndpoint(f"https://{host}/v1", "fake-judge", api_key_env=None, max_retries=0)
        refused = ChatClient(judge).complete(QUESTION)
        assert proxy.tunnels == [host] and refused.error.startswith("ProxyError: ")
        # unless NO_PROXY names it: then TLS is tried with the (plain HTTP) server itself
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        direct = ChatClient(judge).complete(QUESTION)
        assert proxy.tunnels == [host] and direct.error.startswith("ConnectError: ") and server.calls == 3
    finally:
        proxy.close()


def test_a_proxy_that_cannot_be_used_is_a_data_error_naming_no_password(monkeypatch):
    from lm_eval_tasks.utils.data import DataError

    monkeypatch.setenv("ALL_PROXY", "ftp://judge:pw-9f8e7d6c@127.0.0.1:21")  # httpx knows no ftp proxy
    with pytest.raises(DataError) as caught:
        ChatClient(ChatEndpoint("https://api.openai.com/v1", "m"))
    assert str(caught.value).startswith("the proxy named by the environment cannot be used: ")
    assert "pw-9f8e7d6c" not in str(caught.value)


# ----------------------------------------------------------------------------- usage and cost


def test_usage_is_kept_per_answer_in_the_cache_and_totalled_with_costs(fake_server, tmp_path):
    import json

    from lm_eval_tasks.utils.data import DataError
    from lm_eval_tasks.utils.openai_client import Usage, read_prices, usage_summary

    server = fake_server(lambda messages, model: "It is supported by the document.")  # 6 words
    prompts = [[{"role": "user", "content": "one two three"}], [{"role": "user", "content": "four five"}]]
    endpoint = ChatEndpoint(server.base_url, "o4-mini", temperature=None, max_tokens=None, reasoning_effort="low")
    prices_file = tmp_path / "prices.json"
    prices_file.write_text(json.dumps({"o4-mini": {"input": 1.1, "output": 4.4}, "other": {"input": 1, "output": 2}}))
    prices = read_prices(prices_file)
    first = ChatClient(endpoint, ChatCache(tmp_path / "c.sqlite"))
    answers = first.complete_many(prompts)
    assert [a.usage for a in answers] == [Usage(3, 6 + 16, 16), Usage(2, 6 + 16, 16)]
    # 5 prompt tokens at $1.10/M + 44 completion tokens (32 of them reasoning) at $4.40/M
    expected_cost = (5 * 1.1 + 44 * 4.4) / 1e6
    summary = usage_summary(first, prices, str(prices_file))
    assert summary["this_run"] == {
        "replies": 2,
        "replies_without_usage": 0,
        "prompt_tokens": 5,
        "completion_tokens": 44,
        "reasoning_tokens": 32,
        "replies_reporting_reasoning_tokens": 2,
        "cost_usd": pytest.approx(expected_cost),
        "price_per_million": {"input": 1.1, "output": 4.4},
        "cost_note": f"from {prices_file}",
    }
    assert summary["from_cache"]["replies"] == 0 and summary["from_cache"]["cost_usd"] == 0.0
    rerun = ChatClient(endpoint, ChatCache(tmp_path / "c.sqlite"))
    again = rerun.complete_many(prompts)
    assert all(a.cached for a in again) and [a.usage for a in again] == [a.usage for a in answers]
    summary = usage_summary(rerun, prices, str(prices_file))
    assert summary["this_run"]["replies"] == 0
    assert summary["from_cache"]["completion_tokens"] == 44 and summary["from_cache"]["cost_usd"] == pytest.approx(
        expected_cost
    )
    # a model the prices file does not name: no cost, and why
    missing = usage_summary(ChatClient(ChatEndpoint(server.base_url, "gpt-4o")), prices, "p.json")["this_run"]
    assert missing["cost_usd"] is None and missing["cost_unavailable"] == "no price for model 'gpt-4o' in p.json"
    assert "cost_usd" not in usage_summary(first)["this_run"]  # no prices file: no cost at all
    for bad, message in [
        ({"m": {"input": -1, "output": 2}}, "model 'm', field input: -1 is not a price"),
        ({"m": {"input": 1}}, "model 'm': expected exactly the fields input and output"),
        ([], "expected a JSON object"),
    ]:
        prices_file.write_text(json.dumps(bad))
        with pytest.raises(DataError, match=None) as caught:
            read_prices(prices_file)
        assert message in str(caught.value) and str(prices_file) in str(caught.value)


def test_replies_without_usage_and_billed_replies_without_text_are_counted(fake_server, tmp_path):
    from lm_eval_tasks.utils.openai_client import read_prices, usage_summary

    spent = {"prompt_tokens": 40, "completion_tokens": 100, "completion_tokens_details": {"reasoning_tokens": 100}}
    server = fake_server(
        scripted(
            FakeReply.chat("True"),  # a server that reports no usage
            FakeReply.chat(None, finish_reason="length", usage=spent),  # all of max_completion_tokens spent thinking
            FakeReply.chat("False", usage={"prompt_tokens": 3, "completion_tokens": "many"}),  # not counts
        )
    )
    client = client_for(server, tmp_path)
    results = [client.complete([{"role": "user", "content": f"q{i}"}]) for i in range(3)]
    assert [r.ok for r in results] == [True, False, True]
    prices_file = tmp_path / "p.json"
    prices_file.write_text('{"fake-judge": {"input": 2, "output": 10}}')
    totals = usage_summary(client, read_prices(prices_file), "p.json")["this_run"]
    assert (totals["replies"], totals["replies_without_usage"], totals["completion_tokens"]) == (3, 2, 100)
    assert totals["cost_usd"] == pytest.approx((40 * 2 + 100 * 10) / 1e6)
    assert totals["cost_note"] == "from p.json; 2 replies came without usage and are not in it"


def test_a_cache_written_before_usage_was_kept_still_answers(tmp_path):
    from lm_eval_tasks.utils.openai_client import Usage

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE answers (key TEXT PRIMARY KEY, text TEXT NOT NULL, meta TEXT)")
        db.execute("INSERT INTO answers VALUES ('k', 'True', '{}')")
    cache = ChatCache(path)
    assert cache.get("k") == ("True", None, None)
    cache.put("k2", "False", {}, None)
    assert cache.get("k2") == ("False", None, None)
    cache.put("k3", "True", {}, Usage(5, 9, None))
    assert cache.get("k3") == ("True", Usage(5, 9, None), None)
    with sqlite3.connect(path) as db:  # a usage cell that is not one: the answer stands, its usage is unknown
        db.execute(
            "INSERT INTO answers (key, text, meta, usage) VALUES ('k4', 'True', '{}', '{\"prompt_tokens\": -1}')"
        )
        db.execute("INSERT INTO answers (key, text, meta, usage) VALUES ('k5', 'True', '{}', 'not json')")
    assert cache.get("k4") == ("True", None, None) and cache.get("k5") == ("True", None, None)


def test_our_own_local_server_is_checked_directly_whatever_proxy_the_environment_names(tmp_path, monkeypatch):
    import functools
    import urllib.error
    import urllib.request
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from lm_eval_tasks.utils.models import open_local

    (tmp_path / "health").write_text("ok")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        for name in ("NO_PROXY", "no_proxy", "http_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")  # nothing listens there
        url = f"http://127.0.0.1:{httpd.server_address[1]}/health"
        with pytest.raises(urllib.error.URLError):
            # What the health check did: through the dead proxy. A fresh opener reads the proxy environment now
            # (urlopen's module-wide opener keeps whatever it read on its first use, in an earlier test).
            urllib.request.build_opener().open(url, timeout=5)
        with open_local(url, timeout=5) as response:
            assert response.read() == b"ok"
    finally:
        httpd.shutdown()
        httpd.server_close()


# ----------------------------------------------------------------------------- replies filtered, empty or cut


@pytest.mark.parametrize(
    "reply, error",
    [
        (FakeReply.chat("", finish_reason="content_filter"), "reply withheld by the content filter"),
        (FakeReply.chat("True", finish_reason="content_filter"), "reply withheld by the content filter"),
        (FakeReply.chat("", finish_reason="stop"), "reply content is empty (finish_reason 'stop')"),
        (FakeReply.chat(" \n", finish_reason="length"), "reply content is empty (finish_reason 'length')"),
    ],
)
def test_filtered_and_empty_replies_are_failed_calls_never_cached(fake_server, tmp_path, reply, error):
    server = fake_server(scripted(reply, "True"))
    client = client_for(server, tmp_path, max_retries=3)
    (result,) = client.complete_many([QUESTION])
    assert (result.ok, result.text, result.cached) == (False, None, False)
    assert result.error.startswith(error)
    assert (server.calls, client.calls, client.failures, client.length_cut) == (1, 1, 1, 0)  # not retried
    assert client.cache.get(client.endpoint.cache_key(QUESTION)) is None
    again = client.complete(QUESTION)  # the next run asks the server again
    assert (again.text, again.cached, again.finish_reason, server.calls) == ("True", False, "stop", 2)


def test_a_length_cut_answer_is_kept_cached_with_its_finish_reason_and_counted(fake_server, tmp_path):
    from lm_eval_tasks.utils.openai_client import format_usage, usage_summary, usage_total

    server = fake_server(
        scripted(FakeReply.chat("The statement is Tr", finish_reason="length"), FakeReply.chat("False"))
    )
    prompts = [[{"role": "user", "content": "q1"}], [{"role": "user", "content": "q2"}]]
    client = client_for(server, tmp_path)
    first = [client.complete(p) for p in prompts]
    assert [(r.text, r.ok, r.cached, r.finish_reason) for r in first] == [
        ("The statement is Tr", True, False, "length"),
        ("False", True, False, "stop"),
    ]
    assert (client.failures, client.length_cut) == (0, 1)
    assert usage_summary(client)["length_cut"] == 1
    rerun = client_for(server, tmp_path)  # a new client over the same cache file
    again = [rerun.complete(p) for p in prompts]
    assert [(r.text, r.cached, r.finish_reason) for r in again] == [
        ("The statement is Tr", True, "length"),
        ("False", True, "stop"),
    ]
    assert (server.calls, rerun.calls, rerun.length_cut) == (2, 0, 1)
    summary = usage_summary(rerun)
    assert summary["length_cut"] == 1
    assert usage_total([usage_summary(client), summary])["length_cut"] == 2
    assert format_usage(summary).endswith("; 1 answer cut at the token limit")
    assert "cut at the token limit" not in format_usage(usage_summary(client_for(server, tmp_path)))


def test_a_cache_written_before_finish_reason_was_kept_still_answers(tmp_path):
    from lm_eval_tasks.utils.openai_client import Usage

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE answers (key TEXT PRIMARY KEY, text TEXT NOT NULL, meta TEXT, usage TEXT)")
        db.execute("""INSERT INTO answers VALUES ('k', 'True', '{}', '{"prompt_tokens": 1, "completion_tokens": 2}')""")
    cache = ChatCache(path)
    assert cache.get("k") == ("True", Usage(1, 2, None), None)
    cache.put("k2", "Tr", {}, None, "length")
    assert cache.get("k2") == ("Tr", None, "length")


@pytest.mark.parametrize("plant", ["shared-folder", "writable-by-others", "symlink"])
def test_a_judge_cache_that_is_not_the_users_own_is_never_read(tmp_path, plant, capsys):
    # A planted cache would hand the judges' answers to whoever runs next: ignored, and the run keeps its answers
    # in memory.
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    path = folder / "calls.sqlite"
    planted = ChatCache(path)
    planted.put("k", "planted answer", {})
    planted.close()
    if plant == "shared-folder":
        folder.chmod(0o1777)
    elif plant == "writable-by-others":
        path.chmod(0o666)
    else:
        path.rename(tmp_path / "elsewhere.sqlite")
        path.symlink_to(tmp_path / "elsewhere.sqlite")
    cache = ChatCache(path)
    assert cache.get("k") is None
    cache.put("k", "this run's answer", {})
    assert cache.get("k").text == "this run's answer"
    cache.close()
    assert f"{path} is ignored" in capsys.readouterr().err
    folder.chmod(0o700)
    (tmp_path / "own").mkdir(mode=0o700)  # the user's own cache is read as before
    own = ChatCache(tmp_path / "own" / "calls.sqlite")
    own.put("k", "kept", {})
    own.close()
    assert ChatCache(tmp_path / "own" / "calls.sqlite").get("k").text == "kept"
    assert (tmp_path / "own" / "calls.sqlite").stat().st_mode & 0o777 == 0o600
