"""What several MedExQA tests share: the test answers per specialty that the data's provenance states, and a
hand-made run of generation tasks (:func:`write_run`) whose explanation scores tests/medexqa/test_explanations.py
works by hand."""

import json

# shared/data/medexqa/PROVENANCE.md, test answer distribution per specialty
ANSWERS = {
    "BE": {"A": 35, "B": 33, "C": 31, "D": 44},
    "CLS": {"A": 78, "B": 81, "C": 62, "D": 151},
    "CP": {"A": 21, "B": 28, "C": 30, "D": 27},
    "OT": {"A": 30, "B": 47, "C": 39, "D": 73},
    "SLP": {"A": 28, "B": 30, "C": 23, "D": 49},
}

STAMP = "2026-11-30T10-00-00.000000"
REF1, REF2 = "the cat sat on the mat", "a dog barked"
REPLY = "the cat sat on the mat"


def doc(specialty, row, answer):
    return {
        "specialty": specialty,
        "split": "test",
        "row": row,
        "question": f"Which animal? ({row})",
        "A": "feline",
        "B": "canine",
        "C": "fish",
        "D": "bird",
        "exp0": REF1,
        "exp1": REF2,
        "answer": answer,
        "original_answer": answer,
        "permutation": "ABCD",
        "shuffle": False,
        "shuffle_seed": -1,
    }


# (task, doc, reply): BE correct; CP wrong; CP no answer (unclosed think)
SAMPLES = [
    ("medexqa_be", doc("BE", 1, "A"), "A. " + REPLY),
    ("medexqa_cp", doc("CP", 1, "B"), "C. " + REPLY),
    ("medexqa_cp", doc("CP", 2, "C"), "<think>the cat"),
]


def write_run(folder, samples=SAMPLES):
    folder.mkdir(parents=True, exist_ok=True)
    tasks = sorted({task for task, _, _ in samples})
    results = {
        "configs": {t: {} for t in tasks},
        "n-samples": {},
        "config": {"model": "hf", "model_args": "pretrained=m"},
        "versions": {t: 1.0 for t in tasks},
    }
    (folder / f"results_{STAMP}.json").write_text(json.dumps(results), encoding="utf-8")
    for task in tasks:
        rows = [(d, reply) for t, d, reply in samples if t == task]
        with (folder / f"samples_{task}_{STAMP}.jsonl").open("w", encoding="utf-8") as handle:
            for i, (d, reply) in enumerate(rows):
                handle.write(
                    json.dumps(
                        {
                            "doc_id": i,
                            "doc": d,
                            "doc_hash": f"{task}-{i}",
                            "filter": "none",
                            "resps": [[reply]],
                            "filtered_resps": [reply],
                        }
                    )
                    + "\n"
                )
    return folder
