"""Protocol code shared by the task tree (installed as ``lm_eval_tasks.utils``).

Every module here except :mod:`lm_eval_tasks.utils.harness` is free of lm-eval imports, so the
protocols (parsing, label mapping, data validation, statistics, reporting) can be tested and
reused without the harness.
"""
