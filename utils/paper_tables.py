"""Tables and methods for a paper, from the leaderboard: ``leaderboard.tex`` and ``methods.md``.

``leaderboard.tex`` is a booktabs table per section, to ``\\input`` in a document that loads ``booktabs``: the runs
ranked as the board ranks them, each headline with its 95% CI as every page prints it, the best runs (rank 1) in
bold, and beside each other run whether its pair with a best run is significant, as the board's pair records it
(Holm-adjusted p-value at :data:`.power.ALPHA`); a note under each table names the test and the item set.
``methods.md`` states, per section, the protocol, item set, precision, prompts, seeds and versions from the runs'
provenance. Both format the board's fields and decide no number.

Texts from runs (labels, model names, settings) are hostile: :func:`latex` makes any text plain LaTeX text.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .benchmarks import report_specs
from .power import ALPHA
from .stats import format_estimate
from .text import md

# Characters LaTeX reads as markup, and those its default (OT1) fonts print as other characters (< as an inverted
# exclamation mark); [ and * would be read as the optional argument or star of the \\ that ends the row before.
_LATEX = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "^": r"\textasciicircum{}",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "%": r"\%",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': r"\texttt{\char34}",  # OT1 has straight quotes in its typewriter font only
    "`": r"\texttt{\char96}",
    "[": "{[}",
    "]": "{]}",
    "*": "{*}",
}
# Combining accents pdflatex can set on an ASCII letter (é is e and U+0301 decomposed).
_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0327": "c",
    "\u0328": "k",
}
_LIGATURE = re.compile(r"([-',])(?=\1)")
_DAGGER, _DDAGGER, _STAR = r"$^{\dagger}$", r"$^{\ddagger}$", r"\textsuperscript{*}"


def latex(text: Any) -> str:
    """``text`` as LaTeX text that typesets as itself with pdflatex's default fonts: one line (whitespace as one
    space), control and format characters dropped, specials escaped, accents on ASCII letters as accent commands,
    any other character as its code point (``\\texttt{U+4E2D}``: pdflatex stops at a character its fonts lack)."""
    kept = "".join(
        " " if c.isspace() else c for c in str(text) if c.isspace() or unicodedata.category(c) not in ("Cc", "Cf")
    )
    out = []
    for cluster in _clusters(" ".join(kept.split())):
        base = cluster[0]
        if not base.isascii():
            out.append("".join(_code_point(c) for c in cluster))
            continue
        letter = _LATEX.get(base, base)
        for mark in cluster[1:]:  # in order, so that the text reads back mark by mark
            letter = (
                f"\\{_ACCENTS[mark]}{{{letter}}}" if base.isalpha() and mark in _ACCENTS else letter + _code_point(mark)
            )
        out.append(letter)
    # "--" would print as a dash, "''" and ",," as quotes: an empty group between them keeps the characters.
    return _LIGATURE.sub(r"\1{}", "".join(out))


def _code_point(char: str) -> str:
    return f"\\texttt{{U+{ord(char):04X}}}"


def _clusters(text: str) -> list[str]:
    """Each character with the combining marks after it, decomposed (NFD)."""
    clusters: list[str] = []
    for char in unicodedata.normalize("NFD", text):
        if clusters and unicodedata.combining(char):
            clusters[-1] += char
        else:
            clusters.append(char)
    return clusters


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


def _md(text: Any) -> str:
    """Text for methods.md: Markdown-escaped, control and format characters dropped (names are hostile)."""
    return md("".join(c if c.isspace() or unicodedata.category(c) not in ("Cc", "Cf") else "" for c in str(text)))


def _setting_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _settings(settings: Any) -> str:
    """A section's benchmark settings as the run recorded them (one dict per distinct value set)."""
    if not isinstance(settings, list) or not settings:
        return "none recorded"
    return " / ".join(
        ", ".join(f"{key} = {_setting_text(value)}" for key, value in values.items())
        if isinstance(values, Mapping)
        else _setting_text(values)
        for values in settings
    )


def _shots(shots: Mapping[str, Any]) -> str:
    if shots and all(n == 0 for n in shots.values()):
        return "zero-shot"
    if all(n is None for n in shots.values()):
        return "n-shot not recorded"
    return "n-shot " + ", ".join(f"{task} {'not recorded' if n is None else n}" for task, n in shots.items())


def _seeds(seeds: Any) -> str:
    names = {"random_seed": "Python", "numpy_seed": "NumPy", "torch_seed": "PyTorch", "fewshot_seed": "few-shot"}
    if not isinstance(seeds, Mapping):
        return "not recorded"
    return ", ".join(f"{names.get(key, key)} {'not recorded' if v is None else v}" for key, v in seeds.items())


