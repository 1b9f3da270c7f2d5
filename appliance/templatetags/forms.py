"""{% form_fields form %}: a form's fields as _form_fields.html draws them, an unbound form's HTML kept a while;
{% inline_fields form %} the same for _inline_fields.html (a form in a row).

The big forms (the benchmarks page's three: ~40 fields with their choices) were most of a page's CPU, drawn again
for every request though they were the same for everyone: an unbound form's HTML depends only on its class, ids,
initial values and choices, which make its key (the choices are read each time: a new dataset shows at once)."""

import hashlib

from django import forms, template
from django.core.cache import cache
from django.template.loader import render_to_string

register = template.Library()
FORM_SECONDS = 300


def _choices(choices) -> list:
    """Choices as text, read now (a model field's are a query: its iterator's repr would be an address)."""
    out = []
    for value, label in choices:
        if isinstance(label, (list, tuple)):  # an option group
            out.append((str(value), _choices(label)))
        else:
            out.append((str(value), str(label)))
    return out


def _key(form, template_name: str) -> str:
    parts = [template_name, type(form).__module__, type(form).__qualname__, str(form.auto_id), str(form.prefix)]
    for name, field in form.fields.items():
        choices = _choices(field.choices) if hasattr(field, "choices") else None
        parts += [name, repr(field.initial), repr(choices), str(field.disabled), str(field.required)]
        parts += [type(field.widget).__name__, repr(field.widget.attrs), str(field.label), str(field.help_text)]
    if form.initial:  # a kept_filled form: its values (the fields' own are above)
        parts += [repr(sorted((k, repr(v)) for k, v in form.initial.items()))]
    parts.append(str(form.label_suffix))
    return "tarn:form:" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _kept(form) -> bool:
    """Only a blank form for something new: not one bound to a request (its values and errors), nor one filled in
    for an object (drawn once per object: nothing to gain) unless its class says `kept_filled = True` (a settings
    form shown on a list page for every request, its values part of the key), nor one with a hidden or password
    field that may draw a secret (a secret, even a one-time one, is never kept outside the request)."""
    if form.is_bound or (form.initial and not getattr(form, "kept_filled", False)):
        return False
    return not any(_may_hold_a_secret(f.widget) for f in form.fields.values())


def _may_hold_a_secret(widget) -> bool:
    """A hidden field (a token, a confirmation), or a password field that draws its value; a password field drawn
    empty (Django's default: render_value False) holds nothing."""
    if isinstance(widget, forms.PasswordInput):
        return widget.render_value
    return isinstance(widget, forms.HiddenInput)


def _drawn(template_name: str, form):
    if not _kept(form):
        return render_to_string(template_name, {"form": form})
    key = _key(form, template_name)
    html = cache.get(key)
    if html is None:
        html = render_to_string(template_name, {"form": form})
        cache.set(key, html, FORM_SECONDS)
    return html


@register.simple_tag
def form_fields(form):
    return _drawn("_form_fields.html", form)


@register.simple_tag
def inline_fields(form):
    """The same, as _inline_fields.html draws them: labels around their fields, side by side in a row."""
    return _drawn("_inline_fields.html", form)
