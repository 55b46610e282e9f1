"""What the stdio and HTTP interop tests share: the anyio backend, and how an answer
is read."""

import re
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


def text_of(result) -> str:
    return result.content[0].text


def masked(text: str) -> str:
    return re.sub(r"\| \d+ms\]$", "| Xms]", text)


def assert_seq_overflow(text: str, overflow: Path) -> None:
    """`seq 1 1000`'s answer: its head and tail, the marker naming `overflow`, and the
    whole output in that file."""

    def lines(first, last):
        return "\n".join(str(n) for n in range(first, last + 1))

    marker = (
        "[... lines 31-940 of 1000 not shown, no error or failure among them: "
        f"sed -n '31,940p' {overflow}]"
    )
    assert masked(text) == (
        f"{lines(1, 30)}\n{marker}\n{lines(941, 1000)}\n"
        f"Output truncated. Full output written to {overflow}\n[exit:0 | Xms]"
    )
    assert overflow.read_text() == "".join(f"{n}\n" for n in range(1, 1001))
