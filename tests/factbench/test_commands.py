"""factbench-check as a user runs it: an lm-eval --log_samples run in, tables out; then a cached re-run."""

import json
import subprocess
import sys

import pytest
from lm_eval import simple_evaluate
from lm_eval.loggers import EvaluationTracker
from lm_eval.tasks import TaskManager
from lm_eval_tasks.utils.factbench.demo_data import FACTBENCH_PASSAGES
from lm_eval_tasks.utils.factbench.pipeline import split_sentences

from lm_eval_tasks import tasks_dir
from tests.conftest import lm_eval_tasks_cli
from tests.fake_openai import FakeChatServer
from tests.scripted_lm import ScriptedLM
from tests.tiny_model import build_tiny_nli

GEN_REPLY = "I am not sure. Regular coffee cures every cancer."


def scripted_reply(prompt):
    """Summaries and RAG answers copy the first sentence of their article or context; open answers invent."""
    if "CONTEXT: " in prompt:
        return split_sentences(prompt.split("CONTEXT: ", 1)[1])[0]
    if "Scientific Article: " in prompt:
        return split_sentences(prompt.split("Scientific Article: ", 1)[1])[0]
    return GEN_REPLY


def fake_llm(messages, model):
    """Decomposer: the sentence is its only fact. Judge: True iff the statement occurs in the context."""
    content = messages[-1]["content"]
    if content.startswith("Split this sentence"):
        return "- " + content.split("\n", 1)[1]
    context, statement = content.removeprefix("Context:\n").rsplit("\n\nStatement: ", 1)
    statement = statement.split("\n\nIs the statement supported")[0]
    return f"Step by step.\nAnswer: {statement in context}"


@pytest.fixture(scope="module")
def run_dir(demo_data_dir, tmp_path_factory):
    manager = TaskManager(include_path=tasks_dir(), include_defaults=False, metadata={"data_dir": str(demo_data_dir)})
    results = simple_evaluate(
        model=ScriptedLM(reply=scripted_reply),
        tasks=["factbench"],
        task_manager=manager,
        limit=3,
        bootstrap_iters=0,
        log_samples=True,
    )
    samples = results.pop("samples")
    out = tmp_path_factory.mktemp("run")
    tracker = EvaluationTracker(output_path=str(out))
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return out


