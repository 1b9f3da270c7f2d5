"""Numbers a person types are read in the digits 0-9 only: int() and float() read any script's digits ("１５００" is
1500, "٣" is 3, and "²" passes isdigit() then crashes int()), so every integer and float field of every form and
serializer is one of appliance.fields' and refuses them, naming the field."""

import importlib

import pytest
from django import forms
from rest_framework import serializers

from appliance import fields
from appliance.api.serializers import ModelSerializer
from appliance.models import Host
from tests.support.apps import product_apps

APPS = product_apps()  # every app, replication and those to come included
UNICODE_DIGITS = ["１５００", "٣", "²", "߃", "𝟗", "1５", "१०"]


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _ours(cls) -> bool:
    """A concrete form or serializer of the product (a base such as ModelSerializer has no Meta of its own)."""
    abstract = issubclass(cls, serializers.ModelSerializer) and not hasattr(cls, "Meta")
    return cls.__module__.split(".")[0] in APPS and not abstract


def _import_every_form_and_serializer():
    for app in APPS:
        for module in ("forms", "api.serializers"):
            importlib.import_module(f"{app}.{module}")


def _serializer_number_fields():
    _import_every_form_and_serializer()
    for cls in sorted({c for c in _subclasses(serializers.Serializer) if _ours(c)}, key=lambda c: c.__qualname__):
        for name, field in cls().fields.items():
            if field.read_only:
                continue
            child = getattr(field, "child", None)
            for f, label in ((field, name), (child, f"{name}[]")):
                if isinstance(f, serializers.IntegerField | serializers.FloatField) and not f.read_only:
                    yield f"{cls.__module__}.{cls.__name__}.{label}", f


def _form_number_fields():
    _import_every_form_and_serializer()
    for cls in sorted({c for c in _subclasses(forms.BaseForm) if _ours(c)}, key=lambda c: c.__qualname__):
        for name, field in cls.base_fields.items():
            if isinstance(field, forms.IntegerField | forms.FloatField | forms.DecimalField):
                yield f"{cls.__module__}.{cls.__name__}.{name}", field


def test_every_number_field_a_person_fills_in_reads_ascii_digits_only():
    api = dict(_serializer_number_fields())
    pages = dict(_form_number_fields())
    assert len(api) > 20 and len(pages) > 20  # the walk found the apps' fields
    ascii_api = fields.ApiIntegerField | fields.ApiBigIntegerField | fields.ApiFloatField
    wrong = [k for k, f in api.items() if not isinstance(f, ascii_api)]
    wrong += [k for k, f in pages.items() if not isinstance(f, fields.IntegerField | fields.FloatField)]
    assert not wrong, f"plain int()/float() fields (use appliance.fields): {wrong}"


@pytest.mark.parametrize("value", UNICODE_DIGITS)
def test_every_number_field_refuses_other_scripts_digits(value):
    for name, field in [*_serializer_number_fields(), *_form_number_fields()]:
        with pytest.raises((serializers.ValidationError, forms.ValidationError)):
            (field.run_validation if hasattr(field, "run_validation") else field.clean)(value)
            pytest.fail(f"{name} took {value!r}")


@pytest.mark.parametrize("value", [1500, "1500", " 1500 ", "1500.0", 1500.0])
def test_ascii_numbers_and_json_numbers_are_read_as_before(value):
    assert fields.ApiIntegerField().run_validation(value) == 1500
    assert fields.IntegerField().clean(value) == 1500
    assert fields.ApiFloatField().run_validation(value) == 1500.0


@pytest.mark.parametrize("value", ["1_500", "0x10", "nan", "inf", "", "1e3"])
def test_what_int_reads_but_nobody_types_is_refused(value):
    with pytest.raises(serializers.ValidationError) as refused:
        fields.ApiIntegerField().run_validation(value)
    assert refused.value.detail


def test_a_float_takes_a_decimal_point_and_an_exponent_but_not_nan():
    assert fields.ApiFloatField().run_validation("0.5") == 0.5
    assert fields.FloatField().clean("1e3") == 1000.0
    for value in ("nan", "٠.٥", "0.５"):
        with pytest.raises(serializers.ValidationError):
            fields.ApiFloatField().run_validation(value)


def test_model_serializers_and_model_forms_get_the_ascii_fields():
    class HostPort(ModelSerializer):
        class Meta:
            model = Host
            fields = ["port"]

    class HostPortForm(forms.ModelForm):
        class Meta:
            formfield_callback = fields.model_formfield
            model = Host
            fields = ["port"]

    assert isinstance(HostPort().fields["port"], fields.ApiIntegerField)
    assert isinstance(HostPortForm.base_fields["port"], fields.IntegerField)
    assert HostPortForm.base_fields["port"].min_value == 0  # the model field's own limits stay


def test_a_host_port_in_fullwidth_digits_is_a_400_naming_port(admin_client, local_host):
    body = {"name": "nas9", "address": "192.0.2.9", "port": "２２"}
    response = admin_client.post("/api/v1/hosts/", body, content_type="application/json")
    assert response.status_code == 400 and "port" in response.json(), response.content
    assert not Host.objects.filter(name="nas9").exists()


@pytest.mark.parametrize("value", ["١", "²", "１"])  # Arabic-Indic one, superscript two, fullwidth one
def test_switching_to_a_host_named_in_other_digits_is_a_message_not_a_500(admin_client, local_host, value):
    admin_client.raise_request_exception = False
    response = admin_client.post("/hosts/switch/", {"host": value}, follow=True)
    assert response.status_code == 200 and "Choose a host" in response.content.decode()
