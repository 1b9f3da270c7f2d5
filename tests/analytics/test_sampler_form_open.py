"""The folded sampling settings come back open with the error under the field when refused; nothing is saved."""

from analytics import selectors


def test_a_refused_interval_is_said_under_it_with_the_settings_open(admin_client, local_host):
    before = selectors.sampler_initial()
    response = admin_client.post("/analytics/sampling/", {"interval": "1", "raw_hours": "24", "rollup_days": "30"})
    page = response.content.decode()
    assert response.status_code == 400
    assert '<details class="card" id="sampler" open>' in page
    field = page.split('name="interval"', 1)[1].split('<div class="field', 1)[0]
    assert '<p class="error">' in field and 'value="1"' in page.split('id="sampler"', 1)[1]
    assert selectors.sampler_initial() == before
