"""Protocol code shared by the task tree (installed as ``lm_eval_tasks.utils``).

Every module here except :mod:`lm_eval_tasks.utils.harness` is free of lm-eval imports, so the
protocols (parsing, label mapping, data validation, statistics, reporting) can be tested and
reused without the harness.
"""

import atexit

from . import vllm_exit

# Every lm-eval run of our tasks imports this package (the tasks' !function hooks live here), so a run
# on lm-eval's in-process vLLM backend gets vLLM's engine threads joined before the interpreter exits.
atexit.register(vllm_exit.join_vllm_engine_threads)
