"""The iscsi app's numbers."""

DEFAULT_PORT = 3260
ALL_ADDRESSES = "0.0.0.0"
IQN_DATE = "2026-11"  # the year-month of a name Tarn makes: iqn.<it>.<reversed host name>:<zvol>
