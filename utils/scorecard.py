"""One self-contained HTML page (``report.html``) for a report: every benchmark, every setting and every item.

The page is ``templates/report.html.j2`` (Jinja2, autoescaped: model names and replies are hostile input) with its
stylesheet and the item explorer's script inlined (:mod:`.pages`), and figures as base64 PNG data URIs: it needs no
network. It opens with the summary (every section's headline), then each section (headline box, figures,
tables, item explorer over items_<section>.jsonl's records, :mod:`.explorer`), and ends with the run's provenance,
collapsed. Each field of a section is rendered by the one part :data:`.section.SECTION_PARTS` names (:func:`claims`); a
field no part knows goes to the section's "Other fields" table, so nothing in the report is left out.

Stable hooks for tests and scripts: ``<span class="headline" id="headline-NAME" data-benchmark="NAME"
data-metric=... data-value=... data-low=... data-high=...>`` holds each headline, with ``data-value`` the
report's float exactly (``repr``), and ``<span class="comparable" data-benchmark=... data-comparable=...>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import answer_order, explorer, pages, plots, rotation
from .benchmarks import report_specs
from .pages import Html, cell, estimate_attrs, interval, is_estimate, number
from .runs import model_name
from .section import ESTIMATE_ORDER, SECTION_PARTS, published_column_value
from .stats import format_detectable, format_estimate, format_ties


def claims(bench: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each field of a section and the parts of the page that render it (one each, by :data:`SECTION_PARTS`)."""
    named = {part: [f for f in fields if f in bench] for part, fields in SECTION_PARTS.items()}
    found: dict[str, list[str]] = {field: [] for field in bench}
    for part, fields in named.items():
        for field in fields:
            found[field].append(part)
    for field, parts in found.items():
        if not parts:
            parts.append("estimates" if is_estimate(bench[field]) else "others")
    return found


# ----------------------------------------------------------------------------- one benchmark


def _headline(name: str, bench: Mapping[str, Any]) -> dict[str, Any]:
    metric = bench.get("headline_metric")
    estimate = bench.get(metric) if isinstance(metric, str) else None
    comparable = bench.get("paper_comparable") if isinstance(bench.get("paper_comparable"), Mapping) else {}
    known = {
        "n_items": "items scored: {}",
        "n_invalid": "no usable answer (INVALID): {}",
        "accuracy_over": "accuracy over: {} items",
        "tasks": "tasks: {}",
    }
    ties = bench.get("ties")
    untied = isinstance(ties, Mapping) and not ties.get("n_tied")
    detectable = bench.get("detectable")
    return {
        "metric": metric,
        "estimate": estimate,
        "numbers": {"benchmark": name, "metric": metric, **estimate_attrs(estimate)},
        "verdict": "yes" if comparable.get("value") is not None else "no",
        "reason": comparable.get("reason"),
        "facts": "; ".join(
            [
                text.format(", ".join(map(str, bench[key])) if key == "tasks" else bench[key])
                for key, text in known.items()
                if key in bench
            ]
            # No tie: the rule that would have broken one (format_ties has lines for tied items only).
            + ([f"tied best log-likelihoods: 0 ({ties.get('rule')})"] if untied else [])
        ),
        "ties": format_ties(ties),
        # The last line is the warning when the ties could move the headline: shown as a caveat, never muted.
        "ties_warned": isinstance(ties, Mapping) and bool(ties.get("could_move_headline")),
        "detectable": format_detectable(detectable, "a model of the same accuracy") if detectable is not None else None,
        "subset": _subset(bench),
    }


def _subset(bench: Mapping[str, Any]) -> str | None:
    """A section's item set in words where it is not the published one (report.json's "subset")."""
    return bench["subset"] if isinstance(bench.get("subset"), str) else None


def _component_subset(coverage: Any) -> str | None:
    """A component's scored items against its published count where the report found it incomplete."""
    if not isinstance(coverage, Mapping) or coverage.get("complete") is not False:
        return None
    scored, expected = coverage.get("scored"), coverage.get("expected")
    return f"{scored} of {expected} items" if isinstance(expected, int) else f"{scored} items, no published count"


