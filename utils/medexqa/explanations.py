"""MedExQA explanation scores over a finished lm-eval run (``--log_samples`` of the ``medexqa_*`` tasks).

``python -m lm_eval_tasks medexqa-explanations OUTPUT_PATH`` re-reads every logged reply of the
generation protocol, reads its letter again with the task's own extraction, and scores the reply
(think blocks removed) as an explanation:

- per metric, its similarity to the item's two reference explanations (0-100, see
  :mod:`.explanation_metrics`);
- ``explanation_score``: the mean of the metrics that could run, when the answer is correct; 0 when
  it is wrong or missing (the protocol's rule);
- ``combined_score``: the weighted mean of accuracy (0 or 100) and the explanation score;
- optionally ``judge_score``: LLM judges through any OpenAI-compatible endpoint rate each correct
  answer's explanation 0-10 against the references (scaled to 0-100; several judges averaged, or
  their majority vote; 0 when the answer is wrong), and ``combined_judge_score``. Each judge's own
  ``judge_score``, the judges' agreement (:mod:`..agreement`) and their token usage (and cost, with
  a prices file) are reported too. Answers are cached: a re-run makes no calls.

Scores are reported per specialty, as the paper's macro mean over specialties and as the micro
mean over items, with bootstrap CIs stratified by specialty. Nothing here calls lm-eval.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import agreement, runs, stats
from ..data import DataError
from ..files import jsonl_bytes, write_atomically
from ..openai_client import (
    ChatCache,
    ChatClient,
    ChatEndpoint,
    Price,
    format_usage,
    prompt_hash,
    usage_summary,
    usage_total,
)
from ..redaction import redact
from ..samples import logged_reply
from . import explanation_metrics
from .constants import LETTERS, PUBLISHED_COUNTS, SPECIALTIES, specialty
from .parsing import parse_judge_score, score_generation
from .report_spec import REPORT_SPECS, settings_of

# Bumped whenever a score or the layout can change: 2.0 = BLEU and METEOR as `evaluate` defines them, a bootstrap
# section; 2.1 = BERTScore in float32 unless asked otherwise, scoring_seconds; 2.2 = judge_vote, each judge's
# judge_score and usage, judge_agreement, usage.
SCHEMA_VERSION = "2.2"
GENERATION_SPEC = next(spec for spec in REPORT_SPECS if spec.name == "medexqa")
DEFAULT_WEIGHTS = {"accuracy": 0.5, "explanation": 0.5}
JUDGE_VOTES = ("mean", "majority")  # how several judges' ratings of one explanation become its judge_score
JUDGE_SCALE = tuple(range(0, 101, 10))  # the judges' 0-10 ratings, x10

JUDGE_TEMPLATE = """You are grading the explanation a model gave for its answer to a medical multiple-choice question. The model chose the correct answer. Judge only its explanation, by comparing it with the two reference explanations written for this question.

Question:
{question}

Correct answer: {answer}

Reference explanation 1:
{reference_1}

Reference explanation 2:
{reference_2}

The model's response:
{response}

Rate the model's explanation from 0 to 10 for medical accuracy, relevance to the question, completeness and clarity, using the references as the standard: 10 means as good as the references, 0 means wrong, irrelevant or no explanation. Write one or two sentences of justification, then give the score on the last line as <score>N</score>."""
JUDGE_PROMPT_HASH = prompt_hash(JUDGE_TEMPLATE)


@dataclass
class Item:
    task: str
    doc_id: int
    specialty: str
    doc: Mapping[str, Any]
    reply: str
    letter: str | None
    step: str
    correct: bool
    explanation: str | None  # the reply without think blocks; None when nothing is left
    similarity: dict[str, float] = field(default_factory=dict)  # metric -> 0-100
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)  # judge label -> {score, error, cached}

    @property
    def references(self) -> tuple[str, str]:
        return self.doc["exp0"], self.doc["exp1"]


