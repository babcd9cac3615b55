"""Self-signed serving certificates (kube-scheduler's default) and the TLS context of the secure port."""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from app.server.certs import (
    CertKey,
    TLSConfigError,
    generate_self_signed,
    self_signed_files,
    server_context,
    serving_names,
)


def _certs(pem: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(pem)


def test_generated_cert_is_for_localhost_and_its_alternates_signed_by_its_own_ca() -> None:
    ips, dns = serving_names("0.0.0.0")
    cert_pem, key_pem = generate_self_signed("localhost", ips, dns)
    leaf, ca = _certs(cert_pem)
    assert leaf.subject.rfc4514_string().startswith("CN=localhost@")
    assert ca.subject.rfc4514_string().startswith("CN=localhost-ca@")
    assert leaf.issuer == ca.subject
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost", "localhost"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert b"RSA PRIVATE KEY" in key_pem


def test_a_specific_bind_address_is_in_the_certificate() -> None:
    assert serving_names("10.1.2.3") == (
        [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("10.1.2.3")],
        [],
    )
    assert serving_names("127.0.0.1") == ([ipaddress.ip_address("127.0.0.1")], [])


def test_cert_dir_files_are_written_once_and_then_reused(tmp_path: Path) -> None:
    with self_signed_files(str(tmp_path / "certs"), "berth", "127.0.0.1") as files:
        assert files == CertKey(str(tmp_path / "certs/berth.crt"), str(tmp_path / "certs/berth.key"))
        first = Path(files.cert_file).read_bytes()
    assert (Path(files.key_file).stat().st_mode & 0o777) == 0o600
    with self_signed_files(str(tmp_path / "certs"), "berth", "127.0.0.1") as again:
        assert Path(again.cert_file).read_bytes() == first


def test_a_lone_cert_in_cert_dir_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "berth.crt").write_text("x")
    with (
        pytest.raises(TLSConfigError, match=r"berth\.key cannot be read"),
        self_signed_files(str(tmp_path), "berth", "0.0.0.0"),
    ):
        pass


def test_without_cert_dir_the_files_vanish_after_loading() -> None:
    with self_signed_files(None, "berth", "0.0.0.0") as files:
        ctx = server_context(files)
        assert Path(files.cert_file).exists()
    assert not Path(files.cert_file).exists()
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.verify_mode == ssl.CERT_NONE  # no --client-ca-file: no client certificates asked for


def test_a_client_ca_makes_client_certificates_optional(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    cert_pem, _ = generate_self_signed("ca")
    ca.write_bytes(cert_pem)
    with self_signed_files(None, "berth", "0.0.0.0") as files:
        ctx = server_context(files, str(ca))
    assert ctx.verify_mode == ssl.CERT_OPTIONAL


def test_unusable_files_name_the_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    with pytest.raises(TLSConfigError, match=r"junk\.pem") as err:
        server_context(CertKey(str(junk), str(junk)))
    assert err.value.source == "serving"
    with self_signed_files(None, "berth", "0.0.0.0") as files, pytest.raises(TLSConfigError) as ca_err:
        server_context(files, str(junk))
    assert ca_err.value.source == "client-ca"
    assert "client CA bundle" in str(ca_err.value)
