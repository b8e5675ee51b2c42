"""The report over an lm-eval run (``--output_path`` with ``--log_samples``), for every benchmark.

Each benchmark package declares :class:`~.scoring.BenchmarkSpec` objects (:mod:`.benchmarks`
finds them): which tasks a spec owns and how one logged sample becomes a
:class:`~.scoring.ScoredItem`, re-scored from the raw reply with the benchmark's own parser. From
those items this module computes, per benchmark: micro and macro accuracy, per-component
accuracy, per-item rates, per-class precision/recall/F1 and macro-F1, a confusion matrix with an
INVALID column, coverage against the published counts, and stratified bootstrap CIs for every
number (:mod:`.stats`).

Outputs: ``report.json`` (schema below, versioned), ``report.md``, one confusion-matrix PNG per
benchmark with gold classes, and ``items_<benchmark>.jsonl`` (one record per item) for benchmarks
whose items carry details, all written atomically (nothing is written unless every input parsed).

Benchmarks that leave unparseable answers unscored (``AccuracyOver.ANSWERED``, e.g. MillerQA)
get accuracy over the answered items, the same with unanswered items counted wrong
(``accuracy_all_*``) and the answered rate, everywhere accuracy is reported.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import scorecard, stats
from .benchmarks import report_specs
from .data import DataError
from .files import jsonl_bytes, utf8, write_atomically
from .plots import confusion_png
from .runs import Run, load_run, run_info
from .scoring import INVALID, AccuracyOver, BenchmarkSpec, Headline, ScoredItem

# 1.1: run.dtype, run.benchmark_settings, run.repeated_sample_lines, empty_tasks; Headline.NONE and "extra".
SCHEMA_VERSION = "1.1"
_fmt = stats.format_estimate


def score_run(run: Run, spec: BenchmarkSpec) -> list[ScoredItem]:
    items = []
    for task in sorted(t for t in run.samples if spec.owns(t)):
        for number, sample in enumerate(run.samples[task], start=1):
            try:
                items.append(spec.score_sample(task, sample))
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                raise DataError(f"{run.sample_files[task]}, line {number}: cannot score this sample ({exc!r})") from exc
    return sorted(items, key=lambda item: (item.task, item.doc_id))


# ----------------------------------------------------------------------------- computing


def _estimate(statistic, items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    return stats.bootstrap(statistic, len(items), strata=[spec.stratum_of(item) for item in items]).as_dict()


def _accuracies(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """Micro and macro accuracy (over components) of ``items``, as the spec defines accuracy.

    With ``AccuracyOver.ANSWERED`` they are taken over answered items only (None when there are
    none; the macro then averages the components that have answered items), next to
    ``accuracy_all_*`` (unanswered counted wrong) and the ``answered`` rate.
    """

    def pair(group: Sequence[ScoredItem], prefix: str) -> dict[str, Any]:
        if not group:
            return {f"{prefix}_micro": None, f"{prefix}_macro": None}
        correct, components = [i.correct for i in group], [i.component for i in group]
        return {
            f"{prefix}_micro": _estimate(stats.mean_of(correct), group, spec),
            f"{prefix}_macro": _estimate(stats.macro_mean_of(correct, components), group, spec),
        }

    if spec.accuracy_over is AccuracyOver.ALL:
        return pair(items, "accuracy")
    answered = [item for item in items if item.pred != INVALID]
    return {
        **pair(answered, "accuracy"),
        **pair(items, "accuracy_all"),
        "answered": _estimate(stats.mean_of([float(i.pred != INVALID) for i in items]), items, spec),
    }


def _by_component(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, list[ScoredItem]]:
    """Items per component: the published components first, in their order, then any others sorted."""
    groups: dict[str, list[ScoredItem]] = {}
    for item in items:
        groups.setdefault(item.component, []).append(item)
    order = [c for c in spec.expected_counts if c in groups] + sorted(set(groups) - set(spec.expected_counts))
    return {component: groups[component] for component in order}


def _coverage(by_component: Mapping[str, Sequence[ScoredItem]], spec: BenchmarkSpec, run: Run) -> dict[str, Any]:
    """Published vs loaded (before --limit, known when a task is one component) vs scored items per component."""
    task_components: dict[str, set[str]] = {}
    for component, group in by_component.items():
        for item in group:
            task_components.setdefault(item.task, set()).add(component)
    loaded: Counter = Counter()
    for task, components in task_components.items():
        original = run.results.get("n-samples", {}).get(task, {}).get("original")
        if original is not None and len(components) == 1:
            loaded[next(iter(components))] += original
    coverage = {}
    for component in list(spec.expected_counts) + [c for c in by_component if c not in spec.expected_counts]:
        expected = spec.expected_counts.get(component)
        scored = len(by_component.get(component, []))
        coverage[component] = {
            "expected": expected,
            "loaded": loaded.get(component),
            "scored": scored,
            "complete": expected is not None and scored == expected,
        }
    return coverage


def _paper_comparable(report: Mapping[str, Any], spec: BenchmarkSpec) -> dict[str, Any]:
    if spec.headline is Headline.NONE:
        return {
            "metric": None,
            "value": None,
            "reason": "the paper's numbers are not an accuracy: see this benchmark's own section",
        }
    full = report["full_coverage"]
    headline = report[spec.headline.value]
    return {
        "metric": spec.headline.value,
        "value": headline["value"] if full and headline else None,
        "reason": "all published items were scored"
        if full
        else "not every published item was scored (see coverage); this number is not comparable with the paper",
    }


def _components(
    by_component: Mapping[str, Sequence[ScoredItem]], spec: BenchmarkSpec, extras_names: Sequence[str]
) -> dict[str, Any]:
    out = {}
    for component, group in by_component.items():
        accuracies = _accuracies(group, spec)
        out[component] = {
            "n": len(group),
            "accuracy": accuracies["accuracy_micro"],
            **(
                {"accuracy_all": accuracies["accuracy_all_micro"], "answered": accuracies["answered"]}
                if spec.accuracy_over is AccuracyOver.ANSWERED
                else {}
            ),
            **{name: float(sum(i.extras[name] for i in group) / len(group)) for name in extras_names},
        }
    return out


def _component_groups(
    items: Sequence[ScoredItem], by_component: Mapping[str, Sequence[ScoredItem]], spec: BenchmarkSpec
) -> dict[str, Any]:
    out = {}
    for name, members in spec.component_groups.items():
        group = [item for item in items if item.component in members]
        if group:
            out[name] = {
                "components": [c for c in members if c in by_component],
                "missing_components": [c for c in members if c not in by_component],
                "n": len(group),
                **_accuracies(group, spec),
            }
    return out


def _classes(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """Per-class scores, macro-F1 and the confusion matrix (gold rows; predicted columns end in INVALID)."""
    labels = list(spec.labels)
    pred_labels = labels + sorted({i.pred for i in items} - set(labels) - {INVALID}) + [INVALID]
    gold, pred = [i.gold for i in items], [i.pred for i in items]
    matrix = stats.confusion_matrix(gold, pred, labels, pred_labels)
    return {
        "per_class": stats.per_class_scores(matrix, labels),
        "macro_f1": _estimate(stats.macro_f1_of(gold, pred, labels), items, spec),
        "confusion_matrix": {"gold": labels, "predicted": pred_labels, "counts": matrix.tolist()},
    }


def benchmark_report(items: Sequence[ScoredItem], spec: BenchmarkSpec, run: Run) -> dict[str, Any]:
    by_component = _by_component(items, spec)
    coverage = _coverage(by_component, spec, run)
    extras_names = sorted({name for item in items for name in item.extras})
    report: dict[str, Any] = {
        "title": spec.title,
        "tasks": sorted({item.task for item in items}),
        "n_items": len(items),
        "n_invalid": sum(item.pred == INVALID for item in items),
        "accuracy_over": spec.accuracy_over.value,
        "headline_metric": spec.headline.value,
        **_accuracies(items, spec),
        "rates": {
            name: _estimate(stats.mean_of([item.extras[name] for item in items]), items, spec) for name in extras_names
        },
        "components": _components(by_component, spec, extras_names),
        "coverage": coverage,
        "full_coverage": all(entry["complete"] for entry in coverage.values()),
        "paper_comparable": None,
        "reference": {model: dict(numbers) for model, numbers in spec.reference.items()},
        "notes": list(spec.notes),
    }
    report["paper_comparable"] = _paper_comparable(report, spec)
    if spec.component_groups:
        report["component_groups"] = _component_groups(items, by_component, spec)
    if spec.labels:
        report.update(_classes(items, spec))
    if spec.extra_section is not None:
        report["extra"] = dict(spec.extra_section(run))
    return report


def _distinct_settings(run: Run, spec: BenchmarkSpec) -> list[dict[str, Any]]:
    """Every distinct set of score-moving settings among the spec's samples (one, unless a run mixed them)."""
    seen: dict[str, dict[str, Any]] = {}
    for task in sorted(t for t in run.samples if spec.owns(t)):
        for sample in run.samples[task]:
            values = dict(spec.settings_of(sample))
            seen.setdefault(json.dumps(values, sort_keys=True, default=str), values)
    return list(seen.values())


