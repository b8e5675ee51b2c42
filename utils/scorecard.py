"""One self-contained HTML page (``report.html``) for a report: every benchmark, every setting and every item.

The page needs no network: styles are inline and figures are base64 PNG data URIs. Every string taken
from the report is escaped (model names and replies are hostile input). Benchmarks are rendered from the
schema's known fields first (headline, estimates, rates, components with a dot-and-whisker plot, coverage,
component groups, per-class scores, confusion matrix, published numbers, settings, notes, and an item explorer
over items_<section>.jsonl's records, :mod:`.explorer`); any other field
of a benchmark (e.g. a fact-checking table) is rendered generically, so nothing in the report is left out.

Stable hooks for tests and scripts: ``<span class="headline" id="headline-NAME" data-benchmark="NAME"
data-metric=... data-value=... data-low=... data-high=...>`` holds each headline, with ``data-value`` the
report's float exactly (``repr``), and ``<span class="comparable" data-benchmark=... data-comparable=...>``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import explorer, plots
from .runs import model_name
from .stats import format_detectable, format_estimate, format_ties

ESTIMATE_ORDER = (
    "accuracy_micro",
    "accuracy_macro",
    "accuracy_all_micro",
    "accuracy_all_macro",
    "answered",
    "macro_f1",
)
# Fields the benchmark sections render themselves; every other field goes to the generic "other fields" table.
_SECTION_FIELDS = frozenset(
    {
        "title",
        "tasks",
        "n_items",
        "n_invalid",
        "accuracy_over",
        "headline_metric",
        "rates",
        "components",
        "coverage",
        "full_coverage",
        "paper_comparable",
        "reference",
        "notes",
        "component_groups",
        "per_class",
        "confusion_matrix",
        "compared_metric",
        "published_headlines",
        "caveats",
        "items",
        "subgroups",
        "paired_variants",
        "calibration",
        "reply_lengths",
        "ties",
        "detectable",
    }
)

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;
color:#1b1f24;padding:0 16px;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:2px solid #d0d7de;padding-bottom:4px;margin-top:2em}h3{margin-top:1.4em}
table{border-collapse:collapse;margin:8px 0 16px;font-size:0.9em}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}tr:nth-child(even) td{background:#fbfcfd}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.headline-box{background:#f0f6ff;border:1px solid #b6d4fe;border-radius:6px;padding:10px 14px;margin:10px 0}
.headline{font-size:1.5em;font-weight:600}td .headline{font-size:1em}
.yes{color:#116329;font-weight:600}.no{color:#a40e26;font-weight:600}
.published td{color:#57606a;font-style:italic}img{max-width:100%;border:1px solid #eaeef2;margin:6px 0}
code{background:#f6f8fa;padding:0 3px;border-radius:3px;word-break:break-all}table table{margin:0;font-size:1em}
.caveat{color:#a40e26;font-weight:600}.muted{color:#57606a}.this-run td{font-weight:600}.wide{overflow-x:auto}
"""


NUMERIC = ' class="num"'


class Html(str):
    """A fragment that is already HTML (built here); every other string is escaped when placed in a page."""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def cell(value: Any) -> str:
    return value if isinstance(value, Html) else esc(value)


def attrs(**values: Any) -> str:
    """``data-*`` attributes (underscores become dashes); None values are left out."""
    return "".join(
        f' data-{name.replace("_", "-")}="{esc(value)}"' for name, value in values.items() if value is not None
    )


def table(
    header: Sequence[Any],
    rows: Iterable[Sequence[Any]],
    numeric: Sequence[int] = (),
    row_css: Sequence[str] | None = None,
) -> Html:
    """A table of cells (escaped unless :class:`Html`); ``numeric`` columns are right-aligned."""
    head = "".join(f"<th>{cell(h)}</th>" for h in header)
    body = []
    for index, row in enumerate(rows):
        css = f' class="{esc(row_css[index])}"' if row_css and row_css[index] else ""
        cells = "".join(f"<td{NUMERIC if i in numeric else ''}>{cell(v)}</td>" for i, v in enumerate(row))
        body.append(f"<tr{css}>{cells}</tr>")
    return Html(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def image(png: bytes, alt: str) -> Html:
    return Html(f'<img alt="{esc(alt)}" src="{plots.data_uri(png)}">')


def page(title: str, body: str, script: bool = False) -> str:
    """A self-contained page; ``script``: it holds item explorers, and ends with their one inline script."""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}{explorer.STYLE}</style>'
        f"</head><body>\n{body}\n{explorer.script_tag() if script else ''}</body></html>\n"
    )


