"""Analytics: samples of pools, disks and links, alerts and the channels that deliver them, metrics for Prometheus."""
