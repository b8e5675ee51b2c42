"""FActBench fact-checking: atomic facts, CoT judge, NLI, unanimous voting, intrinsic -> extrinsic.

Per generation (shared/SPEC.md section 5):

1. **Sentences.** The text (think blocks removed) is split into lines, then sentences by NLTK's
   Punkt algorithm with fixed parameters (a list of scientific abbreviations; no downloaded model,
   so the split is identical everywhere). Lines or sentences without a letter or digit are dropped.
2. **Atomic facts.** Each sentence goes to an LLM decomposer (FActScore-style few-shot prompt in our
   own words with medical demonstrations, temperature 0). Reply lines starting with ``-``, ``*``,
   ``•`` or ``1.`` are the facts; a reply saying "No facts." means the sentence has none; any other
   reply is unparsed and the sentence itself becomes one fact (counted as ``sentence_fallback``).
   A generation with no facts at all is reported as "no facts" and left out of every mean (no
   dummy fact). A failed decomposer call leaves the generation unscored (reported).
3. **Intrinsic checks** against the grounding document: (a) **CoT**: an LLM judge reasons, then
   answers True/False at temperature 0 (our own prompt with three worked demonstrations;
   :func:`parse_verdict`); (b) **NLI**: premise = document window, hypothesis = fact (:mod:`.nli`).
4. **Extrinsic re-check** (when a passage store is given): a fact a technique finds unsupported by
   the document is re-checked by the same technique against the top-k passages retrieved for it
   (BM25, :mod:`.passage_store`); the re-check's verdict replaces the intrinsic one. A fact the
   document supports is never re-checked.
5. **Unanimous voting (UnVot)**: a fact is supported iff CoT and NLI both support it, in the
   intrinsic and in the intrinsic+extrinsic setting.

A generation's score per technique is its share of supported facts; a task's score is the mean
over its scored generations, with a bootstrap CI (:mod:`.stats`). A call that fails (after the
client's retries) or a verdict that cannot be parsed is never counted as unsupported: the
generation gets no score for that technique and is counted as incomplete. A technique that could
not run at all (no NLI model, no passage store) is reported as unavailable, never as 0.

Every per-fact verdict (with the judge's reply) is saved, so :func:`rescore` rebuilds every
table from the saved files without any model call.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import stats
from ..data import DataError, read_table, row_error
from ..openai_client import ChatEndpoint, ChatResult, prompt_hash
from ..text import strip_think
from . import protocol as factbench

logger = logging.getLogger(__name__)

FACTCHECK_VERSION = "1.0"
TECHNIQUES = ("cot", "nli", "unvot")
TECHNIQUE_TITLES = {"cot": "CoT", "nli": "NLI", "unvot": "UnVot"}
SETTINGS = ("intrinsic", "extrinsic")  # "extrinsic" = intrinsic followed by the extrinsic re-check
SETTING_TITLES = {"intrinsic": "Grounding document", "extrinsic": "Grounding document + passage store"}
PAPER_MODELS = 6

# ----------------------------------------------------------------------------- 1. sentences

ABBREVIATIONS = frozenset(
    """e.g i.e al etc vs approx ca cf fig figs eq eqs ref refs vol no nos sec dr mr mrs ms prof
