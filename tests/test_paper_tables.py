"""leaderboard.tex and methods.md: the numbers and marks read back from the .tex equal leaderboard.json's, hostile
labels are escaped (a LaTeX reader of our own reads them back), and the .tex compiles where pdflatex is installed."""

import json
import re
import shutil
import subprocess
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import formats
from lm_eval_tasks.utils import leaderboard as lb
from lm_eval_tasks.utils.paper_tables import latex, methods_facts, to_latex, to_methods

from tests.conftest import examples
from tests.hand_runs import STAMP, STRICT, A, B, medfact_run, write_run

RIGHT, WRONG = STRICT.format(2), "I cannot decide."
N = 20  # items per task
TASKS = ("medfact_bench_scifact", "medfact_bench_healthver")
HOSTILE = "top \\input{x}$&#^_~%<>|\"`'' -- ,, [b] * Müller 中文 \udcff e\u0301\u0351\u0308 \x00\u200b\n\t"


def big_run(folder, wrong, **results):
    """A MedFact-Bench run of N SUPPORT items per task, wrong on the first ``wrong`` of each."""
    rows = {task: [("SUPPORT", WRONG if i < wrong else RIGHT) for i in range(N)] for task in TASKS}
    write_run(folder, rows)
    path = folder / f"results_{STAMP}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update({"n-shot": {task: 0 for task in TASKS}, **results})
    data["config"].update(model_args={"pretrained": "m", "dtype": "bfloat16"}, random_seed=0, numpy_seed=1234)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """top: every item right; close: 1 wrong per task (2 discordant: p = 0.5); low: 15 wrong per task (30 discordant
    one way, the bootstrap's p); other: close's answers without a chat template (not comparable with top)."""
    root = tmp_path_factory.mktemp("paper")
    paths = [
        big_run(root / "top", 0, model_name=HOSTILE),
        big_run(root / "close", 1, model_name="close"),
        big_run(root / "low", 15, model_name="low"),
        big_run(root / "other", 1, model_name="other", chat_template_sha=None),
    ]
    board, disagreements = lb.build(paths)
    files = formats.render(board, disagreements)
    return json.loads(files["leaderboard.json"]), files["leaderboard.tex"].decode(), files["methods.md"].decode()


@pytest.fixture(scope="module")
def tie(tmp_path_factory):
    """Two runs with the same answers (B of test_leaderboard, every item right) and A: 3 items behind, p = 0.25."""
    root = tmp_path_factory.mktemp("tie")
    paths = [medfact_run(root / name, flags, model_name=name) for name, flags in (("a", A), ("b1", B), ("b2", B))]
    board = lb.build(paths)[0]
    return json.loads(json.dumps(board)), to_latex(board), to_methods(board)


# ----------------------------------------------------------------------------- reading the .tex back


def unlatex(text):
    """Our own reader of the LaTeX text ``latex`` writes: the text it typesets, NFD; any bare special raises."""
    out, i = _read(text, 0, closing=False)
    assert i == len(text)
    return out


_WORDS = {
    "textbackslash{}": "\\",
    "textasciicircum{}": "^",
    "textasciitilde{}": "~",
    "textless{}": "<",
    "textgreater{}": ">",
    "textbar{}": "|",
    "texttt{\\char34}": '"',
    "texttt{\\char96}": "`",
}
_MARKS = {"`": "\u0300", "'": "\u0301", "^": "\u0302", "~": "\u0303", "=": "\u0304", "u": "\u0306", ".": "\u0307"}
_MARKS |= {'"': "\u0308", "r": "\u030a", "H": "\u030b", "v": "\u030c", "c": "\u0327", "k": "\u0328"}


