"""The web's workers start with every view imported and what that made frozen out of the garbage collector's way
(tarn/wsgi.py): a full collection then walks only what requests made, not Django's and Tarn's ~200,000 objects."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wsgi_module_imports_every_view_and_freezes_what_it_made():
    code = (
        "import gc, sys, tarn.wsgi; "
        "print(gc.get_freeze_count(), all(f'{app}.views' in sys.modules for app in ('pools', 'backups', 'updates')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    frozen, views = out.stdout.split()
    assert int(frozen) > 100_000 and views == "True", out.stdout
