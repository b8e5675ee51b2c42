"""The NLI leg: premise/hypothesis direction, long-document windows, label order from the config, caching.

No NLI checkpoint installs offline, so the checks use the real MiniLM tokenizer with (1) a stub model
whose logits are a readable function of the two segments it receives and (2) a random-weight
BertForSequenceClassification saved with a custom label order and loaded like a user's checkpoint.
"""

from types import SimpleNamespace

import pytest
import torch
from lm_eval_tasks.utils.factbench.nli import NliUnavailable, NliVerifier, label_names
from lm_eval_tasks.utils.models import minilm_dir
from lm_eval_tasks.utils.openai_client import ChatCache

# A deliberately unusual label order: the code must read it from the config.
ID2LABEL = {0: "CONTRADICTION", 1: "Entailment", 2: "neutral"}


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_dir()))


class SegmentModel(torch.nn.Module):
    """Contradiction iff "no <hypothesis>" occurs in the premise segment, else entailment iff the
    hypothesis does, else neutral. Records the decoded segments of every window."""

    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer
        self.config = SimpleNamespace(id2label=ID2LABEL)
        self.seen = []

    def forward(self, input_ids, attention_mask, token_type_ids):
        rows = []
        for ids, mask, types in zip(input_ids.tolist(), attention_mask.tolist(), token_type_ids.tolist()):
            first = self.tokenizer.decode(
                [i for i, m, t in zip(ids, mask, types) if m and t == 0], skip_special_tokens=True
            )
            second = self.tokenizer.decode(
                [i for i, m, t in zip(ids, mask, types) if m and t == 1], skip_special_tokens=True
            )
            self.seen.append((first, second))
            label = 0 if f"no {second}" in first else 1 if second in first else 2
            rows.append([4.0 if i == label else 0.0 for i in range(3)])
        return SimpleNamespace(logits=torch.tensor(rows))


def test_premise_is_the_document_and_hypothesis_the_fact(tokenizer):
    model = SegmentModel(tokenizer)
    verifier = NliVerifier(tokenizer, model, "segment-stub", max_length=128, stride=16, batch_size=4)
    document = "The trial enrolled adults with asthma. Budesonide reduced exacerbations by half."
    (result,) = verifier.check([(document, "Budesonide reduced exacerbations by half.")])
    assert model.seen == [(document.lower(), "budesonide reduced exacerbations by half.")]
    assert (result.label, result.supported, result.n_windows) == ("entailment", True, 1)
    # the reverse direction (the reference code's) would put the short fact first: not what we send
    assert result.probabilities["entailment"] > 0.9 and set(result.probabilities) == {
        "contradiction",
        "entailment",
        "neutral",
    }


def test_label_order_comes_from_the_config(tokenizer):
    verifier = NliVerifier(tokenizer, SegmentModel(tokenizer), "segment-stub", max_length=128, stride=16)
    assert verifier.labels == ["contradiction", "entailment", "neutral"]
    assert verifier.record()["entailment_index"] == 1
    results = verifier.check([("Patients had no fever.", "fever"), ("Patients had a rash.", "fever")])
    assert [(r.label, r.supported) for r in results] == [("contradiction", False), ("neutral", False)]


def test_long_documents_are_windowed_and_the_best_window_kept(tokenizer):
    model = SegmentModel(tokenizer)
    verifier = NliVerifier(tokenizer, model, "segment-stub", max_length=48, stride=8, batch_size=3)
    filler = " ".join(f"Sentence {i} reports nothing relevant." for i in range(30))
    document = f"{filler} Aspirin inhibits platelet aggregation. {filler}"
    results = verifier.check(
        [(document, "aspirin inhibits platelet aggregation"), (filler, "aspirin inhibits platelet aggregation")]
    )
    first, second = results
    assert first.n_windows > 5 and 0 < first.window < first.n_windows - 1 and first.supported
    assert second.label == "neutral" and not second.supported
    assert all(len(tokenizer(premise, fact)["input_ids"]) <= 48 for premise, fact in model.seen)
    assert all(fact == "aspirin inhibits platelet aggregation" for _, fact in model.seen)