def _read(text, i, closing):
    out = []
    while i < len(text):
        rest = text[i:]
        if rest[0] == "\\":
            word = next((w for w in _WORDS if rest[1:].startswith(w)), None)
            code = re.match(r"\\texttt\{U\+([0-9A-F]{4,6})\}", rest)
            if word:
                out.append(_WORDS[word])
                i += 1 + len(word)
            elif code:
                out.append(chr(int(code.group(1), 16)))
                i += code.end()
            elif rest[1:2] in "{}$&#_%" and len(rest) > 1:
                out.append(rest[1])
                i += 2
            elif rest[1:2] in _MARKS and rest[2:3] == "{":
                inner, i = _read(text, i + 3, closing=True)
                out.append(inner + _MARKS[rest[1]])
            else:
                raise AssertionError(f"unknown command at {rest[:20]!r}")
        elif rest[:3] in ("{[}", "{]}", "{*}"):
            out.append(rest[1])
            i += 3
        elif rest[:2] == "{}":
            i += 2
        elif rest[0] == "}" and closing:
            return "".join(out), i + 1
        elif rest[0] in '{}$&#^_~%"`[]*' or not (rest[0].isascii() and rest[0].isprintable()):
            raise AssertionError(f"bare {rest[0]!r} at {rest[:20]!r}")
        else:
            out.append(rest[0])
            i += 1
    assert not closing, "unclosed group"
    return "".join(out), i


def as_typeset(text):
    """What a label should read as: whitespace runs as one space, control and format characters gone, NFD."""
    kept = "".join(c for c in re.sub(r"\s+", " ", text) if unicodedata.category(c) not in ("Cc", "Cf"))
    return unicodedata.normalize("NFD", re.sub(" +", " ", kept).strip())


NUMBER = r"(\d\.\d{3})"
ROW = re.compile(r"^(?P<label>.*) & (?P<cell>.*) & (?P<items>\d+) \\\\ % (?P<id>run-\d+)$")


def tables(tex):
    """Per section: its rows (run id -> label, headline cell, items) in order, and the note under its table."""
    out = {}
    for name, body in re.findall(r"^% section (\S+)\n(.*?)^\\end\{table\}", tex, re.MULTILINE | re.DOTALL):
        rows = {m["id"]: (m["label"], m["cell"], int(m["items"])) for m in map(ROW.match, body.splitlines()) if m}
        note = re.search(r"\\parbox\{\\linewidth\}\{\\footnotesize (.*)\}$", body, re.MULTILINE)[1]
        out[unlatex(name)] = (rows, note)
    return out


def headline(cell):
    """The number and its interval in a headline cell, bold or not, and the marks after it."""
    m = re.fullmatch(rf"(\\textbf\{{)?{NUMBER} \[{NUMBER}, {NUMBER}\]\}}?(?P<marks>.*)", cell)
    return bool(m[1]), tuple(map(float, m.group(2, 3, 4))), m["marks"]


def dagger(marks):
    return {"": None, "$^{\\dagger}$": "same", "$^{\\ddagger}$": "untested"}[marks.replace("\\textsuperscript{*}", "")]


# ----------------------------------------------------------------------------- the numbers, bold and marks


def test_numbers_in_the_tex_are_the_boards(big):
    board, tex, _ = big
    found = tables(tex)
    assert list(found) == list(board["benchmarks"]) == ["medfact_bench"]
    for name, bench in board["benchmarks"].items():
        rows, _ = found[name]
        assert list(rows) == bench["ranking"]  # ranked as the board ranks them
        for run_id, (_, cell, items) in rows.items():
            entry = bench["runs"][run_id]
            numbers = headline(cell)[1]
            expected = [entry["estimate"][key] for key in ("value", "low", "high")]
            assert numbers == pytest.approx(expected, abs=0.0005 + 1e-12)
            assert items == entry["n_items"] == 2 * N
            assert cell.endswith("\\textsuperscript{*}") is not entry["paper_comparable"]
    # hand-worked: macro accuracies 1, 19/20, 5/20 (other answers as close)
    rows = found["medfact_bench"][0]
    assert [headline(rows[i][1])[1][0] for i in ("run-1", "run-2", "run-4", "run-3")] == [1.0, 0.95, 0.95, 0.25]


