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


def protocol(out_dir: Path, rotated: bool) -> None:
    """Both protocols' specialty tasks and groups; ``rotated``: the ``*_rotated`` ones, every item once per cyclic
    rotation of its options (utils/rotation.py)."""
    suffix = "_rotated" if rotated else ""
    logit_tasks, generation_tasks = [], []
    for code in SPECIALTIES:
        logit, generation = f"medexqa_logit{suffix}_{code.lower()}", f"medexqa{suffix}_{code.lower()}"
        kwargs = {"specialty": code, **({"rotated": True} if rotated else {})}
        write(
            out_dir,
            f"{logit}.yaml",
            {
                "include": "_logit_template_yaml",
                "task": logit,
                "task_alias": code,
                "dataset_kwargs": kwargs,
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
                "dataset_kwargs": kwargs,
            },
        )
        logit_tasks.append(logit)
        generation_tasks.append(generation)
    logit_group, generation_group = f"medexqa_logit{suffix}", f"medexqa{suffix}"
    write(out_dir, f"_{logit_group}.yaml", group(logit_group, logit_tasks, [], LOGIT_VERSION))
    write(
        out_dir,
        f"_{generation_group}.yaml",
        group(generation_group, generation_tasks, ["answered"], GENERATION_VERSION),
    )


def main(out_dir: Path = HERE) -> None:
    protocol(out_dir, rotated=False)
    protocol(out_dir, rotated=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
