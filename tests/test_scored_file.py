"""scored_run.json: a report's scored run, read back by leaderboard and compare only when it is the scoring of the
same files by the same code; anything else is scored afresh."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from lm_eval_tasks.utils import scored_file
from lm_eval_tasks.utils.leaderboard import build
from lm_eval_tasks.utils.report import MANIFEST, write_report
from lm_eval_tasks.utils.results import score_path
from lm_eval_tasks.utils.runs import find_results

from tests.runs import FIVE_BENCHMARKS, evaluated_run


@pytest.fixture(scope="module")
def reported(demo_data_dir, tmp_path_factory):
    """A scripted run of the five benchmarks' scored tasks with its report written beside it (``report/``)."""
    root = tmp_path_factory.mktemp("scored")
    run = evaluated_run(root / "run", demo_data_dir, FIVE_BENCHMARKS)
    scored, _ = write_report(run)
    return find_results(run), scored


def test_a_saved_run_reads_back_as_the_same_scored_run(reported):
    results_path, scored = reported
    read = scored_file.read(results_path, results_path.parent / "report")
    assert read is not None
    assert read.report() == scored.report()
    assert read.item_details() == scored.item_details()
    for name, section in scored.sections.items():
        again = read.sections[name]
        assert again.keys == section.keys and again.settings == section.settings
        assert list(again.items) == list(section.items)
        if section.compared is None:
            assert again.compared is None
        else:
            assert again.compared.estimate == section.compared.estimate
            assert np.array_equal(again.compared.distribution, section.compared.distribution)
            assert again.compared.distribution.tobytes() == section.compared.distribution.tobytes()


def test_a_saved_run_read_into_a_spool_holds_no_text_and_reads_each_back(reported, tmp_path):
    # The leaderboard's way: each item's texts copied as they are from the lines after the body, read back by offset.
    results_path, scored = reported
    read = scored_file.read(results_path, results_path.parent / "report", spool=tmp_path)
    assert read.report() == scored.report()
    for name, section in scored.sections.items():
        again = read.sections[name]
        assert all(item.prompt is None and item.reply is None for item in again.items)
        assert [again.item(position) for position in range(len(section.items))] == list(section.items)
    assert len(list(tmp_path.iterdir())) == 1  # one file for the run's sections


def test_the_file_is_found_by_a_relative_path_and_shows_that_path(reported, monkeypatch):
    results_path, scored = reported
    monkeypatch.chdir(results_path.parents[1])
    relative = results_path.relative_to(results_path.parents[1])
    read = scored_file.score_or_read(relative)
    assert read.provenance["results_file"] == str(relative)
    assert read.report() == score_path(relative).report()


def test_a_changed_samples_file_or_other_code_is_scored_afresh(reported, tmp_path, monkeypatch):
    results_path, _ = reported
    folder = results_path.parent / "report"
    assert scored_file.read(results_path, folder) is not None
    monkeypatch.setattr(scored_file, "code_digest", lambda: "0" * 64)
    assert scored_file.read(results_path, folder) is None
    monkeypatch.undo()
    samples = next(results_path.parent.glob("samples_*.jsonl"))
    original = samples.read_bytes()
    try:
        samples.write_bytes(original + b"\n")  # a blank line: the same samples, other bytes
        assert scored_file.read(results_path, folder) is None
    finally:
        samples.write_bytes(original)
    assert scored_file.read(results_path, folder) is not None


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"[]", b'{"key": null}', b"\xff\xfe", b"[" * 100_000],
    ids=["empty", "text", "list", "no-key", "not-utf8", "deep"],
)
def test_a_broken_file_is_ignored(reported, tmp_path, body):
    results_path, _ = reported
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / scored_file.FILE).write_bytes(body)
    assert scored_file.read(results_path, folder) is None


def copied_report(results_path, tmp_path):
    """A copy of the run's report folder (its scored run with the items files it reads its texts from)."""
    import shutil

    return Path(shutil.copytree(results_path.parent / "report", tmp_path / "report"))


def _resigned(key: bytes, body: dict, texts: bytes) -> bytes:
    """A scored_run.json with ``body`` signed under this user's secret, as if this code had written it."""
    key_values = {k: v for k, v in json.loads(key).items() if k != "signature"}
    rest = json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode() + b"\n" + texts
    signed = {**key_values, "signature": scored_file.signature(scored_file._signed_bytes(key_values, rest))}
    return json.dumps(signed, ensure_ascii=True).encode() + b"\n" + rest


