"""Chart data in the one shape every page hands to chart.js through json_script (static/js/charts.js draws each
<canvas data-chart>): {"type", "labels", "datasets": [{"label", "data", …style}], "unit", …extra}."""

KINDS = ("line", "bar")


def chart(kind: str, *, unit: str, labels=(), datasets=(), **extra) -> dict:
    """A chart's spec; datasets are series() (more may be appended); extra keys ride along for the page."""
    if kind not in KINDS:
        raise ValueError(f"a chart is one of {', '.join(KINDS)}, not {kind}")
    return {"type": kind, "labels": list(labels), "datasets": list(datasets), "unit": unit, **extra}


def series(label: str, data, **style) -> dict:
    """One line or set of bars: its legend label, its points (one per label; None leaves a gap), chart.js style."""
    return {"label": label, "data": list(data), **style}
