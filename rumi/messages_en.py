"""Every user-facing sentence Rumi says on its own (not the model's words), in English.

Same names and the same `{placeholders}` as `rumi.messages_es` (a test checks both); a name
missing here would fall back to the Spanish sentence.
"""

from __future__ import annotations

BUSY = "⏳ I'm still working on your previous message… I'll answer this one as soon as I finish."
BUSY_QUEUE_FULL = (
    "⏳ I'm still working on your previous message and have several more waiting. "
    "Please wait until I finish and send me this one again."
)
MODEL_UNAVAILABLE = (
    "😕 The model is not available right now (it may be overloaded or down). "
    "Try again in a while; your message was kept in the conversation."
)
MODEL_UNREACHABLE = (
    "📡 Groq cannot be reached right now (no network, no DNS or no answer in time). "
    "Try again in a while; your message was kept in the conversation."
)
RATE_LIMITED = (
    "⏳ The Groq account reached its per-minute limit and the wait ({wait}) is longer than "
    "reasonable. Your message was kept: write to me again in {wait}."
)
RATE_LIMITED_AGAIN = (
    "⏳ The Groq account is still at its per-minute limit: I waited {waited} and it still "
    "won't let me answer. Your message was kept: write to me again in a minute."
)
DAILY_LIMIT = (
    "📅 The Groq account reached its daily limit. I can answer again in {wait}. "
    "Your message was kept in the conversation."
)
AUTH_FAILED = (
    "🔑 Groq refused the API key (HTTP {status}). Whoever runs Rumi must check "
    "`llm.api_key` (or the GROQ_API_KEY variable) in the configuration; `rumi doctor` checks it."
)
MODEL_GONE = (
    "🧩 Groq no longer serves the model “{model}” and no configured alternative answers "
    "({tried}). Whoever runs Rumi must change `llm.model` (e.g. to openai/gpt-oss-120b)."
)
MODEL_SWITCHED = (
    "ℹ️ Groq no longer serves the configured model “{configured}”; I'm answering with "
    "“{answering}”. To make it permanent, change `llm.model` in the configuration."
)
QUOTA_FALLBACK = (
    "ℹ️ The model “{configured}” has used up its daily Groq quota; for {wait} “{answering}” "
    "answers instead (it has its own quota), then I go back to the usual one."
)
REQUEST_TOO_LARGE = (
    "📚 The conversation no longer fits your Groq account's per-minute limit and I could not "
    "summarize it further. Use /clear to empty it (what matters stays saved) or /reset."
)
REQUEST_REFUSED = (
    "⚠️ Groq refused the request (HTTP {status}). It was logged; try again and, if it "
    "happens again, use /clear."
)
TOOL_CALL_FAILED = (
    "😕 The model could not phrase an action correctly, even on the second try. "
    "Could you rephrase the request?"
)
REPLY_CUT = "✂️ (Reply cut for length; ask me to continue if you need all of it.)"
STREAM_CUT = ("✂️ (The answer was cut off: the connection to the model was lost. Ask me "
              "again if you need all of it.)")
EMPTY_AFTER_REASONING = (
    "(I kept thinking without getting to write the answer. Could you repeat the question, "
    "or make it more specific?)"
)
INTERNAL_ERROR = "⚠️ Something went wrong while handling your message. It was logged; try again."
DISK_FULL = (
    "💾 The server's disk is full and I can't save anything right now. Your message is not "
    "lost: I'll answer it as soon as there is space again, no need to send it again."
)
EMPTY_REPLY = "(The model returned no answer. Could you rephrase the question?)"
BREAKER_REPEATED = (
    "🔁 I stopped: I was repeating the same action ({tool}) without getting anywhere. "
    "Tell me how you want to go on, or rephrase the request."
)
BREAKER_TOOL_ERRORS = (
    "🧱 I stopped: the last {count} actions failed in a row (the last one, {tool}). "
    "The tool may be unavailable right now; "
    "tell me if you want me to try another way."
)
BREAKER_MAX_TURNS = (
    "⌛ I stopped after {turns} steps without reaching a final answer. "
    "What was done so far stays in the conversation; tell me if I should go on."
)
MEMORY_LOOP = (
    "🧠 I stopped: I was reorganizing my memory again and again without moving your request "
    "forward. If the conversation got tangled, use /clear to empty it (what matters stays "
    "saved) or /reset to start from scratch; otherwise, tell me how to go on."
)
CONTEXT_FULL = (
    "📚 The conversation no longer fits in the model's memory and I could not summarize it "
    "further. Use /clear to empty it (what matters stays saved) or /reset to start from scratch."
)
TOOL_SKIPPED = "Not executed: the agent loop stopped before this call ({reason})."
TOOL_CANCELLED = "Not executed: the user cancelled the task with /stop."
TOOL_NOT_RUN = ("Not executed: Rumi restarted before this call began. Call it again if it is "
                "still needed.")
TOOL_MAYBE_RAN = ("Unknown outcome: Rumi restarted while this call was running, so it may or "
                  "may not have run. Do not repeat it blindly: check its effect first (for "
                  "example, read the file it changed) and tell the user what you found.")
TOOL_MAYBE_RAN_NOTICE = (
    "⚠️ I restarted while running {tools}: it may or may not have happened. I won't "
    "repeat it blindly; I'll check before going on."
)

