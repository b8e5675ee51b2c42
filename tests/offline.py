"""What tests of loading without a network share: a load without local data is refused at once, with a message
that says how to supply the data; and PubMedQA's items in the hub's own layout (what a hub cache holds)."""

import time

import pytest
from lm_eval_tasks.utils.data import DataError


def refused_at_once(load, *args, **kwargs) -> str:
    """The DataError message of ``load(*args, **kwargs)``, which must come within 2 seconds (no network waited on)."""
    start = time.monotonic()
    with pytest.raises(DataError) as error:
        load(*args, **kwargs)
    assert time.monotonic() - start < 2.0
    return str(error.value)


def pqa_labeled_rows(items: dict) -> list[dict]:
    """``{pubid: ori_pqal.json item}`` as the hub's pqa_labeled rows: pubid (an int), question,
    context{contexts, labels, meshes}, long_answer, final_decision."""
    return [
        {
            "pubid": int(pubid),
            "question": item["QUESTION"],
            "context": {"contexts": item["CONTEXTS"], "labels": item["LABELS"], "meshes": item["MESHES"]},
            "long_answer": item["LONG_ANSWER"],
            "final_decision": item["final_decision"],
        }
        for pubid, item in items.items()
    ]