def build(run: Run) -> tuple[dict[str, Any], dict[str, list[Mapping[str, Any]]]]:
    """The report of a run, and the per-item details of each benchmark whose items carry them."""
    report, details, _ = build_with_items(run)
    return report, details


def build_with_items(
    run: Run,
) -> tuple[dict[str, Any], dict[str, list[Mapping[str, Any]]], dict[str, list[ScoredItem]]]:
    """:func:`build`, and the scored items of each reported benchmark (for comparisons across runs)."""
    from lm_eval_tasks import __version__

    specs = report_specs()
    benchmarks, details, owned, settings, scored = {}, {}, set(), {}, {}
    for spec in specs:
        items = score_run(run, spec)
        owned |= {item.task for item in items}
        if spec.settings_of is not None and items:
            settings[spec.name] = _distinct_settings(run, spec)
        if items:
            benchmarks[spec.name] = benchmark_report(items, spec, run)
            scored[spec.name] = items
        if any(item.details for item in items):
            details[spec.name] = [{"task": item.task, "doc_id": item.doc_id, **item.details} for item in items]
    report = {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"lm-eval-medical-tasks {__version__}",
        "run": {**run_info(run), "benchmark_settings": settings},
        "bootstrap": stats.bootstrap_description(stratified_by={s.name: s.stratify_by.value for s in specs}),
        "benchmarks": benchmarks,
        "empty_tasks": sorted(task for task, samples in run.samples.items() if not samples),
        "unreported_tasks": sorted(task for task, samples in run.samples.items() if samples and task not in owned),
    }
    return report, details, scored


