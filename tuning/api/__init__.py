"""Network and tuning: links (MTU, bridges, bonds, VLANs), kernel and ZFS parameters, planned, applied and reverted as change sets."""
