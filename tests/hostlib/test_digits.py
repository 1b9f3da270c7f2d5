"""hostlib reads ASCII digits only (issue 23 item 9): "²".isdigit() is True but int("²") raises, int("٣") is 3, and
a \\d pattern (or [K] under re.I, which also matches the Kelvin sign) lets another script's characters reach an argv
or a crash. Every check that guards an argv refuses them with a ValueError."""

import pytest

from hostlib import digits, fio, kernel, names, zpool

OTHER_DIGITS = ["²", "٣", "１", "۵", "१", "𝟗"]


@pytest.mark.parametrize("value", OTHER_DIGITS + ["", "-1", "+1", " 1", "1 ", "1.0", None, 1])
def test_only_a_string_of_ascii_digits_is_digits(value):
    assert not digits.is_digits(value) and digits.whole_number(value) is None


def test_ascii_digits_are_read():
    assert digits.is_digits("0123456789") and digits.whole_number("0042") == 42


@pytest.mark.parametrize("size", ["６４M", "64\u212a", "²K", "1٣G"])  # \u212a: the Kelvin sign, K under re.I
def test_sizes_in_other_scripts_are_a_value_error_not_a_crash(size):
    with pytest.raises(ValueError):
        names.parse_size(size)


@pytest.mark.parametrize("ashift", ["١٢", "１２", "¹²"])
def test_an_ashift_in_other_digits_is_refused(ashift):
    with pytest.raises(names.PropertyErrors):
        names.properties({"ashift": ashift}, names.POOL_PROPERTIES)


@pytest.mark.parametrize("guid", ["٣", "１２３", "²"])
def test_a_pool_to_import_named_in_other_digits_is_refused(guid):
    with pytest.raises(zpool.InvalidLayout):
        zpool.import_argv(guid)


@pytest.mark.parametrize("value", ["２１２９９２", "٢١٢٩٩٢", "4096 ８７３８０ 6291456", "1\x1c2", "1\u20032", "1\x85"])
def test_a_kernel_value_in_other_digits_or_separators_is_refused(value):
    with pytest.raises(ValueError):
        kernel.check_value(value)


@pytest.mark.parametrize("field, value", [("bs", "４k"), ("bs", "٤k"), ("size", "６４m"), ("size", "1٣g")])
def test_fio_sizes_in_other_digits_are_problems(field, value):
    job = fio.FioJob(name="x", rw="read", bs="4k", size="1g")
    assert field in fio.problems(fio.FioJob(**{**job.__dict__, field: value}))
