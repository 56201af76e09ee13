"""issue 26 #1, #10, #11: redaction.redact takes credentials out of any text, in the forms an
error message shows them; redaction.for_terminal makes every control character visible."""

import pytest

from llmbench.redaction import add_secret, for_terminal, redact

REDACTED = [
    # (text, what must not survive, what must)
    ("ValueError: Invalid header value b'Bearer sk-abcdefgh0123456789\\n'", "abcdefgh0123", "Bearer ***"),
    ("Invalid header value b'Bearer sk-abcdefgh0123456789\\r\\nX-Injected: 1'", "abcdefgh0123", "Bearer ***"),
    ("headers: {'Authorization': 'Bearer tok.en-123456'}", "tok.en-123456", "Bearer ***"),
    ("x-api-key: AKIA0123456789ABCDEF", "AKIA0123", "x-api-key: ***"),
    ("a key sk-proj-0123456789abcdef in the text", "0123456789abcdef", "a key *** in the text"),
    ('missing "=" after "postgresql://user:hunter2@db:5432/x"', "hunter2", "postgresql://user:***@db:5432/x"),
    ("host=db user=u password=hunter2 dbname=x", "hunter2", "password=*** dbname=x"),
    ("postgresql://db/x?password=hunter2&sslmode=require", "hunter2", "password=***&sslmode=require"),
    ("Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy", "Basic ***"),
]


@pytest.mark.parametrize("text,gone,kept", REDACTED, ids=[r[1] for r in REDACTED])
def test_credentials_in_their_error_forms_are_masked(text, gone, kept):
    out = redact(text)
    assert gone not in out and kept in out, out


def test_ordinary_error_text_is_left_alone():
    text = "HTTPConnectionPool(host='127.0.0.1', port=9): connection refused; basic checks passed; bearer of news"
    assert redact(text) == text


def test_a_registered_secret_is_masked_as_given_escaped_stripped_and_split():
    pasted = "zq-not-a-known-format-9f8e7d\r\nX-Injected: 1"  # no pattern knows this shape
    add_secret(pasted)
    for shown in (pasted, repr(pasted), pasted.strip(), "zq-not-a-known-format-9f8e7d"):
        assert "9f8e7d" not in redact(f"failed: {shown}")
    assert redact("failed: zq-not-a-known") == "failed: zq-not-a-known"  # a prefix is not the secret
    assert "s3cr3tpw" not in redact("token: 's3cr3tpw'", secrets=["s3cr3tpw"])


def test_for_terminal_escapes_every_control_character_and_bidi_override():
    text = "HTTP 500: \x1b]0;title\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\r\n\x9b31m\u202eevil\u2066x\tend"
    out = for_terminal(text)
    assert out.isprintable() and out == (
        "HTTP 500: \\x1b]0;title\\x07\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\x0d\\x0a\\x9b31m\\u202eevil\\u2066x\\x09end")
    assert for_terminal("plain text, ünïcödé ✓") == "plain text, ünïcödé ✓"
