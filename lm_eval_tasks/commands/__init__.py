"""Subcommands of ``python -m lm_eval_tasks``: each module here adds its own with ``register(commands)``."""

# In --help order; a benchmark with commands adds its module here.
MODULES = ("core", "pubmedqa", "millerqa", "medexqa", "factbench")
