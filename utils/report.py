"""The report over an lm-eval run (``--output_path`` with ``--log_samples``), for every benchmark.

Each benchmark module declares a :class:`BenchmarkSpec`: which tasks it owns and how one logged
sample becomes a :class:`ScoredItem` (re-scored from the raw reply with the benchmark's own
parser, so the report never trusts a number it cannot recompute). From those items this module
computes, per benchmark: micro and macro accuracy, per-component accuracy, per-item rates, per-class
precision/recall/F1 and macro-F1, a confusion matrix with an INVALID column, coverage against the
published counts, and stratified bootstrap CIs for every number (:mod:`.stats`).

Outputs: ``report.json`` (schema below, versioned), ``report.md`` and one confusion-matrix PNG per
benchmark, all written atomically (nothing is written unless every input parsed).
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
from .data import DataError

SCHEMA_VERSION = "1.0"
INVALID = "INVALID"
# Benchmark modules that declare a REPORT_SPEC (or several, as REPORT_SPECS); each later benchmark
# adds its module here.
BENCHMARK_MODULES = ("medfact", "pubmedqa")
_SECRET_KEYS = re.compile(r"(api_?key|token|secret|password|authorization|header)", re.IGNORECASE)


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
    # Exactly these tasks (when set) instead of every task named by the prefix: for benchmarks whose
    # tasks are separate measurements (item sets, protocols) that must never be pooled.
    tasks: Sequence[str] = ()

    def owns(self, task: str) -> bool:
        if self.tasks:
            return task in self.tasks
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


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}, line {number}: invalid JSON ({exc.msg})") from exc
    return rows


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
        rows = _read_jsonl(sample_path)
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


def _run_info(run: Run) -> dict[str, Any]:
    results = run.results
    config = results.get("config", {})
    return {
        "results_file": str(run.results_path),
        "model": config.get("model"),
        "model_args": redact(config.get("model_args")),
        "model_name": results.get("model_name"),
        "lm_eval_version": results.get("lm_eval_version"),
        "date": results.get("date"),
        "chat_template_applied": results.get("chat_template_sha") is not None,
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


def benchmark_report(items: Sequence[ScoredItem], spec: BenchmarkSpec, run: Run) -> dict[str, Any]:
    correct = [item.correct for item in items]
    components = [item.component for item in items]
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
        "headline_metric": spec.headline,
        "accuracy_micro": _estimate(stats.mean_of(correct), items, spec),
        "accuracy_macro": _estimate(stats.macro_mean_of(correct, components), items, spec),
        "rates": {name: _estimate(stats.mean_of([item.extras[name] for item in items]), items, spec)
                  for name in extras_names},
        "components": {},
        "coverage": coverage,
        "full_coverage": full,
        "paper_comparable": None,
        "reference": {model: dict(numbers) for model, numbers in spec.reference.items()},
        "notes": list(spec.notes),
    }
    headline = report[spec.headline]["value"]
    report["paper_comparable"] = {
        "metric": spec.headline,
        "value": headline if full else None,
        "reason": "all published items were scored" if full else
        "not every published item was scored (see coverage); this number is not comparable with the paper",
    }
    for component in order:
        group = by_component[component]
        report["components"][component] = {
            "n": len(group),
            "accuracy": _estimate(stats.mean_of([i.correct for i in group]), group, spec),
            **{name: float(sum(i.extras[name] for i in group) / len(group)) for name in extras_names},
        }
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
    run = load_run(path)
    benchmarks, owned = {}, set()
    for spec in benchmark_specs():
        items = score_run(run, spec)
        owned |= {item.task for item in items}
        if items:
            benchmarks[spec.name] = benchmark_report(items, spec, run)
    from lm_eval_tasks import __version__

    return {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"lm-eval-medical-tasks {__version__}",
        "run": _run_info(run),
        "bootstrap": {"method": "percentile", "n_resamples": stats.N_RESAMPLES, "seed": stats.SEED,
                      "confidence": stats.CONFIDENCE, "stratified_by": {s.name: s.stratify_by for s in benchmark_specs()}},
        "benchmarks": benchmarks,
        "unreported_tasks": sorted(set(run.samples) - owned),
    }


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
        lines += [f"## {bench['title']} (`{name}`)", "",
                  f"- items scored: {bench['n_items']}; unparseable (INVALID, counted wrong): {bench['n_invalid']}",
                  f"- **{bench['headline_metric']}** (the paper's number): {_fmt(bench[bench['headline_metric']])}",
                  f"- accuracy_micro: {_fmt(bench['accuracy_micro'])}; accuracy_macro: {_fmt(bench['accuracy_macro'])}",
                  f"- paper-comparable: {'yes' if comparable['value'] is not None else 'no'} ({comparable['reason']})"]
        lines += [f"- {rate}: {_fmt(estimate)}" for rate, estimate in bench["rates"].items()]
        if "macro_f1" in bench:
            lines.append(f"- macro-F1: {_fmt(bench['macro_f1'])}")
        lines += ["", "| component | expected | loaded | scored | complete | accuracy [95% CI] |", "|---|---:|---:|---:|---|---|"]
        for component, cov in bench["coverage"].items():
            acc = bench["components"].get(component, {}).get("accuracy")
            lines.append(f"| {component} | {cov['expected'] if cov['expected'] is not None else '-'} | "
                         f"{cov['loaded'] if cov['loaded'] is not None else '-'} | {cov['scored']} | "
                         f"{'yes' if cov['complete'] else 'no'} | {_fmt(acc)} |")
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


def render(report: Mapping[str, Any]) -> dict[str, bytes]:
    files = {"report.json": (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
             "report.md": to_markdown(report).encode("utf-8")}
    for name, bench in report["benchmarks"].items():
        if "confusion_matrix" in bench:
            files[f"confusion_{name}.png"] = confusion_png(bench)
    return files


def write_report(path: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> tuple[dict[str, Any], list[Path]]:
    report = build_report(path)
    target = Path(out_dir) if out_dir else Path(report["run"]["results_file"]).parent / "report"
    return report, write_atomically(target, render(report))


# ----------------------------------------------------------------------------- comparing two runs


def compare_runs(path_a: str | os.PathLike, path_b: str | os.PathLike) -> dict[str, Any]:
    """Paired comparison (A minus B) on the items both runs scored, per benchmark."""
    run_a, run_b = load_run(path_a), load_run(path_b)
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "a": _run_info(run_a), "b": _run_info(run_b), "benchmarks": {}}
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