st jr sr inc ltd co min max mg ml kg hr hrs yr yrs wk wks mo mos resp incl u.s u.k e.u spp sp var""".split()
)
_HAS_CONTENT = re.compile(r"[^\W_]", re.UNICODE)


def _punkt():
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS)
    return PunktSentenceTokenizer(params)


_SPLITTER = None


def split_sentences(text: str) -> list[str]:
    """Sentences of a generation: per line, by Punkt with fixed abbreviations; empty ones dropped."""
    global _SPLITTER
    if _SPLITTER is None:
        _SPLITTER = _punkt()
    sentences = []
    for line in text.splitlines():
        for sentence in _SPLITTER.tokenize(line.strip()):
            if _HAS_CONTENT.search(sentence):
                sentences.append(sentence.strip())
    return sentences


# ----------------------------------------------------------------------------- 2. decomposer

DECOMPOSER_SYSTEM = (
    "You split sentences from medical and scientific texts into atomic facts. An atomic fact is a short, "
    "self-contained statement that conveys exactly one piece of information and can be checked on its own. "
    "Repeat names instead of using pronouns. Do not add anything that the sentence does not say. "
    'Write one fact per line, each starting with "- ". If the sentence states no fact (a heading, a '
    "greeting, a question, an announcement of what follows), answer exactly: No facts."
)
DECOMPOSER_REQUEST = "Split this sentence into atomic facts:\n{sentence}"
DECOMPOSER_DEMOS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Metformin, a biguanide, is the first-line drug for type 2 diabetes and lowers hepatic glucose production.",
        (
            "Metformin is a biguanide.",
            "Metformin is the first-line drug for type 2 diabetes.",
            "Metformin lowers hepatic glucose production.",
        ),
    ),
    (
        "The trial randomized 412 adults with moderate asthma to inhaled budesonide or placebo for 12 weeks.",
        (
            "The trial was randomized.",
            "The trial enrolled 412 adults.",
            "The participants had moderate asthma.",
            "The participants received inhaled budesonide or placebo.",
            "The treatment lasted 12 weeks.",
        ),
    ),
    ("Here is a summary of the article:", ()),
    (
        "Vitamin D supplementation did not reduce the risk of hip fracture in women over 70.",
        ("Vitamin D supplementation did not reduce the risk of hip fracture in women over 70.",),
    ),
    (
        "**Key Findings:** Mortality was 12% lower in the intervention group (p = 0.03).",
        (
            "Mortality was 12% lower in the intervention group than in the comparison group.",
            "The difference in mortality had a p-value of 0.03.",
        ),
    ),
)
NO_FACTS = "No facts."


def _demo_reply(facts: Sequence[str]) -> str:
    return "\n".join(f"- {fact}" for fact in facts) if facts else NO_FACTS


def decomposer_messages(sentence: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": DECOMPOSER_SYSTEM}]
    for demo, facts in DECOMPOSER_DEMOS:
        messages += [
            {"role": "user", "content": DECOMPOSER_REQUEST.format(sentence=demo)},
            {"role": "assistant", "content": _demo_reply(facts)},
        ]
    return messages + [{"role": "user", "content": DECOMPOSER_REQUEST.format(sentence=sentence)}]


DECOMPOSER_PROMPT_HASH = prompt_hash(json.dumps(decomposer_messages("{sentence}"), ensure_ascii=False))
_BULLET = re.compile(r"^\s*(?:[-*•–]|\d{1,3}[.)])\s+(.*\S)\s*$")
_NO_FACTS = re.compile(r"\bno (?:atomic )?facts?\b", re.IGNORECASE)


def parse_facts(reply: str | None) -> tuple[list[str], str]:
    """``(facts, outcome)``; outcome is "facts", "no_facts" or "unparsed".

    Bullet or numbered lines are facts (markdown emphasis stripped, exact repeats dropped); a reply
    with no such line that says "no facts" is "no_facts"; anything else is "unparsed".
    """
    text = strip_think(reply) if reply is not None else None
    if text is None:
        return [], "unparsed"
    facts: list[str] = []
    for line in text.splitlines():
        match = _BULLET.match(line)
        if match:
            fact = match.group(1).replace("**", "").strip()
            if _HAS_CONTENT.search(fact) and fact not in facts:
                facts.append(fact)
    if facts:
        return facts, "facts"
    return [], "no_facts" if _NO_FACTS.search(text) else "unparsed"


# ----------------------------------------------------------------------------- 3. CoT judge

JUDGE_SYSTEM = (
    "You check statements against a given context from medical and scientific sources. Decide whether the "
    "context supports the statement: it is supported only if the context states it or it follows directly "
    "from the context. Think step by step: quote or point to the relevant part of the context, compare it "
    "with the statement, then give your verdict. End your reply with a final line that is exactly "
    '"Answer: True" (supported) or "Answer: False" (not supported or contradicted).'
)
JUDGE_REQUEST = "Context:\n{context}\n\nStatement: {fact}\n\nIs the statement supported by the context?"
_DEMO_CONTEXT = (
    "Metformin was given to 120 adults with type 2 diabetes for 24 weeks. HbA1c fell by 0.9% compared with placebo."
)
# (statement, reasoning and verdict): one supported, one contradicted, one not mentioned.
JUDGE_DEMOS: tuple[tuple[str, str], ...] = (
    (
        "Metformin lowered HbA1c compared with placebo.",
        "The context says HbA1c fell by 0.9% with metformin compared with placebo, so metformin lowered HbA1c.\n"
        "Answer: True",
    ),
    ("The trial lasted 12 weeks.", "The context says the trial lasted 24 weeks, not 12 weeks.\nAnswer: False"),
    (
        "Metformin causes weight loss.",
        "The context does not mention body weight, so it does not support the statement.\nAnswer: False",
    ),
)


def judge_messages(context: str, fact: str) -> list[dict[str, str]]:
    """System rules, three worked demonstrations, then the context and the fact (the fact last, so
    consecutive facts of one document share a cacheable prompt prefix)."""
    messages = [{"role": "system", "content": JUDGE_SYSTEM}]
    for statement, answer in JUDGE_DEMOS:
        messages += [
            {"role": "user", "content": JUDGE_REQUEST.format(context=_DEMO_CONTEXT, fact=statement)},
            {"role": "assistant", "content": answer},
        ]
    return messages + [{"role": "user", "content": JUDGE_REQUEST.format(context=context, fact=fact)}]


JUDGE_PROMPT_HASH = prompt_hash(json.dumps(judge_messages("{context}", "{fact}"), ensure_ascii=False))
_ANSWER = re.compile(r"answer\W{0,6}(?:is\W{0,3})?(true|false)\b", re.IGNORECASE)
_BARE = re.compile(r"^\W*(true|false)\W*$", re.IGNORECASE)


def parse_verdict(reply: str | None) -> bool | None:
    """The judge's verdict, or None when it cannot be read.

    Think blocks are removed first (an unclosed one means no verdict). Then: the last
    "Answer: True/False" (any case; markdown, quotes or "is" allowed in between) decides; failing
    that, a last non-empty line that is only True or False; anything else is unparsed.
    """
    text = strip_think(reply) if reply is not None else None
    if text is None:
        return None
    answers = _ANSWER.findall(text)
    if answers:
        return answers[-1].lower() == "true"
    lines = [line for line in text.splitlines() if line.strip()]
    bare = _BARE.match(lines[-1]) if lines else None
    return bare.group(1).lower() == "true" if bare else None


# ----------------------------------------------------------------------------- data model


@dataclass
class Generation:
    task: str  # component: summ, laysumm, rag, gen
    doc_id: int
    doc_hash: str
    text: str
    document: str
    item_id: str = ""


@dataclass
class CheckResult:
    generations: list[dict[str, Any]]  # per generation: identity, status, sentences, counts
    facts: list[dict[str, Any]]  # per fact: identity, text, verdicts of every technique and setting
    config: dict[str, Any]  # what ran (models, prompt hashes, store, rules) and what was unavailable
    timing: dict[str, Any] = field(default_factory=dict)
    calls: dict[str, Any] = field(default_factory=dict)


def generations_from_run(
    path: str, tasks: Iterable[str] | None = None, limit: int | None = None
) -> tuple[list[Generation], dict[str, Any]]:
    """FActBench generations of an lm-eval ``--log_samples`` run, and a description of the run."""
    from ..runs import load_run, run_info

    run = load_run(path)
    wanted = {factbench.task_component(t) or t for t in tasks} if tasks else None
    generations = []
    for task_name in sorted(run.samples):
        component = factbench.task_component(task_name)
        if component is None or (wanted and component not in wanted):
            continue
        samples = sorted(run.samples[task_name], key=lambda s: int(s["doc_id"]))[:limit]
        for number, sample in enumerate(samples, start=1):
            try:
                reply = (
                    sample["filtered_resps"][0]
                    if isinstance(sample["filtered_resps"], list)
                    else sample["filtered_resps"]
                )
                doc = sample["doc"]
                generations.append(
                    Generation(
                        component,
                        int(sample["doc_id"]),
                        sample.get("doc_hash", ""),
                        reply,
                        doc["document"],
                        str(doc.get("id", "")),
                    )
                )
            except (KeyError, TypeError, IndexError, ValueError) as exc:
                raise DataError(
                    f"{run.sample_files[task_name]}, sample {number}: not a FActBench sample ({exc!r})"
                ) from exc
    if not generations:
        raise DataError(
            f"{run.results_path}: no FActBench samples (tasks in the run: {', '.join(sorted(run.samples))})"
        )
    info = run_info(run)
    info["task_versions"] = {t: v for t, v in info["task_versions"].items() if factbench.task_component(t)}
    return generations, info


# ----------------------------------------------------------------------------- the checker


def _complete_unique(client: Any, conversations: Sequence[list[dict[str, str]]]) -> list[ChatResult]:
    """Answers in order, asking each distinct conversation once (concurrent duplicates would all be sent)."""
    unique = {json.dumps(messages, ensure_ascii=False): messages for messages in conversations}
    answers = dict(zip(unique, client.complete_many(list(unique.values())), strict=True))
    return [answers[json.dumps(messages, ensure_ascii=False)] for messages in conversations]


class FactChecker:
    """Runs the whole pipeline. ``decomposer`` and ``judge`` are :class:`~.openai_client.ChatClient`s
    (or anything with ``endpoint`` and ``complete_many``); ``nli`` an :class:`~.nli.NliVerifier` or
    None; ``store`` a :class:`~.passage_store.PassageStore` or None."""

    def __init__(
        self,
        decomposer: Any,
        judge: Any,
        nli: Any = None,
        store: Any = None,
        k: int = 5,
        nli_unavailable: str | None = None,
        progress: Callable[[str], None] | None = None,
    ):
        self.decomposer, self.judge, self.nli, self.store, self.k = decomposer, judge, nli, store, k
        self.nli_unavailable = nli_unavailable or (None if nli is not None else "no NLI model was given")
        self.progress = progress or (lambda message: logger.info(message))

    def config(self) -> dict[str, Any]:
        def endpoint(client: Any, prompt: str) -> dict[str, Any]:
            record = client.endpoint.record() if isinstance(getattr(client, "endpoint", None), ChatEndpoint) else {}
            return {**record, "prompt_hash": prompt}

        return {
            "factcheck_version": FACTCHECK_VERSION,
            "sentence_splitter": {
                "method": "per line, then NLTK Punkt with fixed parameters",
                "abbreviations": sorted(ABBREVIATIONS),
            },
            "decomposer": endpoint(self.decomposer, DECOMPOSER_PROMPT_HASH),
            "cot": endpoint(self.judge, JUDGE_PROMPT_HASH)
            if self.judge is not None
            else {"unavailable": "no CoT judge was given"},
            "nli": self.nli.record() if self.nli is not None else {"unavailable": self.nli_unavailable},
            "passage_store": {**self.store.record(), "k": self.k}
            if self.store is not None
            else {"unavailable": "no passage store was given (--passages)"},
            "rules": {
                "extrinsic": "facts a technique finds unsupported by the document are re-checked by the same "
                "technique against the top-k passages; that verdict replaces the intrinsic one",
                "unvot": "supported iff CoT and NLI both support the fact",
                "score": "share of supported facts per generation; mean over scored generations",
            },
        }

    # -- stages ------------------------------------------------------------------------------

    def _decompose(self, generations: Sequence[Generation]) -> tuple[list[dict], list[dict]]:
        records, facts, requests = [], [], {}
        for generation in generations:
            text = strip_think(generation.text)
            sentences = split_sentences(text) if text is not None else []
            records.append(
                {
                    "task": generation.task,
                    "doc_id": generation.doc_id,
                    "doc_hash": generation.doc_hash,
                    "item_id": generation.item_id,
                    "answered": text is not None,
                    "sentences": sentences,
                }
            )
            for sentence in sentences:
                requests.setdefault(sentence, None)
        answers = dict(
            zip(requests, _complete_unique(self.decomposer, [decomposer_messages(s) for s in requests]), strict=True)
        )
        for index, (generation, record) in enumerate(zip(generations, records, strict=True)):
            outcomes, errors, fact_index = [], [], 0
            for s_index, sentence in enumerate(record["sentences"]):
                answer: ChatResult = answers[sentence]
                if not answer.ok:
                    outcomes.append("failed")
                    errors.append(answer.error)
                    continue
                parsed, outcome = parse_facts(answer.text)
                if outcome == "unparsed":
                    parsed, origin = [sentence], "sentence_fallback"
                else:
                    origin = "decomposer"
                outcomes.append(outcome)
                for fact in parsed:
                    facts.append(
                        {
                            "generation": index,
                            "task": generation.task,
                            "doc_id": generation.doc_id,
                            "sentence_index": s_index,
                            "fact_index": fact_index,
                            "sentence": sentence,
                            "fact": fact,
                            "origin": origin,
                            "cot": {},
                            "nli": {},
                        }
                    )
                    fact_index += 1
            record["decomposer_outcomes"] = outcomes
            record["n_facts"] = fact_index
            record["status"] = (
                "no_answer"
                if not record["answered"]
                else "decomposition_failed"
                if errors
                else "checked"
                if fact_index
                else "no_facts"
            )
            if errors:
                record["errors"] = errors
        failed = {i for i, r in enumerate(records) if r["status"] == "decomposition_failed"}
        return records, [f for f in facts if f["generation"] not in failed]

    def _judge(self, facts: Sequence[dict], contexts: Sequence[str], setting: str) -> None:
        results = _complete_unique(
            self.judge, [judge_messages(c, f["fact"]) for f, c in zip(facts, contexts, strict=True)]
        )
        for fact, result in zip(facts, results, strict=True):
            verdict = parse_verdict(result.text) if result.ok else None
            fact["cot"][setting] = {
                "supported": verdict,
                "reply": result.text,
                "error": result.error if not result.ok else None if verdict is not None else "unparsed verdict",
                "cached": result.cached,
            }

    def _nli(self, facts: Sequence[dict], premises: Sequence[Sequence[str]], setting: str) -> None:
        pairs = [(premise, fact["fact"]) for fact, options in zip(facts, premises, strict=True) for premise in options]
        results = iter(self.nli.check(pairs))
        for fact, options in zip(facts, premises, strict=True):
            checked = [next(results) for _ in options]
            if not checked:  # no passage was retrieved: nothing supports the fact
                fact["nli"][setting] = {"supported": False, "label": None, "passages": 0}
                continue
            best = max(range(len(checked)), key=lambda i: (checked[i].probabilities.get("entailment", 0.0), -i))
            fact["nli"][setting] = {
                **checked[best].as_dict(),
                "passage": best if setting == "extrinsic" else None,
                "cached": all(r.cached for r in checked),
            }

    def check(self, generations: Sequence[Generation]) -> CheckResult:
        timing: dict[str, Any] = {}
        start = time.perf_counter()
        self.progress(f"decomposing {len(generations)} generations")
        records, facts = self._decompose(generations)
        timing["decomposition"] = {
            "seconds": time.perf_counter() - start,
            "sentences": sum(len(r["sentences"]) for r in records),
            "facts": len(facts),
        }
        documents = [g.document for g in generations]
        if self.judge is not None:
            self.progress(f"CoT judge, intrinsic: {len(facts)} facts")
            start = time.perf_counter()
            self._judge(facts, [documents[f["generation"]] for f in facts], "intrinsic")
            timing["cot_intrinsic"] = {"seconds": time.perf_counter() - start, "facts": len(facts)}
        if self.nli is not None:
            self.progress(f"NLI, intrinsic: {len(facts)} facts")
            start = time.perf_counter()
            self._nli(facts, [[documents[f["generation"]]] for f in facts], "intrinsic")
            timing["nli_intrinsic"] = {"seconds": time.perf_counter() - start, "facts": len(facts)}
        if self.store is not None:
            needs = {
                t: [f for f in facts if f[t].get("intrinsic", {}).get("supported") is False] for t in ("cot", "nli")
            }
            start = time.perf_counter()
            queries = dict.fromkeys(f["fact"] for f in needs["cot"] + needs["nli"])
            passages = {query: self.store.search(query, self.k) for query in queries}
            timing["retrieval"] = {"seconds": time.perf_counter() - start, "facts": len(passages)}
            for fact in needs["cot"] + needs["nli"]:
                fact["passages"] = [p.id for p in passages[fact["fact"]]]
            if self.judge is not None:
                self.progress(f"CoT judge, extrinsic: {len(needs['cot'])} facts")
                start = time.perf_counter()
                with_passages = [f for f in needs["cot"] if passages[f["fact"]]]
                for fact in needs["cot"]:
                    if not passages[fact["fact"]]:
                        fact["cot"]["extrinsic"] = {
                            "supported": False,
                            "reply": None,
                            "error": None,
                            "cached": False,
                            "passages": 0,
                        }
                self._judge(
                    with_passages,
                    [
                        "\n\n".join(f"Title: {p.title}\nText: {p.text}" for p in passages[f["fact"]])
                        for f in with_passages
                    ],
                    "extrinsic",
                )
                timing["cot_extrinsic"] = {"seconds": time.perf_counter() - start, "facts": len(needs["cot"])}
            if self.nli is not None:
                self.progress(f"NLI, extrinsic: {len(needs['nli'])} facts")
                start = time.perf_counter()
                self._nli(needs["nli"], [[p.text for p in passages[f["fact"]]] for f in needs["nli"]], "extrinsic")
                timing["nli_extrinsic"] = {"seconds": time.perf_counter() - start, "facts": len(needs["nli"])}
        for stage in timing.values():
            stage["facts_per_minute"] = stage["facts"] / stage["seconds"] * 60 if stage["seconds"] > 0 else None
        clients = {"decomposer": self.decomposer, "cot": self.judge}
        if self.decomposer is self.judge:  # one client, one set of counters
            clients = {"decomposer_and_cot": self.judge}
        calls = {
            name: {"calls": client.calls, "cache_hits": client.cache_hits, "failures": client.failures}
            for name, client in clients.items()
            if client is not None
        }
        if self.nli is not None:
            calls["nli"] = {"pairs_computed": self.nli.computed, "cache_hits": self.nli.cache_hits}
        for fact in facts:
            del fact["generation"]
        return CheckResult(records, facts, self.config(), timing, calls)


# ----------------------------------------------------------------------------- 4. verdicts and scores


def fact_verdict(fact: Mapping[str, Any], technique: str, setting: str) -> bool | None:
    """A fact's verdict for one technique and setting; None when it is missing or failed."""
    if technique == "unvot":
        cot, nli = fact_verdict(fact, "cot", setting), fact_verdict(fact, "nli", setting)
        return None if cot is None or nli is None else cot and nli
    intrinsic = fact.get(technique, {}).get("intrinsic", {}).get("supported")
    if setting == "intrinsic" or intrinsic is not False:
        return intrinsic
    return fact.get(technique, {}).get("extrinsic", {}).get("supported")