def _system(run: Mapping[str, Any]) -> str:
    given = "a system instruction (--system_instruction)" if run.get("system_instruction") else "no system instruction"
    own = run.get("chat_template_system_message")
    if isinstance(own, Mapping):
        given += f"; the chat template adds its own system message ({own.get('text')})"
    return given


def _methods_facts(run: Mapping[str, Any], name: str, tasks: Mapping[str, Any]) -> dict[str, str]:
    """What methods.md says of one run in section ``name`` (its tasks: ``tasks``), fact by fact."""
    versions = run.get("task_versions") or {}
    return {
        "backend": f"lm-eval model {_setting_text(run.get('model'))}",
        "settings": _settings((run.get("benchmark_settings") or {}).get(name)),
        "generation": "lm-eval's task defaults"
        if run.get("gen_kwargs") in (None, {}, "")
        else f"--gen_kwargs {_setting_text(run.get('gen_kwargs'))}",
        "limit": "none" if run.get("limit") is None else _setting_text(run.get("limit")),
        "dtype": f"model dtype {run.get('dtype') or 'unknown'}, "
        + (
            f"log-softmax in {run['softmax_dtype']}"
            if run.get("softmax_dtype")
            else "log-softmax in the logits' dtype (no softmax_dtype set)"
        ),
        "template": "chat template applied" if run.get("chat_template_applied") else "no chat template",
        "system": _system(run),
        "shots": _shots({task: (run.get("n_shot") or {}).get(task) for task in tasks}),
        "seeds": _seeds(run.get("seeds")),
        "versions": f"lm-eval {run.get('lm_eval_version') or 'not recorded'}, transformers "
        f"{run.get('transformers_version') or 'not recorded'}, PyTorch {run.get('torch_version') or 'not recorded'}; "
        "task versions "
        + (", ".join(f"{task} {versions.get(task, 'not recorded')}" for task in tasks) or "not recorded"),
    }


def to_methods(board: Mapping[str, Any]) -> str:
    """methods.md: per section, a paragraph stating how the runs were made, from the provenance the board holds."""
    runs = {run["id"]: run for run in board["runs"]}
    lines = [
        "# Methods",
        "",
        f"From leaderboard.json (schema {_md(board['schema_version'])}), written by {_md(board['generated_by'])}. "
        "Where runs differ, each value names its runs.",
    ]
    for name, bench in board["benchmarks"].items():
        tasks = _tasks(board, name)
        facts = [
            (_md(runs[run_id]["label"]), _methods_facts(runs[run_id]["run"], name, tasks.get(run_id, {})))
            for run_id in bench["ranking"]
        ]
        said = {key: _across([(label, _md(f[key])) for label, f in facts]) for key in facts[0][1]}
        comparable = _across(
            [
                (
                    _md(runs[run_id]["label"]),
                    "yes" if entry["paper_comparable"] else _md(entry["paper_comparable_reason"]),
                )
                for run_id, entry in bench["runs"].items()
            ]
        )
        tests, n_tested = _tests(bench)
        if n_tested:
            test = (
                f"Pairs of runs were compared on {_md(bench['compared_metric'])} with the {_md('; '.join(tests))}, "
                f"p-values Holm-adjusted over the {_pairs(n_tested)}. "
            )
        elif bench["comparisons_unavailable"]:
            test = f"Runs were not compared: {_md(bench['comparisons_unavailable'])}. "
        elif len(facts) > 1:
            test = "No pair of runs was tested (none is comparable: leaderboard.md gives the reasons). "
        else:
            test = ""
        evaluated = f"{len(facts)} run{'' if len(facts) == 1 else 's'} ({', '.join(label for label, _ in facts)})"
        lines += [
            "",
            f"## {_md(bench['title'])} (`{name}`)",
            "",
            f"We evaluated {evaluated} on {_md(bench['title'])} with lm-evaluation-harness ({said['backend']}) and "
            f"{_md(board['generated_by'])}. "
            f"Item set: {_item_set(board, name, bench, _md)}; lm-eval --limit: {said['limit']}. "
            f"Protocol: headline {_md(bench['headline_metric'])} with its 95% CI; benchmark settings: "
            f"{said['settings']}; generation settings: {said['generation']}. "
            f"Precision: {said['dtype']}. Prompts: {said['template']}; {said['system']}; {said['shots']}. "
            f"Seeds: {said['seeds']}. Versions: {said['versions']}. {test}"
            f"Comparable with the published numbers: {comparable}.",
        ]
    return "\n".join(lines) + "\n"
