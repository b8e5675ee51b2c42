"""MillerQA protocol code on hand-worked examples and the real files: shuffle, prompt, parse, data."""

import csv
import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from collections import Counter

import pytest
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.millerqa import constants, loader, medbullets, parsing, prompts, tasks

from lm_eval_tasks.__main__ import main as cli
from tests.conftest import REPO
from tests.millerqa.medbullets_source import medbullets_source_rows, write_csv

SHIPPED = [b for b in constants.BENCHMARKS if b != constants.MEDBULLETS]


@pytest.fixture(autouse=True)
def fresh_cache():
    loader.read_manifest.cache_clear()
    loader.read_benchmark_file.cache_clear()


# ----------------------------------------------------------------------------- shuffle


@pytest.mark.parametrize(
    "item_id, label, n, perm, target, letter",
    [
        # PROVENANCE.md test vectors (computed with the authors' recipe, Python 3.11)
        ("21645374", "gpt-4o", 3, [2, 1, 0], 0, "C"),
        ("2337", "gpt-4o", 4, [3, 0, 2, 1], 0, "B"),
        ("a67721e4-0e77-432a-aa12-47145824359e", "claude-sonnet-4-6", 9, [6, 1, 4, 7, 8, 3, 0, 5, 2], 0, "G"),
        ("16", "llama-3-1-8b", 5, [0, 3, 1, 4, 2], 1, "C"),
    ],
)
def test_shuffle_test_vectors(item_id, label, n, perm, target, letter):
    assert prompts.permutation(item_id, label, n) == perm
    assert constants.LETTERS[perm.index(target)] == letter


def test_shuffle_seed_is_the_first_64_bits_of_sha256():
    assert prompts.seed_from_key("21645374", "gpt-4o") == 15014352704909078024


@pytest.mark.parametrize(
    "benchmark, item_id, label, perm, letter",
    [
        ("pubmedqa", "21645374", "gpt-4o", [2, 1, 0], "C"),
        ("cupcase", "2337", "gpt-4o", [3, 0, 2, 1], "B"),
        ("tridentbench", "a67721e4-0e77-432a-aa12-47145824359e", "claude-sonnet-4-6", [6, 1, 4, 7, 8, 3, 0, 5, 2], "G"),
        ("hle", "16", "llama-3-1-8b", [0, 3, 1, 4, 2], "C"),
    ],
)
def test_test_vectors_on_the_real_items(shared_data, benchmark, item_id, label, perm, letter):
    (doc,) = [
        d
        for d in tasks.custom_dataset(benchmark, data_dir=str(shared_data), millerqa_model_label=label)["test"]
        if d["id"] == item_id
    ]
    assert doc["permutation"] == perm and doc["correct_letter"] == letter
    assert doc["shuffled_options"] == [doc["options"][i] for i in perm]
    assert doc["shuffled_options"][doc["correct_position"]] == doc["options"][doc["target"]]


def test_cupcase_is_trivial_unshuffled_and_not_after_the_shuffle(shared_data):
    items = loader.load("cupcase", data_dir=str(shared_data))
    assert {item["target"] for item in items} == {0}  # the correct answer is always listed first
    for label in ("gpt-4o", "SmolLM2-135M-Instruct"):
        letters = Counter(
            prompts.shuffled_doc(item, "cupcase", constants.CURATED, label)["correct_letter"] for item in items
        )
        assert set(letters) == {"A", "B", "C", "D"}
        assert max(letters.values()) < 0.3 * len(items)  # about a quarter each, not 100% "A"


def test_the_shuffle_depends_on_the_model_label_only_not_the_process(shared_data):
    code = (
        "import json; from lm_eval_tasks.utils.millerqa import loader, prompts; "
        f"items = loader.load('tos_legalbench', data_dir={str(shared_data)!r}); "
        "print(json.dumps([prompts.shuffled_doc(i, 'tos_legalbench', 'curated', 'm')['permutation'] for i in items]))"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    ]
    here = [
        prompts.shuffled_doc(i, "tos_legalbench", constants.CURATED, "m")["permutation"]
        for i in loader.load("tos_legalbench", data_dir=str(shared_data))
    ]
    assert json.loads(runs[0]) == json.loads(runs[1]) == here
    other = [
        prompts.shuffled_doc(i, "tos_legalbench", constants.CURATED, "n")["permutation"]
        for i in loader.load("tos_legalbench", data_dir=str(shared_data))
    ]
    assert other != here


