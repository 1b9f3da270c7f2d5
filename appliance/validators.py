"""Validators every app's forms and serializers share for the text people type.

no_bidi refuses the invisible characters that change the order text is displayed in (the "Trojan Source" trick):
a profile titled "\u202eevil" shows as "live", a reason can appear to say the opposite of what is stored, and a name
can look like another one in a list or an audit entry. Letters of right-to-left scripts are fine: the browser orders
those by itself; only the explicit direction controls are refused. It is a Django validator, so a form shows it on
the field and DRF turns it into a 400 naming the field."""

from django.core.exceptions import ValidationError

# Embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069), the LRM/RLM marks (U+200E, U+200F) and the
# Arabic letter mark (U+061C), which is a bidi control as well.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
BIDI_MESSAGE = (
    "Text-direction control characters (U+202A to U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C) are not "
    "allowed: they make text display in another order than it is stored. Found {found}."
)


def no_bidi(value) -> None:
    """Refuse text containing a bidi control character, naming the first one found and where."""
    if not isinstance(value, str):
        return
    for position, char in enumerate(value, 1):
        if char in BIDI_CONTROLS:
            found = f"U+{ord(char):04X} at character {position}"
            raise ValidationError(BIDI_MESSAGE.format(found=found), code="bidi")


def refuse_bidi(fields, *names: str) -> None:
    """Add no_bidi to the named fields of a form's or a serializer's fields (the ones built from a model, which
    cannot be given validators where they are declared)."""
    for name in names:
        fields[name].validators.append(no_bidi)
