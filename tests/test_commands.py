"""The command line as a user meets it: `--help` lists every command, printed paths work from any folder."""

import re
from pathlib import Path

import pytest

from lm_eval_tasks.__main__ import main

COMMANDS = (
    "report",
    "compare",
    "leaderboard",
    "prepare-model",
    "batch-size",
    "serve",
    "assets",
    "demo-data",
    "factbench-index",
    "factbench-check",
    "factbench-table",
    "medexqa-explanations",
    "setup-nltk-data",
    "millerqa-rebuild-medbullets",
    "pubmedqa-probe",
)


def test_help_lists_every_command_with_its_usage(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    lines = [line for line in text.splitlines() if line.startswith("python -m lm_eval_tasks ")]
    assert [re.match(r"python -m lm_eval_tasks ([a-z-]+)", line)[1] for line in lines] == ["--include-path", *COMMANDS]
    # each line is the command's own usage, without argparse's [-h]
    assert "python -m lm_eval_tasks report [--out OUT] [--each] [--tokenizer NAME_OR_PATH|run] path" in lines
    assert "python -m lm_eval_tasks demo-data --shared SHARED --out OUT" in lines
    assert not any("[-h]" in line for line in lines)


def test_demo_data_prints_an_absolute_path(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["demo-data", "--shared", str(shared_data), "--out", "demo"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == tmp_path.resolve() / "demo"
    assert (printed / "medfact_bench").is_dir()
