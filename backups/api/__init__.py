"""Configuration backups: Tarn's own settings sealed with a passphrase, made, checked, restored and scheduled."""
