"""The ACL editor's forms: the folder (dataset and path), the ACL as read/write/enter checkboxes for the owner, the
group, everyone else and each named user or group (a formset: its fields are entries-N-…, the names the service's
errors use), and the user whose effective permissions are asked."""

from django import forms
from django.forms import formset_factory

from appliance.choices import AccountKind
from appliance.forms import ConfirmField
from hostlib import acl
from permissions.choices import TEMPLATES, QuotaKind, Template

RWX = (("r", "read"), ("w", "write"), ("x", "enter (folders) / run (files)"))


class PlaceForm(forms.Form):
    dataset = forms.CharField(max_length=255)
    path = forms.CharField(max_length=4096, required=False, strip=False)


def _perms(cleaned: dict, prefix: str) -> str:
    return "".join(letter if cleaned.get(f"{prefix}_{letter}") else "-" for letter, _ in RWX)


def _checkboxes(form: forms.Form, prefix: str, who: str) -> None:
    for letter, word in RWX:
        form.fields[f"{prefix}_{letter}"] = forms.BooleanField(required=False, label=f"{who} {word}")


class AclForm(forms.Form):
    dataset = forms.CharField(max_length=255, widget=forms.HiddenInput)
    path = forms.CharField(max_length=4096, required=False, strip=False, widget=forms.HiddenInput)
    owner = forms.CharField(
        max_length=256, required=False, help_text="A user (local, or DOMAIN\\name once joined). Blank keeps the owner."
    )
    group = forms.CharField(max_length=256, required=False, help_text="A group. Blank keeps the group.")
    setgid = forms.BooleanField(
        required=False,
        label="Set-group-id",
        help_text="New files and folders get the folder's group, not their maker's.",
    )
    sticky = forms.BooleanField(required=False, help_text="Only a file's owner may delete or rename it (as /tmp).")
    defaults = forms.BooleanField(
        required=False,
        label="New files and folders inherit this ACL",
        help_text="Writes it as the folder's default ACL too (files get x only where they had it).",
    )
    recursive = forms.BooleanField(
        required=False,
        label="Also everything inside",
        help_text="Counted first: you see how many folders and files would change before anything is written.",
    )
    confirm = ConfirmField(
        label="Type the folder's name to confirm",
        required=False,
        help_text="Asked only for a change that takes all ACL entries, or the owner's or your access, away.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for prefix, who in (("owner", "Owner"), ("group", "Group"), ("other", "Everyone else")):
            _checkboxes(self, f"{prefix}p", who)

    @property
    def who_fields(self):
        return [self["owner"], self["group"]]

    @property
    def option_fields(self):
        return [self[name] for name in ("setgid", "sticky", "defaults", "recursive", "confirm")]

    def spec(self, entries: list[dict]) -> dict:
        c = self.cleaned_data
        return {
            "owner": c["owner"].strip(),
            "group": c["group"].strip(),
            "owner_perms": _perms(c, "ownerp"),
            "group_perms": _perms(c, "groupp"),
            "other_perms": _perms(c, "otherp"),
            "setgid": c["setgid"],
            "sticky": c["sticky"],
            "defaults": c["defaults"],
            "entries": entries,
        }


class EntryForm(forms.Form):
    kind = forms.ChoiceField(choices=AccountKind.choices, initial=AccountKind.USER)
    name = forms.CharField(max_length=256, required=False, strip=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _checkboxes(self, "p", "")

    @property
    def perms(self) -> str:
        return _perms(self.cleaned_data, "p")


EntryFormSet = formset_factory(EntryForm, extra=2, can_delete=True, max_num=500, validate_max=True)


def entries_of(formset) -> tuple[list[dict], list[int]]:
    """The named entries the formset holds (blank and deleted rows left out), and the form index of each, so an
    error on entries-N-name lands on the row that said it."""
    entries, index = [], []
    for n, form in enumerate(formset.forms):
        c = getattr(form, "cleaned_data", None) or {}
        if not c.get("name") or c.get("DELETE"):
            continue
        entries.append({"kind": c["kind"], "name": c["name"], "perms": form.perms})
        index.append(n)
    return entries, index


def initial_from(folder, template: str = "") -> tuple[dict, list[dict]]:
    """The editor's starting values: the folder as it is, or a template's values over it."""
    perms = {e.tag: e.perms for e in folder.access.entries if not e.named}
    values = {
        "owner": folder.owner,
        "group": folder.group,
        "setgid": bool(folder.mode & 0o2000),
        "sticky": bool(folder.mode & 0o1000),
        "defaults": folder.default is not None,
    }
    for prefix, tag in (("ownerp", acl.USER_OBJ), ("groupp", acl.GROUP_OBJ), ("otherp", acl.OTHER)):
        for letter, bit in (("r", 4), ("w", 2), ("x", 1)):
            values[f"{prefix}_{letter}"] = bool(perms.get(tag, 0) & bit)
    rows = []
    for e in folder.access.named:
        kind = "u" if e.tag == acl.USER else "g"
        row = {
            "kind": AccountKind.USER if kind == "u" else AccountKind.GROUP,
            "name": folder.names.get((kind, e.id), str(e.id)),
        }
        row.update({f"p_{letter}": bool(e.perms & bit) for letter, bit in (("r", 4), ("w", 2), ("x", 1))})
        rows.append(row)
    if template in Template.values:
        t = TEMPLATES[template]
        for prefix, key in (("ownerp", "owner_perms"), ("groupp", "group_perms"), ("otherp", "other_perms")):
            for letter in "rwx":
                values[f"{prefix}_{letter}"] = letter in t[key]
        values.update(setgid=t["setgid"], defaults=t["defaults"], sticky=False)
        if template != Template.GROUP_SHARED:
            rows = []
    return values, rows


class EffectiveForm(forms.Form):
    user = forms.CharField(max_length=256, help_text="A user of the host (local, or DOMAIN\\name once joined).")


class QuotaForm(forms.Form):
    dataset = forms.CharField(max_length=255)
    kind = forms.ChoiceField(choices=QuotaKind.choices, initial=QuotaKind.USER)
    name = forms.CharField(
        max_length=256,
        strip=False,
        help_text="A user or group (local, or DOMAIN\\name once joined), or a project's id.",
    )
    quota = forms.CharField(
        max_length=32,
        required=False,
        help_text="Bytes it may use, e.g. 50G or 2T (as every size: no fractions). Empty: none.",
    )
    objquota = forms.CharField(
        max_length=24, required=False, label="Files and folders", help_text="How many it may make. Empty: none."
    )


class ProjectForm(forms.Form):
    dataset = forms.CharField(max_length=255)
    path = forms.CharField(max_length=4096, strip=False, help_text="A folder inside the dataset, e.g. projects/apollo.")
    project = forms.CharField(max_length=10, help_text="A number from 1; then give that project a quota.")


class QuotaFilter(forms.Form):
    kind = forms.ChoiceField(choices=[("", "all"), *QuotaKind.choices], required=False)
    q = forms.CharField(max_length=80, required=False, label="Name")
