"""An ACME order (RFC 8555) for the front's certificate, with certbot's `acme` library (the EFF's, maintained with
certbot; Tarn writes no protocol code): the account (its key in tls/, made once), a new order for the names, each
name proved by HTTP-01 (the answer served by the front on its HTTP port: appliance.tls.challenge_put), the order
finalized with a CSR for a new key, the chain fetched. What the CA hands back is a stranger's: every answer is
capped in size, TLS to the directory is checked (Debian's CAs, or the roots the admin gave for a private CA), and
the chain is checked like an imported one before it is served (services.certificate_check).

Runs in the worker, as root (the account's key and the certificate's key are root's)."""

import datetime
import re
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import josepy as jose
import requests
from acme import challenges, client, errors, messages
from cryptography.hazmat.primitives import serialization
from django.core.exceptions import ValidationError
from requests.adapters import HTTPAdapter

from appliance import tls
from certificates.choices import ACME_ANSWER_MAX, ACME_TIMEOUT, SYSTEM_CAS

USER_AGENT = "Tarn (acme-python)"


class _Capped(HTTPAdapter):
    """What Tarn asks of a CA: HTTPS to the directory's own host and port only (every URL in its answers is the CA's
    word: it may not send the root worker elsewhere, nor redirect it), at most ACME_ANSWER_MAX bytes per answer, and
    the whole order within its deadline (a server that drips one byte at a time is cut off)."""

    def __init__(self, origin: str, deadline: float):
        super().__init__()
        self.origin, self.deadline = origin, deadline

    def send(self, request, **kwargs):
        if not self.origin:
            raise requests.exceptions.RequestException("an ACME directory is asked over https:// only")
        if _origin(request.url) != self.origin:
            raise requests.exceptions.RequestException(
                f"the CA sent Tarn to {said(request.url, 120)}, not to its directory's https://{self.origin}"
            )
        kwargs["stream"] = True
        response = super().send(request, **kwargs)
        body = bytearray()
        try:
            while len(body) <= ACME_ANSWER_MAX:
                if time.monotonic() > self.deadline:
                    raise requests.exceptions.RequestException("the CA took longer than the order may")
                chunk = response.raw.read1(65536, decode_content=True)
                if not chunk:
                    break
                body += chunk
        finally:
            response.close()
        if len(body) > ACME_ANSWER_MAX:
            raise requests.exceptions.RequestException(
                f"{said(request.url, 120)} answered more than {ACME_ANSWER_MAX >> 10} KiB"
            )
        response._content = bytes(body)
        response._content_consumed = True
        return response


def _origin(url: str) -> str:
    """host:port of an https URL ("" for any other scheme)."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        return ""
    return f"{parts.hostname.lower()}:{parts.port or 443}"


@dataclass(frozen=True)
class Issued:
    chain: bytes  # the certificate, then its chain, as the CA sent them (checked by the caller)
    key: bytes  # the new key's PEM
    account: str  # the account's URL at this directory


def said(text: object, limit: int = 300) -> str:
    """A CA's words for a page: printable, one line, bounded."""
    return re.sub(r"[^\x20-\x7e]+", " ", str(text)).strip()[:limit]


@contextmanager
def _trust(roots: str):
    """What TLS to the directory is checked against: Debian's CAs, plus the roots given for a private CA."""
    if not roots.strip():
        yield SYSTEM_CAS
        return
    with open(SYSTEM_CAS, "rb") as f:
        system = f.read()
    with tempfile.NamedTemporaryFile(prefix="tarn-acme-", suffix=".pem") as bundle:
        bundle.write(system + b"\n" + roots.encode("ascii"))
        bundle.flush()
        yield bundle.name


def _network(account_key: bytes, verify: str, directory: str, deadline: float) -> client.ClientNetwork:
    key = serialization.load_pem_private_key(account_key, password=None)
    net = client.ClientNetwork(
        jose.JWKEC(key=key), alg=jose.ES256, verify_ssl=verify, user_agent=USER_AGENT, timeout=ACME_TIMEOUT
    )
    adapter = _Capped(_origin(directory), deadline)
    for scheme in ("https://", "http://"):  # plain HTTP too goes through the check, which refuses it
        net.session.mount(scheme, adapter)
    net.session.max_redirects = 0
    return net


def _known(acme: client.ClientV2, url: str) -> None:
    acme.net.account = messages.RegistrationResource(uri=url, body=messages.Registration())


def _account(acme: client.ClientV2, email: str, known: str) -> str:
    """The account's URL: the one known for this directory, else registered now (agreeing to the CA's terms, which
    the admin accepted on the form); a key the CA knows already gives its account back."""
    if known:
        _known(acme, known)
        return known
    contact = messages.NewRegistration.from_data(email=email or None, terms_of_service_agreed=True)
    try:
        return acme.new_account(contact).uri
    except errors.ConflictError as exc:  # this key has an account there already: its URL
        _known(acme, exc.location)
        return exc.location


