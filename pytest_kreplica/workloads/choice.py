"""Which module drives a case: the module of its ``workload`` or, for the plain workload,
of the client that sends it, and what run.json records of that client."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from . import DEFAULT_CLIENT, client_module, client_workload_module, workload_module

if TYPE_CHECKING:
    from ..matrix import Case


def workload_of(case: Case) -> ModuleType:
    """The module of the case's ``workload`` (``workloads.WORKLOADS``); a plain workload
    driven by another client is that client's module (``workloads.CLIENTS``), another
    workload on it the pair's (``workloads.CLIENT_WORKLOADS``)."""
    client = getattr(case, "client", DEFAULT_CLIENT)
    workload = getattr(case, "workload", "plain")
    if client == DEFAULT_CLIENT:
        return workload_module(workload)
    if workload == "plain":
        return client_module(client)
    return client_workload_module(client, workload)


def client_meta(case: Case) -> dict[str, str]:
    """run.json's ``client``: which client drove the case, and its version."""
    client = getattr(case, "client", DEFAULT_CLIENT)
    return {"name": client, "version": client_module(client).client_version(case)}
