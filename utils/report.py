"""The report over an lm-eval run (``--output_path`` with ``--log_samples``), for every benchmark.

Each benchmark module declares a :class:`BenchmarkSpec`: which tasks it owns and how one logged
sample becomes a :class:`ScoredItem` (re-scored from the raw reply with the benchmark's own
parser, so the report never trusts a number it cannot recompute). From those items this module
computes, per benchmark: micro and macro accuracy, per-component accuracy, per-item rates, per-class
precision/recall/F1 and macro-F1, a confusion matrix with an INVALID column, coverage against the
published counts, and stratified bootstrap CIs for every number (:mod:`.stats`).

Outputs: ``report.json`` (schema below, versioned), ``report.md``, one confusion-matrix PNG per
benchmark with gold classes, and ``items_<benchmark>.jsonl`` (one record per item) for benchmarks
whose items carry details, all written atomically (nothing is written unless every input parsed).

Benchmarks that leave unparseable answers unscored (``accuracy_over="answered"``, e.g. MillerQA)
get accuracy over the answered items, the same with unanswered items counted wrong
(``accuracy_all_*``) and the answered rate, everywhere accuracy is reported.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import stats
from .data import DataError, iter_jsonl

SCHEMA_VERSION = "1.0"
INVALID = "INVALID"
# Benchmark modules that declare a REPORT_SPEC (or several, as REPORT_SPECS); each later benchmark adds its module here.
BENCHMARK_MODULES = ("medfact", "pubmedqa", "millerqa", "medexqa")
_SECRET_KEYS = re.compile(r"(api_?key|token(?!izer)|secret|password|authorization|header)", re.IGNORECASE)


@dataclass(frozen=True)
class ScoredItem:
    """One logged sample, re-scored."""

    task: str
    doc_id: int
    doc_hash: str
    component: str  # the unit the macro averages over (a MedFact component, a specialty, ...)
    gold: str
    pred: str  # a label, or INVALID when no answer could be read
    correct: float  # 0 or 1
    extras: Mapping[str, float] = field(default_factory=dict)  # per-item rates/scores, reported as means
    details: Mapping[str, Any] = field(default_factory=dict)  # per-item record for items_<benchmark>.jsonl


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    title: str
    task_prefix: str
    score_sample: Callable[[str, Mapping[str, Any]], ScoredItem]
    expected_counts: Mapping[str, int]  # component -> items in the published benchmark
    labels: Sequence[str] | None = None  # gold classes (confusion-matrix rows); None: no class table
    stratify_by: str = "component"  # "component" or "gold": what the bootstrap keeps fixed
    headline: str = "accuracy_macro"  # the paper's number: "accuracy_macro" or "accuracy_micro"
    component_name: str = "component"
    reference: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # published numbers
    notes: Sequence[str] = ()
    # The tasks this spec reports; None: every task named task_prefix or task_prefix_*.
    task_names: frozenset[str] | None = None
    # "all": INVALID counts wrong; "answered": accuracy over answered items (pred != INVALID).
    accuracy_over: str = "all"
    # Named sets of components (e.g. competency dimensions), each reported with its own accuracies.
    component_groups: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def owns(self, task: str) -> bool:
        if self.task_names is not None:
            return task in self.task_names
        return task == self.task_prefix or task.startswith(self.task_prefix + "_")


def benchmark_specs() -> list[BenchmarkSpec]:
    specs = []
    for name in BENCHMARK_MODULES:
        module = importlib.import_module(f"{__package__}.{name}")
        specs.extend(getattr(module, "REPORT_SPECS", None) or (module.REPORT_SPEC,))
    return specs


# ----------------------------------------------------------------------------- reading a run


@dataclass(frozen=True)
class Run:
    results_path: Path
    results: dict[str, Any]
    samples: dict[str, list[dict[str, Any]]]  # task -> logged samples (one filter)
    sample_files: dict[str, Path]


def _timestamp(results_path: Path) -> str:
    return results_path.stem[len("results_"):]


def find_results(path: str | os.PathLike) -> Path:
    """The results JSON of a run: ``path`` itself, or the newest ``results_*.json`` under it."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise DataError(f"{path}: no such file or directory")
    found = sorted(path.rglob("results_*.json"), key=lambda p: (_timestamp(p), str(p)))
    if not found:
        raise DataError(f"{path}: no results_*.json; pass lm_eval's --output_path (run with --log_samples)")
    return found[-1]


