"""Log in, open every top-level page, log out: in a real browser."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from appliance.choices import Role
from appliance.models import Host, Operation, User
from pools.models import Pool
from tests.browser.conftest import login, nav_to, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = [
    ("Dashboard", "Dashboard", "/"),
    ("Storage", "Pools", "/pools/"),
    ("Sharing", "Shares", "/shares/"),
    ("Network", "Network & tuning", "/tuning/"),
    ("System", "Benchmarks", "/benchmarks/"),
    ("System", "Hosts", "/hosts/"),
    ("System", "Operations", "/operations/"),
    ("System", "Audit", "/audit/"),
]


def test_an_admin_logs_in_visits_every_page_and_logs_out(page, local_host):
    User.objects.create_user("admin", password="a-long-password", role=Role.ADMIN)
    page.goto("/")
    assert page.url.endswith("/login/?next=/")
    shot(page, "01-login")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "wrong")
    page.click("button[type=submit]")
    expect(page.locator("[role=alert]")).to_have_text("Wrong username or password.")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "a-long-password")
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    for i, (group, label, path) in enumerate(PAGES, start=2):
        nav_to(page, group, label)
        page.wait_for_url(f"**{path}")
        assert page.locator("h1").first.inner_text().startswith(label), label
        assert page.locator("header nav a[aria-current=page]").text_content() == label
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


def _switch_to(page, name: str) -> None:
    if page.locator("header select[name=host] option:checked").inner_text() != name:
        with page.expect_navigation():
            page.select_option("header select[name=host]", label=name)  # the switcher submits on change


def test_every_dashboard_link_opens_with_the_switcher_on_another_host(page, local_host):
    """Two hosts with a pool each (lab is a row only, never reached: pages read the inventory). Whichever host the
    switcher is on, every link on the dashboard opens its page, and a pool's page switches to the pool's host."""
    now = timezone.now()
    lab = Host.objects.create(
        name="lab", transport="ssh", address="192.0.2.7", facts={"zfs_version": "2.3.4"}, observed_at=now
    )
    Host.objects.filter(pk=local_host.pk).update(facts={"zfs_version": "2.3.4"}, observed_at=now)
    pools = {
        host.name: Pool.objects.create(host=host, name="tank", guid=str(host.pk), state="ONLINE", observed_at=now)
        for host in (local_host, lab)
    }
    Operation.objects.create(kind="pools.scrub_start", target="pool:tank:scrub", host=lab, status="succeeded")
    login(page, "admin", Role.ADMIN)
    hrefs = page.eval_on_selector_all("main a[href]", "links => links.map(a => a.getAttribute('href'))")
    assert {f"/pools/{pools['lab'].pk}/", f"/pools/{pools['local'].pk}/", f"/hosts/{lab.pk}/"} <= set(hrefs)
    for switcher in ("local", "lab"):
        for href in dict.fromkeys(hrefs):
            page.goto("/")
            _switch_to(page, switcher)
            with page.expect_navigation() as navigation:
                page.click(f'main a[href="{href}"] >> nth=0')
            assert navigation.value.status != 404, (switcher, href)
            assert page.locator("header form[action='/logout/']").count() == 1, (switcher, href)
    page.goto("/")
    _switch_to(page, "local")
    page.click(f'main a[href="/pools/{pools["lab"].pk}/"]')
    page.wait_for_url(f"**/pools/{pools['lab'].pk}/")
    assert page.locator("header select[name=host] option:checked").inner_text() == "lab"
    assert "on lab" in page.inner_text("h1")
    shot(page, "11-pool-of-another-host")
