"""The fact-checker: sentences, atomic facts, CoT and NLI checks, the extrinsic re-check (README, "Protocol").

Per generation:

1. **Sentences.** The text (think blocks removed) is split into lines, then sentences by NLTK's
   Punkt algorithm with fixed parameters (a list of scientific abbreviations; no downloaded model,
   so the split is identical everywhere). Lines or sentences without a letter or digit are dropped.
2. **Atomic facts.** Each distinct sentence goes to the LLM decomposer once
   (:mod:`.factcheck_prompts`); a reply without a fact list makes the sentence itself the fact
   (``sentence_fallback``). A generation with no facts is "no facts", never padded with a dummy
   fact; a failed decomposer call leaves the generation unscored.
3. **Intrinsic checks** against the grounding document: the CoT judge and NLI (:mod:`.nli`).
4. **Extrinsic re-check** (with a passage store): a fact a technique finds unsupported by the
   document is re-checked by the same technique against the top-k passages BM25 retrieves for it
   (:mod:`.passage_store`); the re-check's verdict replaces the intrinsic one.

Unanimous voting and the scores are :mod:`.scores`; the outputs :mod:`.tables`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..data import DataError
from ..openai_client import ChatClient, ChatEndpoint, ChatResult, Price, usage_summary
from ..samples import logged_reply
from ..text import strip_think
from .constants import task_component
from .factcheck_prompts import (
    DECOMPOSER_PROMPT_HASH,
    HAS_CONTENT,
    JUDGE_PROMPT_HASH,
    decomposer_messages,
    judge_messages,
    parse_facts,
    parse_verdict,
)
from .records import CheckedGeneration, CheckResult, CotVerdict, Fact, Generation, NliVerdict

logger = logging.getLogger(__name__)

FACTCHECK_VERSION = "1.0"

# ----------------------------------------------------------------------------- 1. sentences

ABBREVIATIONS = frozenset(
    """e.g i.e al etc vs approx ca cf fig figs eq eqs ref refs vol no nos sec dr mr mrs ms prof