def is_estimate(value: Any) -> bool:
    return isinstance(value, Mapping) and all(key in value for key in ("value", "low", "high"))


def number(value: Any) -> float | None:
    """A report field as a float; None for anything that is not a number (booleans included)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def estimate_attrs(estimate: Any) -> dict[str, Any]:
    """The exact numbers of an estimate for data attributes (``repr`` of each float, as JSON writes it)."""
    if not is_estimate(estimate):
        return {"value": ""}
    return {
        key: repr(number(estimate.get(key))) if number(estimate.get(key)) is not None else ""
        for key in ("value", "low", "high")
    } | ({"n": estimate["n"]} if "n" in estimate else {})


def generic(value: Any) -> Html:
    """Any JSON value as HTML: estimates formatted, mappings of records as tables, mappings as key/value tables."""
    if is_estimate(value):
        return Html(esc(format_estimate(value)))
    if isinstance(value, Mapping):
        if not value:
            return Html('<span class="muted">(empty)</span>')
        records = list(value.values())
        if len(records) > 1 and all(
            isinstance(r, Mapping) and not is_estimate(r) and all(_flat(v) for v in r.values()) for r in records
        ):
            columns = list(dict.fromkeys(key for r in records for key in r))
            return table(["", *columns], ([key, *(generic(r.get(c, "")) for c in columns)] for key, r in value.items()))
        return table(["field", "value"], ([key, generic(v)] for key, v in value.items()))
    if isinstance(value, (list, tuple)):
        if all(_scalar(v) for v in value):
            return Html(esc(", ".join(map(_scalar_text, value))) if value else '<span class="muted">(none)</span>')
        return Html("<ol>" + "".join(f"<li>{generic(v)}</li>" for v in value) + "</ol>")
    return Html(esc(_scalar_text(value)))


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _flat(value: Any) -> bool:
    return _scalar(value) or is_estimate(value) or (isinstance(value, (list, tuple)) and all(_scalar(v) for v in value))


def _scalar_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(round(value, 6))  # settings such as a timestamp keep every digit before the point
    return str(value)


def _value_cell(value: Any) -> Html:
    """A number in a table of results: floats to 3 places, None (nothing to average) as n/a."""
    if value is None:
        return Html("n/a")
    return Html(esc(f"{value:.3f}")) if isinstance(value, float) else generic(value)


# ----------------------------------------------------------------------------- one benchmark


def _headline_box(name: str, bench: Mapping[str, Any]) -> str:
    metric = bench.get("headline_metric")
    estimate = bench.get(metric) if isinstance(metric, str) else None
    comparable = bench.get("paper_comparable") if isinstance(bench.get("paper_comparable"), Mapping) else {}
    verdict = "yes" if comparable.get("value") is not None else "no"
    numbers = attrs(benchmark=name, metric=metric, **estimate_attrs(estimate))
    headline = f'<span class="headline" id="headline-{esc(name)}"{numbers}>{esc(format_estimate(estimate))}</span>'
    what = f"{esc(metric)} (the paper's number), 95% CI:" if metric else "no headline metric in this report entry"
    reason = f" ({esc(comparable['reason'])})" if comparable.get("reason") else ""
    known = {
        "n_items": "items scored: {}",
        "n_invalid": "no usable answer (INVALID): {}",
        "accuracy_over": "accuracy over: {} items",
        "tasks": "tasks: {}",
    }
    facts = "; ".join(
        text.format(", ".join(map(str, bench[key])) if key == "tasks" else bench[key])
        for key, text in known.items()
        if key in bench
    )
    flag = attrs(benchmark=name, comparable="true" if verdict == "yes" else "false")
    caveats = "".join(
        f'<div class="caveat"{attrs(benchmark=name)}>caveat: {esc(caveat)}</div>'
        for caveat in bench.get("caveats") or []
    )
    ties = bench.get("ties")
    tie_lines = format_ties(ties)
    warned = isinstance(ties, Mapping) and bool(ties.get("could_move_headline"))
    # The last line is the warning when the ties could move the headline: shown as a caveat, never muted.
    ties_html = "".join(
        f'<div class="{"caveat ties-warning" if warned and index == len(tie_lines) - 1 else "muted ties"}"'
        f"{attrs(benchmark=name)}>{esc(line)}</div>"
        for index, line in enumerate(tie_lines)
    )
    detectable = bench.get("detectable")
    mdd = (
        f'<div class="muted">{esc(format_detectable(detectable, "a model of the same accuracy"))}</div>'
        if detectable is not None
        else ""
    )
    return (
        f'<div class="headline-box"><div>{what} {headline}</div>{caveats}{ties_html}'
        f'<div>paper-comparable: <span class="comparable {verdict}"{flag}>{verdict}</span>{reason}</div>'
        f'<div class="muted">{esc(facts)}</div>{mdd}</div>'
    )


def _estimates(bench: Mapping[str, Any]) -> list[tuple[str, Any]]:
    known = [(key, bench[key]) for key in ESTIMATE_ORDER if key in bench]
    return known + [
        (key, value)
        for key, value in bench.items()
        if key not in ESTIMATE_ORDER and key not in _SECTION_FIELDS and is_estimate(value)
    ]


def _run_value(bench: Mapping[str, Any], key: str) -> float | None:
    """This run's number under a published table's column name (a component, the headline, an estimate)."""
    component = bench.get("components", {}).get(key)
    if isinstance(component, Mapping):
        return number((component.get("accuracy") or {}).get("value"))
    # The column a published table gives its headline under ("macro", "accuracy"): this run's headline.
    headlines = bench.get("published_headlines") or {}
    reference = bench.get("reference") or {}
    if any(headlines.get(model) == numbers.get(key) for model, numbers in reference.items() if model in headlines):
        if not bench.get("full_coverage"):  # a partial average is not shown beside the published full ones
            return None
        key = bench.get("headline_metric")
    return number(bench[key]["value"]) if is_estimate(bench.get(key)) else None


def _subset(bench: Mapping[str, Any]) -> str | None:
    """A section's item set in words where it is not the published one (report.json's "subset")."""
    return bench["subset"] if isinstance(bench.get("subset"), str) else None


def _component_subset(coverage: Any) -> str | None:
    """A component's scored items against its published count where the report found it incomplete."""
    if not isinstance(coverage, Mapping) or coverage.get("complete") is not False:
        return None
    scored, expected = coverage.get("scored"), coverage.get("expected")
    return f"{scored} of {expected} items" if isinstance(expected, int) else f"{scored} items, no published count"


