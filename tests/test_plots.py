"""Honest figures: a number over another item set than the published ones beside it is marked, and no label is cut."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lm_eval_tasks.utils import formats, plots, section
from lm_eval_tasks.utils import leaderboard as lb
from lm_eval_tasks.utils.benchmarks import report_specs

from tests.browser import PNG_SIGNATURE
from tests.hand_runs import A, B, medfact_run


def spec(name):
    return next(s for s in report_specs() if s.name == name)


def coverage(counts, scored):
    return {
        c: {"expected": n, "scored": scored.get(c, 0), "complete": scored.get(c, 0) == n} for c, n in counts.items()
    }


def test_the_item_set_of_a_section_in_words():
    medexqa = spec("medexqa_logit")  # 5 specialties, 940 test items
    counts = dict(medexqa.expected_counts)
    assert sum(counts.values()) == 940 and len(counts) == 5
    first, second = list(counts)[:2]
    two = coverage(counts, {first: counts[first], second: 3})
    assert section.subset(two, medexqa) == f"2 of 5 specialties, {counts[first] + 3} of 940 items"
    assert section.subset(coverage(counts, counts), medexqa) is None  # every published item
    every_specialty = coverage(counts, {c: 1 for c in counts})
    assert section.subset(every_specialty, medexqa) == "5 of 940 items"
    # PubMedQA's frozen 100 is complete on its own, and still not the published numbers' 500 items.
    n100 = spec("pubmedqa_atlas_n100")
    (component,) = n100.expected_counts
    assert section.subset(coverage(n100.expected_counts, {component: 100}), n100) == "100 of 500 items"
    full = spec("pubmedqa_atlas")
    assert section.subset(coverage(full.expected_counts, {"atlas-full-v1": 500}), full) is None
    millerqa = spec("millerqa")
    total = sum(millerqa.expected_counts.values())
    one = coverage(millerqa.expected_counts, {"tos_legalbench": 6})
    assert section.subset(one, millerqa) == f"1 of {len(millerqa.expected_counts)} benchmarks, 6 of {total:,} items"


def test_the_forest_plot_marks_a_partial_run_and_keeps_every_label_whole(tmp_path):
    long_name = "an-organisation/a-model-name-much-longer-than-any-label-limit-that-used-to-cut-it-short-v2"
    paths = [medfact_run(tmp_path / "a", A, model_name=long_name), medfact_run(tmp_path / "b", B, model_name="b")]
    board = lb.build(paths)[0]
    rows = formats.forest_rows(board, "medfact_bench")
    runs, published = rows[:2], rows[2:]
    # 7 items of 2 MedFact-Bench components, 14,274 items in 5 published: hollow and named among published numbers.
    assert {row.subset for row in runs} == {"2 of 5 components, 7 of 14,274 items"}
    assert board["benchmarks"]["medfact_bench"]["runs"]["run-1"]["subset"] == "2 of 5 components, 7 of 14,274 items"
    assert published and all(row.subset is None for row in published)
    assert f"run-1: {long_name.rsplit('/', 1)[-1]}" in [row.label for row in runs]
    assert sorted(row.label for row in published) == sorted(
        f"{model} (published)" for model in board["benchmarks"]["medfact_bench"]["published"]
    )
    assert formats.forest_figures(board)["medfact_bench"].png()[:8] == PNG_SIGNATURE


def test_a_pubmedqa_frozen_100_run_is_marked_among_the_500_item_references():
    entry = {"estimate": {"value": 0.6, "low": 0.5, "high": 0.7}, "subset": "100 of 500 items"}
    board = {
        "runs": [{"id": "run-1", "label": "m"}],
        "benchmarks": {
            "pubmedqa_atlas_n100": {
                "title": "PubMedQA (frozen 100)",
                "headline_metric": "accuracy_micro",
                "ranking": ["run-1"],
                "runs": {"run-1": entry},
                "published": {"single human annotator (Jin et al., 2019)": 0.78},
            }
        },
    }
    rows = formats.forest_rows(board, "pubmedqa_atlas_n100")
    assert [(row.label, row.subset) for row in rows] == [
        ("run-1: m", "100 of 500 items"),
        ("single human annotator (Jin et al., 2019) (published)", None),
    ]


def _png_size(png):
    assert png[:8] == PNG_SIGNATURE
    return struct.unpack(">II", png[16:24])  # IHDR: width, height


def test_a_figure_grows_to_hold_wrapped_labels_and_marks_a_subset():
    short = [plots.Row("a", 0.5, 0.4, 0.6), plots.Row("b (published)", 0.7)]
    long = [plots.Row("single human annotator (Jin et al., 2019), reading every abstract " * 3, 0.5, 0.4, 0.6)]
    long += [plots.Row("b (published)", 0.7)]
    marked = [plots.Row("a", 0.5, 0.4, 0.6, subset="2 of 5 specialties, 355 of 940 items"), short[1]]
    sizes = [_png_size(plots.dot_whisker_figure(rows, "t", "x").png()) for rows in (short, long, marked)]
    assert sizes[1][1] > sizes[0][1]  # taller: the label's lines are drawn, not cut
    assert sizes[2][1] > sizes[0][1] and sizes[2][0] > sizes[0][0]  # the set under the label, and its legend


@given(st.text(max_size=plots.MAX_LABEL_CHARS), st.integers(min_value=1, max_value=60))
def test_a_wrapped_label_keeps_every_character(text, width):
    shown = plots.wrapped(text, width)
    assert "".join(shown.split()) == "".join(text.split())
    assert all(len(line) <= width for line in shown.split("\n"))


def test_only_a_label_past_any_real_length_is_cut_and_says_so():
    shown = plots.wrapped("x" * 10_000)
    assert shown.replace("\n", "").endswith("… (10,000 characters)")
    assert len(shown.replace("\n", "")) < plots.MAX_LABEL_CHARS + 40


@pytest.mark.parametrize("subset", [None, "100 of 500 items"])
def test_a_row_without_a_ci_is_drawn_either_way(subset):
    assert (
        plots.dot_whisker_figure([plots.Row("a", 0.5, subset=subset), plots.Row("n/a", None)], "t", "x").png()[:8]
        == PNG_SIGNATURE
    )
