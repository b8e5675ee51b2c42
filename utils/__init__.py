"""Protocol code shared by the task tree (installed as ``lm_eval_tasks.utils``).

Every module here except :mod:`lm_eval_tasks.utils.harness` is free of lm-eval imports, so the
protocols (parsing, label mapping, data validation, statistics, reporting) can be tested and
reused without the harness.
"""

import atexit
import logging

from . import vllm_exit


class _CustomDatasetNotice(logging.Filter):
    """Drops lm-eval's "Custom kwargs can be passed to `--metadata`" line: it is logged once per task for every task
    whose data comes from a ``custom_dataset`` function (all of ours, which already take ``--metadata``), five
    times in a run of five tasks, and tells our users nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Custom kwargs can be passed to `--metadata`" not in record.getMessage()


logging.getLogger("lm_eval.api.task").addFilter(_CustomDatasetNotice())

# Every lm-eval run of our tasks imports this package (the tasks' !function hooks live here), so a run
# on lm-eval's in-process vLLM backend gets vLLM's engine threads joined before the interpreter exits.
atexit.register(vllm_exit.join_vllm_engine_threads)