def test_the_shuffle_seed_is_a_setting(shared_data):
    default = tasks.custom_dataset("hle", data_dir=str(shared_data), millerqa_model_label="llama-3-1-8b")["test"][0]
    other = tasks.custom_dataset(
        "hle", data_dir=str(shared_data), millerqa_model_label="llama-3-1-8b", millerqa_shuffle_seed="7"
    )["test"][0]
    assert (default["shuffle_seed"], default["permutation"]) == (42, [0, 3, 1, 4, 2])
    assert (other["shuffle_seed"], other["permutation"]) == (7, prompts.permutation("16", "llama-3-1-8b", 5, seed=7))
    assert other["permutation"] != default["permutation"]


def test_the_set_named_by_its_old_keyword_is_the_same_set_with_a_deprecation_warning(shared_data):
    named = tasks.custom_dataset(set_name="hle", data_dir=str(shared_data), millerqa_model_label="m")["test"]
    with pytest.warns(DeprecationWarning, match=r"benchmark=\.\.\.\) is deprecated: name the set with set_name"):
        old = tasks.custom_dataset(benchmark="hle", data_dir=str(shared_data), millerqa_model_label="m")["test"]
    assert old.to_list() == named.to_list() and len(named) == constants.PUBLISHED_COUNTS[constants.CURATED]["hle"]
    with pytest.raises(DataError, match=r"give the set once, as set_name \('hle'\), not also as benchmark"):
        tasks.custom_dataset("hle", benchmark="triage", data_dir=str(shared_data), millerqa_model_label="m")
    with pytest.raises(DataError, match="custom_dataset needs set_name"):
        tasks.custom_dataset(data_dir=str(shared_data), millerqa_model_label="m")


@pytest.mark.parametrize(
    "kwargs, label",
    [
        ({"model_label": "gpt-4o", "pretrained": "/x/y"}, "gpt-4o"),
        (
            {"pretrained": "/root/.cache/lm_eval_tasks/smollm2-135m-instruct-bfloat16/"},
            "smollm2-135m-instruct-bfloat16",
        ),
        ({"pretrained": "meta-llama/Llama-3.1-8B-Instruct"}, "Llama-3.1-8B-Instruct"),
        ({"model": "smollm2-135m-instruct"}, "smollm2-135m-instruct"),
        ({"pretrained": "C:\\models\\qwen"}, "qwen"),
    ],
)
def test_model_label(kwargs, label):
    assert tasks.model_label_from(**kwargs) == (label, "model_label" not in kwargs)


@pytest.mark.parametrize("label", [100000.0, True, 42])
def test_a_model_label_read_as_a_number_or_boolean_is_an_error(label):
    from lm_eval_tasks.utils.millerqa import BENCHMARK

    with pytest.raises(DataError, match=r"millerqa_model_label=.* was read as a .*, not text; pass it as JSON"):
        BENCHMARK.read_settings({"millerqa_model_label": label})


def test_a_missing_model_label_is_an_error_that_says_what_to_pass():
    with pytest.raises(DataError, match="--metadata millerqa_model_label=LABEL"):
        tasks.model_label_from()


# ----------------------------------------------------------------------------- settings are MillerQA's own


@pytest.mark.parametrize("name, value", [("model_label", "gpt-4o"), ("shuffle_seed", 7)])
def test_the_unscoped_setting_names_are_refused(shared_data, name, value):
    """lm-eval gives every task the same --metadata: shuffle_seed=7 meant for MedExQA must not move MillerQA."""
    with pytest.raises(DataError, match=rf"--metadata {name}=.*use millerqa_{name}=\.\.\."):
        tasks.custom_dataset("hle", data_dir=str(shared_data), millerqa_model_label="m", **{name: value})


def test_other_benchmarks_settings_and_the_model_arguments_pass_untouched(shared_data):
    docs = tasks.custom_dataset(
        "hle",
        data_dir=str(shared_data),
        millerqa_model_label="llama-3-1-8b",
        medexqa_shuffle=True,
        medexqa_shuffle_seed=7,
        pretrained="/models/other",
        dtype="bfloat16",
        config_source="x.yaml",
        version=2.0,
    )["test"]
    assert (docs[0]["shuffle_seed"], docs[0]["model_label"], docs[0]["permutation"]) == (
        42,
        "llama-3-1-8b",
        [0, 3, 1, 4, 2],
    )


