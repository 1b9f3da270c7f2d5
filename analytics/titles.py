"""What the analytics operations are called on their pages, and the page each came from."""

from appliance.titles import Title, operation_titles

operation_titles(
    {"analytics.health": Title("Read pool health after a change", "analytics", back_label="Back to Analytics")}
)
