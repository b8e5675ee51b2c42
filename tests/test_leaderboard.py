import csv
import dataclasses
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lm_eval_tasks.utils import formats
from lm_eval_tasks.utils import leaderboard as lb
from lm_eval_tasks.utils.calibration import Forecast
from lm_eval_tasks.utils.comparison import holm
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.runs import find_all_results
from lm_eval_tasks.utils.scoring import INVALID, ITEM_FIELD_NAMES, ItemColumns, ScoredItem, item_column, outcome_of
from lm_eval_tasks.utils.section import SpooledTexts

from tests import browser
from tests.conftest import REPO, build_report
from tests.hand_runs import GOLDS, STAMP, STRICT, A, B, C, medfact_run, write_run
from tests.page_checks import assert_self_contained, page_data

STAMP_2 = "2026-11-30T08-00-00.000000"


def _pairs(board, benchmark="medfact_bench"):
    return {(c["a"], c["b"]): c for c in board["benchmarks"][benchmark]["comparisons"]}


def test_three_runs_on_the_same_seven_items(tmp_path):
    paths = [medfact_run(tmp_path / name, flags, model_name=name) for name, flags in (("a", A), ("b", B), ("c", C))]
    board = lb.build(paths)[0]
    bench = board["benchmarks"]["medfact_bench"]
    assert [run["label"] for run in board["runs"]] == ["a", "b", "c"]
    assert bench["compared_metric"] == "accuracy_macro"
    # macro = mean of the scifact and healthver accuracies
    assert bench["runs"]["run-1"]["estimate"]["value"] == pytest.approx((2 / 4 + 2 / 3) / 2)
    assert bench["runs"]["run-2"]["estimate"]["value"] == 1.0
    assert bench["runs"]["run-3"]["estimate"]["value"] == pytest.approx((2 / 4 + 1 / 3) / 2)
    for run, path in zip(board["runs"], paths, strict=True):  # one computation: the run's own report
        own = build_report(path)["benchmarks"]["medfact_bench"]["accuracy_macro"]
        assert bench["runs"][run["id"]]["estimate"] == own
    pairs = _pairs(board)
    ab, ac, bc = pairs["run-1", "run-2"], pairs["run-1", "run-3"], pairs["run-2", "run-3"]
    assert all(c["comparable"] and c["reasons"] == [] and c["n_paired_items"] == 7 for c in (ab, ac, bc))
    assert ab["difference"]["value"] == pytest.approx(7 / 12 - 1)
    assert ac["difference"]["value"] == pytest.approx(7 / 12 - 5 / 12)
    assert bc["difference"]["value"] == pytest.approx(1 - 5 / 12)
    # The discordant items behind the difference (A right and B wrong, and the reverse)
    assert [(c["a_only_correct"], c["b_only_correct"]) for c in (ab, ac, bc)] == [(0, 3), (2, 1), (4, 0)]
    # A macro headline, but 3 or 4 discordant items: the bootstrap cannot carry a p-value, the exact McNemar test on
    # the discordant items gives it, and the difference has no interval; Holm over the 3 pairs.
    assert bench["test"].startswith("paired bootstrap")
    assert all(c["test"].startswith("exact McNemar") and c["interval_reason"] for c in (ab, ac, bc))
    assert [c["p_value"] for c in (ab, ac, bc)] == pytest.approx([0.25, 1.0, 0.125])  # 2 * 0.5**3, 1, 2 * 0.5**4
    assert [c["holm_p_value"] for c in (ab, ac, bc)] == pytest.approx(holm([c["p_value"] for c in (ab, ac, bc)]))
    for c in (ab, ac, bc):
        assert c["difference"]["low"] is None and c["difference"]["high"] is None
    published = bench["published"]
    assert published["GPT-4o"] == 0.736 and published["Llama-3.2-3B-Instruct"] == 0.511 and len(published) == 9


def test_runs_scored_in_one_process_draw_each_resample_set_once(tmp_path, monkeypatch):
    # As every scoring worker does: the runs have the same items, so the second draws the sets the first drew.
    from lm_eval_tasks.utils import stats

    paths = [medfact_run(tmp_path / name, flags, model_name=name) for name, flags in (("a", A), ("b", B))]
    monkeypatch.setattr(stats, "_DRAWN_BYTES", 1)  # nothing kept outside the scoring
    stats.forget_resamples()
    drawn = []
    monkeypatch.setattr(stats, "_drawn_rows", lambda *args, real=stats._drawn_rows: drawn.append(args) or real(*args))
    first = next(runs := lb.score_runs(paths, workers=1))
    after_first = len(drawn)
    assert after_first > 0 and stats._DRAWN_BYTES == lb._RUN_RESAMPLES_BYTES
    second = next(runs)
    assert len(drawn) == after_first  # every set of the second run was kept from the first
    assert list(runs) == [] and stats._DRAWN_BYTES == 1  # the limit is set back once the runs are scored
    assert (
        second.report()["benchmarks"]["medfact_bench"]["n_items"]
        == first.report()["benchmarks"]["medfact_bench"]["n_items"]
    )
    stats.forget_resamples()