@pytest.mark.parametrize("seed", ["x", "7.5", True, 7.0, None])
def test_a_shuffle_seed_that_is_not_an_integer_is_an_error(shared_data, seed):
    with pytest.raises(DataError, match=r"--metadata millerqa_shuffle_seed=.*: expected an integer"):
        tasks.custom_dataset("hle", data_dir=str(shared_data), millerqa_model_label="m", millerqa_shuffle_seed=seed)


def test_every_doc_carries_the_settings_that_built_it(shared_data):
    given = tasks.custom_dataset("triage", "pre_qc", str(shared_data), millerqa_model_label="gpt-4o")["test"][0]
    assert {k: given[k] for k in ("release", "model_label", "model_label_derived", "shuffle_seed")} == {
        "release": "pre_qc",
        "model_label": "gpt-4o",
        "model_label_derived": False,
        "shuffle_seed": 42,
    }
    derived = tasks.custom_dataset("triage", data_dir=str(shared_data), pretrained="/ckpt/final")["test"][0]
    assert (derived["model_label"], derived["model_label_derived"]) == ("final", True)
    assert derived["permutation"] == prompts.permutation(derived["id"], "final", 4)


def test_a_derived_label_is_warned_about_once_per_label(shared_data, caplog, monkeypatch):
    monkeypatch.setattr(tasks, "_warned_labels", set())
    with caplog.at_level("WARNING", logger=tasks.__name__):
        for benchmark in ("triage", "hle"):
            tasks.custom_dataset(benchmark, data_dir=str(shared_data), pretrained="/ckpt/final/")
        tasks.custom_dataset("triage", data_dir=str(shared_data), pretrained="/ckpt/other")
        tasks.custom_dataset("triage", data_dir=str(shared_data), millerqa_model_label="gpt-4o", pretrained="/ckpt/x")
    warnings = [r.getMessage() for r in caplog.records if r.name == tasks.__name__]
    assert len(warnings) == 2
    assert "'final', derived from '/ckpt/final/'" in warnings[0] and "millerqa_model_label=LABEL" in warnings[0]
    assert "'other'" in warnings[1]


# ----------------------------------------------------------------------------- prompt


def test_the_authors_prompt():
    assert prompts.SYSTEM_PROMPT == (
        "You are an expert evaluator. Your task is to answer multiple-choice questions accurately. Always respond "
        "with a single JSON object and nothing else. Do not add markdown fences, commentary, or extra text outside the JSON."
    )
    assert prompts.user_prompt("What is 1+1?", ["2", "3"]) == (
        "Answer the following multiple-choice question.\n\nQuestion:\nWhat is 1+1?\n\nOptions:\nA. 2\nB. 3\n\n"
        'Respond with ONLY this JSON object (no markdown, no extra text):\n{\n  "selected_answer": "<letter>",\n'
        '  "explanation": "<one to two sentence justification for your choice>",\n'
        '  "confidence": <integer 0-100 reflecting how confident you are>\n}'
    )
    assert prompts.choice_only_prompt(["2", "3"]) == prompts.user_prompt("q", ["2", "3"]).replace(
        "Question:\nq\n\n", ""
    )
    assert prompts.loglikelihood_prompt("q", ["x", "y", "z"]).endswith("Options:\nA. x\nB. y\nC. z\n\nAnswer:")


# ----------------------------------------------------------------------------- parse cascade

JSON_ANSWER = '{"selected_answer": "B", "explanation": "Because.", "confidence": 70}'


@pytest.mark.parametrize(
    "reply, method, letter, confidence, explanation",
    [
        (JSON_ANSWER, "json", "B", 70, "Because."),
        (f"  \n{JSON_ANSWER}\n", "json", "B", 70, "Because."),
        # a raw newline inside a string: strict JSON fails, the escaped retry parses
        (
            '{"selected_answer": "C", "explanation": "line one\nline two", "confidence": 55}',
            "json_escaped",
            "C",
            55,
            "line one\nline two",
        ),
        (
            'Here it is:\n```json\n{"selected_answer": "A", "explanation": "x", "confidence": 90}\n```\nDone.',
            "fenced",
            "A",
            90,
            "x",
        ),
        ('Sure! {"selected_answer": "D", "confidence": 10} Hope that helps.', "braces", "D", 10, None),
        # a stray brace in prose breaks first-to-last brace; the last object with the key is found
        ('Let f = {x}. So {"selected_answer": "B", "explanation": "y", "confidence": 60}', "last_object", "B", 60, "y"),
        # truncated object: no JSON at all; the key regex finds the letter (upper-cased)
        ('{"selected_answer": "c", "explanation": "because", "confidence": 45, "more', "regex_key", "C", 45, "because"),
        ("The correct option is B.", "regex_letter", "B", None, None),
        ("no usable answer here", "none", None, None, None),
        (f"<think>Maybe {{A}} or B</think>{JSON_ANSWER}", "json", "B", 70, "Because."),
        (f"<think>still thinking {JSON_ANSWER}", "unclosed_think", None, None, None),
    ],
)
def test_parse_cascade_step_by_step(reply, method, letter, confidence, explanation):
    doc = {"permutation": [0, 1, 2, 3], "target": 1}
    answer = parsing.score_reply(doc, reply)
    assert (answer.method, answer.letter, answer.confidence, answer.explanation) == (
        method,
        letter,
        confidence,
        explanation,
    )


