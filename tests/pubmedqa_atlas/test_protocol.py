"""PubMedQA protocol code on the real data and hand-worked cases: split, context cut, n100, parsing, ties."""

import hashlib
import http.server
import json
import threading
from collections import Counter
from pathlib import Path

import pytest
from lm_eval_tasks.utils import data as data_layer
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.pubmedqa_atlas import constants, loader, parsing, prompts, tasks
from lm_eval_tasks.utils.scoring import INVALID
from sklearn.metrics import f1_score

from tests.offline import pqa_labeled_rows, refused_at_once

# The frozen atlas-n100-v1 (sorted). These ids must never change: a change breaks every published n100 number.
N100_IDS = sorted(
    """
10158597 10331115 10381996 10456814 10781708 10798511 11138995 11458136 11481599 11862129 12094116 12098035
12145243 12163782 12380309 12765819 12846929 12848629 14599616 14627582 14631523 14692023 15050326 15488260
15774570 15841770 16266387 16418930 16769333 16776337 16816043 17054994 17274051 17355582 17598882 17621202
17682349 17940352 17971187 18239988 18284441 18435678 18928979 19302863 19398929 19430778 19468282 19575104
19640728 20084845 20537205 20549895 20736887 21074975 21848798 21864397 22227642 22236315 22350859 22491528
22534881 22537902 22617083 22668852 23076787 23149821 23224030 23359100 23375036 23379759 23422012 23848044
24073931 24352924 24449622 24507422 24666444 24996865 25103647 25521278 25604390 25669733 25725704 25810292
26163474 26200172 26215326 26471488 26708803 26820719 26923375 26965932 27040842 27281318 28359277 29112560
7482275 8738894 9465206 9920954
""".split()
)


@pytest.fixture(scope="module")
def loaded(shared_data):
    return loader.load(str(shared_data))


@pytest.fixture(autouse=True)
def fresh_cache():
    loader._read_items.cache_clear()
    loader._read_test_ids.cache_clear()


# ----------------------------------------------------------------------------- the split


def test_official_test_split_and_train_pool(loaded, shared_data):
    truth = json.loads((shared_data / "pubmedqa" / "test_ground_truth.json").read_text())
    assert [item.pubid for item in loaded.test] == list(truth)  # the authors' file order
    assert Counter(item.answer for item in loaded.test) == {"yes": 276, "no": 169, "maybe": 55}
    assert len(loaded.train) == 500
    assert Counter(item.answer for item in loaded.train) == {"yes": 276, "no": 169, "maybe": 55}
    assert not {i.pubid for i in loaded.train} & set(truth)
    assert all(truth[item.pubid] == item.answer for item in loaded.test)


def test_docs_never_show_the_conclusion(loaded):
    doc = loaded.test[0].doc()
    assert set(doc) == {"pubid", "question", "context", "final_decision"}
    assert loaded.test[0].record["LONG_ANSWER"] not in doc["context"]


# ----------------------------------------------------------------------------- the 300-word cut


def test_first_words_hand_worked():
    assert prompts.first_words("a  b\nc d", 2) == "a  b"
    assert prompts.first_words("  a b ", 2) == "  a b"
    assert prompts.first_words("a b", 3) == "a b"
    assert prompts.first_words("a b c", 3) == "a b c"


def test_300_word_cut_on_real_items(loaded):
    long_items = [i for i in loaded.test if len(" ".join(i.record["CONTEXTS"]).split()) > 300]
    assert len(long_items) == 20  # counted with str.split on the joined sections
    item = next(i for i in loaded.test if i.pubid == "9465206")  # 316 words
    joined = " ".join(item.record["CONTEXTS"])
    context = item.doc()["context"]
    assert len(joined.split()) == 316
    assert context.split() == joined.split()[:300]
    assert joined.startswith(context) and joined[len(context)] == " "
    for short in [i for i in loaded.test if i not in long_items][:50]:
        assert short.doc()["context"] == " ".join(short.record["CONTEXTS"])


