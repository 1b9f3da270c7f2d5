"""What the certificate operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

PAGE = {"back": "certificate-page", "back_label": "Back to Certificates"}

operation_titles(
    {
        "certificates.import": Title("Serve the certificate for {name}", **PAGE),
        "certificates.trust": Title("Say whether browsers trust the certificate", **PAGE),
        "certificates.request": Title("Make a certificate request (its key kept here)", **PAGE),
        "certificates.acme": Title("Get a certificate from the ACME CA", **PAGE),
    }
)
