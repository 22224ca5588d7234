"""The user's answer to one of the agent's ``session/request_permission``: the
call shown answered, the one write it lets through granted (grants.py), and an
edit the user changed on the way to the agent (files.py writes their version in
place of the proposal; the transcript shows it, and the agent is told with the
next prompt)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import REJECT_KINDS
from ..transport import TransportError

if TYPE_CHECKING:
    from .state import AcpSession


def answer_permission(
    session: AcpSession, call_id: str, option_id: str | None, new_content: str | None
) -> None:
    """Answer the permission of ``call_id`` with ``option_id`` (None: rejected, and
    no reject option: ``cancelled``); ``new_content``: the user's version of an edit.
    Raises :class:`TransportError` when the agent no longer waits for it."""
    pending = session.permissions.get(call_id)
    if pending is None or pending.answer.done():
        raise TransportError("the agent is no longer waiting for that answer")
    confirmation = pending.call.confirmation
    if confirmation is None:
        raise TransportError("the agent is no longer waiting for that answer")
    option = None
    if option_id is not None:  # None: rejected, and no reject option: cancelled
        option = next((o for o in confirmation.options if o.id == option_id), None)
        if option is None:
            raise TransportError(f"the agent did not offer the option {option_id!r}")
    rejected = option is None or option.kind in REJECT_KINDS
    assert session.updates is not None and session.files is not None
    if (
        not rejected
        and confirmation.kind == "edit"
        and confirmation.file_path
        and new_content is not None
        and confirmation.new_content is not None
    ):
        # The agent writes its own proposal through fs/write_text_file; that
        # write takes the user's version (files.py). ACP cannot tell the agent:
        # the tool block shows what was written, and the model is told with the
        # next prompt; unless the agent writes the user's version itself (IDE
        # mode on: the review answered its IDE twin with it, review.py).
        from ..review import user_edit_note

        session.files.expect_write(confirmation.file_path, confirmation.new_content, new_content)
        session.written[session.aliases.get(call_id, call_id)] = (
            confirmation.file_path,
            confirmation.old_content,
            new_content,
        )
        session.notes[confirmation.file_path] = user_edit_note(
            confirmation.file_path, confirmation.new_content, new_content
        )
    if (
        option is not None
        and not rejected
        and confirmation.kind == "edit"
        and confirmation.file_path
        and confirmation.new_content is not None
    ):
        # The one write this answer lets through (grants.py): of the proposal, or
        # of the user's version when the agent writes that itself (IDE twin).
        session.grants.allowed(
            confirmation.file_path,
            confirmation.new_content,
            always=option.kind == "allow_always",
            accepted=new_content,
        )
    if rejected:
        call = pending.call.but(status="cancelled", confirmation=None, result="Rejected.")
    else:
        call = pending.call.but(status="executing", confirmation=None)
    session.emit(session.updates.put(call))
    session.permissions.answer(call_id, option_id)
