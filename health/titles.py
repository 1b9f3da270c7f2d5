"""What the disk health operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

HEALTH = {"back": "health-list", "back_label": "Back to Disk health"}

operation_titles(
    {
        "health.read": Title("Read the health of every disk", **HEALTH),
        "health.self_test": Title("Start a {self_test} self-test of {device}", **HEALTH),
        "health.self_test_abort": Title("Abort the self-test of {device}", **HEALTH),
        "health.self_test_cancel": Title("Cancel a self-test run", **HEALTH),
    }
)
