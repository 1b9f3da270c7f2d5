"""The certificates app's limits."""

PEM_MAX = 256 << 10  # bytes of a pasted or uploaded certificate chain or key: a chain of a few certificates is ~10 KiB
CHAIN_MAX = 8  # certificates in one chain
SYSTEM_CAS = "/etc/ssl/certs/ca-certificates.crt"  # Debian's trusted CAs (ca-certificates): where a chain may end

# ACME
LETS_ENCRYPT = "https://acme-v02.api.letsencrypt.org/directory"
ACME_ANSWER_MAX = 1 << 20  # bytes of any answer from an ACME server (a chain is a few KiB)
ACME_TIMEOUT = 20  # seconds for one request to it
ACME_RENEW_AT = 2 / 3  # of a certificate's lifetime, renewal starts (Let's Encrypt's 90 days: day 60)
ACME_RETRY_HOURS = 6  # after a failed renewal, the next try
ACME_MIN_DAYS = 1  # a certificate from a CA that lasts less than this is not served
ACME_FAILURES_ALERT = 3  # failed tries in a row that raise an alert
