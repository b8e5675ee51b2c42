"""The decomposer and the CoT judge against the real local llama.cpp server (SmolLM2-135M-Instruct)."""

import pytest
from lm_eval_tasks.utils.factbench.factcheck_prompts import parse_verdict
from lm_eval_tasks.utils.factbench.passage_store import PassageStore
from lm_eval_tasks.utils.factbench.pipeline import FactChecker
from lm_eval_tasks.utils.factbench.records import Generation
from lm_eval_tasks.utils.openai_client import ChatCache, ChatClient, ChatEndpoint

pytestmark = pytest.mark.slow

DOCUMENT = (
    "Programmed cell death (PCD) is the regulated death of cells within an organism. The lace plant "
    "(Aponogeton madagascariensis) produces perforations in its leaves through PCD."
)
ANSWER = "The lace plant makes holes in its leaves through programmed cell death. Aspirin cures cancer."


def test_real_server_decomposes_judges_and_a_rerun_is_free(llama_server, demo_data_dir, tmp_path):
    store = PassageStore.build(
        [demo_data_dir / "factbench" / "passages" / "pubmedqa_abstracts.jsonl"], tmp_path / "s.sqlite"
    )
    endpoint = ChatEndpoint(llama_server.base_url, llama_server.model, max_tokens=128)

    def check():
        cache = ChatCache(tmp_path / "calls.sqlite")
        decomposer, judge = ChatClient(endpoint, cache, concurrency=1), ChatClient(endpoint, cache, concurrency=1)
        result = FactChecker(decomposer, judge, None, store, k=2).check([Generation("rag", 0, "h", ANSWER, DOCUMENT)])
        return result, decomposer, judge

    result, decomposer, judge = check()
    (record,) = result.generations
    assert record.sentences == [
        "The lace plant makes holes in its leaves through programmed cell death.",
        "Aspirin cures cancer.",
    ]
    assert decomposer.calls == 2 and decomposer.failures == 0 and judge.failures == 0
    assert record.status == "checked" and result.facts
    for fact in result.facts:
        intrinsic = fact.cot["intrinsic"]
        assert isinstance(intrinsic.reply, str) and intrinsic.reply.strip()
        assert intrinsic.supported is parse_verdict(intrinsic.reply)
        if intrinsic.supported is False:  # re-checked against the passage store
            assert "extrinsic" in fact.cot and len(fact.passages) <= 2
    assert result.config["cot"]["model"] == llama_server.model and result.config["cot"]["temperature"] == 0.0

    again, decomposer, judge = check()
    assert (decomposer.calls, judge.calls) == (0, 0)
    assert without_cache_flags(again.facts) == without_cache_flags(result.facts)
    assert all(v.cached for f in again.facts for v in f.cot.values() if v.reply is not None)


def without_cache_flags(facts):
    return [
        {**f, "cot": {k: {x: y for x, y in v.items() if x != "cached"} for k, v in f["cot"].items()}}
        for f in (fact.as_json() for fact in facts)
    ]
