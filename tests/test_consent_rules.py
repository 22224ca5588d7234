"""The consent rules on requests built as the agents' parsers build them (issue
29): what counts as drawn whole, and what counts as shown by a title."""

from __future__ import annotations

import pytest
from gemini_companion.agent.consent import RefusedError, accept_option, pending_entry
from gemini_companion.agent.disclose import disclosed
from gemini_companion.agent.model import Confirmation, Option
from gemini_companion.agent.render import confirmation_lines

OPTIONS = (Option("proceed_once", "Allow", "allow_once"), Option("cancel", "No", "reject_once"))


def test_an_mcp_request_whose_tool_name_is_too_long_to_draw_needs_a_named_answer() -> None:
    tool = "safe" + "x" * 120_000 + "_and_delete_everything"
    conf = Confirmation("mcp", "MCP tool", OPTIONS, server="files", tool=tool)
    drawn = "\n".join(confirmation_lines(conf))
    assert "_and_delete_everything" not in drawn and "more characters" in drawn
    assert pending_entry("c1", conf)["hidden"] > len("_and_delete_everything")
    with pytest.raises(RefusedError, match="longer than the panel shows"):
        accept_option(conf, None)
    assert accept_option(conf, "proceed_once").id == "proceed_once"


@pytest.mark.parametrize(
    ("title", "arguments", "disclosed_as"),
    [
        ("Delete /home/u/project/build/tmp", {"path": "/home/u/project"}, "/home/u/project"),
        ("Fetch https://docs.example.com/x", {"url": "https://docs.example.co"}, None),
        ("Run rm -rf /tmp/x", {"command": "rm -rf /"}, None),
        ("Delete /home/u/project", {"path": "/home/u/project"}, "shown"),
        ("Fetch 'https://a.example/x'", {"url": "https://a.example/x"}, "shown"),
    ],
)
def test_an_argument_counts_as_shown_only_as_a_whole_word_of_the_title(
    title: str, arguments: dict[str, str], disclosed_as: str | None
) -> None:
    conf = disclosed(Confirmation("info", title, OPTIONS), arguments)
    [(name, value)] = arguments.items()
    if disclosed_as == "shown":
        assert conf.inputs == ()
    else:
        assert conf.inputs == ((name, value),)
        assert {"name": name, "value": value} in pending_entry("c1", conf)["input"]
