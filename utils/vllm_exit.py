"""A clean exit (rc 0) for a process that ran vLLM in-process, as lm-eval's ``--model vllm`` does.

vLLM's synchronous engine client reads the engine's replies on a daemon thread. At exit it signals
that thread to stop but never joins it, so the interpreter can shut down while the thread is still
freeing tensors (prompt log-probabilities above all); about one run in seven then aborts after the
results are written (SIGABRT, rc 134, "terminate called without an active exception"). This module's
exit hook, registered when our task code is imported, shuts every live client down and waits for
those threads. It imports nothing from vLLM and does nothing in a process that never loaded vLLM.
"""

from __future__ import annotations

import gc
import sys
import threading

# Where vLLM defines its synchronous multi-process client, and the name of the thread that client starts.
ENGINE_CLIENT_MODULE = "vllm.v1.engine.core_client"
ENGINE_CLIENT_CLASS = "SyncMPClient"
OUTPUT_THREAD_NAME = "EngineCoreOutputQueueThread"
# A signalled thread finishes in milliseconds; the bound only keeps a wedged engine from hanging the exit.
JOIN_TIMEOUT_S = 60.0


def join_vllm_engine_threads(timeout: float = JOIN_TIMEOUT_S) -> int:
    """Shut down every live vLLM engine client and join their output threads; returns how many threads were joined.

    A client already collected has signalled its thread; one still alive is shut down here (its own
    ``shutdown``, which signals the thread). Either way the thread is then joined.
    """
    core_client = sys.modules.get(ENGINE_CLIENT_MODULE)
    client_class = getattr(core_client, ENGINE_CLIENT_CLASS, None)
    if client_class is None:
        return 0
    # type() rather than isinstance(): never runs a foreign object's __class__ or __getattr__.
    for client in [obj for obj in gc.get_objects() if issubclass(type(obj), client_class)]:
        client.shutdown()
    threads = [thread for thread in threading.enumerate() if thread.name == OUTPUT_THREAD_NAME]
    for thread in threads:
        thread.join(timeout)
    return len(threads)
