"""The PubMedQA probe's parts on hand-worked inputs (the real-encoder run is in test_pubmedqa_end_to_end)."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from lm_eval_tasks.utils.pubmedqa_atlas import probe

from lm_eval_tasks.__main__ import main as cli


def test_pooling_uses_only_real_tokens():
    import torch

    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]], [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])  # the first text has one padding position
    assert probe.pool(hidden, mask, "mean").tolist() == [[2.0, 3.0], [7.0, 8.0]]
    assert probe.pool(hidden, mask, "cls").tolist() == [[1.0, 2.0], [5.0, 6.0]]
    assert probe.pool(hidden, mask, "last").tolist() == [[3.0, 4.0], [9.0, 10.0]]
    with pytest.raises(ValueError, match="unknown pooling 'max'"):
        probe.pool(hidden, mask, "max")


def test_encoder_max_length(tmp_path):
    tokenizer = SimpleNamespace(model_max_length=512)
    config = SimpleNamespace(max_position_embeddings=512)
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    assert probe.encoder_max_length(tmp_path, tokenizer, config) == 256  # what sentence-transformers runs at
    (tmp_path / "sentence_bert_config.json").unlink()
    assert probe.encoder_max_length(tmp_path, SimpleNamespace(model_max_length=300), config) == 300
    # a tokenizer without a limit (1e30 sentinel, as SmolLM2's): the position limit
    assert (
        probe.encoder_max_length(
            tmp_path, SimpleNamespace(model_max_length=1e30), SimpleNamespace(max_position_embeddings=8192)
        )
        == 8192
    )


def test_head_and_scores_hand_worked():
    rng = np.random.default_rng(0)
    centres = {"yes": [4.0, 0.0], "no": [0.0, 4.0], "maybe": [-4.0, -4.0]}
    train_y = [label for label in centres for _ in range(20)]
    train_x = np.array([centres[y] for y in train_y]) + rng.normal(0, 0.3, (60, 2))
    test_x = np.array([[4.0, 0.1], [0.1, 4.0], [-4.0, -3.9], [3.9, 0.0]])
    assert probe.fit_and_predict(train_x, train_y, test_x).predictions == ["yes", "no", "maybe", "yes"]
    result = probe.scores(["yes", "no", "maybe", "no"], ["yes", "no", "maybe", "yes"])
    assert result["accuracy"]["value"] == pytest.approx(0.75)
    # F1: yes 2*1/(2+1), no 2*1/(1+2), maybe 1
    assert result["macro_f1"]["value"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert result["confusion_matrix"]["counts"] == [[1, 0, 0], [1, 1, 0], [0, 0, 1]]


def test_embeddings_cache_is_reused_only_for_the_same_inputs(tmp_path, monkeypatch):
    encoder = tmp_path / "enc"
    encoder.mkdir()
    (encoder / "model.safetensors").write_bytes(b"w")
    calls = []

    def fake_embed(encoder_dir, texts, **options):
        calls.append(list(texts))
        return np.full((len(texts), 2), float(len(calls)), dtype=np.float32), 128

    monkeypatch.setattr(probe, "embed_texts", fake_embed)
    cache = tmp_path / "emb.npz"
    first = probe.cached_embeddings(cache, encoder, ["a", "b"], pooling="mean", dtype="float32")
    again = probe.cached_embeddings(cache, encoder, ["a", "b"], pooling="mean", dtype="float32")
    assert len(calls) == 1 and again[2] is True and np.array_equal(first[0], again[0]) and again[1] == 128
    probe.cached_embeddings(cache, encoder, ["a", "c"], pooling="mean", dtype="float32")
    probe.cached_embeddings(cache, encoder, ["a", "c"], pooling="cls", dtype="float32")
    assert len(calls) == 3


def test_cli_rejects_a_folder_that_is_not_a_model(tmp_path, shared_data, capsys):
    assert cli(["pubmedqa-probe", "--encoder", str(tmp_path), "--data-dir", str(shared_data)]) == 1
    assert "not a transformers model folder (no config.json)" in capsys.readouterr().err
