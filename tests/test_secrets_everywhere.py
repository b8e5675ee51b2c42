"""A password in a URL model name (``pretrained=https://user:PASSWORD@host/m``) reaches no file or output of ours:
lm-eval copies it into the results file's model_name and, sanitised, into the name of the run's folder."""

import json

from lm_eval_tasks.utils.formats import write_leaderboard
from lm_eval_tasks.utils.report import write_report

from lm_eval_tasks.__main__ import main as cli
from tests.hand_runs import A, B, medfact_run

PASSWORD = "PASSWORD"
MODEL_NAME = f"https://user:{PASSWORD}@host/m"
FOLDER = f"https__user__{PASSWORD}@host__m"  # lm-eval's sanitize_model_name(MODEL_NAME)


def password_runs(tmp_path):
    """Two runs of the same model in two output folders (their labels fall back to telling the folders apart), each
    reported beside its results file (where the leaderboard links a run's report)."""
    runs = [medfact_run(tmp_path / name / FOLDER, flags, model_name=MODEL_NAME) for name, flags in (("a", A), ("b", B))]
    return runs, [path for results_file in runs for path in write_report(results_file)[1]]


def assert_no_password(paths):
    for path in paths:
        assert PASSWORD.encode() not in path.read_bytes(), path.name


def test_a_url_password_in_the_model_name_and_folder_reaches_no_report_and_no_comparison(tmp_path, capsys):
    runs, written = password_runs(tmp_path)
    assert_no_password(written)
    for results_file in runs:
        report = json.loads((results_file.parent / "report" / "report.json").read_text(encoding="utf-8"))
        assert report["run"]["model_name"] == "https://user:***@host/m"
        assert report["run"]["results_file"] == str(results_file).replace(PASSWORD, "***")
    capsys.readouterr()
    assert cli(["compare", str(runs[0]), str(runs[1]), "--out", str(tmp_path / "compare.json"), "--json"]) == 0
    shown = capsys.readouterr().out
    assert PASSWORD not in shown and json.loads(shown)["a"]["model_name"] == "https://user:***@host/m"
    assert cli(["compare", str(runs[0]), str(runs[1])]) == 0  # the table names the runs by their masked paths
    assert PASSWORD not in capsys.readouterr().out
    assert_no_password([tmp_path / "compare.json"])
    # The paths report and leaderboard print (the folders lm-eval named after the model URL) are masked too.
    assert cli(["report", str(runs[0])]) == 0
    assert cli(["leaderboard", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "board")]) == 0
    printed = capsys.readouterr().out
    assert PASSWORD not in printed and f"{FOLDER.replace(PASSWORD, '***')}" in printed


def test_a_url_password_in_the_model_name_and_folder_reaches_no_leaderboard(tmp_path):
    password_runs(tmp_path)
    written = write_leaderboard([tmp_path / "a", tmp_path / "b"], tmp_path / "board")
    assert {"leaderboard.json", "leaderboard.md", "leaderboard.csv", "leaderboard.html"} <= {p.name for p in written}
    assert_no_password(written)
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    assert [run["label"].split(" [")[0] for run in board["runs"]] == ["m", "m"]
    assert [run["run"]["model_name"] for run in board["runs"]] == ["https://user:***@host/m"] * 2


SHAPED_KEY = "ghp_" + "a1B2c3D4e5" * 4  # a well-known key shape, planted where only lm-eval's own records go


def test_a_key_in_the_results_files_other_records_reaches_no_report_comparison_or_leaderboard(tmp_path, capsys):
    planted = {
        "task_hashes": {"medfact_bench_scifact": SHAPED_KEY},
        "lm_eval_version": f"0.4.13 {SHAPED_KEY}",
        "config": {"model": "hf", "model_args": "pretrained=m", "model_revision": SHAPED_KEY, "device": SHAPED_KEY},
    }
    runs = [medfact_run(tmp_path / name / "m", flags, **planted) for name, flags in (("a", A), ("b", B))]
    written = [path for results_file in runs for path in write_report(results_file)[1]]
    assert cli(["compare", str(runs[0]), str(runs[1]), "--out", str(tmp_path / "compare.json")]) == 0
    written += [tmp_path / "compare.json", *write_leaderboard([tmp_path / "a", tmp_path / "b"], tmp_path / "board")]
    assert SHAPED_KEY not in capsys.readouterr().out
    for path in written:
        assert SHAPED_KEY.encode() not in path.read_bytes(), path.name
    report = json.loads((runs[0].parent / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["run"]["task_hashes"] == {"medfact_bench_scifact": "***"}
    assert (report["run"]["model_revision"], report["run"]["lm_eval_version"]) == ("***", "0.4.13 ***")


def test_a_key_in_the_name_of_a_task_no_section_reports_reaches_no_report(tmp_path):
    # lm-eval's results file names every task it ran, ours or not: an empty one and one no section owns.
    run = medfact_run(tmp_path / "a" / "m", A)
    results = json.loads(run.read_text(encoding="utf-8"))
    stamp = run.stem[len("results_") :]
    for task, lines in ((f"empty {SHAPED_KEY}", ""), (f"other {SHAPED_KEY}", '{"doc_id": 0, "doc": {}}\n')):
        results["configs"][task] = {"output_type": "generate_until"}
        (run.parent / f"samples_{task}_{stamp}.jsonl").write_text(lines, encoding="utf-8")
    run.write_text(json.dumps(results), encoding="utf-8")
    scored, written = write_report(run)
    assert (scored.empty_tasks, scored.unreported_tasks) == (("empty ***",), ("other ***",))
    for path in written:
        assert SHAPED_KEY.encode() not in path.read_bytes(), path.name