NOTHING_TO_STOP = "I'm not working on anything right now."
STOPPED_REPLY = "🛑 Task stopped at your request."
STOPPED_MARK = "🛑 (Stopped at your request.)"
RESET_DONE = (
    "🔄 Session reset: I'm starting from scratch in this conversation. "
    "What I saved in long-term memory is still there."
)
CLEAR_DONE = "🧹 Done: I emptied the active conversation ({count}). Memory is untouched."
PIN_USAGE = (
    "Usage: /{name} <id> (the number shown as [#id]), "
    "or reply with /{name} to a message (yours or mine) in the active conversation."
)
PIN_NOT_FOUND = "I can't find item #{id} in the active conversation."
PINNED = "📌 Pinned #{id}: it won't be pruned or summarized."
UNPINNED = "Unpinned #{id}: it's an ordinary message again."
NOT_AUTHORIZED = (
    "🙏 Sorry, this assistant is private and you are not on the list of allowed people. "
    "If you think this is a mistake, ask whoever runs it to add your id ({user_id})."
)
FEATURE_COMING = "🚧 The /{name} command is not available in this installation yet; it's coming."
UNKNOWN_COMMAND = "I don't know the command /{name}. Type /help to see what I can do."
ATTACHMENT_IGNORED = (
    "📎 I received a file, but I can only use it with /import (put that as the document's "
    "caption)."
)
DOCUMENT_TOO_LARGE = "📎 The file is too large (at most {max_mb} MB)."


