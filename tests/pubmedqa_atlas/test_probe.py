"""The PubMedQA probe's parts on hand-worked inputs (the real-encoder run is in test_pubmedqa_end_to_end)."""

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from lm_eval_tasks.utils import stats
from lm_eval_tasks.utils.data import DataError
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


def stand_in_encoder(tmp_path) -> Path:
    """A folder with a weights file: what the embeddings' key reads of an encoder."""
    encoder = tmp_path / "enc"
    encoder.mkdir()
    (encoder / "model.safetensors").write_bytes(b"w")
    return encoder


def counted_embeddings(monkeypatch) -> list:
    """``probe.embed_texts`` replaced by one that records each call's texts (and gives the call's number)."""
    calls = []

    def fake_embed(encoder_dir, texts, **options):
        calls.append(list(texts))
        return np.full((len(texts), 2), float(len(calls)), dtype=np.float32), 128

    monkeypatch.setattr(probe, "embed_texts", fake_embed)
    return calls


def test_embeddings_cache_is_reused_only_for_the_same_inputs(tmp_path, monkeypatch):
    encoder = stand_in_encoder(tmp_path)
    calls = counted_embeddings(monkeypatch)
    cache = tmp_path / "emb.npz"
    first = probe.cached_embeddings(cache, encoder, ["a", "b"], pooling="mean", dtype="float32")
    again = probe.cached_embeddings(cache, encoder, ["a", "b"], pooling="mean", dtype="float32")
    assert len(calls) == 1 and again[2] is True and np.array_equal(first[0], again[0]) and again[1] == 128
    probe.cached_embeddings(cache, encoder, ["a", "c"], pooling="mean", dtype="float32")
    probe.cached_embeddings(cache, encoder, ["a", "c"], pooling="cls", dtype="float32")
    assert len(calls) == 3
    # Another version of the code that embeds them: this package's, transformers', torch's.
    import torch
    import transformers

    import lm_eval_tasks

    for module in (lm_eval_tasks, transformers, torch):
        monkeypatch.setattr(module, "__version__", "0.0.0-another")
        assert probe.cached_embeddings(cache, encoder, ["a", "c"], pooling="cls", dtype="float32")[2] is False
    assert len(calls) == 6


def test_an_embeddings_cache_not_the_users_own_is_neither_read_nor_written(tmp_path, monkeypatch, capsys):
    encoder = stand_in_encoder(tmp_path)
    calls = counted_embeddings(monkeypatch)
    mine = tmp_path / "mine" / "emb.npz"
    probe.cached_embeddings(mine, encoder, ["a", "b"], pooling="mean")  # made in a folder of 0700
    assert len(calls) == 1 and (mine.parent.stat().st_mode & 0o777) == 0o700
    made = mine.read_bytes()
    # A link to a good cache, a good cache writable by others, a good cache in a folder writable by others: each is
    # computed again, said on stderr, and left as it is.
    link = tmp_path / "mine" / "link.npz"
    link.symlink_to(mine)
    writable = tmp_path / "mine" / "writable.npz"
    writable.write_bytes(made)
    writable.chmod(0o666)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "emb.npz").write_bytes(made)
    for untrusted in (link, writable, shared / "emb.npz"):
        before = len(calls)
        embeddings, _, from_cache = probe.cached_embeddings(untrusted, encoder, ["a", "b"], pooling="mean")
        assert not from_cache and len(calls) == before + 1 and embeddings[0, 0] == len(calls)
        assert f"{untrusted} is ignored" in capsys.readouterr().err
        assert untrusted.read_bytes() == made
    assert link.is_symlink() and (writable.stat().st_mode & 0o777) == 0o666
    assert sorted(p.name for p in shared.iterdir()) == ["emb.npz"]  # nothing written beside it
    # The user's own file is still read.
    assert probe.cached_embeddings(mine, encoder, ["a", "b"], pooling="mean")[2] is True


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 cut short", b"not a cache at all"])
def test_a_broken_embeddings_cache_is_made_again(tmp_path, monkeypatch, capsys, content):
    encoder = stand_in_encoder(tmp_path)
    calls = counted_embeddings(monkeypatch)
    cache = tmp_path / "emb.npz"
    cache.write_bytes(content)
    assert probe.cached_embeddings(cache, encoder, ["a"], pooling="mean")[2] is False
    assert f"{cache} is no embeddings cache" in capsys.readouterr().err
    assert probe.cached_embeddings(cache, encoder, ["a"], pooling="mean")[2] is True and len(calls) == 1


