"""API parity: every action a page offers has an API endpoint that does the same (issue 22, item 8).

Which routes are page actions is asked of each view itself, never guessed from its name: every named page route
(one whose view is not a DRF view) is requested with OPTIONS as an admin. require_POST and require_http_methods
answer a method they do not take with 405 and an Allow header listing those they do (HttpResponseNotAllowed), and
a class-based view answers OPTIONS with its Allow header too; so Allow says whether the route takes POST. No POST
is ever sent: nothing changes while the test looks. A function view that declares no methods has no Allow header
and answers every method like GET; such a view must be listed in READ_PAGES, so a new view that changes something
without declaring its methods cannot pass as a page that only reads.

Every route that takes POST must then be in API (the API routes that do what it does), in EXEMPT (with the reason
it has none on purpose) or in NOT_YET (debt, with the reason). A new page action in none of them fails, and so does
a table entry for a route that no longer takes POST, or an API name that is not an API route taking a write.
"""

from django.urls import URLPattern, URLResolver, get_resolver, reverse

API = {
    # core
    "host-add": ["api:host-list"],
    "host-probe": ["api:host-probe"],
    "host-remove": ["api:host-detail"],
    # storage
    "pool-create": ["api:pool-list"],
    "inventory-refresh": ["api:pool-refresh"],
    "disk-list": ["api:media-speed-detail"],
    "pool-destroy": ["api:pool-detail"],
    "pool-scrub": ["api:pool-scrub"],
    "pool-scrub-schedule": ["api:pool-scrub-schedule"],
    "pool-export": ["api:pool-export"],
    "pool-device": ["api:pool-device"],
    "pool-add": ["api:pool-add"],
    "pool-trim": ["api:pool-trim"],
    "pool-import-scan": ["api:pool-import-scan"],
    "pool-import": ["api:pool-import-pool"],
    "dataset-create": ["api:dataset-list"],
    "dataset-edit": ["api:dataset-detail"],
    "dataset-inherit": ["api:dataset-inherit"],
    "dataset-rename": ["api:dataset-rename"],
    "dataset-destroy": ["api:dataset-detail"],
    "snapshot-create": ["api:snapshot-list"],
    "snapshot-rollback": ["api:snapshot-rollback"],
    "snapshot-clone": ["api:snapshot-clone"],
    "snapshot-hold": ["api:snapshot-hold", "api:snapshot-release"],
    "snapshot-destroy": ["api:snapshot-destroy-many", "api:snapshot-detail"],
    "snapshot-task-list": ["api:snapshot-task-list"],
    "snapshot-task-delete": ["api:snapshot-task-detail"],
    # shares
    "smb-share-create": ["api:smb-share-list"],
    "smb-share-edit": ["api:smb-share-detail"],
    "smb-share-delete": ["api:smb-share-detail"],
    "smb-share-folder": ["api:smb-share-folder"],
    "nfs-export-create": ["api:nfs-export-list"],
    "nfs-export-edit": ["api:nfs-export-detail"],
    "nfs-export-delete": ["api:nfs-export-detail"],
    "share-settings": ["api:share-settings-detail"],
    "share-status": ["api:share-status-refresh"],
    "samba-user-add": ["api:samba-user-list"],
    "samba-user": [  # a user's row: password, enable, disable, delete
        "api:samba-user-password",
        "api:samba-user-enable",
        "api:samba-user-disable",
        "api:samba-user-detail",
    ],
    # tuning
    "tuning-refresh": ["api:link-refresh"],
    "tuning-plan": ["api:change-set-list"],
    "tuning-change": ["api:change-set-apply"],
    "tuning-change-keep": ["api:change-set-keep"],
    "tuning-change-revert": ["api:change-set-revert"],
    "tuning-setting": ["api:tunable-list"],
    "tuning-setting-revert": ["api:tunable-revert"],
    "tuning-setting-drift": ["api:tunable-drift"],
    "tuning-mtu": ["api:link-mtu"],
    "tuning-bridge-create": ["api:link-bridge"],
    "tuning-bridge-delete": ["api:link-bridge-delete"],
    "tuning-bond-create": ["api:link-bond"],
    "tuning-bond-delete": ["api:link-bond-delete"],
    "tuning-vlan-create": ["api:link-vlan"],
    "tuning-vlan-delete": ["api:link-vlan-delete"],
    # benchmarks
    "benchmark-list": [  # a storage run (dataset or share), a suite, a network run
        "api:benchmark-run-list",
        "api:benchmark-run-share",
        "api:benchmark-suite-list",
        "api:benchmark-run-network",
    ],
    "benchmark-cancel": ["api:benchmark-run-cancel"],
    "benchmark-again": ["api:benchmark-run-again"],
    "benchmark-schedules": ["api:benchmark-schedule-list"],
    "benchmark-schedule": ["api:benchmark-schedule-detail"],
    "benchmark-schedule-delete": ["api:benchmark-schedule-detail"],
    "benchmark-profile-copy": ["api:benchmark-profile-list"],
    "benchmark-profile-delete": ["api:benchmark-profile-detail"],
    # analytics and alerts
    "analytics-sampler": ["api:analytics-sampling"],
    "alert-rule-save": ["api:alert-rule-detail"],
    "channel-add": ["api:alert-channel-list"],
    "channel-edit": ["api:alert-channel-detail"],
    "channel-test": ["api:alert-channel-test"],
    "channel-delete": ["api:alert-channel-detail"],
    # replication
    "replication-pair-new": ["api:replication-pair-list"],
    "replication-unpair": ["api:replication-pair-detail"],
    "replication-task-new": ["api:replication-task-list"],
    "replication-task-run": ["api:replication-task-run"],
    "replication-task-delete": ["api:replication-task-detail"],
    "replication-task-failover": ["api:replication-task-failover"],
    "replication-task-restore": ["api:replication-task-restore"],
    "replication-pair-quota": ["api:replication-pair-quota"],
    "replication-pair-reviewed": ["api:replication-pair-reviewed"],
    "replication-task-retention": ["api:replication-task-retention"],
    "replication-task-resume-pruning": ["api:replication-task-resume-pruning"],
    # disk health
    "health-read": ["api:disk-health-read"],
    "health-self-test": ["api:disk-health-self-test"],
    "health-self-test-abort": ["api:disk-health-abort"],
    "health-run-new": ["api:self-test-run-list"],
    "health-run-cancel": ["api:self-test-run-cancel"],
    "health-schedule-new": ["api:self-test-schedule-list"],
    "health-schedule-delete": ["api:self-test-schedule-detail"],
    "encryption-create": ["api:encryption-root-create-dataset"],
    "encryption-unlock": ["api:encryption-root-unlock"],
    "encryption-lock": ["api:encryption-root-lock"],
    "encryption-change-key": ["api:encryption-root-change-key"],
    "encryption-export": ["api:encryption-root-export"],
    "encryption-export-download": ["api:key-export-download"],
    "encryption-retired-remove": ["api:retired-key-remove"],
    "backup-now": ["api:config-backup-now"],
    "backup-schedule": ["api:config-backup-schedule"],
    "backup-upload": ["api:config-backup-upload"],
    "backup-check": ["api:config-backup-check"],
    "backup-restore": ["api:config-backup-restore"],
    "backup-delete": ["api:config-backup-delete"],
    "certificate-import": ["api:certificate-import"],
    "certificate-trust": ["api:certificate-trust"],
    "certificate-request": ["api:certificate-request"],
    "certificate-acme": ["api:certificate-acme"],
    "certificate-acme-stop": ["api:certificate-acme-stop"],
    "directory-join": ["api:directory-member-join"],
    "directory-leave": ["api:directory-member-leave"],
    "directory-refresh": ["api:directory-member-refresh", "api:directory-ldap-refresh"],
    "directory-check": ["api:directory-member-check", "api:directory-ldap-check"],
    "directory-ldap": ["api:directory-ldap-configure"],
    "directory-ldap-remove": ["api:directory-ldap-remove"],
    "permissions-apply": ["api:acl-list"],  # POST: one folder, or with recursive the count of a walk
    "permissions-walk-apply": ["api:acl-walk-apply"],
    "permissions-walk-stop": ["api:acl-walk-stop"],
    "quota-set": ["api:quota-use-set"],
    "quota-project": ["api:quota-use-project"],
    "quota-refresh": ["api:quota-use-refresh"],
    "capacity-update": ["api:capacity-forecast-refresh"],
    "recovery-restore": ["api:restore-list"],
    "recovery-restore-stop": ["api:restore-stop"],
    "iscsi-target-save": ["api:iscsi-target-list"],
    "iscsi-target-delete": ["api:iscsi-target-detail"],
    "iscsi-lun-add": ["api:iscsi-lun-list"],
    "iscsi-lun-remove": ["api:iscsi-lun-detail"],
    "iscsi-initiator-save": ["api:iscsi-initiator-list"],
    "iscsi-initiator-remove": ["api:iscsi-initiator-detail"],
    "iscsi-sessions": ["api:iscsi-target-sessions"],
    "ups-save": ["api:ups-list"],
    "ups-remove": ["api:ups-detail"],
    "updates-check": ["api:host-updates-check"],
    "updates-apply": ["api:host-updates-apply"],
    "updates-reboot": ["api:host-updates-reboot"],
    "updates-rollout": ["api:updates-rollout"],
}

