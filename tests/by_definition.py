"""Numbers computed straight from their definitions, one step at a time, for tests to hold the code against."""


def hand_binned_ece(confidences, correct):
    """ECE by the definition, one bin at a time: sum of (n_b / n) |accuracy_b - mean confidence_b|."""
    total = 0.0
    for k in range(10):
        low, high = k / 10, (k + 1) / 10
        members = [
            (c, y) for c, y in zip(confidences, correct, strict=True) if low <= c < high or (k == 9 and c == 1.0)
        ]
        if members:
            accuracy = sum(y for _, y in members) / len(members)
            mean_confidence = sum(c for c, _ in members) / len(members)
            total += len(members) / len(confidences) * abs(accuracy - mean_confidence)
    return total