def availability(config: Mapping[str, Any]) -> dict[tuple[str, str], str | None]:
    """(technique, setting) -> None when it ran, else why it could not."""
    out: dict[tuple[str, str], str | None] = {}
    store = config["passage_store"].get("unavailable")
    for technique in TECHNIQUES:
        missing = {"cot": config["cot"].get("unavailable"), "nli": config["nli"].get("unavailable")}
        reason = missing.get(technique) if technique != "unvot" else (missing["cot"] or missing["nli"])
        for setting in SETTINGS:
            out[(technique, setting)] = reason or (store if setting == "extrinsic" else None)
    return out


def generation_scores(
    generations: Sequence[Mapping[str, Any]], facts: Sequence[Mapping[str, Any]], config: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Per generation: status, facts, and per technique and setting a score or why there is none."""
    by_generation: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for fact in facts:
        by_generation[(fact["task"], fact["doc_id"])].append(fact)
    available = availability(config)
    out = []
    for record in generations:
        own = by_generation[(record["task"], record["doc_id"])]
        scores: dict[str, dict[str, Any]] = {}
        for technique in TECHNIQUES:
            for setting in SETTINGS:
                key = f"{technique}_{setting}"
                if available[(technique, setting)]:
                    scores[key] = {"score": None, "reason": "unavailable"}
                elif record["status"] != "checked":
                    scores[key] = {"score": None, "reason": record["status"]}
                else:
                    verdicts = [fact_verdict(f, technique, setting) for f in own]
                    missing = sum(v is None for v in verdicts)
                    scores[key] = (
                        {"score": None, "reason": "incomplete", "missing_verdicts": missing}
                        if missing
                        else {
                            "score": sum(verdicts) / len(verdicts),
                            "supported": sum(verdicts),
                            "facts": len(verdicts),
                        }
                    )
        out.append(
            {
                **{k: record[k] for k in ("task", "doc_id", "doc_hash", "item_id", "status", "n_facts")},
                "n_sentences": len(record["sentences"]),
                "scores": scores,
            }
        )
    return out


def score_table(scored: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> dict[str, Any]:
    """Table 2 of the paper for one model: per task, technique and setting, mean score with a CI."""
    available = availability(config)
    table: dict[str, Any] = {}
    for task in factbench.TASKS:
        rows = [r for r in scored if r["task"] == task]
        if not rows:
            continue
        status = Counter(r["status"] for r in rows)
        checked = [r for r in rows if r["status"] == "checked"]
        entry: dict[str, Any] = {
            "title": factbench.TASK_TITLES[task],
            "generations": len(rows),
            "paper_items": factbench.PAPER_ITEMS[task],
            "status": dict(status),
            "facts": sum(r["n_facts"] for r in checked),
            "facts_per_checked_generation": sum(r["n_facts"] for r in checked) / len(checked) if checked else None,
            "sentences_per_generation": sum(r["n_sentences"] for r in rows) / len(rows),
            "cells": {},
        }
        for technique in TECHNIQUES:
            for setting in SETTINGS:
                key = f"{technique}_{setting}"
                reason = available[(technique, setting)]
                if reason:
                    entry["cells"][key] = {"status": "unavailable", "reason": reason}
                    continue
                values = [r["scores"][key]["score"] for r in rows if r["scores"][key]["score"] is not None]
                cell = {
                    "status": "ok" if values else "no scored generations",
                    "n_scored": len(values),
                    "n_incomplete": sum(
                        r["scores"][key]["reason"] == "incomplete" for r in rows if r["scores"][key]["score"] is None
                    ),
                }
                if values:
                    cell["estimate"] = stats.bootstrap(stats.mean_of(values), len(values)).as_dict()
                entry["cells"][key] = cell
        entry["full_item_count"] = len(rows) == factbench.PAPER_ITEMS[task]
        table[task] = entry
    return table


def _unsupported_share(facts: Sequence[Mapping[str, Any]], technique: str) -> float | None:
    verdicts = [f.get(technique, {}).get("intrinsic", {}).get("supported") for f in facts]
    known = [v for v in verdicts if v is not None]
    return sum(v is False for v in known) / len(known) if known else None


def paper_scale_calls(
    table: Mapping[str, Any], facts: Sequence[Mapping[str, Any]], k: int, models: int = PAPER_MODELS
) -> dict[str, Any]:
    """Calls a full paper-scale run would need (the paper's items x ``models`` generators) at this
    run's measured rates: sentences and facts per generation, share of facts each technique finds
    unsupported (those are re-checked; NLI then reads ``k`` passages per fact). None where a rate
    could not be measured."""
    out: dict[str, Any] = {"models": models, "k": k, "tasks": {}}
    totals: Counter = Counter()
    for task, entry in table.items():
        task_facts = [f for f in facts if f["task"] == task]
        facts_per_generation = entry["facts_per_checked_generation"] or 0.0
        share = {t: _unsupported_share(task_facts, t) for t in ("cot", "nli")}
        items = entry["paper_items"] * models
        estimate = {
            "generations": items,
            "decomposer_calls": round(items * entry["sentences_per_generation"]),
            "cot_intrinsic_calls": round(items * facts_per_generation),
            "cot_extrinsic_calls": None if share["cot"] is None else round(items * facts_per_generation * share["cot"]),
            "nli_intrinsic_pairs": round(items * facts_per_generation),
            "nli_extrinsic_pairs": None
            if share["nli"] is None
            else round(items * facts_per_generation * share["nli"] * k),
        }
        totals.update({name: value for name, value in estimate.items() if value is not None})
        out["tasks"][task] = {
            **estimate,
            "measured": {
                "sentences_per_generation": entry["sentences_per_generation"],
                "facts_per_generation": facts_per_generation,
                "cot_unsupported_share": share["cot"],
                "nli_unsupported_share": share["nli"],
            },
        }
    out["total"] = {
        **totals,
        "llm_calls": totals["decomposer_calls"] + totals["cot_intrinsic_calls"] + totals["cot_extrinsic_calls"],
    }
    return out


# ----------------------------------------------------------------------------- 5. human scores


def read_human_scores(path: str | Path) -> dict[tuple[str, int], float]:
    """``(task, doc_id) -> score`` from a CSV/TSV/JSONL/JSON/Parquet file with columns task, doc_id, score."""
    rows = read_table(path)
    out = {}
    for number, row in enumerate(rows, start=1):
        for column in ("task", "doc_id", "score"):
            if column not in row:
                raise row_error(path, number, column, "missing column")
        task = factbench.task_component(str(row["task"])) or str(row["task"])
        if task not in factbench.TASKS:
            raise row_error(path, number, "task", f"{row['task']!r} is not a FActBench task")
        try:
            key, score = (task, int(row["doc_id"])), float(row["score"])
        except (TypeError, ValueError) as exc:
            raise row_error(path, number, "doc_id/score", f"not a number ({exc})") from exc
        if key in out:
            raise row_error(path, number, "doc_id", f"duplicate score for {task} doc {key[1]}")
        out[key] = score
    return out


def correlations(scored: Sequence[Mapping[str, Any]], human: Mapping[tuple[str, int], float]) -> dict[str, Any]:
    """Per task, technique and setting: Spearman and Pearson between generation scores and human scores,
    with both means (the paper's Table 3 compares means)."""
    from scipy.stats import pearsonr, spearmanr

    out: dict[str, Any] = {}
    for task in factbench.TASKS:
        rows = [r for r in scored if r["task"] == task and (task, r["doc_id"]) in human]
        if not rows:
            continue
        entry: dict[str, Any] = {"n_human": len(rows)}
        for key in rows[0]["scores"]:
            pairs = [
                (r["scores"][key]["score"], human[(task, r["doc_id"])])
                for r in rows
                if r["scores"][key]["score"] is not None
            ]
            cell: dict[str, Any] = {"n": len(pairs)}
            if pairs:
                cell["mean_score"] = sum(p[0] for p in pairs) / len(pairs)
                cell["mean_human"] = sum(p[1] for p in pairs) / len(pairs)
            if len(pairs) >= 3 and len({p[0] for p in pairs}) > 1 and len({p[1] for p in pairs}) > 1:
                xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
                rho, rho_p = spearmanr(xs, ys)
                r, r_p = pearsonr(xs, ys)
                cell.update(spearman=float(rho), spearman_p=float(rho_p), pearson=float(r), pearson_p=float(r_p))
            else:
                cell["correlation"] = "undefined (fewer than 3 pairs or a constant series)"
            entry[key] = cell
        out[task] = entry
    return out


# ----------------------------------------------------------------------------- outputs


def build_report(
    result: CheckResult, human: Mapping[tuple[str, int], float] | None = None, run: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The report (tables, timings, cost estimate, correlations) and the per-generation scores."""
    scored = generation_scores(result.generations, result.facts, result.config)
    table = score_table(scored, result.config)
    k = result.config["passage_store"].get("k", 5)
    out = {
        "factcheck_version": FACTCHECK_VERSION,
        "run": dict(run or {}),
        "config": result.config,
        "table": table,
        "timing": result.timing,
        "calls": result.calls,
        "fact_origins": dict(Counter(f["origin"] for f in result.facts)),
        "paper_scale_estimate": paper_scale_calls(table, result.facts, k),
        "bootstrap": {
            "method": "percentile",
            "n_resamples": stats.N_RESAMPLES,
            "seed": stats.SEED,
            "confidence": stats.CONFIDENCE,
            "unit": "generation",
        },
    }
    if human:
        out["human_correlation"] = correlations(scored, human)
    return out, scored


def _pct(estimate: Mapping[str, Any]) -> str:
    return f"{100 * estimate['value']:.1f} [{100 * estimate['low']:.1f}, {100 * estimate['high']:.1f}]"


def to_markdown(report: Mapping[str, Any]) -> str:
    table, config = report["table"], report["config"]
    run = report.get("run") or {}
    lines = ["# FActBench fact-check", ""]
    if run:
        lines += [
            f"- generations: `{run.get('model_name') or run.get('model')}` {json.dumps(run.get('model_args'))}; "
            f"chat template: {run.get('chat_template_applied')}; limit: {run.get('limit')}",
            f"- run: `{run.get('results_file')}`",
        ]
    lines += [
        f"- decomposer: `{config['decomposer'].get('model')}` (temperature {config['decomposer'].get('temperature')}, "
        f"prompt {config['decomposer']['prompt_hash']}); CoT judge: `{config['cot'].get('model')}` "
        f"(temperature {config['cot'].get('temperature')}, prompt {config['cot']['prompt_hash']})",
        f"- NLI: {config['nli'].get('model') or 'unavailable: ' + config['nli']['unavailable']}",
        f"- passage store: {config['passage_store'].get('path') or 'unavailable: ' + config['passage_store']['unavailable']}"
        + (
            f" ({config['passage_store']['n_passages']} passages, k={config['passage_store']['k']})"
            if "n_passages" in config["passage_store"]
            else ""
        ),
        "- scores: % of supported atomic facts per generation, mean over scored generations, "
        f"95% percentile bootstrap CI ({report['bootstrap']['n_resamples']} resamples over generations)",
        "",
    ]
    tasks = list(table)
    header = (
        "| knowledge source | "
        + " | ".join(f"{table[t]['title']} {TECHNIQUE_TITLES[x]}" for t in tasks for x in TECHNIQUES)
        + " |"
    )
    lines += [header, "|---|" + "---:|" * (len(tasks) * len(TECHNIQUES))]
    for setting in SETTINGS:
        cells = []
        for task in tasks:
            for technique in TECHNIQUES:
                cell = table[task]["cells"][f"{technique}_{setting}"]
                cells.append(
                    "unavailable"
                    if cell["status"] == "unavailable"
                    else _pct(cell["estimate"])
                    if "estimate" in cell
                    else f"none scored ({cell['n_incomplete']} incomplete)"
                )
        lines.append(f"| {SETTING_TITLES[setting]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| task | generations (paper) | checked | no facts | no answer | decomposition failed | facts | "
        "facts / checked generation | incomplete: document (CoT / NLI / UnVot) | incomplete: + passages |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for entry in table.values():
        status, per = entry["status"], entry["facts_per_checked_generation"]
        incomplete = [
            " / ".join(str(entry["cells"][f"{t}_{s}"].get("n_incomplete", "-")) for t in TECHNIQUES) for s in SETTINGS
        ]
        lines.append(
            f"| {entry['title']} | {entry['generations']} ({entry['paper_items']}) | {status.get('checked', 0)} | "
            f"{status.get('no_facts', 0)} | {status.get('no_answer', 0)} | {status.get('decomposition_failed', 0)} | "
            f"{entry['facts']} | {'-' if per is None else f'{per:.2f}'} | {incomplete[0]} | {incomplete[1]} |"
        )
    lines += [
        "",
        "A generation is incomplete for a technique when a verdict of one of its facts is missing "
        "(a failed call or an unparsable reply): it is left out of that mean, never scored as unsupported.",
    ]
    origins = report["fact_origins"]
    lines += [
        "",
        f"Facts from the decomposer: {origins.get('decomposer', 0)}; sentences kept whole because the "
        f"decomposer reply had no fact list: {origins.get('sentence_fallback', 0)}.",
        "",
    ]
    if report["timing"]:
        lines += ["| stage | facts | seconds | facts / minute |", "|---|---:|---:|---:|"]
        for stage, t in report["timing"].items():
            rate = f"{t['facts_per_minute']:.1f}" if t.get("facts_per_minute") else "-"
            lines.append(f"| {stage} | {t['facts']} | {t['seconds']:.1f} | {rate} |")
        lines += ["", "Calls: " + "; ".join(f"{name} {json.dumps(c)}" for name, c in report["calls"].items()), ""]
    estimate = report["paper_scale_estimate"]
    lines += [
        f"Paper-scale cost at this run's rates ({estimate['models']} models x the paper's items): "
        + ", ".join(f"{name} {value:,}" for name, value in estimate["total"].items()),
        "",
    ]
    if "human_correlation" in report:
        lines += [
            "| task | technique | n | mean score | mean human | Spearman (p) | Pearson (p) |",
            "|---|---|---:|---:|---:|---|---|",
        ]
        for task, entry in report["human_correlation"].items():
            for key, cell in entry.items():
                if key == "n_human":
                    continue
                corr = (
                    f"{cell['spearman']:.3f} ({cell['spearman_p']:.3g}) | {cell['pearson']:.3f} ({cell['pearson_p']:.3g})"
                    if "spearman" in cell
                    else f"{cell.get('correlation', '-')} | -"
                )
                means = (
                    f"{100 * cell['mean_score']:.1f} | {cell['mean_human']:.1f}" if "mean_score" in cell else "- | -"
                )
                lines.append(f"| {factbench.TASK_TITLES[task]} | {key} | {cell['n']} | {means} | {corr} |")
        lines.append("")
    lines.append(
        "Not comparable with the paper unless every task has the paper's item count and the same judge, "
        "decomposer, NLI model and knowledge source."
    )
    return "\n".join(lines) + "\n"


def _jsonl(rows: Iterable[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def write_outputs(
    result: CheckResult,
    out_dir: str | Path,
    human: Mapping[tuple[str, int], float] | None = None,
    run: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[Path]]:
    """``facts.jsonl``, ``generations.jsonl``, ``check.json`` (inputs to :func:`rescore`) and
    ``factcheck.json`` / ``factcheck.md`` (the tables), written atomically."""
    from ..files import write_atomically

    report, scored = build_report(result, human, run)
    files = {
        "facts.jsonl": _jsonl(result.facts),
        "generations.jsonl": _jsonl(
            {**g, "scores": s["scores"]} for g, s in zip(result.generations, scored, strict=True)
        ),
        "check.json": (
            json.dumps(
                {"config": result.config, "timing": result.timing, "calls": result.calls, "run": dict(run or {})},
                indent=2,
                ensure_ascii=False,
            )
            + "\n"
        ).encode("utf-8"),
        "factcheck.json": (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
        "factcheck.md": to_markdown(report).encode("utf-8"),
    }
    return report, write_atomically(out_dir, files)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DataError(f"{path}: missing; rescore needs the folder factbench-check wrote")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_result(folder: str | Path) -> tuple[CheckResult, dict[str, Any]]:
    folder = Path(folder)
    check_file = folder / "check.json"
    if not check_file.is_file():
        raise DataError(f"{check_file}: missing; rescore needs the folder factbench-check wrote")
    check = json.loads(check_file.read_text(encoding="utf-8"))
    generations = [{k: v for k, v in g.items() if k != "scores"} for g in _read_jsonl(folder / "generations.jsonl")]
    return CheckResult(
        generations, _read_jsonl(folder / "facts.jsonl"), check["config"], check["timing"], check["calls"]
    ), check.get("run", {})


def rescore(
    folder: str | Path, human: Mapping[tuple[str, int], float] | None = None, out_dir: str | Path | None = None
) -> tuple[dict[str, Any], list[Path]]:
    """Rebuild every table from a previous check's saved verdicts: no model is called."""
    result, run = load_result(folder)
    return write_outputs(result, out_dir or folder, human, run)
