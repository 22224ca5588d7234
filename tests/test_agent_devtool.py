"""The development-tool extension's two encodings (agent/a2a/devtool/): RFC-encoded
events in both proto3 JSON spellings, the real server's coderAgent dialect, the
agent card's extension version, and the answers that go back."""

from __future__ import annotations

from typing import Any

import pytest
from gemini_companion.agent.a2a import devtool

URI_V0 = devtool.EXTENSION_URI
URI_V1 = URI_V0.replace("/v0/", "/v1/")


def test_an_agent_card_with_extension_v0_is_rfc_and_v1_is_refused() -> None:
    assert devtool.check_extension([URI_V0]) == devtool.RFC
    assert devtool.check_extension([URI_V0.replace("/v0/", "/v0.3.1/")]) == devtool.RFC
    with pytest.raises(devtool.IncompatibleAgentError, match=r"version 1 .* supports version 0"):
        devtool.check_extension([URI_V1])
    assert devtool.check_extension([]) == devtool.CODER_AGENT
    assert devtool.check_extension(["https://example.com/other/v3/spec.md"]) == devtool.CODER_AGENT


@pytest.mark.parametrize(
    ("uri", "version"),
    [
        (URI_V0, "0"),
        ("https://example.com/a2a/development-tool/v0.3.1/spec.md", "0.3.1"),
        ("https://example.com/developer-profile/v0.4.0-rc.1+build.7/spec.md", "0.4.0-rc.1+build.7"),
        # The segment after the extension's name, not the first /vN/ of the URI.
        ("https://example.com/api/v0/development-tool/v1/spec.md", "1"),
        ("https://example.com/api/v0/development-tool/spec.md", None),
        # Not semantic versions: leading zeros, a pre-release without a full version.
        ("https://example.com/developer-profile/v00.1/spec.md", None),
        ("https://example.com/developer-profile/v0.01/spec.md", None),
        ("https://example.com/developer-profile/v0.1-beta/spec.md", None),
        ("https://example.com/developer-profile/v/spec.md", None),
    ],
)
def test_the_extension_version_is_the_semver_segment_after_the_extensions_name(
    uri: str, version: str | None
) -> None:
    assert devtool.extension_version(uri) == version


def test_an_extension_uri_with_a_foreign_or_malformed_version_segment_is_refused() -> None:
    with pytest.raises(devtool.IncompatibleAgentError, match=r"version 1 .* supports version 0"):
        devtool.check_extension(["https://example.com/api/v0/development-tool/v1/spec.md"])
    for bad in ("v00.1", "v0.01", "vX", "v0.1-beta"):
        with pytest.raises(devtool.IncompatibleAgentError, match="names no semantic version"):
            devtool.check_extension([f"https://example.com/developer-profile/{bad}/spec.md"])
    # The name must be a whole path segment.
    assert devtool.check_extension(["https://example.com/my-development-tools/v9/"]) == (
        devtool.CODER_AGENT
    )


RFC_PENDING_SNAKE: dict[str, Any] = {
    "tool_call_id": "c1",
    "status": "PENDING",
    "tool_name": "ShellTool",
    "description": "List files",
    "input_parameters": {"command": "ls"},
    "confirmation_request": {
        "options": [
            {"id": "proceed_once", "name": "Allow once"},
            {"id": "cancel", "name": "Reject"},
        ],
        "execute_details": {"command": "ls -la", "working_directory": "/w"},
    },
}

RFC_PENDING_CAMEL: dict[str, Any] = {
    "toolCallId": "c1",
    "status": "PENDING",
    "toolName": "ShellTool",
    "description": "List files",
    "inputParameters": {"command": "ls"},
    "confirmationRequest": {
        "options": [
            {"id": "proceed_once", "name": "Allow once"},
            {"id": "cancel", "name": "Reject"},
        ],
        "executeDetails": {"command": "ls -la", "workingDirectory": "/w"},
    },
}


@pytest.mark.parametrize("data", [RFC_PENDING_SNAKE, RFC_PENDING_CAMEL])
def test_an_rfc_tool_call_reads_in_both_spellings(data: dict[str, Any]) -> None:
    call = devtool.tool_call(devtool.RFC, data)
    assert call is not None
    assert (call.id, call.name, call.status, call.title) == (
        "c1",
        "ShellTool",
        "pending",
        "List files",
    )
    conf = call.confirmation
    assert conf is not None
    assert (conf.kind, conf.command, conf.directory) == ("exec", "ls -la", "/w")
    assert [(o.id, o.kind) for o in conf.options] == [
        ("proceed_once", "allow_once"),
        ("cancel", "reject_once"),
    ]


