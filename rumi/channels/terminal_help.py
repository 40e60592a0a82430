"""The terminal's `/help`: Telegram's list would tell a person at a keyboard to "send the file
with /import as caption" and would not name what only the terminal has (`/audio`, `/salir`)."""

from __future__ import annotations

from rumi import messages as msg

# commands whose Telegram description speaks of things a terminal does not have
TERMINAL_DESCRIPTIONS = {"import": "TERMINAL_HELP_IMPORT"}


def terminal_help(menu: list[tuple[str, str]], *, audio: bool) -> str:
    """The help text in the active language: the shared commands, then the terminal's own."""
    lines = [msg.HELP_HEADER, ""]
    for name, description in menu:
        own = TERMINAL_DESCRIPTIONS.get(name)
        lines.append(f"/{name} — {msg.text(own) if own else description}")
    lines += ["", msg.TERMINAL_HELP_HEADER]
    if audio:
        lines.append(msg.TERMINAL_HELP_AUDIO)
    lines += [msg.TERMINAL_HELP_EXIT, "", msg.HELP_FOOTER]
    return "\n".join(lines)