def read_items(run: runs.Run) -> list[Item]:
    """The generation protocol's logged samples, with the letters read again."""
    items = []
    for task in sorted(t for t in run.samples if GENERATION_SPEC.owns(t)):
        for number, sample in enumerate(run.samples[task], start=1):
            try:
                doc, reply = sample["doc"], logged_reply(sample)
                score = score_generation(doc, reply)
                explanation = score.visible.strip() if score.visible is not None else ""
                items.append(
                    Item(
                        task=task,
                        doc_id=int(sample["doc_id"]),
                        specialty=specialty(doc["specialty"]).code,
                        doc=doc,
                        reply=reply,
                        letter=score.extraction.letter,
                        step=score.extraction.step,
                        correct=score.correct,
                        explanation=explanation or None,
                    )
                )
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                raise DataError(f"{run.sample_files[task]}, line {number}: cannot read this sample ({exc!r})") from exc
    if not items:
        raise DataError(
            f"{run.results_path}: no samples of the MedExQA generation tasks (medexqa_<specialty>) in this run"
        )
    return sorted(items, key=lambda item: (list(SPECIALTIES).index(item.specialty), item.task, item.doc_id))


# ----------------------------------------------------------------------------- lexical / model metrics


def score_similarity(items: Sequence[Item], metrics: Sequence[explanation_metrics.Metric]) -> dict[str, float]:
    """Fill ``item.similarity`` for every item that has an explanation, one batch per metric; seconds per metric."""
    scored = [item for item in items if item.explanation is not None]
    pairs = [(item.explanation, item.references) for item in scored]
    seconds = {}
    for metric in metrics:
        started = time.perf_counter()
        values = metric.score_batch(pairs)
        seconds[metric.name] = round(time.perf_counter() - started, 2)
        for item, value in zip(scored, values, strict=True):
            item.similarity[metric.name] = value
    return seconds


# ----------------------------------------------------------------------------- judges


def judge_label(endpoint: ChatEndpoint) -> str:
    """The judge as the files name it: credentials in its URL (``?key=``, ``user:pass@``) are masked."""
    return f"{endpoint.model}@{redact(endpoint.base_url)}"


def judge_messages(doc: Mapping[str, Any], response: str) -> list[dict[str, str]]:
    question = doc["question"] + "".join(f"\n{letter}. {doc[letter]}" for letter in LETTERS)
    prompt = JUDGE_TEMPLATE.format(
        question=question,
        answer=f"{doc['answer']}. {doc[doc['answer']]}",
        reference_1=doc["exp0"],
        reference_2=doc["exp1"],
        response=response,
    )
    return [{"role": "user", "content": prompt}]


def run_judges(
    items: Sequence[Item],
    endpoints: Sequence[ChatEndpoint],
    cache: ChatCache,
    concurrency: int = 4,
    prices: Mapping[str, Price] | None = None,
    prices_source: str = "--prices",
) -> list[dict[str, Any]]:
    """Ask every judge about every correct answer's explanation; per-judge call statistics and usage. A judge
    whose label (model and URL) an earlier one has is labelled with its place among the judges (``#2``)."""
    judged = [item for item in items if item.correct and item.explanation is not None]
    records = []
    for number, endpoint in enumerate(endpoints, start=1):
        client = ChatClient(endpoint, cache=cache, concurrency=concurrency)
        results = client.complete_many([judge_messages(item.doc, item.explanation) for item in judged])
        label = judge_label(endpoint)
        if label in {record["label"] for record in records}:  # one model twice (other settings): numbered
            label += f" #{number}"
        unparsed = 0
        for item, result in zip(judged, results, strict=True):
            score = parse_judge_score(result.text) if result.ok else None
            unparsed += result.ok and score is None
            item.judges[label] = {
                "score": score,
                "cached": result.cached,
                "error": result.error,
                **({"unparsed_reply": result.text[:500]} if result.ok and score is None else {}),
            }
        records.append(
            {
                **endpoint.record(),
                "prompt_hash": JUDGE_PROMPT_HASH,
                "label": label,
                "items_asked": len(judged),
                "http_calls": client.calls,
                "cache_hits": client.cache_hits,
                "failed_requests": client.failures,
                "unparsed_replies": unparsed,
                "usage": usage_summary(client, prices, prices_source),
            }
        )
    return records


# ----------------------------------------------------------------------------- per-item scores


