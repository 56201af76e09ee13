"""What leaves the process as text: secrets taken out (redact) and a server's control characters
made visible (for_terminal).

redact() is applied where an error is recorded (results.events), stored (the targets table),
alerted (plugins/llmbench_airflow.py) and printed (the CLI); for_terminal() wherever text a server
wrote reaches a terminal (the CLI's progress and error lines). A request record's error_detail
keeps the server's raw text (JSON and Parquet carry any character safely, and the raw bytes are
the evidence); what prints it escapes it.

Imports nothing of llmbench: every layer may use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["add_secret", "for_terminal", "redact", "MASK"]

MASK = "***"
# Values this process was given as secrets (an API key): masked wherever they appear, in any form
# an error message may show them (as given, stripped, Python-escaped, split at a control character).
_SECRETS: set[str] = set()
_SHORTEST_SECRET = 6  # shorter pieces (a "1" after an injected header) would mask ordinary text

_PATTERNS = (
    # Authorization: Bearer <token> / Basic <credentials>, raw or inside an escaped bytes repr
    # (a token's characters, RFC 6750; the escaped "\n" of a bytes repr ends it)
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}"), r"\1 " + MASK),
    (re.compile(r"\b(Basic)\s+[A-Za-z0-9+/]{8,}=*"), r"\1 " + MASK),
    (
        re.compile(
            r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key)(['\"]?\s*[:=]\s*['\"]?)(?!bearer\b|basic\b)[^\s'\",;]+"
        ),
        r"\1\2" + MASK,
    ),
    # OpenAI-style keys (sk-..., sk-proj-...) wherever they are
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), MASK),
    # a URL's or DSN's password: scheme://user:password@host
    (re.compile(r"\b([a-z][a-z0-9+.\-]*://[^\s:/@'\"]*):[^\s@/'\"]*@"), r"\1:" + MASK + "@"),
    # libpq key=value connection strings: password=...
    (re.compile(r"(?i)\b(password|passwd|pwd)(\s*=\s*)('[^']*'|[^\s&'\"]+)"), r"\1\2" + MASK),
)

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _forms(secret: str) -> set[str]:
    """The ways a secret shows up in an exception's text."""
    forms = {secret, secret.strip(), repr(secret)[1:-1], secret.encode("unicode_escape").decode("ascii", "replace")}
    forms.update(_CONTROL.split(secret))  # the key before a pasted newline is the key
    return {f for f in forms if len(f) >= _SHORTEST_SECRET}


def add_secret(secret: str | None) -> None:
    """Mask this value (and its escaped and stripped forms) in everything redact() sees from now on."""
    if secret:
        _SECRETS.update(_forms(secret))


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` without credentials: the registered secrets and `secrets` (in every form), bearer
    tokens, authorization headers, sk- keys, URL passwords and libpq password= values."""
    known = set(_SECRETS)
    for s in secrets:
        if s:
            known |= _forms(s)
    for s in sorted(known, key=len, reverse=True):  # longest first: a form inside another
        text = text.replace(s, MASK)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


# Unicode's bidirectional overrides and isolates reorder what a terminal shows (Trojan Source).
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def for_terminal(text: str) -> str:
    """`text` safe to print: every control character (C0, DEL, C1: ESC sequences, carriage
    returns, newlines, OSC 52 clipboard writes) and bidi override shown escaped (\\x1b), so a
    server's bytes cannot move the cursor, retitle the window, clear the screen or fill the
    clipboard. One line in, one line out."""
    return _BIDI.sub(_escape, _CONTROL.sub(_escape, text))
