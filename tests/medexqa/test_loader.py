"""MedExQA data on the real TSVs: counts, the header-less first row, quoting, validation, shuffling."""

from collections import Counter

import pytest
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.medexqa import constants, loader, tasks

from tests.medexqa.builders import ANSWERS
from tests.offline import refused_at_once


@pytest.mark.parametrize("code", list(constants.SPECIALTIES))
def test_counts_and_answer_distribution_per_specialty(shared_data, code):
    test = tasks.custom_dataset(code, data_dir=str(shared_data))
    assert len(test["test"]) == constants.PUBLISHED_COUNTS["test"][code] == sum(ANSWERS[code].values())
    assert len(test["dev"]) == 5
    assert Counter(test["test"]["answer"]) == ANSWERS[code]
    assert test["test"]["row"] == list(range(1, len(test["test"]) + 1))
    assert set(test["test"]["specialty"]) == {code} and set(test["test"]["split"]) == {"test"}
    dev = tasks.custom_dataset(code, data_dir=str(shared_data), medexqa_split="dev")["test"]
    assert len(dev) == 5 and set(dev["split"]) == {"dev"}


def test_counts_sum_to_the_published_totals():
    assert (
        sum(constants.PUBLISHED_COUNTS["test"].values()) == 940
        and sum(constants.PUBLISHED_COUNTS["dev"].values()) == 25
    )


def test_first_line_of_a_headerless_file_is_an_item(shared_data):
    first = loader.load(str(shared_data), split="test", specialty="BE")[0]
    assert first["question"] == (
        "What should be the maximum surface temperature of a device attachment that is "
        "not intended to heat the patient?"
    )
    assert (first["A"], first["D"], first["answer"], first["row"]) == ("43℃", "41℃", "D", 1)


def test_the_one_quoted_row_is_unquoted(shared_data):
    row = loader.load(str(shared_data), split="test", specialty="BE")[110]  # line 111
    assert row["A"] == "1.67"  # a numeric-looking option stays a string
    assert row["exp0"].startswith("The chemical formula for hydroxyapatite")
    assert row["exp0"].endswith('the correct answer is "1.67".')


def write_specialty(root, lines, split="test", stem="biomedical_engineer"):
    folder = root / "medexqa" / split
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}_{split}.tsv").write_text("".join("\t".join(cells) + "\n" for cells in lines), encoding="utf-8")
    return root


GOOD = ["Q?", "a", "b", "c", "d", "e0", "e1", "B"]
OTHER = ["Q2?", *GOOD[1:]]  # another item: a file holds no item twice


def test_a_row_with_seven_columns_names_file_and_row(tmp_path):
    root = write_specialty(tmp_path, [GOOD, GOOD[:7]])
    with pytest.raises(DataError, match=r"biomedical_engineer_test\.tsv, row 2: expected 8 columns"):
        loader.load(str(root), split="test", specialty="BE")


def test_a_bad_answer_names_file_row_and_field(tmp_path):
    root = write_specialty(tmp_path, [GOOD, GOOD[:7] + ["E"]])
    with pytest.raises(DataError, match=r"row 2, field 'answer': 'E' is not one of A, B, C, D"):
        loader.load(str(root), split="test", specialty="be")


def test_an_empty_cell_names_its_field(tmp_path):
    root = write_specialty(tmp_path, [GOOD[:5] + [" "] + GOOD[6:]])
    with pytest.raises(DataError, match=r"row 1, field 'exp0': empty string"):
        loader.load(str(root), split="test", specialty="BE")


def test_a_row_repeating_an_item_names_both_rows(tmp_path):
    """Pasted over another row, a repeated item keeps the published count: only this check sees it counted twice."""
    root = write_specialty(tmp_path, [GOOD, OTHER, GOOD[:5] + ["another explanation", "e1", "C"]])
    with pytest.raises(DataError, match=r"_test\.tsv, row 3, field 'question': repeats row 1 \(the same question"):
        loader.load(str(root), specialty="BE")
    assert len(loader.load(str(write_specialty(tmp_path / "ok", [GOOD, OTHER])), specialty="BE")) == 2


def test_a_cell_longer_than_the_csv_modules_limit_names_file_and_row(tmp_path):
    root = write_specialty(tmp_path, [GOOD, GOOD[:5] + ["x" * 200_000] + GOOD[6:]])
    with pytest.raises(DataError, match=r"biomedical_engineer_test\.tsv, row 2: not readable \(field larger than"):
        loader.load(str(root), specialty="BE")


