import json

import pytest
from lm_eval_tasks.utils import scorecard, section
from lm_eval_tasks.utils.factbench.pipeline import FactChecker
from lm_eval_tasks.utils.factbench.tables import build_report as build_factcheck_report
from lm_eval_tasks.utils.runs import Run, model_name
from lm_eval_tasks.utils.stats import format_estimate
from markupsafe import escape

from tests import browser
from tests.conftest import build_report
from tests.factbench import worked_example as worked
from tests.hand_runs import HEALTHVER, SCIFACT, bench_item, write_run
from tests.page_checks import assert_self_contained

HOSTILE = "<script>alert(1)</script>$\\frac{$"  # markup, and mathtext that matplotlib would fail to parse


@pytest.fixture(scope="module")
def medfact_report(tmp_path_factory):
    folder = write_run(
        tmp_path_factory.mktemp("scorecard") / "model",
        {"medfact_bench_scifact": SCIFACT, "medfact_bench_healthver": HEALTHVER},
        model_args={"pretrained": HOSTILE, "dtype": "bfloat16", "api_key": "sk-secret"},
    )
    return build_report(folder)


def _cells(page):
    return {text for _, text in browser.elements(page, tag="td")}


def test_headline_numbers_and_comparability(medfact_report):
    page = scorecard.render_html(medfact_report).decode()
    bench = medfact_report["benchmarks"]["medfact_bench"]
    ((attrs, text),) = browser.elements(page, "headline")
    assert attrs["id"] == "headline-medfact_bench" and attrs["data-metric"] == "accuracy_macro"
    assert float(attrs["data-value"]) == bench["accuracy_macro"]["value"] == pytest.approx((2 / 4 + 2 / 3) / 2)
    assert (float(attrs["data-low"]), float(attrs["data-high"])) == (
        bench["accuracy_macro"]["low"],
        bench["accuracy_macro"]["high"],
    )
    assert text == f"0.583 [{bench['accuracy_macro']['low']:.3f}, {bench['accuracy_macro']['high']:.3f}]"
    ((comparable, verdict),) = browser.elements(page, "comparable")
    assert comparable["data-comparable"] == "false" and verdict == "no"
    assert "not every published item was scored" in page


def test_every_setting_and_table_is_shown(medfact_report):
    page = scorecard.render_html(medfact_report).decode()
    cells = _cells(page)
    assert set(medfact_report["run"]) <= cells  # every key of the run, by name
    assert {"dtype", "bfloat16", "max_gen_toks", "1024", "paper_generation", "abc", "0.4.13", "n_shot"} <= cells
    assert "sk-secret" not in page and "***" in cells
    # coverage row, per-class row, confusion-matrix row (rows gold, columns predicted)
    assert {"medaesqa", "9106", "SUPPORT", "CONTRADICT", "parseable_score"} <= cells
    assert "<th>INVALID</th>" in page
    assert any(c.startswith("0.857 [") for c in cells)  # 6 of 7 replies have a parseable score
    rows = {text for _, text in browser.elements(page, tag="tr")}
    assert any(row.startswith("macro_f10.611 [") for row in rows)  # (0.5 + 2/3 + 2/3) / 3, as in test_report
    # the published numbers beside this run's: scifact 2/4, healthver 2/3; its macro over 2 of 5 components is
    # no average over the published items, so it is not shown in the published macro column
    partial = "this run (partial coverage: its average is not shown here)"
    assert f'<tr class="this-run"><td>{partial}</td><td class="num">0.500</td><td class="num">0.667</td>' in page
    assert ">0.583</td></tr>" not in page and '<td>GPT-4o</td><td class="num">0.832</td>' in page
    assert page.count("<img ") == 2  # accuracy per component with published markers, confusion matrix


def test_hostile_strings_are_text(medfact_report):
    report = json.loads(json.dumps(medfact_report))
    report["benchmarks"]["medfact_bench"]["notes"].append(HOSTILE)
    report["run"]["model_name"] = HOSTILE
    page = scorecard.render_html(report).decode()
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # The title names the model (the last part of a path-like name), as text.
    assert f"<title>Scorecard: {escape(model_name(report['run']))}</title>" in page
    assert model_name(report["run"]) == HOSTILE.rsplit("/", 1)[-1]
    assert_self_contained(page)