def test_bold_is_the_best_and_the_marks_are_the_boards_significance(big):
    board, tex, _ = big
    bench = board["benchmarks"]["medfact_bench"]
    rows, note = tables(tex)["medfact_bench"]
    shown = {run_id: headline(cell) for run_id, (_, cell, _) in rows.items()}
    values = {run_id: entry["estimate"]["value"] for run_id, entry in bench["runs"].items()}
    best = {run_id for run_id, value in values.items() if value == max(values.values())}
    assert {run_id for run_id, (bold, _, _) in shown.items() if bold} == best == {"run-1"}
    assert all(rows[run_id][0].startswith("\\textbf{") is (run_id in best) for run_id in rows)
    pairs = {frozenset((c["a"], c["b"])): c for c in bench["comparisons"]}
    for run_id, (_, _, marks) in shown.items():
        if run_id in best:
            continue
        p = pairs[frozenset((run_id, "run-1"))]["holm_p_value"]
        assert dagger(marks) == ("untested" if p is None else "same" if p >= 0.05 else None)
    assert {run_id: dagger(marks) for run_id, (_, _, marks) in shown.items()} == {
        "run-1": None,
        "run-2": "same",  # close: exact McNemar on 0 vs 2 discordant, p = 0.5
        "run-3": None,  # low: 30 items behind
        "run-4": "untested",  # other: no chat template
    }
    assert pairs[frozenset(("run-1", "run-2"))]["p_value"] == pytest.approx(0.5)
    # the note names both tests behind the p-values, the Holm count and the item set
    for markup, plain in (("$p \\geq 0.05$", "p >= 0.05"), ("$^{\\dagger}$", "+"), ("$^{\\ddagger}$", "++")):
        note = note.replace(markup, plain)
    text = unlatex(note.replace("\\textsuperscript{*}", "{*}"))
    assert "exact McNemar test on per-item correctness (the paired bootstrap" in text
    assert "paired bootstrap of the accuracy_macro difference, stratified by component;" in text
    tested = sum(c["p_value"] is not None for c in bench["comparisons"])
    assert tested == 3 and f"Holm-adjusted over the {tested} tested pairs" in text
    assert "+: not significantly different from the best run (Holm-adjusted p >= 0.05)" in text
    assert "++: not tested against the best run" in text
    assert "*: not comparable with the published numbers" in text
    # 20 of the 20 items each run's results file logged, not the 340 and 1,823 published
    assert "Items: 40 items (medfact_bench_healthver 20 of 20, medfact_bench_scifact 20 of 20; not every" in text


def test_tied_best_runs_are_all_bold(tie):
    board, tex, methods = tie
    # results files without lm-eval's n-shot: no shots are claimed, the note says so
    assert "shot" not in methods.split("*Not recorded")[0]
    assert "few-shot examples" in methods.split("*Not recorded by every run: ")[1]
    rows, note = tables(tex)["medfact_bench"]
    assert board["benchmarks"]["medfact_bench"]["ranks"] == {"run-1": 3, "run-2": 1, "run-3": 1}
    shown = {run_id: headline(cell) for run_id, (_, cell, _) in rows.items()}
    assert {run_id for run_id, (bold, _, _) in shown.items() if bold} == {"run-2", "run-3"}
    # a: p = 0.25 against either best run (exact McNemar, 0 vs 3), Holm over 3 pairs: not significantly different
    assert dagger(shown["run-1"][2]) == "same"
    assert "Items: 7 items (medfact\\_bench\\_healthver 3 of 3, medfact\\_bench\\_scifact 4 of 4; not every" in note


def test_hostile_label_is_escaped_in_the_table(big):
    board, tex, _ = big
    label = tables(tex)["medfact_bench"][0]["run-1"][0]
    assert board["runs"][0]["label"] == HOSTILE.rsplit("/", 1)[-1]
    assert unlatex(re.fullmatch(r"\\textbf\{(.*)\}", label)[1]) == as_typeset(board["runs"][0]["label"])
    assert "\\input{" not in tex and "\\texttt{U+4E2D}" in tex and "\\\"{\\'{e}\\texttt{U+0351}}" in tex


