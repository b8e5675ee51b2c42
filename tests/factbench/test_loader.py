"""FActBench data: the paper's prompts, the fixed article sample, the BioASQ loader, source errors."""

import codecs
import hashlib
import json
import random
import re
import time

import pytest
from lm_eval_tasks.utils import data as data_layer
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.factbench import loader, prompts, tasks
from lm_eval_tasks.utils.factbench.constants import TASKS


def test_prompts_are_table_5():
    doc = {"document": "ARTICLE", "question": "QUESTION?"}
    summ = prompts.prompt({**doc, "task": "summ"})
    assert summ.startswith("Summarize the given article by including the following key points:\n1. Objective: ")
    assert "\n6. Clinical Relevance: How might the study's findings impact medical practice or patient care?\n" in summ
    assert summ.endswith("\nScientific Article: ARTICLE\nSummary:")
    lay = prompts.prompt({**doc, "task": "laysumm"})
    assert lay.startswith("You will be provided a scientific article. Your task is to write a lay summary")
    assert lay.count("\n• ") == 6 and lay.endswith("or areas of confusion.\nScientific Article: ARTICLE\nSummary:")
    assert prompts.prompt({**doc, "task": "rag"}) == (
        "Give a simple answer to the question based on the provided context.\nQUESTION: QUESTION?\nCONTEXT: ARTICLE"
    )
    assert prompts.prompt({**doc, "task": "gen"}) == (
        "Give a simple answer to the question based on your best knowledge.\nQUESTION: QUESTION?"
    )


def test_fixed_sample_is_the_smallest_hashes_in_source_order():
    articles = [f"article {i}" for i in range(50)]
    chosen = loader.fixed_sample(articles, 10)
    keys = {i: hashlib.sha256(f"factbench-1234\narticle {i}".encode()).hexdigest() for i in range(50)}
    assert chosen == sorted(sorted(keys, key=keys.get)[:10])
    # the same articles are drawn whatever the row order
    shuffled = articles[:]
    random.Random(7).shuffle(shuffled)
    assert {shuffled[i] for i in loader.fixed_sample(shuffled, 10)} == {articles[i] for i in chosen}
    assert loader.fixed_sample(articles, 0) == loader.fixed_sample(articles, 80) == list(range(50))


