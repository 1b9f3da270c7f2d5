"""Who may read and who may change, route by route, from a table written by hand from the README's role list
(admin: everything; operator: day-to-day work — datasets, snapshots, shares, benchmarks, probing hosts — but not
adding hosts, destroying pools, network or tuning; viewer: read-only, except their own API tokens and session).

The table is deliberately NOT read from the code's `requires(...)` declarations: a view that forgot its declaration
falls back to "operator may write", and a test that asks the code what it declared can never notice. Every route
the resolver knows must have its row here (a new route without one fails), and for each row a user below the
minimum is refused (403) and a user at the minimum is not."""

import re

import pytest
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from analytics.models import Alert, Channel
from appliance.choices import Role
from appliance.models import ApiToken, AuditEntry, Operation, Passkey
from backups.models import Backup
from benchmarks.models import CustomProfile, Run, Schedule, Suite
from capacity.models import Forecast
from directory.models import DirectoryName, DomainMember, LdapDirectory
from encryption.models import KeyExport, RetiredKey
from health.models import DiskHealth, SelfTestRun, SelfTestSchedule
from iscsi.models import Initiator, Lun
from iscsi.models import Target as IscsiTarget
from permissions.models import AclWalk, QuotaUse
from pools.models import Dataset, Disk, Pool, Snapshot, SnapshotTask
from recovery.models import Restore
from replication.models import Pair
from replication.models import Task as ReplicationTask
from shares.models import NfsExport, SambaUser, SmbShare
from tests.support.apps import ROOT, product_apps
from tuning.models import ChangeSet, Link, Setting
from ups.models import Ups

MUTATING = ["POST", "PUT", "PATCH", "DELETE"]
VIEWER, OPERATOR, ADMIN = Role.VIEWER, Role.OPERATOR, Role.ADMIN
PUBLIC = None
RANK = [VIEWER, OPERATOR, ADMIN]

