"""The certificate Tarn's HTTPS front serves: read it, import one in its place (checked first), HSTS on or off."""