@settings(max_examples=examples(300), deadline=None)
@given(st.text())
def test_any_text_reads_back_from_its_latex(text):
    assert unlatex(latex(text)) == as_typeset(text)


def test_ligatures_and_the_row_end_are_broken():
    # "--" a dash, "''" a quote, a cell starting "[" or "*" the optional argument or star of the row's \\
    assert latex("a--b''c,,d") == "a-{}-b'{}'c,{},d"
    assert latex("[x]*") == "{[}x{]}{*}"
    assert latex("Müller") == 'M\\"{u}ller'


# ----------------------------------------------------------------------------- methods.md


def paragraphs(methods):
    """methods.md's paragraphs: the note, the shared paragraph, then (heading, paragraph) per section."""
    blocks = methods.strip().split("\n\n")
    assert blocks[0] == "# Methods"
    return blocks[1], blocks[2], blocks[3:]


def test_methods_say_the_shared_settings_once_then_the_section(big):
    board, _, written = big
    methods = to_methods(board)  # as leaderboard.json gives the board to a reader
    assert methods.split("## ")[1:] == written.split("## ")[1:]
    note, shared, rest = paragraphs(methods)
    assert note.startswith("*Written by lm-eval-medical-tasks ") and "from leaderboard.json (schema " in note
    top = methods_facts(board)["models"][0]
    assert shared == (
        # a label holds a comma: the list is said with semicolons
        f"We evaluated 4 models ({top}; close; low; and other) on MedFact-Bench with EleutherAI's "
        f"lm-evaluation-harness 0.4.13 and {board['generated_by']}, through the Hugging Face transformers backend. "
        "Precision: weights in bfloat16, log-probabilities in the precision of the logits. "
        f"Prompts were zero-shot, with the model's chat template ({top}, close, low); without a chat template "
        "(other), with no system instruction; generation used the tasks' generation settings. "
        "Seeds: Python 0, NumPy 1234. Each headline is reported with its 95% confidence interval; two models are "
        "compared on the items both scored, with p-values Holm-adjusted over the tested pairs of each benchmark."
    )
    heading, section, unrecorded = rest
    assert heading == "## MedFact-Bench"
    assert section.startswith(
        "On MedFact-Bench, each model was scored on 40 items (not every published item), with no stop strings, "
        "at most 1024 generated tokens, greedy decoding, the paper's generation settings. The headline is "
        "macro-averaged accuracy (the unweighted mean over its components). Pairs were compared (3 tested pairs) "
        "with the exact McNemar test on per-item correctness (the paired bootstrap of the difference in "
        "macro-averaged accuracy: 2 discordant items"
    )
    assert "; the paired bootstrap of the difference in macro-averaged accuracy, stratified by component. " in section
    assert section.endswith("(lm-eval tasks and versions: medfact_bench_healthver 1.0, medfact_bench_scifact 1.0.)")
    assert unrecorded == (
        "*Not recorded by every run: PyTorch seed, PyTorch version, few-shot sampling seed, transformers version.*"
    )
    # the hostile label is Markdown-escaped; no control or format character survives
    assert "&lt;&gt;\\|" in methods and "<>" not in methods and "\x00" not in methods and "\u200b" not in methods


INTERNAL = re.compile(r"accuracy_|medfact_bench|pubmedqa_atlas|medexqa_logit|\\_| = |lm-eval model|n-shot|--\w")


def test_sentences_name_no_internal_identifier(big, tie):
    for board, _, _ in (big, tie):
        methods = to_methods(board)
        for label in methods_facts(board)["models"]:
            methods = methods.replace(label, "label")
        for paragraph in methods.split("\n\n"):
            sentences = paragraph.split("(lm-eval tasks and versions:")[0]
            assert not INTERNAL.search(sentences), sentences


