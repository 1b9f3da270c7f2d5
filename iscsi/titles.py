"""What the iSCSI operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

ISCSI = {"back": "iscsi-page", "back_label": "Back to iSCSI"}

operation_titles(
    {
        "iscsi.apply": Title("Apply iSCSI: {what}", **ISCSI),
        "iscsi.sessions": Title("Read who is logged in over iSCSI", **ISCSI),
    }
)
