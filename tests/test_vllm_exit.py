"""The exit hook that joins vLLM's engine output threads (``lm_eval_tasks.utils.vllm_exit``).

vLLM itself is not needed: a stand-in module at vLLM's path has a client whose output thread, once
signalled, still takes a moment to finish (as vLLM's does while it frees prompt log-probabilities).
A daemon thread still running when the interpreter shuts down is cut off, so the thread's last write
shows whether the process waited for it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from lm_eval_tasks.utils import vllm_exit

from tests.conftest import REPO

# A process that imports our task code (as every lm-eval run of our tasks does), then "runs vLLM":
# one engine client alive at exit and one already collected, each with an output thread that needs
# DRAIN_S after its stop signal to finish and then writes a line to the log file.
STAND_IN = textwrap.dedent(
    """
    import gc, sys, threading, time, types

    import lm_eval_tasks.utils  # registers the exit hook, as a task's !function import does
    from lm_eval_tasks.utils import vllm_exit

    DRAIN_S = 0.5
    log_path = sys.argv[1]

    def log(line):
        with open(log_path, "a", encoding="utf-8") as handle:
            handle.write(line + "\\n")

    class SyncMPClient:
        def __init__(self, name):
            self.name = name
            self.stop = threading.Event()
            stop = self.stop

            def drain():
                stop.wait()
                time.sleep(DRAIN_S)
                log(f"{name} drained")

            self.output_queue_thread = threading.Thread(target=drain, name=vllm_exit.OUTPUT_THREAD_NAME, daemon=True)
            self.output_queue_thread.start()

        def shutdown(self, timeout=None):
            log(f"{self.name} shutdown")
            self.stop.set()

    module = types.ModuleType(vllm_exit.ENGINE_CLIENT_MODULE)
    module.SyncMPClient = SyncMPClient
    sys.modules[vllm_exit.ENGINE_CLIENT_MODULE] = module

    alive = SyncMPClient("alive")
    collected = SyncMPClient("collected")
    collected.stop.set()  # what vLLM's finalizer does when a client is collected: signal, never join
    del collected
    gc.collect()
    log("main done")
    """
)


def test_the_exit_waits_for_every_engine_output_thread(tmp_path):
    script, log = tmp_path / "stand_in.py", tmp_path / "log.txt"
    script.write_text(STAND_IN, encoding="utf-8")
    result = subprocess.run([sys.executable, str(script), str(log)], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = log.read_text(encoding="utf-8").splitlines()
    # The live client is shut down once, by the hook, after the main program; both threads finish their work.
    assert lines[0] == "main done"
    assert sorted(lines[1:]) == ["alive drained", "alive shutdown", "collected drained"]
    assert lines.index("alive shutdown") < lines.index("alive drained")


def test_nothing_happens_in_a_process_without_vllm(monkeypatch):
    monkeypatch.delitem(sys.modules, vllm_exit.ENGINE_CLIENT_MODULE, raising=False)
    assert vllm_exit.join_vllm_engine_threads(timeout=0.1) == 0