# URL -> (minimum role to read it, minimum role to change anything through it), from the README.
# Conventions: a page or endpoint that changes nothing has write OPERATOR ("any change needs at least an operator"), so
# only a viewer is refused there; a POST-only action has read VIEWER (a GET answers 405 to anyone and shows nothing).
ROLES: dict[str, tuple[str, str] | None] = {
    # Core: log-in, dashboard, hosts (adding and removing one is admin work, probing is an operator's), operations,
    # audit; a viewer's own session, password and tokens.
    "/login/": PUBLIC,
    "/healthz": PUBLIC,
    "/favicon.ico": PUBLIC,
    "/logout/": (VIEWER, VIEWER),
    "/": (VIEWER, OPERATOR),
    "/hosts/": (VIEWER, OPERATOR),
    "/fleet/": (VIEWER, OPERATOR),
    "/api/v1/fleet/": (VIEWER, OPERATOR),
    "/hosts/add/": (ADMIN, ADMIN),
    "/hosts/switch/": (VIEWER, VIEWER),
    "/hosts/<pk>/": (VIEWER, OPERATOR),
    "/hosts/<pk>/probe/": (VIEWER, OPERATOR),
    "/hosts/<pk>/remove/": (ADMIN, ADMIN),
    "/operations/": (VIEWER, OPERATOR),
    "/operations/<pk>/": (VIEWER, OPERATOR),
    "/audit/": (VIEWER, OPERATOR),
    "/account/tokens/": (VIEWER, VIEWER),
    "/account/password/": (VIEWER, VIEWER),
    "/account/tokens/<pk>/revoke/": (VIEWER, VIEWER),
    # Two-factor: the second step of signing in is reached before login (it checks who is half signed in); each
    # user's own factors are theirs, whatever their role; the policy and resets are an admin's.
    "/login/verify/": PUBLIC,
    "/login/passkey/options/": PUBLIC,
    "/login/passkey/": PUBLIC,
    "/account/two-factor/": (VIEWER, VIEWER),
    "/account/two-factor/totp/": (VIEWER, VIEWER),
    "/account/two-factor/recovery-codes/": (VIEWER, VIEWER),
    "/account/two-factor/passkeys/options/": (VIEWER, VIEWER),
    "/account/two-factor/passkeys/": (VIEWER, VIEWER),
    "/account/two-factor/passkeys/<pk>/remove/": (VIEWER, VIEWER),
    "/account/two-factor/passkey-login/": (VIEWER, VIEWER),
    "/account/two-factor/confirm/": (VIEWER, VIEWER),
    "/account/two-factor/confirm/passkey/options/": (VIEWER, VIEWER),
    "/account/two-factor/confirm/passkey/": (VIEWER, VIEWER),
    "/account/two-factor/users/": (ADMIN, ADMIN),
    "/account/two-factor/policy/": (ADMIN, ADMIN),
    "/account/two-factor/users/<pk>/reset/": (ADMIN, ADMIN),
    # Storage: datasets, snapshots, scrubs, TRIM and schedules are day-to-day work; creating, destroying, growing,
    # exporting and importing pools, per-disk actions and the disks' media speeds are an admin's.
    "/pools/shares/<rest>": (VIEWER, OPERATOR),  # old addresses, redirected
    "/pools/shares/": (VIEWER, OPERATOR),
    "/pools/snapshots/schedules/": (VIEWER, OPERATOR),
    "/pools/": (VIEWER, OPERATOR),
    "/pools/create/": (VIEWER, ADMIN),
    "/pools/refresh/": (VIEWER, OPERATOR),
    "/pools/disks/": (VIEWER, ADMIN),
    "/pools/snapshots/": (VIEWER, OPERATOR),
    "/pools/<pk>/": (VIEWER, OPERATOR),
    "/pools/<pk>/destroy/": (VIEWER, ADMIN),
    "/pools/<pk>/scrub/": (VIEWER, OPERATOR),
    "/pools/<pk>/export/": (VIEWER, ADMIN),
    "/pools/<pk>/device/": (VIEWER, ADMIN),
    "/pools/<pk>/add/": (VIEWER, ADMIN),
    "/pools/<pk>/trim/": (VIEWER, OPERATOR),
    "/pools/<pk>/scrub/schedule/": (VIEWER, OPERATOR),
    "/pools/import/scan/": (VIEWER, OPERATOR),
    "/pools/import/": (VIEWER, ADMIN),
    "/pools/<pk>/datasets/create/": (VIEWER, OPERATOR),
    "/pools/datasets/<pk>/": (VIEWER, OPERATOR),
    "/pools/datasets/<pk>/edit/": (VIEWER, OPERATOR),
    "/pools/datasets/<pk>/inherit/": (VIEWER, OPERATOR),
    "/pools/datasets/<pk>/rename/": (VIEWER, OPERATOR),
    "/pools/datasets/<pk>/destroy/": (VIEWER, OPERATOR),
    "/pools/datasets/<pk>/snapshots/create/": (VIEWER, OPERATOR),
    "/pools/datasets/<pk>/snapshots/clone/": (VIEWER, OPERATOR),
    "/pools/datasets/<pk>/snapshots/hold/": (VIEWER, OPERATOR),
    "/pools/datasets/<pk>/snapshots/rollback/": (
        VIEWER,
        OPERATOR,
    ),  # past newer snapshots: admin (checked in the service)
    "/pools/snapshots/destroy/": (VIEWER, OPERATOR),
    "/pools/schedules/": (VIEWER, OPERATOR),
    "/pools/schedules/<pk>/delete/": (VIEWER, OPERATOR),
    # Shares are an operator's; server settings, Samba users and folder permissions an admin's.
    "/shares/": (VIEWER, OPERATOR),
    "/shares/smb/new/": (VIEWER, OPERATOR),
    "/shares/smb/<pk>/": (VIEWER, OPERATOR),
    "/shares/smb/<pk>/delete/": (VIEWER, OPERATOR),
    "/shares/smb/<pk>/folder/": (VIEWER, ADMIN),
    "/shares/nfs/new/": (VIEWER, OPERATOR),
    "/shares/nfs/<pk>/": (VIEWER, OPERATOR),
    "/shares/nfs/<pk>/delete/": (VIEWER, OPERATOR),
    "/shares/settings/": (VIEWER, ADMIN),
    "/shares/users/": (VIEWER, ADMIN),
    "/shares/users/add/": (VIEWER, ADMIN),
    "/shares/status/": (VIEWER, OPERATOR),
    # Network & tuning: reads for viewers, every change an admin's.
    "/tuning/": (VIEWER, OPERATOR),
    "/tuning/plan/": (VIEWER, ADMIN),
    "/tuning/settings/": (VIEWER, ADMIN),
    "/tuning/settings/<pk>/revert/": (VIEWER, ADMIN),
    "/tuning/settings/<pk>/drift/": (VIEWER, ADMIN),
    "/tuning/refresh/": (VIEWER, ADMIN),
    "/tuning/links/mtu/": (VIEWER, ADMIN),
    "/tuning/bridges/": (VIEWER, ADMIN),
    "/tuning/bridges/delete/": (VIEWER, ADMIN),
    "/tuning/bonds/": (VIEWER, ADMIN),
    "/tuning/bonds/delete/": (VIEWER, ADMIN),
    "/tuning/vlans/": (VIEWER, ADMIN),
    "/tuning/vlans/delete/": (VIEWER, ADMIN),
    "/tuning/changes/<pk>/": (VIEWER, ADMIN),
    "/tuning/changes/<pk>/keep/": (VIEWER, ADMIN),
    "/tuning/changes/<pk>/revert/": (VIEWER, ADMIN),
    # Benchmarks: running them is an operator's; profiles are copied, changed and deleted by admins only
    # ("Copy makes an admin's profile").
    "/benchmarks/": (VIEWER, OPERATOR),
    "/benchmarks/runs/<pk>/": (VIEWER, OPERATOR),
    "/benchmarks/runs/<pk>/results.csv": (VIEWER, OPERATOR),
    "/benchmarks/runs/<pk>/results.json": (VIEWER, OPERATOR),
    "/benchmarks/runs/<pk>/cancel/": (VIEWER, OPERATOR),
    "/benchmarks/runs/<pk>/again/": (VIEWER, OPERATOR),
    "/benchmarks/compare/": (VIEWER, OPERATOR),
    "/benchmarks/suites/<pk>/": (VIEWER, OPERATOR),
    "/benchmarks/profiles/": (VIEWER, OPERATOR),
    "/benchmarks/profiles/copy/": (ADMIN, ADMIN),
    "/benchmarks/profiles/<pk>/delete/": (VIEWER, ADMIN),
    "/benchmarks/schedules/": (VIEWER, OPERATOR),
    "/benchmarks/schedules/<pk>/": (VIEWER, OPERATOR),
    "/benchmarks/schedules/<pk>/delete/": (VIEWER, OPERATOR),
    # Analytics for everyone, the sampler's settings an admin's; alerts for everyone, rules and channels admins'
    # (a channel's page and form are admin-only: they hold its address).
    "/analytics/": (VIEWER, OPERATOR),
    "/analytics/sampling/": (VIEWER, ADMIN),
    "/alerts/": (VIEWER, OPERATOR),
    "/alerts/rules/": (VIEWER, ADMIN),
    "/alerts/channels/add/": (ADMIN, ADMIN),
    "/alerts/channels/<pk>/": (ADMIN, ADMIN),
    "/alerts/channels/<pk>/test/": (VIEWER, ADMIN),
    "/alerts/channels/<pk>/delete/": (VIEWER, ADMIN),
    "/metrics": (VIEWER, OPERATOR),
    # The API: the same rules as the pages.
    "/api/v1/": (VIEWER, OPERATOR),
    "/api/v1/schema/": (VIEWER, OPERATOR),
    "/api/v1/docs/": (VIEWER, OPERATOR),
    "/api/v1/hosts/": (VIEWER, ADMIN),
    "/api/v1/hosts/<pk>/": (VIEWER, ADMIN),
    "/api/v1/hosts/<pk>/probe/": (VIEWER, OPERATOR),
    "/api/v1/operations/": (VIEWER, OPERATOR),
    "/api/v1/operations/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/audit/": (VIEWER, OPERATOR),
    "/api/v1/audit/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/pools/": (VIEWER, ADMIN),
    "/api/v1/pools/import/": (VIEWER, ADMIN),
    "/api/v1/pools/import-scan/": (VIEWER, OPERATOR),
    "/api/v1/pools/refresh/": (VIEWER, OPERATOR),
    "/api/v1/pools/<pk>/": (VIEWER, ADMIN),
    "/api/v1/pools/<pk>/add/": (VIEWER, ADMIN),
    "/api/v1/pools/<pk>/device/": (VIEWER, ADMIN),
    "/api/v1/pools/<pk>/export/": (VIEWER, ADMIN),
    "/api/v1/pools/<pk>/scrub/": (VIEWER, OPERATOR),
    "/api/v1/pools/<pk>/scrub-schedule/": (VIEWER, OPERATOR),
    "/api/v1/pools/<pk>/trim/": (VIEWER, OPERATOR),
    "/api/v1/disks/": (VIEWER, OPERATOR),
    "/api/v1/disks/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/datasets/": (VIEWER, OPERATOR),
    "/api/v1/datasets/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/datasets/<pk>/inherit/": (VIEWER, OPERATOR),
    "/api/v1/datasets/<pk>/rename/": (VIEWER, OPERATOR),
    "/api/v1/snapshots/": (VIEWER, OPERATOR),
    "/api/v1/snapshots/destroy/": (VIEWER, OPERATOR),
    "/api/v1/snapshots/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/snapshots/<pk>/clone/": (VIEWER, OPERATOR),
    "/api/v1/snapshots/<pk>/hold/": (VIEWER, OPERATOR),
    "/api/v1/snapshots/<pk>/release/": (VIEWER, OPERATOR),
    "/api/v1/snapshots/<pk>/rollback/": (VIEWER, OPERATOR),
    "/api/v1/snapshot-tasks/": (VIEWER, OPERATOR),
    "/api/v1/snapshot-tasks/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/media-speeds/": (VIEWER, ADMIN),
    "/api/v1/media-speeds/<pk>/": (VIEWER, ADMIN),
    "/api/v1/smb-shares/": (VIEWER, OPERATOR),
    "/api/v1/smb-shares/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/smb-shares/<pk>/folder/": (VIEWER, ADMIN),
    "/api/v1/nfs-exports/": (VIEWER, OPERATOR),
    "/api/v1/nfs-exports/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/samba-users/": (VIEWER, ADMIN),
    "/api/v1/samba-users/<pk>/": (VIEWER, ADMIN),
    "/api/v1/samba-users/<pk>/disable/": (VIEWER, ADMIN),
    "/api/v1/samba-users/<pk>/enable/": (VIEWER, ADMIN),
    "/api/v1/samba-users/<pk>/password/": (VIEWER, ADMIN),
    "/api/v1/share-settings/<host>/": (VIEWER, ADMIN),
    "/api/v1/share-status/<host>/": (VIEWER, OPERATOR),
    "/api/v1/share-status/<host>/refresh/": (VIEWER, OPERATOR),
    "/api/v1/links/": (VIEWER, ADMIN),
    "/api/v1/links/bridge/": (VIEWER, ADMIN),
    "/api/v1/links/bridge-delete/": (VIEWER, ADMIN),
    "/api/v1/links/bond/": (VIEWER, ADMIN),
    "/api/v1/links/bond-delete/": (VIEWER, ADMIN),
    "/api/v1/links/vlan/": (VIEWER, ADMIN),
    "/api/v1/links/vlan-delete/": (VIEWER, ADMIN),
    "/api/v1/links/mtu/": (VIEWER, ADMIN),
    "/api/v1/links/refresh/": (VIEWER, ADMIN),
    "/api/v1/links/<pk>/": (VIEWER, ADMIN),
    "/api/v1/change-sets/": (VIEWER, ADMIN),
    "/api/v1/change-sets/<pk>/": (VIEWER, ADMIN),
    "/api/v1/change-sets/<pk>/apply/": (VIEWER, ADMIN),
    "/api/v1/change-sets/<pk>/keep/": (VIEWER, ADMIN),
    "/api/v1/change-sets/<pk>/revert/": (VIEWER, ADMIN),
    "/api/v1/tunables/": (VIEWER, ADMIN),
    "/api/v1/tunables/<pk>/": (VIEWER, ADMIN),
    "/api/v1/tunables/<pk>/drift/": (VIEWER, ADMIN),
    "/api/v1/tunables/<pk>/revert/": (VIEWER, ADMIN),
    "/api/v1/benchmark-runs/": (VIEWER, OPERATOR),
    "/api/v1/benchmark-runs/network/": (VIEWER, OPERATOR),
    "/api/v1/benchmark-runs/share/": (VIEWER, OPERATOR),
    "/api/v1/benchmark-runs/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/benchmark-runs/<pk>/again/": (VIEWER, OPERATOR),
    "/api/v1/benchmark-runs/<pk>/cancel/": (VIEWER, OPERATOR),
    "/api/v1/benchmark-profiles/": (VIEWER, ADMIN),
    "/api/v1/benchmark-profiles/<pk>/": (VIEWER, ADMIN),
    "/api/v1/benchmark-suites/": (VIEWER, OPERATOR),
    "/api/v1/benchmark-suites/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/benchmark-schedules/": (VIEWER, OPERATOR),
    "/api/v1/benchmark-schedules/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/analytics/": (VIEWER, OPERATOR),
    "/api/v1/analytics/sampling/": (VIEWER, ADMIN),
    "/api/v1/alerts/": (VIEWER, OPERATOR),
    "/api/v1/alerts/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/alert-channels/": (ADMIN, ADMIN),
    "/api/v1/alert-channels/<pk>/": (ADMIN, ADMIN),
    "/api/v1/alert-channels/<pk>/test/": (ADMIN, ADMIN),
    "/api/v1/alert-rules/": (VIEWER, ADMIN),
    "/api/v1/alert-rules/<pk>/": (VIEWER, ADMIN),
    # Replication: pairing puts a key into a NAS's authorized_keys, a task decides what leaves a NAS (admin); an
    # operator runs a task.
    "/replication/": (VIEWER, OPERATOR),
    "/replication/pairs/new/": (ADMIN, ADMIN),
    "/replication/pairs/<pk>/unpair/": (VIEWER, ADMIN),
    "/replication/pairs/<pk>/quota/": (VIEWER, ADMIN),
    "/replication/pairs/<pk>/reviewed/": (VIEWER, ADMIN),
    "/replication/tasks/new/": (ADMIN, ADMIN),
    "/replication/tasks/<pk>/": (VIEWER, OPERATOR),
    "/replication/tasks/<pk>/run/": (VIEWER, OPERATOR),
    "/replication/tasks/<pk>/delete/": (VIEWER, ADMIN),
    "/replication/tasks/<pk>/failover/": (VIEWER, ADMIN),
    "/replication/tasks/<pk>/restore/": (VIEWER, ADMIN),
    "/replication/tasks/<pk>/retention/": (VIEWER, ADMIN),
    "/replication/tasks/<pk>/resume-pruning/": (VIEWER, ADMIN),
    "/api/v1/replication-pairs/": (VIEWER, ADMIN),
    "/api/v1/replication-pairs/<pk>/": (VIEWER, ADMIN),
    "/api/v1/replication-pairs/<pk>/quota/": (VIEWER, ADMIN),
    "/api/v1/replication-pairs/<pk>/reviewed/": (VIEWER, ADMIN),
    "/api/v1/replication-tasks/": (VIEWER, ADMIN),
    "/api/v1/replication-tasks/<pk>/": (VIEWER, ADMIN),
    "/api/v1/replication-tasks/<pk>/run/": (VIEWER, OPERATOR),
    "/api/v1/replication-tasks/<pk>/failover/": (VIEWER, ADMIN),
    "/api/v1/replication-tasks/<pk>/restore/": (VIEWER, ADMIN),
    "/api/v1/replication-tasks/<pk>/retention/": (VIEWER, ADMIN),
    "/api/v1/replication-tasks/<pk>/resume-pruning/": (VIEWER, ADMIN),
    "/api/v1/replication-tasks/<pk>/runs/": (VIEWER, OPERATOR),
    # Disk health: reading the disks and running self-tests are day-to-day work (a self-test changes no data).
    "/health/": (VIEWER, OPERATOR),
    "/health/read/": (VIEWER, OPERATOR),
    "/health/disks/<pk>/": (VIEWER, OPERATOR),
    "/health/disks/<pk>/self-test/": (VIEWER, OPERATOR),
    "/health/disks/<pk>/abort/": (VIEWER, OPERATOR),
    "/api/v1/disk-health/": (VIEWER, OPERATOR),
    "/api/v1/disk-health/read/": (VIEWER, OPERATOR),
    "/api/v1/disk-health/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/disk-health/<pk>/self-test/": (VIEWER, OPERATOR),
    "/api/v1/disk-health/<pk>/abort/": (VIEWER, OPERATOR),
    "/health/runs/new/": (VIEWER, OPERATOR),
    "/health/runs/<pk>/cancel/": (VIEWER, OPERATOR),
    "/health/schedules/new/": (VIEWER, OPERATOR),
    "/health/schedules/<pk>/delete/": (VIEWER, OPERATOR),
    "/api/v1/self-test-runs/": (VIEWER, OPERATOR),
    "/api/v1/self-test-runs/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/self-test-runs/<pk>/cancel/": (VIEWER, OPERATOR),
    "/api/v1/self-test-schedules/": (VIEWER, OPERATOR),
    "/api/v1/self-test-schedules/<pk>/": (VIEWER, OPERATOR),
    # Encryption: making an encrypted dataset, locking and unlocking are an operator's work (like datasets).
    "/encryption/": (VIEWER, OPERATOR),
    "/encryption/new/": (VIEWER, OPERATOR),
    "/encryption/unlock/": (VIEWER, OPERATOR),
    "/encryption/lock/": (VIEWER, OPERATOR),
    "/api/v1/encryption-roots/": (VIEWER, OPERATOR),
    "/api/v1/encryption-roots/create/": (VIEWER, OPERATOR),
    "/api/v1/encryption-roots/unlock/": (VIEWER, OPERATOR),
    "/api/v1/encryption-roots/lock/": (VIEWER, OPERATOR),
    # A change of key can put a root out of Tarn's reach (a key file's root to a passphrase): an admin's.
    "/encryption/change-key/": (VIEWER, ADMIN),
    "/api/v1/encryption-roots/change-key/": (VIEWER, ADMIN),
    # A key export holds every key Tarn can reach: an admin's only, even to see that one exists.
    "/encryption/export/": (ADMIN, ADMIN),
    "/encryption/exports/<pk>/download/": (ADMIN, ADMIN),
    "/api/v1/encryption-roots/export/": (VIEWER, ADMIN),
    "/api/v1/key-exports/": (ADMIN, ADMIN),
    "/api/v1/key-exports/<pk>/": (ADMIN, ADMIN),
    "/api/v1/key-exports/<pk>/download/": (ADMIN, ADMIN),
    # The old keys a change of key left: keys, and removing one may lose a replica's only key.
    "/encryption/retired-keys/<pk>/remove/": (ADMIN, ADMIN),
    "/api/v1/retired-keys/": (ADMIN, ADMIN),
    "/api/v1/retired-keys/<pk>/": (ADMIN, ADMIN),
    "/api/v1/retired-keys/<pk>/remove/": (ADMIN, ADMIN),
    # A configuration backup holds every secret Tarn keeps (and a restore replaces everything): admins only.
    "/backups/": (ADMIN, ADMIN),
    "/backups/now/": (ADMIN, ADMIN),
    "/backups/schedule/": (ADMIN, ADMIN),
    "/backups/upload/": (ADMIN, ADMIN),
    "/backups/<pk>/": (ADMIN, ADMIN),
    "/backups/<pk>/check/": (ADMIN, ADMIN),
    "/backups/<pk>/restore/": (ADMIN, ADMIN),
    "/backups/<pk>/delete/": (ADMIN, ADMIN),
    "/backups/<pk>/download/": (ADMIN, ADMIN),
    "/api/v1/config-backups/": (ADMIN, ADMIN),
    "/api/v1/config-backups/now/": (ADMIN, ADMIN),
    "/api/v1/config-backups/upload/": (ADMIN, ADMIN),
    "/api/v1/config-backups/<pk>/": (ADMIN, ADMIN),
    "/api/v1/config-backups/<pk>/check/": (ADMIN, ADMIN),
    "/api/v1/config-backups/<pk>/restore/": (ADMIN, ADMIN),
    "/api/v1/config-backups/<pk>/delete/": (ADMIN, ADMIN),
    "/api/v1/config-backups/<pk>/download/": (ADMIN, ADMIN),
    "/api/v1/config-backup-schedule/": (ADMIN, ADMIN),
    "/certificates/": (ADMIN, ADMIN),
    "/certificates/import/": (ADMIN, ADMIN),
    "/certificates/trust/": (ADMIN, ADMIN),
    "/api/v1/certificate/": (ADMIN, ADMIN),
    "/api/v1/certificate/import/": (ADMIN, ADMIN),
    "/api/v1/certificate/trust/": (ADMIN, ADMIN),
    "/api/v1/certificate/request/": (ADMIN, ADMIN),
    "/certificates/request/": (ADMIN, ADMIN),
    "/certificates/request.csr": (ADMIN, ADMIN),
    "/certificates/acme/": (ADMIN, ADMIN),
    "/updates/": (ADMIN, ADMIN),
    "/updates/check/": (ADMIN, ADMIN),
    "/updates/apply/": (ADMIN, ADMIN),
    "/updates/reboot/": (ADMIN, ADMIN),
    "/updates/rollout/": (ADMIN, ADMIN),
    "/api/v1/updates/rollout/": (ADMIN, ADMIN),
    "/api/v1/hosts/<pk>/updates/reboot/": (ADMIN, ADMIN),
    "/api/v1/hosts/<pk>/updates/": (ADMIN, ADMIN),
    "/api/v1/hosts/<pk>/updates/check/": (ADMIN, ADMIN),
    "/api/v1/hosts/<pk>/updates/apply/": (ADMIN, ADMIN),
    "/certificates/acme/stop/": (ADMIN, ADMIN),
    "/api/v1/certificate/acme/": (ADMIN, ADMIN),
    "/api/v1/certificate/acme/stop/": (ADMIN, ADMIN),
    # Directory: joining and leaving a domain is an admin's (a domain account's password; how every user signs in);
    # listing its names again and checking the join, an operator's.
    "/directory/": (VIEWER, OPERATOR),
    "/directory/join/": (VIEWER, ADMIN),
    "/directory/leave/": (VIEWER, ADMIN),
    "/directory/refresh/": (VIEWER, OPERATOR),
    "/directory/check/": (VIEWER, OPERATOR),
    "/api/v1/directory-members/": (VIEWER, OPERATOR),
    "/api/v1/directory-members/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/directory-members/join/": (VIEWER, ADMIN),
    "/api/v1/directory-members/<pk>/leave/": (VIEWER, ADMIN),
    "/api/v1/directory-members/<pk>/refresh/": (VIEWER, OPERATOR),
    "/api/v1/directory-members/<pk>/check/": (VIEWER, OPERATOR),
    "/directory/ldap/": (VIEWER, ADMIN),
    "/directory/ldap/remove/": (VIEWER, ADMIN),
    "/api/v1/directory-ldap/": (VIEWER, OPERATOR),
    "/api/v1/directory-ldap/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/directory-ldap/configure/": (VIEWER, ADMIN),
    "/api/v1/directory-ldap/<pk>/remove/": (VIEWER, ADMIN),
    "/api/v1/directory-ldap/<pk>/refresh/": (VIEWER, OPERATOR),
    "/api/v1/directory-ldap/<pk>/check/": (VIEWER, OPERATOR),
    "/api/v1/directory-names/": (VIEWER, OPERATOR),
    "/api/v1/directory-names/<pk>/": (VIEWER, OPERATOR),
    "/permissions/": (VIEWER, OPERATOR),
    "/permissions/tree/": (VIEWER, OPERATOR),
    "/permissions/effective/": (VIEWER, OPERATOR),
    "/permissions/apply/": (VIEWER, ADMIN),
    "/permissions/walks/<pk>/": (VIEWER, OPERATOR),
    "/permissions/walks/<pk>/apply/": (VIEWER, ADMIN),
    "/permissions/walks/<pk>/stop/": (VIEWER, ADMIN),
    "/api/v1/acls/": (VIEWER, ADMIN),
    "/api/v1/acls/folders/": (VIEWER, OPERATOR),
    "/api/v1/acls/effective/": (VIEWER, OPERATOR),
    "/api/v1/acl-walks/": (VIEWER, OPERATOR),
    "/api/v1/acl-walks/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/acl-walks/<pk>/apply/": (VIEWER, ADMIN),
    "/api/v1/acl-walks/<pk>/stop/": (VIEWER, ADMIN),
    "/permissions/quotas/": (VIEWER, OPERATOR),
    "/permissions/quotas.csv": (VIEWER, OPERATOR),
    "/permissions/quotas/set/": (VIEWER, ADMIN),
    "/permissions/quotas/project/": (VIEWER, ADMIN),
    "/permissions/quotas/refresh/": (VIEWER, OPERATOR),
    "/api/v1/quota-uses/": (VIEWER, OPERATOR),
    "/api/v1/quota-uses/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/quota-uses/set/": (VIEWER, ADMIN),
    "/api/v1/quota-uses/project/": (VIEWER, ADMIN),
    "/api/v1/quota-uses/refresh/": (VIEWER, OPERATOR),
    # The capacity forecast: read by everyone; "forecast now" only reads Tarn's inventory, an operator's.
    "/capacity/": (VIEWER, OPERATOR),
    "/capacity/update/": (VIEWER, OPERATOR),
    "/capacity/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/capacity-forecasts/": (VIEWER, OPERATOR),
    "/api/v1/capacity-forecasts/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/capacity-forecasts/<pk>/series/": (VIEWER, OPERATOR),
    "/api/v1/capacity-forecasts/refresh/": (VIEWER, OPERATOR),
    # Files inside snapshots: their names are data, so an operator's to read.
    "/recovery/": (OPERATOR, OPERATOR),
    "/recovery/versions/": (OPERATOR, OPERATOR),
    "/api/v1/snapshot-files/": (OPERATOR, OPERATOR),
    "/api/v1/snapshot-files/versions/": (OPERATOR, OPERATOR),
    "/recovery/restore/": (OPERATOR, OPERATOR),
    "/recovery/download/": (OPERATOR, OPERATOR),
    "/recovery/changes/": (OPERATOR, OPERATOR),
    "/api/v1/snapshot-files/changes/": (OPERATOR, OPERATOR),
    "/api/v1/snapshot-files/download/": (OPERATOR, OPERATOR),
    "/recovery/restores/<pk>/stop/": (OPERATOR, OPERATOR),
    "/api/v1/restores/": (OPERATOR, OPERATOR),
    "/api/v1/restores/<pk>/": (OPERATOR, OPERATOR),
    "/api/v1/restores/<pk>/stop/": (OPERATOR, OPERATOR),
    # iSCSI: read by everyone (the secrets are sealed and never shown); a target, LUN or initiator is an operator's
    # day-to-day work, as a share is.
    "/iscsi/": (VIEWER, OPERATOR),
    "/iscsi/targets/": (VIEWER, OPERATOR),
    "/iscsi/targets/<pk>/delete/": (VIEWER, OPERATOR),
    "/iscsi/luns/": (VIEWER, OPERATOR),
    "/iscsi/luns/<pk>/remove/": (VIEWER, OPERATOR),
    "/iscsi/initiators/": (VIEWER, OPERATOR),
    "/iscsi/initiators/<pk>/remove/": (VIEWER, OPERATOR),
    "/iscsi/sessions/": (VIEWER, OPERATOR),
    "/api/v1/iscsi-targets/": (VIEWER, OPERATOR),
    "/api/v1/iscsi-targets/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/iscsi-targets/sessions/": (VIEWER, OPERATOR),
    "/api/v1/iscsi-luns/": (VIEWER, OPERATOR),
    "/api/v1/iscsi-luns/<pk>/": (VIEWER, OPERATOR),
    "/api/v1/iscsi-initiators/": (VIEWER, OPERATOR),
    "/api/v1/iscsi-initiators/<pk>/": (VIEWER, OPERATOR),
    # The UPS: read by everyone; how it is watched decides when the NAS powers off: an admin's.
    "/ups/": (VIEWER, OPERATOR),
    "/ups/save/": (VIEWER, ADMIN),
    "/ups/remove/": (VIEWER, ADMIN),
    "/api/v1/ups/": (VIEWER, ADMIN),
    "/api/v1/ups/<pk>/": (VIEWER, ADMIN),
    "/api/v1/ups/<pk>/readings/": (VIEWER, ADMIN),
}


