"""Markdown lines that cost a naive classifier dearly (issue 31), and ordinary ones.

Used by tests/test_agent_markdown_hostile.py (the highlights of each line streamed
in chunks are those of the whole line) and bench/hostile_lines.py (what each costs
streamed at the CLI's pace against plain text).
"""

from __future__ import annotations

import random

# Bytes that start or end markdown syntax, and a few that do not.
ALPHABET = "`*_~[]()<>:|#->!1. \\ax"


def hostile_lines(size: int = 10_000) -> dict[str, str]:
    """Lines of about ``size`` bytes, by name: brackets, underscores, asterisks,
    backticks, pipes, fences left open, headings, quotes, lists, and mixtures."""
    rng = random.Random(31)

    def fill(unit: str, prefix: str = "", suffix: str = "") -> str:
        return prefix + unit * ((size - len(prefix) - len(suffix)) // len(unit)) + suffix

    lines = {
        "plain": fill("The quick brown fox jumps over the lazy dog. "),
        "__a": fill("__a "),
        "[ then ](": fill("[", suffix="]("),
        "*a": fill("*a "),
        "**a": fill("**a "),
        "_a_": fill("_a_b "),
        "~~a": fill("~~a "),
        "`` a `": fill("`` a ` "),
        "` then text": fill("a", prefix="`"),
        "backtick runs": "".join("`" * n + " a " for n in range(1, 140))[:size],
        "[a](": fill("[a]("),
        "[a](b [c](d": fill(" [c](d", prefix="[a](b"),
        "<a:": fill("<a:"),
        "table row": fill("a | ", prefix="| "),
        "delimiter row": fill("|-"),
        "delimiter row then text": fill("|-", suffix="x"),
        "fence left open": fill("x", prefix="```"),
        "fence with a backtick": fill("x", prefix="```", suffix="`"),
        "hashes": fill("#"),
        "heading of bold": fill("**a ", prefix="## "),
        "quote": fill("> "),
        "digits": fill("1", suffix=". x"),
        "task list": fill("_a_ ", prefix="- [ ] "),
        "rule": fill("- "),
        "rule then text": fill("- ", suffix="x"),
    }
    for i in range(6):
        # Mixtures: runs of one byte or another, and bytes at random.
        parts: list[str] = []
        while sum(map(len, parts)) < size:
            ch = rng.choice(ALPHABET)
            parts.append(ch * rng.choice((1, 1, 2, 3)) if i % 2 else ch)
        lines[f"mixture {i}"] = "".join(parts)[:size]
    return lines


def ordinary_lines() -> list[str]:
    """Markdown as agents write it: each line, then random short lines of markdown
    bytes (seeded)."""
    lines = [
        "## Summary",
        "Some **bold** text with `inline code` and a [link](https://example.com).",
        "- first point, with *emphasis* and __strong__ words",
        "1. step one: run `make test`",
        "2) step two ~~removed~~ kept",
        "> a quote with **bold** inside",
        "> > nested - not a list",
        "> - a list in a quote",
        "- [ ] an open task",
        "- [x] a done task with `code`",
        "| a | b \\| c |",
        "|---|:---:|",
        "```python",
        "~~~",
        "````lua {.numbers}",
        "---",
        "* * *",
        "___",
        "#### Heading **four**",
        "####### not a heading",
        "#not a heading",
        "See <https://example.com/x?y=1> and snake_case_names, 2 * 3 * 4.",
        "A *nested **bold** inside* and _under_score_ and __a__b.",
        "Code ``with ` tick`` and ```three```.",
        "Links [a [b]](c) and [x](y z) and [](empty).",
        "    - indented four",
        "   ```not closed",
        "",
        "   ",
    ]
    rng = random.Random(7)
    for _ in range(3000):
        lines.append("".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 30))))
    return lines
