"""FACILITIES: the one table of node facilities (name -> :class:`Facility`), what a fault
may need from the nodes of a cluster the suite starts.

A ``Failure`` (``faults/failure.py``) names the facilities it needs; the pool puts their
union into the case's ``ClusterSpec.facilities``; the backends attach what the spec names
(:func:`attach`) and ask the attachments what each adds to a node. To add a facility: a
module beside ``link_proxy.py`` defining ``FACILITY``, and its line below (the order is
the order the hooks run in).
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import InputError
from . import dynamic_quorum, fake_clock, lazy_fs, link_proxy, small_disk, tiered_storage
from .attached import Attached
from .facility import Attachment, ContainerParts, Facility, HelperAttachment, Site

__all__ = ["FACILITIES", "Attached", "Attachment", "ContainerParts", "Facility",
           "HelperAttachment", "Site", "attach", "check", "key_suffix", "sweep_leftovers"]

FACILITIES: dict[str, Facility] = {f.name: f for f in (
    link_proxy.FACILITY,
    fake_clock.FACILITY,
    small_disk.FACILITY,
    lazy_fs.FACILITY,
    dynamic_quorum.FACILITY,
    tiered_storage.FACILITY,
)}


def check(names: Iterable[str], backend: str) -> tuple[Facility, ...]:
    """The named facilities in registry order; ``InputError`` (one line) for a name that is
    unknown or a facility ``backend`` does not offer."""
    names = set(names)
    unknown = sorted(names - set(FACILITIES))
    if unknown:
        raise InputError(f"cluster facility {unknown[0]!r} is unknown; allowed: "
                         f"{', '.join(FACILITIES)}")
    chosen = tuple(f for f in FACILITIES.values() if f.name in names)
    for facility in chosen:
        if backend not in facility.backends:
            raise InputError(f"cluster facility {facility.name!r} ({facility.doc}) needs the "
                             f"{' or '.join(facility.backends)} backend; this cluster's "
                             f"backend is {backend!r}")
    return chosen


def attach(names: Iterable[str], site: Site) -> Attached:
    """Attach the named facilities to the cluster at ``site`` (none named: nothing)."""
    return Attached.start(check(names, site.backend), site)


def key_suffix(names: Iterable[str]) -> str:
    """``-<key>`` of each named facility, in registry order (cluster directory names)."""
    names = set(names)
    return "".join(f"-{f.key}" for f in FACILITIES.values() if f.name in names)


def sweep_leftovers() -> None:
    """Every facility's sweep: what killed runs left (their owners are dead)."""
    for facility in FACILITIES.values():
        if facility.sweep is not None:
            facility.sweep()
