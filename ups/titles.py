"""What the UPS operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

operation_titles({"ups.apply": Title("Apply {what}", back="ups-page", back_label="Back to UPS")})
