"""{% form_fields %}: a blank form's HTML is kept and given again while its choices are the same; a new choice, a
bound form, an object's form or one with a hidden field or a password field drawing its value are drawn afresh (nothing of a request is kept)."""

from django import forms
from django.core.cache import cache

from appliance.templatetags.forms import form_fields, inline_fields


class Pick(forms.Form):
    name = forms.ChoiceField(choices=[("tank/a", "tank/a")])
    size = forms.IntegerField(initial=4)


class Secret(forms.Form):
    passphrase = forms.CharField(widget=forms.PasswordInput(render_value=True), initial="x")


class Confirm(forms.Form):
    token = forms.CharField(widget=forms.HiddenInput)


class Blank(forms.Form):
    passphrase = forms.CharField(widget=forms.PasswordInput)


def test_a_blank_form_is_drawn_once_and_a_new_choice_draws_it_again(monkeypatch):
    cache.clear()
    drawn = []
    import appliance.templatetags.forms as tag  # noqa: PLC0415 - to count its draws

    real = tag.render_to_string
    monkeypatch.setattr(tag, "render_to_string", lambda *a, **k: drawn.append(1) or real(*a, **k))
    first = form_fields(Pick())
    assert form_fields(Pick()) == first and len(drawn) == 1 and 'value="tank/a"' in first
    grown = Pick()
    grown.fields["name"].choices = [("tank/a", "tank/a"), ("tank/b", "tank/b")]
    assert 'value="tank/b"' in form_fields(grown) and len(drawn) == 2


def test_bound_filled_in_and_secret_forms_are_never_kept():
    cache.clear()
    assert "is required" in form_fields(Pick(data={})) and "This field is required" in form_fields(Pick(data={}))
    assert 'value="tank/a" selected' in form_fields(Pick(initial={"name": "tank/a"}))
    form_fields(Secret())
    form_fields(Confirm())
    form_fields(Pick(data={"name": "tank/a", "size": "9"}))
    assert list(cache._cache) == []  # noqa: SLF001 - LocMemCache's own store: nothing was kept


def test_a_model_fields_choices_are_read_for_the_key_so_a_new_row_shows_at_once(db):
    from appliance.models import Host  # noqa: PLC0415

    class PickHost(forms.Form):
        host = forms.ModelChoiceField(queryset=Host.objects.order_by("name"))

    cache.clear()
    assert "nas9" not in form_fields(PickHost())
    Host.objects.create(name="nas9", address="192.0.2.9")
    assert "nas9" in form_fields(PickHost())


class Settings(forms.Form):
    kept_filled = True
    workgroup = forms.CharField()


def test_a_kept_filled_form_is_kept_by_its_values_and_a_changed_value_draws_it_again():
    cache.clear()
    first = form_fields(Settings(initial={"workgroup": "OFFICE"}))
    assert 'value="OFFICE"' in first and len(cache._cache) == 1  # noqa: SLF001 - LocMemCache's own store
    assert form_fields(Settings(initial={"workgroup": "OFFICE"})) == first
    assert 'value="LAB"' in form_fields(Settings(initial={"workgroup": "LAB"})) and len(cache._cache) == 2  # noqa: SLF001


def test_a_blank_password_field_draws_nothing_so_its_form_is_kept():
    cache.clear()
    html = form_fields(Blank())
    assert 'type="password"' in html and "value=" not in html and len(cache._cache) == 1  # noqa: SLF001


def test_a_form_in_a_row_is_kept_apart_from_the_same_form_drawn_in_fields(monkeypatch):
    """{% inline_fields %} (labels around their fields, in a row) keeps its own HTML: the same form drawn by the two
    tags is two drawings, neither given for the other; a bound one is drawn afresh with its errors."""
    cache.clear()
    drawn = []
    import appliance.templatetags.forms as tag  # noqa: PLC0415 - to count its draws

    real = tag.render_to_string
    monkeypatch.setattr(tag, "render_to_string", lambda name, *a, **k: drawn.append(name) or real(name, *a, **k))
    row = inline_fields(Pick())
    assert inline_fields(Pick()) == row and drawn == ["_inline_fields.html"]
    assert '<label>Name <select name="name"' in row and '<label>Size <input type="number" name="size" value="4"' in row
    block = form_fields(Pick())
    assert block != row and '<div class="field' in block and '<div class="field' not in row
    assert drawn == ["_inline_fields.html", "_form_fields.html"]
    assert "This field is required" in inline_fields(Pick(data={})) and drawn[-1] == "_inline_fields.html"
