"""The encryption app: encrypted datasets and zvols made with a passphrase or a key, keys kept on the NAS and
(if the admin chooses) escrowed sealed in Tarn, lock and unlock of one encryption root or many."""

from django.apps import AppConfig


class EncryptionConfig(AppConfig):
    name = "encryption"
