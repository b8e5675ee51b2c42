"""The FTS5 passage store on a real corpus: the 1,000 PubMedQA abstracts."""

import json

import pytest
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.factbench.passage_store import PassageStore, match_query, passages_of

from tests.conftest import lm_eval_tasks_cli


@pytest.fixture(scope="module")
def corpus(shared_data, tmp_path_factory):
    items = json.loads((shared_data / "pubmedqa" / "ori_pqal.json").read_text(encoding="utf-8"))
    path = tmp_path_factory.mktemp("corpus") / "abstracts.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for pmid, item in items.items():
            handle.write(json.dumps({"id": pmid, "title": item["QUESTION"], "text": " ".join(item["CONTEXTS"])}) + "\n")
    return path, items


@pytest.fixture(scope="module")
def store(corpus, tmp_path_factory):
    return PassageStore.build([corpus[0]], tmp_path_factory.mktemp("store") / "pubmedqa.sqlite", passage_words=120)


def test_every_abstract_is_indexed_in_passages(store, corpus):
    _, items = corpus
    info = store.record()
    assert info["n_documents"] == 1000
    assert info["n_passages"] == sum(len(passages_of(" ".join(i["CONTEXTS"]), 120)) for i in items.values())
    assert info["sources"][0]["sha256"] and len(info["fingerprint"]) == 16


@pytest.mark.parametrize("pmid", ["21645374", "16418930"])
def test_a_fact_from_an_abstract_retrieves_that_abstract_first(store, corpus, pmid):
    _, items = corpus
    # a fact restated from the abstract's last section
    sentence = items[pmid]["CONTEXTS"][-1].split(". ")[0]
    (best, *rest) = store.search(sentence, k=5)
    assert best.id.split("#")[0] == pmid and best.title == items[pmid]["QUESTION"]
    assert len(rest) == 4 and all(best.score >= p.score for p in rest)


def test_queries_ignore_function_words_and_fts_syntax(store):
    # single letters dropped, single digits kept, operators and quotes neutralised
    assert match_query('The "dose" of AND aspirin, OR* NEAR(x) 5 mg') == '"dose" OR "aspirin" OR "near" OR "5" OR "mg"'
    assert match_query("the of and") is None and store.search("the of and") == []
    assert store.search("mitochondria lace plant", k=0) == []


def test_passages_are_word_windows():
    assert passages_of("a b c d e", 2) == ["a b", "c d", "e"]
    assert passages_of("  ", 3) == []


def test_bad_corpus_rows_are_named(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "fine"}\n{"id": 2, "body": "no text field"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.jsonl, row 2, field 'text'"):
        PassageStore.build([bad], tmp_path / "s.sqlite")
    assert not (tmp_path / "s.sqlite").exists() and list(tmp_path.iterdir()) == [bad]  # nothing half-written
    with pytest.raises(DataError, match="no passage store"):
        PassageStore(tmp_path / "missing.sqlite")


def test_index_command(corpus, tmp_path):
    out = lm_eval_tasks_cli("factbench-index", corpus[0], "--out", tmp_path / "s.sqlite", "--passage-words", 200)
    assert "from 1000 documents" in out.stdout
    assert PassageStore(tmp_path / "s.sqlite").record()["passage_words"] == 200


def test_a_document_id_given_twice_names_both_places(tmp_path):
    first = tmp_path / "a.jsonl"
    first.write_text('{"id": "d1", "text": "one"}\n{"id": "d2", "text": "two"}\n', encoding="utf-8")
    second = tmp_path / "b.jsonl"
    second.write_text('\n{"id": "d2", "text": "again"}\n', encoding="utf-8")
    with pytest.raises(
        DataError, match=r"b.jsonl, row 2, field 'id': document id 'd2' is also the id at .*a.jsonl, row 2"
    ):
        PassageStore.build([first, second], tmp_path / "s.sqlite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl"]  # nothing half-written
    wrong = tmp_path / "c.jsonl"
    wrong.write_text('{"id": ["d3"], "text": "three"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"c.jsonl, row 1, field 'id': expected a string or an integer"):
        PassageStore.build([wrong], tmp_path / "s.sqlite")