def format_wait(seconds: float) -> str:
    """A wait the way a person says it: "about 45 s", "about 3 min", "about 2 h 10 min"."""
    seconds = max(1, round(seconds))
    if seconds < 90:
        return f"about {seconds} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"about {minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"about {hours} h {rest} min" if rest else f"about {hours} h"

# --- groups: whose memory, who may forget it, /memory off|on (issue 15, item 5) ---
FORGET_NOT_YOURS = (
    "⛔ {ids}: that memory is not yours. In a group each person can only forget their own "
    "memories; a group admin can forget any. Nothing was erased."
)
FORGET_OTHERS_LEFT = (
    " (I left {count} memories of other group members alone: only an admin can forget them.)"
)
MEMORY_SWITCH_USAGE = "Usage: /memory (status), /memory off (switch it off) or /memory on."
MEMORY_SWITCH_ADMIN_ONLY = "⛔ In a group only an admin can switch long-term memory on or off."
MEMORY_OFF_DONE = (
    "🔕 Long-term memory is off in this chat: I will learn nothing from the conversation, "
    "write no memories, daily log or snapshots, and bring no saved memories into the "
    "conversation. The conversation still works; what is already saved stays, and /forget "
    "still works. /memory on switches it back on."
)
MEMORY_ON_DONE = (
    "🔔 Long-term memory is on again. What was said while it was off is not learned."
)
MEMORY_ALREADY_OFF = "🔕 Long-term memory was already off in this chat."
MEMORY_ALREADY_ON = "🔔 Long-term memory was already on in this chat."
MEMORY_STATE_ON = "🔔 Long-term memory: on (/memory off switches it off)"
MEMORY_STATE_OFF = "🔕 Long-term memory: off in this chat (/memory on switches it on)"
REMEMBER_MEMORY_OFF = (
    "🔕 Long-term memory is off in this chat, so I saved nothing. /memory on switches it back on."
)
MEMORY_OWNER = "{name}'s"

# issue 14: the conversation search rebuilt from the tapes after a lost database
# (rumi/memory/files/healing.py)
DB_REBUILT_TAPE = (
    " Your conversation ({count}) is whole and /search finds it again."
)
DB_REBUILT_TAPE_ONLY = (
    "🩹 Rumi's database was lost or damaged; your conversation ({count}) is whole "
    "and /search finds it again."
)

# -- rumi setup and pairing (issue 20) -----------------------------------------------------------
PAIRING_ASK = (
    "🔐 This assistant is private. If you want to use it, ask the person who runs Rumi to "
    "approve code {code} (with `rumi pairing approve {code}`)."
)
PAIRING_OWNER_WELCOME = (
    "✅ Done: you now own this Rumi. Write me anything; /help shows what I can do."
)
PAIRING_APPROVED = "✅ You can talk to me now. Hello! /help shows what I can do."
# --- time the way people say it (issue 17, item 4) ---
RECALL_BLOCK_HEADER = "Relevant memories (long-term memory):"
RECALL_RECENT_LOG = "Log of today and yesterday:"
RECALL_ASKED_DAYS_LOG = "Log of the days the person asks about:"
SEARCH_PERIOD = "🗓️ {periods} (in your timezone)"

# Redaction: /redact and the question after /forget (rumi/memory/redaction/command.py)

# the terminal channel: files are paths on this computer
TERMINAL_DOCUMENT_SAVED = (
    "💾 File saved to {path} ({size} bytes). To restore it: /import {path}"
)
TERMINAL_DOCUMENT_FAILED = "⚠️ I could not save the file to {path}: {reason}."
TERMINAL_IMPORT_USAGE = "Usage in the terminal: /import <path of the exported .tar.gz file>"
TERMINAL_IMPORT_MISSING = "I can't find the file “{path}”. Nothing was changed."
TERMINAL_IMPORT_NOT_FILE = "“{path}” is not a file. Nothing was changed."
TERMINAL_IMPORT_UNREADABLE = "I could not read “{path}”: {reason}. Nothing was changed."
TERMINAL_IMPORT_TOO_LARGE = (
    "The file is too large ({size_mb:.1f} MB; at most {max_mb:.0f} MB). "
    "Nothing was changed."
)

START = (
    "👋 Hi! I'm Rumi, your assistant. I can talk, run commands in my own isolated "
    "space and remember what matters between conversations.\n\n"
    "Write me whatever you need, or use /help to see the commands."
)
HELP_HEADER = "Here is what I can do:"
HELP_FOOTER = "For everything else, just write to me."
# the terminal's own /help (rumi/channels/terminal_help.py)
TERMINAL_HELP_IMPORT = "Import memory: /import <path of the exported .tar.gz file>"
TERMINAL_HELP_HEADER = "In the terminal only:"
TERMINAL_HELP_AUDIO = "/audio <path> — Handle an audio file as a voice note"
TERMINAL_HELP_EXIT = "/exit, /salir — Quit (also Ctrl-D or Ctrl-C)"
STATUS_HEADER = "📊 Rumi's status"
STATUS_BUSY = "Busy: yes, working on a message"
STATUS_IDLE = "Busy: no"
STATUS_MODEL = "Model: {model} ({when})"
STATUS_MODEL_ANSWERED = "the one that answered last"
STATUS_MODEL_NOT_YET = "has not answered since start-up"
STATUS_MODEL_SWITCHED = (
    "  (the configured one, “{configured}”, no longer exists on Groq: change llm.model)"
)
STATUS_CACHE = (
    "Groq prompt cache: {share:.0f} % of input tokens ({cached} of {prompt}); "
    "reasoning: {reasoning} tokens"
)
STATUS_LIMITS = (
    "Account limits: {tokens} of {tpm} tokens left this minute and {requests} of {rpd} "
    "requests today"
)
STATUS_RATE_WAITS = "Waits for limits: {count} ({seconds} in total)"
STATUS_LAST_FAILURE = "Last model failure: {why}"
STATUS_SANDBOX_OK = "Sandbox: stopped (starts with the first command)"
STATUS_SANDBOX_DOWN = "Sandbox: unavailable right now, I can't run commands ({reason})"
SANDBOX_PROBLEM_ENGINE = "Docker does not answer; the administrator must check the Docker service"
SANDBOX_PROBLEM_IMAGE = (
    "the image {image} is missing; the administrator must build it with `rumi sandbox build`"
)
SANDBOX_PROBLEM_IMAGE_BUILDING = (
    "the image {image} is being built; I can run commands once it is ready"
)
SANDBOX_PROBLEM_DISABLED = "it is disabled in the configuration"
SANDBOX_PROBLEM_UNKNOWN = "unknown reason; `rumi doctor` diagnoses it"

COMMAND_DESCRIPTIONS: dict[str, str] = {
    "start": "Introduction",
    "help": "See the commands",
    "status": "Rumi's status (/status details: the context)",
    "stop": "Stop the task in progress",
    "reset": "Restart the session from scratch",
    "clear": "Empty the active conversation (keeping a summary)",
    "remember": "Remember something: /remember <text>",
    "forget": "Forget something: /forget <text or id>",
    "memory": "See what I remember about you",
    "search": "Search memory: /search <text>",
    "pin": "Pin a message: /pin <id>",
    "unpin": "Unpin a message: /unpin <id>",
    "export": "Export your memory as a file",
    "import": "Import memory (send the file with /import as caption)",
}

# /status: the long-term memory (rumi/memory/status.py)
STATUS_MEMORY_SEMANTIC = (
    "Memory: semantic and keyword search (model {model}{when}); "
    "{active}"
)
STATUS_MEMORY_LOADS_ON_USE = ", loaded on first use"
STATUS_MEMORY_QUERY_TWIN = ", queries with its int8 copy"
STATUS_MEMORY_KEYWORD_ONLY = (
    "Memory: keyword search only, {reason}; {active}"
)
ACTIVE_MEMORIES_ONE = "{n} active memory"
ACTIVE_MEMORIES_MANY = "{n} active memories"
MEMORY_REASON_DISABLED = "semantic search is disabled in the configuration"
MEMORY_REASON_NO_INDEX = "no vector index is configured"
MEMORY_REASON_MODEL = "the embedding model is not available ({detail})"
STATUS_MEMORY_LAST = "Memories used in the last answer (score and why):"
STATUS_MEMORY_ITEM = (
    "  #{id} {total:.2f} = recency {recency:.2f} · importance {importance:.2f} · "
    "relevance {relevance:.2f} · frequency {frequency:.2f} — “{snippet}”"
)

# MEMORY.md edits that cannot be applied as saved (rumi/memory/files/markdown_sync.py)
MD_NOT_UTF8 = "the file is not UTF-8 text"
MD_UNREADABLE = (
    "⚠️ I can't read your MEMORY.md ({reason}). I won't touch it until it is an ordinary file "
    "again; your memories are still safe in the database."
)
MD_REJECTED = (
    "⚠️ I could not apply your MEMORY.md edit ({reason}). I saved your text as it was in "
    "memory/{file} and rewrote MEMORY.md from memory, so nothing was lost and everything keeps "
    "syncing. Fix that line and copy your changes back into MEMORY.md."
)
MD_CONFIRM_FORGET = (
    "⚠️ Your MEMORY.md edit would forget {count} of {shown} memories at once. I haven't "
    "applied it yet: I saved it in memory/{file} and left MEMORY.md as it was. Shall I forget "
    "those {count} memories? Answer /memorymd si or /memorymd no."
)
MD_CONFIRM_YES_BUTTON = "🗑️ Yes, forget {count}"
MD_CONFIRM_NO_BUTTON = "↩️ No, keep them"
MD_NOTHING_PENDING = "No MEMORY.md edit is waiting for confirmation."
MD_PENDING_DECLINED = (
    "👍 I won't forget anything. Your edit is still saved in memory/{file} in case you want "
    "something from it."
)
MD_PENDING_FILE_CHANGED = (
    "MEMORY.md changed again while I waited for your answer; I'm applying that change first. "
    "Answer /memorymd si again in a moment."
)
MD_PENDING_MISSING = "I can no longer find memory/{file}; I changed nothing."
MD_PENDING_FAILED = "⚠️ I could not apply the saved edit ({reason}); nothing was lost."
MD_PENDING_APPLIED = (
    "✅ MEMORY.md edit applied: {removed} forgotten, {added} new, {changed} changed."
)
MD_CONFIRM_USAGE = "Answer /memorymd si to apply the saved edit or /memorymd no."
MD_STATUS_PENDING = (
    "⏸️ MEMORY.md: an edit that would forget {count} memories awaits your confirmation "
    "(memory/{file}); answer /memorymd si or /memorymd no."
)
MD_STATUS_REJECTED = (
    "⚠️ MEMORY.md: your last edit could not be applied ({reason}); it is saved in "
    "memory/{file}."
)
MD_STATUS_RESTORED = (
    "🩹 MEMORY.md: the database had lost its last writes; I read {count} memories back from "
    "the file ({dropped} could not be saved). The file as it was is in memory/{file}."
)
MD_COMMAND_DESCRIPTION = "Confirm or discard a MEMORY.md edit: /memorymd si|no"

# rumi.db lost or damaged and rebuilt from MEMORY.md (rumi/memory/files/healing.py)
DB_REBUILT = (
    "🩹 Rumi's database was lost or damaged; I rebuilt it from your MEMORY.md "
    "({count} memories). Your file is the good copy: nothing it showed was lost."
)
DB_REBUILD_FAILED = (
    "⚠️ Rumi's database was lost or damaged and I could not rebuild your memories "
    "({reason}). Your MEMORY.md was kept as it was in memory/MEMORY.md.rejected-…; "
    "fix it and copy it back to MEMORY.md so I read it again."
)

# a message received before a crash, too old to answer now (rumi/channels/telegram_journal.py)
INTERRUPTED_REPLY = (
    "⚠️ I was cut off while answering “{text}”; shall I repeat? If you still need it, "
    "send it to me again."
)

# reminders and scheduled tasks (rumi/reminders/)
REMINDER_FIRED = "⏰ Reminder{note}: {text}"
REMINDER_TASK_RESULT = "⏰ Scheduled task #{id}{note}:\n\n{result}"
REMINDER_TASK_PROMPT = (
    "[Scheduled task #{id}, due at {when}; you asked for it earlier, do it now and reply "
    "with the result] {text}"
)
REMINDER_LATE = " (late)"
REMINDER_MAYBE_SENT = " (late; Rumi restarted while sending it and you may have it already)"
REMINDERS_EMPTY = (
    "You have no pending reminders. Ask me in writing, e.g. “remind me tomorrow at 9 to "
    "call Ana”."
)
REMINDERS_HEADER = "⏰ Your reminders ({tz} time):"
REMINDERS_ITEM = "#{id} · {when} · {kind}{text}{repeat}"
REMINDERS_KIND_TASK = "task: "
REMINDERS_REPEAT = " (repeats: {rule})"
REMINDERS_FOOTER = "To cancel one: /cancel <id>"
CANCEL_USAGE = "Usage: /cancel <id> (the number shown in /reminders)."
CANCEL_DONE = "🗑️ Cancelled #{id}: {text}"
CANCEL_NOT_FOUND = (
    "I can't find reminder #{id} among this chat's pending ones. See /reminders."
)
TIMEZONE_SHOW = (
    "🕒 This chat's time zone is {tz} (it is {now} now). "
    "To change it: /timezone Europe/London"
)
TIMEZONE_SET = "🕒 Done: this chat's time zone is now {tz} (it is {now} now)."
TIMEZONE_UNKNOWN = (
    "I don't know the time zone “{name}”. Use an IANA name such as Europe/London, "
    "America/New_York or Asia/Tokyo. Nothing was changed."
)
REMINDER_COMMANDS = {
    "reminders": "See your pending reminders",
    "cancel": "Cancel a reminder: /cancel <id>",
    "timezone": "See or change the time zone: /timezone Europe/London",
}

# voice notes (rumi/voice/, Assistant.handle_voice)
VOICE_HEARD = "🎙️ “{text}”"
VOICE_ORIGIN = "[voice note, {seconds} s, transcribed]"
VOICE_DISABLED = (
    "🎙️ I received audio, but voice transcription is disabled in this installation "
    "(voice.enabled). Could you type it?"
)
VOICE_TOO_LARGE = (
    "🎙️ The audio is too large ({size_mb:.1f} MB; at most {max_mb:.0f} MB). "
    "Send me a shorter one or type it."
)
VOICE_TOO_LONG = (
    "🎙️ The audio is too long ({seconds:.0f} s; at most {max_seconds:.0f} s). "
    "Send me a shorter one or type it."
)
VOICE_DAILY_BUDGET = (
    "🎙️ Today I already transcribed {used} of audio, the daily maximum is {limit}. "
    "Type the message, or send it again tomorrow."
)
VOICE_BAD_FILE = "🎙️ I could not read that file as audio (is it damaged?). Could you type it?"
VOICE_EMPTY = "🎙️ I didn't catch anything in the audio (silence?). Could you repeat or type it?"
VOICE_RATE_LIMITED = (
    "⏳ Groq reached its audio limit ({scope}). Send it again in {wait}, "
    "or type it."
)
VOICE_UNAVAILABLE = (
    "😕 Voice transcription is not available right now. Try again in a while or "
    "type it."
)
VOICE_AUTH = (
    "🔑 Groq refused the API key while transcribing (HTTP {status}); whoever runs Rumi must "
    "check llm.api_key."
)
VOICE_MODEL_GONE = (
    "🧩 Groq does not serve the voice model “{model}”; whoever runs Rumi must change "
    "voice.model."
)
STATUS_VOICE = "Audio transcribed today: {used} of {limit} (model {model})"
# photos and documents (rumi/media/, Assistant.handle_media)
PHOTO_ORIGIN = "[photo, described by the vision model {model}]"
PHOTO_CAPTION = "Text sent with it: {caption}"
PHOTO_DISABLED = (
    "🖼️ I received a photo, but image description is disabled in this installation "
    "(vision.enabled). Could you tell me what's in it?"
)
PHOTO_TOO_LARGE = (
    "🖼️ The image is too large ({size_mb:.1f} MB; at most {max_mb:.1f} MB). "
    "Send it as a photo (Telegram compresses it) or a smaller one."
)
PHOTO_RATE_LIMITED = (
    "⏳ Groq reached its limit ({scope}) while looking at the photo. Send it again in {wait}."
)
PHOTO_UNAVAILABLE = (
    "😕 I can't describe the photo right now. Try again in a while or tell me what's in it."
)
PHOTO_AUTH = (
    "🔑 Groq refused the API key while describing the photo (HTTP {status}); whoever runs "
    "Rumi must check llm.api_key."
)
PHOTO_MODEL_GONE = (
    "🧩 Groq does not serve the vision model “{model}”; whoever runs Rumi must change "
    "vision.model."
)
PHOTO_REFUSED = (
    "🧩 Groq refused the photo (HTTP 400): either the image is damaged, or the model “{model}” "
    "does not accept images (whoever runs Rumi must check vision.model)."
)
PHOTO_EMPTY = "🖼️ The vision model could not describe the photo. Could you tell me what's in it?"
DOCUMENT_ORIGIN = (
    "[document “{name}” ({size}) received and saved in the sandbox: {path}]"
)
DOCUMENT_UNSUPPORTED = (
    "📎 I don't know how to use “{name}”: I accept photos and text, PDF or CSV documents. "
    "(To import memory, send the file with /import as caption.)"
)
DOCUMENT_TOO_LARGE_FOR_WORKSPACE = (
    "📎 “{name}” is too large ({size_mb:.1f} MB; at most {max_mb:.1f} MB)."
)
DOCUMENT_NO_SANDBOX = (
    "📎 I received “{name}”, but I have no sandbox to keep it in ({reason}). "
    "I didn't save it; send it again when it's available."
)
DOCUMENT_SANDBOX_DOWN = "the sandbox is unavailable right now; /status says why"
DOCUMENT_SANDBOX_OFF = "the sandbox is disabled in this installation (sandbox.enabled)"
DOCUMENT_SAVE_FAILED = "📎 I could not save “{name}” in the sandbox: {reason}. Try again."
DOCUMENT_WORKSPACE_FULL = "the workspace is full (sandbox.workspace_size)"
DOCUMENT_SANDBOX_FAILED = "the sandbox failed (the details are in the log)"
DOCUMENTS_DISABLED = (
    "📎 I received “{name}”, but receiving documents is disabled in this installation "
    "(documents.enabled)."
)
TERMINAL_AUDIO_USAGE = "Usage in the terminal: /audio <path of an audio file>"

FORGOT_ONE = "memory {ids}"
FORGOT_MANY = "{count} memories ({ids})"
FORGOT_HISTORY = " and its history ({count} earlier versions)"
FORGOT_HISTORY_ONE = " and its history (1 earlier version)"
FORGOT_REPLY = (
    "🗑️ Forgotten: {what}. Erased from the database, the search indexes and MEMORY.md; I will "
    "not learn it again by myself. What was said in other words is still in the history: "
    "/redact <text> erases it."
)
REDACTED_TOMBSTONE = "[erased at the user's request]"
REDACT_COMMAND_DESCRIPTION = "Erase a text from the conversation: /redact <text>"
REDACT_USAGE = (
    "Tell me which text to erase: /redact <text>. I remove it from the history, the active "
    "conversation, the daily logs, the snapshots and the memory; every message keeps its "
    "number and time."
)
REDACT_TOO_SHORT = (
    "That text is too short to erase safely (at least {min} characters): it would match "
    "ordinary words. Nothing was erased."
)
REDACT_TOMBSTONE_TEXT = (
    "I can't erase that text: it is part of the erasure mark. Nothing was erased."
)
REDACT_NOTHING = "I didn't find that text in the conversation or the memory; nothing was erased."
REDACT_NOTHING_LEFT = "nothing (it was already gone)"
REDACT_CONFIRM = (
    "That text is in {where}. Erase it? The messages will read «{tombstone}» (they keep their "
    "number and time) and this cannot be undone. Answer /redact yes or /redact no (5 minutes)."
)
REDACT_OFFER = (
    "Shall I also erase the {count} mentions in the history? The messages will read "
    "«{tombstone}». Answer /redact yes or /redact no (5 minutes)."
)
REDACT_OFFER_ONE = (
    "Shall I also erase the mention in the history? The message will read «{tombstone}». "
    "Answer /redact yes or /redact no (5 minutes)."
)
REDACT_YES_BUTTON = "🗑️ Yes, erase"
REDACT_NO_BUTTON = "No"
REDACT_EXPIRED = "No erasure is waiting for an answer (or it expired); ask with /redact <text>."
REDACT_CANCELLED = "All right, I erase nothing from the conversation."
REDACT_DONE = (
    "✂️ Erased: {what}. Every message keeps its number and time; the text is no longer in this "
    "chat's files or indexes and I will not learn it again."
)
REDACT_MENTIONS_ONE = "1 mention in the history"
REDACT_MENTIONS = "{count} mentions in the history"
REDACT_WHERE = " ({parts})"
REDACT_AND = " and "
REDACT_PART_MESSAGES = "messages: {count}"
REDACT_PART_CONTEXT = "active conversation: {count}"
REDACT_PART_DAILY = "daily-log lines: {count}"
REDACT_PART_SNAPSHOTS = "snapshot lines: {count}"
REDACT_PART_NAMES = "snapshot names: {count}"
REDACT_PART_PENDING = "pending extractions: {count}"
REDACT_PART_SECTIONS = "lines of your profile: {count}"
REDACTIONS_COUNT = "Erased at your request: {count} ({messages})"

IMPORT_SKIPPED_FORGOTTEN_ONE = (
    " 🗑️ 1 memory in the file was one you had already forgotten in this chat; "
    "I didn't bring it back."
)
IMPORT_SKIPPED_FORGOTTEN = (
    " 🗑️ {count} memories in the file were ones you had already forgotten in this chat; "
    "I didn't bring them back."
)


# both languages and /status for people (rumi/chat_language.py, rumi/core/, agent/status.py)
MODEL_REPLY_LANGUAGE = (
    "Reply language: English. Always answer in English unless the person writes in another "
    "language or asks for another one."
)
STATUS_UPTIME = "Running for {uptime}"
STATUS_DETAIL_HINT = "Context and memory details: /status details"
STATUS_KEY_OK = "Groq key: works (last answer {ago} ago)"
STATUS_KEY_REFUSED = (
    "Groq key: REFUSED on the last call; whoever runs Rumi must check llm.api_key "
    "(`rumi doctor` checks it)"
)
STATUS_KEY_UNTRIED = "Groq key: not tried yet since start-up"
STATUS_USAGE_TODAY = "Groq use today: {tokens} tokens; answers: {answers}"
THOUSANDS_SEPARATOR = ","
DECIMAL_SEPARATOR = "."

# Dates as Rumi writes them (`messages.format_datetime`): the month by name, never ambiguous.
DATE_FORMAT = "{m.day} {mon} {m.year}"
DATETIME_FORMAT = "{m.day} {mon} {m.year}, {m.hour:02d}:{m.minute:02d}"
DATE_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                "Dec")
# plurals for messages.count_of: "<NOUN>_ONE" / "<NOUN>_MANY"
MESSAGES_ONE = "{n} message"
MESSAGES_MANY = "{n} messages"
ITEMS_ONE = "{n} item"
ITEMS_MANY = "{n} items"
TOKENS_ONE = "{n} token"
TOKENS_MANY = "{n} tokens"
MODELS_ONE = "{n} model"
MODELS_MANY = "{n} models"
STATUS_SANDBOX_RUNNING = "Sandbox: running"
STATUS_MEMORIES = "Memories kept: {active}"
STATUS_MEMORIES_KEYWORD_ONLY = " (keyword search only; /status details says why)"
STATUS_MEMORY_STORE = "Memory in PostgreSQL {where}, as \"{name}\""
STATUS_MEMORY_STORE_SHARED = "; also shared by: {others}"