# ----------------------------------------------------------------------------- rendering


def _run_lines(report: Mapping[str, Any]) -> list[str]:
    run = report["run"]
    return [
        "# Evaluation report",
        "",
        f"- model: `{run['model']}` {json.dumps(run['model_args'], ensure_ascii=False)}",
        f"- chat template applied: {run['chat_template_applied']}; limit: {run['limit']}; lm-eval {run['lm_eval_version']}",
        f"- results: `{run['results_file']}`",
        *(
            f"- {name} settings: " + "; ".join(json.dumps(values, ensure_ascii=False) for values in distinct)
            for name, distinct in run.get("benchmark_settings", {}).items()
        ),
        f"- 95% CIs: percentile bootstrap, {report['bootstrap']['n_resamples']} resamples, seed {report['bootstrap']['seed']}",
        "",
    ]


def _headline_lines(name: str, bench: Mapping[str, Any], answered_only: bool) -> list[str]:
    comparable = bench["paper_comparable"]
    invalid = (
        "unanswered (no usable answer; left out of accuracy, counted wrong in accuracy_all)"
        if answered_only
        else "unparseable (INVALID, counted wrong)"
    )
    lines = [
        f"## {bench['title']} (`{name}`)",
        "",
        f"- items scored: {bench['n_items']}; {invalid}: {bench['n_invalid']}",
        "- no accuracy is the paper's number: see this benchmark's own section below"
        if bench["headline_metric"] == Headline.NONE.value
        else f"- **{bench['headline_metric']}** (the paper's number): {_fmt(bench[bench['headline_metric']])}",
        f"- accuracy_micro: {_fmt(bench['accuracy_micro'])}; accuracy_macro: {_fmt(bench['accuracy_macro'])}"
        + (" (over answered items)" if answered_only else ""),
    ]
    if answered_only:
        lines += [
            f"- accuracy_all_micro: {_fmt(bench['accuracy_all_micro'])}; accuracy_all_macro: "
            f"{_fmt(bench['accuracy_all_macro'])} (unanswered counted wrong)",
            f"- answered (coverage): {_fmt(bench['answered'])}",
        ]
    lines.append(f"- paper-comparable: {'yes' if comparable['value'] is not None else 'no'} ({comparable['reason']})")
    lines += [f"- {rate}: {_fmt(estimate)}" for rate, estimate in bench["rates"].items()]
    if "macro_f1" in bench:
        lines.append(f"- macro-F1: {_fmt(bench['macro_f1'])}")
    return lines


