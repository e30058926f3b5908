"""The certificates and keys of one real control plane, as kubeadm would lay them out.

A cluster gets its own CA, a serving certificate for kube-apiserver (localhost and 127.0.0.1,
plus the `kubernetes` Service names so in-cluster kubeconfigs verify too), an admin client
certificate in `system:masters`, one client certificate per control-plane component with the
user name its bootstrap RBAC role expects, and the ServiceAccount signing key pair.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
# The first address of kube-apiserver's --service-cluster-ip-range: the `kubernetes` Service.
SERVICE_IP = "10.96.0.1"
SERVICE_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
# Client identities: file stem -> (user name, groups). The users are those the bootstrap
# ClusterRoleBindings of kube-apiserver name.
CLIENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ("kubernetes-admin", ("system:masters",)),
    "controller-manager": ("system:kube-controller-manager", ()),
    "scheduler": ("system:kube-scheduler", ()),
    "kwok": ("kwok-controller", ("system:masters",)),
}


@dataclass(frozen=True)
class Pki:
    """Paths of one cluster's PEM files."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def service_account_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def service_account_pub(self) -> Path:
        return self.directory / "sa.pub"

    def client_cert(self, client: str) -> Path:
        return self.directory / f"{client}.crt"

    def client_key(self, client: str) -> Path:
        return self.directory / f"{client}.key"


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _builder(subject: x509.Name, issuer: x509.Name, public_key: object) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
    )


def create_pki(directory: Path, cluster: str) -> Pki:
    """Write a fresh CA and every certificate and key the cluster's processes use."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{cluster}-ca")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(pki.ca_key, ca_key)
    _write_cert(pki.ca_cert, ca)

    def issue(
        cert_path: Path,
        key_path: Path,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        names: list[x509.GeneralName] | None = None,
    ) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = _builder(subject, ca_name, key.public_key()).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        _write_key(key_path, key)
        _write_cert(cert_path, builder.sign(ca_key, hashes.SHA256()))

    serving_names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    serving_names += [x509.DNSName(n) for n in SERVICE_NAMES]
    serving_names += [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address(SERVICE_IP)),
    ]
    issue(
        pki.serving_cert,
        pki.serving_key,
        _name("kube-apiserver"),
        ExtendedKeyUsageOID.SERVER_AUTH,
        serving_names,
    )
    for client, (user, groups) in CLIENTS.items():
        issue(
            pki.client_cert(client),
            pki.client_key(client),
            _name(user, groups),
            ExtendedKeyUsageOID.CLIENT_AUTH,
        )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.service_account_key, sa_key)
    pki.service_account_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki
