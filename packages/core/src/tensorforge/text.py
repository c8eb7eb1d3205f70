"""Text for people: counted nouns and wrapping that never splits a word or a flag.

``textwrap``'s defaults break at hyphens (``--input-`` / ``shape``) and cut words longer than
a line (a ``-mattr=+avx,+avx2,...`` list); every message and help text of tensorforge wraps
with :func:`wrap` instead, which breaks only at spaces and after the commas of a long list.
"""

from __future__ import annotations

import argparse
import re
import textwrap

__all__ = ["HelpFormatter", "plural", "wrap"]


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 kernel"``, ``"3 kernels"`` (``many`` for irregular plurals: ``"entries"``)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


class _Wrapper(textwrap.TextWrapper):
    """Breaks at whitespace, and after the commas of a comma list too long for a third of a
    line (``+avx,+avx2,...``); never inside a word or a flag."""

    def __init__(self, **kw: object) -> None:
        super().__init__(break_long_words=False, break_on_hyphens=False,  # type: ignore[misc]
                         **kw)  # type: ignore[arg-type]

    def _split(self, text: str) -> list[str]:
        chunks: list[str] = []
        for chunk in re.split(r"(\s+)", text):
            if len(chunk) > max(24, self.width // 3) and "," in chunk.strip(","):
                chunks += re.split(r"(?<=,)(?=[^,])", chunk)
            elif chunk:
                chunks.append(chunk)
        return chunks


def wrap(text: str, width: int = 100, indent: str = "", subsequent: str | None = None) -> str:
    """``text`` filled to ``width`` columns (a word longer than a line stays whole)."""
    return _Wrapper(width=width, initial_indent=indent,
                    subsequent_indent=indent if subsequent is None else subsequent).fill(text)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter with :func:`wrap`'s rules (``--input-shape`` stays one word)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        text = self._whitespace_matcher.sub(" ", text).strip()
        return _Wrapper(width=max(width, 20)).wrap(text)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        text = self._whitespace_matcher.sub(" ", text).strip()
        return _Wrapper(width=max(width, 20), initial_indent=indent,
                        subsequent_indent=indent).fill(text)
