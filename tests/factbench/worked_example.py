"""FActBench's worked example: five generations, a scripted decomposer and judge, stub NLI and passages, whose
scores tests/factbench/test_pipeline.py works by hand."""

from lm_eval_tasks.utils.factbench.nli import NliResult
from lm_eval_tasks.utils.factbench.passage_store import Passage
from lm_eval_tasks.utils.factbench.records import Generation
from lm_eval_tasks.utils.openai_client import ChatEndpoint, ChatResult


class ScriptedChat:
    """A chat client that answers from a function of the last user message."""

    def __init__(self, respond):
        self.respond = respond
        self.endpoint = ChatEndpoint("http://scripted/v1", "scripted")
        self.requests: list[str] = []
        self.calls = self.cache_hits = self.failures = 0

    def complete_many(self, conversations):
        out = []
        for messages in conversations:
            content = messages[-1]["content"]
            self.requests.append(content)
            self.calls += 1
            reply = self.respond(content)
            if reply is None:
                self.failures += 1
                out.append(ChatResult(None, error="HTTP 500: boom", attempts=4))
            else:
                out.append(ChatResult(reply, attempts=1))
        return out


# Generation A has facts f1..f4, C has g1, g2, E has one (its sentence: the decomposer reply had no
# fact list); B and D have none. Verdicts by (fact, knowledge: the document or retrieved passages):
COT = {
    ("f1", "doc"): True,
    ("f2", "doc"): True,
    ("f3", "doc"): False,
    ("f4", "doc"): False,
    ("f3", "wiki"): True,
    ("f4", "wiki"): False,
    ("g1", "doc"): True,
    ("E one.", "doc"): True,
}
NLI = {
    ("f1", "doc"): "entailment",
    ("f2", "doc"): "neutral",
    ("f3", "doc"): "entailment",
    ("f4", "doc"): "contradiction",
    ("f2", "wiki"): "entailment",
    ("f4", "wiki"): "neutral",
    ("g1", "doc"): "entailment",
    ("g2", "doc"): "neutral",
    ("g2", "wiki"): "neutral",
    ("E one.", "doc"): "entailment",
}
DECOMPOSITION = {
    "A one.": "- f1\n- f2",
    "A two.": "- f3\n- f4",
    "B heading:": "No facts.",
    "C one.": "- g1",
    "C two.": "- g2",
    "E one.": "The sentence says e1.",
}


def decomposer_reply(content):
    return DECOMPOSITION[content.split("\n", 1)[1]]


def judge_reply(content):
    context, fact = content.split("Context:\n", 1)[1].split("\n\nStatement: ")
    fact = fact.split("\n\n")[0]
    knowledge = "wiki" if context.startswith("Title: ") else "doc"
    if (fact, knowledge) not in COT:
        return "I am not sure."  # g2: unparsed verdict
    return f"Reasoning.\nAnswer: {COT[(fact, knowledge)]}"


class StubNli:
    labels = ["entailment", "neutral", "contradiction"]

    def __init__(self):
        self.pairs = []
        self.computed = self.cache_hits = 0

    def check(self, pairs):
        self.pairs += pairs
        out = []
        for premise, fact in pairs:
            label = NLI[(fact, "wiki" if premise.startswith("wiki") else "doc")]
            probs = {name: 0.8 if name == label else 0.1 for name in self.labels}
            out.append(NliResult(label, label == "entailment", probs, 0, 1))
        return out

    def record(self):
        return {"model": "stub"}


class StubStore:
    def __init__(self):
        self.queries = []

    def search(self, query, k):
        self.queries.append(query)
        return [Passage(f"{query}#0", "Wiki", f"wiki passage about {query}", 1.0)]

    def record(self):
        return {"path": "stub", "n_passages": 1}


GENERATIONS = [
    Generation("rag", 0, "a", "A one. A two.", "document A"),
    Generation("rag", 1, "b", "B heading:", "document B"),
    Generation("rag", 2, "c", "C one.\nC two.", "document C"),
    Generation("rag", 3, "d", "   ", "document D"),
    Generation("rag", 4, "e", "E one.", "document E"),
]