def judge_rating(item: Item, judge: str) -> float | None:
    """One judge's judge_score of one item: its rating of a correct answer, 0 for a wrong one."""
    return item.judges.get(judge, {}).get("score") if item.correct else 0.0


def item_scores(
    item: Item,
    used_metrics: Sequence[str],
    weights: Mapping[str, float],
    judges: Sequence[str],
    vote: str = "mean",
) -> dict[str, float | None]:
    accuracy = 100.0 if item.correct else 0.0
    scores: dict[str, float | None] = {"accuracy": accuracy}
    if used_metrics:
        explanation = (sum(item.similarity[m] for m in used_metrics) / len(used_metrics)) if item.correct else 0.0
        scores["explanation_score"] = explanation
        scores["combined_score"] = _weighted(accuracy, explanation, weights)
    if judges:
        ratings = [judge_rating(item, j) for j in judges]
        valid = [r for r in ratings if r is not None]
        if vote == "majority":
            judge = agreement.majority(ratings)
        else:
            judge = sum(valid) / len(valid) if valid else None
        scores["judge_score"] = judge
        scores["combined_judge_score"] = None if judge is None else _weighted(accuracy, judge, weights)
    for metric in used_metrics:
        # similarity of every reply that has text, right or wrong (not part of the protocol's score)
        scores[f"similarity_{metric}"] = item.similarity.get(metric)
    return scores


def judge_agreement(items: Sequence[Item], judges: Sequence[str]) -> dict[str, Any]:
    """The judges' agreement on the explanations they were asked about (correct answers with text)."""
    asked = [item for item in items if item.correct and item.explanation is not None]
    ratings = [[item.judges.get(judge, {}).get("score") for item in asked] for judge in judges]
    return agreement.agreement(ratings, JUDGE_SCALE, strata=[item.specialty for item in asked])


def _weighted(accuracy: float, explanation: float, weights: Mapping[str, float]) -> float:
    total = weights["accuracy"] + weights["explanation"]
    return (weights["accuracy"] * accuracy + weights["explanation"] * explanation) / total