def _component_group_lines(bench: Mapping[str, Any], answered_only: bool) -> list[str]:
    if not bench.get("component_groups"):
        return []
    lines = [
        "",
        "| group | components | items | accuracy_macro [95% CI] | accuracy_micro [95% CI] |"
        + (" accuracy_all_macro | answered |" if answered_only else ""),
        "|---|---|---:|---|---|" + ("---|---|" if answered_only else ""),
    ]
    for group, entry in bench["component_groups"].items():
        members = ", ".join(entry["components"]) + (
            f" (missing: {', '.join(entry['missing_components'])})" if entry["missing_components"] else ""
        )
        lines.append(
            f"| {group} | {members} | {entry['n']} | {_fmt(entry['accuracy_macro'])} | "
            f"{_fmt(entry['accuracy_micro'])} |"
            + (f" {_fmt(entry['accuracy_all_macro'])} | {_fmt(entry['answered'])} |" if answered_only else "")
        )
    return lines


def _coverage_lines(bench: Mapping[str, Any], answered_only: bool) -> list[str]:
    lines = [
        "",
        "| component | expected | loaded | scored | complete | accuracy [95% CI] |"
        + (" accuracy_all | answered |" if answered_only else ""),
        "|---|---:|---:|---:|---|---|" + ("---|---|" if answered_only else ""),
    ]
    for component, cov in bench["coverage"].items():
        entry = bench["components"].get(component, {})
        lines.append(
            f"| {component} | {cov['expected'] if cov['expected'] is not None else '-'} | "
            f"{cov['loaded'] if cov['loaded'] is not None else '-'} | {cov['scored']} | "
            f"{'yes' if cov['complete'] else 'no'} | {_fmt(entry.get('accuracy'))} |"
            + (f" {_fmt(entry.get('accuracy_all'))} | {_fmt(entry.get('answered'))} |" if answered_only else "")
        )
    return lines


def _class_lines(bench: Mapping[str, Any]) -> list[str]:
    if "per_class" not in bench:
        return []
    lines = ["", "| class | precision | recall | F1 | support |", "|---|---:|---:|---:|---:|"]
    lines += [
        f"| {label} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} | {s['support']} |"
        for label, s in bench["per_class"].items()
    ]
    cm = bench["confusion_matrix"]
    lines += [
        "",
        "Confusion matrix (rows gold, columns predicted):",
        "",
        "| gold \\ predicted | " + " | ".join(cm["predicted"]) + " |",
        "|---|" + "---:|" * len(cm["predicted"]),
    ]
    lines += [f"| {label} | " + " | ".join(str(c) for c in row) + " |" for label, row in zip(cm["gold"], cm["counts"])]
    return lines


def _reference_lines(bench: Mapping[str, Any]) -> list[str]:
    lines = []
    if bench["reference"]:
        lines += ["", "Published reference numbers:", ""]
        lines += [
            f"- {model}: " + ", ".join(f"{k} {v:.3f}" for k, v in numbers.items())
            for model, numbers in bench["reference"].items()
        ]
    return lines + [f"- note: {note}" for note in bench["notes"]]


def _extra_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    spec = next((s for s in report_specs() if s.name == name), None)
    if spec is None or spec.extra_markdown is None or "extra" not in bench:
        return []
    return list(spec.extra_markdown(bench["extra"]))


