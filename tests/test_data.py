import csv
import re
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lm_eval_tasks.utils import data as data_layer
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.files import write_jsonl
from lm_eval_tasks.utils.medfact_bench import constants, loader, tasks

from tests.medfact_bench.synthetic import synthetic_medfact_rows
from tests.offline import refused_at_once

SMALL_COUNTS = {"scifact": 3, "healthver": 2, "medaesqa": 2, "pubmedqa-fact": 1, "bioasq-fact": 2}


@pytest.fixture(scope="module")
def small_rows(shared_data):
    return synthetic_medfact_rows(shared_data, SMALL_COUNTS)


@pytest.fixture(autouse=True)
def fresh_cache():
    loader.load_file.cache_clear()


def data_dir_with(tmp_path, rows, name="medfact.jsonl"):
    write_jsonl(rows, tmp_path / "medfact_bench" / name)
    return tmp_path


def test_loads_rows_in_order_with_their_file_position(tmp_path, small_rows):
    loaded = loader.load(str(data_dir_with(tmp_path, small_rows)))
    assert [r["claim"] for r in loaded.rows] == [r["claim"] for r in small_rows]
    assert [r["row"] for r in loaded.rows] == list(range(10))
    assert loaded.is_full_set is False
    assert loaded.system_prompt == small_rows[0]["system_prompt"]


def test_jsonl_csv_and_parquet_give_identical_rows(tmp_path, small_rows):
    write_jsonl(small_rows, tmp_path / "a" / "medfact_bench" / "x.jsonl")
    (tmp_path / "b" / "medfact_bench").mkdir(parents=True)
    with (tmp_path / "b" / "medfact_bench" / "x.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*constants.COLUMNS, constants.LABEL_SOURCE])
        writer.writeheader()
        writer.writerows(small_rows)
    (tmp_path / "c" / "medfact_bench").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(small_rows), tmp_path / "c" / "medfact_bench" / "x.parquet")
    loaded = [loader.load(str(tmp_path / d)).rows for d in "abc"]
    assert loaded[0] == loaded[1] == loaded[2]
    # the tabs, en dashes, U+2010 hyphen and trailing space of the system prompt survive every format
    assert all(loader.load(str(tmp_path / d)).system_prompt == small_rows[0]["system_prompt"] for d in "abc")


@pytest.mark.parametrize(
    "row_index, field, value, message",
    [
        (2, "claim", "", "row 3, field 'claim': empty string"),
        (1, "label", "REFUTES", "row 2, field 'label': 'REFUTES' is not one of SUPPORT, NEI, CONTRADICT"),
        (4, "dataset", "scifact-open", "row 5, field 'dataset': 'scifact-open' is not one of"),
        (3, "system_prompt", "You are helpful.", "row 4, field 'system_prompt': differs from row 1"),
        (6, "user_prompt", "Claim: x", "row 7, field 'user_prompt': is not 'Article:"),
        (0, "source", None, "row 1, field 'source': expected a string, got NoneType"),
        (5, "claim", 17, "row 6, field 'claim': expected a string, got int 17"),
        (8, "label", ["SUPPORT"], "row 9, field 'label': expected a string, got list ['SUPPORT']"),
        (3, "label_source", "expert", "row 4, field 'label_source': 'expert' is not one of gold, medv1_l3b_prediction"),
    ],
)
def test_bad_rows_are_named_by_file_row_and_field(tmp_path, small_rows, row_index, field, value, message):
    rows = [dict(r) for r in small_rows]
    rows[row_index][field] = value
    folder = data_dir_with(tmp_path, rows)
    with pytest.raises(DataError) as error:
        loader.load(str(folder))
    assert str(tmp_path / "medfact_bench" / "medfact.jsonl") in str(error.value)
    assert message in str(error.value)


