"""Figures from artifacts: the README's table is what examples/results_table.py prints from examples/results/."""

import hashlib
import importlib.util
import json

from tests.conftest import REPO

START, END = "<!-- results-table:start -->\n", "<!-- results-table:end -->\n"


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def readme_table() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text[text.index(START) + len(START) : text.index(END)]


def test_the_readme_table_is_the_artifacts_table():
    assert readme_table() == example("results_table").table()


def estimate(value, low, high):
    return {"value": value, "low": low, "high": high, "n": 100}


def test_the_table_prints_each_artifacts_figures(tmp_path):
    folder = tmp_path / "quickstart"
    folder.mkdir()
    manifest = {
        "command": "bash examples/quickstart.sh",
        "dtype": "float32",
        "chat_template_applied": False,
        "machine": {"cpu": "Intel Xeon", "cpus": 2},
        "load_average": [1.5, 0.75, 0.25],
    }
    report = {
        "benchmarks": {
            "medfact_bench": {"title": "MedFact-Bench", "components": {"scifact": {}}, "n_items": 4, "n_invalid": 4},
            "factbench": {
                "title": "FActBench",
                "components": {"summ": {}},
                "n_items": 5,
                "n_invalid": 0,
                "headline_metric": "none",
            },
            "pubmedqa_atlas_n100": {
                "title": "PubMedQA",
                "components": {"atlas-n100-v1": {}},
                "n_items": 100,
                "n_invalid": 0,
                "headline_metric": "accuracy_micro",
                "accuracy_micro": estimate(0.45, 0.36, 0.55),
            },
            "medexqa_logit": {
                "title": "MedExQA",
                "components": {"CP": {}, "SLP": {}},
                "n_items": 236,
                "n_invalid": 0,
                "headline_metric": "accuracy_macro",
                "accuracy_macro": estimate(0.27141, 0.21581, 0.32663),
            },
        }
    }
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "report.json").write_text(json.dumps(report), encoding="utf-8")
    (tmp_path / "notes").mkdir()  # a folder without a manifest is no artifact
    run = "`bash examples/quickstart.sh`, float32, plain prompts"
    machine = "Intel Xeon, 2 CPUs, load 1.50 / 0.75 / 0.25 (1/5/15 min)"
    assert example("results_table").table(tmp_path) == (
        "| benchmark | run | machine | headline [95% CI] |\n|---|---|---|---|\n"
        f"| PubMedQA | {run} | {machine} | atlas-n100-v1: accuracy .450 [.360, .550] |\n"
        f"| MedExQA | {run} | {machine} | CP + SLP: macro accuracy .271 [.216, .327] |\n"
        f"| MedFact-Bench | {run} | {machine} | 0/4 replies gave an answer |\n"
        f"| FActBench | {run} | {machine} | 5 items, no accuracy headline (its scores are in report.md) |\n"
    )
    # A manifest written before the load average was kept says so, and so does one without its machine.
    del manifest["load_average"], manifest["machine"]
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert "| CPU not recorded, load not recorded |" in example("results_table").table(tmp_path)


def test_each_artifact_is_the_report_its_manifest_hashes():
    folders = [f for f in (REPO / "examples" / "results").iterdir() if (f / "manifest.json").is_file()]
    assert folders
    for folder in folders:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        raw = (folder / "report.json").read_bytes()
        assert hashlib.sha256(raw).hexdigest() == manifest["report_sha256"]
        run = json.loads(raw)["run"]
        assert (manifest["results_sha256"], manifest["samples_sha256"]) == (
            run["results_sha256"],
            run["samples_sha256"],
        )
        assert manifest["lm_eval_version"] == run["lm_eval_version"] == "0.4.13"


def test_the_machine_is_read_from_lm_evals_environment_text():
    env_info = (
        "CPU:\nArchitecture:  x86_64\nCPU(s):        2\nModel name:    AMD EPYC 7B13\nFlags:         fpu avx2 avx512f\n"
    )
    assert example("results_artifact").machine(env_info) == {
        "cpu": "AMD EPYC 7B13",
        "cpus": 2,
        "bf16_flags": {"avx2": True, "avx512f": True, "avx512_bf16": False, "amx_tile": False, "amx_bf16": False},
    }
    assert example("results_artifact").machine("") == {"cpu": None, "cpus": None, "bf16_flags": None}
