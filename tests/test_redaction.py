"""Credentials never reach a file we write: model_args in every form lm-eval logs them, and error text."""

import json
import re
from urllib.parse import unquote

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import redaction, secret_names, secret_triggers
from lm_eval_tasks.utils.redaction import is_secret_key, redact, scrub
from lm_eval_tasks.utils.secret_names import SECRET_LAST_WORDS, SECRET_WORDS, WORD

from tests.conftest import examples

SECRET = "Xq7-SECRET-value9"  # no well-known key shape: each form below must be caught by its key or URL

# (model_args as a results file can hold them, with $S for the secret) -> exactly what redact gives back
FORMS = [
    # lm-eval's key=value string
    ("pretrained=gpt2,api_key=$S", "pretrained=gpt2,api_key=***"),
    (
        "model=gpt-4o-mini,base_url=https://api.openai.com/v1/chat/completions,api_key=$S,max_tokens=16,"
        "tokenized_requests=False,num_concurrent=8",
        "model=gpt-4o-mini,base_url=https://api.openai.com/v1/chat/completions,api_key=***,max_tokens=16,"
        "tokenized_requests=False,num_concurrent=8",
    ),
    ("model=x,api-key=$S", "model=x,api-key=***"),
    ("model=x,x-api-key=$S", "model=x,x-api-key=***"),
    ("model=x,apikey=$S", "model=x,apikey=***"),
    ("model=x,apiKey=$S", "model=x,apiKey=***"),
    (
        "pretrained=meta-llama/Llama-3.2-1B,token=$S,tokenizer=meta-llama/Llama-3.2-1B,tokenizer_backend=huggingface,"
        "max_length=2048",
        "pretrained=meta-llama/Llama-3.2-1B,token=***,tokenizer=meta-llama/Llama-3.2-1B,tokenizer_backend=huggingface,"
        "max_length=2048",
    ),
    ("pretrained=x,access_token=$S", "pretrained=x,access_token=***"),
    ("pretrained=x,hf_token=$S", "pretrained=x,hf_token=***"),
    ("pretrained=x,use_auth_token=$S", "pretrained=x,use_auth_token=***"),
    ("model=x,auth=judge:$S", "model=x,auth=***"),
    ("model=x,authorization=Bearer $S", "model=x,authorization=***"),
    ("model=x,bearer=$S", "model=x,bearer=***"),
    ("model=x,credentials=$S", "model=x,credentials=***"),
    ("model=x,secret=$S", "model=x,secret=***"),
    ("model=x,password=$S $S", "model=x,password=***"),  # a value with a space
    ("model=x,key=$S", "model=x,key=***"),
    ("model=x,openai_api_key='$S'", "model=x,openai_api_key=***"),  # quoted, as handle_arg_string accepts
    (
        'model=x,headers={"Authorization": "Bearer $S", "OpenAI-Organization": "org-1"},max_length=2048',
        "model=x,headers=***,max_length=2048",
    ),  # two entries: a comma inside the braces
    (
        "model=gemini-2.0-flash,base_url=https://generativelanguage.googleapis.com/v1beta/openai?key=$S",
        "model=gemini-2.0-flash,base_url=https://generativelanguage.googleapis.com/v1beta/openai?key=***",
    ),
    (
        "model=x,base_url=https://example.org/v1?alt=json&api_key=$S&region=eu",
        "model=x,base_url=https://example.org/v1?alt=json&api_key=***&region=eu",
    ),
    (
        "model=x,base_url=https://judge:$S@proxy.example.org/v1,max_tokens=64",
        "model=x,base_url=https://judge:***@proxy.example.org/v1,max_tokens=64",
    ),
    ("model=x,extra_body={'api_key': '$S', 'top_k': 5}", "model=x,extra_body={'api_key': '***', 'top_k': 5}"),
    ("model=it's,api_key=$S", "model=it's,api_key=***"),  # an unbalanced quote before the key
    ("model=x, api_key = $S , max_tokens=16", "model=x, api_key = *** , max_tokens=16"),
    # model_args given as JSON (lm-eval's CLI accepts --model_args '{...}')
    (
        '{"model": "gpt-4o", "api_key": "$S", "max_tokens": 16}',
        '{"model": "gpt-4o", "api_key": "***", "max_tokens": 16}',
    ),
    (
        '{"model": "x", "default_headers": {"X-API-Key": "$S"}, "tokenized_requests": false}',
        '{"model": "x", "default_headers": "***", "tokenized_requests": false}',
    ),
    (
        '{"model": "x", "base_url": "https://u:$S@h.example/v1?key=$S"}',
        '{"model": "x", "base_url": "https://u:***@h.example/v1?key=***"}',
    ),
    ('{"config": "{\\"api_key\\": \\"$S\\"}"}', '{"config": "{\\"api_key\\": \\"***\\"}"}'),  # JSON inside JSON
    ("{'model': 'x', 'api_key': '$S'}", "{'model': 'x', 'api_key': '***'}"),  # str() of a dict
    # dicts (what lm-eval 0.4.13's CLI writes), lists and nested values
    (
        {"model": "x", "api_key": "$S", "max_tokens": 16, "tokenizer": "gpt2"},
        {"model": "x", "api_key": "***", "max_tokens": 16, "tokenizer": "gpt2"},
    ),
    (
        {"model": "x", "headers": {"Authorization": "Bearer $S", "X-Org": "org-1"}, "max_length": 2048},
        {"model": "x", "headers": "***", "max_length": 2048},
    ),
    (
        {"model": "x", "fallbacks": [{"api_key": "$S", "model": "y"}], "stop": ["\n\n"]},
        {"model": "x", "fallbacks": [{"api_key": "***", "model": "y"}], "stop": ["\n\n"]},
    ),
    (
        {"model": "x", "client": {"credentials": {"user": "u", "password": "$S"}}},
        {"model": "x", "client": {"credentials": "***"}},
    ),
    (
        {"model": "x", "chat_template_args": {"enable_thinking": True}, "extra_body": {"Authorization": "Bearer $S"}},
        {"model": "x", "chat_template_args": {"enable_thinking": True}, "extra_body": {"Authorization": "***"}},
    ),
    ({"model_args": "api_key=$S,max_tokens=5"}, {"model_args": "api_key=***,max_tokens=5"}),
    ({"base_url": "http://judge:$S@127.0.0.1:8089/v1"}, {"base_url": "http://judge:***@127.0.0.1:8089/v1"}),
    (["pretrained=x", "token=$S"], ["pretrained=x", "token=***"]),  # --model_args given as several words
]

HARMLESS = [
    "pretrained=gpt2,max_tokens=16,tokenized_requests=False,tokenizer=gpt2,tokenizer_backend=huggingface,"
    "max_length=2048,max_gen_toks=256,num_concurrent=16",
    "pretrained=x,think_end_token=</think>,pad_token=<pad>,eos_token=</s>,api_key_env=OPENAI_API_KEY",
    "base_url=http://127.0.0.1:8089/v1/chat/completions,model=local,timeout=60",
    # lm-eval's own JSON example, compact: nothing to mask, so the text comes back as it was
    '{"pretrained":"/models/openai_gpt-oss-20b","dtype":"auto","chat_template_args":{"reasoning_effort":"low"},'
    '"enable_thinking": true,"think_end_token":"<|message|>"}',
    {
        "model": "x",
        "max_tokens": 16,
        "tokenized_requests": False,
        "tokenizer": "gpt2",
        "tokenizer_backend": None,
        "max_length": 2048,
        "pad_token": "<pad>",
    },
    {"api_key": None, "token": True, "password": ""},  # says there is no credential: kept
    "",
    None,
    7,
]


