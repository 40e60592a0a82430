"""A small, honest Spanish/English detector for tests: which distinctive words of each
language a text uses.

Only words common in one language and absent (or near absent) from the other count: "de",
"que", "está" are Spanish, "the", "you", "is" English; words both share ("no", "me", "a") and
names (Groq, Docker, MEMORY.md) do not. Commands, code spans, paths and numbers are removed
first, since `/forget todos` or `llm.api_key` are the same in both. Spanish letters (ñ, ¿, ¡,
accented vowels) count as Spanish.
"""

from __future__ import annotations

import re

SPANISH = frozenset({
    "el", "la", "los", "las", "que", "de", "del", "en", "es", "un", "una", "unos", "unas",
    "y", "con", "por", "para", "su", "sus", "tu", "tus", "lo", "se", "al", "pero", "como",
    "hoy", "ya", "desde", "hace", "puedo", "quieres", "ahora", "nada", "todo", "todos",
    "esto", "este", "esta", "eso", "sobre", "hasta", "cuando", "recuerdos", "memoria",
    "clave", "modelo", "sesión", "ocupado", "parado", "olvidar", "recordar", "dime", "aquí",
    "sigue", "mensaje", "escribe", "buscar", "elementos", "ver", "comandos", "presentación",
})
ENGLISH = frozenset({
    "the", "and", "you", "your", "is", "are", "was", "what", "with", "to", "of", "for",
    "can", "not", "this", "that", "have", "has", "it", "on", "by", "or", "be", "will",
    "i'm", "i'll", "don't", "can't", "won't", "here", "there", "memory", "memories", "key",
    "today", "running", "busy", "stopped", "see", "type", "tell", "something", "working",
    "message", "again", "still", "nothing", "found", "search", "forget", "remember",
    "model", "answer", "answers", "limit", "account", "try", "please",
})
SPANISH_LETTERS = re.compile(r"[ñáéíóú¿¡]")
_COMMAND_ARG = re.compile(r"/\w+\s+(?:on|off)\b")   # "/memory on" reads the same in both
_NOISE = re.compile(r"`[^`]*`|/\S+|\S*[._/\\@#:]\S*\w\S*|\b\w*\d\w*\b|\{[^}]*\}")
_WORD = re.compile(r"[a-záéíóúñü']+")


def _clean(text: str) -> str:
    return _NOISE.sub(" ", _COMMAND_ARG.sub(" ", text.lower()))


def _words(text: str) -> list[str]:
    return _WORD.findall(_clean(text))


def spanish_markers(text: str) -> set[str]:
    """The Spanish words (and letters) in `text`; empty means nothing reads as Spanish."""
    cleaned = _clean(text)
    found = {w for w in _words(text) if w in SPANISH}
    found |= set(SPANISH_LETTERS.findall(cleaned))
    return found


def english_markers(text: str) -> set[str]:
    """The English words in `text`; empty means nothing reads as English."""
    return {w for w in _words(text) if w in ENGLISH}


def language_of(text: str) -> str | None:
    """"es", "en", or None when the text gives no clear sign (or signs of both)."""
    es, en = spanish_markers(text), english_markers(text)
    if es and not en:
        return "es"
    if en and not es:
        return "en"
    return None
