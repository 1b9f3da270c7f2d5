"""Planning by guid: what goes, in how many sends, and when a run must stop and ask an admin."""

from hostlib.replication import BOOKMARK, SNAPSHOT, Dataset, Version
from replication import planning
from replication.planning import Step, plan_dataset

GUID = iter(range(1000, 100000))


def side(name, *snaps, token="") -> Dataset:
    """A dataset with snapshots (or '#bookmarks') oldest first; a (name, guid) pair reuses another side's guid."""
    ds = Dataset(name, "filesystem", next(GUID), token)
    for txg, snap in enumerate(snaps, start=10):
        short, guid = snap if isinstance(snap, tuple) else (snap, next(GUID))
        kind = BOOKMARK if short.startswith("#") else SNAPSHOT
        ds.versions.append(Version(name, short.lstrip("#"), kind, guid, txg))
    return ds


def guid(ds: Dataset, short: str) -> int:
    return next(v.guid for v in ds.versions if v.name == short)


def test_the_first_run_sends_the_oldest_in_full_then_the_rest_in_one_incremental():
    src = side("tank/docs", "auto-1", "auto-2", "auto-3")
    plan = plan_dataset(src, None, "backup/docs")
    assert plan.outcome == planning.SEND
    assert plan.steps == [
        Step("tank/docs@auto-1", first=True),
        Step("tank/docs@auto-3", base="tank/docs@auto-1", intermediates=True),
    ]


def test_the_base_is_found_by_guid_not_by_name():
    src = side("tank/docs", "a", "b", "c")
    # The target has an @b of its own (same name, another guid) and the source's @a.
    dst = side("backup/docs", ("a", guid(src, "a")))
    plan = plan_dataset(src, dst, "backup/docs")
    assert plan.base.name == "a" and plan.steps == [Step("tank/docs@c", base="tank/docs@a", intermediates=True)]
    renamed = side("backup/docs", ("renamed-a", guid(src, "a")), ("b", 1))
    assert plan_dataset(src, renamed, "backup/docs").outcome == planning.DIVERGED


def test_nothing_new_is_up_to_date():
    src = side("tank/docs", "a", "b")
    dst = side("backup/docs", ("a", guid(src, "a")), ("b", guid(src, "b")))
    plan = plan_dataset(src, dst, "backup/docs")
    assert (plan.outcome, plan.steps, plan.base.name) == (planning.UP_TO_DATE, [], "b")


def test_a_snapshot_that_does_not_match_is_stepped_over_not_sent():
    src = side("tank/docs", "auto-1", "manual", "auto-2", "auto-3", "tmp", "auto-4")
    dst = side("backup/docs", ("auto-1", guid(src, "auto-1")))
    plan = plan_dataset(src, dst, "backup/docs", pattern="auto-*")
    assert plan.steps == [
        Step("tank/docs@auto-2", base="tank/docs@auto-1"),  # -i over @manual
        Step("tank/docs@auto-3", base="tank/docs@auto-2", intermediates=True),
        Step("tank/docs@auto-4", base="tank/docs@auto-3"),  # -i over @tmp
    ]
    assert not any("manual" in s.snapshot or "tmp" in s.snapshot for s in plan.steps)


def test_a_bookmark_is_a_base_when_its_snapshot_is_gone_from_the_source():
    src = side("tank/docs", "#a", "b", "c")
    dst = side("backup/docs", ("a", guid(src, "a")))
    plan = plan_dataset(src, dst, "backup/docs")
    assert plan.base.kind == BOOKMARK
    assert plan.steps == [
        Step("tank/docs@b", base="tank/docs#a"),  # never -I from a bookmark
        Step("tank/docs@c", base="tank/docs@b", intermediates=True),
    ]


def test_a_target_that_changed_after_the_common_snapshot_stops_the_run_and_names_it():
    src = side("tank/docs", "a", "b")
    dst = side("backup/docs", ("a", guid(src, "a")), "local")
    plan = plan_dataset(src, dst, "backup/docs")
    assert plan.outcome == planning.DIVERGED and plan.steps == []
    assert "@a" in plan.says and "@local" in plan.says


