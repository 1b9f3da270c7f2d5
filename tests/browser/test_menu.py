"""The main menu in a real browser: every page it names is reached from it alone, its groups open by keyboard (with
script and without), one group is open at a time, and it still works on a 400 px wide screen."""

import pytest

from appliance.choices import Role
from appliance.context_processors import NAV
from tests.browser.conftest import login, nav_to, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ENTRIES = [(group, label) for group, links in NAV for label, _ in links]  # read from NAV: a new page is covered


def menu_state(page) -> dict:
    """What the menu shows as current: the link (with its aria-current), the group's summary, the open groups."""

    return page.evaluate("""() => {
        const nav = document.querySelector("nav[aria-label=Main]");
        const pick = (s) => [...nav.querySelectorAll(s)].map((e) => e.textContent.trim());
        return {page: pick("a[aria-current=page]"), other: pick("a[aria-current]:not([aria-current=page])"),
                group: pick("summary[aria-current=true]"), open: pick("details[open] > summary")};
    }""")


def assert_current(page, group: str, label: str) -> None:
    state = menu_state(page)
    assert state["page"] == [label] and state["other"] == [], (group, label, state)
    assert state["group"] == ([] if group == label else [group]), (group, label, state)
    assert state["open"] == [], (group, label, state)  # the new page starts with the menu shut


def test_every_page_in_the_menu_is_reached_from_the_menu_alone(page, local_host):
    login(page, "admin", Role.ADMIN)
    assert len(ENTRIES) >= 16 and ("Protection", "Backups") in ENTRIES
    for group, label in ENTRIES:
        response = nav_to(page, group, label)
        assert response.status == 200, (group, label, response.url)
        assert_current(page, group, label)
    shot(page, "menu-01-audit")


def test_a_page_below_a_menu_entry_marks_its_section_not_the_page(page, local_host):
    login(page, "admin", Role.ADMIN)
    page.goto("/pools/disks/")  # /pools/ is a prefix too: the longest entry wins
    assert menu_state(page) | {"open": []} == {"page": ["Disks"], "other": [], "group": ["Storage"], "open": []}
    page.goto("/hosts/add/")
    assert menu_state(page) == {"page": [], "other": ["Hosts"], "group": ["System"], "open": []}
    page.goto("/alerts/")  # not in the menu (the bell is its way in): nothing is marked
    assert menu_state(page) == {"page": [], "other": [], "group": [], "open": []}


def test_a_viewer_has_no_backups_entry(page, local_host):
    login(page, "vera", Role.VIEWER)
    protection = page.locator("nav[aria-label=Main] details", has=page.locator("summary:text-is('Protection')"))
    assert protection.locator("a").all_text_contents() == ["Replication", "Disk health", "Encryption", "UPS"]


def test_one_group_is_open_at_a_time_and_escape_or_a_click_elsewhere_shuts_it(page, local_host):
    login(page, "admin", Role.ADMIN)
    page.click("nav[aria-label=Main] summary:text-is('Storage')")
    page.click("nav[aria-label=Main] summary:text-is('System')")
    assert menu_state(page)["open"] == ["System"]
    assert page.locator("nav[aria-label=Main] a:text-is('Audit')").is_visible()
    assert not page.locator("nav[aria-label=Main] a:text-is('Pools')").is_visible()
    page.mouse.click(1300, 700)  # on the page, away from the open list
    assert menu_state(page)["open"] == []
    page.click("nav[aria-label=Main] summary:text-is('Protection')")
    page.keyboard.press("Escape")
    assert menu_state(page)["open"] == []


def tab_to(page, text: str, limit: int = 40) -> None:
    """Press Tab until the focus is on the element showing that text (as a keyboard user would)."""

    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == text:
            return
    raise AssertionError(f"Tab never reached {text!r}")


def test_the_menu_works_from_the_keyboard(page, local_host):
    login(page, "admin", Role.ADMIN)
    tab_to(page, "Storage")
    page.keyboard.press("Enter")
    assert menu_state(page)["open"] == ["Storage"]
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Pools"
    page.keyboard.press("Tab")
    with page.expect_navigation() as navigation:
        page.keyboard.press("Enter")  # on Disks
    assert navigation.value.status == 200 and page.url.endswith("/pools/disks/")
    assert_current(page, "Storage", "Disks")
    tab_to(page, "Protection")
    page.keyboard.press(" ")
    assert menu_state(page)["open"] == ["Protection"]
    page.keyboard.press("Tab")
    page.keyboard.press("Escape")  # from inside the list: shut, and the focus goes back to the group
    assert menu_state(page)["open"] == []
    assert page.evaluate("document.activeElement.textContent") == "Protection"
    page.keyboard.press(" ")
    tab_to(page, "Encryption")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert_current(page, "Protection", "Encryption")


def test_the_menu_opens_by_keyboard_without_javascript(browser, live_server, local_host):
    context = browser.new_context(java_script_enabled=False, base_url=live_server.url)
    try:
        page = context.new_page()
        login(page, "admin", Role.ADMIN)
        tab_to(page, "System")
        page.keyboard.press("Enter")
        tab_to(page, "Operations")
        with page.expect_navigation() as navigation:
            page.keyboard.press("Enter")
        assert navigation.value.status == 200 and page.url.endswith("/operations/")
        assert_current(page, "System", "Operations")
    finally:
        context.close()


def test_on_a_400_px_screen_the_groups_wrap_and_every_page_is_reached(page, local_host):
    page.set_viewport_size({"width": 400, "height": 800})
    login(page, "admin", Role.ADMIN)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, f"the page scrolls sideways: {width} px"
    for summary in page.locator("nav[aria-label=Main] > a, nav[aria-label=Main] summary").all():
        box = summary.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 400, (summary.inner_text(), box)
    rows = page.evaluate(
        "new Set([...document.querySelectorAll('nav[aria-label=Main] > *')].map(e => e.offsetTop)).size"
    )
    assert rows <= 2, f"the menu takes {rows} rows: its groups should wrap across the width, not stack one a row"
    for group in {group for group, label in ENTRIES if group != label}:  # each open list fits on the screen
        page.click(f"nav[aria-label=Main] summary:text-is('{group}')")
        for link in page.locator("nav[aria-label=Main] details[open] a").all():
            box = link.bounding_box()
            assert link.is_visible() and box["x"] >= 0 and box["x"] + box["width"] <= 400, (
                group,
                link.inner_text(),
                box,
            )
        shot(page, f"menu-02-narrow-{group.lower()}")
        page.keyboard.press("Escape")
    for group, label in ENTRIES:
        response = nav_to(page, group, label)
        assert response.status == 200, (group, label, response.url)
        assert_current(page, group, label)