def test_a_non_utf8_byte_names_file_and_line(tmp_path):
    root = write_specialty(tmp_path, [GOOD, OTHER])
    path = root / "medexqa" / "test" / "biomedical_engineer_test.tsv"
    path.write_bytes(path.read_bytes() + b"Q\xff?\ta\tb\tc\td\te0\te1\tA\n")
    with pytest.raises(DataError, match=r"biomedical_engineer_test\.tsv, line 3: not UTF-8 \(byte 0xff"):
        loader.load(str(root), specialty="BE")


def test_a_byte_order_mark_is_not_part_of_the_first_question(tmp_path):
    root = write_specialty(tmp_path, [GOOD, OTHER])
    path = root / "medexqa" / "test" / "biomedical_engineer_test.tsv"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [row["question"] for row in loader.load(str(root), specialty="BE")] == ["Q?", "Q2?"]


@pytest.mark.parametrize("code", list(constants.SPECIALTIES))
def test_no_real_question_starts_with_a_byte_order_mark(shared_data, code):
    for split in constants.SPLITS:
        rows = loader.load(str(shared_data), split=split, specialty=code)
        assert not [row["row"] for row in rows if any("\ufeff" in row[column] for column in constants.COLUMNS)]
    if code == "BE":
        assert loader.load(str(shared_data), specialty="BE")[0]["question"].startswith("What should be")


def test_a_partial_local_file_loads_with_a_warning(tmp_path, caplog):
    root = write_specialty(tmp_path, [GOOD, OTHER])
    assert len(loader.load(str(root), split="test", specialty="BE")) == 2
    assert "holds 2 rows, the published test split of BE has 143" in caplog.text


def test_missing_file_shows_the_layout(tmp_path):
    (tmp_path / "medexqa").mkdir()
    with pytest.raises(DataError, match=r"occupational_therapist_test\.tsv: missing. Expected layout: DIR/medexqa/"):
        loader.load(str(tmp_path), split="test", specialty="OT")


def test_training_split_and_unknown_specialty_are_refused(shared_data):
    with pytest.raises(DataError, match="evaluation-only"):
        tasks.custom_dataset("BE", data_dir=str(shared_data), split="train")
    with pytest.raises(DataError, match="evaluation-only"):
        tasks.custom_dataset("BE", data_dir=str(shared_data), medexqa_split="train")
    with pytest.raises(DataError, match="unknown MedExQA specialty 'XX'"):
        tasks.custom_dataset("XX", data_dir=str(shared_data))
    assert constants.specialty("speech_pathologist").code == "SLP" and constants.specialty("slp").code == "SLP"


def test_offline_without_local_data_fails_fast_with_instructions():
    message = refused_at_once(loader.load, specialty="CP")
    assert f"hf://datasets/{constants.HUB_REPO}@{constants.HUB_REVISION}/test/clinical_psychologist_test.tsv" in message
    assert "--metadata data_dir=DIR" in message and "HF_HUB_OFFLINE is set" in message


# ----------------------------------------------------------------------------- shuffling


def test_no_shuffle_by_default(shared_data):
    docs = tasks.custom_dataset("CP", data_dir=str(shared_data))["test"]
    assert set(docs["permutation"]) == {"ABCD"} and set(docs["shuffle_seed"]) == {-1}
    assert set(docs["shuffle"]) == {False}
    assert docs["answer"] == docs["original_answer"]


def test_shuffle_vectors():
    # Frozen: sort A-D by sha256("{seed}:{specialty}:{split}:{row}:{letter}") hex digests.
    assert loader.permutation(1618, "BE", "test", 1) == tuple("CBDA")
    assert loader.permutation(1618, "CLS", "test", 372) == tuple("DACB")
    assert loader.permutation(42, "BE", "test", 1) == tuple("DCAB")


@pytest.mark.parametrize("code", ["BE", "CLS"])
def test_shuffled_docs_keep_every_item_and_move_the_answer_with_its_text(shared_data, code):
    rows = loader.load(str(shared_data), split="test", specialty=code)
    docs = tasks.custom_dataset(code, data_dir=str(shared_data), medexqa_shuffle="true")["test"]
    again = tasks.custom_dataset(code, data_dir=str(shared_data), medexqa_shuffle=True, medexqa_shuffle_seed=1618)[
        "test"
    ]
    assert docs.to_list() == again.to_list()
    for row, doc in zip(rows, docs):
        order = doc["permutation"]
        assert tuple(order) == loader.permutation(1618, code, "test", row["row"]) and doc["shuffle_seed"] == 1618
        assert [doc[letter] for letter in "ABCD"] == [row[original] for original in order]
        assert doc[doc["answer"]] == row[row["answer"]] and doc["original_answer"] == row["answer"]
    moved = sum(doc["permutation"] != "ABCD" for doc in docs)
    assert moved > 0.9 * len(docs)  # 23 of 24 permutations move something
    other = tasks.custom_dataset(code, data_dir=str(shared_data), medexqa_shuffle=True, medexqa_shuffle_seed=7)["test"]
    assert other["permutation"] != docs["permutation"]