def test_label_source_is_optional_but_then_on_every_row(tmp_path, small_rows):
    # The hub's file has no label_source: its docs carry none (gold labels).
    hub_like = [{k: v for k, v in r.items() if k != constants.LABEL_SOURCE} for r in small_rows]
    assert all(constants.LABEL_SOURCE not in r for r in loader.load(str(data_dir_with(tmp_path / "a", hub_like))).rows)
    kept = loader.load(str(data_dir_with(tmp_path / "b", small_rows))).rows
    assert [r[constants.LABEL_SOURCE] for r in kept] == ["synthetic"] * len(small_rows)
    mixed = [dict(r) for r in small_rows]
    del mixed[6][constants.LABEL_SOURCE]
    with pytest.raises(
        DataError, match=r"medfact.jsonl, row 7, field 'label_source': missing column\(s\) label_source"
    ):
        loader.load(str(data_dir_with(tmp_path / "c", mixed)))


def test_missing_column_is_named(tmp_path, small_rows):
    rows = [{k: v for k, v in r.items() if k != "label"} for r in small_rows]
    with pytest.raises(DataError, match=r"row 1, field 'label': missing column\(s\) label"):
        loader.load(str(data_dir_with(tmp_path, rows)))


def test_malformed_jsonl_line_is_named(tmp_path, small_rows):
    path = write_jsonl(small_rows, tmp_path / "medfact_bench" / "x.jsonl")
    path.write_text(path.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"x\.jsonl, line 11: invalid JSON"):
        loader.load(str(tmp_path))


def test_a_lone_surrogate_escape_is_named_by_file_line_and_field(tmp_path, small_rows):
    """json decodes "\\ud800" to a code point no UTF-8 prompt, tokenizer or samples file takes."""
    path = write_jsonl(small_rows, tmp_path / "medfact_bench" / "x.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = lines[3].replace('"claim": "', '"claim": "\\udc80', 1)
    path.write_text("\n" + "".join(lines), encoding="utf-8")  # a blank line first: lines, not rows, are named
    with pytest.raises(DataError, match=r"x\.jsonl, line 5, field 'claim': holds a lone surrogate \(\\udc80\)"):
        loader.load(str(tmp_path))


@pytest.mark.parametrize("blank", ["", " ", "\t \x0b\x0c", "\u2003\u3000", "\x1c\x1d\x1e\x1f\x85\xa0"])
def test_lines_of_whitespace_only_are_passed_over_and_the_others_numbered_as_lines(tmp_path, blank):
    # Blank as str.isspace has it (Unicode's too, as str.strip took it): passed over; every line keeps its number.
    path = tmp_path / "rows.jsonl"
    path.write_text(f'{{"a": 1}}\n{blank}\n{{"a": 2}}\n{blank}\n{{"a": x}}\n', encoding="utf-8")
    rows = data_layer.jsonl_rows(path)
    assert next(rows)[::2] == (1, {"a": 1}) and next(rows)[::2] == (3, {"a": 2})
    with pytest.raises(DataError, match=r"rows\.jsonl, line 5: invalid JSON"):
        next(rows)


def write_csv(path, rows, encoding="utf-8"):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding=encoding) as handle:
        writer = csv.DictWriter(handle, fieldnames=[*constants.COLUMNS, constants.LABEL_SOURCE])
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path, small_rows):
    write_csv(tmp_path / "plain" / "medfact_bench" / "x.csv", small_rows)
    write_csv(tmp_path / "bom" / "medfact_bench" / "x.csv", small_rows, encoding="utf-8-sig")
    jsonl = write_jsonl(small_rows, tmp_path / "bom_jsonl" / "medfact_bench" / "x.jsonl")
    jsonl.write_bytes(b"\xef\xbb\xbf" + jsonl.read_bytes())
    assert (tmp_path / "bom" / "medfact_bench" / "x.csv").read_bytes()[:3] == b"\xef\xbb\xbf"
    plain = loader.load(str(tmp_path / "plain")).rows
    assert loader.load(str(tmp_path / "bom")).rows == plain == loader.load(str(tmp_path / "bom_jsonl")).rows


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_non_utf8_byte_is_named_by_file_and_line(tmp_path, small_rows, suffix):
    path = tmp_path / "medfact_bench" / f"x.{suffix}"
    if suffix == "jsonl":
        write_jsonl(small_rows, path)
    else:
        write_csv(path, small_rows)
    lines = path.read_bytes().split(b"\n")
    lines[3] = b"\xff" + lines[3]  # a Latin-1 byte opening the fourth line of the file
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(DataError, match=rf"{re.escape(str(path))}, line 4: not UTF-8 \(byte 0xff"):
        loader.load(str(tmp_path))