def test_local_summarisation_files_are_sampled_and_validated(tmp_path):
    folder = tmp_path / "factbench"
    folder.mkdir()
    rows = [{"article": f"Article text {i}.", "abstract": f"Abstract {i}."} for i in range(30)]
    (folder / "pubmed_summ.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    docs = loader.load("summ", str(tmp_path), sample_size=12)
    assert [d["id"] for d in docs] == [
        f"pubmed_summ-{i}" for i in loader.fixed_sample([r["article"] for r in rows], 12)
    ]
    assert docs[0]["document"].startswith("Article text") and docs[0]["reference"].startswith("Abstract")
    (folder / "plos_laysumm.jsonl").write_text(json.dumps({"article": "A.", "summary": ""}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"plos_laysumm.jsonl, row 1, field 'summary': empty string"):
        loader.load("laysumm", str(tmp_path))


def test_demo_fixtures_load_for_every_task(demo_data_dir):
    docs = {task: loader.load(task, str(demo_data_dir)) for task in TASKS}
    assert {task: len(d) for task, d in docs.items()} == {"summ": 30, "laysumm": 30, "rag": 30, "gen": 30}
    items = json.loads((data_layer.Path(demo_data_dir) / "pubmedqa" / "ori_pqal.json").read_text(encoding="utf-8"))
    first_rag = docs["rag"][0]
    pmid = first_rag["id"].removeprefix("pubmedqa-")
    assert first_rag["question"] == items[pmid]["QUESTION"]
    assert first_rag["document"] == "\n\n".join(items[pmid]["CONTEXTS"])
    assert docs["gen"][0]["document"] == first_rag["document"]  # gen is checked against the same snippets
    assert docs["laysumm"][0]["reference"] == items[docs["laysumm"][0]["id"].removeprefix("pubmedqa-")]["LONG_ANSWER"]


def bioasq_file(tmp_path, questions, name="training.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"questions": questions}), encoding="utf-8")
    return path


SUMMARY = {
    "id": "q1",
    "type": "summary",
    "body": " What does aspirin inhibit? ",
    "snippets": [
        {"text": "Aspirin inhibits COX-1."},
        {"text": " Aspirin inhibits COX-1. "},
        {"text": "It is an NSAID."},
    ],
    "ideal_answer": ["Aspirin inhibits cyclooxygenase.", "second"],
}


def test_bioasq_keeps_summary_questions_only(tmp_path):
    path = bioasq_file(
        tmp_path,
        [
            SUMMARY,
            {"id": "q2", "type": "yesno", "body": "Is it?", "exact_answer": "yes"},
            {**SUMMARY, "id": "q3", "ideal_answer": "A string answer."},
        ],
    )
    docs = loader.load("rag", bioasq_path=str(path))
    assert [d["id"] for d in docs] == ["q1", "q3"]
    assert docs[0]["question"] == "What does aspirin inhibit?"
    assert docs[0]["document"] == "Aspirin inhibits COX-1.\n\nIt is an NSAID."  # exact repeats dropped
    assert (docs[0]["reference"], docs[1]["reference"]) == ("Aspirin inhibits cyclooxygenase.", "A string answer.")


def test_bioasq_folder_with_overlapping_releases(tmp_path):
    folder = tmp_path / "bioasq"
    folder.mkdir()
    bioasq_file(folder, [SUMMARY], "a_training.json")
    bioasq_file(folder, [SUMMARY, {**SUMMARY, "id": "q9"}], "b_golden.json")
    assert [d["id"] for d in loader.load("gen", bioasq_path=str(folder))] == ["q1", "q9"]
    bioasq_file(folder, [{**SUMMARY, "body": "A different question?"}], "c_other.json")
    # both places are named: the file that differs and the one seen first
    with pytest.raises(DataError, match=r"c_other.json, row 1: question q1 differs from .*a_training.json, row 1 "):
        loader.load("gen", bioasq_path=str(folder))


@pytest.mark.parametrize(
    "question, where",
    [
        ({**SUMMARY, "snippets": []}, "row 1, field 'snippets'"),
        ({**SUMMARY, "snippets": [{"text": "ok"}, {"document": "x"}]}, "row 1, field 'snippets[2].text'"),
        ({**SUMMARY, "ideal_answer": []}, "row 1, field 'ideal_answer'"),
        ({**SUMMARY, "body": ""}, "row 1, field 'body'"),
        # a JSON escape of no character: no prompt, tokenizer or samples file takes it
        (
            {**SUMMARY, "snippets": [{"text": "ok"}, {"text": "cut \ud83d"}]},
            "row 1, field 'snippets[2].text': holds a lone",
        ),
    ],
)
def test_bad_bioasq_questions_are_named(tmp_path, question, where):
    path = bioasq_file(tmp_path, [question])
    with pytest.raises(DataError, match=f"training.json, {where}".replace("[", r"\[").replace("]", r"\]")):
        loader.load("rag", bioasq_path=str(path))


def test_missing_sources_say_how_to_supply_them(tmp_path):
    with pytest.raises(DataError, match="registration-gated.*bioasq_path"):
        loader.load("rag")
    (tmp_path / "factbench").mkdir()
    with pytest.raises(DataError, match="no BioASQ JSON file found"):
        loader.load("gen", str(tmp_path))
    with pytest.raises(DataError, match=r"no file pubmed_summ\.<parquet\|jsonl\|json\|csv>"):
        loader.load("summ", str(tmp_path))
    start = time.monotonic()
    with pytest.raises(DataError, match=r"ccdv/pubmed-summarization@fc8f7ea8c1f34f8e8cb09f29c99b8c996524c216/document"):
        loader.load("summ")  # no data dir: the pinned hub copy, unreachable offline
    with pytest.raises(DataError, match="pszemraj/scientific_lay_summarisation-plos-norm"):
        loader.load("laysumm")
    assert time.monotonic() - start < 5
    with pytest.raises(DataError, match="evaluation-only"):
        tasks.custom_dataset("summ", data_dir=str(tmp_path), split="train")


def test_hub_route_reads_the_pinned_folder(monkeypatch):
    calls = []

    def fake_load_dataset(repo, config, revision, split, **kwargs):
        calls.append((repo, config, revision, split, kwargs))
        return [{"article": f"Article {i}.", "abstract": f"Abstract {i}."} for i in range(3)]

    import datasets

    monkeypatch.setattr(data_layer, "hub_unreachable_reason", lambda: None)
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    docs = loader.load("summ")
    assert calls == [
        (
            "ccdv/pubmed-summarization",
            None,
            "fc8f7ea8c1f34f8e8cb09f29c99b8c996524c216",
            "test",
            {"data_dir": "document"},
        )
    ]
    assert len(docs) == 3 and docs[0]["source"].endswith("@fc8f7ea8c1f34f8e8cb09f29c99b8c996524c216/document")
    # a HubDataset without data_dir calls the hub exactly as before the field existed
    data_layer.load_hub_rows(data_layer.HubDataset("org/set", "c0ffee", config="cfg"), "x", "layout")
    assert calls[-1] == ("org/set", "cfg", "c0ffee", "train", {})


# ----------------------------------------------------------------------------- hostile files


def write_bytes(path, content: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def jsonl_bytes(rows):
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


ARTICLES = [{"id": f"a{i}", "article": f"Article {i}.", "abstract": f"Abstract {i}."} for i in range(3)]


@pytest.mark.parametrize(
    "name, content",
    [
        ("pubmed_summ.jsonl", codecs.BOM_UTF8 + jsonl_bytes(ARTICLES)),
        ("pubmed_summ.json", codecs.BOM_UTF8 + json.dumps(ARTICLES).encode("utf-8")),
        (
            "pubmed_summ.csv",
            codecs.BOM_UTF8 + b"id,article,abstract\na0,Article 0.,Abstract 0.\na1,Article 1.,Abstract 1.\n"
            b"a2,Article 2.,Abstract 2.\n",
        ),
    ],
)
def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path, name, content):
    write_bytes(tmp_path / "factbench" / name, content)
    docs = loader.load("summ", str(tmp_path))
    assert sorted(d["id"] for d in docs) == ["a0", "a1", "a2"] and docs[0]["document"].startswith("Article ")


@pytest.mark.parametrize(
    "name, content, where",
    [
        ("pubmed_summ.jsonl", jsonl_bytes(ARTICLES[:1]) + b'{"article": "Caf\xe9", "abstract": "x"}\n', "line 2"),
        ("pubmed_summ.csv", b"article,abstract\nA.,B.\nCaf\xe9,x\n", "line 3"),
        (
            "pubmed_summ.json",
            b'[{"article": "A.", "abstract": "B."},\n {"article": "Caf\xe9", "abstract": "x"}]',
            "line 2",
        ),
        ("bioasq/training.json", b'{"questions": [\n{"id": "q1", "type": "summary", "body": "Caf\xe9?"}]}', "line 2"),
    ],
)
def test_a_byte_that_is_not_utf8_is_named_with_its_line(tmp_path, name, content, where):
    write_bytes(tmp_path / "factbench" / name, content)
    task = "rag" if name.startswith("bioasq") else "summ"
    with pytest.raises(DataError, match=f"{re.escape(name.split('/')[-1])}, {where}: not UTF-8"):
        loader.load(task, str(tmp_path))


@pytest.mark.parametrize(
    "name, content",
    [
        ("pubmed_summ.jsonl", jsonl_bytes([*ARTICLES, {**ARTICLES[1], "article": "Another article."}])),
        ("pubmed_summ.csv", b"id,article,abstract\na0,A.,B.\na1,C.,D.\na0,E.,F.\n"),
    ],
)
def test_a_duplicate_article_id_names_both_rows(tmp_path, name, content):
    write_bytes(tmp_path / "factbench" / name, content)
    duplicate = "a1" if name.endswith("jsonl") else "a0"
    first, second = (2, 4) if name.endswith("jsonl") else (1, 3)
    with pytest.raises(
        DataError, match=rf"{name}, row {second}, field 'id': '{duplicate}' is also the id of row {first}"
    ):
        loader.load("summ", str(tmp_path))


def test_an_article_id_of_the_wrong_type_is_named(tmp_path):
    write_bytes(tmp_path / "factbench" / "pubmed_summ.jsonl", jsonl_bytes([ARTICLES[0], {**ARTICLES[1], "id": [1]}]))
    with pytest.raises(DataError, match=r"pubmed_summ.jsonl, row 2, field 'id': expected a string or an integer"):
        loader.load("summ", str(tmp_path))


def test_bioasq_bom_is_read(tmp_path):
    path = write_bytes(tmp_path / "training.json", codecs.BOM_UTF8 + json.dumps({"questions": [SUMMARY]}).encode())
    assert [d["id"] for d in loader.load("rag", bioasq_path=str(path))] == ["q1"]


@pytest.mark.parametrize(
    "questions, message",
    [
        # a list where the official format has a string: was "TypeError: unhashable type: 'list'"
        ([{**SUMMARY, "type": ["summary"]}], r"training.json, row 1, field 'type': expected a string, got list"),
        ([{**SUMMARY, "type": None}], r"training.json, row 1, field 'type': expected a string, got NoneType"),
        ([{**SUMMARY, "id": 7}], r"training.json, row 1, field 'id': expected a string, got int"),
        ([{**SUMMARY, "ideal_answer": {"text": "x"}}], r"row 1, field 'ideal_answer': expected a string, got dict"),
        ([{**SUMMARY, "ideal_answer": ["", 3]}], r"row 1, field 'ideal_answer\[2\]': expected a string, got int"),
        # the same id twice in one file: both rows are named (it was silently dropped)
        (
            [SUMMARY, {"id": "q2", "type": "yesno", "body": "?"}, SUMMARY],
            r"row 3, field 'id': 'q1' is also the id of row 1",
        ),
    ],
)
def test_bad_bioasq_fields_are_named(tmp_path, questions, message):
    path = bioasq_file(tmp_path, questions)
    with pytest.raises(DataError, match=message):
        loader.load("rag", bioasq_path=str(path))


def test_a_bioasq_key_given_twice_is_refused(tmp_path):
    path = write_bytes(tmp_path / "training.json", b'{"questions": [{"id": "q1", "id": "q2", "type": "summary"}]}')
    with pytest.raises(DataError, match=r"training.json: key 'id' appears twice"):
        loader.load("rag", bioasq_path=str(path))
