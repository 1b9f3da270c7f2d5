"""The Operations and Audit pages' rows, drawn by Python tags rather than a template a row (issue 46): what a row
shows, escaped, as the template drew it."""

from django.utils import timezone

from appliance.models import ApiToken, AuditEntry, Operation


def test_an_operations_row_links_its_page_and_escapes_what_a_host_or_user_wrote(admin_client, local_host, admin_user):
    op = Operation.objects.create(
        kind="unknown.kind",
        target="<b>t</b>",
        host=local_host,
        status="failed",
        message="<script>x</script>" + "m" * 100,
        user=admin_user,
    )
    mine = Operation.objects.create(kind="unknown.kind", target="x", status="succeeded", message="Took")
    html = admin_client.get("/operations/").content.decode()
    assert f'<a href="/operations/{op.pk}/">unknown.kind</a>' in html
    assert "<td>&lt;b&gt;t&lt;/b&gt;</td>" in html and "<script>x" not in html
    assert '<span class="badge badge-failed">Failed</span>' in html
    shown = "&lt;script&gt;x&lt;/script&gt;" + "m" * (80 - 1 - len("<script>x</script>")) + "…"
    assert f"<td>{shown}</td>" in html
    assert f"<td>{admin_user.username}</td>" in html
    row = html[html.index(f'href="/operations/{mine.pk}/"') :]
    when = timezone.localtime(mine.created_at)
    assert "<td>system</td>" in row.split("</tr>")[0]
    assert f'title="{when.isoformat()}">{when:%b} {when.day}, {when:%H:%M}</td>' in row


def test_an_audit_row_says_who_what_and_the_result_and_shows_parameters_to_admins_only(
    admin_client, operator_client, local_host, admin_user
):
    op = Operation.objects.create(kind="unknown.kind", target="x", status="succeeded")
    token = ApiToken.objects.create(user=admin_user, name="ci", key_hash="0" * 64, hint="tarn_0")
    AuditEntry.objects.create(
        kind="request",
        username="ann<i>",
        method="POST",
        path="/pools/<x>/",
        status_code=302,
        auth="token",
        token=token,
        params={"compression": "<zstd>"},
        operation=op,
    )
    AuditEntry.objects.create(
        kind="command", username="tarn", host_name="local", argv=["zfs", "snapshot", "--", "t/<a>@s"], exit_code=1
    )
    html = admin_client.get("/audit/").content.decode()
    assert "<code>zfs snapshot -- t/&lt;a&gt;@s</code>" in html and "<td>exit 1</td>" in html
    assert "ann&lt;i&gt;" in html and "POST /pools/&lt;x&gt;/" in html and "<td>302</td>" in html
    assert f'→ <a href="/operations/{op.pk}/">operation {op.pk}</a>' in html
    assert "&lt;zstd&gt;" in html and '<details class="params">' in html
    assert f'<small title="API token {token.pk}">(token #{token.pk})</small>' in html
    shown = operator_client.get("/audit/").content.decode()
    assert "ann&lt;i&gt;" in shown and "&lt;zstd&gt;" not in shown
