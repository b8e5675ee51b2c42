"""The pages (report.html, leaderboard.html) from their templates: every section field rendered by one part of the
page, results before provenance, and a size bound whatever the item and run counts."""

import json
from itertools import combinations
from pathlib import Path
from types import SimpleNamespace

import jinja2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lm_eval_tasks.utils import explorer, formats, plots, report_md, scorecard, section
from lm_eval_tasks.utils.comparison import Discordant, Pairing
from lm_eval_tasks.utils.scoring import ScoredItem
from lm_eval_tasks.utils.stats import format_estimate
from markupsafe import escape

from tests import browser
from tests.runs import GOLDEN

LIMIT = 25_000_000  # bytes a page may take, whatever its item and run counts
GOLDEN_REPORT = json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_every_section_field_is_rendered_by_exactly_one_part():
    parts = [field for fields in section.SECTION_PARTS.values() for field in fields]
    assert len(parts) == len(set(parts))  # no field is declared for two parts
    for name, bench in GOLDEN_REPORT["benchmarks"].items():
        claimed = scorecard.claims(bench)
        assert set(claimed) == set(bench), name
        assert all(len(by) == 1 for by in claimed.values()), (name, claimed)
        # Every field of the five benchmarks has its own part: none falls to the generic table.
        assert [field for field, by in claimed.items() if by == ["others"]] == [], name
    page = scorecard.render_html({"run": {"model": "hf"}, **GOLDEN_REPORT}).decode()
    assert "Other fields" not in page
    # Three log-likelihood sections, none tied: each says so once, in its headline box.
    tied = [b["ties"] for b in GOLDEN_REPORT["benchmarks"].values() if b.get("ties")]
    assert len(tied) == 3 and all(ties["n_tied"] == 0 for ties in tied)
    assert page.count(f"tied best log-likelihoods: 0 ({escape(tied[0]['rule'])})") == 3
    # A field no part knows is still shown, once, in the generic table.
    bench = {**GOLDEN_REPORT["benchmarks"]["medexqa"], "surprise": {"n_tied": 7}}
    assert scorecard.claims(bench)["surprise"] == ["others"]
    page = scorecard.render_html({"run": {}, "benchmarks": {"medexqa": bench}}).decode()
    assert page.count("Other fields") == 1 and page.count("n_tied") == 1


def test_report_md_renders_every_part_and_shows_a_field_no_part_knows():
    assert set(report_md.MARKDOWN_PARTS) == set(section.SECTION_PARTS)
    full = {"run": {"model": "hf"}, "unreported_tasks": [], **GOLDEN_REPORT}
    assert "Other fields" not in report_md.to_markdown(full)
    bench = {
        **GOLDEN_REPORT["benchmarks"]["medexqa"],
        "surprise": {"n_tied": 7},
        "late": {"value": 0.25, "low": 0.125, "high": 0.5},
    }
    text = report_md.to_markdown({**full, "benchmarks": {"medexqa": bench}})
    assert text.count("Other fields:") == 1
    assert '- surprise: {"n_tied": 7}' in text and f"- late: {format_estimate(bench['late'])}" in text


def test_a_reports_figures_are_listed_once_and_the_page_shows_them_as_given():
    benchmarks = GOLDEN_REPORT["benchmarks"]
    figures = scorecard.figures(GOLDEN_REPORT)
    assert set(figures) == (
        {f"components_{n}" for n, b in benchmarks.items() if b["components"]}
        | {f"confusion_{n}.png" for n, b in benchmarks.items() if "confusion_matrix" in b}
        | {f"reliability_{n}.png" for n, b in benchmarks.items() if "calibration" in b}
        | {f"risk_coverage_{n}.png" for n, b in benchmarks.items() if "selective" in b}
    )
    assert any(name.startswith("reliability_") for name in figures)
    assert any(name.startswith("risk_coverage_") for name in figures)
    drawn = {name: f"not a png: {name}".encode() for name in figures}
    page = scorecard.render_html({"run": {"model": "hf"}, **GOLDEN_REPORT}, None, drawn).decode()
    # Every figure in its section, as given: nothing is drawn again.
    for png in drawn.values():
        assert page.count(f'"{plots.data_uri(png)}"') == 1
    assert page.count("data:image/png;base64,") == len(drawn)


