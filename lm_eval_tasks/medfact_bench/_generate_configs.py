"""Write one task YAML per MedFact-Bench component (run from this folder after changing the list)."""

from pathlib import Path

import yaml

from lm_eval_tasks.utils.medfact import TASK_COMPONENTS

HERE = Path(__file__).parent

if __name__ == "__main__":
    for task, component in TASK_COMPONENTS.items():
        config = {
            "include": "_default_template_yaml",
            "task": task,
            "task_alias": component,
            "dataset_kwargs": {"component": component},
        }
        (HERE / f"{task}.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        print(f"wrote {task}.yaml")