st jr sr inc ltd co min max mg ml kg hr hrs yr yrs wk wks mo mos resp incl u.s u.k e.u spp sp var""".split()
)
_SPLITTER = None


def _punkt():
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS)
    return PunktSentenceTokenizer(params)


def split_sentences(text: str) -> list[str]:
    """Sentences of a generation: per line, by Punkt with fixed abbreviations; empty ones dropped."""
    global _SPLITTER
    if _SPLITTER is None:
        _SPLITTER = _punkt()
    sentences = []
    for line in text.splitlines():
        for sentence in _SPLITTER.tokenize(line.strip()):
            if HAS_CONTENT.search(sentence):
                sentences.append(sentence.strip())
    return sentences


# ----------------------------------------------------------------------------- the run's generations


def generations_from_run(
    path: str, tasks: Iterable[str] | None = None, limit: int | None = None
) -> tuple[list[Generation], dict[str, Any]]:
    """FActBench generations of an lm-eval ``--log_samples`` run, and a description of the run."""
    from ..runs import load_run, run_info

    run = load_run(path)
    wanted = {task_component(t) or t for t in tasks} if tasks else None
    generations = []
    for task_name in sorted(run.samples):
        component = task_component(task_name)
        if component is None or (wanted and component not in wanted):
            continue
        samples = sorted(run.samples[task_name], key=lambda s: int(s["doc_id"]))[:limit]
        for number, sample in enumerate(samples, start=1):
            try:
                doc = sample["doc"]
                generations.append(
                    Generation(
                        component,
                        int(sample["doc_id"]),
                        sample.get("doc_hash", ""),
                        logged_reply(sample),
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
    info["task_versions"] = {t: v for t, v in info["task_versions"].items() if task_component(t)}
    return generations, info


# ----------------------------------------------------------------------------- the checker


def _complete_unique(client: Any, conversations: Sequence[list[dict[str, str]]]) -> list[ChatResult]:
    """Answers in order, asking each distinct conversation once (concurrent duplicates would all be sent)."""
    unique = {json.dumps(messages, ensure_ascii=False): messages for messages in conversations}
    answers = dict(zip(unique, client.complete_many(list(unique.values())), strict=True))
    return [answers[json.dumps(messages, ensure_ascii=False)] for messages in conversations]


def _passages_context(passages: Sequence[Any]) -> str:
    return "\n\n".join(f"Title: {p.title}\nText: {p.text}" for p in passages)


class FactChecker:
    """Runs the whole pipeline. ``decomposer`` and ``judge`` are :class:`~..openai_client.ChatClient`s
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
        prices: Mapping[str, Price] | None = None,
        prices_source: str = "--prices",
    ):
        self.decomposer, self.judge, self.nli, self.store, self.k = decomposer, judge, nli, store, k
        self.prices, self.prices_source = prices, prices_source  # the LLM calls' cost (--prices)
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

    def _decompose(self, generations: Sequence[Generation]) -> tuple[list[CheckedGeneration], list[Fact], list[int]]:
        """The generations' records, their facts, and for each fact the index of its generation."""
        records, requests = [], {}
        for generation in generations:
            text = strip_think(generation.text)
            sentences = split_sentences(text) if text is not None else []
            records.append(
                CheckedGeneration(
                    generation.task,
                    generation.doc_id,
                    generation.doc_hash,
                    generation.item_id,
                    answered=text is not None,
                    sentences=sentences,
                )
            )
            for sentence in sentences:
                requests.setdefault(sentence, None)
        answers = dict(
            zip(requests, _complete_unique(self.decomposer, [decomposer_messages(s) for s in requests]), strict=True)
        )
        facts, owners = [], []
        for index, (generation, record) in enumerate(zip(generations, records, strict=True)):
            errors: list[str] = []
            own: list[Fact] = []
            for s_index, sentence in enumerate(record.sentences):
                answer: ChatResult = answers[sentence]
                if not answer.ok:
                    record.decomposer_outcomes.append("failed")
                    errors.append(answer.error)
                    continue
                parsed, outcome = parse_facts(answer.text)
                origin = "decomposer"
                if outcome == "unparsed":
                    parsed, origin = [sentence], "sentence_fallback"
                record.decomposer_outcomes.append(outcome)
                own += [
                    Fact(generation.task, generation.doc_id, s_index, len(own) + i, sentence, fact, origin)
                    for i, fact in enumerate(parsed)
                ]
            record.n_facts = len(own)
            if errors:
                record.errors = errors
            record.status = (
                "no_answer"
                if not record.answered
                else "decomposition_failed"
                if errors
                else "checked"
                if own
                else "no_facts"
            )
            if record.status != "decomposition_failed":  # nothing of a failed decomposition is judged
                facts += own
                owners += [index] * len(own)
        return records, facts, owners

    def _judge(self, facts: Sequence[Fact], contexts: Sequence[str], setting: str) -> None:
        results = _complete_unique(
            self.judge, [judge_messages(c, f.fact) for f, c in zip(facts, contexts, strict=True)]
        )
        for fact, result in zip(facts, results, strict=True):
            verdict = parse_verdict(result.text) if result.ok else None
            error = result.error if not result.ok else None if verdict is not None else "unparsed verdict"
            fact.cot[setting] = CotVerdict(verdict, result.text, error, result.cached)

    def _nli(self, facts: Sequence[Fact], premises: Sequence[Sequence[str]], setting: str) -> None:
        pairs = [(premise, fact.fact) for fact, options in zip(facts, premises, strict=True) for premise in options]
        results = iter(self.nli.check(pairs))
        for fact, options in zip(facts, premises, strict=True):
            checked = [next(results) for _ in options]
            if not checked:  # no passage was retrieved: nothing supports the fact
                fact.nli[setting] = NliVerdict.no_passages()
                continue
            best = max(range(len(checked)), key=lambda i: (checked[i].probabilities.get("entailment", 0.0), -i))
            kept = checked[best]
            fact.nli[setting] = NliVerdict(
                kept.supported,
                kept.label,
                kept.probabilities,
                kept.window,
                kept.n_windows,
                passage=best if setting == "extrinsic" else None,
                cached=all(r.cached for r in checked),
            )

    def _recheck(self, facts: Sequence[Fact], timing: dict[str, Any]) -> None:
        """The extrinsic step: each technique re-checks the facts it found unsupported, against retrieved passages."""
        needs = {t: [f for f in facts if f.verdict(t, "intrinsic") is False] for t in ("cot", "nli")}
        start = time.perf_counter()
        queries = dict.fromkeys(f.fact for f in needs["cot"] + needs["nli"])
        passages = {query: self.store.search(query, self.k) for query in queries}
        timing["retrieval"] = {"seconds": time.perf_counter() - start, "facts": len(passages)}
        for fact in needs["cot"] + needs["nli"]:
            fact.passages = [p.id for p in passages[fact.fact]]
        if self.judge is not None:
            self.progress(f"CoT judge, extrinsic: {len(needs['cot'])} facts")
            start = time.perf_counter()
            for fact in needs["cot"]:
                if not passages[fact.fact]:  # no call: nothing was retrieved to support it
                    fact.cot["extrinsic"] = CotVerdict(False, None, None, False, passages=0)
            with_passages = [f for f in needs["cot"] if passages[f.fact]]
            self._judge(with_passages, [_passages_context(passages[f.fact]) for f in with_passages], "extrinsic")
            timing["cot_extrinsic"] = {"seconds": time.perf_counter() - start, "facts": len(needs["cot"])}
        if self.nli is not None:
            self.progress(f"NLI, extrinsic: {len(needs['nli'])} facts")
            start = time.perf_counter()
            self._nli(needs["nli"], [[p.text for p in passages[f.fact]] for f in needs["nli"]], "extrinsic")
            timing["nli_extrinsic"] = {"seconds": time.perf_counter() - start, "facts": len(needs["nli"])}

    def check(self, generations: Sequence[Generation]) -> CheckResult:
        timing: dict[str, Any] = {}
        start = time.perf_counter()
        self.progress(f"decomposing {len(generations)} generations")
        records, facts, owners = self._decompose(generations)
        timing["decomposition"] = {
            "seconds": time.perf_counter() - start,
            "sentences": sum(len(r.sentences) for r in records),
            "facts": len(facts),
        }
        documents = [generations[owner].document for owner in owners]
        if self.judge is not None:
            self.progress(f"CoT judge, intrinsic: {len(facts)} facts")
            start = time.perf_counter()
            self._judge(facts, documents, "intrinsic")
            timing["cot_intrinsic"] = {"seconds": time.perf_counter() - start, "facts": len(facts)}
        if self.nli is not None:
            self.progress(f"NLI, intrinsic: {len(facts)} facts")
            start = time.perf_counter()
            self._nli(facts, [[document] for document in documents], "intrinsic")
            timing["nli_intrinsic"] = {"seconds": time.perf_counter() - start, "facts": len(facts)}
        if self.store is not None:
            self._recheck(facts, timing)
        for stage in timing.values():
            stage["facts_per_minute"] = stage["facts"] / stage["seconds"] * 60 if stage["seconds"] > 0 else None
        return CheckResult(records, facts, self.config(), timing, self._calls())

    def _calls(self) -> dict[str, Any]:
        clients = {"decomposer": self.decomposer, "cot": self.judge}
        if self.decomposer is self.judge:  # one client, one set of counters
            clients = {"decomposer_and_cot": self.judge}
        calls = {
            name: {
                "calls": client.calls,
                "cache_hits": client.cache_hits,
                "failures": client.failures,
                **(
                    {"usage": usage_summary(client, self.prices, self.prices_source)}
                    if isinstance(client, ChatClient)
                    else {}
                ),
            }
            for name, client in clients.items()
            if client is not None
        }
        if self.nli is not None:
            calls["nli"] = {"pairs_computed": self.nli.computed, "cache_hits": self.nli.cache_hits}
        return calls