def test_the_readme_counts_the_prompts_a_whitespace_normalising_cut_would_change(loaded):
    # The cut keeps non-ASCII spaces as written; " ".join(text.split()[:300]) makes them plain spaces.
    changed = []
    for item in loaded.test:
        normalised = " ".join(" ".join(item.record["CONTEXTS"]).split()[:300])
        doc = item.doc()
        assert doc["context"].split() == normalised.split()  # the same words, cut at the same place
        if prompts.zero_shot_prompt(doc) != prompts.zero_shot_prompt({**doc, "context": normalised}):
            changed.append(item)
    spaces = {c for item in changed for c in item.doc()["context"] if c.isspace() and c != " "}
    assert len(changed) == 54 and spaces == {"\u00a0", "\u2009", "\u200a", "\u2005", "\u2003"}
    readme = (Path(__file__).resolve().parents[2] / "lm_eval_tasks" / "pubmedqa_atlas" / "README.md").read_text()
    assert "54 of the 500 test prompts" in readme


def test_prompts(loaded):
    doc = {"question": "Q?", "context": "C."}
    assert prompts.zero_shot_prompt(doc) == "Abstract: C.\nQuestion: Q?\nAnswer:"
    assert (
        prompts.generative_prompt(doc)
        == "Abstract: C.\nQuestion: Q?\nAnswer the question with yes, no or maybe.\nAnswer:"
    )
    assert prompts.probe_text(doc) == "Question: Q?\nContext: C."


# ----------------------------------------------------------------------------- the frozen n100


def test_n100_ids_are_frozen(loaded):
    n100 = loaded.subset("n100")
    assert sorted(item.pubid for item in n100) == N100_IDS
    assert Counter(item.answer for item in n100) == {"yes": 55, "no": 34, "maybe": 11}
    assert [item.pubid for item in n100] == sorted(
        N100_IDS, key=lambda p: hashlib.sha256(f"20261006:{p}".encode()).hexdigest()
    )


def test_evaluation_order_mixes_the_answers(loaded):
    # The file lists 276 yes, then 169 no, then 55 maybe; docs follow the seeded hash order, so
    # any --limit prefix mixes the answers.
    assert [item.answer for item in loaded.test[:276]] == ["yes"] * 276
    full = loaded.subset("full")
    assert sorted(i.pubid for i in full) == sorted(i.pubid for i in loaded.test)
    assert [i.pubid for i in full] == sorted(
        (i.pubid for i in full), key=lambda p: hashlib.sha256(f"20261006:{p}".encode()).hexdigest()
    )
    assert Counter(item.answer for item in full[:20]) == {"yes": 9, "no": 9, "maybe": 2}


def test_n100_is_the_documented_algorithm(loaded):
    # Independent restatement of the README: per answer, the quota smallest sha256("20261006:<pubid>").
    chosen = set()
    for label, quota in {"yes": 55, "no": 34, "maybe": 11}.items():
        ids = [i.pubid for i in loaded.test if i.answer == label]
        chosen |= set(sorted(ids, key=lambda p: hashlib.sha256(f"20261006:{p}".encode()).hexdigest())[:quota])
    assert chosen == set(N100_IDS)


@pytest.mark.parametrize(
    "counts, size, expected",
    [
        ({"yes": 276, "no": 169, "maybe": 55}, 100, {"yes": 55, "no": 34, "maybe": 11}),  # 55.2, 33.8, 11.0
        ({"a": 2, "b": 1}, 2, {"a": 1, "b": 1}),  # 1.33, 0.67: the larger remainder wins the seat
        ({"a": 1, "b": 1}, 1, {"a": 1, "b": 0}),  # equal remainders: the class listed first
        ({"a": 3, "b": 3, "c": 3}, 9, {"a": 3, "b": 3, "c": 3}),
    ],
)
def test_largest_remainder_quotas(counts, size, expected):
    assert loader.largest_remainder_quotas(counts, size) == expected


def test_unknown_subset_is_named(loaded):
    with pytest.raises(DataError, match="unknown PubMedQA subset 'n50'"):
        loaded.subset("n50")


# ----------------------------------------------------------------------------- answers and metrics


@pytest.mark.parametrize(
    "lls, label, tied",
    [
        ([-1.0, -2.0, -3.0], "yes", False),
        ([-2.0, -1.0, -3.0], "no", False),
        ([-3.0, -2.0, -1.0], "maybe", False),
        ([-1.5, -1.5, -3.0], "yes", True),  # exact tie: yes beats no
        ([-4.0, -1.5, -1.5], "no", True),  # no beats maybe
        ([-1.5, -4.0, -1.5], "yes", True),
        ([float("nan"), -1.0, -2.0], INVALID, False),
    ],
)
def test_predicted_label_and_the_tie_rule(lls, label, tied):
    verdict = parsing.score_choice("yes", lls)
    assert verdict.pred == label
    assert verdict.extras["tied_top_choice"] == float(tied)


