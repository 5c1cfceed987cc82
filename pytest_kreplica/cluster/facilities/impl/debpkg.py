"""One file out of a Debian package, fetched once into the kreplica cache without root.

The clock faults need libfaketime and the power-loss fault libfuse 3; neither is a Python
package, and a test run must not install system packages. So: ``apt-get download`` (Debian's
signed package lists; no root needed for a download) or, without usable lists, the pinned
package from Debian's pool checked against its sha256; ``dpkg-deb -x`` unpacks it into a
temporary directory beside the target and the one file wanted is moved into place.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ....errors import EnvironmentProblem

FETCH_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class DebFile:
    """Where one shared object comes from."""

    package: str  # the apt name, e.g. "libfaketime"
    pool_url: str  # the pinned .deb in Debian's pool
    pool_sha256: str
    member_glob: str  # the file inside the package, e.g. "usr/lib/*/faketime/libfaketime.so.1"
    purpose: str  # who needs it, for messages: "the clock faults"
    remedy: str  # what a user can do instead, for messages


def _apt_download(spec: DebFile, workdir: Path) -> Path | None:
    """``apt-get download`` into ``workdir``; None when apt cannot (no apt, no package
    lists); its output goes to ``apt-download.log``."""
    apt = shutil.which("apt-get")
    if apt is None:
        return None
    with open(workdir / "apt-download.log", "wb") as log:
        try:
            code = subprocess.call([apt, "download", spec.package], cwd=workdir, stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   timeout=FETCH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None
    debs = sorted(workdir.glob(f"{spec.package}_*.deb"))
    return debs[0] if code == 0 and debs else None


def _pool_download(spec: DebFile, workdir: Path) -> Path:
    """The pinned package from Debian's pool, checked against its sha256."""
    import urllib.request  # lazy: 40 ms, and the plugin imports the cluster package at start

    target = workdir / spec.pool_url.rsplit("/", 1)[1]
    try:
        with urllib.request.urlopen(spec.pool_url, timeout=FETCH_TIMEOUT_S) as resp:
            data = resp.read()
    except OSError as exc:
        raise EnvironmentProblem(f"{spec.purpose} need {spec.package}: apt-get download "
                                 f"failed and {spec.pool_url} could not be fetched ({exc}); "
                                 f"{spec.remedy}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.pool_sha256:
        raise EnvironmentProblem(f"{spec.pool_url} has sha256 {digest}, expected "
                                 f"{spec.pool_sha256}; {spec.remedy}")
    target.write_bytes(data)
    return target


def fetch(spec: DebFile, target: Path) -> None:
    """Put the package's ``member_glob`` file at ``target`` (nothing else is kept)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    dpkg_deb = shutil.which("dpkg-deb")
    if dpkg_deb is None:
        raise EnvironmentProblem(f"{spec.purpose} need {spec.package} and dpkg-deb to unpack "
                                 f"it (a Debian machine); {spec.remedy}")
    with tempfile.TemporaryDirectory(prefix="fetch-", dir=target.parent) as tmp:
        work = Path(tmp)
        deb = _apt_download(spec, work) or _pool_download(spec, work)
        subprocess.run([dpkg_deb, "-x", str(deb), str(work / "root")], check=True,
                       capture_output=True, timeout=FETCH_TIMEOUT_S)
        found = sorted((work / "root").glob(spec.member_glob))
        if not found:
            raise EnvironmentProblem(f"{deb.name} holds no {spec.member_glob} (expected one); "
                                     f"{spec.remedy}")
        found[0].resolve().replace(target)  # a soname link: the library it names
