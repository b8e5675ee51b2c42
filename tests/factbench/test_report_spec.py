"""FActBench in the shared report: a run on the demo fixtures, its generations as items, its saved fact-check."""

import json
import shutil

import pytest
from lm_eval_tasks.utils import results
from lm_eval_tasks.utils.factbench import constants, loader, report_spec
from lm_eval_tasks.utils.factbench.pipeline import FactChecker, generations_from_run, split_sentences
from lm_eval_tasks.utils.factbench.tables import write_outputs
from lm_eval_tasks.utils.runs import load_run

from tests.factbench.worked_example import ScriptedChat

STAMP = "2026-12-01T10-00-00.000000"
ITEMS = 3  # per task, as with --limit 3


def reply_for(task, number, doc):
    """Summaries and RAG answers copy the first sentence of their document; one lay summary is empty;
    open answers invent."""
    if task == "laysumm" and number == 1:
        return ""
    if task == "gen":
        return "Coffee cures every cancer. It is cheap."
    return split_sentences(doc["document"])[0]


@pytest.fixture
def run_dir(demo_data_dir, tmp_path):
    folder = tmp_path / "out" / "model"
    folder.mkdir(parents=True)
    configs, n_samples, replies = {}, {}, {}
    for task in constants.TASKS:
        name = constants.TASK_NAMES[task]
        docs = loader.load(task, str(demo_data_dir))
        configs[name] = {}
        n_samples[name] = {"original": len(docs), "effective": ITEMS}
        rows = []
        for number, doc in enumerate(docs[:ITEMS]):
            reply = reply_for(task, number, doc)
            replies[(task, number)] = reply
            rows.append(
                {
                    "doc_id": number,
                    "doc": doc,
                    "doc_hash": f"{name}-{number}",
                    "filter": "none",
                    "resps": [[reply]],
                    "filtered_resps": [reply],
                }
            )
        (folder / f"samples_{name}_{STAMP}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    results = {
        "configs": configs,
        "n-samples": n_samples,
        "config": {"model": "hf", "model_args": {"pretrained": "m"}, "limit": ITEMS},
        "lm_eval_version": "0.4.13",
        "versions": {name: 1.0 for name in configs},
    }
    (folder / f"results_{STAMP}.json").write_text(json.dumps(results))
    return folder, replies


def test_every_factbench_item_by_its_source_id(run_dir, demo_data_dir):
    folder, _ = run_dir
    section = results.score(load_run(folder)).sections["factbench"]
    expected = {
        (constants.TASK_NAMES[task], doc["id"])
        for task in constants.TASKS
        for doc in loader.load(task, str(demo_data_dir))[:ITEMS]
    }
    assert {(item.task, item.item_id) for item in section.items} == expected and len(expected) == 4 * ITEMS


def test_the_report_covers_a_factbench_run(run_dir):
    folder, replies = run_dir
    report = results.score(load_run(folder)).report()
    assert report["unreported_tasks"] == []
    bench = report["benchmarks"]["factbench"]
    assert bench["n_items"] == 4 * ITEMS and bench["n_invalid"] == 1  # the empty lay summary
    words = [len(reply.split()) for reply in replies.values()]
    assert bench["rates"]["generated_words"]["value"] == pytest.approx(sum(words) / len(words))
    assert bench["rates"]["empty_generation"]["value"] == pytest.approx(1 / 12)
    assert bench["components"]["laysumm"]["empty_generation"] == pytest.approx(1 / 3)
    assert bench["components"]["gen"]["generated_words"] == 7.0
    assert bench["coverage"] == {
        "summ": {"expected": 1000, "loaded": 30, "scored": 3, "complete": False},
        "laysumm": {"expected": 1000, "loaded": 30, "scored": 3, "complete": False},
        "rag": {"expected": 1130, "loaded": 30, "scored": 3, "complete": False},
        "gen": {"expected": 1130, "loaded": 30, "scored": 3, "complete": False},
    }
    assert bench["paper_comparable"]["value"] is None
    assert bench["reference"]["Table 3, 20 human-annotated generations per task"]["rag_unvot_extrinsic"] == 83.04
    assert bench["reference"]["Table 2, grounding document + Wikipedia, Llama3.1 8b"]["gen_unvot_extrinsic"] == 32.1
    # the sources the items came from: the two local fixture files and the BioASQ file
    sources = [values["source"] for values in report["run"]["benchmark_settings"]["factbench"]]
    assert [source.rsplit("/", 1)[-1] for source in sources] == [
        "bioasq_demo.json",
        "plos_laysumm.jsonl",
        "pubmed_summ.jsonl",
    ]