def fill(form, secret):
    if isinstance(form, str):
        return form.replace("$S", secret)
    if isinstance(form, dict):
        return {key: fill(value, secret) for key, value in form.items()}
    if isinstance(form, list):
        return [fill(value, secret) for value in form]
    return form


@pytest.mark.parametrize("form, expected", FORMS)
def test_each_form_is_masked_and_keeps_its_harmless_parts_exactly(form, expected):
    masked = redact(fill(form, SECRET))
    assert masked == expected and type(masked) is type(form)
    assert SECRET not in json.dumps(masked) and "value9" not in json.dumps(masked)


@pytest.mark.parametrize("harmless", HARMLESS)
def test_harmless_arguments_are_left_alone(harmless):
    assert redact(harmless) == harmless


def test_the_old_leaks_are_closed():
    """The forms the regex redactor in report.py let through (or broke)."""
    assert redact('headers={"a": "1", "Authorization": "Bearer sk-x"}') == "headers=***"
    assert redact("max_tokens=5,tokenized_requests=True") == "max_tokens=5,tokenized_requests=True"
    assert redact({"x": [{"token": "t0ken-value"}]}) == {"x": [{"token": "***"}]}


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "API_KEY",
        "api-key",
        "X-API-Key",
        "x_api_key",
        "apikey",
        "apiKey",
        "openai_api_key",
        "key",
        "token",
        "hf_token",
        "access_token",
        "accessToken",
        "use_auth_token",
        "auth",
        "authorization",
        "Authorization",
        "bearer",
        "credentials",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "headers",
        "default_headers",
        "extra_headers",
        "header",
        "cookie",
        "sig",
        "--api_key",
    ],
)
def test_secret_key_names(name):
    assert is_secret_key(name)


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "max_new_tokens",
        "max_gen_toks",
        "tokenized_requests",
        "tokenizer",
        "tokenizer_backend",
        "max_length",
        "pad_token",
        "eos_token",
        "bos_token",
        "think_end_token",
        "pad_token_id",
        "api_key_env",
        "model",
        "base_url",
        "pretrained",
        "num_concurrent",
        "keyboard",
        "monkey",
        "",
        "_",
    ],
)
def test_harmless_key_names(name):
    assert not is_secret_key(name)


# ----------------------------------------------------------------------------- properties

UNRESERVED = st.characters(codec="ascii", categories=("Lu", "Ll", "Nd"), include_characters="-_.~")
SECRETS = st.text(UNRESERVED, min_size=8, max_size=48)
SECRET_KEYS = st.sampled_from(
    [
        "api_key",
        "api-key",
        "x-api-key",
        "apikey",
        "token",
        "access_token",
        "auth",
        "authorization",
        "bearer",
        "credentials",
        "secret",
        "password",
        "key",
        "headers",
    ]
)
HARMLESS_KEYS = st.sampled_from(
    [
        "pretrained",
        "model",
        "base_url",
        "max_tokens",
        "tokenized_requests",
        "tokenizer",
        "tokenizer_backend",
        "max_length",
        "dtype",
        "pad_token",
        "num_concurrent",
    ]
)
HARMLESS_VALUES = st.text(
    st.characters(codec="ascii", categories=("Ll", "Nd"), include_characters="./"), min_size=1, max_size=20
)


@given(form=st.sampled_from(FORMS), secret=SECRETS)
def test_a_random_secret_in_any_form_never_survives(form, secret):
    template, expected = form
    assume(secret not in json.dumps(expected))
    masked = redact(fill(template, secret))
    assert masked == expected and secret not in json.dumps(masked)


@given(
    pairs=st.lists(st.tuples(HARMLESS_KEYS, HARMLESS_VALUES), max_size=6),
    key=SECRET_KEYS,
    secret=SECRETS,
    where=st.integers(min_value=0, max_value=6),
    as_json=st.booleans(),
)
def test_a_random_secret_among_harmless_arguments_is_masked_and_nothing_else(pairs, key, secret, where, as_json):
    pairs = dict(pairs)
    pairs.pop(key, None)
    assume(secret not in json.dumps(pairs))
    items = list(pairs.items())
    items.insert(min(where, len(items)), (key, secret))
    expected_items = [(k, "***" if k == key else v) for k, v in items]
    if as_json:
        masked = redact(json.dumps(dict(items)))
        assert json.loads(masked) == dict(expected_items)
    else:
        masked = redact(",".join(f"{k}={v}" for k, v in items))
        assert masked == ",".join(f"{k}={v}" for k, v in expected_items)
    assert secret not in masked


@given(pairs=st.lists(st.tuples(HARMLESS_KEYS, HARMLESS_VALUES), max_size=8))
def test_harmless_arguments_come_back_unchanged(pairs):
    text = ",".join(f"{k}={v}" for k, v in pairs)
    assert redact(text) == text
    assert redact(dict(pairs)) == dict(pairs)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(text=st.text())
def test_any_text_gives_a_text(text):
    assert isinstance(redact(text), str)


@given(value=JSON_VALUES)
def test_any_json_value_keeps_its_type(value):
    assert type(redact(value)) is type(value)
    assert isinstance(redact(json.dumps(value)), str)


def test_absurd_nesting_is_masked_whole_not_raised():
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    assert redact(deep) == "***"
    assert redact("[" * 100_000) == "[" * 100_000
    assert redact('{"token": ' * 5_000 + '"x"') == '{"token": ***'


# ----------------------------------------------------------------------------- scrub


def test_scrub_removes_known_secrets_also_escaped():
    key = "abc/def+ghi"
    body = 'key abc/def+ghi, as JSON "abc\\/def+ghi", in a URL ?k=abc%2Fdef%2Bghi'
    assert scrub(body, [key, ""]) == 'key ***, as JSON "***", in a URL ?k=***'
    # the longer of two overlapping secrets goes first, so no tail of it is left
    assert scrub("token sk-123456 and sk-12", ["sk-12", "sk-123456"]) == "token *** and ***"
    assert scrub("nothing to hide", []) == "nothing to hide"


@given(prefix=st.text(), secret=SECRETS, suffix=st.text())
def test_scrub_leaves_no_secret(prefix, secret, suffix):
    assert secret not in scrub(prefix + secret + suffix, [secret])


# ----------------------------------------------------------------------------- issue 15: names that passed

URL_SECRET = "Zq81-cred-7Hx0"