def _component_plot(bench: Mapping[str, Any], published: Mapping[str, Mapping[str, Any]]) -> Html:
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
    return image(plots.dot_whisker_png(rows, title, "accuracy (95% CI)", markers), f"{title}, with published numbers")


def _small_n(entry: Mapping[str, Any], key: str = "n") -> str:
    return f"{entry.get(key)}" + (" (small: n < 30)" if entry.get("small") else "")


def _beyond_accuracy(name: str, bench: Mapping[str, Any]) -> list[str]:
    """Subgroups, paired variants, calibration (with its reliability diagram) and reply lengths of a section."""
    parts: list[str] = []
    subgroups = bench.get("subgroups")
    if isinstance(subgroups, Mapping) and subgroups:
        parts += [
            "<h3>Accuracy by subgroup (95% CI)</h3>",
            table(
                ["subgroup", "items", "accuracy [95% CI]", "accuracy_all [95% CI]", "answered"],
                (
                    [
                        group,
                        _small_n(entry),
                        format_estimate(entry.get("accuracy")),
                        format_estimate(entry.get("accuracy_all")) if "accuracy_all" in entry else "-",
                        format_estimate(entry.get("answered")) if "answered" in entry else "-",
                    ]
                    for group, entry in subgroups.items()
                    if isinstance(entry, Mapping)
                ),
                numeric=(1,),
            ),
        ]
    paired = bench.get("paired_variants")
    if isinstance(paired, Mapping):
        parts += [
            f"<h3>Paired differences from {esc(paired.get('reference'))} on the same questions</h3>",
            f'<p class="muted">{esc(paired.get("method"))}</p>',
        ]
        if paired.get("reason"):
            parts.append(f"<p>not computed: {esc(paired['reason'])}</p>")
        else:
            parts.append(
                table(
                    [
                        "variant",
                        "pairs",
                        paired.get("metric"),
                        paired.get("reference"),
                        "difference [95% CI]",
                        "unpaired (variant)",
                        f"unpaired ({paired.get('reference')})",
                    ],
                    (
                        [
                            variant,
                            _small_n(entry, "n_pairs"),
                            _value_cell(entry.get("accuracy", "n/a")),
                            _value_cell(entry.get("reference_accuracy", "n/a")),
                            Html(
                                f'<span class="paired-difference"{attrs(benchmark=name, variant=variant, **estimate_attrs(entry.get("difference")))}>'
                                f"{esc(format_estimate(entry.get('difference')))}</span>"
                            ),
                            _value_cell(entry.get("unpaired")),
                            _value_cell(entry.get("reference_unpaired")),
                        ]
                        for variant, entry in (paired.get("variants") or {}).items()
                    ),
                    numeric=(1, 2, 3, 5, 6),
                )
            )
    cal = bench.get("calibration")
    if isinstance(cal, Mapping):
        left_out = ", ".join(f"{k} {v}" for k, v in (cal.get("left_out") or {}).items())
        parts += [
            "<h3>Calibration</h3>",
            f"<p>confidence: {esc(cal.get('confidence'))}; bins {esc(', '.join(map(str, cal.get('bins') or [])))}; "
            f"items with a confidence: {esc(cal.get('n'))}; left out: {esc(left_out)}</p>",
            table(
                ["measure", "value [95% CI]"],
                [
                    [
                        "ECE",
                        Html(
                            f'<span class="ece"{attrs(benchmark=name, **estimate_attrs(cal.get("ece")))}>{esc(format_estimate(cal.get("ece")))}</span>'
                        ),
                    ],
                    [
                        f"Brier score ({cal.get('brier_kind')})",
                        Html(
                            f'<span class="brier"{attrs(benchmark=name, **estimate_attrs(cal.get("brier")))}>{esc(format_estimate(cal.get("brier")))}</span>'
                        ),
                    ],
                ],
            ),
            image(
                plots.plain_text_png(plots.reliability_png, cal, f"{bench.get('title', name)}: reliability"),
                f"reliability diagram of {bench.get('title', name)}",
            ),
        ]
        filled = [b for b in cal.get("reliability") or [] if isinstance(b, Mapping) and b.get("n")]
        if filled:
            parts.append(
                table(
                    ["confidence bin", "items", "mean confidence", "accuracy"],
                    (
                        [
                            b.get("bin"),
                            b.get("n"),
                            _value_cell(b.get("mean_confidence")),
                            _value_cell(b.get("accuracy")),
                        ]
                        for b in filled
                    ),
                    numeric=(1, 2, 3),
                )
            )
    lengths = bench.get("reply_lengths")
    if isinstance(lengths, Mapping):
        hit = lengths.get("hit_max_gen_toks")
        hit_text = (
            f"{hit.get('n')} of {hit.get('of')}"
            + (f" ({hit['share']:.1%})" if isinstance(hit.get("share"), float) else "")
            if isinstance(hit, Mapping)
            else f"n/a ({lengths.get('hit_max_gen_toks_reason')})"
        )
        keys = ("n", "mean", "min", "p25", "median", "p75", "p90", "max")
        parts += [
            f"<h3>Reply lengths ({esc(lengths.get('unit'))})</h3>",
            f'<p class="muted">{esc(lengths.get("unit_source"))}</p>',
            table(list(keys), [[_value_cell(lengths.get(k)) for k in keys]], numeric=tuple(range(len(keys)))),
            f"<p>max_gen_toks: {esc(lengths.get('max_gen_toks') or 'not logged')}; replies that reached it: "
            f'<span class="hit-max-gen-toks"{attrs(benchmark=name)}>{esc(hit_text)}</span> (lm-eval\'s evaluation '
            "time, for the whole run, is in the run settings)</p>",
        ]
    return parts