def test_rfc_lifecycle_executing_then_succeeded_and_an_edit_request() -> None:
    running = devtool.tool_call(
        devtool.RFC, {"tool_call_id": "c1", "status": "EXECUTING", "live_content": "line 1"}
    )
    assert running is not None and running.status == "executing"
    assert running.live_output == "line 1" and running.confirmation is None
    done = devtool.tool_call(
        devtool.RFC, {"toolCallId": "c1", "status": "SUCCEEDED", "output": {"text": "ok"}}
    )
    assert done is not None and (done.status, done.result) == ("succeeded", "ok")
    failed = devtool.tool_call(
        devtool.RFC, {"tool_call_id": "c1", "status": "FAILED", "error": {"message": "boom"}}
    )
    assert failed is not None and (failed.status, failed.error) == ("failed", "boom")
    edit = devtool.tool_call(
        devtool.RFC,
        {
            "tool_call_id": "e1",
            "status": "PENDING",
            "tool_name": "Edit",
            "confirmation_request": {
                "options": [{"id": "proceed_once", "name": "Allow"}],
                "file_edit_details": {
                    "file_name": "a.txt",
                    "file_path": "/w/a.txt",
                    "old_content": "old\n",
                    "new_content": "new\n",
                },
            },
        },
    )
    assert edit is not None and edit.confirmation is not None
    assert (edit.confirmation.kind, edit.confirmation.file_path) == ("edit", "/w/a.txt")
    assert edit.confirmation.new_content == "new\n"


def test_the_coder_agent_tool_call_and_its_synthesised_options() -> None:
    data = {
        "request": {"callId": "x1", "name": "run_shell_command", "args": {"command": "ls"}},
        "status": "awaiting_approval",
        "confirmationDetails": {
            "type": "exec",
            "title": "Confirm Shell Command",
            "command": "ls",
            "rootCommand": "ls",
        },
        "tool": {"displayName": "Shell"},
    }
    call = devtool.tool_call(devtool.CODER_AGENT, data)
    assert call is not None and call.status == "pending"
    assert call.confirmation is not None and call.confirmation.command == "ls"
    assert [o.id for o in call.confirmation.options] == ["proceed_once", "proceed_always", "cancel"]
    data["status"] = "success"
    data["response"] = {"resultDisplay": "file-a\nfile-b"}
    done = devtool.tool_call(devtool.CODER_AGENT, data)
    assert done is not None and (done.status, done.result) == ("succeeded", "file-a\nfile-b")
    assert done.confirmation is None


def test_events_are_kinded_by_either_metadata() -> None:
    rfc = devtool.Update("status", metadata={URI_V0: {"kind": "TOOL_CALL_UPDATE"}})
    assert rfc.event_kind() == (devtool.RFC, "tool-call-update")
    coder = devtool.Update("status", metadata={"coderAgent": {"kind": "text-content"}})
    assert coder.event_kind() == (devtool.CODER_AGENT, "text-content")
    sdk = devtool.from_sdk(
        {
            "statusUpdate": {
                "taskId": "t",
                "contextId": "c",
                "status": {
                    "state": "TASK_STATE_INPUT_REQUIRED",
                    "message": {"parts": [{"text": "hi"}, {"data": {"subject": "s"}}]},
                },
                "metadata": {"coderAgent": {"kind": "state-change"}},
            }
        }
    )
    assert (sdk.state, sdk.texts, sdk.data) == ("input-required", ["hi"], [{"subject": "s"}])


def test_answers_and_settings_in_each_dialect() -> None:
    assert devtool.confirmation_answer(devtool.RFC, "c1", "proceed_once", "x") == {
        "tool_call_id": "c1",
        "selected_option_id": "proceed_once",
        "file_details": {"new_content": "x"},
    }
    assert devtool.confirmation_answer(devtool.CODER_AGENT, "c1", "cancel", None) == {
        "callId": "c1",
        "outcome": "cancel",
    }
    assert devtool.agent_settings(devtool.CODER_AGENT, "/w") == {
        "coderAgent": {"kind": "agent-settings", "workspacePath": "/w"}
    }
    assert devtool.agent_settings(devtool.RFC, "/w") == {URI_V0: {"workspace_path": "/w"}}


def test_slash_commands_of_both_shapes() -> None:
    real = [
        {
            "name": "memory",
            "subCommands": [{"name": "memory show", "subCommands": []}],
        }
    ]
    rfc = [{"name": "memory", "sub_commands": [{"name": "show"}]}]
    for raw in (real, rfc):
        (command,) = devtool.slash_commands(raw)
        assert command.names() == ["memory", "memory show"]
