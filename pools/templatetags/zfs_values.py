"""Show ZFS property values as an admin reads them: 128K rather than 131072, none rather than 0."""

from django import template

from hostlib.digits import is_digits

register = template.Library()
SIZE_PROPERTIES = {"recordsize", "volblocksize", "volsize", "quota", "refquota", "reservation", "refreservation"}
NONE_WHEN_ZERO = {"quota", "refquota", "reservation", "refreservation"}
# What a value means where zfs get's word misleads. OpenZFS 2.3 prints xattr=sa as "on" (the lab: a pool made with
# -O xattr=sa reads back "on"): on and sa are one setting now; dir is the old hidden-directory one.
NOTES = {
    ("xattr", "on"): "= sa: extended attributes kept in the inode (zfs get prints sa as on)",
    ("xattr", "sa"): "extended attributes kept in the inode",
    ("xattr", "dir"): "extended attributes in hidden directories (slower for SMB and ACLs)",
}


@register.filter
def zfs_value(value: str, key: str) -> str:
    if key not in SIZE_PROPERTIES or not is_digits(str(value)):
        return value
    number = int(value)
    if number == 0 and key in NONE_WHEN_ZERO:
        return "none"
    for unit, size in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if number >= size and number % size == 0:
            return f"{number // size}{unit}"
    return str(number)


@register.filter
def gb(size) -> str:
    """Bytes as decimal gigabytes (what disk labels and the disk choices say): 4294967296 → 4.3 GB."""
    return f"{int(size) / 10**9:.1f} GB"


@register.filter
def zfs_note(value: str, key: str) -> str:
    """What the value means, where zfs get's own word misleads ('' elsewhere)."""
    return NOTES.get((key, str(value)), "")
