"""The TLS knobs of a secure listener: kube's ``--tls-min-version``, ``--tls-cipher-suites``,
``--tls-curve-preferences`` and ``--tls-sni-cert-key`` (``cliflag`` and ``SecureServingOptions``).

Go names cipher suites by their IANA names; OpenSSL by its own. :data:`GO_CIPHERS` maps the names
kube-scheduler accepts (``cliflag``'s table: crypto/tls's secure and insecure suites, plus the two
short ChaCha20 aliases) to OpenSSL's. As in Go, the list only restricts TLS 1.2 and older: TLS 1.3
suites are fixed by the library (Go ignores them too), so naming one is accepted and changes nothing.

SNI certificates are chosen as apiserver's ``dynamiccertificates`` does: the server name is matched
exactly first, then by a wildcard (``*.example.com`` covers one label); explicit name patterns take
precedence over the names extracted from a certificate (its CN and DNS/IP SANs); without a match the
default certificate (``--tls-cert-file`` or the generated one) is served.
"""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.server import x509tool

__all__ = [
    "GO_CIPHERS",
    "GO_CURVES",
    "INSECURE_CIPHERS",
    "PREFERRED_CIPHERS",
    "TLS_VERSIONS",
    "NamedCertKey",
    "TLSOptionError",
    "TLSOptions",
    "parse_named_cert_key",
]

TLS_VERSIONS = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}

