"""MedBullets as its source publishes it (LangAGI-Lab/medbullets_op5), in synthetic rows: what the rebuild of the
MedBullets items reads."""

import csv


def medbullets_source_rows(n=308):
    """Rows in the LangAGI-Lab/medbullets_op5 format; synthetic text, answer letters in turn."""
    return [
        {
            "question": f"  Synthetic vignette {i}. What next?  ",
            "opa": f"alpha {i}",
            "opb": f"beta {i}",
            "opc": f"gamma {i}",
            "opd": f"delta {i}",
            "ope": f"epsilon {i}",
            "answer_idx": "ABCDE"[i % 5],
            "answer": f"{['alpha', 'beta', 'gamma', 'delta', 'epsilon'][i % 5]} {i}",
            "explanation": "x",
        }
        for i in range(n)
    ]


def write_csv(rows, path):
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path
