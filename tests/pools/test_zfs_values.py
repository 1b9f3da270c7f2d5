from pools.templatetags.zfs_values import zfs_value


def test_sizes_read_like_zfs_get_and_zero_limits_read_none():
    assert zfs_value("131072", "recordsize") == "128K"
    assert zfs_value("1073741824", "quota") == "1G"
    assert zfs_value("0", "quota") == "none"
    assert zfs_value("1000", "quota") == "1000"
    assert zfs_value("lz4", "compression") == "lz4"
    assert zfs_value("-", "volsize") == "-"