def test_the_run_number_under_a_published_column():
    bench = {
        "headline_metric": "accuracy_macro",
        "accuracy_macro": {"value": 0.5, "low": 0.25, "high": 0.75},
        "macro_f1": {"value": 0.375, "low": 0.25, "high": 0.5},
        "components": {"cp": {"accuracy": {"value": 0.75, "low": 0.5, "high": 1.0}}},
        "full_coverage": True,
    }
    # "macro" is how the papers name the macro headline; a component by its name; another estimate by its own.
    assert [section.published_column_value(bench, c) for c in ("macro", "cp", "macro_f1", "accuracy", "x")] == [
        0.5,
        0.75,
        0.375,
        None,
        None,
    ]
    # Over a partial run its average is no match for the published full-set ones: not shown.
    assert section.published_column_value({**bench, "full_coverage": False}, "macro") is None
    micro = {**bench, "headline_metric": "accuracy_micro", "accuracy_micro": {"value": 0.625, "low": 0.5, "high": 0.75}}
    assert [section.published_column_value(micro, c) for c in ("accuracy", "macro")] == [0.625, None]


def _section_and_records(n):
    records = [
        {
            "task": "t",
            "item_id": f"row-{i}",
            "doc_id": i,
            "component": f"c{i % 5}",
            "gold": "SUPPORT",
            "pred": "NEI",
            "outcome": "wrong",
            "parse_step": "score_tag",
            "invalid_reason": None,
            "prompt": f"Claim {i}: " + "evidence " * 200,
            "reply": "<think>" + "reasoning " * 100 + "</think><score>0</score>",
            "choices": [],
            "extras": {"parseable_score": 1.0},
            "redacted": [],
        }
        for i in range(n)
    ]
    estimate = {"value": 0.5, "low": 0.4, "high": 0.6, "n": n}
    bench = {"title": "S", "headline_metric": "accuracy_macro", "accuracy_macro": estimate, "n_items": n}
    bench["items"] = {"file": "items_s.jsonl", "n": n}
    return {"run": {"model": "hf"}, "benchmarks": {"s": bench}}, {"s": records}


def test_a_report_of_100000_items_stays_under_25_mb_and_says_what_it_left_out():
    report, items = _section_and_records(100_000)
    page = scorecard.render_html(report, items).decode()
    assert len(page.encode("utf-8")) < LIMIT
    start = page.index('<script type="application/json" id="explorer-s-data">')
    data = json.loads(page[page.index(">", start) + 1 : page.index("</script>", start)])
    # Each row at 600 characters a text is more than the budget holds: the first rows, whole or at 600 characters.
    assert data["limit"] == explorer.MIN_SHOWN and data["n_total"] == 100_000
    shown = len(data["rows"])
    doc_id = data["columns"].index("doc_id")
    assert 0 < shown < 100_000 and [row[doc_id] for row in data["rows"]] == list(range(shown))
    assert (
        f"This page holds the first {shown} of 100000 items (its size is bounded); items_s.jsonl holds every one."
        in page
    )
    # A report that fits is shown whole, its texts longer than the 600-character floor.
    report, items = _section_and_records(2_000)
    page = scorecard.render_html(report, items).decode()
    assert "This page holds the first" not in page
    assert '"n_total":2000' in page and "evidence " * 200 in page


