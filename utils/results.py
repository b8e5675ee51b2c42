"""One scored run: a run folder scored once, by the benchmarks' report specs, into every number anyone shows.

:func:`score` reads an lm-eval run (``--output_path`` with ``--log_samples``), re-scores every logged sample with
its benchmark's own parser (:class:`~.scoring.BenchmarkSpec`, one pass over a spec's samples: :mod:`.walk`), and
computes each report section's numbers (:mod:`.section`). The result, :class:`ScoredRun`, is typed: its
provenance, and per section the scored items (in one order, with their pairing keys), the section's numbers and
the bootstrap distribution of the metric runs are compared on.

report.json/.md/.html (:mod:`.report`, :mod:`.scorecard`), ``compare`` and the leaderboard
(:mod:`.comparison`, :mod:`.leaderboard`, :mod:`.formats`) are views of a scored run: they format, never compute.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from . import lengths, overlap, stats
from .benchmarks import discover, report_specs
from .machine import one_blas_thread
from .runs import Run, run_info
from .samples import choice_probabilities
from .scoring import BenchmarkSpec, ScoredItem
from .section import Section, generates_text, score_section
from .walk import Walk, masked, read_walked, walk_run

# report.json's schema; its changes, version by version, are in CHANGELOG.md.
SCHEMA_VERSION = "2.6"


@dataclass(frozen=True)
class ScoredRun:
    results_path: Path
    provenance: dict[str, Any]  # report.json's "run"
    sections: dict[str, Section]
    empty_tasks: tuple[str, ...]
    unreported_tasks: tuple[str, ...]
    tokenizer: str | None = None  # the --tokenizer its reply lengths were counted with (None: words)

    def report(self) -> dict[str, Any]:
        """report.json."""
        from lm_eval_tasks import __version__

        return {
            "schema_version": SCHEMA_VERSION,
            "generated_by": f"lm-eval-medical-tasks {__version__}",
            "run": self.provenance,
            "bootstrap": stats.bootstrap_description(
                stratified_by={name: section.spec.report.stratify_by.value for name, section in self.sections.items()}
            ),
            "benchmarks": {name: section.numbers for name, section in self.sections.items()},
            "empty_tasks": list(self.empty_tasks),
            "unreported_tasks": list(self.unreported_tasks),
            "overlaps": self.overlaps(),
        }

    def overlaps(self) -> list[dict[str, Any]]:
        """report.json's ``overlaps``: the items sections of different benchmarks share (:func:`.overlap.run_overlaps`,
        by the ids each benchmark's items carry, ``Benchmark.shared_ids``), which an average over both counts twice."""
        owner = {spec.name: benchmark for benchmark in discover() for spec in benchmark.report_specs}
        return overlap.run_overlaps(
            {
                name: (owner[name].name, [owner[name].shared_ids(item) for item in section.items])
                for name, section in self.sections.items()
                if name in owner and owner[name].shared_ids is not None
            }
        )

    def item_details(self) -> dict[str, list[dict[str, Any]]]:
        """Per section: one record per item (items_<section>.jsonl), in the section's (task, doc_id) order."""
        return {name: [item_record(item) for item in section.items] for name, section in self.sections.items()}


def _json_float(value: float) -> float | str:
    """A float JSON can hold; a non-finite one as its name ("nan", "inf", "-inf"), which strict JSON has not."""
    return value if math.isfinite(value) else repr(value)


def item_record(item: ScoredItem) -> dict[str, Any]:
    """One line of items_<section>.jsonl: ITEM_FIELDS, then the benchmark's own details.

    ``item_id``: the item's own id in its benchmark's source data (None where the logged doc does not carry it);
    ``doc_id`` is lm-eval's, the item's position in the task.

    ``choices`` (log-likelihood items; empty for a generation): each continuation with its logged
    log-likelihood and its probability among the choices (softmax; None when a NaN or +inf leaves it undefined).
    ``redacted`` names the texts a credential was masked in (they are shown masked, and were scored unmasked).
    """
    probabilities = choice_probabilities(item.loglikelihoods) if item.loglikelihoods else None
    record = {
        "task": item.task,
        "item_id": item.item_id,
        "doc_id": item.doc_id,
        "doc_hash": item.doc_hash,
        "component": item.component,
        "gold": item.gold,
        "pred": item.pred,
        "outcome": item.outcome,
        "invalid_reason": item.invalid_reason,
        "parse_step": item.parse_step,
        "choices": [
            {
                "choice": choice,
                "loglikelihood": _json_float(loglikelihood),
                "probability": None if probabilities is None else probabilities[index],
            }
            for index, (choice, loglikelihood) in enumerate(zip(item.choices, item.loglikelihoods, strict=True))
        ],
        "prompt": item.prompt,
        "reply": item.reply,
        "redacted": list(item.redacted),
        "extras": {name: _json_float(value) for name, value in item.extras.items()},
    }
    clashing = set(record) & set(item.details)
    if clashing:
        raise ValueError(f"{item.task} doc {item.doc_id}: details repeat the item fields {sorted(clashing)}")
    return record | dict(item.details)


