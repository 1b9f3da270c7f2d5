"""The server settings, folded on the shares page, come back open with the error under the field when refused."""

from django.forms.models import model_to_dict

from appliance.models import Operation
from shares.forms import ShareSettingsForm
from shares.selectors import share_settings


def test_a_refused_setting_is_said_under_its_field_with_the_settings_open(admin_client, local_host):
    data = {k: v for k, v in model_to_dict(share_settings(host=local_host)).items() if k in ShareSettingsForm().fields}
    data = {k: v for k, v in data.items() if v not in (False, None)} | {"smb_min_protocol": "SMB1"}
    response = admin_client.post("/shares/settings/", data)
    page = response.content.decode()
    assert response.status_code == 400
    assert '<details class="card" id="share-settings" open>' in page
    section = page.split('id="share-settings"', 1)[1].split("</details>", 1)[0]
    field = section.split('name="smb_min_protocol"', 1)[1].split('<div class="field', 1)[0]
    assert '<p class="error">' in field
    assert not Operation.objects.exists()
