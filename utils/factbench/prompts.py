"""The paper's Table 5 prompts, one per task (lm_eval_tasks/factbench/README.md, "Protocol").

Line breaks follow the table's layout (one numbered point or bullet per line); the apostrophe is
ASCII (the table's typographic one is LaTeX rendering).
"""

from __future__ import annotations

from collections.abc import Mapping

from .constants import GEN, LAYSUMM, RAG, SUMM

SUMM_PROMPT = (
    "Summarize the given article by including the following key points:\n"
    "1. Objective: What is the main research question or objective of the study?\n"
    "2. Background: What is the context or rationale for the study?\n"
    "3. Methods: What study design, population, and methodologies were used?\n"
    "4. Key Findings: What are the most significant results or discoveries from the study?\n"
    "5. Conclusions: What conclusions do the authors draw from their findings?\n"
    "6. Clinical Relevance: How might the study's findings impact medical practice or patient care?\n"
    "Scientific Article: {article}\n"
    "Summary:"
)
LAYSUMM_PROMPT = (
    "You will be provided a scientific article. Your task is to write a lay summary that accurately conveys the "
    "background, methods, key findings and significance of the research in non-technical language understandable "
    "to a general audience. Guidelines for crafting a lay summary:\n"
    "• Craft a detailed summary that explains the research findings and their implications, providing thorough "
    "explanations where necessary.\n"
    "• Ensure factual accuracy and alignment with the research presented in the abstract, elaborating on key points "
    "and methodologies.\n"
    "• Highlight the main findings and their implications for real-world scenarios, delving into specific mechanisms "
    "or methodologies used in the study and their broader significance.\n"
    "• Incorporate descriptive language to explain complex concepts.\n"
    "• Maintain a balanced tone that is informative and engaging, avoiding technical jargon or overly formal "
    "language.\n"
    "• Ensure the summary provides sufficient depth and context to guide the reader through the research journey "
    "and address potential questions or areas of confusion.\n"
    "Scientific Article: {article}\n"
    "Summary:"
)
RAG_PROMPT = (
    "Give a simple answer to the question based on the provided context.\nQUESTION: {question}\nCONTEXT: {context}"
)
GEN_PROMPT = "Give a simple answer to the question based on your best knowledge.\nQUESTION: {question}"


def prompt(doc: Mapping[str, str]) -> str:
    task = doc["task"]
    if task == SUMM:
        return SUMM_PROMPT.format(article=doc["document"])
    if task == LAYSUMM:
        return LAYSUMM_PROMPT.format(article=doc["document"])
    if task == RAG:
        return RAG_PROMPT.format(question=doc["question"], context=doc["document"])
    if task == GEN:
        return GEN_PROMPT.format(question=doc["question"])
    raise ValueError(f"unknown FActBench task '{task}'")