@pytest.mark.parametrize(
    "metadata, name",
    [({"shuffle": True}, "shuffle"), ({"shuffle_seed": 7}, "shuffle_seed"), ({"split": "dev"}, "split")],
)
def test_unscoped_settings_are_refused(shared_data, metadata, name):
    # lm-eval gives every task the same --metadata: shuffle_seed=7 would also reach MillerQA.
    with pytest.raises(DataError, match=rf"--metadata {name}=.*use medexqa_{name}=\.\.\."):
        tasks.custom_dataset("BE", data_dir=str(shared_data), **metadata)


def test_other_benchmarks_settings_leave_medexqa_alone(shared_data):
    plain = tasks.custom_dataset("CP", data_dir=str(shared_data))
    other = tasks.custom_dataset(
        "CP", data_dir=str(shared_data), millerqa_shuffle_seed=7, medfact_bench_split="test", version=2.0
    )
    assert other["test"].to_list() == plain["test"].to_list() and other["dev"].to_list() == plain["dev"].to_list()


def test_docs_record_every_score_moving_setting(shared_data):
    shuffled = tasks.custom_dataset("BE", data_dir=str(shared_data), medexqa_shuffle=True, medexqa_shuffle_seed="7")
    assert {(d["split"], d["shuffle"], d["shuffle_seed"]) for d in shuffled["test"]} == {("test", True, 7)}
    assert {(d["split"], d["shuffle"], d["shuffle_seed"]) for d in shuffled["dev"]} == {("dev", True, 7)}
    dev = tasks.custom_dataset("BE", data_dir=str(shared_data), medexqa_split="dev")["test"]
    assert {(d["split"], d["shuffle"], d["shuffle_seed"]) for d in dev} == {("dev", False, -1)}


def test_bad_shuffle_options_are_named(shared_data):
    with pytest.raises(DataError, match="medexqa_shuffle='maybe'"):
        tasks.custom_dataset("BE", data_dir=str(shared_data), medexqa_shuffle="maybe")
    with pytest.raises(DataError, match="medexqa_shuffle_seed='x'"):
        tasks.custom_dataset("BE", data_dir=str(shared_data), medexqa_shuffle=True, medexqa_shuffle_seed="x")


def test_paper_reference_numbers():
    assert constants.PUBLISHED_NUMBERS["logit"]["MedPhi-2"] == {
        "BE": 0.657,
        "CP": 0.708,
        "SLP": 0.231,
        "OT": 0.651,
        "CLS": 0.551,
        "macro": 0.56,
    }
    # generation = log-likelihood + the bracketed change
    assert constants.PUBLISHED_NUMBERS["generation"]["Mistral"]["BE"] == pytest.approx(0.643)
    assert constants.PUBLISHED_NUMBERS["generation"]["GPT4_0125"]["macro"] == 0.788
    assert "GPT4_0125" not in constants.PUBLISHED_NUMBERS["logit"]
    assert len(constants.PUBLISHED_NUMBERS["logit"]) == 19 and len(constants.PUBLISHED_NUMBERS["generation"]) == 22


def test_another_specialtys_file_copied_over_one_is_a_named_error(shared_data, tmp_path):
    # speech_pathologist's test file in biomedical_engineer's place: not a row-count warning, an error naming the
    # file, the row and the field.
    source = shared_data / "medexqa" / "test" / "speech_pathologist_test.tsv"
    target = tmp_path / "medexqa" / "test" / "biomedical_engineer_test.tsv"
    target.parent.mkdir(parents=True)
    target.write_bytes(source.read_bytes())
    with pytest.raises(DataError, match=r"biomedical_engineer_test\.tsv, row 1, field question: .*speech_pathologist"):
        loader.load(str(tmp_path), split="test", specialty="BE")
    # Its own rows after the first of another file are found too (two files concatenated).
    own = (shared_data / "medexqa" / "test" / "biomedical_engineer_test.tsv").read_bytes()
    target.write_bytes(own + source.read_bytes())
    with pytest.raises(DataError, match=r"row 144, field question"):
        loader.load(str(tmp_path), split="test", specialty="BE")


def test_each_published_file_opens_with_its_fingerprinted_question(shared_data):
    import hashlib

    for (split, code), digest in constants.FIRST_QUESTIONS.items():
        first = loader.load(str(shared_data), split=split, specialty=code)[0]["question"]
        assert hashlib.sha256(first.encode("utf-8")).hexdigest()[:16] == digest