def walk(patterns, prefix="", namespace=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            ns = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from walk(entry.url_patterns, prefix + str(entry.pattern), ns)
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), (f"{namespace}{entry.name}" if entry.name else None), entry


def template(raw: str) -> str:
    """`api/v1/^hosts/(?P<pk>[^/.]+)/$` and `hosts/<int:pk>/` as the README writes them: /api/v1/hosts/<pk>/."""
    raw = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", raw)
    raw = re.sub(r"<\w+:(\w+)>", r"<\1>", raw)
    return "/" + raw.replace("^", "").replace("$", "")


def routes():
    """Every route the resolver knows: (template, name, pattern); DRF's format-suffix twins are the same view."""
    found = {}
    for raw, name, pattern in walk(get_resolver().url_patterns):
        if "<format>" in template(raw):
            continue
        found.setdefault(template(raw), (name, pattern))
    return sorted((t, name, pattern) for t, (name, pattern) in found.items())


@pytest.fixture
def objects(local_host, admin_user):
    op = Operation.objects.create(kind="test", target="t", host=local_host, status="succeeded")
    token = ApiToken.objects.create(user=admin_user, name="x", key_hash="0" * 64, hint="tarn_x")
    entry = AuditEntry.objects.create(kind="request", method="POST", path="/x")
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=timezone.now())
    disk = Disk.objects.create(host=local_host, name="vdb", path="/dev/vdb", media="hdd", observed_at=timezone.now())
    dataset = Dataset.objects.create(
        host=local_host, pool=pool, name="tank/a", type="filesystem", observed_at=timezone.now()
    )
    snapshot = Snapshot.objects.create(dataset=dataset, name="s1", created_at=timezone.now())
    task = SnapshotTask.objects.create(host=local_host, dataset="tank/a", keep_count=3)
    smb = SmbShare.objects.create(host=local_host, name="docs", dataset="tank/a", path="/tank/a")
    nfs = NfsExport.objects.create(host=local_host, dataset="tank/a", path="/tank/a", clients="10.0.0.0/24")
    samba_user = SambaUser.objects.create(host=local_host, username="alice")
    change = ChangeSet.objects.create(host=local_host, kind="tunable", title="vm.swappiness = 10", status="applied")
    setting = Setting.objects.create(
        change_set=change, host=local_host, kind="sysctl", key="vm.swappiness", original="60", value="10", active=True
    )
    link = Link.objects.create(
        host=local_host, name="eth0", kind="ether", mtu=1500, state="UP", observed_at=timezone.now()
    )
    run = Run.objects.create(host=local_host, profile="seq-write-1", title="Sequential write 1M", target="tank/a")
    suite = Suite.objects.create(host=local_host, title="suite", target="tank/a")
    schedule = Schedule.objects.create(host=local_host, name="nightly", profiles=["seq-write-1"], target="tank/a")
    profile = CustomProfile.objects.create(title="Mine", based_on="seq-write-1", created_by=admin_user)
    channel = Channel.objects.create(name="ops", kind="webhook", url="https://example.org/hook")
    alert = Alert.objects.create(host=local_host, rule="pool_state", subject="tank", level="critical", message="x")
    pair = Pair.objects.create(source=local_host, target=local_host, address="127.0.0.1", root="tank", status="paired")
    replication = ReplicationTask.objects.create(pair=pair, source_dataset="tank/a", target_name="a-copy")
    health = DiskHealth.objects.create(host=local_host, device="/dev/sda", name="sda", state="ok")
    test_run = SelfTestRun.objects.create(host=local_host, kind="short", groups=[["/dev/sda"]])
    test_schedule = SelfTestSchedule.objects.create(host=local_host, kind="long", every="month")
    key_export = KeyExport.objects.create(host=local_host, user=admin_user, roots=["tank/a"], data=b"age")
    retired = RetiredKey.objects.create(host=local_host, dataset="tank/a", keyformat="hex", sealed="x")
    backup = Backup.objects.create(name="tarn-20261128-010000-abcdef.tarnbackup", origin="manual")
    passkey = Passkey.objects.create(user=admin_user, name="k", credential_id="AAAA", public_key=b"x")
    member = DomainMember.objects.create(
        host=local_host, realm="LAB.TEST", workgroup="LAB", netbios_name="NAS", backend="rid", joined_at=timezone.now()
    )
    name = DirectoryName.objects.create(host=local_host, kind="user", name="alice")
    ldap = LdapDirectory.objects.create(
        host=local_host, uri="ldap://ldap.lab", base_dn="dc=lab", ca_pem="x", configured_at=timezone.now()
    )
    walk = AclWalk.objects.create(host=local_host, dataset="tank/a", spec={}, status="applied")
    use = QuotaUse.objects.create(host=local_host, dataset="tank/a", kind="user", name="alice", read_at=timezone.now())
    forecast = Forecast.objects.create(host=local_host, pool="tank", state="learning", computed_at=timezone.now(),
                                       used=1, total=2)  # fmt: skip
    target = IscsiTarget.objects.create(host=local_host, iqn="iqn.2026-11.lan.office:nas1")
    lun = Lun.objects.create(host=local_host, target=target, number=0, zvol="tank/vol", serial="s")
    initiator = Initiator.objects.create(target=target, iqn="iqn.1991-05.com.microsoft:client1")
    ups = Ups.objects.create(host=local_host, name="rack", password="sealed")
    restore = Restore.objects.create(host=local_host, dataset="tank/a", snapshot="s", path="61", shown="a", how="beside",
                                     status="running")  # fmt: skip
    return {
        "iscsi-target": target.pk,
        "api:ups": ups.pk,
        "iscsi-lun": lun.pk,
        "iscsi-initiator": initiator.pk,
        "capacity": forecast.pk,
        "quota-use": use.pk,
        "acl-walk": walk.pk,
        "permissions-walk": walk.pk,
        "directory-member": member.pk,
        "directory-ldap": ldap.pk,
        "directory-name": name.pk,
        "two-factor-passkey": passkey.pk,
        "two-factor-reset": admin_user.pk,
        "backup": backup.pk,
        "encryption-export": key_export.pk,
        "key-export": key_export.pk,
        "retired": retired.pk,
        "self-test-run": test_run.pk,  # before "run"
        "health-run": test_run.pk,
        "self-test-schedule": test_schedule.pk,  # before "schedule"
        "health-schedule": test_schedule.pk,
        "disk-health": health.pk,  # before "disk" and "health"
        "health": health.pk,
        "replication-pair": pair.pk,
        "replication-unpair": pair.pk,
        "replication-task": replication.pk,
        "alert-rule": "capacity_warning",  # before "alert"
        "alert-channel": channel.pk,
        "channel": channel.pk,
        "alert": alert.pk,
        "benchmark-suite": suite.pk,  # before "benchmark"
        "benchmark-schedule": schedule.pk,
        "benchmark-profile": profile.pk,
        "benchmark": run.pk,
        "tuning-change": change.pk,
        "tuning-setting": setting.pk,
        "change-set": change.pk,
        "tunable": setting.pk,
        "api:link": link.pk,
        "share-settings": local_host.name,
        "share-status": local_host.name,
        "samba-user": samba_user.pk,
        "smb-share": smb.pk,
        "nfs-export": nfs.pk,
        "host": local_host.pk,
        "operation": op.pk,
        "token": token.pk,
        "audit": entry.pk,
        "pool": pool.pk,
        "disk": disk.pk,
        "dataset": dataset.pk,
        "media-speed": "hdd",
        "snapshot-task": task.pk,  # before "snapshot": the first key found in a URL name wins
        "snapshot": snapshot.pk,
        "restore": restore.pk,  # last: backup-restore's pk is the backup's
    }


