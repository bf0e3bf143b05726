"""A certificate authority and serving certificate per cluster, as kubeadm/kind generate them.

ECDSA P-256 keys (generated in milliseconds, unlike RSA) with the
``kubernetes`` CA common name and the apiserver's subject alternative names
(127.0.0.1, localhost, kubernetes.default.svc...), so kubectl and the official
client verify TLS normally.
"""
from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .privatefiles import private_dir, write_private

_VALIDITY = datetime.timedelta(days=3650)


@dataclass(frozen=True)
class ClusterPKI:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    token_file: Path

    @property
    def token(self) -> str:
        return self.token_file.read_text().strip()


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def ensure_pki(directory: Path) -> ClusterPKI:
    """Create the CA, the serving certificate and the bearer token once (each file 0600 from its creation, in
    a 0700 folder); reuse them afterwards."""
    private_dir(directory)
    pki = ClusterPKI(directory / "ca.crt", directory / "apiserver.crt", directory / "apiserver.key",
                     directory / "token")
    if pki.ca_cert.exists() and pki.server_cert.exists() and pki.server_key.exists() and pki.token_file.exists():
        return pki
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + _VALIDITY)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=True, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName(n) for n in ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                      "kubernetes.default.svc.cluster.local")]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", "10.96.0.1")]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + _VALIDITY)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    write_private(pki.ca_cert, ca.public_bytes(serialization.Encoding.PEM))
    write_private(pki.server_cert, cert.public_bytes(serialization.Encoding.PEM))
    write_private(pki.server_key, _pem_key(key))
    write_private(pki.token_file, secrets.token_urlsafe(32) + "\n")
    return pki
