"""What an Operation is called on its pages: a title in words ("Unlock tank/secret on lab", not
`encryption.unlock host:lab:encryption:tank/secret`) and a link back to the page it came from.

The app that owns a kind declares it in its titles.py (found at start, as the runners are), keyed by the kind's name:
renaming a kind is a one-line change there. A kind nobody described is shown by its name, as before.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from django.urls import NoReverseMatch, reverse

from appliance.operations import LOCKS, lock_key

# An operation's words: its params (lists joined), "host" (its name), "host_id", "subject" (what its lock names under the host, e.g.
# "dataset:tank/a"), "object" (the subject without such a "dataset:" word) and each declared row's name.
Words = dict[str, str]


@dataclass(frozen=True)
class Title:
    """text: a str.format template over the operation's words (or a function of them); back: the URL name of the
    page it came from, back_arg the word its URL takes (a row's id), or a function of the words giving the URL (or
    (label, URL));
    back_label: the link's words; rows: params holding a row's id -> the model whose str() names the row."""

    text: str | Callable[[Words], str]
    back: str | Callable[[Words], str | tuple[str, str] | None] = ""
    back_arg: str = ""
    back_label: str = "Back"
    rows: dict[str, type] = field(default_factory=dict)


TITLES: dict[str, Title] = {}


def operation_titles(titles: dict[str, Title]) -> None:
    """Declare what operations of these kinds are called and where they came from (from an app's titles.py)."""
    for kind, title in titles.items():
        if TITLES.get(kind, title) != title:
            raise ValueError(f"two titles for operation kind {kind}")
        TITLES[kind] = title


def operation_words(op) -> Words:
    words = {k: ", ".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in (op.params or {}).items()}
    lock = LOCKS.get(op.runner or op.kind, ("", ""))[0]
    prefix = (lock_key(op.host, lock) if op.host else ":".join(["tarn", *([lock] if lock else [])])) + ":"
    subject = op.target[len(prefix) :] if op.target.startswith(prefix) else ""
    kind_word, _, rest = subject.partition(":")
    words |= {"host": op.host.name if op.host else "", "host_id": str(op.host_id or ""), "subject": subject}
    words["object"] = rest if rest and kind_word.replace("-", "").isalpha() else subject
    title = TITLES.get(op.kind)
    for key, model in (title.rows if title else {}).items():
        row = model._default_manager.filter(pk=(op.params or {}).get(key)).first()
        words[f"{key}_name"] = str(row) if row else f"#{(op.params or {}).get(key)} (gone)"
    return words


def operation_title(op) -> str:
    """The operation in words, "on <host>" when it ran on one; its kind when nobody described it."""
    title = TITLES.get(op.kind)
    if title is None:
        return op.kind
    words = operation_words(op)
    try:
        text = title.text(words) if callable(title.text) else title.text.format_map(words)
    except (KeyError, IndexError, ValueError, AttributeError):
        return op.kind  # params of an older release: the kind still says what it was
    return f"{text} on {op.host.name}" if op.host else text


def operation_back(op) -> tuple[str, str] | None:
    """(label, URL) of the page the operation came from, or None."""
    title = TITLES.get(op.kind)
    if title is None or not title.back:
        return None
    words = operation_words(op)
    try:
        label = title.back_label.format_map(words)
        if callable(title.back):
            url = title.back(words)
            label, url = url if isinstance(url, tuple) else (label, url)
        else:
            url = reverse(title.back, args=[words[title.back_arg]] if title.back_arg else [])
    except (KeyError, NoReverseMatch, ValueError):
        return None
    return (label, url) if url else None


operation_titles(
    {
        "appliance.host_probe": Title("Probe the host", "host-detail", back_arg="host_id", back_label="Back to {host}"),
    }
)