def test_results_are_cached_per_model_and_pair(tokenizer, tmp_path):
    cache = ChatCache(tmp_path / "nli.sqlite")
    pairs = [("Aspirin inhibits platelets.", "aspirin inhibits platelets"), ("A rash.", "fever")]
    first = NliVerifier(tokenizer, SegmentModel(tokenizer), "stub", max_length=64, stride=8, cache=cache)
    computed = first.check(pairs)
    model = SegmentModel(tokenizer)
    again = NliVerifier(tokenizer, model, "stub", max_length=64, stride=8, cache=cache)
    assert [r.as_dict() for r in again.check(pairs)] == [r.as_dict() for r in computed]
    assert model.seen == [] and (again.computed, again.cache_hits) == (0, 2)
    other = NliVerifier(tokenizer, SegmentModel(tokenizer), "stub", max_length=64, stride=16, cache=cache)
    other.check(pairs[:1])
    assert other.computed == 1  # different settings: a different cache key


def test_configs_without_an_entailment_label_are_refused():
    with pytest.raises(NliUnavailable, match="entailment"):
        label_names({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    assert label_names({"0": "entailment", "1": "not_entailment"}) == ["entailment", "not_entailment"]


def test_a_saved_checkpoint_loads_with_its_own_label_order(tokenizer, tmp_path):
    from tests.tiny_model import build_tiny_nli

    folder = build_tiny_nli(tmp_path / "nli", {0: "neutral", 1: "contradiction", 2: "entailment"})
    # float32 pinned: in bfloat16 a batch of padded windows and one pair alone differ in the last bits.
    verifier = NliVerifier.from_pretrained(
        str(folder), device="cpu", max_length=64, stride=8, batch_size=2, dtype="float32"
    )
    assert verifier.record()["labels"] == ["neutral", "contradiction", "entailment"]
    assert verifier.record()["entailment_index"] == 2
    long_document = " ".join(["The study measured blood pressure in adults."] * 40)
    results = verifier.check([(long_document, "Blood pressure was measured."), ("Short premise.", "A fact.")])
    with torch.inference_mode():
        encoded = tokenizer("Short premise.", "A fact.", return_tensors="pt")
        expected = torch.softmax(verifier.model(**encoded).logits[0], -1).tolist()
    assert results[1].probabilities == pytest.approx(dict(zip(["neutral", "contradiction", "entailment"], expected)))
    assert results[1].label == ["neutral", "contradiction", "entailment"][max(range(3), key=expected.__getitem__)]
    assert results[0].n_windows > 1 and len(verifier.fingerprint) == 16


def test_an_unavailable_checkpoint_says_why():
    with pytest.raises(NliUnavailable, match="tasksource/deberta-base-long-nli"):
        NliVerifier.from_pretrained("tasksource/deberta-base-long-nli")  # offline in the tests


def test_the_nli_dtype_follows_the_hardware_unless_given(tmp_path, monkeypatch):
    from lm_eval_tasks.utils import models

    from tests.tiny_model import build_tiny_nli

    folder = build_tiny_nli(tmp_path / "nli", {0: "entailment", 1: "neutral", 2: "contradiction"})
    monkeypatch.setattr(models, "_cpu_flags", lambda: frozenset({"avx2"}))  # no native bfloat16
    automatic = NliVerifier.from_pretrained(str(folder), device="cpu", max_length=64, stride=8)
    given = NliVerifier.from_pretrained(str(folder), device="cpu", max_length=64, stride=8, dtype="bfloat16")
    assert automatic.record()["dtype"] == "float32" and given.record()["dtype"] == "bfloat16"
    assert automatic.fingerprint != given.fingerprint  # their cached verdicts are kept apart