def to_markdown(report: Mapping[str, Any]) -> str:
    lines = _run_lines(report)
    for name, bench in report["benchmarks"].items():
        answered_only = bench.get("accuracy_over") == AccuracyOver.ANSWERED.value
        lines += _headline_lines(name, bench, answered_only)
        lines += _component_group_lines(bench, answered_only)
        lines += _coverage_lines(bench, answered_only)
        lines += _class_lines(bench)
        lines += _reference_lines(bench)
        lines += _extra_lines(name, bench)
        lines.append("")
    if report.get("empty_tasks"):
        lines.append(f"Tasks whose samples file is empty (nothing to score): {', '.join(report['empty_tasks'])}")
    if report["unreported_tasks"]:
        lines.append(f"Tasks without a report adapter: {', '.join(report['unreported_tasks'])}")
    repeated = report["run"].get("repeated_sample_lines")
    if repeated:
        lines.append(
            "Samples logged twice, identically, and counted once: " + ", ".join(f"{t} {n}" for t, n in repeated.items())
        )
    return "\n".join(lines) + "\n"


def render(
    report: Mapping[str, Any], details: Mapping[str, Sequence[Mapping[str, Any]]] | None = None
) -> dict[str, bytes]:
    files = {
        "report.json": utf8(json.dumps(report, indent=2, ensure_ascii=False) + "\n"),
        "report.md": utf8(to_markdown(report)),
    }
    for name, bench in report["benchmarks"].items():
        if "confusion_matrix" in bench:
            files[f"confusion_{name}.png"] = confusion_png(bench)
    for name, records in (details or {}).items():
        files[f"items_{name}.jsonl"] = jsonl_bytes(records)
    files["report.html"] = utf8(scorecard.render_html(report))
    return files


# Files of an earlier report that the current one may not write again (a benchmark no longer in the run).
_PER_BENCHMARK_FILES = ("confusion_*.png", "items_*.jsonl")


def write_report(
    path: str | os.PathLike, out_dir: str | os.PathLike | None = None
) -> tuple[dict[str, Any], list[Path]]:
    """Write the report of the run at ``path``; the folder then holds exactly this report, no file of an earlier one."""
    report, details = build(load_run(path))
    target = Path(out_dir) if out_dir else Path(report["run"]["results_file"]).parent / "report"
    written = write_atomically(target, render(report, details))
    for pattern in _PER_BENCHMARK_FILES:
        for stale in set(target.glob(pattern)) - set(written):
            stale.unlink()
    return report, written


# ----------------------------------------------------------------------------- comparing two runs


def compare_runs(path_a: str | os.PathLike, path_b: str | os.PathLike) -> dict[str, Any]:
    """Paired comparison (A minus B) on the items both runs scored, per benchmark."""
    run_a, run_b = load_run(path_a), load_run(path_b)
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "a": run_info(run_a),
        "b": run_info(run_b),
        "benchmarks": {},
    }
    for spec in report_specs():
        items_a = {(i.task, i.doc_hash): i for i in score_run(run_a, spec)}
        items_b = {(i.task, i.doc_hash): i for i in score_run(run_b, spec)}
        shared = sorted(set(items_a) & set(items_b))
        if not shared:
            continue
        a = [items_a[k] for k in shared]
        b = [items_b[k] for k in shared]
        strata = [spec.stratum_of(i) for i in a]
        components = [i.component for i in a]
        ca, cb = [i.correct for i in a], [i.correct for i in b]
        out["benchmarks"][spec.name] = {
            "n_paired_items": len(shared),
            "only_in_a": len(set(items_a) - set(items_b)),
            "only_in_b": len(set(items_b) - set(items_a)),
            "accuracy_micro": stats.paired_comparison(
                stats.mean_of(ca), stats.mean_of(cb), len(shared), strata, binary_a=ca, binary_b=cb
            ).as_dict(),
            "accuracy_macro": stats.paired_comparison(
                stats.macro_mean_of(ca, components), stats.macro_mean_of(cb, components), len(shared), strata
            ).as_dict(),
        }
    return out
