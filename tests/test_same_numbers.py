"""Scoring a run gives the same report.json as the code before the last speed-up did: every number of every
benchmark, on a scripted run of all five (tests/golden/report_all_benchmarks.json, written by that code with
MEDEVAL_WRITE_GOLDEN=1). Only what depends on when and where the run was made is left out: its provenance (paths,
dates, file hashes) and the timings."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from lm_eval_tasks.utils.results import score_path

from tests.runs import EVERY_BENCHMARK, GOLDEN, evaluated_run


@pytest.fixture(scope="module")
def run(demo_data_dir, tmp_path_factory):
    return evaluated_run(tmp_path_factory.mktemp("five") / "run", demo_data_dir, EVERY_BENCHMARK)


def same_to_the_last_bits(got, want) -> bool:
    """Equal, but for floats within 1e-12 of each other (relative): the golden was written with numpy 2, and numpy
    1.26 and scipy 1.11 (the oldest the package declares) sum and invert in another order."""
    if isinstance(got, float) and isinstance(want, float):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15)
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same_to_the_last_bits(got[k], want[k]) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(map(same_to_the_last_bits, got, want))
    return type(got) is type(want) and got == want


@pytest.mark.oldest
def test_every_number_is_the_one_the_previous_code_gave(run):
    report = score_path(run).report()
    numbers = {key: report[key] for key in ("schema_version", "bootstrap", "benchmarks", "empty_tasks")}
    # The run's folder is the test's own: named as a placeholder.
    text = json.dumps(numbers, indent=1, sort_keys=True, ensure_ascii=False).replace(str(run.parent), "TMP") + "\n"
    if os.environ.get("MEDEVAL_WRITE_GOLDEN") == "1":
        GOLDEN.write_text(text, encoding="utf-8")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        assert json.loads(text) == golden
    else:
        assert same_to_the_last_bits(json.loads(text), golden)
    assert set(report["benchmarks"]) >= {"medfact_bench", "medexqa_logit", "medexqa", "pubmedqa_atlas_n100"}


def test_a_report_draws_its_figures_ahead_in_another_process_and_writes_the_same_files(run, tmp_path):
    # The command draws every figure in its second process while the rest is made (and makes the scored run in a
    # third): nothing is drawn in the command's own process (matplotlib is never imported there), and the files are
    # those one process writes (as with one core).
    # Both in fresh processes: figures drawn here would follow whatever earlier tests did to matplotlib's settings.
    script = (
        "import sys; from lm_eval_tasks.utils import machine, plots, report\n"
        "plots.usable_cores = machine.usable_cores = lambda: 1 if sys.argv[3] == 'one-core' else 2\n"
        "report.write_report(sys.argv[1], sys.argv[2]); print('matplotlib' in sys.modules)"
    )
    drawn = {}
    for cores in ("two-cores", "one-core"):
        done = subprocess.run(
            [sys.executable, "-c", script, str(run), str(tmp_path / cores), cores],
            capture_output=True,
            text=True,
            check=True,
        )
        drawn[cores] = (done.stdout.strip(), {p.name: p.read_bytes() for p in (tmp_path / cores).iterdir()})
    assert drawn["two-cores"][0] == "False" and drawn["one-core"][0] == "True"
    ahead, here = drawn["two-cores"][1], drawn["one-core"][1]
    assert sorted(ahead) == sorted(here)
    assert sum(name.endswith(".png") for name in ahead) >= 3
    for name, content in here.items():
        assert ahead[name] == content, name