def fake_llm(content):
    """Decomposer: the sentence is its only fact. Judge: True iff the statement occurs in the context."""
    if content.startswith("Split this sentence"):
        return "- " + content.split("\n", 1)[1]
    context, statement = content.removeprefix("Context:\n").rsplit("\n\nStatement: ", 1)
    return f"Step by step.\nAnswer: {statement.split(chr(10) * 2)[0] in context}"


def check(folder, out):
    generations, run = generations_from_run(str(folder))
    chat = ScriptedChat(fake_llm)
    result = FactChecker(chat, chat, None, None, nli_unavailable="NLI was switched off").check(generations)
    return write_outputs(result, out, run=run)[0]


def test_the_saved_fact_check_beside_the_run_is_rebuilt(run_dir, monkeypatch):
    folder, _ = run_dir
    monkeypatch.delenv(report_spec.CHECK_DIR_ENV, raising=False)
    run = load_run(folder)
    missing = report_spec.factcheck_section(run)
    assert missing["status"] == "missing" and missing["folder"] == str(folder / "factcheck")
    assert "factbench-check" in missing["reason"]

    saved = check(folder, folder / "factcheck")
    section = report_spec.factcheck_section(run)
    assert section["status"] == "ok" and section["table"] == saved["table"]
    cells = section["table"]["summ"]["cells"]
    assert cells["cot_intrinsic"]["estimate"]["value"] == 1.0  # copied sentences are supported
    assert section["table"]["gen"]["cells"]["cot_intrinsic"]["estimate"]["value"] == 0.0
    assert cells["nli_intrinsic"] == {"status": "unavailable", "reason": "NLI was switched off"}
    assert section["coverage"]["rag"] == {"published": 1130, "in_run": 3, "checked": 3, "complete": False}
    # the empty lay summary has no facts: 2 of 3 generations scored, the third reported, not scored 0
    assert section["table"]["laysumm"]["status"] == {"checked": 2, "no_facts": 1}
    assert section["table"]["laysumm"]["cells"]["cot_intrinsic"]["n_scored"] == 2

    markdown = report_spec.factcheck_markdown(section)
    factcheck_md = (folder / "factcheck" / "factcheck.md").read_text().splitlines()
    table_row = next(line for line in factcheck_md if line.startswith("| Grounding document |"))
    assert table_row in markdown and table_row.startswith("| Grounding document | 100.0 [100.0, 100.0] | unavailable")
    assert "| RAG (QA) | 1130 | 3 | 3 | no |" in markdown


def test_a_fact_check_of_another_run_is_not_mixed_in(run_dir, tmp_path, monkeypatch):
    folder, _ = run_dir
    check(folder, tmp_path / "elsewhere")
    run = load_run(folder)
    monkeypatch.setenv(report_spec.CHECK_DIR_ENV, str(tmp_path / "elsewhere"))
    assert report_spec.factcheck_section(run)["status"] == "ok"  # given by the variable

    saved = json.loads((tmp_path / "elsewhere" / "check.json").read_text())
    saved["run"]["results_file"] = str(folder / "results_2026-01-01T00-00-00.json")
    (tmp_path / "elsewhere" / "check.json").write_text(json.dumps(saved))
    section = report_spec.factcheck_section(run)
    assert section["status"] == "other run" and "results_2026-01-01T00-00-00.json" in section["reason"]
    assert report_spec.factcheck_markdown(section)[-1].startswith("- other run: not reported: it checked ")

    generations = tmp_path / "elsewhere" / "generations.jsonl"
    rows = [json.loads(line) for line in generations.read_text().splitlines()]
    rows[0]["doc_hash"] = "another doc"
    generations.write_text("".join(json.dumps(row) + "\n" for row in rows))
    del saved["run"]["results_file"]
    (tmp_path / "elsewhere" / "check.json").write_text(json.dumps(saved))
    section = report_spec.factcheck_section(run)
    assert section["status"] == "other run" and "gen doc 0 (doc_hash 'another doc')" in section["reason"]