# Page actions that change only the browser's session or the person's own sign-in: an API client names the host in
# each request and authenticates each request with its token.
EXEMPT = {
    "login": "starts a browser session; the API authenticates every request with a token",
    "logout": "ends a browser session",
    "host-switch": "navigation: the host the pages show; API requests name their host",
    "password-change": "the person's own password, typed by that person in the browser",
    "token-list": "API tokens are made by a person signed in, never by another token",
    "token-revoke": "the person's own tokens, revoked in the browser (a leaked token must not be able to act here)",
    "login-verify": "the second step of a browser sign-in",
    "login-passkey-options": "the second step of a browser sign-in (a passkey's challenge)",
    "login-passkey": "the second step of a browser sign-in (a passkey's answer)",
    "two-factor-totp": "the person's own second factor, set up in the browser with their device in hand",
    "two-factor-recovery": "the person's own recovery codes, shown once in the browser",
    "two-factor-passkey-options": "a passkey is registered by a browser (WebAuthn), never by a token",
    "two-factor-passkey-add": "a passkey is registered by a browser (WebAuthn), never by a token",
    "two-factor-passkey-remove": "the person's own second factor (a leaked token must not be able to remove it)",
    "two-factor-passkey-login": "the person's own sign-in",
    "two-factor-confirm": "a fresh second factor in the browser session",
    "two-factor-confirm-options": "a fresh second factor in the browser session",
    "two-factor-confirm-passkey": "a fresh second factor in the browser session",
    "two-factor-policy": "who must sign in with a second factor: browser sign-ins only (tokens are not affected)",
    "two-factor-reset": "a person's browser sign-in factors; a token must not be able to strip another's",
}

