"""The certificates app's limits."""

PEM_MAX = 256 << 10  # bytes of a pasted or uploaded certificate chain or key: a chain of a few certificates is ~10 KiB
CHAIN_MAX = 8  # certificates in one chain
SYSTEM_CAS = "/etc/ssl/certs/ca-certificates.crt"  # Debian's trusted CAs (ca-certificates): where a chain may end
