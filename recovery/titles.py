"""What the recovery operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

operation_titles(
    {
        "recovery.restore": Title(
            "Restore a file or folder of {dataset} from a snapshot",
            back="recovery-browse",
            back_label="Back to Browse snapshots",
        ),
    }
)
