"""A form the admin filled and Tarn refused stays open on the page, the error under its field and what was typed
kept (no lab: the pool is a row in the inventory)."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login, shot
from tests.pools.conftest import tank  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_bad_dataset_name_is_said_under_the_name_with_the_form_open(page, tank):  # noqa: F811
    pool = tank[0]
    login(page)
    page.goto(f"/pools/{pool.pk}/")
    form = page.locator("#dataset-create")
    assert form.get_attribute("open") is None  # folded until asked for
    form.locator("summary").click()
    form.locator("input[name=name]").fill("a")  # tank/a exists already
    form.locator("button.primary").click()
    form = page.locator("#dataset-create")
    error = form.locator(".field.has-error", has=page.locator("input[name=name]")).locator("p.error")
    expect(error).to_have_text("tank/a exists already.")  # the answer came
    assert form.get_attribute("open") is not None and form.locator("input[name=name]").is_visible()
    assert form.locator("input[name=name]").input_value() == "a"
    assert page.evaluate("document.activeElement.name") == "name"  # the cursor is at the field to fix
    assert page.locator("#toasts .toast-error").count() == 0
    shot(page, "forms-dataset-refused-open")