@pytest.mark.parametrize(
    "reply, answer",
    [
        ("Yes", "yes"),
        (" no.", "no"),
        ("Maybe, the evidence is mixed.", "maybe"),
        ("**Answer:** Yes", "yes"),
        ("Answer: no", "no"),
        ("Final answer: maybe", "maybe"),
        ('"Yes" - the study shows it.', "yes"),
        ("<think>Could be no.\n\nBut yes.</think>\nNo", "no"),
        ("Based on the abstract, the answer is yes.", "yes"),
        ("The answer would be: no", "no"),
        ("Yesterday was fine.", None),
        ("Nothing can be said.", None),
        ("The study found no difference.", None),  # "no" is not stated as the answer
        ("<think>yes or no", None),  # unclosed think block: no answer
        ("", None),
    ],
)
def test_parse_answer(reply, answer):
    assert parsing.parse_answer(reply) == answer


def test_macro_f1_aggregation_matches_scikit_learn():
    gold = ["yes", "yes", "no", "maybe", "no", "yes", "maybe"]
    pred = ["yes", "no", "no", "yes", INVALID, "yes", "maybe"]
    expected = f1_score(gold, pred, labels=list(constants.LABELS), average="macro", zero_division=0)
    assert tasks.macro_f1(list(zip(gold, pred))) == pytest.approx(expected)
    # always-yes on the official test set: F1(yes) = 2*276/(500+276), F1(no) = F1(maybe) = 0
    gold = ["yes"] * 276 + ["no"] * 169 + ["maybe"] * 55
    assert tasks.macro_f1([(g, "yes") for g in gold]) == pytest.approx(552 / 776 / 3)


def test_process_results():
    doc = {"final_decision": "no"}
    assert tasks.process_results(doc, [(-2.0, False), (-2.0, True), (-5.0, False)]) == {
        "acc": 0.0,
        "macro_f1": ("no", "yes"),
    }
    assert tasks.process_generation(doc, ["No."]) == {"acc": 1.0, "macro_f1": ("no", "no"), "parseable": 1.0}
    assert tasks.process_generation(doc, ["I think so."]) == {
        "acc": 0.0,
        "macro_f1": ("no", INVALID),
        "parseable": 0.0,
    }


# ----------------------------------------------------------------------------- data sources and errors


def copy_data(shared_data, tmp_path, items=None, truth=None):
    folder = tmp_path / "pubmedqa"
    folder.mkdir(parents=True)
    src = shared_data / "pubmedqa"
    items = items if items is not None else json.loads((src / "ori_pqal.json").read_text())
    truth = truth if truth is not None else json.loads((src / "test_ground_truth.json").read_text())
    (folder / "ori_pqal.json").write_text(json.dumps(items))
    (folder / "test_ground_truth.json").write_text(json.dumps(truth))
    return tmp_path, items, truth


def test_wrong_test_label_is_named(shared_data, tmp_path):
    _, items, truth = copy_data(shared_data, tmp_path / "x")
    pubid = list(truth)[2]
    truth[pubid] = "no" if truth[pubid] != "no" else "yes"
    folder, _, _ = copy_data(shared_data, tmp_path / "y", items, truth)
    with pytest.raises(DataError, match=rf"test_ground_truth.json, row 3: pubid {pubid}: test label"):
        loader.load(str(folder))


def test_a_lone_surrogate_escape_in_an_item_is_named(shared_data, tmp_path):
    _, items, truth = copy_data(shared_data, tmp_path / "x")
    pubid = list(items)[1]
    items[pubid]["CONTEXTS"] = [*items[pubid]["CONTEXTS"], "cut \ud83d"]  # half of an emoji's surrogate pair
    folder, _, _ = copy_data(shared_data, tmp_path / "y", items, truth)
    with pytest.raises(
        DataError, match=rf"ori_pqal.json, row 2 \(pubid {pubid}\), field 'CONTEXTS\[\d+\]': holds a lone surrogate"
    ):
        loader.load(str(folder))


