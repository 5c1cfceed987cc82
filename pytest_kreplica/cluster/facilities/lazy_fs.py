"""lazy_fs: each node's log dir on a FUSE filesystem that can drop what was not fsynced
(``cluster/facilities/impl/lazymount.py`` mounts it, ``cluster/facilities/impl/lazyfs.py``
serves it), so a fault can cut the power of a node.

Prepared once: Debian's libfuse 3 fetched into the cache (or the system's). Adds to a node:
the mount at its log dir, made on the host before the node's files are written; synced
after the format. Swept: lazy mounts whose owner died (left answering "transport endpoint
is not connected").
"""

from __future__ import annotations

from .facility import Attachment, Facility, HelperAttachment, Site


def attach(site: Site) -> Attachment:
    from .impl import lazymount  # pulls in psutil: the plugin's import stays light

    return HelperAttachment(lazymount.mount_all(site.log_dirs))


def prepare() -> object:
    from .impl import lazymount  # pulls in psutil

    return lazymount.ensure_library()


def sweep() -> object:
    from .impl import lazymount  # pulls in psutil

    return lazymount.sweep_stale()


FACILITY = Facility(name="lazy_fs", doc="each node's log dir on a filesystem that loses "
                    "un-fsynced writes on demand", key="lazy", backends=("process", "docker"),
                    attach=attach, describe_as="disks", prepare=prepare, sweep=sweep)
