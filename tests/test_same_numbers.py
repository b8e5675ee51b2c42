"""Scoring a run gives the same report.json as the code before the last speed-up did: every number of every
benchmark, on a scripted run of all five (tests/golden/report_all_benchmarks.json, written by that code with
MEDEVAL_WRITE_GOLDEN=1). Only what depends on when and where the run was made is left out: its provenance (paths,
dates, file hashes) and the timings."""

import json
import os
from pathlib import Path

from lm_eval_tasks.utils.results import score_path

from tests.runs import evaluated_run
from tests.test_comparison import TASKS as FIVE_BENCHMARKS

GOLDEN = Path(__file__).parent / "golden" / "report_all_benchmarks.json"
TASKS = (*FIVE_BENCHMARKS, "factbench_gen")


def test_every_number_is_the_one_the_previous_code_gave(demo_data_dir, tmp_path):
    report = score_path(evaluated_run(tmp_path / "run", demo_data_dir, TASKS)).report()
    numbers = {key: report[key] for key in ("schema_version", "bootstrap", "benchmarks", "empty_tasks")}
    # The run's folder is the test's own: named as a placeholder.
    text = json.dumps(numbers, indent=1, sort_keys=True, ensure_ascii=False).replace(str(tmp_path), "TMP") + "\n"
    if os.environ.get("MEDEVAL_WRITE_GOLDEN") == "1":
        GOLDEN.write_text(text, encoding="utf-8")
    assert json.loads(text) == json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert set(report["benchmarks"]) >= {"medfact_bench", "medexqa_logit", "medexqa", "pubmedqa_atlas_n100"}
