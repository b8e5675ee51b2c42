"""Benchmark settings, declared once (Benchmark.settings) and read by one function (Benchmark.read_settings)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.benchmarks import Setting, SettingKind, discover
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.factbench import BENCHMARK as FACTBENCH
from lm_eval_tasks.utils.medexqa import BENCHMARK as MEDEXQA
from lm_eval_tasks.utils.millerqa import BENCHMARK as MILLERQA
from lm_eval_tasks.utils.pubmedqa_atlas import BENCHMARK as PUBMEDQA

from tests.conftest import examples

FLAG = Setting("shuffle", SettingKind.FLAG, False, "")
COUNT = Setting("shuffle_seed", SettingKind.COUNT, 42, "")
TEXT = Setting("model_label", SettingKind.TEXT, None, "")


@pytest.mark.parametrize(
    "setting, value, parsed",
    [
        (FLAG, True, True),
        (FLAG, "yes", True),
        (FLAG, " TRUE ", True),
        (FLAG, 1, True),
        (FLAG, "0", False),
        (FLAG, "", False),
        (COUNT, 7, 7),
        (COUNT, "7", 7),
        (COUNT, " 1618 ", 1618),
        (COUNT, 0, 0),
        (COUNT, "9" * 18, 10**18 - 1),
        (TEXT, "gpt-4o", "gpt-4o"),
        (TEXT, None, None),  # not given
    ],
)
def test_each_kind_parses_what_lm_eval_hands_it(setting, value, parsed):
    assert setting.parse("x", value) == parsed and type(setting.parse("x", value)) is type(parsed)


@pytest.mark.parametrize(
    "setting, value, message",
    [
        (FLAG, "maybe", "--metadata x_shuffle='maybe': expected true or false"),
        (FLAG, 2, "--metadata x_shuffle=2: expected true or false"),
        # One validator: MillerQA read "1_000" as 1000, MedExQA refused it.
        (COUNT, "1_000", "--metadata x_shuffle_seed='1_000': expected an integer (0 or more, at most 18 digits)"),
        (COUNT, "+7", "--metadata x_shuffle_seed='+7': expected an integer (0 or more, at most 18 digits)"),
        (COUNT, -1, "--metadata x_shuffle_seed=-1: expected an integer (0 or more, at most 18 digits)"),
        (COUNT, 7.0, "--metadata x_shuffle_seed=7.0: expected an integer (0 or more, at most 18 digits)"),
        (COUNT, True, "--metadata x_shuffle_seed=True: expected an integer (0 or more, at most 18 digits)"),
        (COUNT, None, "--metadata x_shuffle_seed=None: expected an integer (0 or more, at most 18 digits)"),
        (
            COUNT,
            10**18,
            "--metadata x_shuffle_seed=<an integer of 60 bits>: expected an integer (0 or more, at most 18 digits)",
        ),
        (
            COUNT,
            "9" * 5_000,  # the old MillerQA message repeated all 5,000 digits
            f"--metadata x_shuffle_seed='{'9' * 76}...: expected an integer (0 or more, at most 18 digits)",
        ),
        (
            TEXT,
            100000.0,
            "--metadata x_model_label=100000.0 was read as a float, not text; "
            """pass it as JSON: --metadata '{"x_model_label": "..."}'""",
        ),
    ],
)
def test_a_bad_value_is_a_short_error_naming_the_setting(setting, value, message):
    with pytest.raises(DataError) as raised:
        setting.parse("x", value)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "benchmark, given, suggestion",
    [
        (MEDEXQA, "medexqa_shufle", "did you mean medexqa_shuffle?"),
        (MEDEXQA, "medexqa_shuffle_sed", "did you mean medexqa_shuffle_seed?"),
        (MEDEXQA, "medexqa_splt", "did you mean medexqa_split?"),
        (MILLERQA, "millerqa_modellabel", "did you mean millerqa_model_label?"),
        (FACTBENCH, "factbench_samplesize", "did you mean factbench_sample_size?"),
        (FACTBENCH, "factbench_zzz", "its settings are factbench_sample_size, factbench_bioasq_path."),
        (PUBMEDQA, "pubmedqa_atlas_subset", "PubMedQA has no settings."),
    ],
)
def test_a_misspelt_setting_is_refused_with_the_closest_valid_one(benchmark, given, suggestion):
    with pytest.raises(DataError) as raised:
        benchmark.read_settings({given: "true"})
    assert str(raised.value) == f"--metadata {given}: {benchmark.title} has no setting of that name; {suggestion}"


@pytest.mark.parametrize(
    "benchmark, name",
    [
        (FACTBENCH, "sample_size"),
        (FACTBENCH, "bioasq_path"),
        (MEDEXQA, "shuffle_seed"),
        (MEDEXQA, "shuffle"),
        (MILLERQA, "model_label"),
        (MILLERQA, "shuffle_seed"),
    ],
)
def test_the_unscoped_forms_are_refused_with_the_name_to_use(benchmark, name):
    with pytest.raises(DataError, match=rf"--metadata {name}='7': .* use {benchmark.name}_{name}=\.\.\."):
        benchmark.read_settings({name: "7"})


def test_settings_are_read_scoped_with_their_defaults_and_others_left_alone():
    metadata = {"factbench_sample_size": "12", "medexqa_shuffle": "yes", "pretrained": "/m", "version": 2.0}
    assert FACTBENCH.read_settings(metadata) == {"sample_size": 12, "bioasq_path": None}
    assert MEDEXQA.read_settings(metadata) == {"split": "test", "shuffle": True, "shuffle_seed": 1618}
    assert MILLERQA.read_settings(metadata) == {"model_label": None, "shuffle_seed": 42}


def test_every_declaration_is_well_formed():
    for benchmark in discover():
        names = [setting.name for setting in benchmark.settings]
        assert len(names) == len(set(names)), benchmark.name
        assert benchmark.read_settings({}) == {s.name: s.default for s in benchmark.settings}
        for setting in benchmark.settings:
            assert setting.moves, (benchmark.name, setting.name)


VALUES = st.one_of(
    st.booleans(),
    st.integers(),
    st.just(10**5000),
    st.text(max_size=40),
    st.just("9" * 5000),
    st.floats(),
    st.none(),
    st.lists(st.integers(), max_size=3),
)


@settings(max_examples=examples(300), deadline=None)
@given(
    benchmark=st.sampled_from([b for b in discover() if b.settings]),
    index=st.integers(0, 10),
    value=VALUES,
)
def test_any_value_of_any_setting_gives_its_type_or_a_short_named_error(benchmark, index, value):
    setting = benchmark.settings[index % len(benchmark.settings)]
    scoped = f"{benchmark.name}_{setting.name}"
    try:
        parsed = benchmark.read_settings({scoped: value})[setting.name]
    except DataError as error:
        assert str(error).startswith(f"--metadata {scoped}=") and len(str(error)) < 300
    else:
        expected = {SettingKind.FLAG: bool, SettingKind.COUNT: int, SettingKind.TEXT: str}[setting.kind]
        assert parsed is setting.default or type(parsed) is expected


def test_factbench_reads_its_scoped_settings_through_its_hook(demo_data_dir):
    from lm_eval_tasks.utils.factbench import tasks

    docs = tasks.custom_dataset("summ", data_dir=str(demo_data_dir), factbench_sample_size="2")["test"]
    assert len(docs) == 2
    with pytest.raises(DataError, match="use factbench_sample_size="):
        tasks.custom_dataset("summ", data_dir=str(demo_data_dir), sample_size=2)


def test_medexqa_refuses_a_misspelt_setting_through_its_hook(shared_data):
    from lm_eval_tasks.utils.medexqa import tasks

    with pytest.raises(DataError, match="did you mean medexqa_shuffle\\?"):
        tasks.custom_dataset("BE", data_dir=str(shared_data), medexqa_shufle="true")
