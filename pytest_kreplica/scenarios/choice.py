"""Which module drives a case: the module of its ``workload`` or, for the plain workload,
of the client that sends it, and what run.json records of that client."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from . import DEFAULT_CLIENT, client_module, workload_module

if TYPE_CHECKING:
    from ..matrix import Case


def workload_of(case: Case) -> ModuleType:
    """The module of the case's ``workload`` (``scenarios.WORKLOADS``); a plain workload
    driven by another client is that client's module (``scenarios.CLIENTS``)."""
    client = getattr(case, "client", DEFAULT_CLIENT)
    if client != DEFAULT_CLIENT:
        return client_module(client)
    return workload_module(getattr(case, "workload", "plain"))


def client_meta(case: Case) -> dict[str, str]:
    """run.json's ``client``: which client drove the case, and its version."""
    client = getattr(case, "client", DEFAULT_CLIENT)
    return {"name": client, "version": client_module(client).client_version(case)}
