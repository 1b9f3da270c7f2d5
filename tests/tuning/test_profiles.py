"""Base tuning profiles: never lower what the kernel has, say why each setting is skipped."""

from tuning.profiles import PROFILES, RAISE, Entry, plan_entry, raised


def entry(value, condition=RAISE):
    return Entry("sysctl", "net.ipv4.tcp_rmem", value, "why", "source", condition)


def test_a_value_is_raised_part_by_part_and_never_lowered():
    e = entry("4096 87380 67108864")
    assert plan_entry(e, "4096 131072 6291456") == ("set", "Raised to 4096 131072 67108864: no part is lowered.")
    assert raised(e, "4096 131072 6291456") == "4096 131072 67108864"
    assert plan_entry(e, "4096 131072 1073741824")[0] == "skip"  # a kernel that ships more keeps it
    assert plan_entry(e, "4096 87380 67108864") == ("same", "Already set.")
    assert plan_entry(e, None) == ("skip", "Not on this host (no such setting).")


def test_always_entries_may_lower_and_words_are_compared_as_words():
    assert plan_entry(Entry("sysctl", "vm.swappiness", "10", "", ""), "60") == ("set", "")
    assert plan_entry(Entry("sysctl", "net.ipv4.tcp_congestion_control", "bbr", "", ""), "cubic") == ("set", "")


def test_every_profile_entry_has_a_reason_and_a_source_and_lan_keeps_cubic():
    for profile in PROFILES.values():
        assert profile.entries and all(e.why and e.source for e in profile.entries), profile.key
        assert len({(e.kind, e.key) for e in profile.entries}) == len(profile.entries), profile.key
    lan = {e.key: e.value for e in PROFILES["lan10g"].entries}
    assert "net.ipv4.tcp_congestion_control" not in lan  # BBR lost badly on a LAN path here
    assert {e.key: e.value for e in PROFILES["wan"].entries}["net.ipv4.tcp_congestion_control"] == "bbr"
    assert {e.key: e.value for e in PROFILES["100g"].entries}["net.core.rmem_max"] == "2147483647"