# format_duration (rumi/messages.py) in this language
DURATION_DAY = "{n} day"
DURATION_DAYS = "{n} days"
DURATION_DAYS_HOURS = "{days} {hours} h"


TERMINAL_WELCOME = (
    "Rumi in the terminal. Type /help to see the commands; Ctrl-D or /exit to quit."
)
TERMINAL_BYE = "Goodbye!"
TERMINAL_NOTICE = "[notice] {text}"
TERMINAL_BUTTON = "{label}: type {command}"
TERMINAL_YES_NO = "(or answer y/n)"
TERMINAL_PROMPT = "you> "

# /remember, /forget, /memory, /search, /clear, /reset, /export, /import (memory/commands.py)
REMEMBER_EMPTY = "What should I remember? E.g.: /remember work: Google"
REMEMBER_USAGE = "Tell me what to remember: /remember <text> or /remember key: value"
REMEMBER_FAILED = "I could not save it: {reason}"
REMEMBERED = "✅ I'll remember: {line}"
FORGET_USAGE = "Tell me what to forget: /forget <key, text or #id>"
FORGET_LIST_EXPIRED = (
    "That list has expired or doesn't exist; ask again with /forget <key, text or #id>."
)
FORGET_PICK_NUMBER = "Pick a number between 1 and {count}, or “all”."
FORGET_CANCELLED = "All right, I won't forget anything."
FORGOT_EARLIER = (
    "🗑️ I erased {count} (of {ids}); the current version does "
    "not say it and is kept."
)
FORGOT_EARLIER_WHAT = "{count} of {ids}"
FORGOT_EARLIER_ALSO = " I also erased {count} (of {ids})."
EARLIER_VERSIONS_ONE = "{n} earlier version"
EARLIER_VERSIONS_MANY = "{n} earlier versions"
EARLIER_SAYING_ONE = "{n} earlier version that said it"
EARLIER_SAYING_MANY = "{n} earlier versions that said it"
FORGET_NO_MATCH = "I found nothing matching “{query}”."
FORGET_MATCHES = "I found {count} matching memories:"
FORGET_WHICH = "Which one should I forget? Answer /forget <number>, /forget all or /forget no."
FORGET_ALL_BUTTON = "🗑️ All"
FORGET_CANCEL_BUTTON = "Cancel"
FORGET_NOT_ACTIVE = "That memory was no longer active."
CLEARED = "🧹 Conversation emptied ({count})."
CLEARED_SNAPSHOT = "I saved the last lines in memory/snapshots/{name}."
CLEARED_LEARNED = "I learned {things}."
NEW_THINGS_ONE = "{n} new thing"
NEW_THINGS_MANY = "{n} new things"
CLEARED_PENDING = "I could not extract memories now; I'll try again later."
CLEARED_MEMORY_INTACT = "Long-term memory is untouched."
RESET_FRESH = "🔄 Session reset: I'm starting from scratch."
RESET_LEARNED = " Before that I learned {things} from the conversation."
THINGS_ONE = "{n} thing"
THINGS_MANY = "{n} things"
RESET_MEMORY_KEPT = " What I saved in long-term memory is still there."
EXPORT_READY = (
    "📦 Here is your memory. To restore it use /import: on Telegram, send me this file with "
    "the caption /import; in the terminal, /import <path>."
)
IMPORT_USAGE = "Send me the exported .tar.gz file with the caption /import."
IMPORT_REJECTED = "⛔ I did not import the file: {reason}. Nothing was changed."
IMPORTED = "📥 Imported: {added} new memories, {written} files added, {merged} merged."
IMPORT_KEPT = " I kept your version of: {files}."
IMPORT_ERROR_LINE = "line {line}: {reason}"
IMPORT_INVALID = (
    " ⚠️ {count} memories in memories.jsonl were not valid and I did not import them ({shown})."
)
MEMORY_ACTIVE = "🧠 Active memories: {count}"
MEMORY_TYPE_LABELS: dict[str, str] = {
    "fact": "facts", "preference": "preferences", "decision": "decisions",
    "entity": "entities", "temporal": "time-bound", "episodic": "episodes",
    "summary": "summaries", "profile": "profile",
}
MEMORY_RECENT = "Latest learned:"
MEMORY_MD_SIZE = "MEMORY.md: {size} bytes"
MEMORY_MD_MISSING = "MEMORY.md: does not exist yet"
MEMORY_PENDING = "Extractions waiting to be retried: {count}"
SEARCH_USAGE = "Tell me what to search for: /search <words>"
SEARCH_NONE = "I found nothing about “{query}”."
SEARCH_RESULTS = "🔎 Results for “{query}”:"

