"""The UPS's alerts, asked at every evaluation from its last reading (nothing is asked of the host here): on battery,
low battery, contact lost (the reading failed: unplugged, the driver stopped, the serving NAS gone), and a battery
the UPS says to replace. Registered with analytics from UpsConfig.ready(); each clears with the reading."""

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from ups import selectors

ON_BATTERY = Rule("ups_on_battery", "UPS on battery", Level.CRITICAL, help="The power is out: the NAS runs on battery.")
LOW_BATTERY = Rule("ups_low_battery", "UPS battery low", Level.CRITICAL, help="The shutdown is near (or under way).")
COMM_LOST = Rule("ups_comm_lost", "UPS out of contact", Level.WARNING, help="NUT cannot read the UPS.")
REPLACE = Rule("ups_replace_battery", "UPS battery to replace", Level.WARNING, help="The UPS says its battery is worn.")
WORDS = {"OB": ON_BATTERY, "LB": LOW_BATTERY, "RB": REPLACE}


@alert_source(ON_BATTERY, LOW_BATTERY, COMM_LOST, REPLACE)
def ups_conditions(*, host, now, active):
    ups = selectors.ups_of(host=host)
    if ups is None or ups.read_at is None:
        return
    if ups.error and COMM_LOST.key in active:
        yield COMM_LOST.key, f"ups {ups.name}", f"{host.name}: UPS {ups.name} cannot be read: {ups.error}"
        return
    for word, rule in WORDS.items():
        if word in ups.status and rule.key in active:
            left = (
                f" ({ups.charge:.0f} %, {ups.runtime / 60:.0f} min left)"
                if ups.charge is not None and ups.runtime
                else ""
            )
            yield rule.key, f"ups {ups.name}", f"{host.name}: UPS {ups.name}: {rule.title.lower()}{left}."