def test_runs_scored_in_worker_processes_are_those_scored_here_in_order(tmp_path, monkeypatch):
    # With two cores a leaderboard scores its runs in a pool of processes: the same scored runs, in the order given.
    paths = [medfact_run(tmp_path / name, flags, model_name=name) for name, flags in (("a", A), ("b", B), ("c", C))]
    here = [scored.report() for scored in lb.score_runs(paths, workers=1)]
    monkeypatch.setattr(lb, "usable_cores", lambda: 2)  # a test worker is a one-core machine (tests/conftest.py)
    pooled = [scored.report() for scored in lb.score_runs(paths)]
    assert pooled == here
    assert [r["benchmarks"]["medfact_bench"]["n_items"] for r in here] == [7, 7, 7]
    assert len({json.dumps(r["benchmarks"], sort_keys=True) for r in here}) == 3


def test_an_item_crosses_to_another_process_with_every_field():
    item = ScoredItem(
        *("medexqa_logit_be", 3, "h", "BE", "B", "C", 0.0, {"rate": 1.0}, {"why": ["x"]}, "id-3", "ph", "choice"),
        *("reason", [{"role": "user", "content": "Q?"}], "C.", ("A", "B", "C"), (-1.5, -0.5, -0.25), ("prompt",)),
        Forecast(0.4, False, (0.2, 0.4, 0.4), 1),
    )
    assert all(getattr(item, f.name) != f.default for f in dataclasses.fields(ScoredItem))  # none left as default
    back = pickle.loads(pickle.dumps(item))
    assert back == item and type(back.forecast) is Forecast and back.prompt == [{"role": "user", "content": "Q?"}]


def _items():
    texts = st.text(max_size=8)
    forecast = st.builds(Forecast, st.floats(0, 1), st.booleans(), st.tuples(st.floats(0, 1)), st.integers(0, 2))
    item = st.builds(
        ScoredItem,
        task=texts,
        doc_id=st.integers(0, 10**6),
        doc_hash=texts,
        component=texts,
        gold=texts,
        pred=st.one_of(texts, st.just(INVALID)),
        correct=st.sampled_from([0.0, 1.0]),
        extras=st.dictionaries(texts, st.floats(0, 1), max_size=2),
        item_id=st.none() | texts,
        prompt=texts,
        reply=st.none() | texts,
        choices=st.tuples(texts),
        redacted=st.tuples(texts),
        forecast=st.none() | forecast,
    )
    return st.lists(item, max_size=12)


def test_items_held_as_columns_are_the_items_they_were_made_of():
    # A leaderboard's workers send each run's items as one list per field, and only the items a page shows are built.
    @given(_items(), st.integers(-15, 15), st.integers(-15, 15))
    def check(items, start, stop):
        columns = ItemColumns.of(items)
        assert len(columns) == len(items) and list(columns) == items
        assert columns[start:stop] == items[start:stop]
        if -len(items) <= start < len(items):
            assert columns[start] == items[start]
        for name in ITEM_FIELD_NAMES:
            assert (
                list(item_column(columns, name)) == [getattr(item, name) for item in items] == item_column(items, name)
            )
        assert [item.outcome for item in items] == list(
            map(outcome_of, item_column(items, "pred"), item_column(items, "correct"))
        )
        assert list(pickle.loads(pickle.dumps(columns))) == items
        textless = ItemColumns.of(columns, prompt=[None] * len(items))
        assert list(textless) == [dataclasses.replace(item, prompt=None) for item in items]

    check()
    with pytest.raises(ValueError):
        ItemColumns([[1], [2]])
    with pytest.raises(ValueError):
        ItemColumns([[0]] * (len(ITEM_FIELD_NAMES) - 1) + [[]])


def test_the_forest_plots_drawn_in_another_process_give_the_same_files(tmp_path, monkeypatch):
    # With two cores the leaderboard's forest plots are drawn by a second process while the other files are made:
    # none is drawn in this one, and every file is the one a single process writes.
    from lm_eval_tasks.utils import plots

    paths = [medfact_run(tmp_path / name, flags, model_name=name) for name, flags in (("a", A), ("b", B), ("c", C))]
    drawn_here = []
    monkeypatch.setattr(plots.Figure, "png", lambda self, real=plots.Figure.png: drawn_here.append(self) or real(self))
    written = {}
    for cores in (1, 2):
        monkeypatch.setattr(plots, "usable_cores", lambda cores=cores: cores)
        drawn_here.clear()
        files = formats.write_leaderboard(paths, tmp_path / "boards" / str(cores))
        written[cores] = {path.name: path.read_bytes() for path in files}
        assert len(drawn_here) == (1 if cores == 1 else 0)  # MedFact-Bench's forest plot, here or there
    assert written[1] == written[2]
    assert b"data:image/png;base64," in written[2]["leaderboard.html"]


