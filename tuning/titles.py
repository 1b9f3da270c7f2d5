"""What the tuning and network operations are called on their pages, and the change or page each came from."""

from appliance.titles import Title, operation_titles
from tuning.models import ChangeSet

CHANGE = {"back": "tuning-change", "back_arg": "change_set", "back_label": "Back to the change"}
CHANGE |= {"rows": {"change_set": ChangeSet}}
OVERVIEW = {"back": "tuning-overview", "back_label": "Back to Network & tuning"}

operation_titles(
    {
        "tuning.plan": Title("Plan {change_set_name}", **CHANGE),
        "tuning.apply": Title("Apply {change_set_name}", **CHANGE),
        "tuning.network": Title("Apply {change_set_name}", **CHANGE),
        "tuning.keep": Title("Keep {change_set_name}", **CHANGE),
        "tuning.release": Title("Hand {change_set_name}'s links back to networkd", **CHANGE),
        "tuning.revert": Title("Revert tuned values", **OVERVIEW),
        "tuning.reapply": Title("Apply a tuned value again", **OVERVIEW),
        "tuning.persist": Title("Write the tuned values to survive a reboot", **OVERVIEW),
        "tuning.refresh": Title("Read links and kernel values", **OVERVIEW),
    }
)