def _unknown_field(items):
    items["unknown_field"] = [1] * len(items["task"])


def _short_column(items):
    items["gold"] = items["gold"][:-1]


def _doc_id_as_text(items):
    items["doc_id"][0] = str(items["doc_id"][0])


def _tuple_as_text(items):
    items["choices"][-1] = "abc"


def _column_as_object(items):
    items["pred"] = {"0": items["pred"][0]}


@pytest.mark.parametrize("broken", [_unknown_field, _short_column, _doc_id_as_text, _tuple_as_text, _column_as_object])
def test_items_that_are_not_those_written_are_ignored_even_under_a_valid_signature(reported, tmp_path, broken):
    results_path, _ = reported
    folder = copied_report(results_path, tmp_path)
    original = (folder / scored_file.FILE).read_bytes()
    key, body, texts = original.split(b"\n", 2)
    assert _resigned(key, json.loads(body), texts) == original  # the way this test signs is the writer's
    body = json.loads(body)
    broken(next(iter(body["sections"].values()))["items"])
    (folder / scored_file.FILE).write_bytes(_resigned(key, body, texts))
    assert scored_file.read(results_path, folder) is None
    (folder / scored_file.FILE).write_bytes(original)
    assert scored_file.read(results_path, folder) is not None  # the same file, untouched, is read


def test_a_file_edited_or_signed_by_another_user_is_scored_afresh(reported, tmp_path, monkeypatch):
    # The key can be computed by anyone from the run's files; the signature only with this user's secret.
    results_path, scored = reported
    folder = copied_report(results_path, tmp_path)
    original = (folder / scored_file.FILE).read_bytes()
    key, body, texts = original.split(b"\n", 2)
    name = next(iter(scored.sections))
    forged = json.loads(body)
    forged["sections"][name]["numbers"]["n_items"] += 1  # a number the samples do not give
    text = json.dumps(forged, ensure_ascii=True, separators=(",", ":")).encode()
    (folder / scored_file.FILE).write_bytes(key + b"\n" + text + b"\n" + texts)
    assert scored_file.read(results_path, folder) is None
    resigned = {**json.loads(key), "signature": "0" * 64}
    (folder / scored_file.FILE).write_bytes(json.dumps(resigned).encode() + b"\n" + body + b"\n" + texts)
    assert scored_file.read(results_path, folder) is None
    (folder / scored_file.FILE).write_bytes(original)
    assert scored_file.read(results_path, folder) is not None
    # Another user's (or machine's) secret: the same file is not theirs to reuse.
    with monkeypatch.context() as patched:
        patched.setattr(scored_file, "_secret", lambda: b"f" * 64)
        assert scored_file.read(results_path, folder) is None
    # A prompt edited in the items file the texts are read from, or that file gone: as much a forgery.
    items = folder / f"items_{name}.jsonl"
    lines = items.read_bytes()
    assert b'"prompt": "' in lines
    items.write_bytes(lines.replace(b'"prompt": "', b'"prompt": "!', 1))
    assert scored_file.read(results_path, folder) is None
    items.unlink()
    assert scored_file.read(results_path, folder) is None
    items.write_bytes(lines)
    assert scored_file.read(results_path, folder) is not None
    # The items file named on the last line is the section's own, even under a valid signature's sha256.
    listed = json.loads(texts)
    assert listed[name] == {"file": f"items_{name}.jsonl", "sha256": hashlib.sha256(lines).hexdigest()}


