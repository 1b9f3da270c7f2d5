"""Deployment: production settings pass `check --deploy`; docker-compose.yml names real services and commands."""

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import yaml
from django.core.management import call_command

from appliance.models import Host

ROOT = Path(__file__).resolve().parents[1]


def test_production_settings_pass_check_deploy(tmp_path):
    env = {**os.environ, "TARN_HTTPS": "true", "TARN_DATA_DIR": str(tmp_path), "TARN_ALLOWED_HOSTS": "nas.example"}
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set for the browser tests' process only
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_secret_key_is_generated_once_into_a_private_file(tmp_path):
    env = {**os.environ, "TARN_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "tarn.settings"}
    env.pop("DJANGO_SECRET_KEY", None)
    argv = [
        sys.executable,
        "-c",
        "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)",
    ]

    def key():
        return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True).stdout

    first, second = key(), key()
    assert first == second and len(first.strip()) >= 50
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600


def test_compose_has_redis_web_workers_and_beat_with_real_commands():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"redis", "web", "worker-default", "worker-deliver", "worker-hosts", "worker-bench", "beat"} <= set(services)
    assert "-Q deliver" in " ".join(services["worker-deliver"]["command"])  # alerts on their own worker
    assert (ROOT / "Dockerfile").exists()
    assert "gunicorn tarn.wsgi" in " ".join(services["web"]["command"])
    assert (ROOT / "tarn" / "wsgi.py").exists() and (ROOT / "tarn" / "celery.py").exists()
    for name in ["worker-default", "worker-hosts", "worker-bench", "beat"]:
        command = " ".join(services[name]["command"])
        assert "celery" in command and "-A tarn" in command, name
        assert services[name]["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    for name in ["web", "worker-default", "worker-hosts", "worker-bench", "beat"]:  # one PostgreSQL, healthy first
        assert services[name]["environment"]["DATABASE_URL"].startswith("postgres://tarn:"), name
        assert services[name]["depends_on"]["db"] == {"condition": "service_healthy"}, name
    assert "pg_isready" in " ".join(services["db"]["healthcheck"]["test"])
    for name, service in services.items():
        assert not service.get("privileged"), f"{name} must not need privileges"
        assert "cap_add" not in service and "devices" not in service


def test_compose_queue_helper_prints_queues(db):

    out = StringIO()
    call_command("tarn_queues", "hosts", stdout=out)
    assert out.getvalue().strip() == "host.local"


def test_the_queue_helper_names_only_the_hosts_a_second_machine_serves(db):
    Host.objects.create(name="nas1a", address="192.0.2.1")
    Host.objects.create(name="nas2", address="192.0.2.2")

    def queues(*args):
        out = StringIO()
        call_command("tarn_queues", "hosts", *args, stdout=out)
        return out.getvalue().strip()

    assert queues() == "host.local,host.nas1a,host.nas2"
    assert queues("--hosts", "nas1*") == "host.nas1a"
    assert queues("--hosts", "nas2, local") == "host.local,host.nas2"
    assert queues("--hosts", "zz*") == "tarn.none"  # never the default queue's work