def load_run(path: str | os.PathLike) -> Run:
    results_path = find_results(path)
    try:
        results = json.loads(results_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{results_path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(results, dict) or "configs" not in results:
        raise DataError(f"{results_path}: not an lm-eval results file (no 'configs')")
    stamp = _timestamp(results_path)
    samples, files = {}, {}
    for task in results["configs"]:
        sample_path = results_path.parent / f"samples_{task}_{stamp}.jsonl"
        if not sample_path.is_file():
            raise DataError(f"{sample_path}: missing; the report needs lm_eval's --log_samples output for task '{task}'")
        rows = [row for _, row in iter_jsonl(sample_path)]
        filters = sorted({row.get("filter", "none") for row in rows})
        chosen = "none" if "none" in filters else filters[0] if filters else "none"
        samples[task] = [row for row in rows if row.get("filter", "none") == chosen]
        files[task] = sample_path
    return Run(results_path, results, samples, files)


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
    strata = [item.gold if spec.stratify_by == "gold" else item.component for item in items]
    return stats.bootstrap(statistic, len(items), strata=strata).as_dict()


def run_info(run: Run) -> dict[str, Any]:
    results = run.results
    config = results.get("config", {})
    return {
        "results_file": str(run.results_path),
        "model": config.get("model"),
        "model_args": redact(config.get("model_args")),
        "model_name": results.get("model_name"),
        "lm_eval_version": results.get("lm_eval_version"),
        "date": results.get("date"),
        # Chat APIs log an empty template (the server applies its own); no template at all is None.
        "chat_template_applied": results.get("chat_template_sha") is not None or results.get("chat_template") is not None,
        "chat_template_sha": results.get("chat_template_sha"),
        "system_instruction": results.get("system_instruction"),
        "gen_kwargs": config.get("gen_kwargs"),
        "limit": config.get("limit"),
        "task_versions": results.get("versions", {}),
        "n_samples": results.get("n-samples", {}),
    }


def redact(value: Any) -> Any:
    """Model arguments with credentials blanked (they must never reach a report)."""
    if isinstance(value, Mapping):
        return {k: "***" if _SECRET_KEYS.search(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, str):
        return ",".join("=".join([k, "***"]) if "=" in part and _SECRET_KEYS.search(k := part.split("=", 1)[0])
                        else part for part in value.split(","))
    return value


def _accuracies(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """Micro and macro accuracy (over components) of ``items``, as the spec defines accuracy.

    With ``accuracy_over="answered"`` they are taken over answered items only (None when there
    are none; the macro then averages the components that have answered items), next to
    ``accuracy_all_*`` (unanswered counted wrong) and the ``answered`` rate.
    """

    def pair(group: Sequence[ScoredItem], prefix: str) -> dict[str, Any]:
        if not group:
            return {f"{prefix}_micro": None, f"{prefix}_macro": None}
        correct, components = [i.correct for i in group], [i.component for i in group]
        return {f"{prefix}_micro": _estimate(stats.mean_of(correct), group, spec),
                f"{prefix}_macro": _estimate(stats.macro_mean_of(correct, components), group, spec)}

    if spec.accuracy_over == "all":
        return pair(items, "accuracy")
    answered = [item for item in items if item.pred != INVALID]
    return {**pair(answered, "accuracy"), **pair(items, "accuracy_all"),
            "answered": _estimate(stats.mean_of([float(i.pred != INVALID) for i in items]), items, spec)}


def benchmark_report(items: Sequence[ScoredItem], spec: BenchmarkSpec, run: Run) -> dict[str, Any]:
    if spec.accuracy_over not in ("all", "answered"):
        raise ValueError(f"{spec.name}: accuracy_over must be 'all' or 'answered', not {spec.accuracy_over!r}")
    by_component: dict[str, list[ScoredItem]] = {}
    for item in items:
        by_component.setdefault(item.component, []).append(item)
    order = [c for c in spec.expected_counts if c in by_component] + sorted(set(by_component) - set(spec.expected_counts))

    # Items lm-eval loaded per component (before --limit), known when each task is one component.
    task_components: dict[str, set[str]] = {}
    for item in items:
        task_components.setdefault(item.task, set()).add(item.component)
    loaded: Counter = Counter()
    for task, comps in task_components.items():
        original = run.results.get("n-samples", {}).get(task, {}).get("original")
        if original is not None and len(comps) == 1:
            loaded[next(iter(comps))] += original
    coverage = {}
    for component in list(spec.expected_counts) + [c for c in order if c not in spec.expected_counts]:
        expected = spec.expected_counts.get(component)
        observed = len(by_component.get(component, []))
        coverage[component] = {"expected": expected, "loaded": loaded.get(component), "scored": observed,
                               "complete": expected is not None and observed == expected}
    full = all(entry["complete"] for entry in coverage.values())

    extras_names = sorted({name for item in items for name in item.extras})
    report: dict[str, Any] = {
        "title": spec.title,
        "tasks": sorted({item.task for item in items}),
        "n_items": len(items),
        "n_invalid": sum(item.pred == INVALID for item in items),
        "accuracy_over": spec.accuracy_over,
        "headline_metric": spec.headline,
        **_accuracies(items, spec),
        "rates": {name: _estimate(stats.mean_of([item.extras[name] for item in items]), items, spec)
                  for name in extras_names},
        "components": {},
        "coverage": coverage,
        "full_coverage": full,
        "paper_comparable": None,
        "reference": {model: dict(numbers) for model, numbers in spec.reference.items()},
        "notes": list(spec.notes),
    }
    headline = report[spec.headline]["value"] if report[spec.headline] else None
    report["paper_comparable"] = {
        "metric": spec.headline,
        "value": headline if full else None,
        "reason": "all published items were scored" if full else
        "not every published item was scored (see coverage); this number is not comparable with the paper",
    }
    for component in order:
        group = by_component[component]
        accuracies = _accuracies(group, spec)
        report["components"][component] = {
            "n": len(group),
            "accuracy": accuracies["accuracy_micro"],
            **({"accuracy_all": accuracies["accuracy_all_micro"], "answered": accuracies["answered"]}
               if spec.accuracy_over == "answered" else {}),
            **{name: float(sum(i.extras[name] for i in group) / len(group)) for name in extras_names},
        }
    if spec.component_groups:
        report["component_groups"] = {}
        for name, members in spec.component_groups.items():
            group = [item for item in items if item.component in members]
            if group:
                report["component_groups"][name] = {
                    "components": [c for c in members if c in by_component],
                    "missing_components": [c for c in members if c not in by_component],
                    "n": len(group), **_accuracies(group, spec)}
    if spec.labels:
        labels = list(spec.labels)
        pred_labels = labels + sorted({i.pred for i in items} - set(labels) - {INVALID}) + [INVALID]
        gold, pred = [i.gold for i in items], [i.pred for i in items]
        matrix = stats.confusion_matrix(gold, pred, labels, pred_labels)
        report["per_class"] = stats.per_class_scores(matrix, labels)
        report["macro_f1"] = _estimate(stats.macro_f1_of(gold, pred, labels), items, spec)
        report["confusion_matrix"] = {"gold": labels, "predicted": pred_labels, "counts": matrix.tolist()}
    return report


def build_report(path: str | os.PathLike) -> dict[str, Any]:
    return _build(path)[0]


def _build(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, list[Mapping[str, Any]]]]:
    """The report, and the per-item details of each benchmark whose items carry them."""
    run = load_run(path)
    benchmarks, details, owned = {}, {}, set()
    for spec in benchmark_specs():
        items = score_run(run, spec)
        owned |= {item.task for item in items}
        if items:
            benchmarks[spec.name] = benchmark_report(items, spec, run)
        if any(item.details for item in items):
            details[spec.name] = [{"task": item.task, "doc_id": item.doc_id, **item.details} for item in items]
    from lm_eval_tasks import __version__

    report = {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"lm-eval-medical-tasks {__version__}",
        "run": run_info(run),
        "bootstrap": {"method": "percentile", "n_resamples": stats.N_RESAMPLES, "seed": stats.SEED,
                      "confidence": stats.CONFIDENCE, "stratified_by": {s.name: s.stratify_by for s in benchmark_specs()}},
        "benchmarks": benchmarks,
        "unreported_tasks": sorted(set(run.samples) - owned),
    }
    return report, details


# ----------------------------------------------------------------------------- rendering


def _fmt(estimate: Mapping[str, Any] | None) -> str:
    if not estimate:
        return "n/a"
    return f"{estimate['value']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"


def to_markdown(report: Mapping[str, Any]) -> str:
    run = report["run"]
    lines = [f"# Evaluation report", "",
             f"- model: `{run['model']}` {json.dumps(run['model_args'], ensure_ascii=False)}",
             f"- chat template applied: {run['chat_template_applied']}; limit: {run['limit']}; lm-eval {run['lm_eval_version']}",
             f"- results: `{run['results_file']}`",
             f"- 95% CIs: percentile bootstrap, {report['bootstrap']['n_resamples']} resamples, seed {report['bootstrap']['seed']}", ""]
    for name, bench in report["benchmarks"].items():
        comparable = bench["paper_comparable"]
        answered_only = bench.get("accuracy_over") == "answered"
        invalid = ("unanswered (no usable answer; left out of accuracy, counted wrong in accuracy_all)" if answered_only
                   else "unparseable (INVALID, counted wrong)")
        lines += [f"## {bench['title']} (`{name}`)", "",
                  f"- items scored: {bench['n_items']}; {invalid}: {bench['n_invalid']}",
                  f"- **{bench['headline_metric']}** (the paper's number): {_fmt(bench[bench['headline_metric']])}",
                  f"- accuracy_micro: {_fmt(bench['accuracy_micro'])}; accuracy_macro: {_fmt(bench['accuracy_macro'])}"
                  + (" (over answered items)" if answered_only else "")]
        if answered_only:
            lines += [f"- accuracy_all_micro: {_fmt(bench['accuracy_all_micro'])}; accuracy_all_macro: "
                      f"{_fmt(bench['accuracy_all_macro'])} (unanswered counted wrong)",
                      f"- answered (coverage): {_fmt(bench['answered'])}"]
        lines.append(f"- paper-comparable: {'yes' if comparable['value'] is not None else 'no'} ({comparable['reason']})")
        lines += [f"- {rate}: {_fmt(estimate)}" for rate, estimate in bench["rates"].items()]
        if "macro_f1" in bench:
            lines.append(f"- macro-F1: {_fmt(bench['macro_f1'])}")
        if bench.get("component_groups"):
            lines += ["", "| group | components | items | accuracy_macro [95% CI] | accuracy_micro [95% CI] |"
                      + (" accuracy_all_macro | answered |" if answered_only else ""),
                      "|---|---|---:|---|---|" + ("---|---|" if answered_only else "")]
            for group, entry in bench["component_groups"].items():
                members = ", ".join(entry["components"]) + (f" (missing: {', '.join(entry['missing_components'])})"
                                                            if entry["missing_components"] else "")
                lines.append(f"| {group} | {members} | {entry['n']} | {_fmt(entry['accuracy_macro'])} | "
                             f"{_fmt(entry['accuracy_micro'])} |" + (f" {_fmt(entry['accuracy_all_macro'])} | "
                                                                      f"{_fmt(entry['answered'])} |" if answered_only else ""))
        lines += ["", "| component | expected | loaded | scored | complete | accuracy [95% CI] |"
                  + (" accuracy_all | answered |" if answered_only else ""),
                  "|---|---:|---:|---:|---|---|" + ("---|---|" if answered_only else "")]
        for component, cov in bench["coverage"].items():
            entry = bench["components"].get(component, {})
            lines.append(f"| {component} | {cov['expected'] if cov['expected'] is not None else '-'} | "
                         f"{cov['loaded'] if cov['loaded'] is not None else '-'} | {cov['scored']} | "
                         f"{'yes' if cov['complete'] else 'no'} | {_fmt(entry.get('accuracy'))} |"
                         + (f" {_fmt(entry.get('accuracy_all'))} | {_fmt(entry.get('answered'))} |" if answered_only else ""))
        if "per_class" in bench:
            lines += ["", "| class | precision | recall | F1 | support |", "|---|---:|---:|---:|---:|"]
            lines += [f"| {label} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} | {s['support']} |"
                      for label, s in bench["per_class"].items()]
            cm = bench["confusion_matrix"]
            lines += ["", "Confusion matrix (rows gold, columns predicted):", "",
                      "| gold \\ predicted | " + " | ".join(cm["predicted"]) + " |",
                      "|---|" + "---:|" * len(cm["predicted"])]
            lines += [f"| {label} | " + " | ".join(str(c) for c in row) + " |" for label, row in zip(cm["gold"], cm["counts"])]
        if bench["reference"]:
            lines += ["", "Published reference numbers:", ""]
            lines += [f"- {model}: " + ", ".join(f"{k} {v:.3f}" for k, v in numbers.items())
                      for model, numbers in bench["reference"].items()]
        lines += [f"- note: {note}" for note in bench["notes"]]
        lines.append("")
    if report["unreported_tasks"]:
        lines.append(f"Tasks without a report adapter: {', '.join(report['unreported_tasks'])}")
    return "\n".join(lines) + "\n"


def confusion_png(bench: Mapping[str, Any]) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cm = bench["confusion_matrix"]
    counts = cm["counts"]
    fig, ax = plt.subplots(figsize=(1.4 + 1.1 * len(cm["predicted"]), 1.2 + 0.9 * len(cm["gold"])))
    image = ax.imshow(counts, cmap="Blues")
    ax.set_xticks(range(len(cm["predicted"])), cm["predicted"], rotation=30, ha="right")
    ax.set_yticks(range(len(cm["gold"])), cm["gold"])
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    peak = max((max(row) for row in counts), default=0)
    for r, row in enumerate(counts):
        for c, value in enumerate(row):
            ax.text(c, r, str(value), ha="center", va="center", color="white" if value > peak / 2 else "black")
    ax.set_title(bench["title"])
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def write_atomically(out_dir: str | os.PathLike, files: Mapping[str, bytes]) -> list[Path]:
    """Write every file to a temporary name first, then rename them into place."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    staged = []
    try:
        for name, content in files.items():
            handle, temp = tempfile.mkstemp(prefix=f".{name}.", dir=out_dir)
            with os.fdopen(handle, "wb") as stream:
                stream.write(content)
            staged.append((Path(temp), out_dir / name))
    except BaseException:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        raise
    for temp, final in staged:
        os.replace(temp, final)
    return [final for _, final in staged]


def render(report: Mapping[str, Any], details: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> dict[str, bytes]:
    files = {"report.json": (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
             "report.md": to_markdown(report).encode("utf-8")}
    for name, bench in report["benchmarks"].items():
        if "confusion_matrix" in bench:
            files[f"confusion_{name}.png"] = confusion_png(bench)
    for name, records in (details or {}).items():
        files[f"items_{name}.jsonl"] = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    return files


def write_report(path: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> tuple[dict[str, Any], list[Path]]:
    report, details = _build(path)
    target = Path(out_dir) if out_dir else Path(report["run"]["results_file"]).parent / "report"
    return report, write_atomically(target, render(report, details))


# ----------------------------------------------------------------------------- comparing two runs


def compare_runs(path_a: str | os.PathLike, path_b: str | os.PathLike) -> dict[str, Any]:
    """Paired comparison (A minus B) on the items both runs scored, per benchmark."""
    run_a, run_b = load_run(path_a), load_run(path_b)
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "a": run_info(run_a), "b": run_info(run_b), "benchmarks": {}}
    for spec in benchmark_specs():
        items_a = {(i.task, i.doc_hash): i for i in score_run(run_a, spec)}
        items_b = {(i.task, i.doc_hash): i for i in score_run(run_b, spec)}
        shared = sorted(set(items_a) & set(items_b))
        if not shared:
            continue
        a = [items_a[k] for k in shared]
        b = [items_b[k] for k in shared]
        strata = [i.gold if spec.stratify_by == "gold" else i.component for i in a]
        components = [i.component for i in a]
        ca, cb = [i.correct for i in a], [i.correct for i in b]
        out["benchmarks"][spec.name] = {
            "n_paired_items": len(shared),
            "only_in_a": len(set(items_a) - set(items_b)),
            "only_in_b": len(set(items_b) - set(items_a)),
            "accuracy_micro": stats.paired_comparison(stats.mean_of(ca), stats.mean_of(cb), len(shared), strata,
                                                      binary_a=ca, binary_b=cb).as_dict(),
            "accuracy_macro": stats.paired_comparison(stats.macro_mean_of(ca, components),
                                                      stats.macro_mean_of(cb, components), len(shared), strata).as_dict(),
        }
    return out