@pytest.mark.parametrize(
    "template",
    [
        "https://fn.azurewebsites.net/api/judge?code={s}",  # Azure Functions
        "https://h/v1?x=1&code={s}&y=2",
        "https://h/v1?pwd={s}",
        "https://h/v1?pass={s}",
        "https://h/v1?sv=2024&sig={s}&se=2030",  # a SAS token
        "https://h/v1?signature={s}",
        "https://h/v1?api%5Fkey={s}",  # percent-encoded names
        "https://h/v1?api%5fkey={s}",
        "https://h/v1?x%2Dapi%2Dkey={s}",
        "https://h/v1?c%6Fde={s}",
        "https://h/v1?db_pwd={s}",
    ],
)
def test_credentials_under_url_names_that_passed_are_masked_in_every_form(template):
    url = template.format(s=URL_SECRET)
    masked = template.format(s="***")
    assert redact(url) == masked
    assert redact(f"model=m,base_url={url},max_tokens=5") == f"model=m,base_url={masked},max_tokens=5"
    assert redact({"base_url": url, "max_tokens": 5}) == {"base_url": masked, "max_tokens": 5}
    assert json.loads(redact(json.dumps({"base_url": url}))) == {"base_url": masked}
    # In prose a key=value part may be masked to its end: more than the value, never less.
    error = redact(f"ConnectionError: Max retries exceeded with url: {url} (Caused by ...)")
    assert error.startswith(f"ConnectionError: Max retries exceeded with url: {masked}") and URL_SECRET not in error


@pytest.mark.parametrize("name", ["pwd", "db_pwd", "pass", "db_pass", "api%5Fkey", "x%2Dapi%2Dkey", "client%5Fsecret"])
def test_more_secret_key_names(name):
    assert is_secret_key(name)


@pytest.mark.parametrize("name", ["code_revision", "passage_store", "bypass", "compass", "signal", "code"])
def test_more_harmless_key_names(name):
    # "code" is a credential only as a URL's query parameter (Azure Functions), not as a model argument.
    assert not is_secret_key(name)
    assert redact(f"{name}=value1,max_tokens=5") == f"{name}=value1,max_tokens=5"


def test_an_error_code_in_a_json_error_body_is_kept():
    body = '{"error": {"message": "bad", "code": "invalid_request"}}'
    assert redact(body) == body


@pytest.mark.parametrize(
    "gen_kwargs, expected",
    [
        ("temperature=0,api_key=" + URL_SECRET, "temperature=0,api_key=***"),
        (
            {"temperature": 0, "extra_headers": {"Authorization": URL_SECRET}},
            {"temperature": 0, "extra_headers": "***"},
        ),
        ("until=['\\n\\n'],max_gen_toks=64", "until=['\\n\\n'],max_gen_toks=64"),
        (None, None),
    ],
)
def test_run_info_masks_gen_kwargs(tmp_path, gen_kwargs, expected):
    from lm_eval_tasks.utils.runs import Run, run_info

    run = Run(tmp_path / "results_x.json", {"config": {"model": "hf", "gen_kwargs": gen_kwargs}}, {}, {})
    assert run_info(run)["gen_kwargs"] == expected


def test_a_failed_judge_call_names_no_url_credential(tmp_path, monkeypatch):
    from lm_eval_tasks.utils.models import free_port
    from lm_eval_tasks.utils.openai_client import ChatClient, ChatEndpoint

    secrets = {name: f"{name[:3]}-{URL_SECRET}" for name in ("code", "pwd", "sig", "api%5Fkey")}
    query = "&".join(f"{name}={value}" for name, value in secrets.items())
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # Nothing listens on the port: the connection error quotes the URL, query and all.
    endpoint = ChatEndpoint(f"http://127.0.0.1:{free_port()}/api/judge?{query}", "judge", max_retries=0)
    (result,) = ChatClient(endpoint, sleep=lambda seconds: None).complete_many([[{"role": "user", "content": "Q"}]])
    # The client calls <path>/chat/completions?<query> (a query stays after the path, as Azure needs).
    assert not result.ok and "/api/judge/chat/completions?code=***&pwd=***" in result.error
    for value in secrets.values():
        assert value not in result.error and URL_SECRET not in result.error


@given(
    name=st.sampled_from(
        ["code", "sig", "signature", "pwd", "pass", "api%5Fkey", "api%5fkey", "c%6Fde", "x%2Dapi%2Dkey"]
    ),
    secret=SECRETS,
    before=st.sampled_from(["", "x=1&", "sv=2024&"]),
    after=st.sampled_from(["", "&se=2030", "#frag"]),
)
def test_a_random_secret_under_a_url_credential_name_never_survives(name, secret, before, after):
    url = f"https://h.example/api/judge?{before}{name}={secret}{after}"
    assume(secret not in url.replace(secret, ""))
    for form in (url, f"model=m,base_url={url}", {"base_url": url}, f"HTTPError: 401 for url: {url}"):
        assert secret not in json.dumps(redact(form))
    # A fragment may be masked with the value (more than the secret, never less).
    assert redact(url) in (
        f"https://h.example/api/judge?{before}{name}=***{after}",
        f"https://h.example/api/judge?{before}{name}=***",
    )


@settings(max_examples=examples(3000), deadline=None)
@given(
    st.lists(
        st.sampled_from(
            list("akeytosphbr:=/_-%2F{}[]\"' ,?&@\n\\")
            + ["sk-", "://", "code=", "Bearer ", "secret", "token", "pass", "sig", "api", "Key", "\\u0073", "AKIA"]
        )
    ).map("".join)
)
def test_the_fast_path_skips_only_text_with_nothing_to_mask(text):
    # A text without any trigger word comes back at once: the full scan must agree that it holds no credential.
    assert redaction._redact_text(text) == redaction._redact_text_fully(text)


_JSON_PARTS = st.lists(
    st.sampled_from(
        list("akeytosphbr:=/_-%2F \"'\n\\@é—") + ["sk-", "://", "Bearer ", "secret", "token", "api", "Key"]
    ),
    max_size=12,
).map("".join)


@settings(max_examples=examples(2000), deadline=None)
@given(
    st.recursive(
        _JSON_PARTS,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_JSON_PARTS, inner, max_size=3),
        max_leaves=6,
    ),
    st.booleans(),
    st.booleans(),
)
def test_the_fast_path_reads_json_escapes_as_json_loads_does(value, ascii_only, escaped_slashes):
    # A chat API's logged messages are JSON whose strings and keys may hide a trigger behind escapes ("\u0073k-",
    # "https:\/\/"): the fast path skips such a text only when the full scan (which parses it) finds nothing.
    text = json.dumps(value if isinstance(value, (list, dict)) else [value], ensure_ascii=ascii_only)
    if escaped_slashes:
        text = text.replace("/", "\\/")
    assert redaction._redact_text(text) == redaction._redact_text_fully(text)


def test_logged_chat_messages_are_read_through_their_escapes():
    prompt = json.dumps([{"role": "user", "content": "Abstract — the drug\nreduced risk: 20%"}])  # \u2014, \n
    assert secret_triggers.may_hold_secret(prompt) is False and redact(prompt) == prompt
    # A URL's password behind escaped slashes, as some JSON writers log it, is found and masked.
    logged = '{"url": "https:\\/\\/user:hunter22@host.example\\/v1"}'
    assert redact(logged) == '{"url": "https://user:***@host.example/v1"}'
    # A secret key that does not end where a name does is read as json.loads reads it.
    assert redact('{"secret/": "hunter22"}') == '{"secret/": "***"}'


def test_a_long_reply_without_a_trigger_skips_the_scan_and_one_with_a_key_is_masked():
    reply = "the evidence says the drug reduces risk; " * 100
    assert secret_triggers.may_hold_secret(reply) is False and redact(reply) == reply
    assert redact(reply + " api_key=abc123") == reply + " api_key=***"


