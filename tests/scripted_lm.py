"""An lm-eval model that answers from a script, for exact metric checks through the real evaluator."""

from __future__ import annotations

import json
from collections.abc import Callable

from lm_eval.api.model import LM


class ScriptedLM(LM):
    """``reply(prompt) -> text`` for generation; ``loglikelihood(context, continuation) -> float``.

    With a chat template the prompt it sees is the JSON list of messages, so tests can inspect
    exactly what a chat model would receive.
    """

    def __init__(
        self, reply: Callable[[str], str] | None = None, loglikelihood: Callable[[str, str], float] | None = None
    ):
        super().__init__()
        self._reply = reply
        self._loglikelihood = loglikelihood
        self.prompts: list[str] = []
        self.gen_kwargs: list[dict] = []

    def generate_until(self, requests):
        out = []
        for request in requests:
            prompt, kwargs = request.args
            self.prompts.append(prompt)
            self.gen_kwargs.append(kwargs)
            out.append(self._reply(prompt))
        return out

    def loglikelihood(self, requests):
        out = []
        for request in requests:
            context, continuation = request.args
            self.prompts.append(context)
            out.append((self._loglikelihood(context, continuation), False))
        return out

    def loglikelihood_rolling(self, requests):
        raise NotImplementedError

    def apply_chat_template(self, chat_history, add_generation_prompt=True):
        return json.dumps(chat_history, ensure_ascii=False)

    @property
    def tokenizer_name(self) -> str:
        return "scripted"
