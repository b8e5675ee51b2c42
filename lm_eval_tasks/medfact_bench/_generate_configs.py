"""Write one task YAML per MedFact-Bench component: ``python _generate_configs.py [OUT_DIR]`` (default: this folder)."""

import sys
from pathlib import Path

import yaml
from lm_eval_tasks.utils.medfact_bench.constants import TASK_COMPONENTS

HERE = Path(__file__).parent


def main(out_dir: Path = HERE) -> None:
    for task, component in TASK_COMPONENTS.items():
        config = {
            "include": "_default_template_yaml",
            "task": task,
            "task_alias": component,
            "dataset_kwargs": {"component": component},
        }
        (out_dir / f"{task}.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        print(f"wrote {task}.yaml")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
