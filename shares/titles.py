"""What the sharing operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

SHARES = {"back": "share-list", "back_label": "Back to Shares"}
USERS = {"back": "samba-user", "back_label": "Back to Samba users"}

operation_titles(
    {
        "shares.apply": Title("Apply {what}", **SHARES),
        "shares.folder": Title("Set the owner and mode of share {object}", **SHARES),
        "shares.status": Title("Read who is connected to the shares", **SHARES),
        "shares.samba_user_add": Title("Add Samba user {username}", **USERS),
        "shares.samba_user_password": Title("Set the Samba password of {username}", **USERS),
        "shares.samba_user_enable": Title("Enable Samba user {username}", **USERS),
        "shares.samba_user_disable": Title("Disable Samba user {username}", **USERS),
        "shares.samba_user_delete": Title("Delete Samba user {username}", **USERS),
    }
)