@pytest.mark.parametrize("remembered", [0, 4])
def test_a_long_text_masked_again_gives_what_it_gave_under_each_runs_own_secrets(monkeypatch, remembered):
    # Where a process masks run after run (the leaderboard's), long texts' verdicts are remembered: by the text once
    # its run's own secrets are scrubbed, so another run's secrets still mask theirs. Elsewhere nothing is.
    scans = []
    monkeypatch.setattr(redaction, "redact", lambda text, scan=redaction.redact: scans.append(text) or scan(text))
    prompt = "Abstract: the drug reduced risk in 40% of patients, " * 20
    keyed = prompt + "the password is hunter22; api_key=abc123"
    previous = redaction.remember_masked(remembered)
    try:
        for _ in range(2):
            assert redaction.mask(prompt) == prompt
            assert redaction.mask(keyed) == prompt + "the password is hunter22; api_key=***"
            assert redaction.mask(keyed, {"hunter22"}) == prompt + "the password is ***; api_key=***"
            assert redaction.mask(prompt, {"drug"}) == prompt.replace("drug", "***")
        # four texts once scrubbed, each scanned once when remembered; every call scans otherwise
        assert len(scans) == (4 if remembered else 8)
        assert len(redaction._REDACTED) == (4 if remembered else 0)
    finally:
        redaction.remember_masked(previous)
    assert not redaction._REDACTED and redaction.remember_masked(previous) == previous


@settings(max_examples=examples(3000), deadline=None)
@given(
    st.lists(
        st.sampled_from(list("aeytoshr:_-{}[]\"' ,\n\\") + ["secret", "token", "pass", "sig", "api", "Key", "auth"])
    ).map("".join)
)
def test_the_colon_check_of_the_fast_path_misses_no_key(text):
    # No '=', '%', URL or key shape: only a key before a ':' can hold a credential.
    assert redaction._redact_text(text) == redaction._redact_text_fully(text)


KEY_PREFIXES = (
    "sk-",
    "xox",
    "AKIA",
    "ASIA",
    "AIza",
    "glpat-",
    "hf_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
)


@settings(max_examples=examples(2000), deadline=None)
@given(
    st.lists(st.sampled_from([*KEY_PREFIXES, *list("AKISIzaskxoglpathf_ubr-G"), "gh", "github", "A", "AI"])).map(
        "".join
    )
)
def test_the_key_prefix_check_finds_exactly_the_literal_prefixes(text):
    # The prefixes are searched as patterns; the rule is a substring search for each of them.
    assert secret_triggers.holds_key_prefix(text) == any(prefix in text for prefix in KEY_PREFIXES)


@settings(max_examples=examples(1000), deadline=None)
@given(st.lists(st.sampled_from(["bearer", "basic", "://", *list("bBeEaArRsSiIcC:/ ")])).map("".join))
def test_the_auth_scheme_word_is_found_in_the_lowered_text(text):
    lowered = text.lower()
    assert secret_triggers.holds_auth_scheme(lowered) == any(word in lowered for word in ("bearer", "basic"))


URL_AUTH_AND_KEYS = st.lists(
    st.sampled_from(
        ["://", "https", "@", "user", ":", "pw", "/", " ", "\t", "\n", "-", "_", "=", "+", "basic", "Basic", "BEARER"]
        + ["bearer", "dXNlcjpw", "d29yZA==", "proteins", "Learning", "aB", "12345678", "sk-", "risk-", "proj-", "hf_"]
        + ["ghp_", "xoxb-", "12345678-", "AKIA", "AIza", "glpat-", "IOSFODNN7EXAMPLE", "abcdefghijklmnop", "ABCDEF"]
        + ["0123456789abcdef0123456789ABCDEF", "github_pat_", "qrstuvwxyzABCDEFGHIJKLMN"]
    )
).map("".join)


@settings(max_examples=examples(3000), deadline=None)
@given(URL_AUTH_AND_KEYS)
def test_the_url_auth_and_key_triggers_fire_exactly_where_the_full_scan_could_mask(text):
    # A URL counts only with an '@' (its password stands before one); a scheme's word or a key's prefix only with the
    # credentials or the key's shape the full scan masks after it: "highly basic proteins" and "risk-benefit" are
    # given back at once.
    assert redaction._redact_text(text) == redaction._redact_text_fully(text)
    lowered = text.lower()
    credentials = secret_triggers.holds_auth_scheme(lowered) and any(secret_triggers.auth_credential_spans(text))
    shapes = secret_triggers.holds_key_prefix(text) and any(secret_triggers.key_shape_spans(text))
    if ("://" in text and "@" in text) or credentials or shapes:
        assert secret_triggers.may_hold_secret(text)
    if credentials or shapes:
        assert redaction._redact_text_fully(text) != text


@pytest.mark.parametrize(
    ("text", "triggered"),
    [
        ("Accumulation of these highly basic proteins was seen (https://clinicaltrials.gov/ct2/show/NCT0001).", False),
        ("The risk-benefit ratio; see http://example.org/a and mail x@example.org.", True),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", True),
        ("a basic dXNlcjpwYXNzd29yZA== token", True),
        ("the bearer of the risk-", True),
        ("key sk-abcdefghijklmnop0123 here", True),
    ],
)
def test_words_that_only_look_like_a_trigger_are_given_back_at_once(text, triggered):
    assert secret_triggers.may_hold_secret(text) is triggered
    assert redaction._redact_text(text) == redaction._redact_text_fully(text)


def walking_forward_from_each_key_word(text: str) -> bool:
    """The colon check as its rule reads: from each key word, forward over the rest of its run of name characters,
    at most 8 end characters, then a ':'."""
    lowered = text.lower()
    for word in ("key", "token", "auth", "cookie", "credential", "pass", "pwd", "secret", "sig", "header"):
        found = lowered.find(word)
        while found >= 0:
            end = found + len(word)
            while end < len(text) and (text[end].isalnum() or text[end] in "_-"):
                end += 1
            colon = end
            while colon < len(text) and colon - end < 8 and text[colon] in " \t\n\r\"'\\":
                colon += 1
            if text.startswith(":", colon):
                return True
            found = lowered.find(word, found + 1)
    return False


@settings(max_examples=examples(3000), deadline=None)
@given(
    st.lists(
        st.sampled_from(
            list("keyKEYtoauthsigpass:_- \t\n\"'\\=xé1\u212a")
            + ["key", "token", "secret", "cookie", "header", "pwd", "credential", "api_key", "         "]
        )
    ).map("".join)
)
def test_the_colon_check_reads_back_from_each_colon_what_the_walk_from_each_key_word_finds(text):
    if len(text.lower()) == len(text):
        assert secret_triggers._key_word_before_colon(text.lower()) == walking_forward_from_each_key_word(text)


def test_lowering_a_character_never_changes_whether_it_is_a_name_character():
    # The colon check reads runs of name characters in the lowered text: they are the text's own.
    for code in range(0x110000):
        char = chr(code)
        lowered = char.lower()
        if len(lowered) == 1:
            assert char.isalnum() == lowered.isalnum(), hex(code)


# ----------------------------------------------------------------------------- paths: lm-eval's folder names

