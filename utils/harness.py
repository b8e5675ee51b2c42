"""The one place where task code touches lm-eval internals (every other module is harness-free)."""

from __future__ import annotations

from lm_eval.api.task import ConfigurableTask
from lm_eval.api.utils import maybe_delimit, requires_delimiter

# Blank line between a system prompt and the user turn when there is no chat template.
PLAIN_TEXT_SYSTEM_SEPARATOR = "\n\n"


class SystemPromptTask(ConfigurableTask):
    """A task whose ``description`` is a system prompt that must reach the model unchanged.

    With a chat template, lm-eval sends the description as the system message, byte for byte.
    Without one, lm-eval glues it to the user text with no separator at all (the MedFact prompt
    ends in ``</score>``, which would run straight into ``Article:``); this class puts a blank
    line between them and changes nothing else.
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
        description = self.resolve_field(doc, self.config.description) or ""
        system = maybe_delimit(system_instruction, description, self.config.fewshot_delimiter)
        rest = prompt[len(system) :]
        if system and prompt.startswith(system) and rest and requires_delimiter(system, rest):
            return system + PLAIN_TEXT_SYSTEM_SEPARATOR + rest
        return prompt
