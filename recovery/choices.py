"""The recovery app's numbers: how much a page shows and how far a versions pass looks."""

PAGE = 200  # entries a page of a folder
VERSIONS_PASS = 100  # snapshots a versions pass looks into by default
VERSIONS_MOST = 1000  # …and at most, when the admin raises it
MAX_DEPTH = 256  # folders deep a path may go
MAX_NAME = 255  # bytes in one name (ZFS's limit)
