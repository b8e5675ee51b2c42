"""Tables and methods for a paper, from the leaderboard: ``leaderboard.tex`` and ``methods.md``.

``leaderboard.tex`` is a booktabs table per section, to ``\\input`` in a document that loads ``booktabs``: the runs
ranked as the board ranks them, each headline with its 95% CI as every page prints it, the best runs (rank 1) in
bold, and beside each other run whether its pair with a best run is significant, as the board's pair records it
(Holm-adjusted p-value at :data:`.power.ALPHA`); a note under each table names the test and the item set.
``methods.md`` states, per section, the protocol, item set, precision, prompts, seeds and versions from the runs'
provenance. Both format the board's fields and decide no number.

Texts from runs (labels, model names, settings) are hostile: :func:`.latex.latex` makes any text plain LaTeX text.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .benchmarks import report_specs
from .latex import latex
from .power import ALPHA
from .stats import format_estimate
from .text import md

# The marks of the table notes: not significantly different from the best run, not tested against it, not
# comparable with the published numbers.
_DAGGER, _DDAGGER, _STAR = r"$^{\dagger}$", r"$^{\ddagger}$", r"\textsuperscript{*}"

# ----------------------------------------------------------------------------- what the board says of a section


def _tasks(board: Mapping[str, Any], name: str) -> dict[str, dict[str, Any]]:
    """Each run's provenance limited to the section's tasks (run id -> task -> n_samples entry)."""
    owns = next((spec.owns for spec in report_specs() if spec.name == name), lambda task: False)
    return {
        run["id"]: {task: n for task, n in sorted((run["run"].get("n_samples") or {}).items()) if owns(task)}
        for run in board["runs"]
    }


def _across(runs: Sequence[tuple[str, str]]) -> str:
    """One statement of a setting over runs (label, value): the value when every run has it, else each value with
    the runs that have it."""
    values: dict[str, list[str]] = {}
    for label, value in runs:
        values.setdefault(value, []).append(label)
    if len(values) == 1:
        return next(iter(values))
    return "; ".join(f"{value} ({', '.join(labels)})" for value, labels in values.items())


def _item_text(samples: Mapping[str, Any]) -> str:
    counts = [
        f"{task} {n.get('effective')} of {n.get('original')}" if isinstance(n, Mapping) else f"{task} {n}"
        for task, n in samples.items()
    ]
    return ", ".join(counts) if counts else "tasks not recorded"


def _item_set(board: Mapping[str, Any], name: str, bench: Mapping[str, Any], text: Callable[[Any], str]) -> str:
    labels = {run["id"]: run["label"] for run in board["runs"]}
    tasks = _tasks(board, name)
    return _across(
        [
            (
                text(labels[run_id]),
                text(
                    f"{entry['n_items']} items ({_item_text(tasks.get(run_id, {}))}"
                    f"{'' if entry['full_coverage'] else '; not every published item'})"
                ),
            )
            for run_id, entry in bench["runs"].items()
        ]
    )


def _best(bench: Mapping[str, Any]) -> list[str]:
    return [run_id for run_id in bench["ranking"] if bench["ranks"].get(run_id) == 1]


def _marks(bench: Mapping[str, Any]) -> dict[str, str | None]:
    """Per run: "best" (rank 1); "same" when its pair with a best run has a Holm-adjusted p-value of at least
    :data:`.power.ALPHA` (not significantly different); "untested" when a pair with a best run has no p-value (not
    comparable, or no paired comparison) and none is "same"; None for a run significantly below every best run."""
    best = _best(bench)
    pairs = {frozenset((c["a"], c["b"])): c for c in bench["comparisons"]}
    out: dict[str, str | None] = {}
    for run_id in bench["ranking"]:
        if run_id in best:
            out[run_id] = "best"
            continue
        p_values = [(pairs.get(frozenset((run_id, top))) or {}).get("holm_p_value") for top in best]
        if any(p is not None and p >= ALPHA for p in p_values):
            out[run_id] = "same"
        elif any(p is None for p in p_values):
            out[run_id] = "untested"
        else:
            out[run_id] = None
    return out


# ----------------------------------------------------------------------------- leaderboard.tex


def _table_label(name: str) -> str:
    return "tab:leaderboard-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "section")


def _tests(bench: Mapping[str, Any]) -> tuple[list[str], int]:
    """The tests behind the section's p-values (a pair whose bootstrap could not carry its p names the exact test
    that gave it), and how many pairs have one (Holm's adjustment is over those)."""
    tested = [c for c in bench["comparisons"] if c.get("p_value") is not None]
    return list(dict.fromkeys(c["test"] for c in tested if c.get("test"))), len(tested)


def _pairs(n: int) -> str:
    return f"{n} tested pair{'' if n == 1 else 's'}"


def _note(board: Mapping[str, Any], name: str, bench: Mapping[str, Any], shown: Mapping[str, str | None]) -> str:
    tests, n_tested = _tests(bench)
    parts = [f"Headline: {latex(bench['headline_metric'])} with its 95\\% CI."]
    if _best(bench):
        parts.append("Bold: the best run (rank 1; equal headlines share it).")
    if bench["comparisons_unavailable"]:
        parts.append(f"Runs not compared: {latex(bench['comparisons_unavailable'])}.")
    if n_tested:
        parts.append(
            f"Pairs of runs: {latex('; '.join(tests))}; p-values Holm-adjusted over the {_pairs(n_tested)}. "
            f"{_DAGGER}: not significantly different from the best run (Holm-adjusted $p \\geq {ALPHA}$)."
        )
    if "untested" in shown.values():
        parts.append(
            f"{_DDAGGER}: not tested against the best run"
            + ("." if bench["comparisons_unavailable"] else " (another protocol: leaderboard.md gives the reasons).")
        )
    if not all(entry["paper_comparable"] for entry in bench["runs"].values()):
        parts.append(f"{_STAR}: not comparable with the published numbers (each run's report gives the reason).")
    parts.append(f"Items: {_item_set(board, name, bench, latex)}.")
    return " ".join(parts)


def to_latex(board: Mapping[str, Any]) -> str:
    """leaderboard.tex: a booktabs table per section (see the module's docstring)."""
    labels = {run["id"]: run["label"] for run in board["runs"]}
    lines = [
        f"% {latex(board['generated_by'])}, from leaderboard.json (schema {latex(board['schema_version'])}).",
        "% One table per section; \\input this file in a document that loads booktabs (\\usepackage{booktabs}).",
    ]
    for name, bench in board["benchmarks"].items():
        shown = _marks(bench)
        lines += [
            "",
            f"% section {latex(name)}",
            r"\begin{table}[htbp]",
            r"\centering",
            f"\\caption{{{latex(bench['title'])}: {latex(bench['headline_metric'])} [95\\% CI].}}",
            f"\\label{{{_table_label(name)}}}",
            r"\begin{tabular}{p{0.5\linewidth}rr}",  # long labels wrap
            r"\toprule",
            f"Run & {latex(bench['headline_metric'])} {{[}}95\\% CI{{]}} & Items \\\\",
            r"\midrule",
        ]
        for run_id in bench["ranking"]:
            entry = bench["runs"][run_id]
            label, value = latex(labels[run_id]), format_estimate(entry["estimate"])
            if shown[run_id] == "best":
                label, value = f"\\textbf{{{label}}}", f"\\textbf{{{value}}}"
            mark = {"same": _DAGGER, "untested": _DDAGGER}.get(shown[run_id] or "", "")
            star = "" if entry["paper_comparable"] else _STAR
            lines.append(f"{label} & {value}{mark}{star} & {entry['n_items']} \\\\ % {run_id}")
        lines += [
            r"\bottomrule",
            r"\end{tabular}",
            "",
            r"\smallskip",
            f"\\parbox{{\\linewidth}}{{\\footnotesize {_note(board, name, bench, shown)}}}",
            r"\end{table}",
        ]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- methods.md
# methods.md is written to be pasted: what every run shares is said once, then each benchmark's own protocol and
# what differs between its runs; sentences name benchmarks and models, never lm-eval's task or metric identifiers
# (the task names and versions close each section, once, in a parenthesis, for whoever reruns it).


def _md(text: Any) -> str:
    """Text for methods.md: Markdown-escaped, control and format characters dropped (names are hostile)."""
    return md("".join(c if c.isspace() or unicodedata.category(c) not in ("Cc", "Cf") else "" for c in str(text)))


def _setting_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


# lm-eval's model types, as a methods section names them; another type is named as lm-eval spells it.
_BACKENDS = {
    "hf": "the Hugging Face transformers backend",
    "vllm": "the vLLM backend",
    "local-completions": "an OpenAI-compatible completions API",
    "openai-completions": "an OpenAI-compatible completions API",
    "local-chat-completions": "an OpenAI-compatible chat-completions API",
    "openai-chat-completions": "an OpenAI-compatible chat-completions API",
}
# The benchmark settings the sections record (their report specs' settings_of), in words.
_SETTING_WORDS: dict[str, Callable[[Any], str | None]] = {
    "split": lambda v: f"the {_setting_text(v)} split",
    "shuffle": lambda v: "answer options shuffled" if v else "answer options in their published order",
    "shuffle_seed": lambda v: None if v == -1 else f"shuffle seed {_setting_text(v)}",
    "release": lambda v: f"the {_setting_text(v)} release",
    "model_label": lambda v: f"the option order seeded by the model label {_setting_text(v)}",
    "model_label_derived": lambda v: (
        None if v is None else ("the label derived from the model's name" if v else "the label given by the user")
    ),
    "source": lambda v: f"items from {_setting_text(v)}",
    "stop_strings": lambda v: f"stop strings {_setting_text(v)}" if v else "no stop strings",
    "max_gen_toks": lambda v: f"at most {_setting_text(v)} generated tokens",
    "do_sample": lambda v: "sampling" if v else "greedy decoding",
    "paper_generation": lambda v: "the paper's generation settings" if v else "lm-eval's generation settings",
    "rotated": lambda v: "every question asked once per cyclic rotation of its options" if v else None,
}
_SEEDS = {"random_seed": "Python", "numpy_seed": "NumPy", "torch_seed": "PyTorch", "fewshot_seed": "few-shot sampling"}


def _setting_words(values: Any) -> str:
    if not isinstance(values, Mapping):
        return _setting_text(values)
    words = [
        _SETTING_WORDS[key](value) if key in _SETTING_WORDS else f"{key.replace('_', ' ')} {_setting_text(value)}"
        for key, value in values.items()
    ]
    return ", ".join(word for word in words if word)


def _metric_words(metric: str) -> str:
    """A report.json accuracy name (accuracy[_all]_macro|micro) in words."""
    found = re.fullmatch(r"accuracy_(all_)?(macro|micro)", metric)
    if found is None:
        return metric
    words = "macro-averaged accuracy" if found[2] == "macro" else "accuracy"
    return words + (" with unanswered items counted wrong" if found[1] else "")


def _test_words(test: str, metric: str) -> str:
    """A pair's test as the board names it, the metric in words."""
    return test.replace(f"the {metric} difference", f"the difference in {_metric_words(metric)}")


def _run_facts(run: Mapping[str, Any]) -> dict[str, str | None]:
    """What a run says of how it was made, fact by fact (None: not recorded, or nothing to say)."""
    backend = run.get("model")
    own_system = run.get("chat_template_system_message")
    softmax = run.get("softmax_dtype")
    return {
        "backend": _BACKENDS.get(backend, f"lm-eval's {_setting_text(backend)} backend") if backend else None,
        "precision": None
        if not run.get("dtype")
        else f"weights in {run['dtype']}, log-probabilities "
        + (f"in {softmax}" if softmax else "in the precision of the logits"),
        "template": "with the model's chat template" if run.get("chat_template_applied") else "without a chat template",
        "system": ("with a system instruction" if run.get("system_instruction") else "with no system instruction")
        + (
            f" (the chat template adds its own system message: {_setting_text(own_system.get('text'))})"
            if isinstance(own_system, Mapping)
            else ""
        ),
        "generation": "the tasks' generation settings"
        if run.get("gen_kwargs") in (None, {}, "")
        else f"the tasks' generation settings, overridden on the command line: {_setting_words(run['gen_kwargs'])}",
        "limit": _limit_words(run.get("limit")),
        "lm-eval version": run.get("lm_eval_version"),
        "transformers version": run.get("transformers_version"),
        "PyTorch version": run.get("torch_version"),
        **{
            f"{name} seed": None if (run.get("seeds") or {}).get(key) is None else str(run["seeds"][key])
            for key, name in _SEEDS.items()
        },
    }


def _limit_words(limit: Any) -> str | None:
    """lm-eval's --limit in words: a count of items, or below 1 a share of each task."""
    if limit is None or isinstance(limit, bool) or not isinstance(limit, int | float):
        return None if limit is None else f"lm-eval's --limit {_setting_text(limit)}"
    if limit < 1:
        return f"only the first {limit:.0%} of the items of each task"
    return f"only the first {int(limit) if float(limit).is_integer() else limit} items of each task"


def _section_facts(run: Mapping[str, Any], name: str, tasks: Mapping[str, Any]) -> dict[str, str | None]:
    """What a run says of one section: its benchmark settings (one fact per setting when the run has one value set)
    and shots."""
    settings = (run.get("benchmark_settings") or {}).get(name)
    if isinstance(settings, list) and len(settings) == 1 and isinstance(settings[0], Mapping):
        said = {f"setting {key}": _setting_words({key: value}) or None for key, value in settings[0].items()}
    elif isinstance(settings, list) and settings:
        said = {"setting values": "; ".join(_setting_words(values) for values in settings)}
    else:
        said = {}
    shots = [(run.get("n_shot") or {}).get(task) for task in tasks]
    return {
        **said,
        "few-shot examples": None
        if not shots or any(n is None for n in shots)
        else ("zero-shot" if all(n == 0 for n in shots) else ", ".join(f"{n}-shot" for n in shots)),
    }


def _said(facts: Sequence[tuple[str, Mapping[str, str | None]]], key: str) -> str | None:
    """A fact over runs (label, facts): once when every run says the same, else each value with its runs; None when
    no run recorded it."""
    said = [(label, f[key]) for label, f in facts if f.get(key) is not None]
    if not said:
        return None
    text = _across([(label, _md(value)) for label, value in said])
    if len(said) < len(facts) and len({value for _, value in said}) == 1:  # some runs only: name them
        text += f" ({', '.join(label for label, _ in said)})"
    return text


def _unrecorded(facts: Sequence[tuple[str, Mapping[str, str | None]]], keys: Sequence[str]) -> list[str]:
    return [key for key in keys if any(f[key] is None for _, f in facts)]


def _names(items: Sequence[str]) -> str:
    """A list in a sentence; with semicolons when a name holds a comma ("MedExQA, log-likelihood protocol")."""
    if len(items) == 1:
        return items[0]
    comma = any("," in item for item in items)
    return f"{('; ' if comma else ', ').join(items[:-1])}{';' if comma else ''} and {items[-1]}"


def methods_facts(board: Mapping[str, Any]) -> dict[str, Any]:
    """What methods.md says, computed once from the board: the shared facts (one value, or each value with the runs
    that have it), then per section its own; :func:`to_methods` only puts them into sentences."""
    runs = {run["id"]: run for run in board["runs"]}
    labelled = [(_md(run["label"]), _run_facts(run["run"])) for run in board["runs"]]
    shared = {key: _said(labelled, key) for key in labelled[0][1]} if labelled else {}
    sections, shots = [], []
    for name, bench in board["benchmarks"].items():
        tasks = _tasks(board, name)
        facts = [
            (_md(runs[run_id]["label"]), _section_facts(runs[run_id]["run"], name, tasks.get(run_id, {})))
            for run_id in bench["ranking"]
        ]
        shots.append(_said(facts, "few-shot examples"))
        versions = {
            task: version
            for run_id in bench["ranking"]
            for task, version in sorted((runs[run_id]["run"].get("task_versions") or {}).items())
            if task in tasks.get(run_id, {})
        }
        tests, n_tested = _tests(bench)
        sections.append(
            {
                "title": _md(bench["title"]),
                "models": [_md(runs[run_id]["label"]) for run_id in bench["ranking"]],
                "items": _across(
                    [
                        (
                            _md(runs[run_id]["label"]),
                            f"{entry['n_items']} items"
                            + ("" if entry["full_coverage"] else " (not every published item)"),
                        )
                        for run_id, entry in bench["runs"].items()
                    ]
                ),
                "headline": None
                if bench["headline_metric"] == "none"
                else _md(_metric_words(bench["headline_metric"])),
                "tests": [_md(_test_words(test, bench["compared_metric"] or "")) for test in tests],
                "n_tested": n_tested,
                "not_compared": _md(bench["comparisons_unavailable"]) if bench["comparisons_unavailable"] else None,
                "settings": ", ".join(
                    said
                    for key in dict.fromkeys(key for _, f in facts for key in f if key.startswith("setting "))
                    if (said := _said(facts, key))
                )
                or None,
                "shots": _said(facts, "few-shot examples"),
                "comparable": _across(
                    [
                        (
                            _md(runs[run_id]["label"]),
                            "yes" if entry["paper_comparable"] else _md(entry["paper_comparable_reason"]),
                        )
                        for run_id, entry in bench["runs"].items()
                    ]
                ),
                "reference": ", ".join(
                    f"{_md(task)} {_md(versions.get(task, 'version not recorded'))}"
                    for task in sorted({task for run_tasks in tasks.values() for task in run_tasks})
                ),
                "unrecorded": _unrecorded(facts, ["few-shot examples"]),  # a benchmark may have no settings
            }
        )
    # the shots are said once when every section's runs agree on them
    one_shots = shots[0] if shots and all(value == shots[0] for value in shots) else None
    return {
        "generated_by": _md(board["generated_by"]),
        "schema_version": _md(board["schema_version"]),
        "models": [label for label, _ in labelled],
        "benchmarks": [section["title"] for section in sections],
        "shared": {**shared, "shots": one_shots},
        "sections": sections,
        "unrecorded": _unrecorded(labelled, list(shared)),
    }


def _shared_paragraph(facts: Mapping[str, Any]) -> str:
    said = facts["shared"]
    models = facts["models"]
    versions = ", ".join(
        f"{name} {said[f'{name} version']}" for name in ("transformers", "PyTorch") if said.get(f"{name} version")
    )
    sentences = [
        f"We evaluated {len(models)} model{'' if len(models) == 1 else 's'} ({_names(models)}) on "
        f"{_names(facts['benchmarks'])} with EleutherAI's lm-evaluation-harness"
        + (f" {said['lm-eval version']}" if said.get("lm-eval version") else "")
        + f" and {facts['generated_by']}"
        + (f", through {said['backend']}" if said.get("backend") else "")
        + (f" ({versions})" if versions else "")
        + "."
    ]
    if said.get("limit"):
        sentences.append(f"Runs scored {said['limit']}.")
    if said.get("precision"):
        sentences.append(f"Precision: {said['precision']}.")
    prompts = ", ".join(value for value in (said.get("shots"), said["template"], said["system"]) if value)
    sentences.append(f"Prompts were {prompts}; generation used {said['generation']}.")
    seeds = [(name, said[f"{name} seed"]) for name in _SEEDS.values() if said.get(f"{name} seed")]
    if seeds:
        sentences.append("Seeds: " + ", ".join(f"{name} {value}" for name, value in seeds) + ".")
    sentences.append(
        "Each headline is reported with its 95% confidence interval; two models are compared on the items both "
        "scored, with p-values Holm-adjusted over the tested pairs of each benchmark."
    )
    return " ".join(sentences)


def _section_paragraph(section: Mapping[str, Any], shots_said: bool) -> str:
    models = section["models"]
    sentences = [
        f"On {section['title']}, each model was scored on {section['items']}"
        + (f", with {section['settings']}" if section["settings"] else "")
        + (f", {section['shots']}" if section["shots"] and not shots_said else "")
        + "."
    ]
    if section["headline"]:
        macro = " (the unweighted mean over its components)" if section["headline"].startswith("macro") else ""
        sentences.append(f"The headline is {section['headline']}{macro}.")
    if section["n_tested"]:
        sentences.append(
            f"Pairs were compared ({_pairs(section['n_tested'])}) with the {'; the '.join(section['tests'])}."
        )
    elif section["not_compared"]:
        sentences.append(f"Models were not compared: {section['not_compared']}.")
    elif len(models) > 1:
        sentences.append("No pair of models was tested (none is comparable: leaderboard.md gives the reasons).")
    sentences.append(
        "The numbers are comparable with the published ones."
        if section["comparable"] == "yes"
        else f"Against the published numbers: {section['comparable']}."
    )
    return " ".join(sentences) + f" (lm-eval tasks and versions: {section['reference']}.)"


def to_methods(board: Mapping[str, Any]) -> str:
    """methods.md: a paragraph of what every run shares, then one per benchmark (:func:`methods_facts`)."""
    facts = methods_facts(board)
    lines = [
        "# Methods",
        "",
        f"*Written by {facts['generated_by']} from leaderboard.json (schema {facts['schema_version']}). Where "
        "models differ, each value names its models.*",
        "",
        _shared_paragraph(facts),
    ]
    for section in facts["sections"]:
        lines += ["", f"## {section['title']}", "", _section_paragraph(section, bool(facts["shared"]["shots"]))]
    unrecorded = sorted(
        {*facts["unrecorded"], *(key for section in facts["sections"] for key in section["unrecorded"])}
        - {"limit"}  # no limit is said by saying nothing
    )
    if unrecorded:
        lines += ["", f"*Not recorded by every run: {', '.join(unrecorded)}.*"]
    return "\n".join(lines) + "\n"
