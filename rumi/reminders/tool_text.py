"""What the `schedule` tool says to the model, in the chat's language: its schema
(`TOOL_TEXTS`) and its result (`say`). The `when` grammar (`+10m`, `daily 08:00`, cron) is
the same in every language: it is parsed, not read."""

from __future__ import annotations

from rumi import messages as msg
from rumi.base.tools import ToolText

TOOL_TEXTS: dict[str, ToolText] = {
    "es": ToolText(
        "Programa un recordatorio (un mensaje enviado a este chat en `when`) o, con task=true, "
        "una tarea (en `when` recibes `text` como petición; se envía tu respuesta). Devuelve el "
        "id y la hora actual del chat; la persona los ve con /reminders y cancela con "
        "/cancel <id>.",
        {"when": "en la zona horaria del chat: fecha y hora ISO (2026-05-21T09:30), retraso "
                 "(+10m, +2h, +1d) o repetición (daily 08:00, weekdays 08:00, weekly mon "
                 "08:00, cron M H DOM MON DOW)",
         "text": "qué recordar, o la tarea, con las palabras de la persona",
         "task": "una tarea en lugar de un mensaje"}),
    "en": ToolText(
        "Schedule a reminder (a message sent to this chat at `when`) or, with task=true, a "
        "task (at `when` you get `text` as a request; your answer is sent). Returns the id and "
        "the chat's current time; the person sees them with /reminders, cancels with "
        "/cancel <id>.",
        {"when": "in the chat's time zone: ISO date-time (2026-05-21T09:30), delay (+10m, +2h, "
                 "+1d) or recurrence (daily 08:00, weekdays 08:00, weekly mon 08:00, cron M H "
                 "DOM MON DOW)",
         "text": "what to remind, or the task, in the person's words",
         "task": "a task instead of a message"}),
}

SPANISH = {
    "scheduled": "Programado #{id} ({kind}) para {when} {tz}{repeat}. Ahora son las {now}.",
    "task": "tarea",
    "reminder": "recordatorio",
    "repeat": ", con repetición ({rule} como cron)",
}
ENGLISH = {
    "scheduled": "Scheduled #{id} ({kind}) for {when} {tz}{repeat}. Now it is {now}.",
    "task": "task",
    "reminder": "reminder",
    "repeat": ", repeating ({rule} as cron)",
}
# say(key, **values): a result in the language of the chat being answered
say = msg.speaker({"es": SPANISH, "en": ENGLISH})