@pytest.mark.parametrize(
    "value, letter",
    [
        ("D. Legal Compliance", "D"),
        ("D) something", "D"),
        ("d: x", "D"),
        (" b ", "B"),
        ("b", "B"),
        ("AB", "AB"),
        ("", ""),
        (2, None),
        (None, None),
    ],
)
def test_selected_answer_normalisation(value, letter):
    assert parsing.selected_letter(value) == letter


def test_scoring_maps_the_letter_back_through_the_permutation():
    doc = {"permutation": [2, 0, 3, 1], "target": 3}  # correct answer (original 3) shown as C

    def reply(letter):
        return json.dumps({"selected_answer": letter, "explanation": "e", "confidence": 5})

    assert parsing.score_reply(doc, reply("C")).is_correct is True
    assert parsing.score_reply(doc, reply("C")).original_index == 3
    assert (
        parsing.score_reply(doc, reply("D")).is_correct is False
        and parsing.score_reply(doc, reply("D")).original_index == 1
    )
    for unscored in ("E", "AB", "", "1"):  # out of range, not one letter
        answer = parsing.score_reply(doc, reply(unscored))
        assert answer.is_correct is None and not answer.answered


def test_authors_quirks_are_kept():
    four = {"permutation": [0, 1, 2, 3], "target": 0}
    nine = {"permutation": list(range(9)), "target": 8}
    # a valid JSON object without selected_answer is unscored: no regex fallback after a JSON success
    assert parsing.score_reply(four, '{"answer": "A"}').answered is False
    # the regex fallback takes the first standalone capital, so a prose "I" is read as the letter I:
    # out of range with four options, option I with nine
    assert parsing.score_reply(four, "I think A is right").answered is False
    assert parsing.score_reply(nine, "I think A is right").is_correct is True


@pytest.mark.parametrize(
    "value, clamped", [(85, 85), ("85", 85), (150, 100), (-5, 0), (85.9, 85), ("high", None), (None, None)]
)
def test_confidence_is_clamped(value, clamped):
    assert parsing.clamp_confidence(value) == clamped


def test_process_results_and_the_answered_only_mean():
    doc = {"permutation": [1, 0], "target": 0}  # correct is B
    right = tasks.process_results(doc, ['{"selected_answer": "B"}'])
    wrong = tasks.process_results(doc, ['{"selected_answer": "A"}'])
    none = tasks.process_results(doc, ["?"])
    assert right == {"acc": 1.0, "acc_all": 1.0, "acc_all_micro": 1.0, "answered": 1.0, "answered_micro": 1.0}
    assert wrong["acc"] == 0.0 and none == {
        "acc": None,
        "acc_all": 0.0,
        "acc_all_micro": 0.0,
        "answered": 0.0,
        "answered_micro": 0.0,
    }
    assert tasks.mean_over_answered([right["acc"], wrong["acc"], none["acc"], 1.0]) == pytest.approx(2 / 3)
    assert str(tasks.mean_over_answered([None, None])) == "nan"


def test_loglikelihood_scoring_picks_the_most_likely_letter():
    doc = {"permutation": [1, 0, 2], "target": 2, "correct_position": 2}
    assert tasks.process_results_loglikelihood(doc, [(-3.0, False), (-2.0, False), (-1.5, True)]) == {
        "acc": 1.0,
        "acc_micro": 1.0,
    }
    assert tasks.process_results_loglikelihood(doc, [(-1.0, True), (-1.0, False), (-1.5, False)])["acc"] == 0.0
    assert parsing.score_loglikelihoods(doc, [-1.0, -1.0, -2.0]).position == 0  # ties go to the first letter


