"""Playwright for Python driving Debian's chromium (never a downloaded browser); screenshots kept."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from appliance.models import User
from tests.conftest import require
from tests.support.lab_fixtures import guest, lab, lab_host  # noqa: F401
from tests.support.worker import start_worker, stop_worker

CHROMIUM = os.environ.get("TARN_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    require(os.path.exists(CHROMIUM), f"{CHROMIUM} is not installed (apt-get install chromium)")

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1366, "height": 800}, base_url=live_server.url)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.fixture
def lab_worker(guest, tmp_path, local_host):  # noqa: F811 (the guest fixture)
    """The lab guest as host "lab", and a real Celery worker for its queue."""

    guest.add_host()
    worker = start_worker("default,host.lab", tmp_path / "worker.log")
    yield
    stop_worker(worker)


def login(page, username: str = "admin", role: str = "admin") -> None:
    """A new user of that role, logged in through the login page; the browser ends on the dashboard."""

    User.objects.create_user(username, password="a-long-password", role=role)
    page.goto("/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "a-long-password")
    page.click("button[type=submit]")
    page.wait_for_url("**/")


def nav_to(page, group: str, label: str):
    """Open a page from the main menu as a user does: open its group, click the link. Returns the response."""

    menu = page.locator("nav[aria-label=Main]")
    with page.expect_navigation() as navigation:
        if group == label:  # a group holding only itself (Dashboard) is a plain link
            menu.locator("> a", has_text=label).click()
        else:
            menu.locator("details", has=page.locator(f"summary:text-is('{group}')")).locator("summary").click()
            menu.locator(f"details[open] a:text-is('{label}')").click()
    return navigation.value


def login_on_lab(page) -> None:
    login(page)
    with page.expect_navigation():
        page.select_option("header select[name=host]", label="lab")  # the switcher submits on change


def wait_for_operation(page, timeout=180_000):
    page.wait_for_url("**/operations/*/")
    page.wait_for_selector("#operation-status .badge-succeeded, #operation-status .badge-failed", timeout=timeout)
    status = page.inner_text("#operation-status")
    assert "Succeeded" in status, status
