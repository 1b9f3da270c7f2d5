"""UPS: a UPS watched through NUT on each NAS (plugged in, or served by another NAS), its state and readings, the shutdown policy."""