def test_a_key_given_twice_in_a_jsonl_line_is_named(tmp_path, small_rows):
    path = write_jsonl(small_rows, tmp_path / "medfact_bench" / "x.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][:-1] + ', "label": "NEI"}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"x\.jsonl, line 2: key 'label' appears twice"):
        loader.load(str(tmp_path))


def test_a_full_size_file_missing_500_rows_loads_with_a_warning_naming_the_counts(tmp_path, shared_data, caplog):
    rows = synthetic_medfact_rows(shared_data, constants.PUBLISHED_COUNTS, constants.LABEL_TOTALS)
    partial = [row for row in rows if row["dataset"] != "pubmedqa-fact"]  # the 500 PubMedQA-Fact rows
    with caplog.at_level("WARNING"):
        loaded = loader.load(str(data_dir_with(tmp_path, partial)))
    assert len(loaded.rows) == 13774 and loaded.is_full_set is False
    assert "holds 13774 of the 14274 MedFact-Bench rows" in caplog.text
    assert "medaesqa 9106/9106, pubmedqa-fact 0/500, bioasq-fact 3425/3425" in caplog.text


def test_full_size_file_must_match_published_counts(tmp_path, shared_data):
    rows = synthetic_medfact_rows(shared_data, constants.PUBLISHED_COUNTS, constants.LABEL_TOTALS)
    assert len(rows) == 14274
    loaded = loader.load(str(data_dir_with(tmp_path, rows)))
    assert loaded.is_full_set and len(loaded.rows) == 14274
    wrong = [dict(r) for r in rows]
    wrong[0]["dataset"] = "healthver"  # scifact 339, healthver 904
    loader.load_file.cache_clear()
    with pytest.raises(
        DataError,
        match="component counts differ .*healthver: expected 903, found 904; scifact: expected 340, found 339",
    ):
        loader.load(str(data_dir_with(tmp_path / "wrong", wrong)))


def test_hub_copy_must_be_complete(shared_data, small_rows):
    with pytest.raises(DataError, match="component counts differ"):
        loader.validate_rows([dict(r) for r in small_rows], constants.HUB.label, require_full_set=True)


def test_data_dir_beats_environment_variable(tmp_path, small_rows, monkeypatch):
    folder_a = data_dir_with(tmp_path / "a", small_rows[:5])
    folder_b = data_dir_with(tmp_path / "b", small_rows)
    monkeypatch.setenv(data_layer.DATA_DIR_ENV, str(folder_b))
    assert len(loader.load(str(folder_a)).rows) == 5
    assert len(loader.load().rows) == 10


def test_data_dir_without_benchmark_folder(tmp_path):
    with pytest.raises(DataError, match=r"--metadata data_dir=.* has no folder 'medfact_bench'"):
        loader.load(str(tmp_path))


def test_several_files_are_ambiguous(tmp_path, small_rows):
    data_dir_with(tmp_path, small_rows, "a.jsonl")
    data_dir_with(tmp_path, small_rows, "b.jsonl")
    with pytest.raises(DataError, match=r"several data files for 'medfact_bench' \(a.jsonl, b.jsonl\)"):
        loader.load(str(tmp_path))


def test_offline_without_local_data_fails_fast_with_instructions(monkeypatch):
    monkeypatch.delenv(data_layer.DATA_DIR_ENV, raising=False)
    text = refused_at_once(tasks.custom_dataset, component="scifact")
    assert "hf://datasets/ncbi/MedFact-Bench@249028caf7ad5a3e63331269a606f4b2696693ed" in text
    assert "HF_HUB_OFFLINE is set" in text
    assert "--metadata data_dir=DIR" in text and "MEDEVAL_DATA_DIR" in text


def test_unreachable_hub_is_detected_quickly(monkeypatch):
    for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(flag)
    start = time.monotonic()
    reason = data_layer.hub_unreachable_reason("https://127.0.0.1:9")  # nothing listens on port 9
    assert reason is not None and "127.0.0.1:9" in reason
    assert time.monotonic() - start < 2.0


def test_training_split_is_refused(tmp_path, small_rows):
    with pytest.raises(DataError, match="evaluation-only benchmark"):
        tasks.custom_dataset(component="scifact", data_dir=str(data_dir_with(tmp_path, small_rows)), split="train")


def test_custom_dataset_selects_one_component_and_ignores_model_args(tmp_path, small_rows):
    folder = str(data_dir_with(tmp_path, small_rows))
    dataset = tasks.custom_dataset(
        component="healthver", data_dir=folder, pretrained="x", dtype="bfloat16", config_source="y.yaml", version=1.0
    )
    assert list(dataset) == ["test"]
    assert dataset["test"]["dataset"] == ["healthver", "healthver"]
    assert dataset["test"]["row"] == [3, 4]


def test_missing_component_says_which_tasks_can_run(demo_data_dir):
    with pytest.raises(DataError) as error:
        tasks.custom_dataset(component="medaesqa", data_dir=str(demo_data_dir))
    assert "holds: scifact 340, healthver 1823" in str(error.value)
    assert "--tasks medfact_bench_scifact,medfact_bench_healthver" in str(error.value)


def test_demo_file_is_valid_and_labelled_from_its_sources(demo_data_dir, shared_data):
    loaded = loader.load(str(demo_data_dir))
    scifact = [r for r in loaded.rows if r["dataset"] == "scifact"]
    healthver = [r for r in loaded.rows if r["dataset"] == "healthver"]
    assert len(scifact) == 340 and len(healthver) == 1823
    # Med-V1-L3B's predictions as stand-in labels: 2->91, 1->51 SUPPORT; 0->125 NEI; -1->8, -2->65 CONTRADICT
    assert {label: sum(r["label"] == label for r in scifact) for label in constants.LABELS} == {
        "SUPPORT": 142,
        "NEI": 125,
        "CONTRADICT": 73,
    }
    # every row says where its label comes from, and the loader keeps it
    assert {r[constants.LABEL_SOURCE] for r in scifact} == {"medv1_l3b_prediction"}
    assert {r[constants.LABEL_SOURCE] for r in healthver} == {"gold"}
    # HealthVer test: Supports 671 / Refutes 425 / Neutral 727 (PROVENANCE.md)
    assert {label: sum(r["label"] == label for r in healthver) for label in constants.LABELS} == {
        "SUPPORT": 671,
        "NEI": 727,
        "CONTRADICT": 425,
    }
    import hashlib

    assert hashlib.sha256(loaded.system_prompt.encode()).hexdigest() == constants.SYSTEM_PROMPT_SHA256


def test_the_hub_probe_goes_through_the_proxy_the_environment_names(monkeypatch):
    import socket as socket_module

    from lm_eval_tasks.utils.medexqa import explanation_metrics

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    for name in ("NO_PROXY", "no_proxy", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = socket_module.socket()  # a listening socket stands for the proxy: the probe only connects
    proxy.bind(("127.0.0.1", 0))
    proxy.listen(8)
    try:
        port = proxy.getsockname()[1]
        monkeypatch.setenv("HTTPS_PROXY", f"http://user:pw-secret@127.0.0.1:{port}")
        monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")  # no such host: only the proxy can be reached
        assert data_layer.connect_address("https://hub.invalid") == (
            "127.0.0.1",
            port,
            f"hub.invalid:443 through the proxy 127.0.0.1:{port}",
        )
        assert data_layer.hub_unreachable_reason() is None
        assert explanation_metrics.hub_offline_reason() is None
        monkeypatch.setenv("NO_PROXY", "example.org,.invalid")  # the host is excluded: probed directly
        assert data_layer.connect_address("https://hub.invalid")[:2] == ("hub.invalid", 443)
        assert data_layer.hub_unreachable_reason().startswith("cannot reach hub.invalid:443 (")
        assert explanation_metrics.hub_offline_reason().startswith("hub.invalid cannot be reached (")
        monkeypatch.delenv("NO_PROXY")
        proxy.close()  # the proxy is down: said so, and its password never
        reason = data_layer.hub_unreachable_reason()
        assert reason.startswith(f"cannot reach hub.invalid:443 through the proxy 127.0.0.1:{port} (")
        assert "pw-secret" not in reason
    finally:
        proxy.close()
