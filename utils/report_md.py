"""report.md: a scored run's report (report.json, :mod:`.results`) as Markdown, each section part by part as
:data:`.section.SECTION_PARTS` declares them (:data:`MARKDOWN_PARTS`; a field no part names is shown under "Other
fields", never dropped). Nothing here computes a number.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from . import answer_order, rotation, scorecard, stats
from .benchmarks import report_specs
from .pages import is_estimate
from .scoring import AccuracyOver, Headline
from .section import SECTION_PARTS
from .text import md

_fmt = stats.format_estimate


def _run_lines(report: Mapping[str, Any]) -> list[str]:
    run = report["run"]
    dumps = lambda value: md(json.dumps(value, ensure_ascii=False))  # noqa: E731
    added = run.get("chat_template_system_message")
    template_system = (
        f"; chat template's own system message: {md(added.get('text'))} (sha256 {md(added.get('sha256'))[:12]})"
        if isinstance(added, Mapping)
        else ""
    )
    return [
        "## Provenance: how this run was made",
        "",
        f"- model: {md(run.get('model'))} {dumps(run.get('model_args'))}",
        f"- dtype: {md(run.get('dtype'))} (as lm-eval recorded it); device: {md(run.get('device'))}; "
        f"batch size: {md(run.get('batch_size'))}",
        f"- chat template applied: {run.get('chat_template_applied')}; n-shot: {dumps(run.get('n_shot'))}; "
        f"system instruction: {dumps(run.get('system_instruction'))}{template_system}; "
        f"gen_kwargs: {dumps(run.get('gen_kwargs'))}",
        f"- limit: {md(run.get('limit'))}; seeds: {dumps(run.get('seeds'))}",
        f"- lm-eval {md(run.get('lm_eval_version'))}, transformers {md(run.get('transformers_version'))}, "
        f"torch {md(run.get('torch_version'))}; started {md(run.get('date'))}; evaluation time "
        f"{_seconds(run.get('evaluation_time_seconds'))}",
        f"- results: {md(run.get('results_file'))} (sha256 {run.get('results_sha256')})",
        *(
            f"- {name} settings: " + "; ".join(dumps(values) for values in distinct)
            for name, distinct in run.get("benchmark_settings", {}).items()
        ),
        f"- 95% CIs: percentile bootstrap, {report['bootstrap']['n_resamples']} resamples, seed {report['bootstrap']['seed']}",
        "",
    ]


def _headline_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    answered_only = _answered_only(bench)
    comparable = bench["paper_comparable"]
    invalid = (
        "unanswered (no usable answer; left out of accuracy, counted wrong in accuracy_all)"
        if answered_only
        else "unparseable (INVALID, counted wrong)"
    )
    lines = [
        f"## {bench['title']} (`{name}`)",
        "",
        f"- items scored: {bench['n_items']}; {invalid}: {bench['n_invalid']}"
        + (f"; tied best log-likelihoods: 0 ({bench['ties']['rule']})" if _untied(bench) else ""),
        *(f"- **{md(line)}**" for line in stats.format_ties(bench.get("ties"))),
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
    if isinstance(bench.get("subset"), str):
        lines.append(f"- **over {md(bench['subset'])}: not the published item set**")
    lines += [f"- **caveat: {md(caveat)}**" for caveat in bench.get("caveats", [])]
    lines.append(
        f"- paper-comparable: {'yes' if comparable['value'] is not None else 'no'} ({md(comparable['reason'])})"
    )
    if bench.get("detectable") is not None:
        lines.append(f"- {md(stats.format_detectable(bench['detectable'], 'a model of the same accuracy'))}")
    lines += [f"- {rate}: {_fmt(estimate)}" for rate, estimate in bench["rates"].items()]
    if "macro_f1" in bench:
        lines.append(f"- macro-F1: {_fmt(bench['macro_f1'])}")
    if isinstance(bench.get("items"), Mapping):
        lines.append(
            f"- every item (prompt, reply, parse, outcome): {md(bench['items']['file'])}; report.html's item explorer"
        )
    return lines


def _answered_only(bench: Mapping[str, Any]) -> bool:
    return bench.get("accuracy_over") == AccuracyOver.ANSWERED.value


def _untied(bench: Mapping[str, Any]) -> bool:
    return isinstance(bench.get("ties"), Mapping) and not bench["ties"].get("n_tied")


def _component_group_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    if not bench.get("component_groups"):
        return []
    answered_only = _answered_only(bench)
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
            f"| {md(group)} | {md(members)} | {entry['n']} | {_fmt(entry['accuracy_macro'])} | "
            f"{_fmt(entry['accuracy_micro'])} |"
            + (f" {_fmt(entry['accuracy_all_macro'])} | {_fmt(entry['answered'])} |" if answered_only else "")
        )
    return lines


def _coverage_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    answered_only = _answered_only(bench)
    lines = [
        "",
        "| component | expected | loaded | scored | complete | accuracy [95% CI] |"
        + (" accuracy_all | answered |" if answered_only else ""),
        "|---|---:|---:|---:|---|---|" + ("---|---|" if answered_only else ""),
    ]
    for component, cov in bench["coverage"].items():
        entry = bench["components"].get(component, {})
        lines.append(
            f"| {md(component)} | {cov['expected'] if cov['expected'] is not None else '-'} | "
            f"{cov['loaded'] if cov['loaded'] is not None else '-'} | {cov['scored']} | "
            f"{'yes' if cov['complete'] else 'no'} | {_fmt(entry.get('accuracy'))} |"
            + (f" {_fmt(entry.get('accuracy_all'))} | {_fmt(entry.get('answered'))} |" if answered_only else "")
        )
    return lines


def _class_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    if "per_class" not in bench:
        return []
    lines = ["", "| class | precision | recall | F1 | support |", "|---|---:|---:|---:|---:|"]
    lines += [
        f"| {md(label)} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} | {s['support']} |"
        for label, s in bench["per_class"].items()
    ]
    cm = bench["confusion_matrix"]
    lines += [
        "",
        "Confusion matrix (rows gold, columns predicted):",
        "",
        "| gold \\ predicted | " + " | ".join(map(md, cm["predicted"])) + " |",
        "|---|" + "---:|" * len(cm["predicted"]),
    ]
    lines += [
        f"| {md(label)} | " + " | ".join(str(c) for c in row) + " |" for label, row in zip(cm["gold"], cm["counts"])
    ]
    return lines


def _small(entry: Mapping[str, Any]) -> str:
    return " (small: n < 30)" if entry.get("small") else ""


def _subgroup_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    if not bench.get("subgroups"):
        return []
    answered_only = _answered_only(bench)
    lines = [
        "",
        "Accuracy by subgroup:",
        "",
        "| subgroup | items | accuracy [95% CI] |" + (" accuracy_all | answered |" if answered_only else ""),
        "|---|---:|---|" + ("---|---|" if answered_only else ""),
    ]
    for group, entry in bench["subgroups"].items():
        lines.append(
            f"| {md(group)} | {entry['n']}{_small(entry)} | {_fmt(entry['accuracy'])} |"
            + (f" {_fmt(entry.get('accuracy_all'))} | {_fmt(entry.get('answered'))} |" if answered_only else "")
        )
    return lines


def _paired_variant_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    paired = bench.get("paired_variants")
    if not paired:
        return []
    lines = ["", f"Each variant minus `{md(paired['reference'])}` on the same questions ({md(paired['method'])}):", ""]
    if paired.get("reason"):
        return lines + [f"- not computed: {md(paired['reason'])}"]
    if not paired["variants"]:
        return lines + ["- no other variant was scored"]
    lines += [
        f"| variant | pairs | {paired['metric']} | {md(paired['reference'])} | difference [95% CI] | unpaired "
        f"(variant / {md(paired['reference'])}) |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for variant, entry in paired["variants"].items():
        value = lambda key: f"{entry[key]:.3f}" if key in entry else "n/a"  # noqa: E731
        lines.append(
            f"| {md(variant)} | {entry['n_pairs']}{_small(entry)} | {value('accuracy')} | "
            f"{value('reference_accuracy')} | {_fmt(entry.get('difference'))} | {entry['unpaired']} / "
            f"{entry['reference_unpaired']} |"
        )
    return lines


def _calibration_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    cal = bench.get("calibration")
    if not cal:
        return []
    left_out = ", ".join(f"{reason} {count}" for reason, count in cal["left_out"].items())
    lines = [
        "",
        f"Calibration (confidence: {md(cal['confidence'])}; bins {md(', '.join(cal['bins']))}):",
        "",
        f"- items with a confidence: {cal['n']}; left out: {md(left_out)}",
        f"- ECE: {_fmt(cal['ece'])}; Brier score ({cal['brier_kind']}): {_fmt(cal['brier'])}",
    ]
    filled = [b for b in cal["reliability"] if b["n"]]
    if filled:
        lines += ["", "| confidence bin | items | mean confidence | accuracy |", "|---|---:|---:|---:|"]
        lines += [f"| {b['bin']} | {b['n']} | {b['mean_confidence']:.3f} | {b['accuracy']:.3f} |" for b in filled]
    return lines


def _selective_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    sel = bench.get("selective")
    if not sel:
        return []
    lines = [
        "",
        f"Selective prediction (confidence: {md(sel['confidence'])}; {md(sel['ties'])}):",
        "",
        f"- items with a confidence: {sel['n']}",
    ]
    if sel["reason"]:
        return lines + [f"- not computable: {md(sel['reason'])}"]
    lines.append(f"- AURC (lower is better): {_fmt(sel['aurc'])}; optimal for these outcomes {sel['aurc_optimal']:.3f}")
    lines += [
        f"- accuracy at {coverage} coverage ({entry['n_covered']} items, {entry['coverage']:.1%}): {_fmt(entry['accuracy'])}"
        for coverage, entry in sel["accuracy_at_coverage"].items()
    ]
    return lines


def _answer_order_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    order = bench.get("answer_order")
    if not order:
        return []
    flag = answer_order.format_flag(order)
    lines = [
        "",
        f"Answer order (position: {md(order['position'])}; accuracy over {order['accuracy_over']} items):",
        "",
        *([f"- **{md(flag)}**"] if flag else []),
        f"- null hypothesis: {md(answer_order.NULL)}; test: {md(answer_order.format_test(order['test']))}",
        f"- answered items with a known position: {order['n_answered']} of {order['n_items']}"
        + (f"; position unknown: {order['unknown_position']}" if order["unknown_position"] else ""),
        "",
        "| position | gold items | accuracy [95% CI] | gold share [95% CI] | chosen share [95% CI] |",
        "|---|---:|---|---|---|",
    ]
    for position in order["positions"]:
        by_gold, gold, chosen = (
            order[key][position] for key in ("accuracy_by_gold_position", "gold_positions", "chosen_positions")
        )
        lines.append(
            f"| {md(position)} | {by_gold['n']} | {_fmt(by_gold['accuracy'])} | {gold['count']}: "
            f"{_fmt(gold.get('share'))} | {chosen['count']}: {_fmt(chosen.get('share'))} |"
        )
    return lines


def _answer_distribution_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    dist = bench.get("answer_distribution")
    if not dist:
        return []
    flag = answer_order.format_answer_flag(dist)
    lines = [
        "",
        "Answer distribution (the prompt shows no options: the chosen answers against the gold answers):",
        "",
        *([f"- **{md(flag)}**"] if flag else []),
        f"- null hypothesis: {md(answer_order.ANSWER_NULL)}; test: {md(answer_order.format_test(dist['test']))}",
        f"- answered items: {dist['n_answered']} of {dist['n_items']}"
        + (f"; gold or chosen answer none of the labels: {dist['other_answer']}" if dist["other_answer"] else ""),
        "",
        "| answer | gold share [95% CI] | chosen share [95% CI] |",
        "|---|---|---|",
    ]
    for label in dist["labels"]:
        gold, chosen = dist["gold_answers"][label], dist["chosen_answers"][label]
        lines.append(
            f"| {md(label)} | {gold['count']}: {_fmt(gold.get('share'))} | {chosen['count']}: {_fmt(chosen.get('share'))} |"
        )
    return lines


def _rotation_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    turned = bench.get("rotation")
    if not turned:
        return []
    lines = [
        "",
        f"Rotated options ({md(turned['protocol'])}; over {md(turned['over'])}):",
        "",
        f"- **{md(rotation.format_line(turned))}**",
        f"- questions: {turned['n_questions']}; incomplete (left out): {turned['incomplete_questions']}; "
        f"items with an unknown rotation: {turned['unknown_rotation']}",
    ]
    if turned["accuracy_by_rotation"]:
        lines += ["", "| rotation | questions | accuracy [95% CI] |", "|---:|---:|---|"]
        lines += [
            f"| {r} | {entry['n']} | {_fmt(entry['accuracy'])} |" for r, entry in turned["accuracy_by_rotation"].items()
        ]
    return lines


def _seconds(value: Any) -> str:
    return f"{value:.1f} s" if isinstance(value, (int, float)) else "not recorded"


def _length_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    lengths = bench.get("reply_lengths")
    if not lengths:
        return []
    hit = lengths["hit_max_gen_toks"]
    hit_text = (
        f"{hit['n']} of {hit['of']}" + (f" ({hit['share']:.1%})" if hit["share"] is not None else "")
        if hit
        else f"n/a ({md(lengths['hit_max_gen_toks_reason'])})"
    )
    spread = ", ".join(
        f"{key} {lengths[key]:.1f}"
        for key in ("mean", "min", "p25", "median", "p75", "p90", "max")
        if lengths[key] is not None
    )
    return [
        "",
        f"Reply lengths in {lengths['unit']} ({md(lengths['unit_source'])}): {lengths['n']} replies; {spread}",
        f"- max_gen_toks {md(lengths['max_gen_toks'] or 'not logged')}; replies that reached it: {hit_text} "
        "(lm-eval's evaluation time, for the whole run, is in the provenance below)",
    ]


def _reference_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    lines = []
    if bench["reference"]:
        caveat = (
            " (not comparable with this run: " + md("; ".join(bench["caveats"])) + ")" if bench.get("caveats") else ""
        )
        lines += ["", f"Published reference numbers{caveat}:", ""]
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


def _other_lines(name: str, bench: Mapping[str, Any]) -> list[str]:
    """The fields of a section no part of :data:`.section.SECTION_PARTS` names (none in a report this version
    writes): shown, never dropped."""
    declared = {field for fields in SECTION_PARTS.values() for field in fields}
    others = [field for field in bench if field not in declared]
    if not others:
        return []
    shown = lambda v: _fmt(v) if is_estimate(v) else md(json.dumps(v, ensure_ascii=False))  # noqa: E731
    return ["", "Other fields:", "", *(f"- {md(field)}: {shown(bench[field])}" for field in others)]


# report.md's lines of each part of a section (:data:`.section.SECTION_PARTS`); one function may show several parts,
# and report.md shows them in this order.
MARKDOWN_PARTS: dict[str, Callable[[str, Mapping[str, Any]], list[str]]] = {
    "heading": _headline_lines,
    "headline": _headline_lines,
    "estimates": _headline_lines,
    "rates": _headline_lines,
    "items": _headline_lines,
    "component_groups": _component_group_lines,
    "components": _coverage_lines,
    "coverage": _coverage_lines,
    "per_class": _class_lines,
    "confusion_matrix": _class_lines,
    "subgroups": _subgroup_lines,
    "paired_variants": _paired_variant_lines,
    "calibration": _calibration_lines,
    "selective": _selective_lines,
    "answer_order": _answer_order_lines,
    "answer_distribution": _answer_distribution_lines,
    "rotation": _rotation_lines,
    "reply_lengths": _length_lines,
    "published": _reference_lines,
    "notes": _reference_lines,
    "extra": _extra_lines,
}


def _summary_lines(report: Mapping[str, Any]) -> list[str]:
    """Every section's headline, first: the results before how they were made."""
    lines = ["# Evaluation report", "", "| benchmark | headline metric | value [95% CI] | items | paper-comparable |"]
    lines.append("|---|---|---|---:|---|")
    for name, bench in report["benchmarks"].items():
        metric = bench["headline_metric"]
        lines.append(
            f"| {md(bench['title'])} (`{name}`) | {metric} | {_fmt(bench.get(metric))} | {bench['n_items']} | "
            f"{'yes' if bench['paper_comparable']['value'] is not None else 'no'} |"
        )
    return lines + [""]


def to_markdown(report: Mapping[str, Any]) -> str:
    """report.md: the summary, each section, then the run's provenance."""
    lines = _summary_lines(report)
    lines += [f"**{md(scorecard.overlap_line(found))}**" for found in report.get("overlaps") or []]
    lines += [""] if report.get("overlaps") else []
    for name, bench in report["benchmarks"].items():
        for part_lines in (*dict.fromkeys(MARKDOWN_PARTS.values()), _other_lines):
            lines += part_lines(name, bench)
        lines.append("")
    if report.get("empty_tasks"):
        lines.append(f"Tasks whose samples file is empty (nothing to score): {md(', '.join(report['empty_tasks']))}")
    if report["unreported_tasks"]:
        lines.append(f"Tasks without a report adapter: {md(', '.join(report['unreported_tasks']))}")
    repeated = report["run"].get("repeated_sample_lines")
    if repeated:
        lines.append(
            "Samples logged twice, identically, and counted once: " + ", ".join(f"{t} {n}" for t, n in repeated.items())
        )
    lines += ["", *_run_lines(report)]
    return "\n".join(lines) + "\n"