def interval(estimate: Any) -> tuple[float | None, float | None, float | None]:
    if not is_estimate(estimate):
        return None, None, None
    return number(estimate["value"]), number(estimate["low"]), number(estimate["high"])


def items_part(
    name: str, bench: Mapping[str, Any], records: Sequence[Mapping[str, Any]] | None, template_system: str | None = None
) -> list[str]:
    """The section's item explorer (every item, filterable), or where its items are when the page has none;
    ``template_system``: the chat template's own system message, marked in the prompts."""
    listed = bench.get("items") if isinstance(bench.get("items"), Mapping) else {}
    file = str(listed.get("file") or f"items_{name}.jsonl")
    if records is None:
        return ["<h3>Items</h3>", f"<p>Every item: <code>{esc(file)}</code> beside this page.</p>"] if listed else []
    data = explorer.items_data(name, str(bench.get("title", name)), records, file, template_system)
    heading = (
        f"{len(records)} items of {bench.get('title', name)}: filter by component, gold, prediction and outcome, "
        "search the prompts and replies, sort by a column, click an item for its prompt, reply and parse."
    )
    return [
        f'<h3 id="items-{esc(name)}">Items (<a href="{esc(file)}">{esc(file)}</a>)</h3>',
        explorer.explorer(f"explorer-{name}", data, heading),
    ]