def url_for(path, name, pattern, objects):
    if name is None:  # an unnamed redirect from an old address
        return re.sub(r"<\w+>", "x/", path)
    params = list(getattr(pattern.pattern, "converters", {})) or list(pattern.pattern.regex.groupindex)
    kwargs = {}
    for param in params:
        key = next(k for k in objects if k in name)
        kwargs[param] = objects[key]
    return reverse(name, kwargs=kwargs)


def served(pattern) -> set[str]:
    """The changing methods a route answers at all (any other gets 405, which changes nothing either). An HTML
    page's forms POST; the API's viewsets say which methods they bind."""
    view = pattern.callback
    if getattr(view, "actions", None):
        return {m.upper() for m in view.actions} & set(MUTATING)
    if hasattr(view, "cls"):
        return {m.upper() for m in MUTATING if hasattr(view.cls, m.lower())}
    return {"POST"}


def cases(objects):
    return [(path, name, pattern, url_for(path, name, pattern, objects)) for path, name, pattern in routes()]


@pytest.fixture
def role_clients(admin_client, operator_client, viewer_client):
    return {ADMIN: admin_client, OPERATOR: operator_client, VIEWER: viewer_client}


@pytest.fixture
def no_delivery(monkeypatch):
    """An admin's POST to a channel's test action would send a real request: answer as a receiver would."""
    monkeypatch.setattr("analytics.services.channel_test", lambda *, channel: (True, "HTTP 204 (stubbed)"))