def _matches(order: messages.OrderResource, names: list[str]) -> None:
    """The order is for the names asked, no more (no answer is served for a name nobody asked for)."""
    asked = sorted(names)
    got = sorted(str(i.value).lower() for i in order.body.identifiers)
    if got != asked or len(order.authorizations) > len(names):
        raise ValidationError(f"The CA made an order for other names ({said(', '.join(got), 200)}): refused.")


def _challenge(authz: messages.AuthorizationResource) -> messages.ChallengeBody:
    for body in authz.body.challenges:
        if isinstance(body.chall, challenges.HTTP01):
            return body
    raise ValidationError(
        f"The CA offers no HTTP-01 challenge for {said(authz.body.identifier.value, 100)}: Tarn proves a name over "
        "HTTP only (a wildcard needs DNS-01)."
    )


def _failed(exc: errors.ValidationError) -> str:
    out = []
    for authz in exc.failed_authzrs:
        name = said(authz.body.identifier.value, 100)
        why = "; ".join(said(c.error.detail or c.error.typ) for c in authz.body.challenges if c.error is not None)
        out.append(f"{name}: {why or 'refused'}")
    return (
        "The CA could not reach Tarn's answer for "
        + "; ".join(out)[:600]
        + (
            ". It asks http://<name>/.well-known/acme-challenge/… on port 80: the name must resolve to this machine and "
            "port 80 reach Tarn's front."
        )
    )


def obtain(
    *,
    directory: str,
    email: str,
    names: list[str],
    roots: str,
    account: str,
    progress: Callable[[int, str], None],
    deadline: float = 120,
) -> Issued:
    """A certificate for names from the CA at directory: raises ValidationError with what to tell the admin."""
    started = time.monotonic()
    try:
        with _trust(roots) as verify:
            net = _network(tls.acme_account_key(), verify, directory, started + deadline + 30)
            key, key_pem = tls.new_key()  # the certificate's: it goes to the front with the chain
            csr = tls.csr(key, names, [])
            progress(10, f"Asking the ACME directory {said(directory, 200)}")
            acme = client.ClientV2(client.ClientV2.get_directory(directory, net), net)
            try:
                account = _account(acme, email, account)
                progress(20, "Account ready; ordering a certificate for " + ", ".join(names))
                order = acme.new_order(csr)
            except messages.Error as exc:
                if exc.code != "accountDoesNotExist" or not account:
                    raise
                acme.net.account = None  # a new account is asked for with the key itself, never with the old URL
                account = _account(acme, email, "")  # the CA forgot the account (a test CA restarted): a new one
                order = acme.new_order(csr)
            _matches(order, names)
            for authz in order.authorizations:
                if authz.body.status == messages.STATUS_VALID:
                    continue  # proved lately: the CA remembers
                body = _challenge(authz)
                response, answer = body.response_and_validation(net.key)
                tls.challenge_put(body.chall.encode("token"), answer)
                acme.answer_challenge(body, response)
            progress(50, "Answers served on port 80; the CA is checking them")
            until = datetime.datetime.now() + datetime.timedelta(
                seconds=max(1.0, deadline - (time.monotonic() - started))
            )
            order = acme.poll_and_finalize(order, deadline=until)
    except errors.ValidationError as exc:
        raise ValidationError(_failed(exc)) from None
    except errors.TimeoutError:
        raise ValidationError(f"The CA did not finish the order within {deadline:.0f} s; the next try starts over.")
    except (messages.Error, errors.IssuanceError) as exc:
        raise ValidationError(f"The CA refused: {said(exc, 500)}") from None
    except requests.exceptions.SSLError as exc:
        raise ValidationError(
            f"The ACME directory's certificate is not trusted ({said(exc, 200)}): for a private CA, give its root."
        ) from None
    except requests.exceptions.RequestException as exc:
        raise ValidationError(f"The ACME server did not answer: {said(exc, 300)}") from None
    except ValidationError:
        raise
    except (errors.Error, jose.DeserializationError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValidationError(f"The ACME server's answer makes no sense: {said(exc, 300)}") from None
    except (RecursionError, OverflowError, OSError) as exc:
        raise ValidationError(f"The ACME server's answer makes no sense ({type(exc).__name__}).") from None
    finally:
        tls.challenges_clear()
    chain = order.fullchain_pem or ""
    if not chain.isascii():
        raise ValidationError("The CA sent a certificate that is not PEM.")
    return Issued(chain=chain.encode("ascii"), key=key_pem, account=account)
