"""Network and tuning: links (MTU, bridges), kernel and ZFS parameters, planned, applied and reverted as change sets."""
