"""Faults: what the nemesis can strike (``FAILURES``, one module per failure type), the
seeded plan it follows, the nemesis itself and the checks of what it recorded."""

from __future__ import annotations

from .background import run_in_thread
from .checks import ELECTION_BOUND_S, scenario_checks
from .coordinators import resolvers as coordinator_resolvers
from .failure import Failure
from .nemesis import ELECTION_TIMEOUT_S, RECOVERY_TIMEOUT_S, Component, Nemesis
from .plan import FAULT_RECORD_PHASES, FaultPlan, FaultRecord, FaultSpec
from .registry import (
    COMPONENT_TARGETS,
    FAILURE_VALUES,
    FAILURES,
    NONE,
    RANDOM,
    RANDOM_FAILURES,
    RESTORE_EVENTS,
    STRIKE_EVENTS,
    TARGET_VALUES,
    TARGETS,
    WORKLOAD_TARGETS,
    failures_on,
)

__all__ = ["COMPONENT_TARGETS", "ELECTION_BOUND_S", "ELECTION_TIMEOUT_S", "FAILURES",
           "FAILURE_VALUES", "RECOVERY_TIMEOUT_S",
           "FAULT_RECORD_PHASES", "NONE", "RANDOM", "RANDOM_FAILURES", "RESTORE_EVENTS",
           "STRIKE_EVENTS", "TARGETS", "TARGET_VALUES", "WORKLOAD_TARGETS", "Component",
           "Failure", "FaultPlan", "FaultRecord", "FaultSpec", "Nemesis",
           "coordinator_resolvers", "failures_on", "run_in_thread", "scenario_checks"]
