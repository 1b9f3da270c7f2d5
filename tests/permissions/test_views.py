"""The permissions page as an admin, an operator and a viewer use it: the tree, the editor with getfacl's text, the
effective permissions, errors under the row that caused them, and the walk's page."""

import re

import pytest

from appliance.models import Operation
from permissions.models import AclWalk

pytestmark = pytest.mark.usefixtures("here")


def posted(**changes):
    data = {
        "dataset": "tank/office",
        "path": "team",
        "owner": "",
        "group": "users",
        "ownerp_r": "on",
        "ownerp_w": "on",
        "ownerp_x": "on",
        "groupp_r": "on",
        "groupp_x": "on",
        "defaults": "on",
        "entries-TOTAL_FORMS": "2",
        "entries-INITIAL_FORMS": "0",
        "entries-MIN_NUM_FORMS": "0",
        "entries-MAX_NUM_FORMS": "500",
        "entries-0-kind": "user",
        "entries-0-name": "nobody",
        "entries-0-p_r": "on",
        "entries-1-kind": "group",
        "entries-1-name": "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_a_viewer_sees_the_tree_the_acl_and_getfacls_text_but_no_editor(dataset, viewer_client):
    page = viewer_client.get("/permissions/", {"dataset": "tank/office", "path": "team"})
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="getfacl"' in html and "# owner: root" in html and ">sub</a>" in html
    assert 'id="acl-form"' not in html and "Only an admin" in html


def test_the_tree_opens_one_folder_at_a_time(dataset, viewer_client, mount):
    (mount / "team" / "sub" / "deeper").mkdir()
    part = viewer_client.get("/permissions/tree/", {"dataset": "tank/office", "path": "team/sub"}).content.decode()
    assert ">deeper</a>" in part and "<html" not in part


def test_without_a_dataset_the_page_says_what_to_do(db, viewer_client, local_host):
    html = viewer_client.get("/permissions/").content.decode()
    assert "No mounted filesystem" in html and "create a dataset" in html


def test_an_operator_may_not_change_permissions(dataset, operator_client):
    assert operator_client.post("/permissions/apply/", posted()).status_code == 403
    assert not Operation.objects.exists()


def test_an_unknown_name_is_said_under_its_row_and_the_form_stays_open(dataset, admin_client):
    page = admin_client.post("/permissions/apply/", posted(**{"entries-0-name": "no-such-user-x"}))
    html = page.content.decode()
    assert page.status_code == 400
    assert 'id="id_entries-0-name_error"' in html and "No user" in html
    assert 'value="no-such-user-x"' in html and not Operation.objects.exists()


def test_an_admin_applies_to_one_folder_or_previews_everything_inside(dataset, admin_client, mount):
    page = admin_client.post("/permissions/apply/", posted())
    op = Operation.objects.get()
    assert page.status_code == 302 and page["Location"] == f"/operations/{op.pk}/"
    assert op.kind == "permissions.acl_set" and op.target == "host:local:acl:tank/office"
    Operation.objects.all().delete()
    page = admin_client.post("/permissions/apply/", posted(recursive="on"))
    walk = AclWalk.objects.get()
    assert page["Location"] == f"/permissions/walks/{walk.pk}/"
    html = admin_client.get(page["Location"]).content.decode()
    assert "Counting" in html or "counting" in html
    assert 'id="walk-stop"' in html


def test_effective_permissions_answer_under_the_form(dataset, viewer_client):
    part = viewer_client.get("/permissions/effective/", {"dataset": "tank/office", "path": "team", "user": "root"})
    assert "is root" in part.content.decode()
    part = viewer_client.get("/permissions/effective/", {"dataset": "tank/office", "path": "team", "user": "nobody"})
    assert 'data-perm="read"' in part.content.decode() and 'data-perm="create"' in part.content.decode()
    assert "Why:" in part.content.decode()
    part = viewer_client.get("/permissions/effective/", {"dataset": "tank/office", "path": "team", "user": "-x"})
    assert 'id="effective-error"' in part.content.decode()


def _checked(html: str, name: str) -> bool:
    tag = re.search(rf'<input type="checkbox" name="{name}"[^>]*>', html).group(0)
    return " checked" in tag


def test_a_template_fills_the_editor(dataset, admin_client):
    def editor(template):
        query = {"dataset": "tank/office", "path": "team", "template": template}
        return admin_client.get("/permissions/", query).content.decode()

    shared, private = editor("group-shared"), editor("private")
    assert _checked(shared, "setgid") and _checked(shared, "groupp_w") and _checked(shared, "defaults")
    assert not _checked(private, "setgid") and not _checked(private, "groupp_r") and _checked(private, "ownerp_w")