# ----------------------------------------------------------------------------- data


@pytest.mark.parametrize("release", [constants.CURATED, constants.PRE_QC])
@pytest.mark.parametrize("benchmark", SHIPPED)
def test_every_shipped_benchmark_loads_with_its_manifest_count(shared_data, benchmark, release):
    items = loader.load(benchmark, release, str(shared_data))
    assert len(items) == constants.PUBLISHED_COUNTS[release][benchmark]
    with (shared_data / "millerqa" / constants.MANIFEST).open(encoding="utf-8") as handle:
        manifest = {row["benchmark"]: row for row in csv.DictReader(handle)}
    assert len(items) == int(manifest[benchmark][constants.MANIFEST_COUNT_COLUMN[release]])


def test_release_totals_and_normalisation(shared_data):
    totals = {
        r: sum(len(loader.load(b, r, str(shared_data))) for b in SHIPPED) for r in (constants.CURATED, constants.PRE_QC)
    }
    assert totals == {constants.CURATED: 9406, constants.PRE_QC: 9712}
    raw = json.loads((shared_data / "millerqa/curated/legalbench/tos_legalbench.json").read_text(encoding="utf-8"))
    items = loader.load("tos_legalbench", data_dir=str(shared_data))
    assert raw[0]["question"] != raw[0]["question"].strip()  # the file has padding; the authors strip it
    assert items[0]["question"] == raw[0]["question"].strip()
    assert isinstance(raw[0]["id"], str) and items[0]["id"] == raw[0]["id"]
    cupcase = json.loads((shared_data / "millerqa/curated/cupcase/cupcase.json").read_text(encoding="utf-8"))
    assert cupcase[0]["id"] == 2337 and loader.load("cupcase", data_dir=str(shared_data))[0]["id"] == "2337"


def test_curated_is_pre_qc_minus_the_dropped_items(shared_data):
    with (shared_data / "millerqa/_dropped_items.csv").open(encoding="utf-8") as handle:
        dropped = {(row["benchmark"], row["question_id"]) for row in csv.DictReader(handle)}
    for benchmark in SHIPPED:
        pre = {i["id"] for i in loader.load(benchmark, constants.PRE_QC, str(shared_data))}
        cur = {i["id"] for i in loader.load(benchmark, constants.CURATED, str(shared_data))}
        assert cur == pre - {qid for b, qid in dropped if b == benchmark}, benchmark


def test_pubmedqa_here_is_all_of_pqa_l_not_the_test_split(shared_data):
    items = loader.load("pubmedqa", data_dir=str(shared_data))
    assert len(items) == 998 and Counter(i["target"] for i in items) == {0: 550, 1: 338, 2: 110}


def data_dir_with(tmp_path, shared_data, files):
    """A data dir with the real manifest and the given {relative path: JSON items}."""
    root = tmp_path / "millerqa"
    root.mkdir(parents=True)
    shutil.copy(shared_data / "millerqa" / constants.MANIFEST, root / constants.MANIFEST)
    for relative, content in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (root / relative).write_bytes(content)
        else:
            text = content if isinstance(content, str) else json.dumps(content)
            (root / relative).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda items: items.pop(), "83 items, but _manifest.csv gives 84 for 'triage'"),
        (lambda items: items[4].update(target=4), r"row 5, field 'target': 4 is not an index into the 4 options"),
        (lambda items: items[1].update(options=["only one"]), r"row 2, field 'options': expected a list of 2 to 26"),
        (lambda items: items[2].update(id=items[0]["id"]), r"row 3, field 'id': duplicate id"),
        (lambda items: items[0].update(question="  "), r"row 1, field 'question': expected a non-empty string"),
        (lambda items: items[3].pop("target"), r"row 4, field 'target': missing"),
    ],
)
def test_bad_items_are_errors_naming_file_row_and_field(tmp_path, shared_data, change, message):
    items = json.loads((shared_data / "millerqa/curated/triage/triage.json").read_text(encoding="utf-8"))
    change(items)
    data_dir = data_dir_with(tmp_path, shared_data, {"curated/triage/triage.json": items})
    with pytest.raises(DataError, match=message):
        loader.load("triage", data_dir=str(data_dir))