def _board(n_runs, items_per_pair):
    """A leaderboard of ``n_runs`` runs on one section, and every pair's discordant items (synthetic, cheap)."""
    ids = [f"run-{i + 1}" for i in range(n_runs)]
    estimate = {"value": 0.5, "low": 0.4, "high": 0.6, "n": 1000}
    runs = [
        {
            "id": i,
            "label": f"model {i}",
            "results_file": f"/r/{i}/results.json",
            "report_folder": None,
            "run": {"model": "hf", "model_args": f"pretrained={i}", "seeds": {"random": 0}},
        }
        for i in ids
    ]
    comparisons = [
        {
            "a": a,
            "b": b,
            "comparable": True,
            "n_paired_items": 1000,
            "small": False,
            "difference": estimate,
            "a_only_correct": items_per_pair,
            "b_only_correct": items_per_pair,
            "p_value": 0.5,
            "holm_p_value": 1.0,
            "test": "paired bootstrap",
            "detectable": {"minimum_detectable_difference": 0.05},
            "reasons": [],
        }
        for a, b in combinations(ids, 2)
    ]
    bench = {
        "title": "S",
        "headline_metric": "accuracy_macro",
        "compared_metric": "accuracy_macro",
        "test": "paired bootstrap",
        "runs": {i: {"estimate": estimate, "n_items": 1000, "paper_comparable": True, "subset": None} for i in ids},
        "ranking": ids,
        "ranks": {i: 1 for i in ids},
        "published": {},
        "comparisons_unavailable": None,
        "comparisons": comparisons,
    }
    board = {"generated_by": "test", "schema_version": "2.4", "runs": runs, "benchmarks": {"s": bench}}
    item = ScoredItem("t", 0, "h", "c", "A", "B", 0.0, reply="reasoning " * 300, prompt="Question?")
    spec = SimpleNamespace(report=SimpleNamespace(shown_labels=None))
    section = SimpleNamespace(items=[item] * items_per_pair, item=lambda position: item, spec=spec)
    positions = np.arange(items_per_pair)
    found = Discordant(Pairing(positions, positions, 0, 0), Pairing(positions, positions, 0, 0))
    return board, {("s", c["a"], c["b"]): (section, section, found) for c in comparisons}


def test_a_leaderboard_of_30_runs_stays_under_25_mb():
    board, disagreements = _board(30, 40)
    page = formats.to_html(board, disagreements).decode()
    assert len(page.encode("utf-8")) < LIMIT
    # 435 pairs of 80 discordant items of 3,000-character answers: every pair shows some of its items, and says so.
    assert page.count('<details class="disagreements"') == 435 and "too many to show" not in page
    assert page.count("This page holds the first ") == 435


@pytest.mark.browser
def test_the_results_come_before_the_provenance_at_1280_px(tmp_path):
    browser.chromium_or_skip()
    report, items = _section_and_records(30)
    (tmp_path / "report.html").write_bytes(scorecard.render_html(report, items))
    board, disagreements = _board(3, 2)
    (tmp_path / "leaderboard.html").write_bytes(formats.to_html(board, disagreements))
    where = """(() => ({first: document.querySelector('.headline').getBoundingClientRect().top,
      provenance: document.querySelector('#provenance').getBoundingClientRect().top,
      open: document.querySelector('#provenance').open,
      window: window.innerWidth}))()"""
    with browser.DevTools(window_size="1280,2000") as page:
        for name in ("report.html", "leaderboard.html"):
            page.open(tmp_path / name)
            shown = page.evaluate(where)
            assert shown["window"] == 1280 and 0 < shown["first"] < shown["provenance"], name
            assert shown["open"] is False, name  # collapsed
        assert page.exceptions() == []


@pytest.mark.parametrize("name", ["base.html.j2", "report.html.j2", "section.html.j2", "leaderboard.html.j2"])
def test_the_templates_and_static_files_are_package_data(name):
    assert (Path(scorecard.__file__).parent / "templates" / name).is_file()
    text = Path(__file__).parents[1].joinpath("pyproject.toml").read_text(encoding="utf-8")
    (declared,) = [line for line in text.splitlines() if line.startswith('"lm_eval_tasks.utils" = [')]
    assert all(f'"{pattern}"' in declared for pattern in ("templates/*.j2", "static/*.css", "static/*.js"))


@pytest.mark.browser
def test_a_column_added_to_the_data_is_shown_and_searched_by_its_name(tmp_path):
    browser.chromium_or_skip()
    _, items = _section_and_records(60)
    data = explorer.items_data("s", "S", items["s"], "items_s.jsonl")
    data["columns"].append("origin")
    data["rows"] = [[*row, f"id-{index:03d}"] for index, row in enumerate(json.loads(explorer._json(data["rows"])))]
    page = f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{explorer.explorer("x", data, "Items")}'
    (tmp_path / "page.html").write_text(page + f"{explorer.script_tag()}</body></html>", encoding="utf-8")
    with browser.DevTools() as shown:
        shown.open(tmp_path / "page.html")
        header = shown.evaluate(
            "[...document.querySelectorAll('.explorer table.items thead th')].map(n => n.textContent)"
        )
        # The columns with one value in every row are said once above the table.
        assert header == ["#", "item id", "doc id", "component", "question", "origin", "reply / top choice"]
        assert shown.evaluate("document.querySelector('.explorer .constant').textContent") == (
            "Every item: task t; gold SUPPORT; pred NEI; outcome wrong; parse step score_tag"
        )
        shown.evaluate(
            "(() => { const s = document.querySelector('.explorer .search'); s.value = 'ID-042'; "
            "s.dispatchEvent(new Event('input')); })()"
        )
        shown.evaluate("new Promise(r => setTimeout(r, 400))")  # the search waits for typing to pause
        assert shown.evaluate("document.querySelector('.explorer .n-shown').textContent") == "1"
        cells = shown.evaluate(
            "[...document.querySelectorAll('.explorer table.items tbody td')].map(n => n.textContent)"
        )
        assert cells[0] == "43" and cells[header.index("origin")] == "id-042"
        assert shown.exceptions() == []


