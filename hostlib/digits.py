"""ASCII digits, the only digits Tarn reads from a person or puts in a command.

Python's str.isdigit(), int(), float() and the regex class \\d all take any Unicode digit: "²".isdigit() is True
and int("²") raises (a check passes, then the conversion crashes), int("１５００") is 1500 (a fullwidth value is
quietly read as another), and a `\\d` pattern lets "٣" reach an argv. Checks here use 0-9 only; patterns written
with \\d elsewhere should spell [0-9] or carry re.ASCII."""


def is_digits(value: object) -> bool:
    """A non-empty string of 0-9 only (no sign, no spaces, no other script's digits)."""
    return isinstance(value, str) and value.isascii() and value.isdigit()


def whole_number(value: object) -> int | None:
    """The number a string of ASCII digits spells, None for anything else (never an exception)."""
    return int(value) if is_digits(value) else None
