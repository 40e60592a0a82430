"""A store URL as Rumi may show it: never its password.

`[store] url` (or `RUMI_STORE_URL`) holds the PostgreSQL password. Every place that names the
store — `rumi doctor`, /status, start-up errors, logs, `rumi store migrate` — renders it through
`redacted_url` or `endpoint`. Both work on malformed input too (a person's typo must not be
the one case that prints the secret): when the URL does not parse, less is shown, never more.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

DEFAULT_PORT = 5432
HIDDEN = "***"
# libpq accepts these in a URL's query string too (`?password=…`): hidden up to the next
# `&key=` (a stray '&' or '#' inside the password must not end the hiding early)
_SECRET_PARAMS = re.compile(r"(?is)\b(password|sslpassword|passfile)=.*?(?=&[a-z_]+=|$)")
# and in a libpq "key=value" string: a plain or a 'quoted value'
_SECRET_PAIRS = re.compile(r"(?i)\b(password|sslpassword|passfile)\s*=\s*('(?:[^'\\]|\\.)*'?|\S*)")


def _split_userinfo(url: str) -> tuple[str, str, str, str] | None:
    """(scheme, user, had_password, rest) split by hand: the password may hold '/', '?', '#'
    or '@' that a person forgot to percent-encode, so only the LAST '@' ends it."""
    scheme, sep, after = url.partition("://")
    if not sep:
        return None
    at = after.rfind("@")
    if at < 0:
        return scheme, "", "", after
    userinfo, rest = after[:at], after[at + 1 :]
    user, colon, _password = userinfo.partition(":")
    return scheme, user, colon, rest


def redacted_url(url: str) -> str:
    """`postgresql://rumi:***@db.casa:5432/rumi` for `postgresql://rumi:s3cret@db.casa:5432/rumi`."""
    url = url.strip()
    if "://" not in url:  # not a URL: a libpq "key=value" string, or garbage
        if "=" in url:
            return _SECRET_PAIRS.sub(lambda m: f"{m.group(1)}={HIDDEN}", url)
        return "(not a postgresql:// URL)"
    # the query's secrets first: an '@' inside one must not pass for the end of a userinfo
    parts = _split_userinfo(_SECRET_PARAMS.sub(lambda m: f"{m.group(1)}={HIDDEN}", url))
    assert parts is not None
    scheme, user, colon, rest = parts
    if not user and not colon:
        return f"{scheme}://{rest}"
    return f"{scheme}://{user}:{HIDDEN}@{rest}" if colon else f"{scheme}://{user}@{rest}"


def endpoint(url: str) -> str:
    """`host:port` of the store for one-line messages ("cannot reach db.casa:5432")."""
    parts = _split_userinfo(_SECRET_PARAMS.sub("", url.strip()))
    if parts is None:
        match = re.search(r"\bhost=([^\s]+)", url)
        port = re.search(r"\bport=(\d+)", url)
        host = match.group(1) if match else "localhost"
        return f"{host}:{port.group(1) if port else DEFAULT_PORT}"
    scheme, _user, _colon, rest = parts
    try:
        split = urlsplit(f"{scheme}://{rest}")
        host = split.hostname or "localhost"
        port = split.port or DEFAULT_PORT
    except ValueError:  # a port that is not a number, a broken IPv6 bracket
        return "(unreadable host in store.url)"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