def test_report_md_opens_with_every_headline_and_ends_with_the_provenance():
    from lm_eval_tasks.utils.report import to_markdown

    report = {"run": {"model": "hf", "seeds": {"random": 7}}, "unreported_tasks": [], **GOLDEN_REPORT}
    lines = to_markdown(report).splitlines()
    summary = lines[: lines.index("## MedFact-Bench (`medfact_bench`)")]
    provenance = lines.index("## Provenance: how this run was made")
    assert lines[0] == "# Evaluation report" and provenance > max(i for i, x in enumerate(lines) if "**" in x)
    bench = GOLDEN_REPORT["benchmarks"]["medexqa"]
    assert (
        f"| MedExQA, generation protocol (`medexqa`) | accuracy_macro | {format_estimate(bench['accuracy_macro'])} | 12 | no |"
        in summary
    )
    assert sum(line.startswith("| ") and "`" in line for line in summary) == len(GOLDEN_REPORT["benchmarks"])
    assert '- limit: None; seeds: {"random": 7}' in lines[provenance:]


def test_no_discordant_items_row_is_smaller_than_the_bound_the_leaderboard_builds_by():
    # The smallest row a pair can give: empty texts, no item id, one-character task, doc ids 0.
    a = {"task": "t", "item_id": None, "doc_id": 0, "component": "", "gold": "", "prompt": "", "pred": "",
         "outcome": "correct", "reply": "", "choices": []}  # fmt: skip
    b = {**a, "outcome": "wrong"}
    data = explorer.pairs_data("s", {"id": "run-1"}, {"id": "run-2"}, [(a, b)], [(b, a)], 10_000)
    rows = json.loads(explorer._json(data["rows"]))
    assert [len(json.dumps(row, separators=(",", ":")).encode()) + 1 for row in rows] == [99, 99]
    assert explorer.MIN_PAIR_ROW <= 99


@pytest.mark.parametrize("budget", [5_000, 20_000, 60_000])
def test_a_pair_too_long_for_its_share_keeps_the_rows_the_whole_computation_keeps(budget):
    # More items than the budget could hold at MIN_PAIR_ROW bytes each: the rows are built only as far as they fit,
    # and they are the rows (and the limit) computing every row first gives.
    a = {"task": "t", "item_id": "x", "doc_id": 0, "component": "c", "gold": "SUPPORT", "prompt": "Claim? " * 40,
         "pred": "SUPPORT", "outcome": "correct", "reply": "<score>2</score> " * 30, "choices": []}  # fmt: skip
    pairs = [({**a, "doc_id": i}, {**a, "doc_id": i, "outcome": "wrong", "pred": "NEI"}) for i in range(1000)]
    assert len(pairs) * explorer.MIN_PAIR_ROW > budget
    data = explorer.pairs_data("s", {"id": "run-1"}, {"id": "run-2"}, pairs, [], budget)

    def row(pair, limit):
        which, ra, rb = pair
        return [which, *explorer.pair_record(ra, rb, limit).values()]

    entries = [(explorer.A_ONLY, ra, rb) for ra, rb in pairs]
    limit, rows = explorer._fit(entries, row, explorer.PAIR_TEXTS * len(entries), budget)
    assert data["limit"] == limit and explorer._json(data["rows"]) == explorer._json(rows)
    assert 0 < len(data["rows"]) < len(pairs) and data["n_total"] == 1000