def triage_items(shared_data):
    return json.loads((shared_data / "millerqa/curated/triage/triage.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("id", 1.5, r"row 3, field 'id': expected a non-empty string or integer, got 1.5"),
        ("id", True, r"row 3, field 'id': expected a non-empty string or integer, got True"),
        ("id", [7], r"row 3, field 'id': expected a non-empty string or integer"),
        ("question", 5, r"row 3, field 'question': expected a non-empty string"),
        ("options", "Red, Green", r"row 3, field 'options': expected a list of 2 to 26 strings"),
        ("options", ["Red", 2], r"row 3, field 'options': every option must be a string"),
        ("target", "1", r"row 3, field 'target': '1' is not an index into the 4 options"),
        ("target", True, r"row 3, field 'target': True is not an index"),
        ("target", 1.0, r"row 3, field 'target': 1.0 is not an index"),
        ("kind", 5, r"row 3, field 'kind': expected a string or a list of strings, got 5"),
        ("kind", ["a", 1], r"row 3, field 'kind': expected a string or a list of strings"),
        # a JSON escape of no character (a lone surrogate): no tokenizer, nor lm-eval's samples file, takes it
        ("question", "Which \ud800?", r"row 3, field 'question': holds a lone surrogate \(\\ud800\)"),
        ("options", ["Red", "Gr\udfffeen"], r"row 3, field 'options\[2\]': holds a lone surrogate \(\\udfff\)"),
    ],
)
def test_values_of_the_wrong_type_are_errors_naming_file_row_and_field(tmp_path, shared_data, field, value, message):
    items = triage_items(shared_data)
    items[2][field] = value
    data_dir = data_dir_with(tmp_path, shared_data, {"curated/triage/triage.json": items})
    with pytest.raises(DataError, match=r"curated/triage/triage.json, " + message):
        loader.load("triage", data_dir=str(data_dir))


def test_medethicsqas_older_categories_field_is_read_and_checked(tmp_path, shared_data):
    items = triage_items(shared_data)
    items[0].pop("kind")
    items[0]["categories"] = ["autonomy", "justice"]
    items[1]["kind"] = ""
    items[1]["categories"] = {"not": "a list"}
    data_dir = data_dir_with(tmp_path, shared_data, {"curated/triage/triage.json": items})
    with pytest.raises(DataError, match=r"row 2, field 'categories': expected a string or a list of strings"):
        loader.load("triage", data_dir=str(data_dir))
    items[1]["categories"] = None
    data_dir = data_dir_with(tmp_path / "fixed", shared_data, {"curated/triage/triage.json": items})
    loaded = loader.load("triage", data_dir=str(data_dir))
    assert (loaded[0]["kind"], loaded[1]["kind"]) == ("autonomy, justice", "")


def test_an_id_given_twice_names_both_rows_also_as_number_and_text(tmp_path, shared_data):
    items = triage_items(shared_data)
    items[1]["id"], items[5]["id"] = 7, "7"  # ids are compared as text, as upstream
    data_dir = data_dir_with(tmp_path, shared_data, {"curated/triage/triage.json": items})
    with pytest.raises(DataError, match=r"triage.json, row 6, field 'id': duplicate id '7' \(first on row 2\)"):
        loader.load("triage", data_dir=str(data_dir))


def test_a_key_given_twice_in_one_item_is_an_error(tmp_path, shared_data):
    text = json.dumps(triage_items(shared_data), indent=1).replace('"target": ', '"target": 0, "target": ', 1)
    data_dir = data_dir_with(tmp_path, shared_data, {"curated/triage/triage.json": text})
    with pytest.raises(DataError, match=r"triage.json: key 'target' appears twice in one object"):
        loader.load("triage", data_dir=str(data_dir))


def test_a_non_utf8_byte_is_an_error_naming_its_line(tmp_path, shared_data):
    raw = (shared_data / "millerqa/curated/triage/triage.json").read_bytes()
    at = raw.index(b"mass-casualty")
    data_dir = data_dir_with(tmp_path, shared_data, {"curated/triage/triage.json": raw[:at] + b"\xff" + raw[at:]})
    line = raw.count(b"\n", 0, at) + 1
    with pytest.raises(DataError, match=rf"triage.json, line {line}: not UTF-8 \(byte 0xff"):
        loader.load("triage", data_dir=str(data_dir))


