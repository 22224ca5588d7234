"""An event from the agent, normalised (:class:`Update`), whatever carried it:
a2a-sdk's objects (:func:`from_sdk`) or the real server's REST command stream in
A2A 0.3 JSON (:func:`from_v03`). Which dialect's event it is comes from its
metadata (:meth:`Update.event_kind`). No I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .extension import CODER_AGENT, RFC, is_extension


@dataclass
class Update:
    """One event from the agent, whatever carried it."""

    kind: str  # "status", "artifact", "task", "message"
    task_id: str = ""
    context_id: str = ""
    state: str = ""  # working, input-required, completed, failed, canceled, ...
    texts: list[str] = field(default_factory=list)
    data: list[Any] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    artifact_id: str = ""
    append: bool = False
    message_id: str = ""  # of the status message: a message seen twice is shown once
    history: list[Update] = field(default_factory=list)  # a task's earlier agent messages

    def event_kind(self) -> tuple[str, str]:
        """``(dialect, kind)`` from the metadata, kind in kebab case."""
        for key, value in self.metadata.items():
            if key == "coderAgent" and isinstance(value, Mapping):
                return CODER_AGENT, str(value.get("kind") or "").lower()
            if is_extension(key) and isinstance(value, Mapping):
                return RFC, str(value.get("kind") or "").lower().replace("_", "-")
        return "", ""

    def error(self) -> str | None:
        for key, value in self.metadata.items():
            if (key == "coderAgent" or is_extension(key)) and isinstance(value, Mapping):
                error = value.get("error")
                if error:
                    return str(error)
        error = self.metadata.get("error")
        return str(error) if error else None


def normalise_state(state: str) -> str:
    state = state.lower().removeprefix("task_state_").replace("_", "-")
    return "canceled" if state == "cancelled" else state


def _message_id(message: Any) -> str:
    return str(message.get("messageId") or "") if isinstance(message, Mapping) else ""


def _history(task: Mapping[str, Any]) -> list[Update]:
    """A task's earlier messages from the agent (its status messages move there),
    as updates without a kind: what ``tasks/get`` and a resubscription restore."""
    out = []
    for message in task.get("history") or []:
        if not isinstance(message, Mapping) or "USER" in str(message.get("role") or "").upper():
            continue
        out.append(
            _message(
                message,
                str(message.get("taskId") or task.get("id") or ""),
                str(message.get("contextId") or task.get("contextId") or ""),
            )
        )
    return out


def _message(message: Mapping[str, Any], task_id: str, context_id: str) -> Update:
    """An agent message as an update of kind ``message``."""
    texts, data = _parts(message)
    return Update(
        "message",
        task_id,
        context_id,
        texts=texts,
        data=data,
        metadata=dict(message.get("metadata") or {}),
        message_id=_message_id(message),
    )


def _with_status(
    kind: str, task_id: str, carrier: Mapping[str, Any], history: list[Update] | None = None
) -> Update:
    """A status update or a task (``carrier``): its state, its status message's parts
    and id, and its metadata."""
    status = carrier.get("status") or {}
    texts, data = _parts(status.get("message"))
    return Update(
        kind,
        task_id,
        carrier.get("contextId", ""),
        normalise_state(str(status.get("state") or "")),
        texts,
        data,
        dict(carrier.get("metadata") or {}),
        message_id=_message_id(status.get("message")),
        history=history or [],
    )


def _parts(message: Mapping[str, Any] | None) -> tuple[list[str], list[Any]]:
    texts: list[str] = []
    data: list[Any] = []
    for part in (message or {}).get("parts") or []:
        if not isinstance(part, Mapping):
            continue
        if "text" in part and isinstance(part["text"], str):
            texts.append(part["text"])
        elif "data" in part:
            data.append(part["data"])
    return texts, data


def from_sdk(event: Mapping[str, Any]) -> Update:
    """An a2a-sdk ``StreamResponse`` (as ``MessageToDict`` makes it)."""
    if "statusUpdate" in event:
        u = event["statusUpdate"]
        return _with_status("status", u.get("taskId", ""), u)
    if "artifactUpdate" in event:
        u = event["artifactUpdate"]
        artifact = u.get("artifact") or {}
        texts, data = _parts(artifact)
        return Update(
            "artifact",
            u.get("taskId", ""),
            u.get("contextId", ""),
            texts=texts,
            data=data,
            metadata=dict(u.get("metadata") or {}),
            artifact_id=str(artifact.get("artifactId") or artifact.get("name") or ""),
            append=bool(u.get("append")),
        )
    if "task" in event:
        t = event["task"]
        return _with_status("task", t.get("id", ""), t, history=_history(t))
    message = event.get("message") or {}
    return _message(message, message.get("taskId", ""), message.get("contextId", ""))


def from_v03(event: Mapping[str, Any]) -> Update:
    """An A2A 0.3 JSON event, as the real server's ``/executeCommand`` streams it."""
    kind = event.get("kind")
    if kind == "status-update":
        return _with_status("status", event.get("taskId", ""), event)
    if kind == "artifact-update":
        artifact = event.get("artifact") or {}
        texts, data = _parts(artifact)
        return Update(
            "artifact",
            event.get("taskId", ""),
            event.get("contextId", ""),
            texts=texts,
            data=data,
            artifact_id=str(artifact.get("artifactId") or ""),
            append=bool(event.get("append")),
        )
    if kind == "task":
        status = event.get("status") or {}
        return Update(
            "task",
            event.get("id", ""),
            event.get("contextId", ""),
            normalise_state(str(status.get("state") or "")),
        )
    texts, data = _parts(event)
    return Update(
        "message", event.get("taskId", ""), event.get("contextId", ""), texts=texts, data=data
    )
