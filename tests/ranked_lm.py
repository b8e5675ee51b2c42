"""A deterministic lm-eval model that can run as one rank of a data-parallel job, registered as ``hashed-scripted``.

Every reply and log-likelihood is a function of the request text alone (a SHA-256 digest), so any
process, rank or rerun answers a request identically, and a request answered by the wrong doc shows.

Data parallelism follows lm-eval 0.4.13's contract (``lm_eval/evaluator.py``): the evaluator shards
docs with ``rank``/``world_size``, pads the shorter ranks with ``all_gather`` of their request counts
(on ``device``), synchronises with ``barrier`` and collects samples and metrics with
``gather_object(obj, dst=0)``. Here those four are plain ``torch.distributed`` calls on a gloo
group, so ``torchrun --nproc_per_node N`` runs it on CPU (``accelerate launch --cpu --num_processes N``
starts one process only, without MPI).

Run as a module it is lm-eval's own CLI with this model registered (lm-eval has no plugin discovery
for models)::

    torchrun --nproc_per_node 2 -m tests.ranked_lm run --model hashed-scripted --tasks ... --include_path ...
"""

from __future__ import annotations

import hashlib
import json
import os

import torch
import torch.distributed as dist
from lm_eval.api.registry import register_model

from tests.scripted_lm import ScriptedLM

MODEL_NAME = "hashed-scripted"


class ScriptedCrash(RuntimeError):
    """Raised by a model told to fail after a number of requests (a simulated crash)."""


def _digest(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()[:8], "big")


def hashed_reply(prompt: str) -> str:
    """Empty for one prompt in eight; else a letter (MillerQA JSON, then stated) and a MedFact score block.

    Letter, score (-3..2, -3 being unparseable) and length vary with the digest, so every task's
    metrics take several values and a sum over the wrong items shows.
    """
    digest = _digest(prompt)
    if digest % 8 == 0:
        return ""
    letter = "ABCD"[digest >> 3 & 3]
    score = (digest >> 5) % 6 - 3
    words = " ".join(["evidence"] * (digest >> 8 & 15))
    answer = json.dumps({"selected_answer": letter, "confidence": (digest >> 12) % 101})
    return f"{answer}\nThe answer is {letter}.\n<think>{words}</think>\n<score>{score}</score> trailing text"


def hashed_loglikelihood(context: str, continuation: str) -> float:
    return -(_digest(context, continuation) % 10_000) / 1_000


def cut_at_stop_strings(text: str, until: list[str] | str | None) -> str:
    """What a real model returns: the text before the first stop string (lm-eval's ``until``)."""
    stops = [until] if isinstance(until, str) else until or []
    cuts = [text.index(stop) for stop in stops if stop and stop in text]
    return text[: min(cuts)] if cuts else text


@register_model(MODEL_NAME)
class HashedLM(ScriptedLM):
    """Hash-scripted replies; one rank of a gloo group when launched with ``WORLD_SIZE`` > 1.

    ``fail_after=K`` raises :class:`ScriptedCrash` on request K+1 (a crash mid-run).
    ``report_partial`` hands each answer to lm-eval's cache hook as it is made, as lm-eval's HF, vLLM
    and API models do; without it only the finished list returned to ``CachingLM`` is cached.
    """

    def __init__(self, fail_after: int | None = None, report_partial: bool = True, **_lm_eval_defaults: object):
        super().__init__(reply=hashed_reply, loglikelihood=hashed_loglikelihood)
        self.fail_after = fail_after
        self.report_partial = report_partial
        self.served: list[tuple[str, tuple]] = []  # (method, request args), in the order answered
        self._device = torch.device("cpu")
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            if not dist.is_initialized():
                dist.init_process_group("gloo")
            self._rank, self._world_size = dist.get_rank(), dist.get_world_size()

    def generate_until(self, requests):
        return [self._serve("generate_until", request) for request in requests]

    def loglikelihood(self, requests):
        return [self._serve("loglikelihood", request) for request in requests]

    def _serve(self, method: str, request):
        if self.fail_after is not None and len(self.served) >= self.fail_after:
            raise ScriptedCrash(f"scripted crash after {self.fail_after} requests")
        (answer,) = getattr(ScriptedLM, method)(self, [request])
        if method == "generate_until":
            answer = cut_at_stop_strings(answer, request.args[1].get("until"))
        self.served.append((method, request.args))
        if self.report_partial:
            self.cache_hook.add_partial(method, request.args, answer)
        return answer

    # lm-eval's data-parallel primitives (see the module docstring), on the gloo group.

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.world_size == 1:
            return tensor
        pieces = [torch.zeros_like(tensor) for _ in range(self.world_size)]
        dist.all_gather(pieces, tensor)
        # the evaluator gathers 0-d counts: stack them into one vector, one entry per rank
        return torch.stack(pieces)

    def gather_object(self, obj, dst: int = 0):
        if self.world_size == 1:
            return [obj]
        gathered = [None] * self.world_size if self.rank == dst else None
        dist.gather_object(obj, gathered, dst=dst)
        return gathered

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()


if __name__ == "__main__":
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()
