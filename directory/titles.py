"""What the directory operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

DIRECTORY = {"back": "directory-page", "back_label": "Back to Directory"}

operation_titles(
    {
        "directory.join": Title("Join the domain {realm}", **DIRECTORY),
        "directory.leave": Title("Leave the domain {realm}", **DIRECTORY),
        "directory.names_refresh": Title("List the directory's users and groups", **DIRECTORY),
        "directory.check": Title("Check the directory", **DIRECTORY),
        "directory.ldap": Title("Read the LDAP directory {uri}", **DIRECTORY),
        "directory.ldap_remove": Title("Stop reading the LDAP directory {uri}", **DIRECTORY),
    }
)
