"""Fields every app's forms and serializers share: numbers in the digits 0-9 only, IP addresses without a zone.

Django's and DRF's IntegerField and FloatField convert with Python's int() and float(), which read any Unicode
digit: "１５００" (fullwidth) becomes 1500 and "٣" becomes 3, so a value that looks like nothing an admin typed
is accepted and reaches a host. These fields refuse text with anything but ASCII digits, a sign, a decimal
point (and an exponent for floats) before converting; JSON numbers pass through as before. Model serializers
and model forms get them through SERIALIZER_FIELD_MAPPING and model_formfield."""

import re

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from rest_framework import serializers

from appliance.choices import Weekday
from hostlib import zfs

# What int() would read that a person may type: a sign, digits, and the ".0" both frameworks drop.
INTEGER = re.compile(r"[+-]?[0-9]+(?:\.0*)?")
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
INTEGER_MESSAGE = "A whole number written with the digits 0-9 (e.g. 1500)."
NUMBER_MESSAGE = "A number written with the digits 0-9 (e.g. 80 or 0.5)."


def plain(value, pattern: re.Pattern) -> bool:
    """Text is plain when, spaces around it aside, it is ASCII that pattern matches whole. Anything that is not
    text (a JSON number, None) is left to the field's own checks."""
    if not isinstance(value, str):
        return True
    return value.isascii() and pattern.fullmatch(value.strip()) is not None


class IntegerField(forms.IntegerField):
    """forms.IntegerField that refuses other scripts' digits (int("１５００") is 1500)."""

    def to_python(self, value):
        if value not in self.empty_values and not plain(value, INTEGER):
            raise ValidationError(INTEGER_MESSAGE, code="invalid")
        return super().to_python(value)


WEEKDAY_HELP = "Weekly: the day, " + ", ".join(f"{value} {label}" for value, label in Weekday.choices) + "."


class WeekdayField(forms.TypedChoiceField):
    """A day of the week chosen by its name (a calendar slot's: Monday 0 … Sunday 6), never typed as a number."""

    def __init__(self, **kwargs):
        kwargs.setdefault("initial", Weekday.SUNDAY)
        super().__init__(choices=Weekday.choices, coerce=int, **kwargs)


class FloatField(forms.FloatField):
    """forms.FloatField that refuses other scripts' digits (float("٣.٥") is 3.5)."""

    def to_python(self, value):
        if value not in self.empty_values and not plain(value, NUMBER):
            raise ValidationError(NUMBER_MESSAGE, code="invalid")
        return super().to_python(value)


class _AsciiApiNumber:
    """What the API's number fields share: text is checked against `pattern` before DRF converts it."""

    pattern = INTEGER

    def to_internal_value(self, data):
        if not plain(data, self.pattern):
            self.fail("invalid")
        return super().to_internal_value(data)


class ApiIntegerField(_AsciiApiNumber, serializers.IntegerField):
    """serializers.IntegerField that refuses other scripts' digits: a 400 naming the field."""

    default_error_messages = {"invalid": INTEGER_MESSAGE}


class ApiBigIntegerField(_AsciiApiNumber, serializers.BigIntegerField):
    """serializers.BigIntegerField (a model's BigIntegerField) that refuses other scripts' digits."""

    default_error_messages = {"invalid": INTEGER_MESSAGE}


class ApiFloatField(_AsciiApiNumber, serializers.FloatField):
    """serializers.FloatField that refuses other scripts' digits: a 400 naming the field."""

    pattern = NUMBER
    default_error_messages = {"invalid": NUMBER_MESSAGE}


class ApiIPAddressField(serializers.IPAddressField):
    """serializers.IPAddressField that refuses an IPv6 zone (fe80::1%eth0) instead of dropping it: the zone names a
    link of whichever machine reads it, and without it the address is another one than was typed."""

    default_error_messages = {"zone": "An IP address without a zone (no %…): e.g. 192.0.2.10 or 2001:db8::10."}

    def to_internal_value(self, data):
        if isinstance(data, str) and "%" in data:
            self.fail("zone")
        return super().to_internal_value(data)


_API_FIELDS = {
    serializers.IntegerField: ApiIntegerField,
    serializers.BigIntegerField: ApiBigIntegerField,
    serializers.FloatField: ApiFloatField,
}
# ModelSerializer's model field → serializer field table with the number fields swapped for these.
SERIALIZER_FIELD_MAPPING = {
    model_field: _API_FIELDS.get(field, field)
    for model_field, field in serializers.ModelSerializer.serializer_field_mapping.items()
}
_FORM_FIELDS = ((models.IntegerField, IntegerField), (models.FloatField, FloatField))


def model_formfield(db_field, **kwargs):
    """A ModelForm's Meta.formfield_callback: integer and float model fields get these form fields."""
    for model_class, form_class in _FORM_FIELDS:
        if isinstance(db_field, model_class):
            return db_field.formfield(form_class=form_class, **kwargs)
    return db_field.formfield(**kwargs)


ROUNDS_HELP = (
    f"Empty: ZFS's {zfs.PBKDF2_DEFAULT:,}. More rounds make each guess at the passphrase slower, and each unlock too."
)


class PassphraseRoundsField(IntegerField):
    """A new passphrase's PBKDF2 rounds (zfs pbkdf2iters), in ZFS's range; empty: ZFS's default."""

    def __init__(self, **kwargs):
        kwargs = {"label": "Passphrase rounds (PBKDF2)", "help_text": ROUNDS_HELP, **kwargs}
        super().__init__(required=False, min_value=zfs.PBKDF2_MIN, max_value=zfs.PBKDF2_MAX, **kwargs)


class ApiPassphraseRoundsField(ApiIntegerField):
    """The API's PassphraseRoundsField: null or absent for ZFS's default."""

    def __init__(self, **kwargs):
        kwargs = {"help_text": f"A new passphrase's PBKDF2 rounds (pbkdf2iters). {ROUNDS_HELP}", **kwargs}
        super().__init__(required=False, allow_null=True, min_value=zfs.PBKDF2_MIN, max_value=zfs.PBKDF2_MAX, **kwargs)