def benchmark_section(
    name: str,
    bench: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]] | None = None,
    template_system: str | None = None,
) -> str:
    published = {str(m): n for m, n in (bench.get("reference") or {}).items() if isinstance(n, Mapping)}
    parts = [
        f'<section id="benchmark-{esc(name)}"{attrs(benchmark=name)}>',
        f"<h2>{esc(bench.get('title', name))} <code>{esc(name)}</code></h2>",
        _headline_box(name, bench),
    ]
    estimates = _estimates(bench)
    if estimates:
        parts += [
            "<h3>Overall estimates (95% CI)</h3>",
            table(
                ["metric", "value [95% CI]", "items"],
                ([k, format_estimate(e), e.get("n", "") if is_estimate(e) else ""] for k, e in estimates),
                numeric=(1, 2),
            ),
        ]
    if bench.get("rates"):
        parts += [
            "<h3>Rates (parse, format, answered, ...)</h3>",
            table(
                ["rate", "mean [95% CI]"], ([k, format_estimate(e)] for k, e in bench["rates"].items()), numeric=(1,)
            ),
        ]
    components = bench.get("components") or {}
    if components:
        columns = list(dict.fromkeys(k for entry in components.values() if isinstance(entry, Mapping) for k in entry))
        parts += [
            "<h3>Per component</h3>",
            _component_plot(bench, published),
            table(
                ["component", *columns],
                ([c, *(_value_cell(entry.get(k, "")) for k in columns)] for c, entry in components.items()),
                numeric=tuple(range(1, len(columns) + 1)),
            ),
        ]
    if bench.get("component_groups"):
        group_columns = list(dict.fromkeys(k for entry in bench["component_groups"].values() for k in entry))
        parts += [
            "<h3>Component groups</h3>",
            table(
                ["group", *group_columns],
                (
                    [g, *(generic(entry.get(k, "")) for k in group_columns)]
                    for g, entry in bench["component_groups"].items()
                ),
            ),
        ]
    if bench.get("coverage"):
        parts += [
            "<h3>Coverage (published vs loaded vs scored items)</h3>",
            table(
                ["component", "expected (published)", "loaded", "scored", "complete"],
                (
                    [
                        c,
                        generic(cov.get("expected")),
                        generic(cov.get("loaded")),
                        generic(cov.get("scored")),
                        "yes" if cov.get("complete") else "no",
                    ]
                    for c, cov in bench["coverage"].items()
                ),
                numeric=(1, 2, 3),
            ),
            f"<p>full coverage: {'yes' if bench.get('full_coverage') else 'no'}</p>",
        ]
    if bench.get("per_class"):
        parts += [
            "<h3>Per class</h3>",
            table(
                ["class", "precision", "recall", "F1", "support"],
                (
                    [label, *(_value_cell(s.get(k)) for k in ("precision", "recall", "f1", "support"))]
                    for label, s in bench["per_class"].items()
                ),
                numeric=(1, 2, 3, 4),
            ),
        ]
    matrix = bench.get("confusion_matrix")
    if isinstance(matrix, Mapping) and matrix.get("counts"):
        parts += [
            "<h3>Confusion matrix (rows gold, columns predicted)</h3>",
            image(
                plots.plain_text_png(plots.confusion_png, {**bench, "title": str(bench.get("title", name))}),
                f"confusion matrix of {bench.get('title', name)}",
            ),
            table(
                ["gold \\ predicted", *matrix.get("predicted", [])],
                ([gold, *row] for gold, row in zip(matrix.get("gold", []), matrix["counts"], strict=True)),
                numeric=tuple(range(1, len(matrix.get("predicted", [])) + 1)),
            ),
        ]
    parts += _beyond_accuracy(name, bench)
    if published:
        keys = list(dict.fromkeys(k for numbers in published.values() for k in numbers))
        mine = [_run_value(bench, k) for k in keys]
        who = "this run" if bench.get("full_coverage") else "this run (partial coverage: its average is not shown here)"
        run_row = [who, *("-" if value is None else _value_cell(value) for value in mine)]
        caveat = f" (not comparable with this run: {'; '.join(bench['caveats'])})" if bench.get("caveats") else ""
        parts += [
            f"<h3>Published numbers beside this run{esc(caveat)}</h3>",
            table(
                ["model", *keys],
                [run_row]
                + [[m, *(_value_cell(n.get(k)) if k in n else "-" for k in keys)] for m, n in published.items()],
                numeric=tuple(range(1, len(keys) + 1)),
                row_css=["this-run"] + ["published"] * len(published),
            ),
        ]
    others = {
        k: v for k, v in bench.items() if k not in _SECTION_FIELDS and k not in ESTIMATE_ORDER and not is_estimate(v)
    }
    if others:
        parts += ["<h3>Other fields</h3>", generic(others)]
    if bench.get("notes"):
        parts += ["<h3>Notes</h3>", "<ul>" + "".join(f"<li>{esc(note)}</li>" for note in bench["notes"]) + "</ul>"]
    parts += items_part(name, bench, records, template_system)
    parts.append("</section>")
    return "\n".join(parts)