def test_different_items_tasks_template_or_versions_are_not_comparable(tmp_path):
    a = medfact_run(tmp_path / "a", A)
    scifact_only = medfact_run(tmp_path / "d", "1111", tasks=("medfact_bench_scifact",))
    no_template = medfact_run(tmp_path / "e", A, chat_template_sha=None, chat_template=None)
    new_versions = medfact_run(tmp_path / "f", A, versions={task: 2.0 for task in GOLDS})
    board = lb.build([a, scifact_only, no_template, new_versions])[0]
    pairs = _pairs(board)
    d = pairs["run-1", "run-2"]
    assert d["comparable"] is False and (d["only_in_a"], d["only_in_b"], d["n_paired_items"]) == (3, 0, 4)
    assert d["reasons"] == [
        "different items: 3 only in A, 0 only in B",
        "different tasks (protocol): A ran medfact_bench_healthver, medfact_bench_scifact; B ran medfact_bench_scifact",
    ]
    # descriptive only, on the 4 shared scifact items (macro over one component): 2/4 - 4/4; no test
    assert d["difference"]["value"] == pytest.approx(-0.5)
    assert d["p_value"] is None and d["holm_p_value"] is None
    assert pairs["run-1", "run-3"]["reasons"] == ["chat template applied: true vs false"]
    assert pairs["run-1", "run-4"]["reasons"] == [
        'task versions: {"medfact_bench_healthver": 1.0, "medfact_bench_scifact": 1.0} vs '
        '{"medfact_bench_healthver": 2.0, "medfact_bench_scifact": 2.0}'
    ]
    assert [key for key, c in pairs.items() if c["comparable"]] == []
    markdown = formats.to_markdown(board)
    assert "| run-1 | run-3 | 7 | 0.000 | chat template applied: true vs false |" in markdown


def test_holm_family_is_the_comparable_pairs(tmp_path):
    a, b = medfact_run(tmp_path / "a", A), medfact_run(tmp_path / "b", B)
    scifact_only = medfact_run(tmp_path / "d", "1111", tasks=("medfact_bench_scifact",))
    pairs = _pairs(lb.build([a, b, scifact_only])[0])
    one = pairs["run-1", "run-2"]
    assert one["holm_p_value"] == one["p_value"]  # one test: unadjusted
    assert pairs["run-1", "run-3"]["holm_p_value"] is None and pairs["run-2", "run-3"]["holm_p_value"] is None


def test_a_folder_contributes_every_run_under_it(tmp_path):
    medfact_run(tmp_path / "out" / "model", A, model_name="m")
    medfact_run(tmp_path / "out" / "model", B, stamp=STAMP_2, model_name="m")
    medfact_run(tmp_path / "out" / "other", C, model_name="o")
    assert [p.name for p in find_all_results(tmp_path / "out")] == [
        f"results_{STAMP}.json",
        f"results_{STAMP_2}.json",
        f"results_{STAMP}.json",
    ]
    board = lb.build([tmp_path / "out", tmp_path / "out" / "model"])[0]  # the same runs twice: counted once
    labels = [run["label"] for run in board["runs"]]
    # Nothing lm-eval recorded tells the two runs of m apart: the file names do.
    assert labels == [f"m [model/results_{STAMP}]", f"m [model/results_{STAMP_2}]", "o"]
    values = [entry["estimate"]["value"] for entry in board["benchmarks"]["medfact_bench"]["runs"].values()]
    assert values == pytest.approx([7 / 12, 1.0, 5 / 12])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no results_"):
        find_all_results(tmp_path / "empty")
    with pytest.raises(DataError, match="no such file"):
        find_all_results(tmp_path / "missing")


def test_a_sample_logged_twice_counts_once_as_in_the_report(tmp_path):
    path = medfact_run(tmp_path / "a", A)
    samples = path.parent / f"samples_medfact_bench_scifact_{STAMP}.jsonl"
    rows = samples.read_text(encoding="utf-8").splitlines()
    samples.write_text("\n".join(rows + rows[:1]) + "\n", encoding="utf-8")
    board = lb.build([path, medfact_run(tmp_path / "b", B)])[0]
    values = [entry["estimate"]["value"] for entry in board["benchmarks"]["medfact_bench"]["runs"].values()]
    assert values == pytest.approx([7 / 12, 1.0])


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("leaderboard")
    hostile = '=HYPERLINK("x")$\\frac{$<img src=x onerror=alert(1)>|'  # a formula, mathtext, markup
    paths = [
        medfact_run(root / "a", A, model_name=hostile),
        medfact_run(root / "b", B, model_name="b"),
        medfact_run(root / "c", C, model_name="c"),
    ]
    files = formats.write_leaderboard(paths, root / "board")
    return root / "board", files, hostile