PATHS = [
    # (path, what redact_path gives back)
    ("/runs/https__user__PASSWORD@host__m/results_x.json", "/runs/https__user__***@host__m/results_x.json"),
    ("C:\\runs\\https__user__PASSWORD@host__m\\results_x.json", "C:\\runs\\https__user__***@host__m\\results_x.json"),
    ("/r/https__my_user__pw-1@h.example__org__m/r.json", "/r/https__my_user__***@h.example__org__m/r.json"),
    ("/r/http__u__p__w@h__m/r.json", "/r/http__u__***@h__m/r.json"),  # a ':' in the password, sanitised to '__'
    ("/r/https__u__p@ss@h__m/r.json", "/r/https__u__***@h__m/r.json"),  # an '@' in the password
    ("/r/git+ssh__u___pw@h/r.json", "/r/git+ssh__u__***@h/r.json"),  # a password starting with '_'
    ("/r/https__token@host__m/r.json", "/r/https__token@host__m/r.json"),  # a user, no password
    ("/runs/meta-llama__Llama-3.2-1B/results_2026.json", "/runs/meta-llama__Llama-3.2-1B/results_2026.json"),
    ("/runs/me@example.org/model__v2/results.json", "/runs/me@example.org/model__v2/results.json"),
    ("/runs/a__b.json", "/runs/a__b.json"),
    ("", ""),
]


@pytest.mark.parametrize("path, expected", PATHS)
def test_redact_path_masks_the_password_lm_eval_writes_into_a_folder_name(path, expected):
    assert redaction.redact_path(path) == expected


def test_redact_path_masks_as_text_too():
    assert redaction.redact_path("/runs/Pw-77x/results.json", {"Pw-77x"}) == "/runs/***/results.json"
    assert redaction.redact_path("/runs/https__u__Pw-77x@h/x.json", {"Pw-77x"}) == "/runs/https__u__***@h/x.json"
    key = "sk-" + "a1B2c3D4e5" * 4
    assert redaction.redact_path(f"/runs/{key}/r.json") == "/runs/***/r.json"


@given(
    user=st.text(st.characters(codec="ascii", categories=("Ll", "Nd"), include_characters="._-"), min_size=1),
    password=st.text(st.characters(codec="ascii", categories=("L", "N", "P", "S")), min_size=4, max_size=40),
)
def test_a_password_in_a_sanitised_model_folder_never_survives(user, password):
    from lm_eval.utils import sanitize_model_name

    folder = sanitize_model_name(f"https://{user}:{password}@host.example/org/model")
    path = f"/out/{folder}/results_2026-01-01T00-00-00.json"
    kept = sanitize_model_name(password)  # the password as it stands in the folder name
    assume(kept not in path.replace(kept, "", 1))
    assert kept not in redaction.redact_path(path)


@pytest.mark.parametrize("name", ["a__" * 100_000 + "@", "_a" * 100_000 + "@", "a__b@" * 50_000, "x" * 200_000])
def test_redact_path_is_linear(name):
    import time

    start = time.perf_counter()
    redaction.redact_path("/runs/" + name + "/results.json")
    assert time.perf_counter() - start < 2  # a quadratic scan of 200,000 characters takes minutes


# ----------------------------------------------------------------------------- every text of an item

PLANTED_KEY = "sk-" + "Q7w3E9r1T5" * 4  # a well-known key shape
BEARER_TOKEN = "tok.Zy81Qk-bearer-77"
RUN_KEY = "Rk5-run-own-key-0x9"  # the run's own api_key: no well-known shape, known only from model_args
MEDFACT_REPLIES = [
    f"<score>{PLANTED_KEY}</score>",
    f"<score>Authorization: Bearer {BEARER_TOKEN}</score>",
    f"<score>{RUN_KEY}</score>",
]
MILLERQA_EXPLANATION = f"Use Authorization: Bearer {BEARER_TOKEN} with {PLANTED_KEY} or {RUN_KEY}."


