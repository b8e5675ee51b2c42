import json
import os
import stat
import subprocess
import sys

import pytest
from lm_eval_tasks.utils import report as report_mod
from lm_eval_tasks.utils import results, section, walk
from lm_eval_tasks.utils.comparison import compare_runs
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.redaction import redact
from lm_eval_tasks.utils.runs import Run, find_results, load_run
from markupsafe import escape

from lm_eval_tasks.__main__ import main as cli
from tests.conftest import build_report
from tests.hand_runs import HEALTHVER, SCIFACT, STAMP, STRICT, bench_item, write_run


@pytest.fixture
def run_dir(tmp_path):
    return write_run(
        tmp_path / "run" / "model",
        {"medfact_bench_scifact": SCIFACT, "medfact_bench_healthver": HEALTHVER},
        n_original={"medfact_bench_scifact": 340, "medfact_bench_healthver": 1823},
    )


def test_hand_worked_medfact_report(run_dir):
    bench = build_report(run_dir.parent)["benchmarks"]["medfact_bench"]
    # scifact: SUPPORT ok, NEI ok, CONTRADICT->SUPPORT, SUPPORT->INVALID: 2/4
    # healthver: NEI->CONTRADICT, CONTRADICT ok, CONTRADICT ok: 2/3
    assert bench["n_items"] == 7 and bench["n_invalid"] == 1
    assert bench["accuracy_micro"]["value"] == pytest.approx(4 / 7)
    assert bench["accuracy_macro"]["value"] == pytest.approx((2 / 4 + 2 / 3) / 2)
    assert bench["components"]["scifact"]["accuracy"]["value"] == 0.5
    assert bench["components"]["healthver"]["accuracy"]["value"] == pytest.approx(2 / 3)
    assert bench["rates"]["parseable_score"]["value"] == pytest.approx(6 / 7)
    assert bench["rates"]["strict_format"]["value"] == pytest.approx(5 / 7)
    assert bench["confusion_matrix"] == {
        "gold": ["SUPPORT", "NEI", "CONTRADICT"],
        "predicted": ["SUPPORT", "NEI", "CONTRADICT", "INVALID"],
        "counts": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 0, 2, 0]],
    }
    assert bench["per_class"]["SUPPORT"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    assert bench["macro_f1"]["value"] == pytest.approx((0.5 + 2 / 3 + 2 / 3) / 3)
    for key in ("accuracy_micro", "accuracy_macro", "macro_f1"):
        assert bench[key]["low"] <= bench[key]["value"] <= bench[key]["high"]
    assert bench["coverage"]["scifact"] == {"expected": 340, "loaded": 340, "scored": 4, "complete": False}
    assert bench["coverage"]["healthver"] == {"expected": 903, "loaded": 1823, "scored": 3, "complete": False}
    assert bench["coverage"]["medaesqa"] == {"expected": 9106, "loaded": None, "scored": 0, "complete": False}
    assert bench["full_coverage"] is False and bench["paper_comparable"]["value"] is None


def test_cli_writes_json_markdown_and_png(run_dir, tmp_path, capsys):
    assert cli(["report", str(run_dir), "--out", str(tmp_path / "rep")]) == 0
    files = sorted(p.name for p in (tmp_path / "rep").iterdir())
    assert files == [
        report_mod.MANIFEST,
        "confusion_medfact_bench.png",
        "items_medfact_bench.jsonl",
        "report.html",
        "report.json",
        "report.md",
        "scored_run.json",
    ]
    saved = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))
    assert saved["schema_version"] == results.SCHEMA_VERSION
    assert saved["bootstrap"]["n_resamples"] == 1000
    assert (tmp_path / "rep" / "confusion_medfact_bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "| scifact | 340 | 340 | 4 | no | 0.500 [" in markdown
    assert "partial coverage" in capsys.readouterr().out


def test_bad_samples_file_leaves_no_report(run_dir, tmp_path):
    samples = run_dir / f"samples_medfact_bench_healthver_{STAMP}.jsonl"
    samples.write_text(samples.read_text(encoding="utf-8") + "{broken\n", encoding="utf-8")
    out = tmp_path / "rep"
    with pytest.raises(DataError, match=r"samples_medfact_bench_healthver_.*\.jsonl, line 4: invalid JSON"):
        report_mod.write_report(run_dir, out)
    assert not out.exists() or list(out.iterdir()) == []
    assert cli(["report", str(run_dir), "--out", str(out)]) == 1


def test_sample_that_cannot_be_scored_is_named(run_dir):
    samples = run_dir / f"samples_medfact_bench_scifact_{STAMP}.jsonl"
    rows = samples.read_text(encoding="utf-8").splitlines()
    broken = json.loads(rows[1])
    del broken["doc"]["label"]
    rows[1] = json.dumps(broken)
    samples.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"samples_medfact_bench_scifact_.*\.jsonl, line 2: cannot score"):
        build_report(run_dir)


def test_missing_samples_file_asks_for_log_samples(run_dir):
    (run_dir / f"samples_medfact_bench_scifact_{STAMP}.jsonl").unlink()
    with pytest.raises(DataError, match="--log_samples"):
        build_report(run_dir)


def test_full_coverage_gives_the_paper_comparable_number(tmp_path):
    from dataclasses import replace

    from lm_eval_tasks.utils.medfact_bench.report_spec import REPORT_SPECS

    spec = replace(REPORT_SPECS[0], expected_counts={"scifact": 4, "healthver": 3})
    run = load_run(write_run(tmp_path, {"medfact_bench_scifact": SCIFACT, "medfact_bench_healthver": HEALTHVER}))
    walked = walk.walk_samples(run, spec)
    bench = section.score_section(walked.items, spec, run, walk=walked).numbers
    assert bench["full_coverage"] is True
    assert bench["paper_comparable"]["value"] == pytest.approx((2 / 4 + 2 / 3) / 2)


def test_credentials_never_reach_the_report(tmp_path):
    folder = write_run(
        tmp_path,
        {"medfact_bench_scifact": SCIFACT},
        model_args={"model": "gpt", "api_key": "sk-secret", "base_url": "http://x"},
    )
    text = json.dumps(build_report(folder))
    assert "sk-secret" not in text and '"api_key": "***"' in text
    assert redact("model=x,api_key=sk-1,header=Bearer y") == "model=x,api_key=***,header=***"
    assert redact("auth_token=t,tokenizer_backend=none") == "auth_token=***,tokenizer_backend=none"


@pytest.mark.parametrize(
    "logged, applied",
    [
        ({"chat_template": "{% for m in messages %}", "chat_template_sha": "ab"}, True),
        ({"chat_template": "", "chat_template_sha": None}, True),  # chat APIs
        ({"chat_template": None, "chat_template_sha": None}, False),
    ],
)
def test_chat_template_use_is_read_for_every_backend(tmp_path, logged, applied):
    folder = write_run(tmp_path, {"medfact_bench_scifact": SCIFACT})
    results_file = next(folder.glob("results_*.json"))
    results = json.loads(results_file.read_text(encoding="utf-8"))
    results.update(logged)
    results_file.write_text(json.dumps(results), encoding="utf-8")
    assert build_report(folder)["run"]["chat_template_applied"] is applied


def test_paired_comparison_of_two_runs(tmp_path):
    better = [(gold, STRICT.format({"SUPPORT": 2, "NEI": 0, "CONTRADICT": -2}[gold])) for gold, _ in SCIFACT]
    a = write_run(tmp_path / "a", {"medfact_bench_scifact": better})
    b = write_run(tmp_path / "b", {"medfact_bench_scifact": SCIFACT})
    result = compare_runs(results.score_path(a), results.score_path(b))["benchmarks"]["medfact_bench"]
    assert result["n_paired_items"] == 4 and result["comparable"] and result["metric"] == "accuracy_macro"
    assert result["difference"]["value"] == pytest.approx(0.5)  # 4/4 vs 2/4 (one component: macro = micro)
    assert (result["a_only_correct"], result["b_only_correct"]) == (2, 0)
    # Two discordant items: the paired bootstrap would give p about 2 * (2/4)^4 = 1/8 from resamples of 4 items; the
    # exact McNemar test on the 2 discordant items gives 2 * (1/2)^2 = 1/2, and the difference no interval.
    assert result["test"].startswith("exact McNemar") and result["p_value"] == pytest.approx(0.5)
    assert result["difference"]["low"] is None and "2 discordant items" in result["interval_reason"]


def test_accuracy_over_answered_items_with_component_groups(tmp_path):
    """The generic options a benchmark such as MillerQA uses, on hand-worked items."""
    from lm_eval_tasks.utils.scoring import INVALID, AccuracyOver, BenchmarkSpec, Report

    def item(component, i, pred, correct):
        return bench_item(component, i, pred, correct, details={"n": i})

    # a: 2 of 3 answered, 1 correct; b: 4 of 4 answered, 3 correct; c: nothing answered
    items = (
        [item("a", 0, "1", 1.0), item("a", 1, "0", 0.0), item("a", 2, INVALID, 0.0)]
        + [item("b", i, "1" if i < 3 else "2", float(i < 3)) for i in range(4)]
        + [item("c", 0, INVALID, 0.0)]
    )
    spec = BenchmarkSpec(
        name="bench",
        title="Bench",
        score_sample=None,
        expected_counts={"a": 3, "b": 4, "c": 1},
        task_names=frozenset({"bench_a", "bench_b", "bench_c"}),
        report=Report(
            accuracy_over=AccuracyOver.ANSWERED,
            component_groups={"first two": ("a", "b"), "only c": ("c",), "absent": ("z",)},
        ),
    )
    run = Run(tmp_path / "results.json", {"n-samples": {}}, {}, {})
    bench = section.score_section(items, spec, run).numbers
    assert bench["accuracy_micro"]["value"] == pytest.approx(4 / 6)  # pooled over the 6 answered items
    assert bench["accuracy_macro"]["value"] == pytest.approx((1 / 2 + 3 / 4) / 2)  # c has no answered item
    assert bench["accuracy_all_micro"]["value"] == pytest.approx(4 / 8)
    assert bench["accuracy_all_macro"]["value"] == pytest.approx((1 / 3 + 3 / 4 + 0) / 3)
    assert bench["answered"]["value"] == pytest.approx(6 / 8)
    assert bench["components"]["a"]["accuracy"]["value"] == 0.5
    assert bench["components"]["a"]["answered"]["value"] == pytest.approx(2 / 3)
    assert bench["components"]["c"]["accuracy"] is None and bench["components"]["c"]["accuracy_all"]["value"] == 0.0
    groups = bench["component_groups"]
    assert groups["first two"]["accuracy_macro"]["value"] == pytest.approx(0.625) and groups["first two"]["n"] == 7
    assert groups["only c"]["accuracy_micro"] is None and groups["only c"]["answered"]["value"] == 0.0
    assert "absent" not in groups
    assert spec.owns("bench_a") and not spec.owns("bench_z")
    markdown = report_mod.to_markdown(
        {
            "run": {
                "model": "m",
                "model_args": {},
                "chat_template_applied": True,
                "limit": None,
                "lm_eval_version": "0.4.13",
                "results_file": "r",
            },
            "bootstrap": {"n_resamples": 1000, "seed": 1234},
            "benchmarks": {"bench": bench},
            "unreported_tasks": [],
        }
    )
    assert "| c | 1 | - | 1 | yes | n/a | 0.000 [0.000, 0.975] | 0.000 [0.000, 0.975] |" in markdown  # exact: 0 of 1
    assert "| first two | a, b | 7 | 0.625 [" in markdown


def test_medfact_report_has_no_answered_only_fields(run_dir):
    bench = build_report(run_dir.parent)["benchmarks"]["medfact_bench"]
    assert bench["accuracy_over"] == "all"
    assert "accuracy_all_micro" not in bench and "answered" not in bench and "component_groups" not in bench
    assert set(bench["components"]["scifact"]) == {"n", "small", "accuracy", "parseable_score", "strict_format"}


# ----------------------------------------------------------------------------- hostile run folders


def test_a_line_logged_twice_counts_once_and_the_report_says_so(run_dir):
    samples = run_dir / f"samples_medfact_bench_healthver_{STAMP}.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    samples.write_text("".join(lines + lines[:1]), encoding="utf-8")
    report = build_report(run_dir)
    bench = report["benchmarks"]["medfact_bench"]
    assert bench["n_items"] == 7 and bench["components"]["healthver"]["n"] == 3
    assert report["run"]["repeated_sample_lines"] == {"medfact_bench_healthver": 1}
    assert "logged twice, identically, and counted once: medfact_bench_healthver 1" in report_mod.to_markdown(report)


def test_two_different_samples_for_one_doc_are_an_error_naming_both_lines(run_dir):
    samples = run_dir / f"samples_medfact_bench_healthver_{STAMP}.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    changed = json.loads(lines[0])
    changed["filtered_resps"] = ["<score>2</score>"]
    samples.write_text("".join(lines) + json.dumps(changed) + "\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"lines 1 and 4: two different samples for task 'medfact_bench_healthver' doc_id 0"
    ):
        build_report(run_dir)


def test_a_line_logged_twice_in_another_layout_is_the_same_sample_counted_once(run_dir):
    # The same object with its keys in another order and other spacing: the earlier line is read again and compared.
    samples = run_dir / f"samples_medfact_bench_healthver_{STAMP}.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    again = json.dumps(dict(reversed(list(json.loads(lines[1]).items()))), indent=None, separators=(" ,", " : "))
    samples.write_text("".join(lines) + again + "\n", encoding="utf-8")
    report = build_report(run_dir)
    assert report["benchmarks"]["medfact_bench"]["n_items"] == 7
    assert report["run"]["repeated_sample_lines"] == {"medfact_bench_healthver": 1}


def test_the_samples_of_another_filter_are_never_scored_nor_compared(run_dir):
    # lm-eval logs one line per filter: the "none" filter's lines are read; another filter's lines, even ones that
    # could not be scored or that contradict each other, change nothing.
    samples = run_dir / f"samples_medfact_bench_healthver_{STAMP}.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    before = build_report(run_dir)
    other = [json.loads(line) | {"filter": "strict"} for line in lines]
    unscorable = other[0] | {"doc": {}}  # no gold label: scoring it fails
    contradicting = other[0] | {"filtered_resps": ["<score>2</score>"]}
    samples.write_text(
        "".join(lines) + "".join(json.dumps(row) + "\n" for row in (unscorable, contradicting, *other[1:])),
        encoding="utf-8",
    )
    after = build_report(run_dir)
    assert after["benchmarks"] == before["benchmarks"] and after["run"]["repeated_sample_lines"] == {}
    samples.write_text("".join(json.dumps(row) + "\n" for row in (unscorable, *other[1:])), encoding="utf-8")
    with pytest.raises(DataError, match=rf"samples_medfact_bench_healthver_{STAMP}.jsonl, line 1: cannot score"):
        build_report(run_dir)  # the only filter left is read: its unscorable line is named


def test_a_run_read_and_walked_in_one_pass_scores_as_the_run_held_in_memory(run_dir):
    from lm_eval_tasks.utils.medfact_bench.report_spec import REPORT_SPECS

    samples = run_dir / f"samples_medfact_bench_healthver_{STAMP}.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    samples.write_text("".join(lines + lines[:1]), encoding="utf-8")
    streamed = results.score_path(run_dir)
    held = results.score(load_run(run_dir))
    assert streamed.report() == held.report() and streamed.item_details() == held.item_details()
    run, walks, counts = walk.read_walked(run_dir, REPORT_SPECS)
    assert run.samples == {} and counts == {"medfact_bench_scifact": 4, "medfact_bench_healthver": 3}
    assert [len(one.items) for one in walks] == [7] and len(walks[0].replies) == 7


def test_a_run_is_split_after_this_processs_share_of_its_bytes_at_a_line_start(tmp_path):
    from lm_eval_tasks.utils import runs
    from lm_eval_tasks.utils.runs import _halves, _line_start

    path = tmp_path / "s.jsonl"
    path.write_bytes(b"aaaa\nbb\n\ncccccc\n")  # lines start at 0, 5, 8, 9; 16 bytes
    assert [_line_start(path, offset) for offset in (0, 1, 5, 6, 8, 9, 10, 16)] == [
        (0, 0),
        (5, 1),
        (5, 1),
        (8, 2),
        (8, 2),
        (9, 3),
        (16, 4),
        (16, 4),
    ]
    other = tmp_path / "t.jsonl"
    other.write_bytes(b"x\n" * 32)  # lines start at every even byte
    files = {"s": path, "t": other}
    assert runs.OWN_SHARE == 0.52
    # 52% of 32 bytes: 16, the end of s
    assert _halves(files, {"s": 16, "t": 16}) == ([("s", None)], [("t", 0, 0)])
    # 52% of 80 bytes: 41, byte 25 of t, whose next line starts at 26 after 13 lines (half the bytes: 24, 12)
    assert _halves(files, {"s": 16, "t": 64}) == ([("s", None), ("t", 26)], [("t", 26, 13)])
    # 52% of 20 bytes: 10, byte 10 of s, whose next line starts at 16
    assert _halves(files, {"s": 16, "t": 4}) == ([("s", 16)], [("s", 16, 4), ("t", 0, 0)])


@pytest.mark.parametrize("cores", [1, 2])
def test_a_run_read_in_two_processes_scores_as_one_process_reads_it(run_dir, monkeypatch, cores):
    # healthver's lines twice (one run read in halves: the repeats in the second) and a third, contradicting copy of
    # its first line last: the error names its first line and that one, as one process does.
    from lm_eval_tasks.utils import runs

    monkeypatch.setattr(runs, "SPLIT_BYTES", 0)
    monkeypatch.setattr(runs, "spare_cores", lambda: cores)
    samples = run_dir / f"samples_medfact_bench_healthver_{STAMP}.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    samples.write_text("".join(lines * 6), encoding="utf-8")
    streamed = results.score_path(run_dir)
    held = results.score(load_run(run_dir))  # read without a reader: by this process alone
    assert streamed.report() == held.report() and streamed.item_details() == held.item_details()
    assert streamed.report()["run"]["repeated_sample_lines"] == {"medfact_bench_healthver": 15}
    changed = json.loads(lines[0]) | {"filtered_resps": ["<score>2</score>"]}
    samples.write_text("".join(lines * 6) + json.dumps(changed) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"lines 1 and 19: two different samples"):
        results.score_path(run_dir)
    samples.write_text("".join(lines * 6) + "{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"healthver_{STAMP}.jsonl, line 19: invalid JSON"):
        results.score_path(run_dir)
    unscorable = json.loads(lines[2]) | {"doc": {}}  # its third doc, logged last, without its gold label
    samples.write_text("".join(lines[:2] * 6) + json.dumps(unscorable) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"healthver_{STAMP}.jsonl, line 13: cannot score this sample"):
        results.score_path(run_dir)


def test_a_folder_of_several_runs_is_refused_with_their_list_or_reported_each(tmp_path, capsys):
    tasks = {"medfact_bench_scifact": SCIFACT}
    first = write_run(tmp_path / "out" / "model_a", tasks)
    second = write_run(tmp_path / "out" / "model_b", {"medfact_bench_scifact": SCIFACT[:2]})
    with pytest.raises(DataError, match="holds 2 runs") as refused:
        build_report(tmp_path / "out")
    assert str(first / f"results_{STAMP}.json") in str(refused.value) and "--each" in str(refused.value)
    assert cli(["report", str(tmp_path / "out")]) == 1
    assert cli(["report", str(tmp_path / "out"), "--each"]) == 0
    for folder, n in ((first, 4), (second, 2)):
        saved = json.loads((folder / f"report_{STAMP}" / "report.json").read_text(encoding="utf-8"))
        assert saved["benchmarks"]["medfact_bench"]["n_items"] == n
    assert capsys.readouterr().out.count("medfact_bench: accuracy_macro") == 2


def test_the_command_starts_the_first_reports_drawer_before_reading_and_each_later_run_gets_its_own(
    tmp_path, monkeypatch
):
    # `report` starts the first run's drawing process before the commands' imports (a core waits there otherwise);
    # with --each every later run starts its own once it is read. Each run's figures go to its own drawer, and each
    # drawer's process is ended.
    from lm_eval_tasks.utils import plots

    first = write_run(tmp_path / "out" / "model_a", {"medfact_bench_scifact": SCIFACT})
    second = write_run(tmp_path / "out" / "model_b", {"medfact_bench_scifact": SCIFACT[:2]})
    events = []

    class Recorded(plots.Drawer):
        def __init__(self):
            events.append("started")
            self.number = events.count("started")
            super().__init__()

        def draw(self, figures):
            events.append((self.number, sorted(figures)))
            super().draw(figures)

        def wait(self):
            events.append((self.number, "ended"))
            return super().wait()

    reading = results.score_path
    monkeypatch.setattr(plots, "usable_cores", lambda: 2)
    monkeypatch.setattr(plots, "Drawer", Recorded)
    monkeypatch.setattr(report_mod, "score_path", lambda *args: events.append("read") or reading(*args))
    assert cli(["report", str(tmp_path / "out"), "--each"]) == 0
    figures = ["components_medfact_bench", "confusion_medfact_bench.png"]
    # (a section's figures are sent as it is scored, and the whole report's once it is made: none twice to be drawn)
    assert [event for n, event in enumerate(events) if event not in events[:n]] == [
        "started",
        "read",
        (1, figures),
        (1, "ended"),
        (2, figures),
        (2, "ended"),
    ]
    assert events.count("started") == events.count("read") == 2 and events.index("started", 1) > events.index("read", 3)
    for folder in (first, second):
        assert (folder / f"report_{STAMP}" / "confusion_medfact_bench.png").read_bytes().startswith(b"\x89PNG")


def test_an_empty_samples_file_is_named_as_empty(run_dir):
    (run_dir / f"samples_medfact_bench_healthver_{STAMP}.jsonl").write_text("", encoding="utf-8")
    results_file = run_dir / f"results_{STAMP}.json"
    results = json.loads(results_file.read_text(encoding="utf-8"))
    results["n-samples"]["medfact_bench_healthver"]["effective"] = 0  # as lm-eval records a task it evaluated none of
    results_file.write_text(json.dumps(results), encoding="utf-8")
    report = build_report(run_dir)
    assert report["empty_tasks"] == ["medfact_bench_healthver"] and report["unreported_tasks"] == []
    assert "samples file is empty (nothing to score): medfact_bench_healthver" in report_mod.to_markdown(report)


def test_a_lone_surrogate_reaches_the_files_as_an_escape(tmp_path):
    folder = write_run(
        tmp_path / "run",
        {"medfact_bench_scifact": [("SUPPORT", "\ud800<score>1</score>")]},
        model_args={"pretrained": "m\udcff"},
    )
    out = tmp_path / "rep"
    assert cli(["report", str(folder), "--out", str(out)]) == 0
    saved = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert saved["run"]["model_args"] == {"pretrained": "m\udcff"}
    assert "m\\udcff" in (out / "report.md").read_text(encoding="utf-8")


def test_the_report_folder_holds_exactly_the_current_report(run_dir, tmp_path):
    out = tmp_path / "rep"
    out.mkdir()
    # An earlier report of other sections (its manifest names what it wrote), then another command's output.
    (out / "items_millerqa.jsonl").write_text("{}\n", encoding="utf-8")
    (out / "confusion_pubmedqa_atlas.png").write_bytes(b"old")
    (out / report_mod.MANIFEST).write_text('["confusion_pubmedqa_atlas.png", "items_millerqa.jsonl"]')
    (out / "explanations.json").write_text("{}", encoding="utf-8")  # another command's output stays
    report_mod.write_report(run_dir, out)
    assert sorted(p.name for p in out.iterdir()) == [
        report_mod.MANIFEST,
        "confusion_medfact_bench.png",
        "explanations.json",
        "items_medfact_bench.jsonl",
        "report.html",
        "report.json",
        "report.md",
        "scored_run.json",
    ]


def test_a_folder_the_report_did_not_write_is_refused_and_left_as_it_was(run_dir, tmp_path):
    # A user's folder given as --out, and a downloaded run whose report/ links to one of the user's folders.
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("report.md", "items_notes.jsonl", "confusion_x.png"):
        (mine / name).write_text("the user's own", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in mine.iterdir()}
    with pytest.raises(DataError, match="holds files no report wrote"):
        report_mod.write_report(run_dir, mine)
    model_folder = find_results(run_dir).parent
    (model_folder / "report").symlink_to(mine, target_is_directory=True)
    try:
        with pytest.raises(DataError, match="a symbolic link"):
            report_mod.write_report(run_dir)
    finally:
        (model_folder / "report").unlink()
    assert {p.name: p.read_bytes() for p in mine.iterdir()} == before
    # A manifest naming a file outside the folder is refused, never followed.
    (mine / report_mod.MANIFEST).write_text('["../outside.txt"]')
    with pytest.raises(DataError, match="not a list of file names"):
        report_mod.write_report(run_dir, mine)


def test_report_files_follow_the_umask(run_dir, tmp_path):
    old = os.umask(0o027)
    try:
        _, files = report_mod.write_report(run_dir, tmp_path / "rep")
    finally:
        os.umask(old)
    assert {stat.S_IMODE(path.stat().st_mode) for path in files} == {0o640}


def test_report_md_carries_no_raw_html_from_the_run(tmp_path):
    folder = write_run(
        tmp_path / "run",
        {"medfact_bench_scifact": SCIFACT},
        model_args={"pretrained": "<script>alert(1)</script>", "note": "<img src=x onerror=alert(1)>"},
    )
    assert cli(["report", str(folder), "--out", str(tmp_path / "rep")]) == 0
    markdown = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "<script" not in markdown and "<img" not in markdown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown and "&quot;" not in markdown


def test_a_full_disk_is_one_line_from_the_command(run_dir, tmp_path, monkeypatch, capsys):
    from tests.faults import full_disk

    out = tmp_path / "rep"
    full_disk(monkeypatch)
    assert cli(["report", str(run_dir), "--out", str(out)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith(f"error: {out / 'report.json'}: cannot write (the disk is full)")
    assert list(out.iterdir()) == []


def test_each_never_writes_two_runs_into_one_folder(tmp_path, capsys):
    # Same model folder name and timestamp in two places: the old --each --out wrote both to out/model_<stamp>.
    first = write_run(tmp_path / "runs" / "a" / "model", {"medfact_bench_scifact": SCIFACT})
    second = write_run(tmp_path / "runs" / "b" / "model", {"medfact_bench_scifact": SCIFACT[:2]})
    unique = write_run(tmp_path / "runs" / "c" / "other", {"medfact_bench_scifact": SCIFACT[:3]})
    out = tmp_path / "reports"
    assert cli(["report", str(tmp_path / "runs"), "--each", "--out", str(out)]) == 0
    folders = sorted(out.iterdir())
    assert len(folders) == 3
    by_results = {
        json.loads((folder / "report.json").read_text(encoding="utf-8"))["run"]["results_file"]: folder
        for folder in folders
    }
    assert set(by_results) == {str(run / f"results_{STAMP}.json") for run in (first, second, unique)}
    assert by_results[str(unique / f"results_{STAMP}.json")].name == f"other_{STAMP}"
    for run in (first, second):
        assert by_results[str(run / f"results_{STAMP}.json")].name.startswith(f"model_{STAMP}_")


def _hostile(kind, path):
    """Put a file that cannot be read at ``path``."""
    if kind == "deep nesting":
        path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    elif kind == "5,001-digit integer":
        path.write_text('{"configs": {}, "x": ' + "9" * 5_001 + "}\n", encoding="utf-8")
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()


UNREADABLE = {
    "deep nesting": "invalid JSON (nested deeper than can be read)",
    "5,001-digit integer": "invalid JSON (Exceeds the limit (4300 digits) for integer string conversion",
    "FIFO": "a named pipe (FIFO), not a file that can be read",
    "link to /dev/zero": "a character device, not a file that can be read",
    "directory": "a directory, not a file that can be read",
}


def _one_line_error(tmp_path, path, argument, expected):
    # A subprocess with a timeout: a reader that blocks (a FIFO) must fail the test, not hang the suite.
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks", "report", str(argument), "--out", str(tmp_path / "rep")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {path}"), done.stderr[-2000:]
    assert expected in done.stderr
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("kind", list(UNREADABLE))
def test_a_results_file_that_cannot_be_read_is_one_line_naming_it(tmp_path, kind):
    folder = tmp_path / "run" / "model"
    folder.mkdir(parents=True)
    path = folder / f"results_{STAMP}.json"
    _hostile(kind, path)
    _one_line_error(tmp_path, path, tmp_path / "run", UNREADABLE[kind])


@pytest.mark.parametrize("kind", list(UNREADABLE))
def test_a_samples_file_that_cannot_be_read_is_one_line_naming_it(tmp_path, kind):
    folder = write_run(tmp_path / "run" / "model", {"medfact_bench_scifact": SCIFACT})
    path = folder / f"samples_medfact_bench_scifact_{STAMP}.jsonl"
    path.unlink()
    _hostile(kind, path)
    _one_line_error(tmp_path, path, folder, UNREADABLE[kind].replace("invalid JSON", "line 1: invalid JSON"))


def test_a_run_on_the_demo_labels_says_so_next_to_the_number(demo_data_dir, tmp_path):
    from lm_eval_tasks.utils.medfact_bench import demo_label_note

    from tests.runs import evaluated_run

    folder = evaluated_run(tmp_path / "run", demo_data_dir, ["medfact_bench_scifact"], limit=3)
    assert cli(["report", str(folder), "--out", str(tmp_path / "rep")]) == 0
    note = demo_label_note({"label_source": "medv1_l3b_prediction"})
    saved = json.loads((tmp_path / "rep" / "report.json").read_text(encoding="utf-8"))["benchmarks"]["medfact_bench"]
    assert saved["caveats"] == [note] and note in saved["paper_comparable"]["reasons"]
    markdown = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    headline = markdown.index("**accuracy_macro**")
    assert markdown.index(f"caveat: {note}") - headline < 400  # beside the number, not at the end
    page = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert f'class="caveat" data-benchmark="medfact_bench">caveat: {escape(note)}' in page


def _hang(figures):
    import time

    time.sleep(3600)


def test_a_figure_process_that_hangs_costs_the_report_its_deadline_only(run_dir, tmp_path, monkeypatch, capsys):
    import time

    from lm_eval_tasks.utils import plots

    monkeypatch.setattr(plots, "usable_cores", lambda: 1)  # figures drawn in this process
    _, in_place = report_mod.write_report(run_dir, tmp_path / "in_place")
    monkeypatch.setattr(plots, "usable_cores", lambda: 2)
    monkeypatch.setattr(plots, "DRAW_DEADLINE_S", 2.0)
    monkeypatch.setattr(plots, "_draw_all", _hang)  # the drawing process never answers
    started = time.monotonic()
    _, written = report_mod.write_report(run_dir, tmp_path / "hung")
    assert time.monotonic() - started < 60
    assert "the drawing process gave nothing for 2 s; drawn here" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in written} == {p.name: p.read_bytes() for p in in_place}


def test_a_report_of_a_folder_says_which_run_it_found(run_dir, tmp_path, capsys):
    # `report out/quickstart` (a folder above the run): the run found, and where its report went, are printed.
    assert cli(["report", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"run: {find_results(run_dir)}"
    assert printed[1].startswith(str(run_dir / "report") + "/")
    assert cli(["report", str(find_results(run_dir)), "--out", str(tmp_path / "again")]) == 0
    assert not capsys.readouterr().out.startswith("run: ")  # a results file names itself


def test_sections_that_generate_are_scored_last_and_the_others_figures_sent_to_be_drawn_first(
    demo_data_dir, tmp_path, monkeypatch
):
    # MedFact-Bench generates (its reply lengths may first load a tokenizer, seconds): PubMedQA's section is scored
    # first, and its figures are drawn meanwhile. The sections keep the order of the benchmarks.
    from lm_eval_tasks.utils import lengths, plots, scorecard

    from tests.runs import evaluated_run

    folder = evaluated_run(tmp_path / "run", demo_data_dir, ["medfact_bench_scifact", "pubmedqa_atlas_n100"], limit=3)
    events = []
    counter = lengths.counter
    monkeypatch.setattr(lengths, "counter", lambda *args: events.append("counter") or counter(*args))
    monkeypatch.setattr(plots, "usable_cores", lambda: 2)
    monkeypatch.setattr(plots.Drawer, "draw", lambda self, figures: events.append(sorted(figures)))  # drawn here
    scored, _ = report_mod.write_report(folder, tmp_path / "report")
    assert list(scored.sections) == ["medfact_bench", "pubmedqa_atlas_n100"]
    report = scored.report()
    pubmedqa = sorted(
        scorecard.figures({"benchmarks": {"pubmedqa_atlas_n100": report["benchmarks"]["pubmedqa_atlas_n100"]}})
    )
    medfact = sorted(scorecard.figures({"benchmarks": {"medfact_bench": report["benchmarks"]["medfact_bench"]}}))
    assert pubmedqa and medfact
    assert events[:3] == [pubmedqa, "counter", medfact]


@pytest.mark.parametrize("fails", [False, True])
def test_the_items_files_process_makes_the_same_page_rows_and_files_as_this_one(run_dir, tmp_path, monkeypatch, fails):
    # With two cores the items files are written by another process, which then makes the page's rows of each
    # section's last half of items while this one makes the first half's; where it fails after writing the files,
    # this process makes them. Every file is the same bytes as a report made by one process.
    from lm_eval_tasks.utils import explorer, machine

    monkeypatch.setattr(machine, "usable_cores", lambda: 1)
    report_mod.write_report(run_dir, tmp_path / "alone")
    parent, making = os.getpid(), explorer.items_rows_json
    asked = []

    def made_there(records, *args):
        asked.append(len(records))
        if fails and os.getpid() != parent:
            raise RuntimeError("the items files' process fails after writing them")
        return making(records, *args)

    monkeypatch.setattr(explorer, "items_rows_json", made_there)
    monkeypatch.setattr(machine, "usable_cores", lambda: 2)
    report_mod.write_report(run_dir, tmp_path / "helped")
    names = sorted(path.name for path in (tmp_path / "alone").iterdir())
    assert names == sorted(path.name for path in (tmp_path / "helped").iterdir())
    for name in names:
        if name != "scored_run.json":  # its timings differ
            assert (tmp_path / "alone" / name).read_bytes() == (tmp_path / "helped" / name).read_bytes(), name
    # Here: only the rows of the last half when that process failed (7 items: 3 made here, 4 there); none otherwise.
    assert asked == ([4] if fails else [])