def test_written_files(written):
    out, files, hostile = written
    assert sorted(p.name for p in files) == [f"leaderboard.{ext}" for ext in ("csv", "html", "json", "md", "tex")] + [
        "leaderboard_discordant.jsonl",
        "methods.md",
    ]
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert board["schema_version"] == "2.6" and board["runs"][0]["label"] == hostile.rsplit("/", 1)[-1]
    assert [run["report_folder"] for run in board["runs"]] == [None] * 3  # no report was written beside a run
    rows = list(csv.DictReader((out / "leaderboard.csv").open(encoding="utf-8")))
    assert [r["kind"] for r in rows] == ["run"] * 3 + ["published"] * 9  # runs ranked by the headline
    assert [r["id"] for r in rows[:3]] == ["run-2", "run-1", "run-3"]
    assert rows[1]["label"] == "'" + hostile  # a spreadsheet would otherwise run the formula
    assert float(rows[0]["value"]) == 1.0 and rows[0]["paper_comparable"] == "False"
    assert [r["value"] for r in rows if r["label"] == "GPT-4o"] == ["0.736"]
    markdown = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "$\\\\frac{$&lt;img src=x onerror=alert(1)&gt;\\|" in markdown and "<img" not in markdown
    assert "|  | GPT-4o (published) | 0.736 |  |  |" in markdown
    # Every item right: the exact interval over the 7 items (0.025 ** (1 / 7) = 0.590), never [1.000, 1.000].
    assert "| 1 | b (run-2) | 1.000 [0.590, 1.000] * | 7 | no |" in markdown
    # 4 discordant items: the difference without an interval, the exact test's p, and no detectable difference.
    assert "| run-2 | run-3 | 7 (small) | 0.583 | 4 | 0 | 0.125 (exact McNemar: few discordant items) |" in markdown
    assert markdown.count("| none |") == 3
    page = (out / "leaderboard.html").read_text(encoding="utf-8")
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert_self_contained(page)


def test_discordant_items_of_every_pair_hand_worked(written):
    # A 1100|011, B 1111|111, C 0101|001 (scifact | healthver); items in (task, doc_id) order: healthver first.
    out = written[0]
    raw = [json.loads(line) for line in (out / lb.DISCORDANT_FILE).read_text(encoding="utf-8").splitlines()]
    # Each run's items once (before the first pair that refers to it), then each pair's items as indices in both.
    assert [(line["section"], line.get("run"), line.get("a"), line.get("b")) for line in raw] == [
        ("medfact_bench", "run-1", None, None),
        ("medfact_bench", "run-2", None, None),
        ("medfact_bench", None, "run-1", "run-2"),
        ("medfact_bench", "run-3", None, None),
        ("medfact_bench", None, "run-1", "run-3"),
        ("medfact_bench", None, "run-2", "run-3"),
    ]
    assert raw[0]["fields"] == ["task", "item_id", "doc_id", "pred", "outcome"]
    assert raw[0]["items"][0] == ["medfact_bench_healthver", "healthver/0", 0, "INVALID", "INVALID"]
    assert raw[2]["a_only_correct"] == {"a": [], "b": []}
    assert raw[2]["b_only_correct"] == {"a": [0, 5, 6], "b": [0, 5, 6]}
    assert (raw[2]["n_b_only_correct"], raw[2]["cut"]) == (3, False)
    lines = list(lb.read_discordant(out / lb.DISCORDANT_FILE))
    assert all(
        set(e) == set(lb.DISCORDANT_FIELDS)
        for line in lines
        for k in ("a_only_correct", "b_only_correct")
        for e in line[k]
    )
    found = {
        (line["a"], line["b"]): tuple(
            [[e["task"], e["doc_id_a"], e["doc_id_b"]] for e in line[key]]
            for key in ("a_only_correct", "b_only_correct")
        )
        for line in lines
    }
    h, s = "medfact_bench_healthver", "medfact_bench_scifact"
    assert found == {
        ("run-1", "run-2"): ([], [[h, 0, 0], [s, 2, 2], [s, 3, 3]]),
        ("run-1", "run-3"): ([[h, 1, 1], [s, 0, 0]], [[s, 3, 3]]),
        ("run-2", "run-3"): ([[h, 0, 0], [h, 1, 1], [s, 0, 0], [s, 2, 2]], []),
    }
    # By its ids, with both runs' predictions and outcomes: run-1 (A) gave no answer on healthver's first item
    # (gold NEI), run-2 (B) the right score. No texts: the page shows them.
    first = next(line for line in lines if (line["a"], line["b"]) == ("run-1", "run-2"))["b_only_correct"][0]
    assert first == {
        "task": h,
        "item_id": "healthver/0",  # the doc's component and row
        "doc_id_a": 0,
        "doc_id_b": 0,
        "pred_a": "INVALID",
        "pred_b": "NEI",
        "outcome_a": "INVALID",
        "outcome_b": "correct",
    }
    # The page's own record of it stands alone: the question and both answers, from the scored runs.
    page = (out / "leaderboard.html").read_text(encoding="utf-8")
    data = page_data(page, "pairs-medfact_bench-run-1-run-2-data")
    shown = dict(zip(data["columns"], next(row for row in data["rows"] if row[0] == "B right, A wrong")))
    assert {key: shown[key] for key in ("item_id", "gold_a", "question_a", "question_b", "reply_a", "reply_b")} == {
        "item_id": "healthver/0",
        "gold_a": "NEI",
        "question_a": "prompt 0",
        "question_b": None,
        "reply_a": "I cannot decide.",
        "reply_b": STRICT.format(0),
    }
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    for c in board["benchmarks"]["medfact_bench"]["comparisons"]:  # the McNemar counts are these lists' lengths
        assert (c["a_only_correct"], c["b_only_correct"]) == tuple(map(len, found[c["a"], c["b"]]))