# /status details: the context (rumi/context/status.py)
CONTEXT_STATUS_HEADER = "Context (SMMA working memory):"
CONTEXT_STATUS_SECTIONS = "Sections:"
CONTEXT_SECTION_NOT_LOADED = " (not loaded)"
CONTEXT_SECTION_TRUNCATED = " (truncated: {tokens} tokens on disk)"
CONTEXT_SECTION_ITEMS = " · {count}"
CONTEXT_RECALLED = "   Recalled memories: {tokens} / {budget} tokens"
CONTEXT_CALIBRATION = "Calibration ({model}): ×{factor:.3f} from {samples} provider samples"
CONTEXT_CALIBRATION_NONE = "Calibration ({model}): no data yet (×1.000)"
CONTEXT_LAST_PROMPT = "Last prompt according to the provider: {tokens} tokens"
CONTEXT_TOKENIZER_FALLBACK = "Tokenizer: chars/4 estimate (tiktoken not available)"
CONTEXT_TAPE = "Immutable log: .smma/session_log.jsonl"
SECTION_TITLES: dict[str, str] = {
    "identity": "Identity and SMMA rules",
    "dashboard": "Metacognition dashboard",
    "user_profile": "User profile",
    "project_context": "Project context",
    "current_task": "Current task state",
    "agent_notes": "Agent notes",
    "action_log": "Action log",
    "workspace": "Workspace",
}

