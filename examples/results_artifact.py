"""Record a run whose figures the documentation quotes: ``examples/results/NAME/`` with the run's report.json and a
manifest.json (the command, package and lm-eval versions, the machine and its load, the date, the sha256 of the
report and of the results and samples files it read). ``examples/results_table.py`` prints the README's table from these folders.

    python examples/results_artifact.py out/quickstart/report/report.json quickstart --command "bash examples/quickstart.sh"

The machine is the one the run reports (lm-eval's ``pretty_env_info`` in the results file): its CPU model, core
count and the flags that decide bfloat16 speed (native bfloat16 needs AVX-512-BF16 or AMX). Its load is the
1-, 5- and 15-minute load average when the artifact is written: record it right after the run, so that the longer
averages cover the run's end (other work on the machine slows a run and changes no number).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

from lm_eval_tasks.utils.data import read_json
from lm_eval_tasks.utils.files import write_atomically

RESULTS = Path(__file__).resolve().parent / "results"
BF16_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")


def machine(env_info: str) -> dict:
    """CPU model, logical CPUs and the bfloat16-relevant flags from torch's collect_env text."""
    fields = dict(re.findall(r"^(Model name|CPU\(s\)|Flags):\s*(.*)$", env_info, flags=re.MULTILINE))
    flags = set(fields.get("Flags", "").split())
    return {
        "cpu": fields.get("Model name"),
        "cpus": int(fields["CPU(s)"]) if fields.get("CPU(s)", "").isdigit() else None,
        "bf16_flags": {flag: flag in flags for flag in BF16_FLAGS} if flags else None,
    }


def manifest(report_path: Path, command: str) -> tuple[dict, bytes]:
    """The manifest of a report, and the report's bytes; the files the report read must still hash as it recorded."""
    raw = report_path.read_bytes()
    report = json.loads(raw)
    run = report["run"]
    results_file = Path(run["results_file"])
    stamp = results_file.stem.removeprefix("results_")
    read = {results_file: run["results_sha256"]}
    read.update(
        {results_file.parent / f"samples_{task}_{stamp}.jsonl": sha for task, sha in run["samples_sha256"].items()}
    )
    for path, sha256 in read.items():
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
            raise SystemExit(f"{path}: changed since the report read it; report the run again")
    results = read_json(results_file)
    return {
        "command": command,
        "package": report["generated_by"],
        "lm_eval_version": run["lm_eval_version"],
        "transformers_version": run["transformers_version"],
        "torch_version": run["torch_version"],
        "dtype": run["dtype"],
        "chat_template_applied": run["chat_template_applied"],
        "machine": machine(results.get("pretty_env_info") or ""),
        "load_average": [round(load, 2) for load in os.getloadavg()],
        "date": run["date"],
        "report_sha256": hashlib.sha256(raw).hexdigest(),
        "results_file": results_file.name,
        "results_sha256": run["results_sha256"],
        "samples_sha256": run["samples_sha256"],
    }, raw


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path, help="the run's report.json (python -m lm_eval_tasks report)")
    parser.add_argument("name", help="the folder under examples/results/")
    parser.add_argument("--command", required=True, help="the command that made the run, as a user would type it")
    args = parser.parse_args(argv)
    data, raw = manifest(args.report, args.command)
    text = json.dumps(data, indent=2) + "\n"
    write_atomically(RESULTS / args.name, {"report.json": raw, "manifest.json": text.encode("utf-8")})
    print(RESULTS / args.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
