"""The iscsi app's numbers."""

ALL_PORTALS = "0.0.0.0:3260"  # a new target's portal: every IPv4 address of the NAS, iSCSI's port
IQN_DATE = "2026-11"  # the year-month of a name Tarn makes: iqn.<it>.<reversed host name>:<zvol>