# ----------------------------------------------------------------------------- the page


def template_system_text(run: Mapping[str, Any]) -> str | None:
    """The run's chat template's own system message (report.json's run.chat_template_system_message), if any."""
    message = run.get("chat_template_system_message")
    text = message.get("text") if isinstance(message, Mapping) else None
    return text if isinstance(text, str) and text else None


def render_html(report: Mapping[str, Any], items: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> str:
    """report.html; ``items``: each section's item records (items_<section>.jsonl), for its item explorer."""
    run = report.get("run") or {}
    benchmarks = report.get("benchmarks") or {}
    label = model_name(run)
    summary = table(
        ["benchmark", "headline metric", "value [95% CI]", "items", "full coverage", "paper-comparable"],
        (
            [
                Html(f'<a href="#benchmark-{esc(name)}">{esc(bench.get("title", name))}</a>'),
                bench.get("headline_metric", "n/a"),
                format_estimate(bench.get(bench.get("headline_metric", ""))),
                bench.get("n_items", "n/a"),
                "yes" if bench.get("full_coverage") else "no",
                "yes" if (bench.get("paper_comparable") or {}).get("value") is not None else "no",
            ]
            for name, bench in benchmarks.items()
        ),
        numeric=(2, 3),
    )
    about = {k: v for k, v in report.items() if k not in ("run", "benchmarks")}
    origin = "; ".join(
        filter(
            None,
            [report.get("generated_by"), report.get("schema_version") and f"report schema {report['schema_version']}"],
        )
    )
    body = [
        f"<h1>Evaluation scorecard: {esc(label)}</h1>",
        f'<p class="muted">{esc(origin)}'
        + (f" <code>{esc(run['results_file'])}</code>" if run.get("results_file") else "")
        + "</p>",
        "<h2>Summary</h2>",
        summary if benchmarks else "<p>No benchmark in this report.</p>",
        '<h2 id="run-settings">Run settings</h2>',
        generic(run),
        *(
            benchmark_section(name, bench, (items or {}).get(name), template_system_text(run))
            for name, bench in benchmarks.items()
        ),
        '<h2 id="about">About this report</h2>',
        generic(about),
    ]
    return page(f"Scorecard: {label}", "\n".join(body), script=bool(items))