def test_a_byte_order_mark_is_read_past_in_items_and_manifest(tmp_path, shared_data):
    bom = b"\xef\xbb\xbf"
    raw = (shared_data / "millerqa/curated/triage/triage.json").read_bytes()
    data_dir = data_dir_with(tmp_path, shared_data, {"curated/triage/triage.json": bom + raw})
    manifest = data_dir / "millerqa" / constants.MANIFEST
    manifest.write_bytes(bom + manifest.read_bytes())
    assert loader.load("triage", data_dir=str(data_dir)) == loader.load("triage", data_dir=str(shared_data))


def test_a_file_that_is_not_an_array_of_items_is_an_error(tmp_path, shared_data):
    data_dir = data_dir_with(tmp_path, shared_data, {"curated/triage/triage.json": {"items": []}})
    with pytest.raises(DataError, match=r"triage.json: expected a JSON array of objects"):
        loader.load("triage", data_dir=str(data_dir))


def test_a_benchmark_listed_twice_in_the_manifest_names_both_rows(tmp_path, shared_data):
    data_dir = data_dir_with(tmp_path, shared_data, {})
    manifest = data_dir / "millerqa" / constants.MANIFEST
    manifest.write_text(manifest.read_text(encoding="utf-8") + "triage,86,2,84,2.33,\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"_manifest.csv, row 25, field 'benchmark': 'triage' appears twice \(first on row 22\)"
    ):
        loader.load("cupcase", data_dir=str(data_dir))


def test_a_manifest_that_differs_from_the_pinned_release_is_an_error(tmp_path, shared_data):
    data_dir = data_dir_with(tmp_path, shared_data, {})
    manifest = data_dir / "millerqa" / constants.MANIFEST
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("triage,86,2,84", "triage,86,2,85"), encoding="utf-8"
    )
    with pytest.raises(
        DataError, match=r"_manifest.csv, row 22, field 'n_curated': '85' differs from the pinned release"
    ):
        loader.load("cupcase", data_dir=str(data_dir))


def test_missing_files_name_the_expected_layout(tmp_path, shared_data):
    data_dir = data_dir_with(tmp_path, shared_data, {})
    with pytest.raises(DataError, match=r"curated/triage/triage.json: missing; expected DIR/millerqa/ laid out like"):
        loader.load("triage", data_dir=str(data_dir))
    (data_dir / "millerqa" / constants.MANIFEST).unlink()
    with pytest.raises(DataError, match=r"millerqa/_manifest.csv: missing"):
        loader.load("triage", data_dir=str(data_dir))


def test_a_clone_of_the_upstream_repository_works_as_data_dir(tmp_path, shared_data):
    clone = tmp_path / "MillerQA"
    (clone / "benchmarks").mkdir(parents=True)
    for name in (constants.MANIFEST, "curated"):
        (clone / "benchmarks" / name).symlink_to(shared_data / "millerqa" / name)
    assert loader.load("hle", data_dir=str(clone)) == loader.load("hle", data_dir=str(shared_data))


def test_a_training_split_is_refused(shared_data):
    with pytest.raises(DataError, match="evaluation-only"):
        tasks.custom_dataset("triage", data_dir=str(shared_data), millerqa_model_label="m", split="train")


def test_offline_without_data_says_how_to_supply_it(monkeypatch, tmp_path):
    monkeypatch.setenv("MEDEVAL_CACHE_DIR", str(tmp_path))
    with pytest.raises(
        DataError,
        match=r"(?s)No data for 'millerqa'.*raw.githubusercontent.com/KatherLab/MillerQA/"
        r"92af60f8eac8b532fe882ae0dcbb701797660be8.*HF_HUB_OFFLINE is set.*data_dir=DIR",
    ):
        loader.load("triage")


