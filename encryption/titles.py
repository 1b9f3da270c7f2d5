"""What the encryption operations are called on their pages, and the form on the encryption page each came from."""

from django.urls import reverse

from appliance.titles import Title, operation_titles


def _back(form: str = "") -> dict:
    """The encryption page, at the form that asked (where a refusal of the host is shown again)."""
    return {
        "back": lambda words: reverse("encryption-list") + (f"#{form}" if form else ""),
        "back_label": "Back to Encryption",
    }


operation_titles(
    {
        "encryption.create": Title("Create encrypted {object}", "encryption-create", back_label="Back to the form"),
        "encryption.unlock": Title(
            lambda w: ("Try the keys of " if w.get("dry_run") == "True" else "Unlock ") + w["roots"],
            **_back("unlock-form"),
        ),
        "encryption.lock": Title("Lock {root}", **_back()),
        "encryption.change_key": Title("Change the key of {root}", **_back("change-key-form")),
        "encryption.retired_remove": Title("Remove the retired key of {dataset}", **_back()),
        "encryption.export": Title("Export the keys of {roots}", **_back("export-form")),
    }
)
