"""Make model output fit Telegram: split at 4096 characters and convert Markdown to HTML.

Splitting happens on the raw Markdown, preferring paragraph, then line boundaries, and never
inside a code block unless the block alone is too long — then the block is closed and
reopened so each part still renders as code. The HTML conversion covers what models write
(fenced and inline code, bold, italics, strikethrough, links, headings, bullets); anything it
gets wrong is caught by Telegram's parser and the channel resends the chunk as plain text.
"""

from __future__ import annotations

import html
import re

TELEGRAM_LIMIT = 4096
FENCE = re.compile(r"^\s*```")


def split_message(text: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """Split `text` into chunks of at most `limit` characters without breaking code blocks."""
    text = text.strip("\n")
    chunks: list[str] = []
    while len(text) > limit:
        cut, reopen = _find_cut(text, limit)
        head, tail = text[:cut].rstrip(), text[cut:].lstrip("\n")
        if reopen is not None:
            head = head + "\n```"
            tail = reopen + "\n" + tail
        if head.strip():
            chunks.append(head)
        text = tail
    if text.strip():
        chunks.append(text)
    return chunks


def _find_cut(text: str, limit: int) -> tuple[int, str | None]:
    """Where to cut and, when cutting inside a code block, the fence line to reopen with."""
    paragraph = line_out = line_in = 0
    opener_at_line_in: str | None = None
    opener: str | None = None
    opened_at = 0
    pos = 0
    previous_blank = False
    for line in text.splitlines(keepends=True):
        end = pos + len(line)
        if end > limit:
            break
        if FENCE.match(line):
            if opener is None:
                opener, opened_at = line.strip(), pos
            else:
                opener = None
        blank = not line.strip()
        if opener is None:
            line_out = end
            if blank or previous_blank:
                paragraph = end
        elif end <= limit - 4:
            line_in, opener_at_line_in = end, opener
        previous_blank = blank
        pos = end
    best_out = paragraph if paragraph >= limit // 3 else line_out
    open_at_limit = _inside_fence(text[:limit]) is not None
    if best_out > 0:
        if not open_at_limit or best_out >= limit // 3:
            return best_out, None
        closing = text.find("\n```", opened_at + 3)
        block_len = (len(text) if closing < 0 else closing + 4) - opened_at
        if block_len <= limit or line_in == 0:
            return best_out, None  # the whole block fits in the next message
    if line_in > 0:
        return line_in, opener_at_line_in
    # One enormous line: cut at the last space, else hard at the limit.
    inside = _inside_fence(text[:limit])
    room = limit - 4 if inside else limit
    space = text.rfind(" ", room // 2, room)
    cut = space + 1 if space > 0 else room
    return cut, inside


def _inside_fence(prefix: str) -> str | None:
    opener = None
    for line in prefix.splitlines():
        if FENCE.match(line):
            opener = None if opener is not None else line.strip()
    return opener


CODE_BLOCK = re.compile(r"```([\w+#.-]*)[^\n]*\n(.*?)(?:\n?```|\Z)", re.DOTALL)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
BOLD = re.compile(r"(\*\*|__)(?=\S)([^<>\n]+?)(?<=\S)\1")
ITALIC_STAR = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*<>\n]+?)(?<=\S)\*(?![*\w])")
ITALIC_UNDER = re.compile(r"(?<![\w_])_(?=[^\s_])([^_<>\n]+?)(?<=\S)_(?![\w_])")
STRIKE = re.compile(r"~~(?=\S)([^<>\n]+?)(?<=\S)~~")
LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
BULLET = re.compile(r"^(\s*)[-*+]\s+", re.MULTILINE)


def markdown_to_html(text: str) -> str:
    """Convert the Markdown models write into the HTML subset Telegram accepts."""
    out: list[str] = []
    pos = 0
    for match in CODE_BLOCK.finditer(text):
        out.append(_inline(text[pos:match.start()]))
        lang, code = match.group(1), match.group(2)
        body = html.escape(code.rstrip("\n"), quote=False)
        if lang:
            out.append(f'<pre><code class="language-{html.escape(lang)}">{body}</code></pre>')
        else:
            out.append(f"<pre>{body}</pre>")
        pos = match.end()
    out.append(_inline(text[pos:]))
    return "".join(out)


def _inline(text: str) -> str:
    parts: list[str] = []
    pos = 0
    for match in INLINE_CODE.finditer(text):
        parts.append(_format(text[pos:match.start()]))
        parts.append(f"<code>{html.escape(match.group(1), quote=False)}</code>")
        pos = match.end()
    parts.append(_format(text[pos:]))
    return "".join(parts)


def _format(text: str) -> str:
    text = html.escape(text, quote=False)
    text = HEADING.sub(r"<b>\1</b>", text)
    text = BULLET.sub(r"\1• ", text)
    text = LINK.sub(lambda m: f'<a href="{m.group(2).replace(chr(34), "&quot;")}">'
                              f"{m.group(1)}</a>", text)
    text = BOLD.sub(r"<b>\2</b>", text)
    text = STRIKE.sub(r"<s>\1</s>", text)
    text = ITALIC_STAR.sub(r"<i>\1</i>", text)
    text = ITALIC_UNDER.sub(r"<i>\1</i>", text)
    return text