def planted_run(folder, demo_data_dir):
    """A scripted run of MedFact (scifact) and MillerQA (triage) through lm-eval, whose replies hold credentials: in
    MedFact's <score> block (quoted by the invalid reason) and in MillerQA's explanation (kept in the details)."""
    from tests.runs import evaluated_run
    from tests.scripted_lm import ScriptedLM

    medfact = iter(MEDFACT_REPLIES)

    def reply(prompt):
        if "selected_answer" in prompt:  # MillerQA asks for a JSON answer
            return json.dumps({"selected_answer": "A", "explanation": MILLERQA_EXPLANATION, "confidence": 70})
        return next(medfact)

    run = evaluated_run(
        folder, demo_data_dir, ["medfact_bench_scifact", "millerqa_triage"], limit=3, model=ScriptedLM(reply=reply)
    )
    (results_file,) = run.rglob("results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    results["config"]["model_args"] = f"pretrained=m,api_key={RUN_KEY}"
    results_file.write_text(json.dumps(results), encoding="utf-8")
    return run


def test_a_credential_in_a_reply_is_masked_in_every_field_that_quotes_it(demo_data_dir, tmp_path):
    from lm_eval_tasks.utils.report import write_report

    _, written = write_report(planted_run(tmp_path / "run", demo_data_dir), tmp_path / "rep")
    names = {path.name for path in written}
    assert {"report.json", "report.md", "report.html", "items_medfact_bench.jsonl", "items_millerqa.jsonl"} <= names
    # The whole secrets, and pieces of them that a quote cut short (the invalid reason quotes 40 characters).
    planted = [PLANTED_KEY, PLANTED_KEY[3:23], BEARER_TOKEN, RUN_KEY]
    for path in written:
        data = path.read_bytes()
        for secret in planted:
            assert secret.encode() not in data, (path.name, secret)
    medfact = [json.loads(line) for line in (tmp_path / "rep" / "items_medfact_bench.jsonl").read_text().splitlines()]
    assert len(medfact) == 3
    # A score block's content is quoted only whole (40 characters at most): the run's key, masked; the two longer
    # ones are described by their length, never cut to a prefix the masking could not recognise.
    assert sorted(item["invalid_reason"] for item in medfact) == [
        "the first <score>...</score> holds '***', not an integer -2..2",
        "the first <score>...</score> holds 42 characters, not an integer -2..2",
        "the first <score>...</score> holds 43 characters, not an integer -2..2",
    ]
    for item in medfact:
        quoted = "'***'" in item["invalid_reason"]
        assert item["redacted"] == (["reply", "invalid_reason"] if quoted else ["reply"]), item
        assert item["outcome"] == "INVALID"
    millerqa = [json.loads(line) for line in (tmp_path / "rep" / "items_millerqa.jsonl").read_text().splitlines()]
    assert len(millerqa) == 3
    for item in millerqa:
        assert item["redacted"] == ["reply", "details.explanation"], item
        assert item["explanation"] == "Use Authorization: *** with *** or ***."  # the header's scheme and token
        assert item["selected_letter"] == "A" and item["outcome"] != "INVALID"  # scored before masking


def test_nested_details_are_masked_and_an_item_without_credentials_is_returned_as_it_is():
    from lm_eval_tasks.utils.scoring import ScoredItem
    from lm_eval_tasks.utils.walk import _Masker, _redacted

    details = {"id": "q1", "trace": [{"call": ("ok", f"Bearer {BEARER_TOKEN}")}], "n": 1}
    item = ScoredItem(
        "t", 0, "h", "c", "A", f"x {RUN_KEY}", 0.0, details=details, parse_step=f"step {RUN_KEY}", prompt=f"p {RUN_KEY}"
    )
    masked = _redacted(item, _Masker({RUN_KEY}))
    assert masked.details == {"id": "q1", "trace": [{"call": ("ok", "Bearer ***")}], "n": 1}
    assert masked.pred == "x ***" and masked.parse_step == "step ***" and masked.gold == "A"
    assert masked.prompt == "p ***" and masked.reply is None
    assert masked.redacted == ("prompt", "pred", "parse_step", "details.trace")  # the fields' own order
    plain = ScoredItem("t", 0, "h", "c", "A", "B", 0.0, details={"id": "q1", "trace": [{"call": ("ok",)}]}, reply="B")
    assert _redacted(plain, _Masker({RUN_KEY})) is plain


def test_mask_strings_masks_every_string_and_key_at_any_depth():
    key = "Rk5-run-own-key-0x9"
    value = {"a": [f"x {key}", ("Bearer tok123", 3)], f"task_{key}": {"b": None, "c": 1.5, "d": True}}
    assert redaction.mask_strings(value, {key}) == {
        "a": ["x ***", ("Bearer ***", 3)],
        "task_***": {"b": None, "c": 1.5, "d": True},
    }
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert redaction.mask_strings(deep) == redaction.MASK  # deeper than Python can walk: masked whole


# ----------------------------------------------------------------------------- well-known keys glued to a word

GLUED_KEYS = [
    "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",  # after '-' or '_', the shapes as at a word's start
    "sk-0123456789abcdefABCDEF",
    "hf_" + "aBcDeFgHiJ" * 3 + "kLmN",
    "github_pat_" + "A1b2C3d4E5" * 4 + "_x",
    "xoxb-123456789012-AbCdEfGhIjKl",
]
GLUED_IN_A_WORD = [
    "AKIAIOSFODNN7EXAMPLE",  # glued to a letter or digit, each in its issuer's exact form
    "ghp_" + "A1b2C3d4E5f6" * 3,
    "gho_" + "0123456789" * 3 + "abcdef",
    "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH",
    "sk-" + "a1B2c3D4e5F6" * 4,
    "sk-proj-" + "a1B2-c3D4_" * 5,
    "github_pat_" + "A1b2C3d4E5f6G7h8I9j0K1" + "_" + "z" * 59,
    "xoxp-1234567890-AbCdEfGhIjKl",
    "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "glpat-" + "a1B2c3D4e5F6g7H8i9J0",
]


@pytest.mark.parametrize("key", GLUED_KEYS)
@pytest.mark.parametrize("before", ["empty-", "task-", "x_", "my__"])
def test_a_key_after_a_hyphen_or_underscore_is_masked(before, key):
    assert redaction.mask(f"see {before}{key}, then") == f"see {before}***, then"


@pytest.mark.parametrize("key", GLUED_IN_A_WORD)
@pytest.mark.parametrize("word", ["key", "empty", "x9"])
def test_a_key_glued_to_a_word_is_masked_in_its_exact_form(word, key):
    assert redaction.mask(f"value: {word}{key} (done)") == f"value: {word}*** (done)"


def test_words_that_hold_a_key_prefix_are_kept_and_basic_tokens_masked():
    words = [
        "risk-benefit analysis; ask-the-doctor; whisk-sk-free",
        "a risk-" + "assessment" * 5 + " and mask-" + "a" * 40,  # sk- tails of letters, not the issuer's form
        "half_" + "x" * 40 + " behalf_of_" + "y" * 40,
        "the highs_" + "a1" * 18 + "z then",  # a ghs_-like tail one character longer than a token
        "SLOVAKIACONSTITUTIONALCOURT",
        "the basic metabolic panel; Basic Learning Skills; BASIC PRINCIPLES",  # no base64 after "basic"
    ]
    assert [redaction.mask(text) for text in words] == words
    tokens = {
        "curl -H 'X-Proxy: Basic dXNlcjpwYXNz' host": "curl -H 'X-Proxy: Basic ***' host",
        "basic YWxhZGRpbjpvcGVuc2VzYW1l": "basic ***",
        "Basic abcdefgh+": "Basic ***",
        "BASIC QUJDREVGR0g=": "BASIC ***",
    }
    assert {text: redaction.mask(text) for text in tokens} == tokens


def _data_texts(folder):
    """Every text of the data folder: the strings of its JSON files, the lines of the others."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix in (".json", ".jsonl"):
            lines = [path.read_text(encoding="utf-8")] if path.suffix == ".json" else path.read_text().splitlines()
            stack = [json.loads(line) for line in lines if line.strip()]
            while stack:
                value = stack.pop()
                if isinstance(value, str):
                    yield value
                elif isinstance(value, (dict, list)):
                    stack.extend(value.values() if isinstance(value, dict) else value)
        else:
            yield from path.read_text(encoding="utf-8", errors="replace").splitlines()


def test_the_benchmarks_texts_that_hold_a_key_prefix_or_basic_are_kept(shared_data):
    # Every text of the real data where a well-known key's prefix (or the auth scheme "basic") stands: medical
    # questions, vignettes and abstracts ("risk-outcome pairs", "basic metabolic panel").
    prefix = re.compile(r"sk-|hf_|gh[pousr]_|github_pat_|xox[abprs]-|A[KS]IA|AIza|glpat-|basic", re.IGNORECASE)
    texts = [text for text in _data_texts(shared_data) if prefix.search(text)]
    assert len(texts) > 500
    changed = [text for text in texts if redaction.mask(text) != text]
    assert changed == []


GLUE_PIECES = st.lists(st.sampled_from(["sk-", "hf_", "ghp_", "AKIA", "xoxb-", "proj-", "a", "Z", "7", "-", "_", " "]))


@settings(max_examples=examples(300), deadline=None)
@given(before=GLUE_PIECES.map("".join), key=st.sampled_from(GLUED_IN_A_WORD), after=GLUE_PIECES.map("".join))
def test_a_key_glued_to_any_text_never_survives(before, key, after):
    assert key not in redaction.mask(before + "x" + key + " " + after)


def test_glued_key_shapes_are_linear():
    # About 400 KB each: a scan restarting at every prefix would take hours. None: kept as it is.
    cases = [
        ("xsk-proj-" * 50_000, "x***"),  # one key shape from the first sk-proj- to the end
        ("keyAKIA" * 60_000, None),
        ("task-ghp_" * 50_000, None),
        ("ahf_" + "b" * 33 + "c" * 400_000, None),
        ("xoxb-1-" * 60_000, "***"),
    ]
    assert [redaction.mask(text) for text, _ in cases] == [text if out is None else out for text, out in cases]


# ----------------------------------------------------------------------------- the scan against every scan

# The reference: every scan run on every text, and every key-shaped match tried in turn (what redaction did before
# it looked only at candidates). The module must find exactly the same spans.
_REFERENCE_SECRET_WORDS = secret_names.SECRET_WORDS | secret_names.SECRET_LAST_WORDS


def _reference_is_secret_key(name):
    words = [word.lower() for word in secret_names.WORD.findall(unquote(name))]
    if not words:
        return False
    if any(word in secret_names.SECRET_WORDS for word in words):
        return True
    if words[-1] not in secret_names.SECRET_LAST_WORDS:
        return False
    return not (words[-1] == "token" and len(words) > 1 and words[-2] in secret_names.TEXT_TOKEN_WORDS)


def _reference_keyed_value_spans(text):
    position = 0
    while match := redaction._KEY_BEFORE_VALUE.search(text, position):
        position = match.end()
        if not _reference_is_secret_key(match.group(2)) or position >= len(text):
            continue
        char, escapes = text[position], 0
        while escapes < 2 and text.startswith("\\", position + escapes):
            escapes += 1
        if text[position + escapes : position + escapes + 1] in ("'", '"'):
            value_start = position + escapes + 1
            value_end = redaction._closing_quote(text, value_start, text[position:value_start], escapes)
            if text[value_start:value_end].strip().lower() not in secret_names.UNSET_VALUES:
                yield value_start, value_end
            position = value_end + 1
        elif char in "{[(":
            value_end = redaction._closing_bracket(text, position)
            yield position, value_end
            position = value_end
        else:
            value_end = redaction._BARE_VALUE.match(text, position).end()
            words = secret_names.WORD.findall(unquote(match.group(2)))
            scheme = re.fullmatch("[A-Za-z][A-Za-z0-9-]*", text[position:value_end])
            if words and words[-1].lower() in ("authorization", "auth") and scheme:
                credentials = redaction._CREDENTIALS.match(text, value_end)
                value_end = credentials.end() if credentials else value_end
            if text[position:value_end].lower() not in secret_names.UNSET_VALUES:
                yield position, value_end
            position = max(value_end, position + 1)


def _reference_key_value_spans(text, parts):
    for start, end in parts:
        equals = text.find("=", start, end)
        if equals < 0 or not _reference_is_secret_key(text[start:equals]):
            continue
        value_start, value_end = equals + 1, end
        while value_start < value_end and text[value_start].isspace():
            value_start += 1
        while value_end > value_start and text[value_end - 1].isspace():
            value_end -= 1
        if redaction._unquote(text[value_start:value_end]).lower() not in secret_names.UNSET_VALUES:
            yield value_start, value_end


def _reference_flag_value_spans(text):
    # Every flag as its rule reads: a word-initial '-' or '--', a name, spaces or tabs, then a quoted or bare value.
    position = 0
    while flag := re.compile(r"(?<![\w-])--?([A-Za-z][\w-]*)[ \t]+").search(text, position):
        position = flag.end()
        if not _reference_is_secret_key(flag.group(1)):
            continue
        quote = text[position : position + 1]
        if quote in ("'", '"'):
            line_end = min([i for i in (text.find("\n", position), text.find("\r", position)) if i >= 0] or [len(text)])
            closing = text.find(quote, position + 1, line_end)
            value = (position + 1, closing if closing >= 0 else line_end)
            position = value[1] + (closing >= 0)
        else:
            value = (position, redaction._BARE_VALUE.match(text, position).end())
            position = value[1]
        if value[1] > value[0] and text[value[0] : value[1]].lower() not in secret_names.UNSET_VALUES:
            yield value


def _reference_private_key_spans(text):
    # Each BEGIN armour line not inside an earlier block, paired with the first END line after it (none: the end).
    marks = [
        (match.start(), match.end(), match.group(1))
        for match in re.finditer(r"-----(BEGIN|END) [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----", text)
    ]
    block_end = 0
    for start, end, kind in marks:
        if kind != "BEGIN" or start < block_end:
            continue
        closing = next((m for m in marks if m[2] == "END" and m[0] >= end), None)
        body_end = len(text) if closing is None else closing[0]
        if body_end > end:
            yield end, body_end
        block_end = len(text) if closing is None else closing[1]


def _reference_spans(text):
    spans = [
        *_reference_key_value_spans(text, redaction._top_level_parts(text)),
        *_reference_key_value_spans(text, redaction._comma_parts(text)),
        *_reference_keyed_value_spans(text),
    ]
    for match in redaction._URL_USERINFO.finditer(text):
        start, end = match.span(1)
        colon = text.find(":", start, end)
        if end > start:
            spans.append(((colon + 1 if colon >= 0 else start), end))
    spans += redaction._query_value_spans(text)
    spans += _reference_flag_value_spans(text)
    spans += _reference_private_key_spans(text)
    for match in secret_triggers.AUTH_SCHEME.finditer(text):
        if match.group(1) is not None:
            spans.append(match.span(1))
        elif secret_triggers.BASE64_MARK.search(match.group(2)):
            spans.append(match.span(2))
    for shapes in (secret_triggers.KEY_SHAPES, secret_triggers.GLUED_KEY_SHAPES):
        spans += [match.span() for match in shapes.finditer(text)]
    return sorted(set(spans))


def _spans(text):
    return sorted(set(redaction._secret_spans(text)))


KEY_VALUE = st.builds(
    "{0}{1}{0}{2}{3}".format,
    st.sampled_from(["", '"', "'", '\\"', '\\\\"']),
    st.sampled_from(["api_key", "x", "Token", "pad_token", "api%5Fkey", "sig", "my-pass", "k%zz", "9key", "auth"]),
    st.sampled_from([":", "=", " : ", "= ", ":\n"]),
    st.sampled_from(["", "s3cr", '"s3cr"', "'s'", "{'a': 1}", "[x", "None", '\\"v\\"', "(1, 2)"]),
)
KEY_SYNTAX = st.lists(
    KEY_VALUE
    | st.sampled_from(
        list("akeytosphbrdiKAI:=/_-%2F5{}[]()\"' ,.;?&@#\n\t\\İſK")
        + ["api_key", "apiKey", "Authorization", "x-api-key", "pad_token", "sig", "significant", "pass", "pwd"]
        + ["cookie", "header", "secret", "credential", "Bearer ", "basic ", "QUJDREVGR0g=", "sk-", "hf_", "ghp_"]
        + ["github_pat_", "xoxb-", "AKIA", "AIza", "glpat-", "://", "code=", "%5F", "%6B", '\\"', "None", "true"]
        + ["--api-key ", "--token\t", "-secret ", "--max-tokens ", "anti-token ", "--pass '", " -"]
        + ["-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "-----BEGIN ", "PRIVATE KEY-----"]
    )
).map("".join)


@settings(max_examples=examples(3000), deadline=None)
@given(KEY_SYNTAX)
def test_the_candidate_scan_finds_the_spans_of_every_scan(text):
    assert _spans(text) == _reference_spans(text)
    assert redaction.is_secret_key(text) == _reference_is_secret_key(text)


def test_the_candidate_scan_finds_the_spans_of_every_scan_on_the_benchmarks_texts(shared_data):
    # Where a key-based scan can run: the texts with a '=' or a ':'.
    texts = [text for text in _data_texts(shared_data) if "=" in text or ":" in text]
    assert len(texts) > 1000
    differing = [text[:200] for text in texts if _spans(text) != _reference_spans(text)]
    assert differing == []


def test_the_fast_path_gives_the_full_scans_verdict_on_the_benchmarks_texts(shared_data):
    texts = list(_data_texts(shared_data))
    assert len(texts) > 10_000
    differing = [text[:200] for text in texts if redaction._redact_text(text) != redaction._redact_text_fully(text)]
    assert differing == []


@settings(max_examples=examples(3000), deadline=None)
@given(
    st.lists(
        st.sampled_from(
            list("=,:\"' _-%İé9")
            + ["significant", "sigNificant", "apiKey", "APIKey", "accesskey", "pass", "code", "x", "Token", "SIG"]
        )
    ).map("".join)
)
def test_a_key_word_before_an_equals_sign_is_found_as_splitting_every_stretch_in_words_finds_it(text):
    def splitting_every_stretch(text):
        for stretch in text.split("=")[:-1]:
            words = [word.lower() for word in WORD.findall(stretch)]
            if words and (words[-1] in {*SECRET_LAST_WORDS, "code", "sig"} or any(w in SECRET_WORDS for w in words)):
                return True
        return False

    assert secret_triggers.key_word_before_equals(text) == splitting_every_stretch(text)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("Authorization: Token abc123secret\nnext", "Authorization: ***\nnext"),
        ("auth: Token abc123secret", "auth: ***"),
        ('Proxy-Authorization: Digest username="u", response="6629fae4"', "Proxy-Authorization: ***"),
        ("Use Authorization: Bearer tok123 with x.", "Use Authorization: *** with x."),
        ("x_authorization: Basic dXNlcjpwYXNz then", "x_authorization: *** then"),
        ("X-Auth-Token: abc123 more", "X-Auth-Token: *** more"),  # a token's value is one word
        ("password: hunter2 and more", "password: *** and more"),
        ("Authorization: Token", "Authorization: ***"),
        ("auth: none", "auth: none"),
    ],
)
def test_an_auth_headers_scheme_is_masked_with_the_credentials_after_it(text, masked):
    # The header's value is the scheme's word, then a token68 or auth-params: the word alone left the token behind.
    assert redact(text) == masked


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("--api-key abc123secret", "--api-key ***"),
        ('run --token "two words" x', 'run --token "***" x'),
        ("cmd --password  hunter2\nnext", "cmd --password  ***\nnext"),
        ("--header 'Authorization: Bearer x' y", "--header '***' y"),
        ("--token 'not closed\nnext", "--token '***\nnext"),  # a quote holds at most its line
        ("--max-tokens 100 --tokenizer run", "--max-tokens 100 --tokenizer run"),  # no credential's names
        ("anti-token x", "anti-token x"),  # a hyphenated word, no flag
        ("--auth none", "--auth none"),
    ],
)
def test_a_command_line_flag_that_names_a_credential_has_its_value_masked(text, masked):
    assert redact(text) == masked


@settings(max_examples=examples(1000), deadline=None)
@given(
    st.lists(
        st.sampled_from(["--api-key ", "-token", "--", "-", " ", "\t", "'", '"', "\n", "x", "9", "_", "tokens", "none"])
    ).map("".join)
)
def test_the_flag_check_of_the_fast_path_misses_no_flag(text):
    # No '=', ':', '%', URL or key shape: only a flag can hold a credential.
    assert redaction._redact_text(text) == redaction._redact_text_fully(text)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (
            "k:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpA\n-----END RSA PRIVATE KEY-----\nbye",
            "k:\n-----BEGIN RSA PRIVATE KEY-----***-----END RSA PRIVATE KEY-----\nbye",
        ),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn cut", "-----BEGIN OPENSSH PRIVATE KEY-----***"),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQ\n-----END PGP PRIVATE KEY BLOCK-----",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----***-----END PGP PRIVATE KEY BLOCK-----",
        ),
        (
            '{"k": "-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----"}',
            '{"k": "-----BEGIN PRIVATE KEY-----***-----END PRIVATE KEY-----"}',
        ),
        (
            "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
            "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
        ),
        ("the PRIVATE KEY of x", "the PRIVATE KEY of x"),
    ],
)
def test_a_private_keys_block_is_masked_between_its_armour_lines(text, masked):
    assert redact(text) == masked


def test_a_key_after_characters_whose_lowering_is_longer_is_masked():
    # "İ" lowers to two characters: offsets into the lowered text no longer point at the key.
    assert redact("İ" * 10 + " note api_key: s3cret") == "İ" * 10 + " note api_key: ***"


def test_items_masked_in_two_processes_are_those_one_process_masks(demo_data_dir, tmp_path, monkeypatch):
    # The report writes its items files in a forked process while it computes the numbers: every file it writes is
    # the same.
    from lm_eval_tasks.utils import machine
    from lm_eval_tasks.utils.report import write_report

    run = planted_run(tmp_path / "run", demo_data_dir)
    written = {}
    for cores in (1, 2):
        monkeypatch.setattr(machine, "usable_cores", lambda cores=cores: cores)
        _, paths = write_report(run, tmp_path / f"rep{cores}")
        written[cores] = {path.name: path.read_bytes() for path in paths if path.suffix in (".json", ".jsonl", ".md")}
    assert written[1] == written[2]
    assert b"***" in written[2]["items_medfact_bench.jsonl"] and b"***" in written[2]["items_millerqa.jsonl"]


def test_the_walk_leaves_no_cycle_holding_the_samples(demo_data_dir, tmp_path):
    # The scoring lets the run's samples go once they are walked: nothing that holds them may be in a reference
    # cycle, or they outlive the scoring until the collector runs (0.3 s of a realistic run's report).
    import gc

    from lm_eval_tasks.utils.results import score_path

    run = planted_run(tmp_path / "run", demo_data_dir)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable is kept in gc.garbage, to be looked at
    try:
        score_path(run)
        gc.collect()
        samples = [
            found for found in gc.garbage if isinstance(found, dict) and {"doc_hash", "filtered_resps"} <= found.keys()
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not samples, f"{len(samples)} logged samples were kept in reference cycles"


def test_the_walk_masks_every_text_of_the_items_and_keeps_the_replies_as_logged(demo_data_dir, tmp_path):
    from lm_eval_tasks.utils.benchmarks import report_specs
    from lm_eval_tasks.utils.runs import load_run
    from lm_eval_tasks.utils.walk import walk_run

    run = load_run(planted_run(tmp_path / "run", demo_data_dir))
    walks = [walk for walk in walk_run(run, report_specs()) if walk.items]
    assert [len(walk.items) for walk in walks] == [3, 3]  # MedFact-Bench's and MillerQA's
    assert sorted(walks[0].replies) == sorted(MEDFACT_REPLIES)  # as logged: the lengths count them
    replies = sorted(item.reply for item in walks[0].items)  # each holding a credential as logged
    assert replies == ["<score>***</score>", "<score>***</score>", "<score>Authorization: ***</score>"]
    assert all(item.redacted[0] == "reply" for walk in walks for item in walk.items)


def test_the_first_sample_that_cannot_be_scored_is_named(demo_data_dir, tmp_path):
    from lm_eval_tasks.utils.benchmarks import report_specs
    from lm_eval_tasks.utils.data import DataError
    from lm_eval_tasks.utils.runs import load_run
    from lm_eval_tasks.utils.walk import walk_run

    run = load_run(planted_run(tmp_path / "run", demo_data_dir))
    task = next(task for task in sorted(run.samples) if task.startswith("medfact_bench"))
    for sample in run.samples[task][1:]:  # lines 2 and 3
        del sample["doc_id"]
    with pytest.raises(
        DataError, match=rf"{task}_.*\.jsonl, line 2: cannot score this sample \(KeyError\('doc_id'\)\)"
    ):
        walk_run(run, report_specs())