def below(role):
    return RANK[: RANK.index(role)]


def test_the_table_has_a_row_for_every_route_and_no_other():
    known = {path for path, _, _ in routes()}
    assert sorted(known - set(ROLES)) == [], "routes without a row in ROLES: add them with the README's roles"
    assert sorted(set(ROLES) - known) == [], "rows in ROLES for routes that no longer exist"


def test_the_walk_covers_pages_and_api(objects):
    paths = {path for path, _, _, _ in cases(objects)}
    assert {"/", "/hosts/<pk>/", "/audit/", "/api/v1/hosts/", "/api/v1/audit/<pk>/", "/api/v1/schema/"} <= paths


def test_anonymous_gets_the_login_page_or_401_everywhere(client, objects):
    for path, _, _, url in cases(objects):
        if ROLES[path] is PUBLIC:
            continue
        for method in ["GET", *MUTATING]:
            response = client.generic(method, url)
            if path.startswith(("/api/", "/metrics")):  # token-authenticated: 401, not a login page
                assert response.status_code == 401, (method, url, response.status_code)
            elif method == "GET" or response.status_code != 403:  # CSRF may refuse anonymous writes first
                assert response.status_code == 302 and response["Location"].startswith("/login/"), (method, url)


def test_a_user_below_the_minimum_role_is_refused(role_clients, objects):
    wrong = []
    for path, _, pattern, url in cases(objects):
        if ROLES[path] is PUBLIC:
            continue
        read, write = ROLES[path]
        answers = served(pattern)
        for role in below(read):
            if (status := role_clients[role].get(url).status_code) != 403:
                wrong.append((role, "GET", url, status))
        for role in below(write):
            for method in MUTATING:
                status = role_clients[role].generic(method, url).status_code
                if status != 403 and not (method not in answers and status == 405):
                    wrong.append((role, method, url, status))
    assert wrong == []


