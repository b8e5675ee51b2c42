"""prepare-model saves float32 on any hardware; ``auto`` picks bfloat16 only where it is native; the choice is
printed with its reason."""

import re
from pathlib import Path

import pytest
from lm_eval_tasks.utils import models

from lm_eval_tasks.__main__ import build_parser, main

AMX = {"avx2", "avx512f", "amx_bf16", "amx_tile"}
AVX2_ONLY = {"fpu", "sse4_2", "avx2"}


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"fpu", "avx2", "avx512f"}, "float32"),  # AVX-512 without its BF16 extension: emulated bf16
        ({"avx2", "avx512_bf16"}, "bfloat16"),
        ({"amx_bf16", "amx_tile"}, "bfloat16"),
        (set(), "float32"),  # flags unknown (not Linux): the safe choice
    ],
)
def test_auto_picks_bfloat16_only_where_the_cpu_has_it_natively(monkeypatch, flags, expected):
    monkeypatch.setattr(models, "_cpu_flags", lambda: frozenset(flags))
    assert models.choose_dtype("auto") == expected
    assert models.dtype_reason(expected).startswith(f"dtype {expected} (auto: this CPU has")
    assert models.dtype_reason("float32", requested="float32").startswith("dtype float32 (as asked; this CPU has")


@pytest.mark.parametrize("flags", [AMX, AVX2_ONLY])
def test_prepare_model_defaults_to_float32_whatever_the_cpu(monkeypatch, flags):
    monkeypatch.setattr(models, "_cpu_flags", lambda: frozenset(flags))
    assert build_parser().parse_args(["prepare-model", "smollm2"]).dtype == "float32"


@pytest.mark.parametrize(
    ("flags", "argv", "saved", "reason"),
    [
        (
            AMX,
            [],
            "float32",
            "dtype float32 (the default on any hardware: bfloat16 ties single-token answers; this CPU has native "
            "bfloat16; --dtype bfloat16 or auto for speed)",
        ),
        (
            AVX2_ONLY,
            [],
            "float32",
            "dtype float32 (the default on any hardware: bfloat16 ties single-token answers; this CPU has no native "
            "bfloat16; bfloat16 would be emulated here, far slower)",
        ),
        (
            AMX,
            ["--dtype", "auto"],
            "bfloat16",
            "dtype bfloat16 (auto: this CPU has native bfloat16; override with --dtype)",
        ),
        (
            AVX2_ONLY,
            ["--dtype", "auto"],
            "float32",
            "dtype float32 (auto: this CPU has no native bfloat16; override with --dtype)",
        ),
        (AVX2_ONLY, ["--dtype", "bfloat16"], "bfloat16", "dtype bfloat16 (as asked; this CPU has no native bfloat16)"),
    ],
)
def test_prepare_model_saves_the_dtype_it_prints(monkeypatch, capsys, tmp_path, flags, argv, saved, reason):
    monkeypatch.setattr(models, "_cpu_flags", lambda: frozenset(flags))
    converted = []
    monkeypatch.setattr(models, "prepare_model", lambda name, out, dtype: converted.append((name, dtype)) or tmp_path)
    assert main(["prepare-model", "smollm2", *argv]) == 0
    assert converted == [("smollm2", saved)]
    out, err = capsys.readouterr()
    assert (out, err) == (f"{tmp_path}\n", f"{reason}\n")


def test_an_explicit_dtype_wins_and_a_wrong_one_is_refused(monkeypatch):
    monkeypatch.setattr(models, "_cpu_flags", lambda: frozenset())
    assert models.choose_dtype("bfloat16") == "bfloat16"
    with pytest.raises(ValueError, match="expected auto or one of"):
        models.choose_dtype("bf16")


def test_cpu_flags_are_read_from_this_machine():
    flags = models._cpu_flags()
    assert isinstance(flags, frozenset) and all(" " not in flag for flag in flags)


def code_lines(path: Path) -> list[str]:
    """An example's lines, or the lines inside a Markdown file's fenced code blocks."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if path.suffix != ".md":
        return lines
    fenced, inside = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            inside = not inside
        elif inside:
            fenced.append(line)
    return fenced


def test_no_command_we_document_or_ship_hard_codes_bfloat16():
    # On a CPU without native bfloat16 a hard-coded bf16 runs about 100x slower: commands say dtype=auto.
    repo = Path(__file__).resolve().parents[1]
    files = [*repo.glob("*.md"), *repo.glob("lm_eval_tasks/*/README.md"), *repo.glob("examples/*.*")]
    assert len(files) > 10
    offenders = [
        f"{path.relative_to(repo)}: {line.strip()}"
        for path in files
        for line in code_lines(path)
        if re.search(r"dtype=bfloat16|default=\"bfloat16\"", line)
    ]
    assert offenders == []
