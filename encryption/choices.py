from django.db import models


class KeyFormat(models.TextChoices):
    PASSPHRASE = "passphrase", "Passphrase (typed at every unlock; never stored by Tarn)"
    HEX = "hex", "Hex key (64 hex digits, kept in a key file on the NAS)"
    RAW = "raw", "Raw key (32 bytes, kept in a key file on the NAS)"


class Cipher(models.TextChoices):
    AES_256_GCM = "aes-256-gcm", "AES-256-GCM (the default: fastest with AES-NI)"
    AES_128_GCM = "aes-128-gcm", "AES-128-GCM"
    AES_256_CCM = "aes-256-ccm", "AES-256-CCM"


PASSPHRASE_MIN, PASSPHRASE_MAX = 8, 512  # bytes, as OpenZFS takes them