def test_missing_and_unknown_ids_are_caught(shared_data, tmp_path):
    _, items, truth = copy_data(shared_data, tmp_path / "x")
    dropped = dict(list(truth.items())[1:])
    folder, _, _ = copy_data(shared_data, tmp_path / "y", items, dropped)
    with pytest.raises(
        DataError, match=r"test answer counts differ from the published benchmark \(yes: expected 276, found 275\)"
    ):
        loader.load(str(folder))
    folder, _, _ = copy_data(shared_data, tmp_path / "z", items, {"123": "yes", **truth})
    with pytest.raises(DataError, match=r"row 1: pubid 123 is not an item of"):
        loader.load(str(folder))


def test_extra_train_item_breaks_the_train_pool_count(shared_data, tmp_path):
    _, items, truth = copy_data(shared_data, tmp_path / "x")
    items["1"] = dict(next(iter(items.values())), final_decision="maybe")
    folder, _, _ = copy_data(shared_data, tmp_path / "y", items, truth)
    with pytest.raises(DataError, match=r"train-pool answer .* \(maybe: expected 55, found 56\)"):
        loader.load(str(folder))


@pytest.mark.parametrize(
    "row, field, value, message",
    [
        (5, "final_decision", "Yes", "'Yes' is not one of yes, no, maybe"),
        (5, "CONTEXTS", [], "expected a non-empty list"),
        (5, "CONTEXTS", ["ok", ""], "expected a non-empty list"),
        (5, "QUESTION", None, "expected a non-empty string"),
        # the other fields may be null, but of their type when given
        (10, "LONG_ANSWER", 3, "expected a string or null, got 3"),
        (10, "YEAR", 2011, "expected a string or null, got 2011"),
        (10, "LABELS", "BACKGROUND", "expected a list of strings or null, got 'BACKGROUND'"),
        (10, "MESHES", [1], "expected a list of strings or null, got [1]"),
    ],
)
def test_bad_items_are_named_by_file_row_and_field(shared_data, tmp_path, row, field, value, message):
    _, items, truth = copy_data(shared_data, tmp_path / "x")
    pubid = list(items)[row - 1]
    items[pubid][field] = value
    folder, _, _ = copy_data(shared_data, tmp_path / "y", items, truth)
    with pytest.raises(DataError) as error:
        loader.load(str(folder))
    assert f"ori_pqal.json, row {row}, field '{field}': pubid {pubid}: {message}" in str(error.value)


def test_missing_file_and_bad_json(shared_data, tmp_path):
    folder, _, _ = copy_data(shared_data, tmp_path)
    (folder / "pubmedqa" / "test_ground_truth.json").write_text("{")
    with pytest.raises(DataError, match=r"test_ground_truth.json: invalid JSON"):
        loader.load(str(folder))
    (folder / "pubmedqa" / "test_ground_truth.json").unlink()
    with pytest.raises(DataError, match=r"test_ground_truth.json: file not found \(expected DIR/pubmedqa/ holding"):
        loader.load(str(folder))


def test_offline_without_local_data_fails_fast_with_instructions(monkeypatch):
    monkeypatch.delenv(data_layer.DATA_DIR_ENV, raising=False)
    text = refused_at_once(tasks.custom_dataset, subset="full")
    assert "hf://datasets/qiaojin/PubMedQA@9001f2853fb87cab8d220904e0de81ac6973b318 (config pqa_labeled)" in text
    assert "--metadata data_dir=DIR" in text and "ori_pqal.json and test_ground_truth.json" in text


def test_hub_rows_convert_to_the_same_items(loaded):
    items = {**{i.pubid: i.record for i in loaded.test}, **{i.pubid: i.record for i in loaded.train}}
    rows = pqa_labeled_rows(items)
    records = loader.validate_items(loader.records_from_hub(rows, "hub"), "hub")
    truth = {i.pubid: i.answer for i in loaded.test}
    from_hub = loader.split_items(records, "hub", truth, "ids")
    assert [i.doc() for i in from_hub.test] == [i.doc() for i in loaded.test]
    assert [i.doc() for i in from_hub.train] == [i.doc() for i in loaded.train]
    with pytest.raises(DataError, match=r"hub, row 1, field 'context'"):
        loader.records_from_hub([{"pubid": 1, "context": "text"}], "hub")


# ----------------------------------------------------------------------------- pinned downloads


@pytest.fixture
def file_server(tmp_path):
    (tmp_path / "truth.json").write_bytes(b'{"1": "yes"}')
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/truth.json"
    server.shutdown()