def test_other_benchmarks_are_rendered_from_the_schema(tmp_path):
    from lm_eval_tasks.utils.scoring import INVALID, AccuracyOver, BenchmarkSpec, Report

    # a: 1 of 2 answered items right; c: nothing answered (accuracy over answered items: none); c's name is mathtext
    c = "c $\\frac{$"
    items = [
        bench_item("a", 0, "1", 1.0),
        bench_item("a", 1, "0", 0.0),
        bench_item("a", 2, INVALID, 0.0),
        bench_item(c, 0, INVALID, 0.0),
    ]
    spec = BenchmarkSpec(
        name="bench",
        title="Answered-only bench",
        task_prefix="bench",
        score_sample=None,
        expected_counts={"a": 3, c: 1},
        report=Report(accuracy_over=AccuracyOver.ANSWERED, component_groups={"g": ("a", c)}),
    )
    answered_only = section.score_section(items, spec, Run(tmp_path / "r.json", {}, {}, {})).numbers
    report = {
        "run": {"model": "hf", "model_args": "pretrained=m,dtype=float32"},
        "benchmarks": {"bench": answered_only},
    }
    page = scorecard.render_html(report).decode()
    ((headline, _),) = browser.elements(page, "headline")
    assert headline["data-benchmark"] == "bench" and float(headline["data-value"]) == 0.5
    cells = _cells(page)
    assert {"accuracy_all_macro", "answered", "g", c, "pretrained=m,dtype=float32"} <= cells
    rows = {text for _, text in browser.elements(page, tag="tr")}
    # component, n, small (n < 30), accuracy, accuracy_all, answered: one item, unanswered, takes the exact interval
    # of 0 of 1 (0.975), never [0.000, 0.000]
    assert f"{c}1truen/a0.000 [0.000, 0.975]0.000 [0.000, 0.975]" in rows
    assert any(text.startswith("0.167 [") for text in cells)  # accuracy_all_macro: (1/3 + 0) / 2
    assert "<title>Scorecard: m</title>" in page


def test_the_fact_check_table_is_rendered(medfact_report):
    """FActBench's fact-check report (utils.factcheck), as a benchmark entry: its table, every cell, is on the page."""
    checker = FactChecker(
        worked.ScriptedChat(worked.decomposer_reply),
        worked.ScriptedChat(worked.judge_reply),
        worked.StubNli(),
        worked.StubStore(),
        k=5,
    )
    result = checker.check(worked.GENERATIONS)  # the worked example of test_factcheck
    factcheck_report = build_factcheck_report(result, run={"model_name": "m"})[0]
    page = scorecard.render_html({**medfact_report, "benchmarks": {"factbench": factcheck_report}}).decode()
    headlines = browser.elements(page, "headline")
    assert [(a["data-benchmark"], a["data-value"]) for a, _ in headlines] == [("factbench", "")]
    assert "no headline metric in this report entry" in page
    cells = _cells(page)
    # the worked example of test_factcheck: CoT over the grounding document 0.75 [0.5, 1.0] over generations A and E
    assert {"cot_intrinsic", "0.750 [0.500, 1.000]", "nli_extrinsic", "rag", "stub"} <= cells
    rows = [text for _, text in browser.elements(page, tag="tr")]
    for key, cell in factcheck_report["table"]["rag"]["cells"].items():
        shown = f"{key}ok{cell['n_scored']}{cell['n_incomplete']}{format_estimate(cell['estimate'])}"
        assert any(row.startswith(shown) for row in rows)


@pytest.fixture(scope="module")
def report_page(medfact_report, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    (out / "report.html").write_bytes(scorecard.render_html(medfact_report))
    return out / "report.html"


@pytest.mark.browser
def test_report_page_in_a_real_browser(medfact_report, report_page):
    chromium = browser.chromium_or_skip()
    dom = browser.dump_dom(report_page, chromium)
    shown = {
        attrs["data-benchmark"]: (float(attrs["data-value"]), text) for attrs, text in browser.elements(dom, "headline")
    }
    headline = medfact_report["benchmarks"]["medfact_bench"]["accuracy_macro"]
    assert shown == {"medfact_bench": (headline["value"], format_estimate(headline))}
    assert "<script" not in dom and "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    png = browser.screenshot(report_page, report_page.with_suffix(".png"), binary=chromium).read_bytes()
    assert png[:8] == browser.PNG_SIGNATURE and int.from_bytes(png[16:20], "big") == 1280
    assert int.from_bytes(png[20:24], "big") == 2000


def test_no_browser_is_a_skip_that_says_how_to_install_one(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert browser.find_chromium() is None
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        browser.chromium_or_skip()


def test_a_partial_average_is_never_shown_beside_the_published_full_averages(medfact_report):
    # The 7-item run covers 2 of 5 MedFact components: its macro is no average over the published items.
    bench = medfact_report["benchmarks"]["medfact_bench"]
    assert bench["full_coverage"] is False
    page = scorecard.render_html(medfact_report).decode()
    rows = [text for attrs, text in browser.elements(page, tag="tr") if text.startswith("this run")]
    (row,) = rows
    macro = f"{bench['accuracy_macro']['value']:.3f}"
    assert row.startswith("this run (partial coverage") and macro not in row
    full = json.loads(json.dumps(medfact_report))
    full["benchmarks"]["medfact_bench"]["full_coverage"] = True
    (row,) = [
        text
        for _, text in browser.elements(scorecard.render_html(full).decode(), tag="tr")
        if text.startswith("this run")
    ]
    assert macro in row
