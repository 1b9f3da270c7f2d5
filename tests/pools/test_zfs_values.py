from pools.templatetags.zfs_values import zfs_note, zfs_value


def test_sizes_read_like_zfs_get_and_zero_limits_read_none():
    assert zfs_value("131072", "recordsize") == "128K"
    assert zfs_value("1073741824", "quota") == "1G"
    assert zfs_value("0", "quota") == "none"
    assert zfs_value("1000", "quota") == "1000"
    assert zfs_value("lz4", "compression") == "lz4"
    assert zfs_value("-", "volsize") == "-"


def test_xattr_on_is_said_to_be_sa_as_zfs_get_prints_it():
    """A pool made with xattr=sa reads back `on` from zfs get on OpenZFS 2.3 (seen in the lab): the page says what
    that means instead of leaving the admin to think their choice was not applied."""
    assert zfs_note("on", "xattr").startswith("= sa: extended attributes kept in the inode")
    assert zfs_note("dir", "xattr").startswith("extended attributes in hidden directories")
    assert zfs_note("on", "atime") == ""


def test_the_dataset_page_says_what_xattr_on_means(operator_client, tank):
    data = tank[2]
    data.properties = {"xattr": {"value": "on", "source": "inherited", "from": "tank"}}
    data.save()
    page = " ".join(operator_client.get(f"/pools/datasets/{data.pk}/").content.decode().split())
    assert '<code>on</code> <small class="muted">= sa: extended attributes kept in the inode' in page
    assert '<option value="dir">dir (hidden directories, slower)</option>' in page  # on is sa: not offered twice
