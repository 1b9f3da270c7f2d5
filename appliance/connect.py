"""Build a host transport from a Host row, wired to the audit log."""

from django.conf import settings

from appliance import datadir
from appliance.models import AuditEntry, Host
from hostlib.keys import ensure_identity
from hostlib.runner import CommandResult, LocalTransport, SSHTransport, Transport


def ssh_dir():
    """Tarn's SSH folder, checked (root's alone: appliance.datadir) before a key in it is used."""
    return datadir.key_folder("ssh")


def ssh_identity() -> str:
    """Tarn's private SSH key (made on first use), checked before ssh is handed it."""
    return str(datadir.key_file(ensure_identity(ssh_dir())))


def transport_for(host: Host, *, user=None, operation=None, read_only: bool | None = None) -> Transport:
    """A transport for host whose mutating commands are written to the audit log."""

    def audit(result: CommandResult) -> None:
        AuditEntry.objects.create(
            kind="command",
            user=user,
            username=getattr(user, "username", "") or "",
            host=host,
            host_name=host.name,
            operation=operation,
            argv=result.argv,
            exit_code=result.returncode,
            duration_ms=int(result.duration * 1000),
        )

    ro = host.read_only if read_only is None else read_only
    if host.is_local:
        return LocalTransport(read_only=ro or settings.TARN_LOCAL_READ_ONLY, on_command=audit)
    identity = host.identity_file or ssh_identity()
    return SSHTransport(
        read_only=ro,
        on_command=audit,
        address=host.address,
        port=host.port,
        user=host.username,
        identity_file=identity,
        host_keys=tuple(host.host_keys.split("\n")),
        state_dir=str(ssh_dir() / "run"),
        connect_timeout=settings.TARN_SSH_CONNECT_TIMEOUT,
    )