def _component_figure(bench: Mapping[str, Any], published: Mapping[str, Mapping[str, Any]]) -> plots.Figure:
    metric = bench.get("headline_metric")
    components = bench.get("components") or {}
    estimate = bench.get(metric) if isinstance(metric, str) else None
    coverage = bench.get("coverage") if isinstance(bench.get("coverage"), Mapping) else {}
    rows = [plots.Row(f"overall ({metric})", *interval(estimate), subset=_subset(bench))] + [
        plots.Row(
            str(c),
            *interval(entry.get("accuracy") if isinstance(entry, Mapping) else None),
            subset=_component_subset(coverage.get(c)),
        )
        for c, entry in components.items()
    ]
    headlines = bench.get("published_headlines") or {}
    if bench.get("caveats"):  # this run's labels are not gold: the published points are no yardstick for it
        published = {}
    # A partial run's average is no average over the published items: no published average on its row.
    full = bool(bench.get("full_coverage"))
    markers = {
        model: [number(headlines.get(model)) if full else None] + [number(numbers.get(c)) for c in components]
        for model, numbers in published.items()
    }
    markers = {model: values for model, values in markers.items() if any(v is not None for v in values)}
    title = f"{bench.get('title', '')}: accuracy per component"
    return plots.dot_whisker_figure(rows, title, "accuracy (95% CI)", markers)


def _components(bench: Mapping[str, Any], plot: bytes | None) -> dict[str, Any] | None:
    components = bench.get("components") or {}
    if not components or plot is None:
        return None
    columns = list(dict.fromkeys(k for entry in components.values() if isinstance(entry, Mapping) for k in entry))
    return {
        "plot": plots.data_uri(plot),
        "alt": f"{bench.get('title', '')}: accuracy per component, with published numbers",
        "columns": columns,
        "rows": [[c, *(cell(entry.get(k, "")) for k in columns)] for c, entry in components.items()],
    }


def _component_groups(bench: Mapping[str, Any]) -> dict[str, Any] | None:
    groups = bench.get("component_groups")
    if not groups:
        return None
    columns = list(dict.fromkeys(k for entry in groups.values() for k in entry))
    return {
        "columns": columns,
        "rows": [[g, *(_generic(entry.get(k, "")) for k in columns)] for g, entry in groups.items()],
    }


def _generic(value: Any) -> Html:
    return pages.macro("generic", value)


def _has_confusion(bench: Mapping[str, Any]) -> bool:
    matrix = bench.get("confusion_matrix")
    return isinstance(matrix, Mapping) and bool(matrix.get("counts"))


def _confusion(bench: Mapping[str, Any], plot: bytes | None) -> dict[str, Any] | None:
    if not _has_confusion(bench) or plot is None:
        return None
    matrix = bench["confusion_matrix"]
    return {
        "plot": plots.data_uri(plot),
        "predicted": list(matrix.get("predicted", [])),
        "rows": [[gold, *row] for gold, row in zip(matrix.get("gold", []), matrix["counts"], strict=True)],
    }


def _calibration(bench: Mapping[str, Any], plot: bytes | None) -> dict[str, Any] | None:
    cal = _part(bench, "calibration")
    if cal is None or plot is None:
        return None
    return {
        "left_out": ", ".join(f"{k} {v}" for k, v in (cal.get("left_out") or {}).items()),
        "plot": plots.data_uri(plot),
        "filled": [b for b in cal.get("reliability") or [] if isinstance(b, Mapping) and b.get("n")],
    }