def test_the_secret_is_the_users_own_and_without_one_nothing_is_reused(reported, tmp_path, monkeypatch):
    results_path, _ = reported
    monkeypatch.setenv("MEDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    scored_file._secret.cache_clear()
    try:
        folder = tmp_path / "report"
        write_report(results_path, folder)
        secret = tmp_path / "cache" / scored_file.SECRET_FILE
        assert secret.stat().st_mode & 0o777 == 0o600
        assert len(secret.read_text().strip()) == 64
        assert scored_file.read(results_path, folder) is not None
        # A cache folder that cannot be made (a file in its place): nothing signed, nothing reused.
        (tmp_path / "blocked").write_text("")
        monkeypatch.setenv("MEDEVAL_CACHE_DIR", str(tmp_path / "blocked" / "cache"))
        scored_file._secret.cache_clear()
        write_report(results_path, folder)
        unsigned = (folder / scored_file.FILE).read_bytes()
        assert json.loads(unsigned.split(b"\n", 1)[0])["signature"] is None
        assert scored_file.read(results_path, folder) is None
    finally:
        scored_file._secret.cache_clear()


def test_a_leaderboard_from_saved_runs_equals_one_scored_afresh(reported, monkeypatch):
    results_path, _ = reported
    calls = []
    monkeypatch.setattr(scored_file, "score_path", calls.append)
    from_saved, _ = build([results_path])
    assert calls == []  # read back, not scored
    monkeypatch.setattr(scored_file, "score_path", score_path)
    monkeypatch.setattr(scored_file, "read", lambda *args: None)
    assert build([results_path])[0] == from_saved


def test_a_run_whose_section_reads_other_files_is_never_saved(demo_data_dir, tmp_path):
    # FActBench's section reads the fact-check output beside the run at report time, which the key does not cover.
    run = evaluated_run(tmp_path / "run", demo_data_dir, ("factbench_gen",))
    stale = tmp_path / "report" / scored_file.FILE
    stale.parent.mkdir()
    stale.write_text("{}")  # an earlier report's, as its manifest says
    (stale.parent / MANIFEST).write_text(json.dumps([scored_file.FILE]))
    _, written = write_report(run, tmp_path / "report")
    assert scored_file.FILE not in {path.name for path in written} and not stale.exists()


def test_lengths_in_words_and_in_tokens_are_different_keys(tmp_path, tiny_model_dir, monkeypatch):
    from tests.hand_runs import REPLIES, write_run
    from tests.tiny_model import tiny_tokenizer

    tiny_tokenizer(tiny_model_dir, tmp_path / "tok")
    run = write_run(tmp_path / "run" / "m", {"medfact_bench_scifact": REPLIES}, model_args={"pretrained": "m"})
    results_path = find_results(run)
    folder = results_path.parent / "report"
    tokenizer = str(tmp_path / "tok")
    write_report(run, tokenizer=tokenizer)
    assert scored_file.read(results_path, folder) is None  # written in tokens: not for a command in words
    assert scored_file.read(results_path, folder, "run") is None  # nor for the run's own (another tokenizer)
    read = scored_file.read(results_path, folder, tokenizer)
    assert read.sections["medfact_bench"].numbers["reply_lengths"]["unit"] == "tokens"
    write_report(run)
    assert scored_file.read(results_path, folder, tokenizer) is None  # written in words: not for --tokenizer
    read = scored_file.score_or_read(run)
    assert read.sections["medfact_bench"].numbers["reply_lengths"]["unit"] == "words"
    # The key names a folder by where it is and holds no password.
    monkeypatch.chdir(tmp_path)
    assert scored_file.run_key(results_path, "tok")["reply_lengths"] == f"tokens: {tmp_path}/tok"
    assert scored_file.run_key(results_path, "run")["reply_lengths"] == "tokens: run"
    assert scored_file.run_key(results_path)["reply_lengths"] == "words"
    assert scored_file.run_key(results_path, "https://u:PASSWORD@h/x")["reply_lengths"] == "tokens: https://u:***@h/x"


@pytest.fixture
def own_secret(tmp_path, monkeypatch):
    """A fresh cache folder for the secret, the path of its key file."""
    monkeypatch.setenv("MEDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    scored_file._secret.cache_clear()
    yield tmp_path / "cache" / scored_file.SECRET_FILE
    scored_file._secret.cache_clear()


def test_a_body_under_another_runs_key_line_is_scored_afresh(demo_data_dir, tmp_path, own_secret):
    # Both files are signed by this user: the signature must bind the body to its own run's key.
    a = find_results(evaluated_run(tmp_path / "a", demo_data_dir, ("pubmedqa_atlas_n100",), salt="a", limit=6))
    b = find_results(evaluated_run(tmp_path / "b", demo_data_dir, ("pubmedqa_atlas_n100",), salt="b", limit=6))
    write_report(a, tmp_path / "report_a")
    write_report(b, tmp_path / "report_b")
    saved_a, saved_b = ((tmp_path / f"report_{x}" / scored_file.FILE).read_bytes() for x in "ab")
    assert saved_a.split(b"\n", 1)[1] != saved_b.split(b"\n", 1)[1]
    folder = tmp_path / "report_b"
    (folder / scored_file.FILE).write_bytes(saved_b.split(b"\n", 1)[0] + b"\n" + saved_a.split(b"\n", 1)[1])
    assert scored_file.read(b, folder) is None
    (folder / scored_file.FILE).write_bytes(saved_b)
    assert scored_file.read(b, folder).report() == score_path(b).report()


def planted_secret(path, mode=0o600):
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text("a" * 64 + "\n")
    path.chmod(mode)


@pytest.mark.parametrize("plant", ["writable-by-others", "symlink", "another-owner", "fifo", "folder"])
def test_a_key_that_is_not_the_users_own_is_ignored_with_a_warning(own_secret, tmp_path, plant, capsys):
    import os

    if plant == "writable-by-others":
        planted_secret(own_secret, 0o666)
    elif plant == "symlink":
        planted_secret(tmp_path / "elsewhere.key")
        own_secret.parent.mkdir(mode=0o700)
        own_secret.symlink_to(tmp_path / "elsewhere.key")
    elif plant == "another-owner":
        if os.getuid() != 0:
            pytest.skip("giving a file to another user needs root")
        planted_secret(own_secret)
        os.chown(own_secret, 65534, 65534)
    elif plant == "fifo":
        own_secret.parent.mkdir(mode=0o700)
        os.mkfifo(own_secret)  # opened for reading, it would block every command for ever
    else:
        own_secret.mkdir(parents=True)
    assert scored_file._secret() is None
    assert scored_file.signature(b"body") is None
    assert f"{own_secret} is ignored" in capsys.readouterr().err


def test_a_shared_cache_folder_is_not_trusted_and_a_new_one_is_private_whatever_the_umask(own_secret, tmp_path):
    import os

    own_secret.parent.mkdir(mode=0o777)
    own_secret.parent.chmod(0o1777)  # a shared folder: anyone may put a key there
    assert scored_file._secret() is None and not own_secret.exists()
    scored_file._secret.cache_clear()
    os.rmdir(own_secret.parent)
    previous = os.umask(0)
    try:
        assert scored_file._secret() is not None
    finally:
        os.umask(previous)
    assert own_secret.parent.stat().st_mode & 0o777 == 0o700 and own_secret.stat().st_mode & 0o777 == 0o600


@pytest.fixture
def read_sizes(monkeypatch):
    """The bytes each read of a file through data.open_regular gave, in order."""
    from lm_eval_tasks.utils import data

    sizes, real = [], data.open_regular

    class Reader:
        def __init__(self, handle):
            self.handle = handle

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def read(self, size=-1):
            sizes.append(len(chunk := self.handle.read(size)))
            return chunk

    monkeypatch.setattr(data, "open_regular", lambda path: Reader(real(path)))
    return sizes


def test_a_fifo_samples_file_and_a_huge_scored_file_are_refused_at_once(reported, tmp_path, read_sizes):
    import os
    import shutil

    results_path, _ = reported
    run = tmp_path / "run"
    shutil.copytree(results_path.parent, run / results_path.parent.name)
    copied = run / results_path.parent.name / results_path.name
    samples = next(copied.parent.glob("samples_*.jsonl"))
    report = copied.parent / "report"
    # A sparse 8 GiB items file beside a valid scored run, then scored_run.json itself: refused by their size,
    # never read (a read of either would take seconds and gigabytes).
    items = next(report.glob("items_*.jsonl"))
    assert scored_file.read(copied, report) is not None
    with open(items, "r+b") as handle:
        handle.truncate(8 << 30)
    assert scored_file.read(copied, report) is None
    with open(report / scored_file.FILE, "r+b") as handle:
        handle.truncate(8 << 30)
    assert scored_file.read(copied, report) is None
    assert max(read_sizes) < 1 << 30
    samples.unlink()
    os.mkfifo(samples)
    (report / scored_file.FILE).write_bytes(b"{}\n")
    with pytest.raises(scored_file.DataError, match="FIFO"):
        scored_file.run_key(copied)