def test_the_report_ends_its_factbench_section_with_the_fact_check(run_dir, tmp_path, monkeypatch):
    from lm_eval_tasks.__main__ import main as cli

    folder, _ = run_dir
    monkeypatch.delenv(report_spec.CHECK_DIR_ENV, raising=False)
    saved = check(folder, folder / "factcheck")
    report = results.score(load_run(folder)).report()
    bench = report["benchmarks"]["factbench"]
    assert bench["headline_metric"] == "none" and bench["paper_comparable"]["value"] is None
    assert bench["extra"]["status"] == "ok" and bench["extra"]["table"] == saved["table"]
    assert cli(["report", str(folder), "--out", str(tmp_path / "rep")]) == 0
    markdown = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    section = markdown.split("## FActBench (`factbench`)", 1)[1]
    assert "- no accuracy is the paper's number" in section and "### Fact-check (" in section
    assert "| Grounding document | 100.0 [100.0, 100.0] | unavailable" in section
    assert json.loads((tmp_path / "rep" / "report.json").read_text())["benchmarks"]["factbench"]["extra"]["table"]


# ----------------------------------------------------------------------------- the paper's numbers


def paper_block(lines, title):
    """Model -> numbers of one block of the paper's Table 2 (tab-separated in the paper text)."""
    start = lines.index(title) + 1
    rows = {}
    for line in lines[start : start + 6]:
        name, *values = line.split("\t")
        rows[" ".join(name.split()).replace(" x ", "x")] = [float(v) for v in values if v]
    return rows


def test_the_published_numbers_are_the_papers(shared_data):
    lines = (shared_data.parent / "seeds" / "factbench_paper.txt").read_text(encoding="utf-8").splitlines()
    published = constants.PUBLISHED_NUMBERS
    for title, block in (
        ("FActBench (Grounding Document)", "table2_grounding"),
        ("FActBench (Grounding Document + Wikipedia)", "table2_wikipedia"),
        ("Baseline: FActScore (Wikipedia)", "table2_factscore_baseline"),
    ):
        assert {model: list(numbers.values()) for model, numbers in published[block].items()} == paper_block(
            lines, title
        )
    start = lines.index("Task\tBaseline\tCoT*\tNLI*\tUnVot*\tHuman") + 1
    table3 = [[float(v) for v in line.split("\t")[1:]] for line in lines[start : start + 4]]
    assert [list(row.values()) for row in published["table3"].values()] == table3


def test_the_grounding_only_block_is_no_target():
    grounding, wikipedia = (constants.PUBLISHED_NUMBERS[block] for block in ("table2_grounding", "table2_wikipedia"))
    cells = [
        (model, task, *(grounding[model][f"{task}_{t}_intrinsic"] for t in constants.TECHNIQUES))
        for model in grounding
        for task in constants.TASKS
    ]
    above = [(m, task, cot, nli, unvot) for m, task, cot, nli, unvot in cells if unvot > min(cot, nli)]
    assert len(cells) == 24 and len(above) == 16
    gap = [abs(unvot - (cot + nli) / 2) for *_, cot, nli, unvot in above]
    assert (sum(g < 1e-9 for g in gap), sum(g <= 0.05 + 1e-9 for g in gap), sum(g <= 0.1 + 1e-9 for g in gap)) == (
        7,
        12,
        14,
    )
    # not explained by the grounding-only UnVot reading the Wikipedia-updated CoT decisions
    with_wiki_cot = [c for c in above if c[4] > min(wikipedia[c[0]][f"{c[1]}_cot_extrinsic"], c[3])]
    assert len(with_wiki_cot) == 10
    # the references are consistent: UnVot <= min(CoT, NLI) everywhere
    for numbers in wikipedia.values():
        for task in constants.TASKS:
            cot, nli, unvot = (numbers[f"{task}_{t}_extrinsic"] for t in constants.TECHNIQUES)
            assert unvot <= min(cot, nli)
    for row in constants.PUBLISHED_NUMBERS["table3"].values():
        assert row["unvot_extrinsic"] <= min(row["cot_extrinsic"], row["nli_extrinsic"])


def test_the_scorecard_and_the_leaderboard_take_a_factbench_run(run_dir, tmp_path):
    from lm_eval_tasks.utils.leaderboard import build
    from lm_eval_tasks.utils.scorecard import render_html

    folder, _ = run_dir
    page = render_html(results.score(load_run(folder)).report()).decode()
    assert "FActBench" in page and 'data-benchmark="factbench"' in page
    twin = shutil.copytree(folder, tmp_path / "twin" / "model")
    board = build([folder, twin])[0]
    assert len(board["runs"]) == 2 and "factbench" in board["benchmarks"]