def _part(bench: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """A section's part ``name``, or None where the section has none (absent, empty or not an object)."""
    value = bench.get(name)
    return value if isinstance(value, Mapping) and value else None


def _answer_order(bench: Mapping[str, Any]) -> dict[str, Any] | None:
    order = _part(bench, "answer_order")
    if order is None:
        return None
    rows = []
    for position in order.get("positions") or []:
        by_gold, gold, chosen = (
            (order.get(key) or {}).get(position) or {}
            for key in ("accuracy_by_gold_position", "gold_positions", "chosen_positions")
        )
        rows.append(
            [position, by_gold.get("n"), format_estimate(by_gold.get("accuracy")), _count(gold), _count(chosen)]
        )
    return _tested(answer_order.format_flag(order), answer_order.NULL, order, rows)


def _answer_distribution(bench: Mapping[str, Any]) -> dict[str, Any] | None:
    dist = _part(bench, "answer_distribution")
    if dist is None:
        return None
    answers = [dist.get(key) or {} for key in ("gold_answers", "chosen_answers")]
    rows = [[label, *(_count(counts.get(label) or {}) for counts in answers)] for label in dist.get("labels") or []]
    return _tested(answer_order.format_answer_flag(dist), answer_order.ANSWER_NULL, dist, rows)


def _count(entry: Mapping[str, Any]) -> str:
    """A count and its share with the share's CI, as one cell."""
    return f"{entry.get('count')}: {format_estimate(entry.get('share'))}"


def _tested(flag: str | None, null: str, part: Mapping[str, Any], rows: list[list[Any]]) -> dict[str, Any]:
    """A part that tests chosen against gold counts: its flag, null hypothesis, test in words and rows."""
    return {"flag": flag, "null": null, "test": answer_order.format_test(part.get("test")), "rows": rows}


def _rotation(bench: Mapping[str, Any]) -> dict[str, Any] | None:
    turned = _part(bench, "rotation")
    if turned is None:
        return None
    by_rotation = turned.get("accuracy_by_rotation") or {}
    return {
        "line": rotation.format_line(turned),
        "rows": [[r, entry.get("n"), format_estimate(entry.get("accuracy"))] for r, entry in by_rotation.items()],
    }


def _hit_text(bench: Mapping[str, Any]) -> str | None:
    lengths = bench.get("reply_lengths")
    if not isinstance(lengths, Mapping):
        return None
    hit = lengths.get("hit_max_gen_toks")
    if not isinstance(hit, Mapping):
        return f"n/a ({lengths.get('hit_max_gen_toks_reason')})"
    share = f" ({hit['share']:.1%})" if isinstance(hit.get("share"), float) else ""
    return f"{hit.get('n')} of {hit.get('of')}{share}"


def _published(bench: Mapping[str, Any], published: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    if not published:
        return None
    keys = list(dict.fromkeys(k for numbers in published.values() for k in numbers))
    who = "this run" if bench.get("full_coverage") else "this run (partial coverage: its average is not shown here)"
    run_row = [
        who,
        *("-" if value is None else cell(value) for value in (published_column_value(bench, k) for k in keys)),
    ]
    return {
        "columns": keys,
        "rows": [run_row] + [[m, *(cell(n.get(k)) if k in n else "-" for k in keys)] for m, n in published.items()],
        "css": ["this-run"] + ["published"] * len(published),
        "caveat": f" (not comparable with this run: {'; '.join(bench['caveats'])})" if bench.get("caveats") else "",
    }


def shown_labels(name: str) -> explorer.ShownLabels | None:
    """The section's labels as the model saw them (its spec's Report.shown_labels), for its item explorer."""
    spec = next((spec for spec in report_specs() if spec.name == name), None)
    return spec.report.shown_labels if spec is not None else None


def _items(
    name: str,
    bench: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]] | None = None,
    template_system: str | None = None,
    budget: int = 0,
    measured: explorer.ItemsMeasured | None = None,
    elsewhere: explorer.RowsElsewhere | None = None,
) -> dict[str, Any] | None:
    """The section's item explorer (every item the page's budget holds), or where its items are when the page has
    none; ``template_system``: the chat template's own system message, marked in the prompts; ``measured``: its
    records' :func:`.explorer.items_measured`, where made already; ``elsewhere``: its last records, held by another
    process (:func:`.explorer.items_data`)."""
    listed = bench.get("items") if isinstance(bench.get("items"), Mapping) else {}
    file = str(listed.get("file") or f"items_{name}.jsonl")
    if records is None:
        return {"file": file, "explorer": None} if listed else None
    title = str(bench.get("title", name))
    data = explorer.items_data(
        name, title, records, file, template_system, budget, shown_labels(name), measured, elsewhere
    )
    heading = (
        f"{data['n_total']} items of {title}: filter by component, gold, prediction and outcome, "
        "search the prompts and replies, sort by a column, click an item for its prompt, reply and parse."
    )
    return {"file": file, "explorer": explorer.explorer(f"explorer-{name}", data, heading)}


def _published_numbers(bench: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(m): n for m, n in (bench.get("reference") or {}).items() if isinstance(n, Mapping)}


def figures(report: Mapping[str, Any]) -> dict[str, plots.Figure]:
    """Every figure of a report, once, by name: per section the accuracy per component (the page's), its confusion
    matrix, its reliability diagram and its risk-coverage curve (the page's, and the report's PNG files: the names
    that end in .png)."""
    out = {}
    for name, bench in (report.get("benchmarks") or {}).items():
        title = str(bench.get("title", name))
        if bench.get("components"):
            out[f"components_{name}"] = _component_figure(bench, _published_numbers(bench))
        if _has_confusion(bench):
            out[f"confusion_{name}.png"] = plots.confusion_figure({**bench, "title": title})
        if _part(bench, "calibration") is not None:
            out[f"reliability_{name}.png"] = plots.reliability_figure(bench["calibration"], f"{title}: reliability")
        if _part(bench, "selective") is not None:
            out[f"risk_coverage_{name}.png"] = plots.risk_coverage_figure(bench["selective"], f"{title}: risk-coverage")
    return out


