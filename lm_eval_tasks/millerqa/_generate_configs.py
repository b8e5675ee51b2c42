"""Write every MillerQA task and group YAML: ``python _generate_configs.py [OUT_DIR]`` (default: this folder).

Six families (``utils.millerqa.constants.FAMILIES``: four, and the generative and log-likelihood ones
with rotated options), each with one leaf task per benchmark, one group per
competency dimension, ``<prefix>`` over the 23 shipped benchmarks and ``<prefix>_with_medbullets``
over all 24 (it needs the user-rebuilt MedBullets file).
"""

import sys
from pathlib import Path

import yaml
from lm_eval_tasks.utils.millerqa.constants import BENCHMARKS, DIMENSIONS, FAMILIES, MEDBULLETS

HERE = Path(__file__).parent
TEMPLATES = {
    "generate": "_generate_template_yaml",
    "choice_only": "_choiceonly_template_yaml",
    "loglikelihood": "_loglikelihood_template_yaml",
}
WITH_MEDBULLETS = "with_medbullets"


def aggregates(variant: str) -> list[dict]:
    """Unsuffixed metrics are macro means over benchmarks; `_micro` ones are size-weighted."""
    if variant == "loglikelihood":
        macro, micro = ["acc"], ["acc_micro"]
    else:
        macro, micro = ["acc", "acc_all", "answered"], ["acc_all_micro", "answered_micro"]
    return [{"metric": m, "aggregation": "mean", "weight_by_size": False} for m in macro] + [
        {"metric": m, "aggregation": "mean", "weight_by_size": True} for m in micro
    ]


def write(out_dir: Path, name: str, config: dict) -> None:
    (out_dir / name).write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")


def group(name: str, alias: str, tasks: list[str], variant: str) -> dict:
    return {
        "group": name,
        "group_alias": alias,
        "task": tasks,
        "aggregate_metric_list": aggregates(variant),
        "metadata": {"version": 2.0},  # as the tasks (_default_template_yaml)
    }


def main(out_dir: Path = HERE) -> None:
    for old in out_dir.glob("*.yaml"):
        old.unlink()
    for family in FAMILIES:
        p = family.prefix
        for stem in BENCHMARKS:
            write(
                out_dir,
                f"{p}_{stem}.yaml",
                {
                    "include": TEMPLATES[family.variant],
                    "task": f"{p}_{stem}",
                    "task_alias": stem,
                    "dataset_kwargs": {
                        "set_name": stem,
                        "release": family.release,
                        **({"rotated": True} if family.rotated else {}),
                    },
                },
            )
        for dim, (title, stems) in DIMENSIONS.items():
            shipped = [f"{p}_{s}" for s in stems if s != MEDBULLETS]
            write(out_dir, f"_{p}_{dim}.yaml", group(f"{p}_{dim}", title, shipped, family.variant))
            if len(shipped) < len(stems):
                write(
                    out_dir,
                    f"_{p}_{dim}_{WITH_MEDBULLETS}.yaml",
                    group(
                        f"{p}_{dim}_{WITH_MEDBULLETS}",
                        f"{title} (with MedBullets)",
                        [f"{p}_{s}" for s in stems],
                        family.variant,
                    ),
                )
        dims = list(DIMENSIONS)
        write(
            out_dir,
            f"_{p}.yaml",
            group(p, f"{family.title}, 23 shipped benchmarks", [f"{p}_{d}" for d in dims], family.variant),
        )
        full = [f"{p}_{d}_{WITH_MEDBULLETS}" if MEDBULLETS in DIMENSIONS[d][1] else f"{p}_{d}" for d in dims]
        write(
            out_dir,
            f"_{p}_{WITH_MEDBULLETS}.yaml",
            group(f"{p}_{WITH_MEDBULLETS}", f"{family.title}, all 24 benchmarks", full, family.variant),
        )
    print(f"wrote {len(list(out_dir.glob('*.yaml')))} YAML files")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