def test_no_common_snapshot_and_a_foreign_dataset_both_stop():
    src = side("tank/docs", "a")
    assert plan_dataset(src, side("backup/docs", "x"), "backup/docs").outcome == planning.NO_COMMON
    empty = plan_dataset(src, side("backup/docs"), "backup/docs")
    assert empty.outcome == planning.NOT_OURS and "not a replica" in empty.says


def test_a_cut_transfer_is_resumed_before_anything_else():
    src = side("tank/docs", "a", "b")
    dst = side("backup/docs", ("a", guid(src, "a")), token="1-abc-de-f00")
    plan = plan_dataset(src, dst, "backup/docs")
    assert plan.outcome == planning.RESUME and plan.steps == [Step("", token="1-abc-de-f00")]


def test_a_pattern_that_matches_nothing_sends_nothing_and_says_so():
    plan = plan_dataset(side("tank/docs", "a"), None, "backup/docs", pattern="auto-*")
    assert plan.outcome == planning.NOTHING_TO_SEND and "matches" in plan.says


def test_a_child_is_not_sent_before_its_parent_exists_on_the_target():
    parent = side("tank/docs", "manual")  # nothing the pattern takes
    child = side("tank/docs/a", "auto-1")
    plans = [
        plan_dataset(parent, None, "backup/docs", pattern="auto-*"),
        plan_dataset(child, None, "backup/docs/a", pattern="auto-*"),
    ]
    planning.parents_first(plans, existing=set())
    assert plans[0].outcome == planning.NOTHING_TO_SEND
    assert plans[1].outcome == planning.NO_PARENT and plans[1].steps == [] and "before backup/docs" in plans[1].says
    # Sent in the same run, or already there: the child goes.
    sent = [
        plan_dataset(side("tank/docs", "auto-0"), None, "backup/docs", pattern="auto-*"),
        plan_dataset(child, None, "backup/docs/a"),
    ]
    assert [p.outcome for p in planning.parents_first(sent, existing=set())] == [planning.SEND, planning.SEND]
    again = [plan_dataset(parent, None, "backup/docs", pattern="auto-*"), plan_dataset(child, None, "backup/docs/a")]
    assert planning.parents_first(again, existing={"backup/docs"})[1].outcome == planning.SEND


def test_retention_keeps_the_newest_matching_and_never_the_held_one_nor_another_names():
    target = side("backup/docs", "auto-1", "manual", "auto-2", "auto-3", "auto-4")
    assert planning.retention_victims(target, "auto-*", 2, never=set()) == ["auto-1", "auto-2"]
    assert planning.retention_victims(target, "auto-*", 2, never={"auto-2"}) == ["auto-1"]
    assert planning.retention_victims(target, "", 10, never=set()) == []
    assert planning.retention_victims(target, "", 1, never={"auto-4"}) == ["auto-1", "manual", "auto-2", "auto-3"]


def test_retention_never_prunes_a_snapshot_younger_than_its_hours_nor_more_than_its_limit():
    """Count alone lets a source taken over push every good snapshot out with a burst of new ones: keep_hours keeps
    whatever is younger (by its creation, which came with the stream), and a run prunes at most its limit."""
    target = side("backup/docs", *[f"auto-{i}" for i in range(1, 11)])
    target.versions = [Version(v.dataset, v.name, v.kind, v.guid, v.createtxg, created=1000 * i) for i, v in
                       enumerate(target.versions, start=1)]  # fmt: skip
    assert planning.retention_victims(target, "", 2, set()) == [f"auto-{i}" for i in range(1, 9)]
    assert planning.retention_victims(target, "", 2, set(), younger_than=4000) == ["auto-1", "auto-2", "auto-3"]
    assert planning.retention_victims(target, "", 2, set(), limit=3) == ["auto-1", "auto-2", "auto-3"], "oldest first"
    assert planning.retention_victims(target, "", 2, set(), younger_than=1000) == []
