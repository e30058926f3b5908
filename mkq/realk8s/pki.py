"""The certificates and keys of one real control plane, as kubeadm would lay them out.

A cluster gets its own CA, a serving certificate for kube-apiserver (localhost and 127.0.0.1,
plus the `kubernetes` Service names so in-cluster kubeconfigs verify too), an admin client
certificate in `system:masters`, one client certificate per control-plane component with the
user name its bootstrap RBAC role expects, and the ServiceAccount signing key pair.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from kueue_api.certs import KeyPair, builder, key_pem, new_ca, san_entries, subject

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
# The name kube-apiserver's aggregator presents to aggregated API servers (the agent's
# visibility API), from a CA of its own as kubeadm makes it: holding a client certificate of the
# cluster's CA must not let anyone pass as the front proxy.
FRONT_PROXY_CLIENT = "front-proxy-client"


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

    @property
    def front_proxy_ca_cert(self) -> Path:
        return self.directory / "front-proxy-ca.crt"

    @property
    def front_proxy_client_cert(self) -> Path:
        return self.directory / "front-proxy-client.crt"

    @property
    def front_proxy_client_key(self) -> Path:
        return self.directory / "front-proxy-client.key"

    def client_cert(self, client: str) -> Path:
        return self.directory / f"{client}.crt"

    def client_key(self, client: str) -> Path:
        return self.directory / f"{client}.key"


def _write_key(path: Path, key: rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def create_pki(directory: Path, cluster: str) -> Pki:
    """Write a fresh CA and every certificate and key the cluster's processes use."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    now = datetime.datetime.now(datetime.UTC)
    ca = new_ca(f"{cluster}-ca", now, VALIDITY)
    pki.ca_key.write_bytes(ca.key_pem)
    pki.ca_key.chmod(0o600)
    pki.ca_cert.write_bytes(ca.cert_pem)
    front_proxy_ca = new_ca(f"{cluster}-front-proxy-ca", now, VALIDITY)
    pki.front_proxy_ca_cert.write_bytes(front_proxy_ca.cert_pem)

    def issue(
        cert_path: Path,
        key_path: Path,
        subject_name: x509.Name,
        usage: x509.ObjectIdentifier,
        names: list[x509.GeneralName] | None = None,
        signer: KeyPair = ca,
    ) -> None:
        signer_key = serialization.load_pem_private_key(signer.key_pem, password=None)
        assert isinstance(signer_key, ec.EllipticCurvePrivateKey)
        key = ec.generate_private_key(ec.SECP256R1())
        cert_builder = builder(
            subject_name, signer.certificate.subject, key.public_key(), now, VALIDITY
        ).add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if names:
            cert_builder = cert_builder.add_extension(
                x509.SubjectAlternativeName(names), critical=False
            )
        key_path.write_bytes(key_pem(key))
        key_path.chmod(0o600)
        cert_path.write_bytes(
            cert_builder.sign(signer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
        )

    serving_names = san_entries(["localhost", *SERVICE_NAMES, "127.0.0.1", SERVICE_IP])
    issue(
        pki.serving_cert,
        pki.serving_key,
        subject("kube-apiserver"),
        ExtendedKeyUsageOID.SERVER_AUTH,
        serving_names,
    )
    for client, (user, groups) in CLIENTS.items():
        issue(
            pki.client_cert(client),
            pki.client_key(client),
            subject(user, groups),
            ExtendedKeyUsageOID.CLIENT_AUTH,
        )
    issue(
        pki.front_proxy_client_cert,
        pki.front_proxy_client_key,
        subject(FRONT_PROXY_CLIENT, ()),
        ExtendedKeyUsageOID.CLIENT_AUTH,
        signer=front_proxy_ca,
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.service_account_key, sa_key)
    pki.service_account_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki
