"""Which workload drives a case: the ``WORKLOAD`` of its ``workload`` module or, for the
plain workload, of the client that sends it, and what run.json records of that client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import DEFAULT_CLIENT, client_module, client_workload_module, workload_module

if TYPE_CHECKING:
    from ..matrix import Case
    from .protocol import Workload

__all__ = ["client_meta", "workload_of"]


def workload_of(case: Case) -> Workload:
    """The case's workload (``workloads.WORKLOADS``); a plain workload driven by another
    client is that client's (``workloads.CLIENTS``), another workload on it the pair's
    (``workloads.CLIENT_WORKLOADS``)."""
    client, workload = case.client, case.workload
    if client == DEFAULT_CLIENT:
        return workload_module(workload).WORKLOAD
    if workload == "plain":
        return client_module(client).WORKLOAD
    return client_workload_module(client, workload).WORKLOAD


def client_meta(case: Case) -> dict[str, str]:
    """run.json's ``client``: which client drove the case, and its version."""
    workload = workload_of(case)
    return {"name": workload.client, "version": workload.client_version(case)}
