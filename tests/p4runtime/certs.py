"""Certificates for the TLS tests, made on the spot with the ``cryptography`` package: a CA, a
server certificate for 127.0.0.1/localhost signed by it, a client certificate signed by it, and a
second, unrelated CA with its own client certificate (the "wrong certificate")."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    """PEM file paths: ``ca``, ``server_cert``/``server_key``, ``client_cert``/``client_key``,
    ``rogue_ca``, ``rogue_cert``/``rogue_key`` (a client certificate from another CA)."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    rogue_ca: Path
    rogue_cert: Path
    rogue_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _cert(subject: str, key, issuer: str, issuer_key, *, ca: bool = False, server: bool = False):
    now = datetime.datetime.now(datetime.UTC)
    b = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.DNSName("p4sim.test"),
                                                         x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                            critical=False)
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not ca:
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _write(path: Path, cert=None, key=None) -> Path:
    if cert is not None:
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    else:
        path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return path


def make_pki(directory: Path) -> Pki:
    ca_key, rogue_ca_key = _key(), _key()
    ca = _cert("dlcp test CA", ca_key, "dlcp test CA", ca_key, ca=True)
    rogue_ca = _cert("rogue CA", rogue_ca_key, "rogue CA", rogue_ca_key, ca=True)
    server_key, client_key, rogue_key = _key(), _key(), _key()
    return Pki(
        ca=_write(directory / "ca.pem", ca),
        server_cert=_write(directory / "server.pem", _cert("p4sim.test", server_key, "dlcp test CA", ca_key,
                                                            server=True)),
        server_key=_write(directory / "server.key", key=server_key),
        client_cert=_write(directory / "client.pem", _cert("controller", client_key, "dlcp test CA", ca_key)),
        client_key=_write(directory / "client.key", key=client_key),
        rogue_ca=_write(directory / "rogue-ca.pem", rogue_ca),
        rogue_cert=_write(directory / "rogue.pem", _cert("controller", rogue_key, "rogue CA", rogue_ca_key)),
        rogue_key=_write(directory / "rogue.key", key=rogue_key),
    )
