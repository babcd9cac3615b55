"""The certificate work done in a child process: the same answers and errors as in process."""

from __future__ import annotations

import sys

import pytest

from app.server import x509tool
from app.server.certs import TLSConfigError, ca_subjects, generate_self_signed, serving_names


def test_a_child_reads_the_subjects_of_a_bundle_it_made() -> None:
    ips, dns = serving_names("0.0.0.0")
    cert_pem, _ = generate_self_signed("localhost", ips, dns)
    subjects = ca_subjects(cert_pem)
    common_names = sorted(value for subject in subjects for name, value in subject if name == "commonName")
    assert len(common_names) == 2
    assert common_names[0].startswith("localhost-ca@") and common_names[1].startswith("localhost@")
    assert ca_subjects(cert_pem) == frozenset(
        tuple((name, value) for name, value in subject) for subject in x509tool.subjects(cert_pem.decode())
    )


def test_bad_input_is_the_same_value_error_as_in_process() -> None:
    with pytest.raises(ValueError) as in_process:
        x509tool.subjects("not a certificate")
    with pytest.raises(ValueError) as in_child:
        x509tool.call("subjects", pem="not a certificate")
    assert str(in_child.value) == str(in_process.value)
    with pytest.raises(TLSConfigError, match=r"^not a PEM certificate bundle: ") as err:
        ca_subjects(b"not a certificate")
    assert err.value.source == "client-ca"


def test_a_child_that_cannot_answer_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with pytest.raises(x509tool.X509ToolError, match=r"/bin/false -m app\.server\.x509tool exited with 1"):
        x509tool.call("subjects", pem="")
    with pytest.raises(TLSConfigError, match=r"^cannot generate a self-signed certificate: /bin/false"):
        generate_self_signed("localhost")


def test_without_an_interpreter_to_start_the_work_is_done_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "")
    cert_pem = x509tool.call("self-signed", host="10.0.0.1", ips=["127.0.0.1"], dns=["localhost"])["cert"]
    names = x509tool.call("certificate-names", pem=cert_pem)
    assert names[1:] == ["localhost", "10.0.0.1", "127.0.0.1"]
    assert names[0].startswith("10.0.0.1@")
