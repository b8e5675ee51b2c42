"""Write one task YAML per FActBench task: ``python _generate_configs.py [OUT_DIR]`` (default: this folder)."""

import sys
from pathlib import Path

import yaml
from lm_eval_tasks.utils.factbench.constants import MAX_GEN_TOKS, TASK_NAMES, TASK_TITLES

HERE = Path(__file__).parent


def main(out_dir: Path = HERE) -> None:
    for component, task in TASK_NAMES.items():
        config = {
            "include": "_default_template_yaml",
            "task": task,
            "task_alias": TASK_TITLES[component],
            "dataset_kwargs": {"factbench_task": component},
            # Greedy; no stop string: summaries and answers run over several paragraphs.
            "generation_kwargs": {
                "until": [],
                "do_sample": False,
                "temperature": 0.0,
                "max_gen_toks": MAX_GEN_TOKS[component],
            },
        }
        (out_dir / f"{task}.yaml").write_text(
            yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
        print(f"wrote {task}.yaml")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
