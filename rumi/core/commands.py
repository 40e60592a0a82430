"""The slash-command registry: who handles `/name`, how /help and the menu describe it, and
which commands only a group's admins may run."""

from __future__ import annotations

from dataclasses import dataclass

from rumi import messages as msg
from rumi.base.commands import CommandHandler, CommandRequest, Description, GroupAdmin
from rumi.base.replies import Reply

BUILTIN_IMMEDIATE = ("start", "help", "status", "stop")


@dataclass
class RegisteredCommand:
    handler: CommandHandler
    description: Description
    needs_session: bool
    group_admin: GroupAdmin = False


class CommandRegistry:
    """Commands parts registered; `/start /help /status /stop` are the core's own."""

    def __init__(self) -> None:
        self._commands: dict[str, RegisteredCommand] = {}

    def register(self, name: str, handler: CommandHandler, *,
                 description: Description | None = None, needs_session: bool = True,
                 group_admin: GroupAdmin = False) -> None:
        """See `Assistant.register_command`; a later registration replaces an earlier one."""
        name = name.lstrip("/").lower()
        if name in BUILTIN_IMMEDIATE:
            raise ValueError(f"/{name} is built in")
        self._commands[name] = RegisteredCommand(handler, description or "", needs_session,
                                                 group_admin)

    def unregister(self, name: str) -> None:
        """Forget `/name` (it then answers that the feature is coming, or is unknown)."""
        self._commands.pop(name.lstrip("/").lower(), None)

    def get(self, name: str) -> RegisteredCommand | None:
        return self._commands.get(name)

    def menu(self) -> list[tuple[str, str]]:
        """(name, description) of every command the person can use, for menus and /help."""
        names = list(msg.COMMAND_DESCRIPTIONS)
        names += [n for n in self._commands if n not in names]
        return [(n, self.describe(n)) for n in names]

    def describe(self, name: str) -> str:
        """In the active language: the registered callable, else the catalogue's entry."""
        command = self._commands.get(name)
        described = command.description if command else ""
        if callable(described):
            return described()
        return msg.COMMAND_DESCRIPTIONS.get(name) or described or name


def help_reply(menu: list[tuple[str, str]]) -> Reply:
    lines = [msg.HELP_HEADER, ""]
    lines += [f"/{n} — {d}" for n, d in menu]
    lines += ["", msg.HELP_FOOTER]
    return Reply("\n".join(lines), markdown=False)


def unregistered_reply(name: str) -> Reply:
    """Honest about a command no part registered: coming (it is in the catalogue) or unknown."""
    text = msg.FEATURE_COMING if name in msg.COMMAND_DESCRIPTIONS else msg.UNKNOWN_COMMAND
    return Reply(text.format(name=name), markdown=False)


async def refused_in_group(command: RegisteredCommand, request: CommandRequest) -> bool:
    """A group member who is not an admin asking for a command that changes what the
    whole group shares."""
    if not request.in_group:
        return False
    wanted = command.group_admin
    if callable(wanted):
        wanted = wanted(request)
    return bool(wanted) and not await request.is_admin()


def group_refusal(name: str) -> Reply:
    text = msg.GROUP_ADMIN_REFUSALS.get(name) or msg.GROUP_ADMIN_ONLY.format(name=name)
    return Reply(text, markdown=False)


def as_reply(value: Reply | str) -> Reply:
    return value if isinstance(value, Reply) else Reply(value)