@pytest.fixture
def github_mirror(shared_data, tmp_path, monkeypatch):
    """A local HTTP server standing in for raw.githubusercontent.com at the pinned commit."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(shared_data / "millerqa"))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(constants, "GITHUB_RAW", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    monkeypatch.setenv("MEDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    yield server
    server.shutdown()


def test_the_pinned_github_copy_is_downloaded_once(github_mirror, shared_data, tmp_path):
    items = loader.load("lhb_legalbench")
    assert items == loader.load("lhb_legalbench", data_dir=str(shared_data))
    cached = (
        tmp_path / "cache" / "millerqa" / constants.GITHUB_COMMIT / "curated" / "legalbench" / "lhb_legalbench.json"
    )
    assert cached.read_bytes() == (shared_data / "millerqa/curated/legalbench/lhb_legalbench.json").read_bytes()
    github_mirror.shutdown()
    loader.read_benchmark_file.cache_clear()
    assert loader.load("lhb_legalbench") == items  # from the cache, no server needed
    with pytest.raises(DataError, match="MedBullets is not redistributed"):
        loader.load(constants.MEDBULLETS)


# ----------------------------------------------------------------------------- MedBullets


@pytest.fixture
def medbullets_data_dir(tmp_path, shared_data):
    files = {
        f"{release}/medbullets/item_ids.csv": (
            shared_data / "millerqa" / release / "medbullets/item_ids.csv"
        ).read_text(encoding="utf-8")
        for release in (constants.CURATED, constants.PRE_QC)
    }
    return data_dir_with(tmp_path / "data", shared_data, files)


def test_medbullets_is_absent_with_a_clear_message(shared_data):
    with pytest.raises(
        DataError, match="(?s)MedBullets is not redistributed.*millerqa-rebuild-medbullets --source FILE"
    ):
        tasks.custom_dataset(constants.MEDBULLETS, data_dir=str(shared_data), millerqa_model_label="m")


def test_rebuild_medbullets_from_its_public_source_format(tmp_path, medbullets_data_dir, capsys):
    source = write_csv(medbullets_source_rows(), tmp_path / "medbullets_op5.csv")
    assert cli(["millerqa-rebuild-medbullets", "--source", str(source), "--out", str(medbullets_data_dir)]) == 0
    assert "curated/medbullets/medbullets.json" in capsys.readouterr().out
    curated = loader.load(constants.MEDBULLETS, constants.CURATED, str(medbullets_data_dir))
    pre_qc = loader.load(constants.MEDBULLETS, constants.PRE_QC, str(medbullets_data_dir))
    assert (len(curated), len(pre_qc)) == (188, 308)
    # curated ids 1, 2, 4, ... are source rows 1, 2, 4, ...; row 4 has answer E (4 % 5)
    assert [i["id"] for i in curated[:3]] == ["1", "2", "4"]
    assert curated[2] == {
        "id": "4",
        "question": "Synthetic vignette 4. What next?",
        "options": ["alpha 4", "beta 4", "gamma 4", "delta 4", "epsilon 4"],
        "target": 4,
        "kind": "medbullets_op5",
    }


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda rows: rows.pop(), "307 rows; the five-option MedBullets set"),
        (lambda rows: rows[6].update(answer_idx="F"), r"row 7, field 'answer_idx': 'F' is not one of A-E"),
        (lambda rows: rows[2].update(answer="beta 9"), r"row 3, field 'answer': 'beta 9' is not option C"),
    ],
)
def test_rebuild_checks_the_source(tmp_path, medbullets_data_dir, change, message):
    rows = medbullets_source_rows()
    change(rows)
    source = write_csv(rows, tmp_path / "medbullets_op5.csv")
    with pytest.raises(DataError, match=message):
        medbullets.rebuild_medbullets(source, medbullets_data_dir)


def test_rebuild_names_both_rows_of_an_id_listed_twice(tmp_path, medbullets_data_dir):
    ids = medbullets_data_dir / "millerqa" / constants.CURATED / "medbullets" / "item_ids.csv"
    lines = ids.read_text(encoding="utf-8").splitlines()
    lines[5] = lines[2]  # data rows 2 and 5 (the header is line 0)
    ids.write_text("\n".join(lines) + "\n", encoding="utf-8")
    source = write_csv(medbullets_source_rows(), tmp_path / "medbullets_op5.csv")
    with pytest.raises(
        DataError, match=rf"item_ids.csv, row 5, field 'id': duplicate id '{lines[2]}' \(first on row 2\)"
    ):
        medbullets.rebuild_medbullets(source, medbullets_data_dir)


def test_rebuild_needs_the_shipped_id_lists(tmp_path, shared_data):
    source = write_csv(medbullets_source_rows(), tmp_path / "medbullets_op5.csv")
    with pytest.raises(DataError, match="no {curated,pre_qc}/medbullets/item_ids.csv"):
        medbullets.rebuild_medbullets(source, data_dir_with(tmp_path / "empty", shared_data, {}))


def test_every_family_has_its_task_and_group_files():
    # That they are what _generate_configs.py writes is checked in test_layout.py.
    # Six families (two rotated), each: a task per benchmark, 5 dimension groups, the suite, 2 with MedBullets.
    assert (
        len(list((REPO / "lm_eval_tasks" / "millerqa").glob("*.yaml")))
        == len(constants.FAMILIES) * (24 + 5 + 1 + 2)
        == 192
    )
