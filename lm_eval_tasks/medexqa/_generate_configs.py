"""Write the per-specialty task YAMLs and the two groups: ``python _generate_configs.py [OUT_DIR]`` (default: this folder)."""

import sys
from pathlib import Path

import yaml
from lm_eval_tasks.utils.medexqa.constants import SPECIALTIES
from lm_eval_tasks.utils.medexqa.prompts import logit_header

HERE = Path(__file__).parent
# Each group carries its tasks' version (the templates' metadata); README "Versions" says what changed.
LOGIT_VERSION = 2.1
GENERATION_VERSION = 2.2


def _quoted_if_multiline(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"' if "\n" in value else None)


yaml.SafeDumper.add_representer(str, _quoted_if_multiline)


def write(out_dir: Path, name: str, config: dict) -> None:
    (out_dir / name).write_text(
        yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=1000), encoding="utf-8"
    )
    print(f"wrote {name}")


def group(name: str, tasks: list[str], extra_metrics: list[str], version: float) -> dict:
    return {
        "group": name,
        "task": tasks,
        "aggregate_metric_list": [
            # The paper's MAvg: the unweighted mean of the specialty accuracies.
            {"metric": "acc", "aggregation": "mean", "weight_by_size": False},
            # Accuracy over all items, named as such.
            {"metric": "acc_micro", "aggregation": "mean", "weight_by_size": True},
            *({"metric": m, "aggregation": "mean", "weight_by_size": True} for m in extra_metrics),
        ],
        "metadata": {"version": version},
    }


def main(out_dir: Path = HERE) -> None:
    logit_tasks, generation_tasks = [], []
    for code, spec in SPECIALTIES.items():
        logit, generation = f"medexqa_logit_{code.lower()}", f"medexqa_{code.lower()}"
        write(
            out_dir,
            f"{logit}.yaml",
            {
                "include": "_logit_template_yaml",
                "task": logit,
                "task_alias": code,
                "dataset_kwargs": {"specialty": code},
                "description": logit_header(code),
            },
        )
        write(
            out_dir,
            f"{generation}.yaml",
            {
                "include": "_generation_template_yaml",
                "task": generation,
                "task_alias": code,
                "dataset_kwargs": {"specialty": code},
            },
        )
        logit_tasks.append(logit)
        generation_tasks.append(generation)
    write(out_dir, "_medexqa_logit.yaml", group("medexqa_logit", logit_tasks, [], LOGIT_VERSION))
    write(out_dir, "_medexqa.yaml", group("medexqa", generation_tasks, ["answered"], GENERATION_VERSION))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