CONTEXT_PRESSURE = (
    "- Conversation: {conversation} / {room} tokens ({pressure} %); memory pressure "
    "{level} (optimizing from {optimize:g} %, automatic compaction from {hard:g} %); "
    "whole prompt {used} / {safe}"
)
# /status, once Groq told the account's per-minute cap and it is what limits the prompt
CONTEXT_CAP_ROOM = ("Groq's {tpm} tokens/min cap leaves {room} tokens for the "
                    "conversation (model window {window}k)")
CONTEXT_LEVELS: dict[str, str] = {"BAJA": "LOW", "MEDIA": "MEDIUM", "ALTA": "HIGH",
                                  "CRÍTICA": "CRITICAL"}
CONTEXT_DISK_LOADED = "- Disk sections loaded: {loaded}/{total}"
CONTEXT_ITEMS = "- Messages in context: {count} (#{first}…#{last})"
CONTEXT_PINNED = "- Pinned: {ids}"
CONTEXT_FAILING_TOOL = "- ⚠ The tool {tool} has failed {count} times"
CONTEXT_MODEL_NOTES = "- Notes for the model: {count}"

# /import and /remember input problems (memory/archive.py, transfer.py, codec.py)
ARCHIVE_BOMB = "the compression looks suspicious (a possible decompression bomb)"
ARCHIVE_NOT_TAR = "it is not a valid .tar.gz file"
ARCHIVE_INFLATED_TOO_LARGE = "the uncompressed content is too large"
ARCHIVE_PAX_GLOBAL = "a global pax header is not allowed"
ARCHIVE_META_TOO_LARGE = "metadata header too large ({size} KiB; at most {max} KiB)"
ARCHIVE_SPARSE = "entry type not allowed (sparse file)"
ARCHIVE_TOO_LARGE = "the file is too large ({size} KiB; at most {max} KiB)"
ARCHIVE_MEMBER_TOO_LARGE = "“{name}” is too large"
ARCHIVE_DUPLICATE = "“{name}” appears twice"
ARCHIVE_UNREADABLE = "“{name}” cannot be read"
ARCHIVE_NOT_TEXT = "“{name}” is not text (UTF-8): nothing was imported"
ARCHIVE_TRUNCATED = "“{name}” is truncated"
ARCHIVE_BAD_PATH = "absolute or invalid path: “{name}”"
ARCHIVE_DOTDOT = "path with “..”: “{name}”"
ARCHIVE_LINK = "link not allowed: “{name}”"
ARCHIVE_DEVICE = "device not allowed: “{name}”"
ARCHIVE_ENTRY_TYPE = "entry type not allowed: “{name}”"
ARCHIVE_UNEXPECTED = "unexpected file: “{name}”"
ARCHIVE_NO_MANIFEST = "manifest.json is missing"
ARCHIVE_MANIFEST_JSON = "manifest.json is not valid JSON"
ARCHIVE_NOT_RUMI = "it is not a file exported by Rumi"
ARCHIVE_VERSION = "unsupported format version: {version}"
ARCHIVE_MANIFEST_FILES = "manifest.json does not list the files"
ARCHIVE_NOT_IN_MANIFEST = "“{name}” is not in the manifest"
ARCHIVE_CHECKSUM = "the checksum of “{name}” does not match"
ARCHIVE_MISSING = "files listed in the manifest are missing: {names}"
ARCHIVE_MEMORIES_INVALID = "memories.jsonl is not valid"
IMPORT_LINE_TOO_LONG = "line too long"
IMPORT_LINE_NOT_JSON = "not valid JSON"
IMPORT_LINE_NOT_OBJECT = "a JSON object was expected"
IMPORT_LINE_STATUS = "unknown status {status}"
IMPORT_LINE_DATE = "invalid date"
INPUT_FIELDS: dict[str, str] = {
    "el recuerdo": "the memory", "el resumen": "the summary", "la clave": "the key",
    "el bloque": "the block", "el nombre": "the name", "la categoría": "the category",
}
INPUT_MISSING = "Missing: {what}."
INPUT_NOT_UTF8 = "{what} is not valid UTF-8 text."
INPUT_NOT_TEXT = "{what} must be text."
INPUT_BINARY = "{what} looks binary, not text."
INPUT_EMPTY = "{what} is empty."
INPUT_TOO_LONG = "{what} is too long ({length} characters; at most {max})."
MD_LINE = "line {line}: {reason}"
MD_UNKNOWN_SECTION = "unknown section “{title}” (use: {known})"
MD_NOT_AN_ITEM = "not a memory; each memory starts with “- ”"
MD_OUTSIDE_SECTION = "the memory is outside a “## …” section"
MD_EMPTY_ITEM = "the memory is empty"
MD_ID_TOO_LARGE = ("the number [#{memory_id}] is too large to be a memory's; remove it to keep "
                   "the line as a new memory")
