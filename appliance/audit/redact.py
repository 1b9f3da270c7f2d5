"""What the audit (and any other record a viewer may read) keeps of a value: secrets masked by what they are.

- A parameter named as a secret (a password, passphrase, secret, token, credential, an API/access/private key, a
  key export: encrypted, but the keys all the same) is masked; a parameter merely called `key` (a sysctl's name,
  a rule's key) is not.
- A `value` whose sibling `key`/`name` names a secret (`net.ipv4.tcp_fastopen_key`) is masked.
- Every URL with a host, anywhere in a string, keeps its scheme and host only: credentials (`user:pw@`) and the
  path, query and fragment go (for Slack, Teams or Discord webhooks the path *is* the credential).
"""

import re
from urllib.parse import urlsplit

MASK = "***"
SECRET_NAME = re.compile(
    r"passw|passphrase|secret|token|credential|authoriz|cookie|key[_-]?export|"
    r"(?:api|access|auth|private|secret|signing|encryption|license|ssh)[_-]?keys?$",
    re.IGNORECASE,
)
SECRET_SETTING = re.compile(r"passw|passphrase|secret|token|credential|(?:^|[_-])keys?$", re.IGNORECASE)
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"'`]*")
HOSTPORT = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::\d{1,5})?")


def secret_name(name) -> bool:
    """A parameter's name that says its value is a secret."""
    return bool(SECRET_NAME.search(str(name)))


def redact_url(url: str) -> str:
    """scheme://host[:port] of a URL, `***@` where it carried credentials and `/***` where it had a path, query or
    fragment; a URL whose host cannot be told apart from its credentials keeps only its scheme."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("://", 1)[0] + "://" + MASK
    credentials, _, hostport = parts.netloc.rpartition("@")
    before_query = url.split("?", 1)[0].split("#", 1)[0]
    if not parts.netloc and "@" not in before_query:
        return url  # no host (file:///…): nothing that authenticates
    if "@" in before_query.split("://", 1)[1][len(parts.netloc) :] or not HOSTPORT.fullmatch(hostport):
        return f"{parts.scheme}://{MASK}"  # an '@' after the host (a password with a '/'), or no host to keep
    rest = (parts.path not in ("", "/")) or parts.query or parts.fragment or url.endswith(("?", "#"))
    return f"{parts.scheme}://{MASK + '@' if credentials or '@' in parts.netloc else ''}{hostport}" + (
        f"/{MASK}" if rest else parts.path
    )


def redact_text(text: str) -> str:
    """text with every URL in it redacted (redact_url)."""
    return URL.sub(lambda m: redact_url(m.group(0)), text) if "://" in text else text


def _is_secret_setting(value: dict) -> bool:
    named = value.get("key", value.get("name"))
    return isinstance(named, str) and bool(SECRET_SETTING.search(re.split(r"[./]", named)[-1]))


def redact(value, *, depth: int = 0, max_items: int = 100, max_text: int = 500):
    """value (parsed JSON or form data) as the audit keeps it: secrets masked (see the module), nested containers
    bounded to max_items entries and depth 8, strings to max_text characters (after redaction)."""
    if depth > 8:
        return "…"
    if isinstance(value, dict):
        setting = _is_secret_setting(value)
        return {
            redact_text(str(k))[:100]: (
                MASK if secret_name(k) or (setting and k == "value") else redact(v, depth=depth + 1)
            )
            for k, v in list(value.items())[:max_items]
        }
    if isinstance(value, list | tuple):
        return [redact(v, depth=depth + 1) for v in list(value)[:max_items]]
    if isinstance(value, str):
        return redact_text(value)[:max_text]
    return value