def test_the_minimum_role_is_not_refused_and_nothing_answers_500(role_clients, objects, no_delivery):
    wrong = []
    for path, _, pattern, url in sorted(cases(objects), key=lambda case: case[0] == "/logout/"):  # logout last
        if ROLES[path] is PUBLIC:
            continue
        read, write = ROLES[path]
        status = role_clients[read].get(url).status_code
        if status in (401, 403) or status >= 500:
            wrong.append((read, "GET", url, status))
        for method in sorted(served(pattern)):  # an empty request: refused for what it lacks, not for who sent it
            status = role_clients[write].generic(method, url).status_code
            if status in (401, 403) or status >= 500:
                wrong.append((write, method, url, status))
    assert wrong == []


def test_an_id_that_is_not_a_number_is_a_404_not_a_500(admin_client, objects):
    wrong = []
    for path, name, pattern in routes():
        if not path.startswith("/api/") or "<pk>" not in path or name is None:
            continue
        for pk in ["abc", "custom-1", "seq-write-1", "²"]:
            try:
                url = reverse(name, kwargs={"pk": pk})
            except NoReverseMatch:  # a route that takes only names of its own shape (alert-rules/<key>/)
                continue
            for method in ["GET", *sorted(served(pattern))]:
                status = admin_client.generic(method, url).status_code
                if status >= 500:
                    wrong.append((method, url, status))
    assert wrong == []


def test_every_apps_routes_reach_the_resolver():
    """The table's completeness is checked against the resolver: an app whose urls.py (or api/urls.py) the root URL
    map forgot to include would slip by unseen, so each installed Tarn app's URL modules must be in it."""
    included = {p.urlconf_name.__name__ for p in walk_resolvers(get_resolver()) if hasattr(p.urlconf_name, "__name__")}
    expected = {
        f"{app}.{module}"
        for app in product_apps()
        for module in ("urls", "api.urls")
        if (ROOT / app / (module.replace(".", "/") + ".py")).exists()
    }
    assert sorted(expected - included) == []


def walk_resolvers(resolver):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield entry
            yield from walk_resolvers(entry)
