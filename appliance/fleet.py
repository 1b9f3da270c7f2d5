"""The fleet page's columns: every host at a glance. Each app registers what it shows of a host (a column whose
cells for all hosts come from one or two queries), so the core never imports them; the core gives the first column,
whether the host answers.

A cell says what to show, how it sorts and how it looks (level ok, warn or bad: a host with a warn or bad cell
"needs attention"). Rows are kept for TARN_DASHBOARD_SECONDS per set of columns and hosts, as the dashboard's
panels are: 50 people on the page at once ask the database once."""

from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince

from appliance.kept import kept_a_moment

OK, WARN, BAD = "ok", "warn", "bad"
STALE_MINUTES = 30  # a host not read for this long is shown as not answering lately


@dataclass(frozen=True)
class Cell:
    text: str
    sort: float | str = 0.0  # ascending: the worst first where it matters (the page sorts by this)
    level: str = ""  # "", ok, warn or bad
    href: str = ""
    title: str = ""  # more, on hover


NONE = Cell("—", float("inf"))


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    cells: Callable[..., dict[int, Cell]]  # cells(hosts=[Host, …]) -> {host pk: Cell}; a host left out shows NONE
    role: str | None = None  # the role its page needs (None: every signed-in user)
    help: str = ""


COLUMNS: list[Column] = []


def fleet_column(key: str, label: str, cells: Callable[..., dict[int, Cell]], *, role=None, help: str = "") -> None:
    if all(c.key != key for c in COLUMNS):
        COLUMNS.append(Column(key, label, cells, role, help))


def reach(*, hosts) -> dict[int, Cell]:
    """Whether the host answered its last read (its facts), and when."""
    now, cells = timezone.now(), {}
    for host in hosts:
        if host.facts_error:
            cells[host.pk] = Cell("not answering", 0, BAD, title=host.facts_error[:300])
        elif host.observed_at is None:
            cells[host.pk] = Cell("not read yet", 1, WARN)
        else:
            stale = (now - host.observed_at).total_seconds() > STALE_MINUTES * 60
            cells[host.pk] = Cell(
                f"read {timesince(host.observed_at, now).split(',')[0]} ago",
                2 if stale else 3,
                WARN if stale else OK,
            )
    return cells


fleet_column("reach", "Answers", reach, help="Whether Tarn reached the host on its last read.")


@dataclass
class Row:
    host: object
    cells: list[Cell] = field(default_factory=list)
    tds: str = ""  # the cells drawn once as table cells (50 rows × 9 cells through the template were most of a page)

    @property
    def attention(self) -> bool:
        return any(c.level in (WARN, BAD) for c in self.cells)


def _td(cell: Cell) -> str:
    text = format_html('<a href="{}">{}</a>', cell.href, cell.text) if cell.href else format_html("{}", cell.text)
    return format_html(
        "<td{}{}>{}</td>",
        format_html(' class="cell-{}"', cell.level) if cell.level else "",
        format_html(' title="{}"', cell.title) if cell.title else "",
        text,
    )


def fleet_rows(*, hosts, user) -> tuple[list[Column], list[Row]]:
    """The columns this user may see and a row per host (in the hosts' order)."""
    columns = [c for c in COLUMNS if not c.role or user.has_role(c.role)]
    which = "{}:{}".format(",".join(c.key for c in columns), ",".join(str(h.pk) for h in hosts))
    return columns, kept_a_moment("fleet", which, lambda: _rows(columns, hosts))


def _rows(columns, hosts) -> list[Row]:
    found = [column.cells(hosts=hosts) for column in columns]
    rows = [Row(host, [cells.get(host.pk, NONE) for cells in found]) for host in hosts]
    for row in rows:
        row.tds = mark_safe("".join(_td(cell) for cell in row.cells))  # noqa: S308 - each part escaped by format_html
    return rows


def sorted_rows(rows: list[Row], columns: list[Column], order: str) -> list[Row]:
    """By a column's key (descending with a leading '-'), then by name, the hosts it says nothing of last; `name` or
    an unknown key: by name (`-name`: the other way)."""
    keys = [c.key for c in columns]
    name = order.lstrip("-")
    rows = sorted(rows, key=lambda r: r.host.name, reverse=order == "-name")
    if name not in keys:
        return rows
    at = keys.index(name)
    shown = [r for r in rows if r.cells[at] != NONE]  # equal, not the same: cached rows come back unpickled

    def by(row: Row):
        value = row.cells[at].sort
        return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))

    return sorted(shown, key=by, reverse=order.startswith("-")) + [r for r in rows if r.cells[at] == NONE]


def fleet_view(*, hosts, user, q: str = "", order: str = "", attention: bool = False) -> tuple[list[Column], list[Row]]:
    """What the fleet page and its API show: the hosts whose names hold q (any case), sorted by order, only those
    needing attention if asked."""
    q = q.strip()[:40].casefold()
    columns, rows = fleet_rows(hosts=[h for h in hosts if q in h.name.casefold()], user=user)
    rows = sorted_rows(rows, columns, order[:40])
    return columns, [r for r in rows if r.attention] if attention else rows