@pytest.mark.browser
def test_leaderboard_in_a_real_browser(written):
    chromium = browser.chromium_or_skip()
    out = written[0]
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    dom = browser.dump_dom(out / "leaderboard.html", chromium)
    shown = {
        (attrs["data-run"], attrs["data-benchmark"]): (float(attrs["data-value"]), text)
        for attrs, text in browser.elements(dom, "headline")
    }
    expected = {
        (run_id, name): entry["estimate"]["value"]
        for name, bench in board["benchmarks"].items()
        for run_id, entry in bench["runs"].items()
    }
    assert {key: value for key, (value, _) in shown.items()} == expected
    assert shown["run-2", "medfact_bench"][1].startswith("1.000 [")
    holm = {(a["data-a"], a["data-b"]): float(a["data-value"]) for a, _ in browser.elements(dom, "holm")}
    assert holm == {(c["a"], c["b"]): c["holm_p_value"] for c in board["benchmarks"]["medfact_bench"]["comparisons"]}
    assert '<img src="x"' not in dom and "onerror=alert(1)&gt;" in dom  # the hostile name stayed text
    png = browser.screenshot(out / "leaderboard.html", out / "leaderboard.png", binary=chromium)
    data = png.read_bytes()
    assert data[:8] == browser.PNG_SIGNATURE and int.from_bytes(data[16:20], "big") == 1280
    assert int.from_bytes(data[20:24], "big") == 2000


def test_a_run_folder_not_in_utf8_and_a_lone_surrogate_are_written(tmp_path):
    # A folder name of bytes that are not UTF-8 (os.fsdecode gives lone surrogates) and a surrogate in model_args.
    odd = tmp_path / os.fsdecode(b"run-\xff\xfe")
    a = medfact_run(odd, A, model_name="m\udcff")
    b = medfact_run(tmp_path / "b", B, model_name="b")
    files = formats.write_leaderboard([a, b], tmp_path / "board")
    assert sorted(p.name for p in files) == [f"leaderboard.{ext}" for ext in ("csv", "html", "json", "md", "tex")] + [
        "leaderboard_discordant.jsonl",
        "methods.md",
    ]
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    assert board["runs"][0]["label"] == "m\udcff" and os.fsdecode(b"run-\xff\xfe") in board["runs"][0]["results_file"]
    assert "m\\udcff" in (tmp_path / "board" / "leaderboard.md").read_text(encoding="utf-8")


def test_the_page_shows_discordant_items_up_to_its_budget(tmp_path, monkeypatch):
    paths = [medfact_run(tmp_path / name, flags, model_name=name) for name, flags in (("a", A), ("b", B), ("c", C))]
    board, disagreements = lb.build(paths)
    page = formats.to_html(board, disagreements, tmp_path).decode()
    assert page.count('<details class="disagreements"') == 3 and "too many to show" not in page
    monkeypatch.setattr(formats.explorer, "PAGE_LIMIT", 1)  # no room for any pair's rows
    page = formats.to_html(board, disagreements, tmp_path).decode()
    assert page.count('<details class="disagreements"') == 0
    assert page.count("too many to show in this page: leaderboard_discordant.jsonl lists them") == 3
    assert "run-1 vs run-3: A right, B wrong: 2; B right, A wrong: 1; too many" in page


def test_a_leaderboard_built_from_a_script_read_from_stdin(tmp_path):
    # Runs are scored in worker processes; a caller whose main module cannot be re-imported (stdin, a notebook)
    # must still get its leaderboard.
    script = (
        "import sys\nfrom pathlib import Path\nsys.path.insert(0, sys.argv[1])\n"
        "from tests.hand_runs import A, B, C, medfact_run\nfrom lm_eval_tasks.utils import leaderboard as lb\n"
        "root = Path(sys.argv[2])\n"
        "paths = [medfact_run(root / n, f, model_name=n) for n, f in (('a', A), ('b', B), ('c', C))]\n"
        "print(len(lb.build(paths)[0]['runs']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-", str(REPO), str(tmp_path)], input=script, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "3"


