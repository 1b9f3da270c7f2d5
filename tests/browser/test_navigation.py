"""Log in, open every top-level page, log out: in a real browser."""

import pytest

from appliance.choices import Role
from appliance.models import User
from tests.browser.conftest import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = [
    ("Dashboard", "/"),
    ("Pools", "/pools/"),
    ("Shares", "/shares/"),
    ("Tuning", "/tuning/"),
    ("Benchmarks", "/benchmarks/"),
    ("Hosts", "/hosts/"),
    ("Operations", "/operations/"),
    ("Audit", "/audit/"),
]


def test_an_admin_logs_in_visits_every_page_and_logs_out(page, local_host):
    User.objects.create_user("admin", password="a-long-password", role=Role.ADMIN)
    page.goto("/")
    assert page.url.endswith("/login/?next=/")
    shot(page, "01-login")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "wrong")
    page.click("button[type=submit]")
    assert page.locator("[role=alert]").inner_text() == "Wrong username or password."
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "a-long-password")
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    for i, (label, path) in enumerate(PAGES, start=2):
        page.click(f"header nav >> text={label}")
        page.wait_for_url(f"**{path}")
        assert page.locator("h1").first.inner_text().startswith(label), label
        assert page.locator("header nav a[aria-current=page]").inner_text() == label
        shot(page, f"{i:02d}-{label.lower()}")
    page.goto("/hosts/")
    page.click("main table >> text=local")  # the host's own page from the hosts table
    page.wait_for_url("**/hosts/*/")
    shot(page, "10-host-local")
    page.click("text=Log out")
    page.wait_for_url("**/login/")
    page.goto("/hosts/")
    assert "/login/" in page.url


def test_htmx_is_served_locally_and_sends_the_csrf_header(page, local_host):
    login(page, "vera", Role.VIEWER)
    assert page.evaluate("typeof htmx") == "object"
    headers = page.evaluate("JSON.parse(document.body.getAttribute('hx-headers'))")
    assert len(headers["x-csrftoken"]) > 20
    external = page.evaluate(
        "[...document.querySelectorAll('script[src],link[href]')].map(e => e.src || e.href)"
        ".filter(u => !u.startsWith(location.origin))"
    )
    assert external == []