def section_view(name: str, bench: Mapping[str, Any], drawn: Mapping[str, bytes]) -> dict[str, Any]:
    """What templates/section.html.j2 shows of one section: its fields, formatted, each in the part that claims it
    (its item explorer, ``item_explorer``, where its items file is until :func:`render_html` adds the explorer);
    ``drawn``: the report's figures (:func:`figures`), drawn."""
    published = _published_numbers(bench)
    claimed = claims(bench)
    estimates = [k for k in ESTIMATE_ORDER if k in bench] + [
        k for k, parts in claimed.items() if parts == ["estimates"] and k not in ESTIMATE_ORDER
    ]
    return {
        "name": name,
        "bench": bench,
        "title": str(bench.get("title", name)),
        "headline": _headline(name, bench),
        "estimates": [
            [k, format_estimate(bench[k]), bench[k].get("n", "") if is_estimate(bench[k]) else ""] for k in estimates
        ],
        "components": _components(bench, drawn.get(f"components_{name}")),
        "component_groups": _component_groups(bench),
        "confusion": _confusion(bench, drawn.get(f"confusion_{name}.png")),
        "calibration": _calibration(bench, drawn.get(f"reliability_{name}.png")),
        "risk_coverage": plots.data_uri(drawn[f"risk_coverage_{name}.png"])
        if f"risk_coverage_{name}.png" in drawn
        else None,
        "answer_order": _answer_order(bench),
        "answer_distribution": _answer_distribution(bench),
        "rotation": _rotation(bench),
        "hit_text": _hit_text(bench),
        "published": _published(bench, published),
        "others": {k: bench[k] for k, parts in claimed.items() if parts == ["others"]},
        "item_explorer": _items(name, bench),
    }


# ----------------------------------------------------------------------------- the page


def template_system_text(run: Mapping[str, Any]) -> str | None:
    """The run's chat template's own system message (report.json's run.chat_template_system_message), if any."""
    message = run.get("chat_template_system_message")
    text = message.get("text") if isinstance(message, Mapping) else None
    return text if isinstance(text, str) and text else None


def budgets(counts: Mapping[str, int], budget: int) -> dict[str, int]:
    """Each explorer's share of a page's budget, in proportion to its items."""
    total = sum(counts.values())
    return {name: budget * n // total if total else budget for name, n in counts.items()}


def overlap_line(found: Mapping[str, Any]) -> str:
    """One entry of report.json's ``overlaps`` as the sentence report.md and report.html give."""
    a, b = found["sections"]
    return (
        f"{a} and {b} share items (by {', '.join(found['by'])}): {found['items'][a]} of {a}'s {found['of'][a]} and "
        f"{found['items'][b]} of {b}'s {found['of'][b]}; an average over both counts them twice."
    )


def render_html(
    report: Mapping[str, Any],
    items: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    drawn: Mapping[str, bytes] | None = None,
    measured: Mapping[str, explorer.ItemsMeasured] | None = None,
    elsewhere: Mapping[str, explorer.RowsElsewhere] | None = None,
) -> bytes:
    """report.html (UTF-8); ``items``: each section's item records (items_<section>.jsonl), for its item explorer;
    ``drawn``: its figures (:func:`figures`), drawn here when not given; ``measured``: each section's
    :func:`.explorer.items_measured`, where made already; ``elsewhere``: each section's last records, where another
    process holds them (``items`` then holds the others)."""
    drawn = plots.drawn(figures(report)) if drawn is None else drawn
    run = report.get("run") or {}
    benchmarks = report.get("benchmarks") or {}
    items = items or {}
    summary = [
        [
            pages.macro("link", f"#benchmark-{name}", bench.get("title", name)),
            bench.get("headline_metric", "n/a"),
            format_estimate(bench.get(bench.get("headline_metric", ""))),
            bench.get("n_items", "n/a"),
            "yes" if bench.get("full_coverage") else "no",
            "yes" if (bench.get("paper_comparable") or {}).get("value") is not None else "no",
        ]
        for name, bench in benchmarks.items()
    ]
    origin = "; ".join(
        filter(
            None,
            [report.get("generated_by"), report.get("schema_version") and f"report schema {report['schema_version']}"],
        )
    )
    with pages.blocks_placed() as blocks:
        views = {name: section_view(name, bench, drawn) for name, bench in benchmarks.items()}

        def page() -> bytes:
            return blocks.filled(
                pages.render(
                    "report.html.j2",
                    label=model_name(run),
                    summary=summary,
                    overlaps=[overlap_line(found) for found in report.get("overlaps") or []],
                    sections=list(views.values()),
                    run=run,
                    origin=origin,
                    about={k: v for k, v in report.items() if k not in ("run", "benchmarks")},
                    script=explorer.script_tag() if items else None,
                )
            )

        # The explorers share what the rest of the page leaves of its limit, each section in proportion to its items.
        elsewhere = elsewhere or {}
        counts = {name: len(items[name]) + (elsewhere[name].n if name in elsewhere else 0) for name in items}
        shares = budgets({name: counts[name] for name in views if name in items}, explorer.budget_left(page()))
        for name, budget in shares.items():
            views[name]["item_explorer"] = _items(
                name,
                benchmarks[name],
                items[name],
                template_system_text(run),
                budget,
                (measured or {}).get(name),
                elsewhere.get(name),
            )
        return page()