def test_run_labels_name_only_what_tells_runs_apart():
    run = {"model_name": "org/m", "dtype": "float32", "chat_template_applied": True, "n_shot": {"t": 0}}
    runs = [
        {**run, "date": "2026-12-01T10:00:00+00:00"},
        {**run, "dtype": "bfloat16", "date": "2026-12-01T11:00:00+00:00"},
        {**run, "chat_template_applied": False, "date": "2026-12-01T12:00:00+00:00"},
        {**run, "model_name": "other", "date": "2026-12-01T13:00:00+00:00"},
    ]
    paths = [Path(f"/o/r{i}/results_x.json") for i in range(4)]
    # dtype and chat template tell the three runs of m apart: no date; "other" is alone, its name is enough.
    assert lb.run_labels(runs, paths) == [
        "m (float32, chat template)",
        "m (bfloat16, chat template)",
        "m (float32, no chat template)",
        "other",
    ]
    same = [{**run, "date": "2026-12-01T10:00:00+00:00"}, {**run, "date": "2026-12-01T11:00:00+00:00"}]
    assert lb.run_labels(same, paths[:2]) == ["m (2026-12-01T10:00:00+00:00)", "m (2026-12-01T11:00:00+00:00)"]
    assert lb.run_labels([run, run], paths[:2]) == ["m [r0/results_x]", "m [r1/results_x]"]


def test_copies_of_one_run_in_different_folders_get_the_shortest_path_that_tells_them_apart():
    run = {"model_name": "org/m", "dtype": "float32", "date": "2026-12-01T10:00:00+00:00"}
    paths = [Path(f"/runs/{top}/{middle}/run/results_x.json") for top, middle in (("a", "x"), ("b", "x"), ("c", "y"))]
    # run/results_x is every copy's; y tells c apart, only a and b tell the copies under x apart
    assert lb.run_labels([run, run, run], paths) == [
        "m [a/x/run/results_x]",
        "m [b/x/run/results_x]",
        "m [y/run/results_x]",
    ]
    # two results files in one folder: their folder and names, as ever
    one_folder = [Path("/runs/a/results_1.json"), Path("/runs/a/results_2.json")]
    assert lb.run_labels([run, run], one_folder) == ["m [a/results_1]", "m [a/results_2]"]


def test_equal_headlines_share_a_rank(tmp_path):
    # Two runs with no right answer (macro 0.000 each) and one better: ranks 1, 2, 2 (not 1, 2, 3).
    paths = [medfact_run(tmp_path / n, f, model_name=n) for n, f in (("a", "0000000"), ("b", "0000000"), ("c", A))]
    board = lb.build(paths)[0]
    bench = board["benchmarks"]["medfact_bench"]
    assert bench["ranks"] == {"run-3": 1, "run-1": 2, "run-2": 2}
    assert bench["ranking"][0] == "run-3"
    markdown = formats.to_markdown(board)
    assert "| 2 | a (run-1) | 0.000 [" in markdown and "| 2 | b (run-2) | 0.000 [" in markdown


# ----------------------------------------------------------------------------- each run's report, wherever it is


def _readme_runs(root):
    """Two runs as the README's flow writes them: ``--output_path out/NAME/run`` (lm-eval adds a model folder)."""
    return [
        medfact_run(root / "out" / name / "run" / "model", flags, model_name=name)
        for name, flags in (("a", A), ("b", B))
    ]


@pytest.mark.parametrize("relative", [True, False])
def test_a_report_beside_the_run_folder_is_found_from_relative_or_absolute_paths(tmp_path, monkeypatch, relative):
    from lm_eval_tasks.__main__ import main as cli

    _readme_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    base = Path() if relative else tmp_path
    for name in ("a", "b"):  # as the quickstart: report out/NAME/run --out out/NAME/report
        assert cli(["report", str(base / "out" / name / "run"), "--out", str(base / "out" / name / "report")]) == 0
    board_dir = base / "out" / "leaderboard"
    formats.write_leaderboard([base / "out" / "a" / "run", base / "out" / "b" / "run"], board_dir)
    board = json.loads((board_dir / "leaderboard.json").read_text(encoding="utf-8"))
    assert [run["report_folder"] for run in board["runs"]] == [str(tmp_path / "out" / n / "report") for n in "ab"]
    # and the page links each run's report relative to the page: ../a/report/report.html from out/leaderboard
    page = (board_dir / "leaderboard.html").read_text(encoding="utf-8")
    assert '"report":"../a/report/report.html"' in page and '"items":"../b/report/items_medfact_bench.jsonl"' in page


