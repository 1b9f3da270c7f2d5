"""The two field templates every form goes through give each id that Django's aria-describedby names (the help
text, the errors), so a screen reader reads them with the field."""

import re

import pytest
from django import forms
from django.template.loader import render_to_string


class Form(forms.Form):
    name = forms.CharField(help_text="Letters and digits.")
    size = forms.IntegerField(help_text="In GiB.")
    flag = forms.BooleanField(required=False, help_text="Ticked: on.")


@pytest.mark.parametrize("template", ["_form_fields.html", "_inline_fields.html"])
@pytest.mark.parametrize("data", [None, {"name": "", "size": "x"}])
def test_every_id_named_by_aria_describedby_is_on_the_page(template, data):
    form = Form(data)
    form.is_valid()
    html = render_to_string(template, {"form": form})
    named = {i for ids in re.findall(r'aria-describedby="([^"]+)"', html) for i in ids.split()}
    assert named >= {"id_name_helptext", "id_size_helptext", "id_flag_helptext"}
    assert named - set(re.findall(r'\bid="([^"]+)"', html)) == set(), html
    assert "Letters and digits." in html
    if data:
        assert {"id_name_error", "id_size_error"} <= named
        assert "This field is required." in html and "Enter a whole number." in html
