"""One typed-name confirmation: every form's `confirm` is appliance.forms.ConfirmField (taken as typed, never
trimmed), every API's is appliance.api.serializers.ConfirmField, and every service compares it through
appliance.checks.confirmed, which puts its message on the confirm field."""

import importlib
import inspect

import pytest
from django import forms
from django.contrib.messages import get_messages
from django.core.exceptions import ValidationError
from rest_framework import serializers

from appliance.api.serializers import ConfirmField as ApiConfirmField
from appliance.checks import confirmed
from appliance.forms import ConfirmField
from appliance.models import Operation
from replication.models import Task
from tests.replication.test_pages import pair  # noqa: F401 (a fixture)
from tests.support.apps import product_apps, sources_with


def _classes(module_name: str, base: type) -> list[type]:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        return []
    return [
        c for _, c in inspect.getmembers(module, inspect.isclass) if issubclass(c, base) and c.__module__ == module_name
    ]


def test_the_name_must_be_typed_exactly_and_the_refusal_says_what_to_type():
    confirmed("tank", "tank", "Type the pool's name (tank) to destroy it.")
    for typed in ("", "tank ", " tank", "TANK", "tan"):
        with pytest.raises(ValidationError) as refused:
            confirmed(typed, "tank", "Type the pool's name (tank) to destroy it.")
        assert refused.value.message_dict == {"confirm": ["Type the pool's name (tank) to destroy it."]}


def test_every_forms_confirm_is_the_one_field_and_keeps_what_was_typed():
    found = {
        f"{form.__module__}.{form.__name__}": form.base_fields["confirm"]
        for app in product_apps()
        for form in _classes(f"{app}.forms", forms.BaseForm)
        if "confirm" in form.base_fields
    }
    assert len(found) >= 9
    assert not [name for name, field in found.items() if not isinstance(field, ConfirmField)]
    assert ConfirmField().clean(" tank ") == " tank "


def test_every_apis_confirm_is_the_one_field():
    found = {
        f"{cls.__module__}.{cls.__name__}": cls().fields["confirm"]
        for app in product_apps()
        for cls in _classes(f"{app}.api.serializers", serializers.Serializer)
        if not issubclass(cls, serializers.ModelSerializer) and "confirm" in cls._declared_fields
    }
    assert len(found) >= 5
    assert not [name for name, field in found.items() if not isinstance(field, ApiConfirmField)]
    assert ApiConfirmField().run_validation(" tank ") == " tank "


def test_no_service_compares_a_typed_name_its_own_way():
    own = sources_with("confirm != ", "!= confirm", besides="appliance/checks.py")
    assert not own, f"compare a typed name with appliance.checks.confirmed: {own}"


def test_a_name_typed_with_a_space_does_not_delete_a_replication_task(admin_client, pair):  # noqa: F811
    task = Task.objects.create(pair=pair, source_dataset="tank/docs", target_name="docs", pattern="auto-*")
    response = admin_client.post(f"/replication/tasks/{task.pk}/delete/", {"confirm": f"{task.target_dataset} "})
    assert response["Location"] == f"/replication/tasks/{task.pk}/" and not Operation.objects.exists()
    said = [str(m) for m in get_messages(response.wsgi_request)]
    assert said == [f"Type the target's name ({task.target_dataset}) to delete the task."]