# crypto/tls CipherSuites() (Go 1.25, what kube-scheduler v1.36.3 is built with): None for TLS 1.3.
PREFERRED_CIPHERS: dict[str, str | None] = {
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
}
# crypto/tls InsecureCipherSuites().
INSECURE_CIPHERS: dict[str, str | None] = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
}
GO_CIPHERS: dict[str, str | None] = {
    **PREFERRED_CIPHERS,
    **INSECURE_CIPHERS,
    # cliflag's aliases for the ChaCha20 suites' pre-RFC names
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
# crypto/tls CurveIDs -> OpenSSL group names.
GO_CURVES = {23: "prime256v1", 24: "secp384r1", 25: "secp521r1", 29: "X25519", 4588: "X25519MLKEM768"}


class TLSOptionError(ValueError):
    """A TLS flag value kube-scheduler rejects, with its message."""


@dataclass(frozen=True, slots=True)
class NamedCertKey:
    """One ``--tls-sni-cert-key``: a certificate, its key and optional name patterns."""

    cert_file: str
    key_file: str
    names: tuple[str, ...] = ()


def parse_named_cert_key(value: str) -> NamedCertKey:
    """``cliflag.NamedCertKey.Set``: ``cert,key`` or ``cert,key:name1,name2``."""
    keycert, sep, names = value.partition(":")
    patterns: tuple[str, ...] = ()
    if sep:
        if not names.strip():
            raise TLSOptionError("empty names list is not allowed")
        patterns = tuple(n.strip() for n in names.strip().split(","))
    parts = keycert.strip().split(",")
    if len(parts) != 2:
        raise TLSOptionError("expected comma separated certificate and key file paths")
    return NamedCertKey(parts[0].strip(), parts[1].strip(), patterns)


def _certificate_names(cert_file: str) -> list[str]:
    """The names a certificate is served for when no pattern is given: CN, DNS and IP SANs.

    Read in a child process (:mod:`app.server.x509tool` says why); a certificate that is not one is
    a ValueError, a file that cannot be read an OSError.
    """
    with open(cert_file, "rb") as fh:
        pem = fh.read()
    try:
        names: list[str] = x509tool.call("certificate-names", pem=pem.decode(errors="replace"))
    except x509tool.X509ToolError as err:
        raise ValueError(f"cannot read the names of {cert_file}: {err}") from err
    return names


@dataclass(slots=True)
class TLSOptions:
    """What the TLS flags ask of a serving context; :meth:`apply` configures one."""

    min_version: str = ""
    cipher_suites: Sequence[str] = ()
    curve_preferences: Sequence[int] = ()
    sni_cert_keys: Sequence[NamedCertKey] = field(default_factory=tuple)

    def validate(self) -> None:
        """kube's ``ApplyTo`` checks, without touching files."""
        if self.min_version and self.min_version not in TLS_VERSIONS:
            raise TLSOptionError(f'unknown tls version "{self.min_version}"')
        for name in self.cipher_suites:
            if name not in GO_CIPHERS:
                raise TLSOptionError(f"Cipher suite {name} not supported or doesn't exist")
        seen: set[int] = set()
        for curve in self.curve_preferences:
            if not 1 <= curve <= 65535:
                raise TLSOptionError(f"curve preference {curve} is out of range (must be 1-65535)")
            if curve in seen:
                raise TLSOptionError(f"duplicate curve preference {curve}")
            seen.add(curve)
            if curve not in GO_CURVES:
                raise TLSOptionError(f"curve preference {curve} is not supported by the current Go version")

    def apply(self, ctx: ssl.SSLContext, load: Callable[[str, str], ssl.SSLContext] | None = None) -> None:
        """Set the minimum version, ciphers, curve and SNI certificates on ``ctx``.

        ``load`` builds a context like ``ctx`` for one SNI certificate and key (needed when
        there are SNI certificates).
        """
        self.validate()
        legacy = ""
        if self.min_version:
            ctx.minimum_version = TLS_VERSIONS[self.min_version]
            if ctx.minimum_version < ssl.TLSVersion.TLSv1_2:
                # OpenSSL 3's default security level refuses TLS 1.0/1.1 even when allowed; Go does not.
                legacy = ":@SECLEVEL=0"
        openssl = [c for name in self.cipher_suites if (c := GO_CIPHERS[name]) is not None]
        if openssl or legacy:
            try:
                ctx.set_ciphers(":".join(openssl or ["DEFAULT"]) + legacy)
            except ssl.SSLError as err:
                raise TLSOptionError(
                    f"OpenSSL offers none of the cipher suites {', '.join(openssl)}"
                ) from err
        curves = [GO_CURVES[c] for c in self.curve_preferences]
        if len(curves) == 1:  # Python's ssl restricts to one group or none
            try:
                ctx.set_ecdh_curve(curves[0])
            except (ValueError, ssl.SSLError) as err:
                raise TLSOptionError(f"OpenSSL has no key exchange group {curves[0]}") from err
        if self.sni_cert_keys:
            if load is None:
                raise ValueError("SNI certificates need a loader")
            chooser = SNIChooser()
            plain = TLSOptions(self.min_version, self.cipher_suites, self.curve_preferences)
            for pair in self.sni_cert_keys:
                sni_ctx = load(pair.cert_file, pair.key_file)
                plain.apply(sni_ctx)
                names = pair.names or tuple(_certificate_names(pair.cert_file))
                chooser.add(sni_ctx, names, explicit=bool(pair.names))
            ctx.sni_callback = chooser


class SNIChooser:
    """The ``sni_callback`` choosing a context by server name (see the module docstring)."""

    def __init__(self) -> None:
        # name (lower case) -> (explicit?, context); the first registration of a name wins, as in kube
        self.exact: dict[str, tuple[bool, ssl.SSLContext]] = {}
        self.wildcard: dict[str, tuple[bool, ssl.SSLContext]] = {}

    def add(self, ctx: ssl.SSLContext, names: Sequence[str], *, explicit: bool) -> None:
        """Serve ``ctx`` for ``names`` (``*.domain`` patterns allowed)."""
        for raw in names:
            name = raw.lower()
            table = self.wildcard if name.startswith("*.") else self.exact
            key = name[2:] if name.startswith("*.") else name
            current = table.get(key)
            if current is None or (explicit and not current[0]):
                table[key] = (explicit, ctx)

    def choose(self, server_name: str | None) -> ssl.SSLContext | None:
        """The context for ``server_name``, None for the default one."""
        if not server_name:
            return None
        name = server_name.lower().rstrip(".")
        hit = self.exact.get(name)
        if hit is not None:
            return hit[1]
        _, dot, parent = name.partition(".")
        if dot and not _is_ip(name):
            hit = self.wildcard.get(parent)
            if hit is not None:
                return hit[1]
        return None

    def __call__(
        self, sock: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext
    ) -> None:
        chosen = self.choose(server_name)
        if chosen is not None:
            sock.context = chosen


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
