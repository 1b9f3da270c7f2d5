"""What the update operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

PAGE = {"back": "updates-page", "back_label": "Back to Updates"}

operation_titles(
    {
        "updates.check": Title("Check for updates", **PAGE),
        "updates.apply": Title("Install the updates (the guard first)", **PAGE),
        "updates.reboot": Title("Reboot, then report the pools", **PAGE),
        "updates.rollout": Title("Update the hosts one at a time (the first as the canary)", **PAGE),
    }
)