def test_each_place_a_report_is_written_is_found_and_another_runs_report_is_not(tmp_path):
    from lm_eval_tasks.__main__ import main as cli

    a, b = _readme_runs(tmp_path)
    run_a, run_b = a.parent.parent, b.parent.parent  # out/NAME/run
    assert cli(["report", str(run_a)]) == 0  # the default: report/ beside the results file
    assert cli(["report", str(run_b), "--each"]) == 0  # report_<timestamp>/ beside it
    board = lb.build([run_a, run_b])[0]
    assert [run["report_folder"] for run in board["runs"]] == [
        str(a.parent / "report"),
        str(b.parent / f"report_{STAMP}"),
    ]
    # run-2's report inside run-1's output folder: the files it read are not run-1's, so it is not run-1's report
    assert cli(["report", str(run_b), "--out", str(run_a / "report")]) == 0
    (a.parent / "report" / "report.json").unlink()
    assert [run["report_folder"] for run in lb.build([run_a])[0]["runs"]] == [None]
    # the same run's report there is found (report/ inside OUTPUT_PATH)
    assert cli(["report", str(run_a), "--out", str(run_a / "report")]) == 0
    assert [run["report_folder"] for run in lb.build([run_a])[0]["runs"]] == [str(run_a / "report")]


@pytest.mark.parametrize(
    "line, problem",
    [
        ('{"section": "s", "a": "run-1", "b": "run-2"}', "KeyError"),  # a pair before its runs
        ('{"section": "s", "run": "run-1", "fields": ["task"], "items": [["t", 1]]}', "ValueError"),
        ('{"section": "s", "run": "run-1", "fields": 3, "items": [[1]]}', "TypeError"),
        ("[1, 2]", "expected a JSON object"),
    ],
    ids=["pair-first", "short-fields", "fields-not-a-list", "not-an-object"],
)
def test_a_broken_discordant_file_is_a_data_error_naming_its_line(tmp_path, line, problem):
    run = '{"section": "s", "run": "run-0", "fields": ["task"], "items": [["t"]]}'
    path = tmp_path / lb.DISCORDANT_FILE
    path.write_text(run + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{re.escape(str(path))}.*line 2.*{problem}"):
        list(lb.read_discordant(path))


@pytest.mark.parametrize(
    "indices, problem",
    [
        ('{"a": [-1], "b": [0]}', "is not an item"),  # -1 would be the last item
        ('{"a": [true], "b": [0]}', "is not an item"),  # true would be item 1
        ('{"a": [1.0], "b": [1]}', "is not an item"),
        ('{"a": [2], "b": [2]}', "is not an item"),  # past the end
        ('{"a": [0], "b": [1]}', "name different items"),
        ('{"a": [0, 1], "b": [0]}', "one length"),
        ('{"a": 0, "b": 0}', "one length"),
    ],
    ids=["negative", "boolean", "float", "past-the-end", "different-items", "lengths", "not-lists"],
)
def test_discordant_indices_that_name_no_item_of_both_runs_are_refused(tmp_path, indices, problem):
    fields = '"fields": ["task", "item_id", "doc_id", "pred", "outcome"]'
    runs = [
        f'{{"section": "s", "run": "{run}", {fields}, "items": [["t", "x", 0, "A", 1], ["t", "y", 1, "B", 0]]}}'
        for run in ("run-1", "run-2")
    ]
    empty = '{"a": [], "b": []}'
    pair = f'{{"section": "s", "a": "run-1", "b": "run-2", "a_only_correct": {indices}, "b_only_correct": {empty}}}'
    path = tmp_path / lb.DISCORDANT_FILE
    path.write_text("\n".join([*runs, pair]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{re.escape(str(path))}.*line 3.*{problem}"):
        list(lb.read_discordant(path))
    path.write_text("\n".join([*runs, pair.replace(indices, '{"a": [0, 1], "b": [0, 1]}')]) + "\n", encoding="utf-8")
    (_, _, read), *_ = [(None, None, line) for line in lb.read_discordant(path)]
    assert [item["item_id"] for item in read["a_only_correct"]] == ["x", "y"]


# A model name (the label is what follows its last '/'): a link, an image, emphasis, code, a bare address, HTML.
HOSTILE_MARKDOWN = "[click](javascript:evil) ![i](evil.png) *b* `c` www.evil.example https:evil <b>h<b>"


def test_run_texts_render_as_text_in_every_markdown_file(tmp_path):
    # A CommonMark renderer reads each file: a model name makes no link, image, emphasis, code or HTML.
    from markdown_it import MarkdownIt

    from lm_eval_tasks.__main__ import main as cli

    a = medfact_run(tmp_path / "a", A, model_name=HOSTILE_MARKDOWN)
    b = medfact_run(tmp_path / "b", B, model_name="b")
    formats.write_leaderboard([a, b], tmp_path / "board")
    rows = {"medfact_bench_scifact": [(gold, "I cannot decide.") for gold in GOLDS["medfact_bench_scifact"]]}
    c = write_run(tmp_path / "c", rows, model_args={"pretrained": HOSTILE_MARKDOWN})
    assert cli(["report", str(c), "--out", str(tmp_path / "report")]) == 0
    renderer = MarkdownIt("commonmark")
    for path in (
        tmp_path / "board" / "leaderboard.md",
        tmp_path / "board" / "methods.md",
        tmp_path / "report" / "report.md",
    ):
        source = path.read_text(encoding="utf-8")
        assert "evil" in source, path
        rendered = renderer.render(source)
        assert "[click](javascript:evil)" in rendered, path
        assert not re.search(r"<(a|img)\b|<(b|em|code)>(h|b|c)<", rendered), path
        assert "www.evil" not in source, path  # escaped: no bare link for GitHub either


def test_texts_kept_on_disk_give_the_same_files_and_are_read_back_only_for_the_rows_shown(tmp_path, monkeypatch):
    paths = [medfact_run(tmp_path / name, flags, model_name=name) for name, flags in (("a", A), ("b", B), ("c", C))]
    board, disagreements = lb.build(paths)
    held = formats.render(board, disagreements, tmp_path)
    spool = tmp_path / "spool"
    spool.mkdir()
    board_spooled, checked = lb.build(paths, spool=spool)
    assert board_spooled == board
    for (_, id_a, id_b), (sa, sb, _) in checked.items():
        assert sa.spooled is not None and all(item.prompt is None and item.reply is None for item in sa.items)
        kept = disagreements[("medfact_bench", id_a, id_b)][0]
        assert [sa.item(i) for i in range(len(sa.items))] == list(kept.items)
    board_spooled, spooled = lb.build(paths, spool=spool)  # its sections have read nothing back yet
    read = []
    original = SpooledTexts.texts
    monkeypatch.setattr(
        SpooledTexts, "texts", lambda self, position: read.append((self.path, position)) or original(self, position)
    )
    on_disk = formats.render(board_spooled, spooled, tmp_path)
    assert sorted(held) == sorted(on_disk)
    for name, content in held.items():
        assert b"".join([content] if isinstance(content, bytes) else content) == b"".join(
            [on_disk[name]] if isinstance(on_disk[name], bytes) else on_disk[name]
        ), name
    # Only the texts of the discordant items the page shows are read back, each once though it is shown in each pair
    # it is discordant in (hand-worked from A, B and C: 3 + 3 + 4 discordant pairs of items over the three pairs of
    # runs, items 0, 2, 3, 4 and 5 of each run: 15 of 21).
    discordant = set()
    for sa, sb, found in spooled.values():
        for kind in (found.a_only_correct, found.b_only_correct):
            discordant |= {(sa.spooled.path, i) for i in kind.a.tolist()} | {
                (sb.spooled.path, j) for j in kind.b.tolist()
            }
    assert len(read) == len(set(read)) and set(read) == discordant and len(discordant) == 15


@pytest.mark.parametrize("per_worker", [2, 1000], ids=["in-worker-processes", "here"])
def test_each_pairs_detectable_difference_is_the_one_power_gives(monkeypatch, per_worker):
    # The leaderboard fills its pairs' MDDs once every run is scored, in worker processes when there are many.
    from lm_eval_tasks.utils import power

    monkeypatch.setattr(lb, "_DETECTABLE_PER_WORKER", per_worker)
    monkeypatch.setattr(lb, "usable_cores", lambda: 2)  # a test worker is a one-core machine (tests/conftest.py)
    comparisons = [
        {"n_paired_items": 200 + i, "a_only_correct": 10 + i % 7, "b_only_correct": 3 * i % 11, "detectable": None}
        for i in range(9)
    ] + [{"n_paired_items": 0, "a_only_correct": None, "b_only_correct": None, "detectable": None}]
    lb._fill_detectable(comparisons)
    for compared in comparisons[:-1]:
        expected = power.detectable(compared["n_paired_items"], compared["a_only_correct"], compared["b_only_correct"])
        assert compared["detectable"] == expected and expected["minimum_detectable_difference"] is not None
    assert comparisons[-1]["detectable"] is None


def test_the_process_that_scores_run_after_run_keeps_their_resample_sets_and_masked_texts_then_lets_go(monkeypatch):
    from lm_eval_tasks.utils import redaction, stats

    monkeypatch.setattr(lb, "find_all_results", lambda path: [Path(path)])
    monkeypatch.setattr(lb, "score_or_read", lambda path, **_: (path.name, stats._DRAWN_BYTES, redaction._remembered))
    before = (stats._DRAWN_BYTES, redaction._remembered)
    assert redaction._remembered == 0  # a report masks each text once: it remembers none
    kept = list(lb.score_runs(["/runs/a", "/runs/b"], workers=1))
    assert kept == [(name, lb._RUN_RESAMPLES_BYTES, redaction.RUNS_TEXTS) for name in ("a", "b")]
    assert (stats._DRAWN_BYTES, redaction._remembered) == before
