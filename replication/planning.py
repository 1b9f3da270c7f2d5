"""What one replication run sends, decided from the two sides' listings by guid (a name can be reused, a guid not).

Per dataset: the base is the newest source snapshot (or bookmark) whose guid the target holds; the target must hold
nothing newer than that base (else it diverged); the snapshots to send are the source's matching ones after the
base, in runs of `zfs send -I` where no snapshot that must not go lies between, `-i` across one that must not. A
transfer cut short is resumed from the target's token first. Nothing here touches a host: hostlib lists, the run
executes.
"""

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from hostlib.replication import BOOKMARK, SNAPSHOT, Dataset, Version

UP_TO_DATE, SEND, RESUME, DIVERGED, NO_COMMON, NOT_OURS, NOTHING_TO_SEND, NO_PARENT = (
    "up-to-date",
    "send",
    "resume",
    "diverged",
    "no-common",
    "not-ours",
    "nothing-to-send",
    "no-parent",
)
STOPS = {DIVERGED, NO_COMMON, NOT_OURS, NO_PARENT}


@dataclass
class Step:
    """One `zfs send` → `zfs receive`: from base ("" for a full stream) up to snapshot, with every snapshot between
    them (`-I`) or only the two ends (`-i`); or, with a token, the rest of a transfer cut short (`-t`)."""

    snapshot: str  # full name on the source
    base: str = ""  # full name on the source: a snapshot, or a bookmark (then never -I)
    intermediates: bool = False
    token: str = ""
    first: bool = False  # the target dataset does not exist yet


@dataclass
class DatasetPlan:
    source: str
    target: str
    outcome: str
    steps: list[Step] = field(default_factory=list)
    base: Version | None = None  # the newest common version (held on both sides once the run succeeds)
    says: str = ""  # for an admin: why nothing goes, or what stopped it


def matching(versions: list[Version], pattern: str) -> list[Version]:
    return [v for v in versions if v.kind == SNAPSHOT and (not pattern or fnmatchcase(v.name, pattern))]


def _steps(source: list[Version], base: Version | None, wanted: list[Version], first: bool) -> list[Step]:
    """wanted (oldest first, all after base) in as few sends as keep out every snapshot that must not go: `-I`
    carries every snapshot between its ends, so consecutive wanted snapshots are one step, and a snapshot that must
    not go (or a bookmark as the start) is stepped over with `-i`."""
    if not wanted:
        return []
    steps = []
    if base is None:
        steps.append(Step(snapshot=wanted[0].full, first=first))
        last, wanted = wanted[0], wanted[1:]
    else:
        last = base
    position = {v.guid: i for i, v in enumerate(source)}
    going = {v.guid for v in wanted}
    chain = None  # the snapshot an -I run starts from, while one is open

    def close():
        if chain is not None and chain is not last:
            steps.append(Step(snapshot=last.full, base=chain.full, intermediates=True))

    for version in wanted:
        between = source[position[last.guid] + 1 : position[version.guid]]
        if last.kind == BOOKMARK or any(v.kind == SNAPSHOT and v.guid not in going for v in between):
            close()
            steps.append(Step(snapshot=version.full, base=last.full))
            chain = version
        elif chain is None:
            chain = last
        last = version
    close()
    return steps


def parents_first(plans: list[DatasetPlan], existing: set[str]) -> list[DatasetPlan]:
    """A child's first stream needs its parent on the target: a child whose parent neither exists there nor is
    sent in this run (its parent has no snapshot the pattern takes, or stopped) stops, its cause named. plans
    come parents first (the listing's order); existing: the target's dataset names."""
    there = set(existing)
    for plan in plans:
        parent = plan.target.rpartition("/")[0]
        first = any(step.first for step in plan.steps)
        if first and plan is not plans[0] and parent not in there:
            plan.outcome, plan.steps = NO_PARENT, []
            plan.says = f"{plan.target} cannot be received before {parent}, which this run does not send"
        if plan.outcome in (SEND, RESUME) or plan.target in existing:
            there.add(plan.target)
    return plans


def plan_dataset(source: Dataset, target: Dataset | None, target_name: str, *, pattern: str = "") -> DatasetPlan:
    plan = DatasetPlan(source=source.name, target=target_name, outcome=UP_TO_DATE)
    wanted_all = matching(source.versions, pattern)
    if target is None:
        if not wanted_all:
            plan.outcome, plan.says = NOTHING_TO_SEND, "no snapshot of the source matches the pattern"
            return plan
        plan.outcome, plan.steps = SEND, _steps(source.versions, None, wanted_all, first=True)
        return plan
    if target.resume_token:
        plan.outcome, plan.steps = RESUME, [Step(snapshot="", token=target.resume_token)]
        plan.says = "a transfer was cut short: it goes on from where it stopped"
        return plan
    on_target = {v.guid: v for v in target.snapshots()}
    common = [v for v in source.versions if v.guid in on_target]
    if not common:
        if not target.snapshots():
            plan.outcome, plan.says = NOT_OURS, f"{target_name} exists and is not a replica of {source.name}"
        else:
            plan.outcome = NO_COMMON
            plan.says = (
                f"{target_name} has no snapshot in common with {source.name}: the chain is broken "
                "(starting over replaces the target, and needs its name typed)"
            )
        return plan
    base = common[-1]
    plan.base = base
    newer_on_target = [v for v in target.snapshots() if v.createtxg > on_target[base.guid].createtxg]
    if newer_on_target:
        plan.outcome = DIVERGED
        plan.says = (
            f"{target_name} changed after the last common snapshot @{base.name}: it holds "
            f"@{newer_on_target[-1].name}, which the source does not (rolling it back to @{base.name} "
            "needs its name typed)"
        )
        return plan
    after = [v for v in wanted_all if v.createtxg > base.createtxg]
    if after:
        plan.outcome, plan.steps = SEND, _steps(source.versions, base, after, first=False)
    return plan


def retention_victims(
    dataset: Dataset, pattern: str, keep: int, never: set[str], *, younger_than: int = 0, limit: int = 0
) -> list[str]:
    """The target's snapshots (names) past the newest `keep` that match the pattern, oldest first; never those in
    `never` (the chain's held snapshot), any the pattern does not take (they are not the task's), or any created at
    or after younger_than (unix seconds); at most limit of them (0: no limit)."""
    mine = matching(dataset.versions, pattern)
    victims = [
        v.name
        for v in mine[: max(len(mine) - keep, 0)]
        if v.name not in never and not (younger_than and v.created >= younger_than)
    ]
    return victims[:limit] if limit else victims