def test_no_compiled_template_is_read_from_or_written_to_the_cache_folder(tmp_path, monkeypatch):
    # A compiled template is code: one planted in a shared cache folder would run as whoever renders next.
    from lm_eval_tasks.utils import pages

    monkeypatch.setenv("MEDEVAL_CACHE_DIR", str(tmp_path))
    planted = tmp_path / f"templates-jinja2-{jinja2.__version__}"
    planted.mkdir()
    (planted / "__jinja2_x.cache").write_bytes(b"j2" + b"\x00" * 64)
    pages.environment.cache_clear()
    try:
        env = pages.environment()
        assert env.bytecode_cache is None
        for name in env.list_templates():
            env.get_template(name)
    finally:
        pages.environment.cache_clear()
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted([planted.name, "__jinja2_x.cache"])


def test_a_large_block_is_written_into_the_page_once_where_its_marker_stands():
    from lm_eval_tasks.utils import pages

    parts = ['<script type="application/json" id="d">', "[", '["a\u2013b"]', ",", '["\U0001f600"]', "]", "</script>"]
    encoded = [part.encode("utf-8") for part in parts]
    assert pages.block(encoded) == "".join(parts)  # outside a page being made: the markup itself
    with pages.blocks_placed() as blocks:
        marker = pages.block(encoded)
        assert "".join(parts) not in marker
        # A run's text that copies a marker's shape (another token) is text; the page escapes it anyway.
        forged = str(marker).replace(str(marker)[10:42], "0" * 32)
        page = pages.render("explorer.html.j2", element_id="e", data={"kind": "items", "rows": [], "n_total": 0},
                            heading=forged, data_block=marker, rows_per_page=1)  # fmt: skip
        filled = blocks.filled(page).decode("utf-8")  # the page's file, UTF-8
        assert filled.count("".join(parts)) == 1 and str(marker) not in filled
        assert escape(forged) in filled
        assert pages.page_bytes(page) == len(filled.encode("utf-8"))
        assert blocks.filled("no marker \ud800") == b"no marker \\ud800"  # a lone surrogate as its escape
    assert pages.page_bytes(page) == len(page.encode("utf-8"))  # no page being made: the markup as it is


@given(
    st.lists(st.text(max_size=20), max_size=6),
    st.lists(st.text(max_size=20), max_size=6),
    st.text(max_size=30),
    st.text(max_size=30),
)
def test_blocks_filled_in_are_the_blocks_joined_in_place(first, second, before, after):
    from lm_eval_tasks.utils import pages

    def utf8(texts):
        return [text.encode("utf-8", "backslashreplace") for text in texts]

    with pages.blocks_placed() as blocks:
        one, two = pages.block(utf8(first)), pages.block(utf8(second))
        text = before + str(two) + after + str(one) + str(two)
    assert blocks.filled(text) == b"".join(utf8([before, *second, after, *first, *second]))


def test_an_explorers_data_block_is_the_same_placed_or_not():
    rows = explorer.Rows([b'[1,"x"]', b'[2,"\\u003cy\\u003e"]'], 2)
    data = {"kind": "items", "rows": rows, "limit": 3, "title": "t\u2028"}
    whole = explorer.script_json("d", data)
    from lm_eval_tasks.utils import pages

    with pages.blocks_placed() as blocks:
        placed = explorer.script_json("d", data)
        assert blocks.filled(f"<p>{placed}</p>") == f"<p>{whole}</p>".encode("utf-8")
    assert whole == '<script type="application/json" id="d">{"kind":"items","rows":[[1,"x"],[2,"\\u003cy\\u003e"]],' \
        '"limit":3,"title":"t\\u2028"}</script>'  # fmt: skip


def test_templates_compiled_beforehand_are_the_ones_a_page_uses():
    from lm_eval_tasks.utils import pages

    pages.environment.cache_clear()
    env = pages.environment()
    assert len(env.cache) == 0
    pages.compile_templates()
    names = env.list_templates()
    assert {"report.html.j2", "leaderboard.html.j2", "explorer.html.j2", "macros.html.j2"} <= set(names)
    assert len(env.cache) == len(names)
    # A page made afterwards compiles none: every template it uses was compiled.
    scorecard.render_html({"run": {"model": "hf"}, **GOLDEN_REPORT})
    assert len(env.cache) == len(names)