def parse_weights(text: str | None) -> dict[str, float]:
    """``accuracy=W,explanation=W`` (finite, non-negative, not both 0)."""
    weights = dict(DEFAULT_WEIGHTS)
    if text:
        for part in text.split(","):
            key, _, value = part.partition("=")
            if key.strip() not in weights:
                raise DataError(f"--weights {text!r}: keys are accuracy and explanation")
            try:
                weights[key.strip()] = float(value)
            except ValueError:
                raise DataError(f"--weights {text!r}: {value!r} is not a number") from None
    if not all(math.isfinite(w) and w >= 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise DataError(f"--weights {text!r}: weights must be finite, non-negative and not all zero")
    return weights


def summarise(name: str, values: Sequence[float | None], specialties: Sequence[str]) -> dict[str, Any]:
    """Per-specialty means, macro (paper) and micro means with CIs, over the items that have a value."""
    kept = [(v, s) for v, s in zip(values, specialties) if v is not None]
    if not kept:
        return {"n": 0, "missing": len(values)}
    vals, groups = [v for v, _ in kept], [s for _, s in kept]
    by_specialty: dict[str, list[float]] = {}
    for value, group in kept:
        by_specialty.setdefault(group, []).append(value)
    return {
        "n": len(vals),
        "missing": len(values) - len(vals),
        "macro": stats.bootstrap(stats.macro_mean_of(vals, groups), len(vals), strata=groups).as_dict(),
        "micro": stats.bootstrap(stats.mean_of(vals), len(vals), strata=groups).as_dict(),
        "specialties": {s: {"n": len(v), "mean": sum(v) / len(v)} for s, v in by_specialty.items()},
    }


# ----------------------------------------------------------------------------- the command


def score_run(
    path: str | os.PathLike,
    metrics: Sequence[str] = explanation_metrics.METRICS,
    bertscore_options: Mapping[str, Any] | None = None,
    judges: Sequence[ChatEndpoint] = (),
    judge_cache: str | os.PathLike | None = None,
    judge_concurrency: int = 4,
    weights: Mapping[str, float] | None = None,
    judge_vote: str = "mean",
    prices: Mapping[str, Price] | None = None,
    prices_source: str = "--prices",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary and the per-item rows for one run."""
    if judge_vote not in JUDGE_VOTES:
        raise DataError(f"judge vote {judge_vote!r}: one of {', '.join(JUDGE_VOTES)}")
    run = runs.load_run(path)
    items = read_items(run)
    weights = dict(weights or DEFAULT_WEIGHTS)
    loaded, unavailable = explanation_metrics.load_available(metrics, **(bertscore_options or {}))
    seconds = score_similarity(items, loaded)
    used = [metric.name for metric in loaded]
    judge_records = []
    if judges:
        cache_path = Path(judge_cache) if judge_cache else run.results_path.parent / "medexqa_judge_cache.sqlite"
        cache = ChatCache(cache_path)
        try:
            judge_records = run_judges(items, judges, cache, judge_concurrency, prices, prices_source)
        finally:
            cache.close()
    labels = [record["label"] for record in judge_records]
    rows, per_item = [], []
    for item in items:
        scores = item_scores(item, used, weights, labels, judge_vote)
        per_item.append(scores)
        rows.append(
            {
                "task": item.task,
                "doc_id": item.doc_id,
                "specialty": item.specialty,
                "row": item.doc["row"],
                "gold": item.doc["answer"],
                "pred": item.letter,
                "extraction_step": item.step,
                "correct": item.correct,
                **scores,
                **({"judges": item.judges} if item.judges else {}),
            }
        )
    specialties = [item.specialty for item in items]
    for record in judge_records:
        record["judge_score"] = summarise("judge_score", [judge_rating(i, record["label"]) for i in items], specialties)
    names = list(per_item[0])
    counts = {code: sum(s == code for s in specialties) for code in SPECIALTIES}
    complete = counts == PUBLISHED_COUNTS["test"] and all(item.doc.get("split", "test") == "test" for item in items)
    summary = {
        "schema_version": SCHEMA_VERSION,
        "run": runs.run_info(run),
        # every distinct split / shuffle setting among the items (one, unless the run mixed them)
        "benchmark_settings": [
            dict(s) for s in sorted({tuple(settings_of({"doc": item.doc}).items()) for item in items})
        ],
        "scale": "0-100 per item (accuracy 0 or 100)",
        "bootstrap": stats.bootstrap_description(stratified_by="specialty"),
        "explanation_metrics": {metric.name: metric.details for metric in loaded},
        "scoring_seconds": seconds,  # wall time of each metric over all items (loading not included)
        "unavailable_metrics": unavailable,
        "weights": weights,
        "judges": judge_records,
        **({"judge_vote": judge_vote, "usage": usage_total([r["usage"] for r in judge_records])} if judges else {}),
        **({"judge_agreement": judge_agreement(items, labels)} if len(labels) >= 2 else {}),
        "n_items": len(items),
        "items_per_specialty": counts,
        "all_published_items": complete,
        "scores": {name: summarise(name, [scores[name] for scores in per_item], specialties) for name in names},
        "notes": [
            "macro is the paper's aggregate: the unweighted mean over specialties; micro is the mean over items.",
            "explanation_score: mean of the available metrics' similarity to the two references when the answer is "
            "correct, 0 otherwise; similarity_<metric> is the similarity of every reply with text, right or wrong.",
            "judge_score: mean over judges of their 0-10 rating x10 (judge_vote mean), or the rating more than half "
            "of the judges gave (judge_vote majority), for correct answers; 0 for wrong ones; items without a valid "
            "score (or without a majority) are left out and counted as missing. Each judge's own judge_score is under "
            "judges.",
            "judge_agreement: over the correct answers the judges rated: quadratic-weighted Cohen's kappa for two "
            "judges, interval Krippendorff's alpha for more; bootstrap CI over those items, stratified by specialty.",
            "usage: tokens the judges' calls of this run used, and those of the answers read from the cache (what "
            "they cost when made); reasoning tokens are part of completion tokens.",
        ],
    }
    return summary, rows


def metric_label(name: str, details: Mapping[str, Any]) -> str:
    """A metric as the Markdown names it: its implementation and, for BERTScore, the encoder, layer and dtype."""
    parts = [details["implementation"]]
    if "model" in details:
        encoder = f"encoder {details['model']}, layer {details['num_layers']}"
        if details["model"] != explanation_metrics.SCIBERT:
            encoder += f", not the default {explanation_metrics.SCIBERT}"
        dtype = details["dtype"]
        if dtype != explanation_metrics.BERTSCORE_DTYPE:
            dtype += f" (opt-in; evaluate's BERTScore runs {explanation_metrics.BERTSCORE_DTYPE})"
        parts += [encoder, dtype]
    return f"{name} ({'; '.join(parts)})"


def to_markdown(summary: Mapping[str, Any]) -> str:
    def fmt(estimate: Mapping[str, float]) -> str:
        return stats.format_estimate(estimate, digits=2)

    lines = [
        "# MedExQA explanation scores",
        "",
        f"- results: `{summary['run']['results_file']}`; items: {summary['n_items']} "
        f"({'all published test items' if summary['all_published_items'] else 'not the full published test set'})",
        "- metrics used: "
        + (
            ", ".join(metric_label(name, details) for name, details in summary["explanation_metrics"].items()) or "none"
        ),
        f"- settings: {'; '.join(json.dumps(values) for values in summary['benchmark_settings'])}",
    ]
    lines += [
        f"- **unavailable, left out**: {name}: {reason}" for name, reason in summary["unavailable_metrics"].items()
    ]
    lines += [
        f"- combined weights: accuracy {summary['weights']['accuracy']}, explanation {summary['weights']['explanation']}"
    ]
    for judge in summary["judges"]:
        own = judge["judge_score"]
        lines.append(
            f"- judge {judge['model']} at {judge['base_url']} (temperature {judge['temperature']}, prompt "
            f"{judge['prompt_hash']}): {judge['items_asked']} asked, {judge['http_calls']} HTTP calls, "
            f"{judge['cache_hits']} cached, {judge['failed_requests']} failed, {judge['unparsed_replies']} unparsed; "
            + (f"its judge_score macro {fmt(own['macro'])}, micro {fmt(own['micro'])}" if own["n"] else "no score")
            + f"; usage: {format_usage(judge['usage'])}"
        )
    if "judge_vote" in summary:
        lines.append(
            f"- judge_score of several judges: {summary['judge_vote']}; usage of all judges: "
            f"{format_usage(summary['usage'])}"
        )
    if agreed := summary.get("judge_agreement"):
        estimate = agreed["estimate"]
        lines.append(
            f"- judges' agreement ({agreed['statistic']}, {agreed['items']} items, {agreed['items_left_out']} left "
            "out): "
            + (
                stats.format_estimate(estimate)
                if estimate and estimate["low"] is not None
                else f"{estimate['value']:.3f} ({agreed['ci_unavailable']})"
                if estimate
                else agreed["unavailable"]
            )
        )
    codes = list(SPECIALTIES)
    lines += [
        "",
        "| score | " + " | ".join(codes) + " | macro [95% CI] | micro [95% CI] | n (missing) |",
        "|---|" + "---:|" * len(codes) + "---|---|---|",
    ]
    for name, entry in summary["scores"].items():
        if not entry["n"]:
            lines.append(f"| {name} | " + " | ".join("-" for _ in codes) + f" | - | - | 0 ({entry['missing']}) |")
            continue
        cells = [f"{entry['specialties'][c]['mean']:.2f}" if c in entry["specialties"] else "-" for c in codes]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {fmt(entry['macro'])} | {fmt(entry['micro'])} | "
            f"{entry['n']} ({entry['missing']}) |"
        )
    lines += [""] + [f"- note: {note}" for note in summary["notes"]]
    return "\n".join(lines) + "\n"


def write(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], out_dir: str | os.PathLike) -> list[Path]:
    return write_atomically(
        out_dir,
        {
            "medexqa_explanations.json": (json.dumps(summary, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
            "medexqa_explanations.md": to_markdown(summary).encode("utf-8"),
            "medexqa_explanation_items.jsonl": jsonl_bytes(rows),
        },
    )