def two_section_board():
    """Two runs over PubMedQA and MedExQA, as leaderboard.json gives them: the runs differ in dtype only; every
    other setting is shared, each section has its own item set, test and comparability."""

    def run(dtype, label, id_, shuffle_seed):
        return {
            "id": id_,
            "label": label,
            "run": {
                "model": "hf",
                "dtype": dtype,
                "softmax_dtype": None,
                "chat_template_applied": False,
                "system_instruction": None,
                "chat_template_system_message": None,
                "gen_kwargs": None,
                "limit": None,
                "lm_eval_version": "0.4.13",
                "transformers_version": "5.24.0",
                "torch_version": "2.13.0+cpu",
                "seeds": {"random_seed": 0, "numpy_seed": 1234, "torch_seed": 1234, "fewshot_seed": 1234},
                "n_shot": {"pubmedqa_atlas_n100": 0, "medexqa_logit_cp": 0},
                "task_versions": {"pubmedqa_atlas_n100": 1.0, "medexqa_logit_cp": 2.0},
                "n_samples": {
                    "pubmedqa_atlas_n100": {"original": 100, "effective": 100},
                    "medexqa_logit_cp": {"original": 106, "effective": 106},
                },
                "benchmark_settings": {
                    "medexqa_logit": [{"split": "test", "shuffle": shuffle_seed != -1, "shuffle_seed": shuffle_seed}],
                    "pubmedqa_atlas_n100": [],
                },
            },
        }

    def section(title, metric, test, n_items, comparable):
        entry = {"n_items": n_items, "full_coverage": comparable, "paper_comparable": comparable}
        return {
            "title": title,
            "headline_metric": metric,
            "compared_metric": metric,
            "test": test,
            "comparisons_unavailable": None,
            "ranking": ["run-1", "run-2"],
            "ranks": {"run-1": 1, "run-2": 1},
            "runs": {
                "run-1": {**entry, "paper_comparable_reason": None if comparable else "not every item was scored"},
                "run-2": {**entry, "paper_comparable_reason": None if comparable else "not every item was scored"},
            },
            "comparisons": [{"a": "run-1", "b": "run-2", "p_value": 0.5, "holm_p_value": 1.0, "test": test}],
        }

    return {
        "schema_version": "2.4",
        "generated_by": "lm-eval-medical-tasks 0.5.0",
        "runs": [run("float32", "smollm2", "run-1", -1), run("bfloat16", "smollm2-bf16", "run-2", 7)],
        "benchmarks": {
            "pubmedqa_atlas_n100": section(
                "PubMedQA", "accuracy_micro", "exact McNemar test on per-item correctness", 100, True
            ),
            "medexqa_logit": section(
                "MedExQA",
                "accuracy_macro",
                "paired bootstrap of the accuracy_macro difference, stratified by component",
                106,
                False,
            ),
        },
    }


def test_limits_and_lists_in_words():
    from lm_eval_tasks.utils.paper_tables import _limit_words, _names

    assert _limit_words(None) is None
    assert _limit_words(5.0) == _limit_words(5) == "only the first 5 items of each task"
    assert _limit_words(0.25) == "only the first 25% of the items of each task"
    assert _limit_words("x") == "lm-eval's --limit x"
    assert _names(["a", "b", "c"]) == "a, b and c" and _names(["a"]) == "a"
    assert _names(["A, one", "B", "C"]) == "A, one; B; and C"


