"""Exception tree of pytest-kreplica.

    KreplicaError                 base; its message is one line meant for a person
    ├── InputError                bad user input: matrix YAML, options, history files
    │   ├── MatrixError           a matrix file is malformed (names file, key, allowed values)
    │   └── HistoryError          a run directory cannot be read (names file and line)
    ├── EnvironmentProblem        the machine lacks something (Java 17+, Maven, a repository)
    └── HarnessError              the harness could not do its job; nothing is judged
        ├── CheckError            a check could not run (Spark did not start, a file vanished)
        └── ClusterError          a cluster could not start, heal or answer in time, a
            │                     fault did not act, an admin request timed out
            └── NodeError         one node misbehaved (carries its log path)

The CLI and the pytest plugin print ``str(error)`` of these and exit with code 2
(input / environment) without a traceback. A ``HarnessError`` raised by a test ends it as a
pytest *error*, not a failure (``plugin.outcomes``): a failure means the system under test
broke a promise.
"""

from __future__ import annotations


class KreplicaError(Exception):
    """Base of every error this project raises on purpose."""


class InputError(KreplicaError):
    """Bad user input; the message names the file, the key and what is allowed."""


class MatrixError(InputError):
    """A matrix file is malformed."""


class HistoryError(InputError):
    """A run directory (history tables, run.json, replicas.json) cannot be read."""


class EnvironmentProblem(KreplicaError):
    """Something the machine must provide is missing; the message says what to install or set."""


class HarnessError(KreplicaError):
    """The harness could not do its job (a fault that did not act, a cluster that did not
    become ready, an admin request that timed out after its retries, a client that could
    not be built, a Spark job that died): the case proves nothing about the broker. The
    message says what was expected and what was seen."""


class CheckError(HarnessError):
    """A check could not run to its end (its JVM did not start, an input file vanished while
    it was read): exit 2, never 1, which means the run was found invalid."""


class ClusterError(HarnessError):
    """A cluster did not reach an expected state in time; the message names the logs."""


class NodeError(ClusterError):
    """One node did not reach an expected state; carries the node id and its log file."""

    def __init__(self, message: str, node_id: int | None = None, log_file: str | None = None):
        super().__init__(message)
        self.node_id = node_id
        self.log_file = log_file
