"""FActBench data: the paper's prompts, the fixed article sample, the BioASQ loader, source errors."""

import hashlib
import json
import random
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
