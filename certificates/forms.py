from django import forms

from certificates.choices import LETS_ENCRYPT, PEM_MAX


def _pem(label: str, help_text: str, **attrs) -> forms.CharField:
    return forms.CharField(
        label=label,
        required=False,
        strip=False,
        max_length=PEM_MAX,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false", "class": "mono", **attrs}),
        help_text=help_text,
    )


class ImportForm(forms.Form):
    """A certificate (with its chain) and its key, pasted or as files, and the name browsers use to reach Tarn."""

    kept_filled = True  # drawn for every request of its page: kept while its values are the same

    name = forms.CharField(
        max_length=253,
        help_text="The host name (or address) people type to reach Tarn: the certificate must name it.",
    )
    certificate = _pem("Certificate and chain (PEM)", "The server's certificate first, then each one that signed it.")
    certificate_file = forms.FileField(required=False, label="…or a file", allow_empty_file=False)
    private_key = _pem(
        "Private key (PEM)",
        "Unencrypted. Sent to the worker, which alone writes it (0600, root). Leave it empty for the certificate your CA "
        "sent back for the request made here.",
        autocomplete="off",
    )
    private_key_file = forms.FileField(required=False, label="…or a file", allow_empty_file=False)

    def _read(self, text_field: str, file_field: str, what: str, *, required: bool = True) -> bytes:
        upload, text = self.cleaned_data.get(file_field), self.cleaned_data.get(text_field) or ""
        if upload is not None:
            if upload.size > PEM_MAX:
                self.add_error(file_field, f"{upload.size >> 10} KiB: {what} in PEM is at most {PEM_MAX >> 10} KiB.")
                return b""
            data = upload.read(PEM_MAX + 1)
        else:
            data = text.encode("utf-8", "replace")
        if not data.strip():
            if required:
                self.add_error(text_field, f"Paste {what} or choose its file.")
            return b""
        if not data.isascii():
            self.add_error(file_field if upload is not None else text_field, "PEM is ASCII text: this is not PEM.")
            return b""
        return data

    def clean(self):
        cleaned = super().clean()
        cleaned["certificate_pem"] = self._read("certificate", "certificate_file", "the certificate")
        # No key: the certificate answers the request made here (the service says what is missing otherwise).
        cleaned["private_key_pem"] = self._read("private_key", "private_key_file", "the key", required=False)
        return cleaned

    def without_key(self) -> "ImportForm":
        """The form to show again: what was typed, but never the key (a page is kept by the browser, its cache and
        the front's buffers); asked for again."""
        data = self.data.copy()
        had_key = bool(data.get("private_key", "").strip()) or bool(self.files.get("private_key_file"))
        data["private_key"] = ""
        again = ImportForm(data)
        again._errors = self.errors
        if had_key and "private_key" not in self.errors:
            again._errors["private_key"] = again.error_class(["Give the key again: Tarn never sends it back."])
        return again

    def values(self) -> dict:
        """What the service takes."""
        d = self.cleaned_data
        return {"certificate": d["certificate_pem"], "private_key": d["private_key_pem"], "name": d["name"].strip()}


class RequestForm(forms.Form):
    kept_filled = True  # drawn for every request of its page: kept while its values are the same
    names = forms.CharField(
        max_length=2000,
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="Host names and addresses the certificate must name, separated by spaces or commas (the first is "
        "its CN).",
    )


class TrustForm(forms.Form):
    trusted = forms.BooleanField(required=False)


class AcmeForm(forms.Form):
    """A certificate from an ACME CA: where, for which names, and the terms agreed."""

    kept_filled = True  # drawn for every request of its page: kept while its values are the same

    directory = forms.URLField(
        label="ACME directory",
        max_length=500,
        assume_scheme="https",
        initial=LETS_ENCRYPT,
        help_text="Let's Encrypt's by default; your office's CA (step-ca, …) gives its own.",
    )
    names = forms.CharField(
        max_length=2000,
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="DNS names that reach this machine on port 80 (the CA fetches its challenge there), separated by "
        "spaces or commas; the first is the certificate's CN.",
    )
    email = forms.EmailField(
        required=False, help_text="Optional: the CA writes here about the account (expiry notices, changes)."
    )
    roots = _pem(
        "Private CA's certificates (PEM)",
        "Only for your own CA: its root (and the CA its directory's HTTPS uses). Leave empty for a public CA.",
    )
    agree = forms.BooleanField(required=False, label="I agree to the CA's terms of service")

    def values(self) -> dict:
        d = self.cleaned_data
        return {k: d[k] for k in ("directory", "names", "email", "roots", "agree")}
