"""Package list only (everything else is in pyproject.toml): every benchmark package under utils/ is found,
so adding a benchmark needs no edit here. utils/ installs as lm_eval_tasks.utils, never as a bare utils."""

from setuptools import find_packages, setup

setup(
    packages=[
        "lm_eval_tasks",
        "lm_eval_tasks.utils",
        *(f"lm_eval_tasks.utils.{name}" for name in find_packages("utils")),
    ]
)