# Page actions still without an API endpoint: debt, each with its reason. Move an entry to API when its endpoint
# exists.
NOT_YET: dict[str, str] = {}  # page actions whose API endpoint is still to come, with the reason

# Function views that declare no methods (no Allow header): pages and downloads that only read.
READ_PAGES = {
    "dashboard",
    "capacity-list",
    "capacity-detail",
    "recovery-browse",
    "recovery-versions",
    "healthz",
    "host-list",
    "host-detail",
    "operation-list",
    "operation-detail",
    "audit-list",
    "pool-list",
    "pool-detail",
    "snapshot-list",
    "dataset-detail",
    "share-list",
    "tuning-overview",
    "benchmark-run",
    "benchmark-results-csv",
    "benchmark-results-json",
    "benchmark-compare",
    "benchmark-suite",
    "benchmark-profiles",
    "analytics",
    "alert-list",
    "replication-list",
    "health-list",
    "encryption-list",
    "health-disk",
    "replication-task",
}

WRITES = {"post", "put", "patch", "delete"}


def walk(patterns, namespace=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from walk(entry.url_patterns, f"{namespace}{entry.namespace}:" if entry.namespace else namespace)
        elif isinstance(entry, URLPattern) and entry.name:
            yield f"{namespace}{entry.name}", entry


def routes(*, api: bool) -> dict:
    """Named routes, first pattern per name (DRF adds format-suffix twins); api: DRF views, else pages."""
    found = {}
    for name, pattern in walk(get_resolver().url_patterns):
        if hasattr(pattern.callback, "cls") == api:
            found.setdefault(name, pattern)
    return found


def declared_methods(client, name, pattern) -> set[str] | None:
    """The methods the route's view declares (from Allow), or None when it declares none."""
    params = [p for p in pattern.pattern.converters if p != "format"]
    response = client.options(reverse(name, kwargs=dict.fromkeys(params, 1)))
    allow = response.headers.get("Allow")
    return None if allow is None else {m.strip().upper() for m in allow.split(",")}


def classify(client) -> tuple[set[str], set[str]]:
    """(routes that take POST, routes whose view declares no methods)."""
    posts, undeclared = set(), set()
    for name, pattern in routes(api=False).items():
        methods = declared_methods(client, name, pattern)
        if methods is None:
            undeclared.add(name)
        elif "POST" in methods:
            posts.add(name)
    return posts, undeclared


def test_the_tables_do_not_overlap():
    assert not set(API) & set(EXEMPT) and not set(API) & set(NOT_YET) and not set(EXEMPT) & set(NOT_YET)
    assert not READ_PAGES & (set(API) | set(EXEMPT) | set(NOT_YET))


def test_every_page_action_has_an_api_endpoint_or_a_reason(admin_client):
    posts, _ = classify(admin_client)
    listed = set(API) | set(EXEMPT) | set(NOT_YET)
    assert not posts - listed, f"page actions with no API endpoint in the table: {sorted(posts - listed)}"
    assert not listed - posts, f"listed, but not a page route that takes POST: {sorted(listed - posts)}"


def test_every_view_that_declares_no_methods_is_a_known_read_page(admin_client):
    """A function view with no require_POST/require_http_methods would take a POST unnoticed by the check above."""
    _, undeclared = classify(admin_client)
    assert undeclared == READ_PAGES, (
        f"declare the methods of {sorted(undeclared - READ_PAGES)} (or list a read page here); "
        f"no longer undeclared: {sorted(READ_PAGES - undeclared)}"
    )


def test_every_api_counterpart_is_an_api_route_that_takes_a_write():
    api = routes(api=True)
    for page, names in API.items():
        assert names, page
        for name in names:
            assert name in api, f"{page}: {name} is not an API route"
            view = api[name].callback  # a viewset's route maps methods to actions; an APIView defines them
            actions = getattr(view, "actions", None) or {m: m for m in WRITES if hasattr(view.cls, m)}
            assert WRITES & set(actions), f"{page}: {name} takes no write ({sorted(actions)})"


def test_the_check_sees_post_only_and_get_and_post_views_and_ignores_read_pages(admin_client):
    """The classification itself: a POST-only action, a GET+POST form page, a read page, and an API route."""
    posts, undeclared = classify(admin_client)
    assert {"pool-scrub", "snapshot-task-list", "logout", "tuning-refresh"} <= posts
    assert "pool-list" in undeclared and "pool-list" not in posts
    assert "api:pool-list" not in posts | undeclared and "metrics" not in posts | undeclared