def test_methods_of_two_sections_say_what_is_shared_once():
    methods = to_methods(two_section_board())
    note, shared, rest = paragraphs(methods)
    assert shared == (
        "We evaluated 2 models (smollm2 and smollm2-bf16) on PubMedQA and MedExQA with EleutherAI's "
        "lm-evaluation-harness 0.4.13 and lm-eval-medical-tasks 0.5.0, through the Hugging Face transformers "
        "backend (transformers 5.24.0, PyTorch 2.13.0+cpu). Precision: weights in float32, log-probabilities in "
        "the precision of the logits (smollm2); weights in bfloat16, log-probabilities in the precision of the "
        "logits (smollm2-bf16). Prompts were zero-shot, without a chat template, with no system instruction; "
        "generation used the tasks' generation settings. Seeds: Python 0, NumPy 1234, PyTorch 1234, few-shot "
        "sampling 1234. Each headline is reported with its 95% confidence interval; two models are compared on "
        "the items both scored, with p-values Holm-adjusted over the tested pairs of each benchmark."
    )
    assert rest == [
        "## PubMedQA",
        "On PubMedQA, each model was scored on 100 items. The headline is accuracy. Pairs were compared (1 tested "
        "pair) with the exact McNemar test on per-item correctness. The numbers are comparable with the published "
        "ones. (lm-eval tasks and versions: pubmedqa_atlas_n100 1.0.)",
        "## MedExQA",
        # each setting once, with the models that have it where they differ
        "On MedExQA, each model was scored on 106 items (not every published item), with the test split, answer "
        "options in their published order (smollm2); answer options shuffled (smollm2-bf16), shuffle seed 7 "
        "(smollm2-bf16). The headline is macro-averaged accuracy (the unweighted mean over its components). Pairs "
        "were compared (1 tested pair) with the paired bootstrap of the difference in macro-averaged accuracy, "
        "stratified by component. Against the published numbers: not every item was scored. (lm-eval tasks and "
        "versions: medexqa_logit_cp 2.0.)",
    ]
    for fact in ("lm-evaluation-harness", "zero-shot", "Seeds:", "Holm-adjusted", "transformers 5.24.0"):
        assert methods.count(fact) == 1, fact


# ----------------------------------------------------------------------------- compiling


def pdflatex_or_skip():
    engine = shutil.which("pdflatex")
    if engine is None:
        pytest.skip("no TeX engine: pdflatex not found (apt-get install texlive-latex-base texlive-latex-recommended)")
    return engine


def compile_tex(tex, folder):
    (folder / "leaderboard.tex").write_text(tex, encoding="utf-8")
    (folder / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n\\input{leaderboard.tex}\n"
        "\\end{document}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [pdflatex_or_skip(), "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "paper.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert (folder / "paper.pdf").read_bytes()[:5] == b"%PDF-"
    return done.stdout


def test_the_tex_compiles(big, tie, tmp_path):
    pdflatex_or_skip()
    log = compile_tex(big[1] + tie[1], tmp_path)
    assert "Undefined control sequence" not in log


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(min_size=1, max_size=40), min_size=3, max_size=3))
def test_the_tex_compiles_with_any_labels(tie, tmp_path_factory, labels):
    pdflatex_or_skip()
    board = json.loads(json.dumps(tie[0]))
    for run, label in zip(board["runs"], labels, strict=True):
        run["label"] = label
    compile_tex(to_latex(board), tmp_path_factory.mktemp("tex"))


def test_a_section_without_a_headline_has_no_bold_and_no_marks(tie, tmp_path):
    # As the board gives a section whose headline has no paired comparison (FActBench's): no estimate, no rank.
    board = json.loads(json.dumps(tie[0]))
    bench = board["benchmarks"]["medfact_bench"]
    reason = "no paired comparison for the headline metric 'none'"
    bench.update(test=None, comparisons=[], comparisons_unavailable=reason, ranks=dict.fromkeys(bench["ranks"]))
    for entry in bench["runs"].values():
        entry["estimate"] = None
    tex = to_latex(board)
    rows, note = tables(tex)["medfact_bench"]
    assert [cell for _, cell, _ in rows.values()] == ["n/a\\textsuperscript{*}"] * 3
    assert "\\textbf" not in tex and "dagger" not in tex and "Bold" not in note
    assert f"Runs not compared: {latex(reason)}." in note
    assert f"Models were not compared: {reason}." in to_methods(board)
    if shutil.which("pdflatex"):
        compile_tex(tex, tmp_path)
