"""The one place where task code touches lm-eval's classes (every other module is harness-free).

What is used of lm-eval here, and why:

- The generation task class, subclassed by :class:`SystemPromptTask` (the YAML's ``class:`` route, lm-eval's
  documented way to give a task Python behaviour). lm-eval 0.4.x builds every YAML task as ``ConfigurableTask``;
  0.5 builds one class per output type and keeps ``ConfigurableTask`` as their base, whose ``construct_requests``
  is abstract (a subclass of it would build no requests), so there the base is ``GenerateTask``.
- ``fewshot_context`` (the prompt), ``config.description`` and ``config.fewshot_delimiter``: the task API both
  lines share.
- The logger name ``lm_eval.api.task`` (utils/__init__.py filters one notice of it): a name, not an import; where
  lm-eval logs from another module (0.5) the notice is simply not filtered.

Nothing else: lm-eval's private helpers (``lm_eval.api.utils`` in 0.4.x, ``lm_eval.api._utils`` in 0.5) are not
imported; the two rules used of them are written out below and pinned by the prompt tests at both ends of the
supported range (tests/medfact_bench, tests/millerqa).
"""

from __future__ import annotations

try:
    from lm_eval.api.task import GenerateTask as _GenerationTask  # lm-eval 0.5
except ImportError:
    from lm_eval.api.task import ConfigurableTask as _GenerationTask  # lm-eval 0.4.x

# Blank line between a system prompt and the user turn when there is no chat template.
PLAIN_TEXT_SYSTEM_SEPARATOR = "\n\n"


def touch_without_whitespace(prefix: str, suffix: str) -> bool:
    """True when neither string has whitespace where they meet (an empty prefix meets nothing): where lm-eval
    puts a delimiter between two parts of a prompt."""
    return bool(prefix) and bool(suffix) and not (prefix[-1].isspace() or suffix[0].isspace())


def system_text(system_instruction: str | None, description: str | None, delimiter: str) -> str:
    """The system part of a prompt as lm-eval joins it: the system instruction, then the description, with
    ``delimiter`` between them where they touch without whitespace."""
    system_instruction, description = system_instruction or "", description or ""
    joint = delimiter if touch_without_whitespace(system_instruction, description) else ""
    return system_instruction + joint + description


class SystemPromptTask(_GenerationTask):
    """A task whose ``description`` is a system prompt that must reach the model unchanged.

    With a chat template, lm-eval sends the description as the system message, byte for byte.
    Without one, lm-eval glues it to the user text with no separator at all (the MedFact prompt
    ends in ``</score>``, which would run straight into ``Article:``); this class puts a blank
    line between them and changes nothing else. ``description`` names the doc field that holds the
    system prompt (our YAML's ``description: system_prompt``), else it is the text itself.
    """

    def __init__(self, config=None, **kwargs):
        # lm-eval hands a `class:` task its whole YAML, including the `class` key TaskConfig rejects.
        super().__init__(config={k: v for k, v in (config or {}).items() if k != "class"}, **kwargs)

    def fewshot_context(
        self,
        doc,
        num_fewshot,
        system_instruction=None,
        apply_chat_template=False,
        fewshot_as_multiturn=False,
        chat_template=None,
        gen_prefix=None,
    ):
        prompt = super().fewshot_context(
            doc,
            num_fewshot=num_fewshot,
            system_instruction=system_instruction,
            apply_chat_template=apply_chat_template,
            fewshot_as_multiturn=fewshot_as_multiturn,
            chat_template=chat_template,
            gen_prefix=gen_prefix,
        )
        if apply_chat_template and chat_template:
            return prompt
        description = self.config.description
        description = doc[description] if description in doc else description
        system = system_text(system_instruction, description, self.config.fewshot_delimiter)
        rest = prompt[len(system) :]
        if system and prompt.startswith(system) and touch_without_whitespace(system, rest):
            return system + PLAIN_TEXT_SYSTEM_SEPARATOR + rest
        return prompt