MD_TOO_LARGE = "MEMORY.md is {size} bytes; the maximum is {max}"

# -- progress while a turn runs (terminal indicator, Telegram status message) ----------------

TERMINAL_THINKING = "thinking…"
TERMINAL_LOG_FILE = "(log in {path}; --verbose shows it here)"
PROGRESS_TOOL_LINE = "🔧 `{label}`"
PROGRESS_WORKING = "⏳ Working…"
PROGRESS_DONE = "✔️ Done ({steps}):"
PROGRESS_STOPPED = "⏹️ Stopped ({steps}):"
PROGRESS_MORE = "… and {steps} more"


def progress_steps(count: int) -> str:
    return "1 step" if count == 1 else f"{count} steps"

# -- group permissions: chat-wide commands only for a group's admins -------------------------

GROUP_ADMIN_ONLY = "⛔ In a group, only an admin can use /{name}. Nothing was changed."
GROUP_ADMIN_REFUSALS: dict[str, str] = {
    "redact": ("⛔ In a group the conversation belongs to everyone: only an admin can erase "
               "text from it. To forget a memory of yours use /forget. Nothing was erased."),
    "reset": "⛔ In a group, only an admin can restart everyone's conversation (/reset). "
             "Nothing was changed.",
    "clear": "⛔ In a group, only an admin can empty everyone's conversation (/clear). "
             "Nothing was changed.",
    "import": "⛔ In a group, only an admin can import an archive into the group's memory "
              "(/import). Nothing was changed.",
    "timezone": "⛔ In a group, only an admin can change the group's time zone; /timezone "
                "alone shows the current one. Nothing was changed.",
    "memorymd": "⛔ In a group, only an admin can accept or discard a MEMORY.md change (by "
                "typing /memorymd yes or /memorymd no). Nothing was changed.",
    "cancel": "⛔ In a group, a reminder can only be cancelled by whoever asked for it or by "
              "an admin. Nothing was changed.",
}
