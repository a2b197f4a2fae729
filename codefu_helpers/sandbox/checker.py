"""Output checking, like Codeforces' default checker: compare whitespace-separated tokens, exactly.

Line breaks, runs of spaces, trailing blanks and a missing final newline never matter; letter case does.
With `float_tolerance`, two tokens that both parse as finite numbers also match when they differ by at most
that absolute *or* relative error (the usual "answer within 1e-6" statement), so "0.5" matches "0.50000001".

    >>> outputs_match(b"1 2\\n3", "1 2 3\\n")
    True
    >>> outputs_match(b"0.3333", "0.333333", float_tolerance=1e-3)
    True
"""

from __future__ import annotations

import math


def _tokens(text: bytes | str) -> list[bytes]:
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogateescape")
    return text.split()  # bytes.split() splits on ASCII whitespace, the checker's definition


def _as_float(token: bytes) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def tokens_match(got: bytes, want: bytes, float_tolerance: float | None = None) -> bool:
    if got == want:
        return True
    if float_tolerance is None:
        return False
    a, b = _as_float(got), _as_float(want)
    if a is None or b is None:
        return False
    return abs(a - b) <= float_tolerance * max(1.0, abs(b))


def outputs_match(actual: bytes | str, expected: bytes | str, float_tolerance: float | None = None) -> bool:
    """True when `actual` is an accepted answer for `expected` (token-wise, whitespace-insensitive)."""
    got, want = _tokens(actual), _tokens(expected)
    if len(got) != len(want):
        return False
    if float_tolerance is None:
        return got == want
    return all(tokens_match(g, w, float_tolerance) for g, w in zip(got, want))
