"""small_disk: each node's log dir is the mount point of a small ext4 image of its own
(``cluster/facilities/impl/smalldisk.py``), so a fault can fill it or turn it read-only.

Prepared: nothing (root, ``mount`` and ``e2fsprogs`` are checked at the mount). Adds to a
node: the mount at its log dir, made on the host before the node's files are written (a
container's bind mount of the node's directory takes it along); synced after the format.
Swept: loop mounts whose image names a dead owner.
"""

from __future__ import annotations

from .facility import Attachment, Facility, HelperAttachment, Site


def attach(site: Site) -> Attachment:
    from .impl import smalldisk  # pulls in psutil: the plugin's import stays light

    return HelperAttachment(smalldisk.mount_all(site.log_dirs))


def sweep() -> object:
    from .impl import smalldisk  # pulls in psutil

    return smalldisk.sweep_stale()


FACILITY = Facility(name="small_disk", doc="each node's log dir on a small filesystem of its "
                    "own", key="disks", backends=("process", "docker"), attach=attach,
                    describe_as="disks", sweep=sweep)