@pytest.fixture(scope="module")
def store(demo_data_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "passages.sqlite"
    lm_eval_tasks_cli("factbench-index", demo_data_dir / "factbench" / FACTBENCH_PASSAGES, "--out", path)
    return path


def cli(*args):
    return subprocess.run([sys.executable, "-m", "lm_eval_tasks", *map(str, args)], capture_output=True, text=True)


@pytest.mark.slow  # a local server and four CLI processes: the full suite only
def test_check_then_cached_rerun_then_rescore(run_dir, store, tmp_path):
    server = FakeChatServer(fake_llm)
    try:
        judge = f"base_url={server.base_url},model=fake-judge,max_tokens=128"

        def check(out, *options):
            """factbench-check of the run, with the fake judge, the store and one cache, into ``tmp_path / out``."""
            return cli(
                "factbench-check",
                run_dir,
                *("--judge", judge, "--passages", store, "--cache", tmp_path / "c.sqlite", "--out", tmp_path / out),
                *options,
            )

        first = check("fc")
        assert first.returncode == 0, first.stderr
        assert "NLI unavailable" in first.stderr  # the default checkpoint cannot be downloaded offline
        report = json.loads((tmp_path / "fc" / "factcheck.json").read_text())
        table = report["table"]
        assert set(table) == {"summ", "laysumm", "rag", "gen"} and all(t["generations"] == 3 for t in table.values())
        for task in ("summ", "laysumm", "rag"):  # copied sentences: every fact supported by the document
            assert table[task]["cells"]["cot_intrinsic"]["estimate"]["value"] == 1.0
        # the invented answer: 2 facts, unsupported by the snippets and by the passage store
        assert table["gen"]["facts"] == 6
        assert table["gen"]["cells"]["cot_intrinsic"]["estimate"]["value"] == 0.0
        assert table["gen"]["cells"]["cot_extrinsic"]["estimate"]["value"] == 0.0
        assert table["gen"]["cells"]["nli_intrinsic"]["status"] == "unavailable"
        assert report["config"]["cot"]["model"] == "fake-judge" and report["config"]["cot"]["temperature"] == 0.0
        assert report["config"]["passage_store"]["n_documents"] == 1000
        assert report["run"]["task_versions"] == {f"factbench_{t}": 1.1 for t in ("gen", "laysumm", "rag", "summ")}
        calls = report["calls"]
        # one decomposer call per distinct sentence (the 3 invented answers share theirs)
        assert calls["decomposer"]["calls"] == 9 + 2 and calls["cot"]["calls"] == 9 + 6 + 2
        # usage, counted again from what the server was sent and answered (it counts words)
        prompt_words = sum(len(m["content"].split()) for body in server.requests for m in body["messages"])
        answer_words = sum(len(fake_llm(body["messages"], "").split()) for body in server.requests)
        assert report["usage"]["this_run"] == {
            "replies": 28,
            "replies_without_usage": 0,
            "prompt_tokens": prompt_words,
            "completion_tokens": answer_words,
            "reasoning_tokens": 0,
            "replies_reporting_reasoning_tokens": 28,
        }
        assert (
            calls["decomposer"]["usage"]["this_run"]["replies"] == 11 and report["usage"]["from_cache"]["replies"] == 0
        )
        assert f"LLM usage: this run: 28 replies, {prompt_words} prompt + {answer_words} completion" in first.stdout
        markdown = (tmp_path / "fc" / "factcheck.md").read_text()
        assert "| Grounding document | 100.0 [100.0, 100.0] | unavailable | unavailable |" in markdown

        requests = len(server.requests)
        prices = tmp_path / "prices.json"
        prices.write_text('{"fake-judge": {"input": 0.5, "output": 2.0}}')
        again = check("fc2", "--nli-model", "none", "--prices", prices)
        assert again.returncode == 0, again.stderr
        assert len(server.requests) == requests  # all answers from the cache
        rerun = json.loads((tmp_path / "fc2" / "factcheck.json").read_text())
        cot = rerun["calls"]["cot"]
        assert (cot["calls"], cot["cache_hits"], cot["failures"]) == (0, 17, 0)
        cached = rerun["usage"]["from_cache"]  # the cached answers keep their usage; now priced
        assert (cached["prompt_tokens"], cached["completion_tokens"]) == (prompt_words, answer_words)
        assert cached["cost_usd"] == pytest.approx((prompt_words * 0.5 + answer_words * 2.0) / 1e6)
        assert rerun["usage"]["this_run"]["replies"] == 0 and rerun["usage"]["this_run"]["cost_usd"] == 0.0
        assert rerun["table"]["gen"]["cells"]["cot_extrinsic"] == table["gen"]["cells"]["cot_extrinsic"]
        assert rerun["config"]["nli"] == {"unavailable": "NLI was switched off (--nli-model none)"}

        # a local NLI checkpoint (random weights: plumbing only) fills the NLI and UnVot columns
        nli_dir = build_tiny_nli(tmp_path / "nli", {0: "contradiction", 1: "neutral", 2: "entailment"})
        with_nli = check("fc4", "--nli-model", nli_dir, "--nli-max-length", 128, "--nli-stride", 16)
        assert with_nli.returncode == 0, with_nli.stderr
        assert len(server.requests) == requests
        nli_report = json.loads((tmp_path / "fc4" / "factcheck.json").read_text())
        assert nli_report["config"]["nli"]["labels"] == ["contradiction", "neutral", "entailment"]
        assert nli_report["calls"]["nli"]["pairs_computed"] > 0
        for row in map(json.loads, (tmp_path / "fc4" / "generations.jsonl").read_text().splitlines()):
            scores = {key: cell["score"] for key, cell in row["scores"].items()}
            for setting in ("intrinsic", "extrinsic"):
                assert scores[f"unvot_{setting}"] <= min(scores[f"cot_{setting}"], scores[f"nli_{setting}"])
    finally:
        server.close()

    (tmp_path / "human.jsonl").write_text(
        "".join(
            json.dumps({"task": "factbench_summ", "doc_id": i, "score": s}) + "\n" for i, s in enumerate([80, 90, 70])
        ),
        encoding="utf-8",
    )
    table = cli("factbench-table", tmp_path / "fc", "--human", tmp_path / "human.jsonl", "--out", tmp_path / "fc3")
    assert table.returncode == 0, table.stderr
    rescored = json.loads((tmp_path / "fc3" / "factcheck.json").read_text())
    assert rescored["table"] == report["table"]
    summ = rescored["human_correlation"]["summ"]["cot_intrinsic"]
    assert summ["n"] == 3 and summ["mean_human"] == 80.0 and summ["correlation"].startswith("undefined")


def test_a_run_without_factbench_tasks_is_refused(tmp_path):
    (tmp_path / "results_2026-01-01T00-00-00.json").write_text(json.dumps({"configs": {}}), encoding="utf-8")
    out = cli("factbench-check", tmp_path, "--judge", "base_url=http://127.0.0.1:9/v1,model=x")
    assert out.returncode == 1 and "no FActBench samples" in out.stderr
    bad = cli("factbench-check", tmp_path, "--judge", "model=x")
    assert bad.returncode == 1 and "--judge 'model=x': base_url and model are required" in bad.stderr
