"""Directory: each host's Active Directory membership (join, leave, the join's health) and the domain's users and groups as Tarn last listed them."""