def test_cli_rejects_a_folder_that_is_not_a_model(tmp_path, shared_data, capsys):
    assert cli(["pubmedqa-probe", "--encoder", str(tmp_path), "--data-dir", str(shared_data)]) == 1
    assert "not a transformers model folder (no config.json)" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the head (issue 12)


def scaled_blobs():
    """Three classes told apart by a feature of scale 0.01 and blurred by one of scale 100: an L2 penalty at C = 1
    then treats raw and standardised features very differently."""
    rng = np.random.default_rng(7)
    centres = {"yes": 0.0, "no": 0.02, "maybe": 0.04}
    train_y = [label for label in centres for _ in range(30)]
    train_x = np.column_stack(
        [[centres[y] for y in train_y] + rng.normal(0, 0.004, 90), rng.normal(0, 100, 90), rng.normal(0, 1, 90)]
    )
    test_x = np.column_stack([np.linspace(-0.01, 0.05, 25), np.linspace(-150, 150, 25), np.zeros(25)])
    return train_x, train_y, test_x


def reference_softmax_regression(x, y, labels, c=1.0):
    """The card's head written out: minimise C * (summed cross-entropy) + ||W||^2 / 2 over weights W and an
    unpenalised intercept b (scikit-learn's multinomial objective), with scipy's L-BFGS at a tight tolerance."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    n, d = x.shape
    k = len(labels)
    onehot = np.eye(k)[[labels.index(v) for v in y]]

    def objective(theta):
        w, b = theta[: d * k].reshape(d, k), theta[d * k :]
        logits = x @ w + b
        log_p = logits - logsumexp(logits, axis=1, keepdims=True)
        gradient_logits = np.exp(log_p) - onehot
        value = -c * np.sum(onehot * log_p) + 0.5 * np.sum(w * w)
        gradient = np.concatenate([(c * x.T @ gradient_logits + w).ravel(), c * gradient_logits.sum(axis=0)])
        return value, gradient

    fitted = minimize(
        objective, np.zeros(d * k + k), jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "maxiter": 100_000}
    )
    return fitted.x[: d * k].reshape(d, k), fitted.x[d * k :]


def test_raw_head_is_the_cards_logistic_regression_on_unstandardised_features():
    train_x, train_y, test_x = scaled_blobs()
    labels = sorted(set(train_y))  # scikit-learn orders classes alphabetically
    w, b = reference_softmax_regression(train_x, train_y, labels)
    expected = [labels[i] for i in np.argmax(test_x @ w + b, axis=1)]
    head = probe.make_head("raw").fit(train_x, train_y)
    assert list(head.classes_) == labels
    np.testing.assert_allclose(head.coef_, w.T, rtol=1e-3, atol=1e-4)
    # Probabilities to 1e-3: scikit-learn stops lbfgs at its default tol (1e-4), the reference much later.
    from scipy.special import softmax

    np.testing.assert_allclose(head.predict_proba(test_x), softmax(test_x @ w + b, axis=1), atol=1e-3)
    fit = probe.fit_and_predict(train_x, train_y, test_x)
    assert fit.predictions == expected and fit.converged and fit.warning is None and 0 < fit.iterations
    # The same data through the named standardised head (probe version 1) predicts otherwise.
    standardized = probe.fit_and_predict(train_x, train_y, test_x, head="standardized")
    assert standardized.predictions != expected and standardized.converged


def test_a_head_that_does_not_converge_says_so(monkeypatch):
    train_x, train_y, test_x = scaled_blobs()
    monkeypatch.setattr(probe, "LOGISTIC_MAX_ITER", 2)
    fit = probe.fit_and_predict(train_x, train_y, test_x)
    assert not fit.converged and fit.iterations == 2 and "lbfgs failed to converge" in fit.warning
    assert fit.record() == {"iterations": 2, "max_iter": 2, "converged": False, "warning": fit.warning}


def test_unknown_head_is_refused():
    with pytest.raises(ValueError, match="unknown head 'pca' \\(known: raw, standardized\\)"):
        probe.make_head("pca")


def fake_embeddings(calls):
    """Seeded random embeddings in place of an encoder run; ``calls`` records the embedding options."""

    def cached_embeddings(cache_file, encoder_dir, texts, **options):
        calls.append(options)
        rng = np.random.default_rng(len(texts))
        return rng.normal(0, 1, (len(texts), 4)).astype(np.float32), 64, False

    return cached_embeddings


@pytest.mark.parametrize(
    "cpu_flags, dtype_option, dtype",
    [
        ({"avx2"}, [], "float32"),
        ({"avx2", "amx_bf16"}, [], "float32"),  # float32 by default on any CPU
        ({"avx2"}, ["--dtype", "auto"], "float32"),
        ({"avx2", "amx_bf16"}, ["--dtype", "auto"], "bfloat16"),  # auto follows the (stubbed) flags
    ],
)
@pytest.mark.parametrize("head", ["raw", "standardized"])
def test_cli_records_the_head_version_and_convergence(
    head, cpu_flags, dtype_option, dtype, tiny_model_dir, shared_data, tmp_path, monkeypatch, capsys
):
    from lm_eval_tasks.utils import models

    # Both kinds of CPU, whichever this one is.
    monkeypatch.setattr(models, "_cpu_flags", lambda: frozenset(cpu_flags))
    calls = []
    monkeypatch.setattr(probe, "cached_embeddings", fake_embeddings(calls))
    out = tmp_path / "probe.json"
    args = ["pubmedqa-probe", "--encoder", str(tiny_model_dir), "--data-dir", str(shared_data), "--out", str(out)]
    args += dtype_option
    assert cli(args + (["--head", head] if head != "raw" else [])) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["probe_version"] == 3 and result["head"] == head and result["dtype"] == dtype
    assert result["head_description"] == probe.HEADS[head]
    assert result["head_fit"]["converged"] is True and result["head_fit"]["max_iter"] == probe.LOGISTIC_MAX_ITER
    assert result["text"] == "Question: {question}\nContext: {context}"
    assert result["bootstrap"] == {
        "method": "percentile",
        "n_resamples": 1000,
        "seed": 1234,
        "confidence": 0.95,
        "all_agree": stats.ALL_AGREE_RULE,
        "stratified_by": "gold answer",
    }
    # The predictions are the named head's, fit on the 500 train rows of the same embeddings.
    embeddings = fake_embeddings([])(None, None, ["t"] * 1000)[0]
    expected = probe.fit_and_predict(embeddings[:500], _train_answers(shared_data), embeddings[500:], head=head)
    assert [p["pred"] for p in result["predictions"]] == expected.predictions
    assert calls == [{"pooling": "mean", "max_length": None, "dtype": dtype, "batch_size": 16}]
    printed = capsys.readouterr().out
    assert (
        f"head {head}: {probe.HEADS[head]}; converged in {result['head_fit']['iterations']} lbfgs iterations" in printed
    )


def _train_answers(shared_data):
    from lm_eval_tasks.utils.pubmedqa_atlas import loader

    return [item.answer for item in loader.load(str(shared_data)).train]


# ----------------------------------------------------------------------------- the encoder's own maximum length


def test_declared_max_lengths_of_the_packaged_minilm():
    from lm_eval_tasks.utils.models import minilm_dir
    from transformers import AutoConfig, AutoTokenizer

    folder = minilm_dir()
    declared = probe.declared_max_lengths(
        folder, AutoTokenizer.from_pretrained(str(folder)), AutoConfig.from_pretrained(str(folder))
    )
    assert declared == {
        "sentence_transformers_max_seq_length": 256,
        "tokenizer_model_max_length": 512,
        "max_position_embeddings": 512,
    }


@pytest.mark.parametrize("value", ["256", 0, True, 2.5])
def test_a_bad_max_seq_length_is_named(tmp_path, value):
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": value}))
    config = SimpleNamespace(max_position_embeddings=512)
    with pytest.raises(
        DataError, match=r"sentence_bert_config.json, field 'max_seq_length': expected a positive integer"
    ):
        probe.encoder_max_length(tmp_path, SimpleNamespace(model_max_length=512), config)


def test_the_probe_runs_in_float32_unless_asked_even_on_a_cpu_with_native_bfloat16(monkeypatch, shared_data):
    from lm_eval_tasks.utils import models

    seen = []

    def embed(encoder_dir, texts, **options):
        seen.append(options["dtype"])
        raise RuntimeError("stop after the dtype is chosen")

    monkeypatch.setattr(models, "_cpu_flags", lambda: frozenset({"avx2", "avx512_bf16"}))
    monkeypatch.setattr(probe, "embed_texts", embed)
    for dtype in ({}, {"dtype": "auto"}):
        with pytest.raises(RuntimeError, match="stop after"):
            probe.run_probe(models.minilm_dir(), data_dir=str(shared_data), **dtype)
    assert seen == ["float32", "bfloat16"]