def test_pinned_download_checks_the_hash_and_caches(file_server, tmp_path, monkeypatch):
    for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(flag)
    monkeypatch.setenv("MEDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    good = hashlib.sha256(b'{"1": "yes"}').hexdigest()
    target = tmp_path / "cache" / "truth.json"
    path = data_layer.download_pinned_file(file_server, target, "pubmedqa", "layout", sha256=good)
    assert path == target and path.read_bytes() == b'{"1": "yes"}'
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a cached file needs no network
    assert data_layer.download_pinned_file(file_server, target, "pubmedqa", "layout", sha256=good) == path
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with pytest.raises(DataError, match=r"differs from the pinned 0{64}; the file is not used"):
        data_layer.download_pinned_file(file_server, target, "pubmedqa", "layout", sha256="0" * 64)


def test_pinned_download_offline_fails_fast(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDEVAL_CACHE_DIR", str(tmp_path))
    message = refused_at_once(
        data_layer.download_pinned_file,
        *(constants.TEST_IDS_URL, tmp_path / "truth.json", "pubmedqa", "layout"),
        sha256=constants.TEST_IDS_SHA256,
    )
    assert "HF_HUB_OFFLINE is set" in message


def test_pinned_test_ids_hash_is_the_shared_copy(shared_data):
    content = (shared_data / "pubmedqa" / "test_ground_truth.json").read_bytes()
    assert hashlib.sha256(content).hexdigest() == constants.TEST_IDS_SHA256


# ----------------------------------------------------------------------------- report


def write_pubmedqa_run(folder, tasks):
    """A results file and samples files as lm-eval writes them (log-likelihood pairs as strings)."""
    stamp = "2026-11-29T10-00-00.000000"
    folder.mkdir(parents=True)
    results = {
        "configs": {t: {} for t in tasks},
        "n-samples": {t: {"original": n, "effective": len(rows)} for t, (n, rows) in tasks.items()},
        "config": {"model": "hf", "model_args": {"pretrained": "m"}, "limit": None},
        "versions": {},
    }
    (folder / f"results_{stamp}.json").write_text(json.dumps(results))
    for task, (_, rows) in tasks.items():
        with (folder / f"samples_{task}_{stamp}.jsonl").open("w") as handle:
            for i, (gold, lls) in enumerate(rows):
                pairs = [[str(ll), "False"] for ll in lls]
                handle.write(
                    json.dumps(
                        {
                            "doc_id": i,
                            "doc": {"final_decision": gold},
                            "doc_hash": f"{task}{i}",
                            "filter": "none",
                            "resps": [[p] for p in pairs],
                            "filtered_resps": pairs,
                        }
                    )
                    + "\n"
                )
    return folder


def test_report_scores_each_pubmedqa_task_separately(tmp_path):
    from tests.conftest import build_report

    full = [("yes", [-1, -2, -3]), ("no", [-1, -1, -3]), ("maybe", [-3, -2, -1]), ("no", [-3, -1, -2])]
    n100 = [("yes", [-2, -1, -3]), ("maybe", [-3, -2, -2])]
    folder = write_pubmedqa_run(tmp_path / "run", {"pubmedqa_atlas": (500, full), "pubmedqa_atlas_n100": (100, n100)})
    benchmarks = build_report(folder)["benchmarks"]
    assert set(benchmarks) == {"pubmedqa_atlas", "pubmedqa_atlas_n100"}
    bench = benchmarks["pubmedqa_atlas"]
    # yes right, no -> yes (tie), maybe right, no right: 3/4
    assert bench["n_items"] == 4 and bench["accuracy_micro"]["value"] == pytest.approx(0.75)
    assert bench["confusion_matrix"]["counts"] == [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0]]
    # F1 yes 2*1/(2+1), no 2*1/(1+2), maybe 1
    assert bench["macro_f1"]["value"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert bench["rates"]["tied_top_choice"]["value"] == pytest.approx(0.25)
    assert bench["coverage"] == {"atlas-full-v1": {"expected": 500, "loaded": 500, "scored": 4, "complete": False}}
    small = benchmarks["pubmedqa_atlas_n100"]
    # yes -> no; maybe -> no (no=maybe tie goes to no): 0/2
    assert small["accuracy_micro"]["value"] == 0.0 and small["coverage"]["atlas-n100-v1"]["expected"] == 100


# ----------------------------------------------------------------------------- hostile files (issue 10)


def copy_bytes(shared_data, tmp_path, items: bytes | None = None, truth: bytes | None = None):
    """A data directory holding the real files, or the given bytes in their place."""
    folder = tmp_path / "pubmedqa"
    folder.mkdir(parents=True)
    src = shared_data / "pubmedqa"
    (folder / "ori_pqal.json").write_bytes(items if items is not None else (src / "ori_pqal.json").read_bytes())
    (folder / "test_ground_truth.json").write_bytes(
        truth if truth is not None else (src / "test_ground_truth.json").read_bytes()
    )
    return tmp_path


def test_a_pubid_given_twice_in_ori_pqal_is_an_error_not_a_replaced_test_item(shared_data, tmp_path, loaded):
    # A second object for a test pubid, with the same answer and another question: a plain json.loads keeps the
    # second, and the test item would silently change.
    item = loaded.test[0]
    raw = (shared_data / "pubmedqa" / "ori_pqal.json").read_bytes().rstrip()
    assert raw.endswith(b"}")
    duplicate = json.dumps({**item.record, "QUESTION": "Another question?"}).encode()
    folder = copy_bytes(
        shared_data, tmp_path, items=raw[:-1] + b', "' + item.pubid.encode() + b'": ' + duplicate + b"}"
    )
    with pytest.raises(DataError) as error:
        loader.load(str(folder))
    message = str(error.value)
    assert "ori_pqal.json" in message and f"key '{item.pubid}' appears twice" in message


def test_a_pubid_given_twice_in_the_test_ids_is_named(shared_data, tmp_path):
    raw = (shared_data / "pubmedqa" / "test_ground_truth.json").read_bytes()
    assert raw.startswith(b'{\n    "12377809": "yes",\n')
    folder = copy_bytes(shared_data, tmp_path, truth=raw.replace(b"{\n", b'{\n    "12377809": "yes",\n', 1))
    with pytest.raises(DataError, match=r"test_ground_truth.json: key '12377809' appears twice in one object"):
        loader.load(str(folder))


def test_a_non_utf8_byte_names_the_file_and_line(shared_data, tmp_path):
    raw = (shared_data / "pubmedqa" / "ori_pqal.json").read_bytes()
    at = raw.index(b"lace plant")  # in the first item's question
    line = raw.count(b"\n", 0, at) + 1
    assert line == 3
    folder = copy_bytes(shared_data, tmp_path, items=raw[:at] + b"\xff" + raw[at + 1 :])
    with pytest.raises(DataError, match=r"ori_pqal.json, line 3: not UTF-8 \(byte 0xff"):
        loader.load(str(folder))


def test_a_leading_bom_is_dropped_and_a_stray_one_names_its_line(shared_data, tmp_path, loaded):
    raw = (shared_data / "pubmedqa" / "ori_pqal.json").read_bytes()
    truth = (shared_data / "pubmedqa" / "test_ground_truth.json").read_bytes()
    bom = "\ufeff".encode()
    # The shared reader drops a leading byte-order mark (as utf-8-sig does): the same split, item for item.
    with_bom = loader.load(str(copy_bytes(shared_data, tmp_path / "lead", items=bom + raw, truth=bom + truth)))
    assert [i.doc() for i in with_bom.test] == [i.doc() for i in loaded.test]
    assert [i.doc() for i in with_bom.train] == [i.doc() for i in loaded.train]
    # Anywhere else a BOM is no JSON whitespace: invalid JSON at its line.
    stray = truth.replace(b'    "26163474"', bom + b'    "26163474"', 1)
    folder = copy_bytes(shared_data, tmp_path / "stray", truth=stray)
    with pytest.raises(DataError, match=r"test_ground_truth.json: invalid JSON \(.* at line 3\)"):
        loader.load(str(folder))


def test_hub_rows_with_a_repeated_pubid_name_both_rows():
    row = {"pubid": 7, "question": "Q?", "context": {"contexts": ["c"]}, "final_decision": "yes"}
    with pytest.raises(DataError, match=r"hub, row 3, field 'pubid': pubid 7 is also row 1 \(it would replace"):
        loader.records_from_hub([row, {**row, "pubid": 8}, {**row, "question": "Other?"}], "hub")
    for pubid in (None, "", True, 1.5):
        with pytest.raises(DataError, match=r"hub, row 1, field 'pubid': expected a PubMed id"):
            loader.records_from_hub([{**row, "pubid": pubid}], "hub")
    with pytest.raises(DataError, match=r"hub, row 1, field 'context'"):
        loader.records_from_hub([{**row, "context": {"contexts": "one string"}}], "hub")