def score(
    run: Run,
    tokenizer: str | None = None,
    on_numbers: Callable[[str, dict[str, Any]], object] | None = None,
    on_items: Callable[[dict[str, tuple[ScoredItem, ...]]], object] | None = None,
) -> ScoredRun:
    """Every section of ``run``, scored once; reply lengths counted as ``--tokenizer`` asks (:func:`.lengths.counter`).

    ``on_items(items)`` is called with each section's items (by section name, as :class:`ScoredRun` will hold them)
    once they are walked, before any section's numbers are computed (the report writes its items files meanwhile).
    ``on_numbers(name, numbers)`` is called with each section's numbers as soon as they are computed: those whose
    tasks generate text are scored last, as they may have to load the tokenizer first (seconds), so that a caller can
    go on with the others meanwhile (the report sends their figures to be drawn). The sections keep their order."""
    specs = report_specs()
    counts = {task: len(samples) for task, samples in run.samples.items()}
    walks = walk_run(run, specs)
    # The logged samples (most of a run's memory) are let go here when the caller does not hold them; the sections
    # read them only where a spec's extra section does.
    if not any(spec.extra_section is not None and walk.items for spec, walk in zip(specs, walks)):
        run = replace(run, samples={})
    return _scored(run, list(zip(specs, walks)), counts, tokenizer, on_numbers, on_items)


def _scored(
    run: Run,
    walks: list[tuple[BenchmarkSpec, Walk]],
    counts: Mapping[str, int],
    tokenizer: str | None,
    on_numbers: Callable[[str, dict[str, Any]], object] | None,
    on_items: Callable[[dict[str, tuple[ScoredItem, ...]]], object] | None,
) -> ScoredRun:
    """:func:`score`, from each spec's walk of the run's samples and every task's number of samples."""
    provenance = run_info(run)
    sections = {}
    config = run.results.get("config")
    model_args = config.get("model_args") if isinstance(config, Mapping) else None
    # Made when a section first needs it (a generative one), once for all the run's sections.
    counter = cache(lambda: lengths.counter(tokenizer, model_args))
    with one_blas_thread():
        owned = {item.task for _, walk in walks for item in walk.items}
        # Task names are the results file's: any run's, masked like every text it holds.
        empty_tasks = tuple(sorted(masked(run, task) for task, count in counts.items() if not count))
        unreported_tasks = tuple(
            sorted(masked(run, task) for task, count in counts.items() if count and task not in owned)
        )
        scored = [(spec, walk) for spec, walk in walks if walk.items]
        if on_items is not None:
            on_items({spec.name: tuple(walk.items) for spec, walk in scored})
        for spec, walk in sorted(scored, key=lambda pair: generates_text(run, {item.task for item in pair[1].items})):
            sections[spec.name] = score_section(walk.items, spec, run, provenance, counter, walk)
            if on_numbers is not None:
                on_numbers(spec.name, sections[spec.name].numbers)
    sections = {spec.name: sections[spec.name] for spec, _ in scored}
    settings = {name: list(s.settings) for name, s in sections.items() if s.spec.settings_of is not None}
    provenance["benchmark_settings"] = settings
    provenance["declared_settings"] = declared_settings(sections)
    return ScoredRun(
        results_path=run.results_path,
        provenance=provenance,
        sections=sections,
        empty_tasks=empty_tasks,
        unreported_tasks=unreported_tasks,
        tokenizer=tokenizer,
    )


def declared_settings(sections: Mapping[str, Section]) -> dict[str, list[dict[str, Any]]]:
    """Each reported benchmark's settings as it declares them (scoped name, kind, default, what it moves): what
    the values in ``benchmark_settings`` mean, and what a user may set."""
    out = {}
    for benchmark in discover():
        if benchmark.settings and any(spec.name in sections for spec in benchmark.report_specs):
            out[benchmark.name] = [
                {
                    "name": f"{benchmark.name}_{setting.name}",
                    "kind": setting.kind.value,
                    "default": setting.default,
                    "moves": setting.moves,
                }
                for setting in benchmark.settings
            ]
    return out


def score_path(
    path: str | os.PathLike,
    tokenizer: str | None = None,
    on_numbers: Callable[[str, dict[str, Any]], object] | None = None,
    on_items: Callable[[dict[str, tuple[ScoredItem, ...]]], object] | None = None,
) -> ScoredRun:
    """:func:`score` of the run at ``path``, its samples walked as they are read (:func:`.walk.read_walked`)."""
    specs = report_specs()
    run, walks, counts = read_walked(path, specs)
    return _scored(run, list(zip(specs, walks)), counts, tokenizer, on_numbers, on_items)
