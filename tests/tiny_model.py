"""A tiny random-weight Llama with a locally trained BPE tokenizer (plumbing checks only), and that tokenizer's
counts of hand-made replies."""

from __future__ import annotations

from pathlib import Path

from tests.hand_runs import REPLIES

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
CORPUS = [
    "The article clearly supports the claim about the patient outcome.",
    "<think>The study shows a reduction in mortality.</think><score>2</score>",
    "Question: Does aspirin reduce the risk of stroke? Answer: yes no maybe",
    "A. hypertension B. diabetes C. asthma D. anemia. The answer is B because insulin is low.",
    "Clinical trials, randomized controlled, cohort, evidence, abstract, conclusion, results.",
]


def build_tiny_model(out_dir: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(0)
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(CORPUS * 20, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=2048,
    )
    fast.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
        tie_word_embeddings=True,
    )
    LlamaForCausalLM(config).save_pretrained(out_dir)
    fast.save_pretrained(out_dir)
    return out_dir


def build_tiny_nli(out_dir: Path, id2label: dict[int, str]) -> Path:
    """A random-weight BERT sequence classifier with MiniLM's tokenizer and the given label order
    (NLI plumbing checks only: its predictions mean nothing)."""
    import torch
    from lm_eval_tasks.utils.models import minilm_dir
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    BertForSequenceClassification(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def tiny_tokenizer(tiny_model_dir, folder):
    """A copy of the tiny model's tokenizer in ``folder`` (a folder a test may remove), and its token counts of
    tests/hand_runs.py's REPLIES."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    tokenizer.save_pretrained(str(folder))
    return [len(tokenizer(reply, add_special_tokens=False)["input_ids"]) for _, reply in REPLIES]
