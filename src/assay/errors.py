"""The one exception tree of assay.

Every error assay raises on purpose derives from ``AssayError`` and from the builtin it
resembles, so callers can catch either; under ``AssayError``, a family head groups the errors
a caller would catch together::

    AssayError(Exception)                               where: the part at fault, or None
    ├── InputError                                      what a caller gave was wrong; nothing done
    │   ├── ExpressionError                             a verify_expression did not compile or run
    │   │   ├── ExpressionSyntaxError(SyntaxError)      rejected at compile time: position + caret
    │   │   └── ExpressionEvaluationError(TypeError)    JavaScript would throw while evaluating
    │   │       └── ExpressionLimitError                a bound on steps or sizes was exceeded
    │   ├── ContractError(ValueError)                   a malformed declarative filter contract
    │   ├── StateError(ValueError)                      a state report was rejected; nothing stored
    │   ├── ProbeConfigError(ValueError)                a probe was configured wrongly
    │   ├── GraphError(ValueError)                      a navigation graph declaration is invalid
    │   ├── SigningKeyError(ValueError)                 a signing or public key could not be loaded
    │   ├── LedgerEntryError(ValueError)                a malformed entry was refused; none stored
    │   ├── ProofError(ValueError)                      a Merkle proof is rejected or cannot be made
    │   ├── CheckpointError(ValueError)                 a signed tree head failed verification
    │   ├── RequestError(ValueError)                    a port's input was malformed; nothing done
    │   │   └── IdempotencyKeyReusedError               one key, two different requests
    │   ├── NotFoundError(LookupError)                  no session, transition or entry by that id
    │   ├── WorkflowError(ValueError)                   a workflow or a run's input is invalid
    │   │   ├── WorkflowLintError                       a workflow breaks an authoring rule
    │   │   └── WorkflowUnavailableError                a daemon's workflow file no longer loads
    │   └── WrongTypeError(TypeError)                   a Python caller passed a wrong kind of value
    ├── LedgerError(RuntimeError)                       a ledger could not be opened, read, written
    │   ├── LedgerIntegrityError                        a stored entry or checkpoint does not verify
    │   └── EvidenceStoppedError                        evidence failed to store; no more is taken
    ├── LifecycleError                                  an illegal move in a life (a caller's bug)
    │   ├── TransitionError(RuntimeError)               an illegal move in a transition's life
    │   ├── SessionError(RuntimeError)                  a session was used where it cannot run
    │   └── RunError(RuntimeError)                      an illegal move in a workflow run's life
    │       └── RunNotFoundError(LookupError)           no run by that id in the ledger
    └── ExternalError                                   something assay relies on failed to answer
        ├── ProbeError(RuntimeError)                    a probe's read failed, or a poller ran twice
        ├── ApplicationError(RuntimeError)              an application could not be loaded or run
        └── ModelError(RuntimeError)                    the model verifier's model could not answer

The new family heads (``InputError``, ``LifecycleError``, ``ExternalError``) add no builtin,
and no error joined an older family, so every ``except`` catches what it caught before. That
is why the ledger's value errors (an entry, a proof or a checkpoint refused) are input errors,
not ``LedgerError``s: that is a ``RuntimeError``, and code that waits out an unreachable
ledger (``contextlib.suppress(LedgerError)``) would swallow a malformed entry too.

Errors carry the pieces of their message as attributes, so programs need not parse text.
Every error has ``where``: the innermost part it names as at fault, as a string (a field, a
key, a path, a parameter, ``"position N"`` in an expression, or the source that was read: a
URL, a file, a variable), or ``None`` when it names none; its own attributes (``page``,
``step``, ``seq``, ...) keep the outer context.
"""

from __future__ import annotations

import os
import re
import traceback
from pathlib import Path
from typing import Final


class AssayError(Exception):
    """Base of every error assay raises on purpose; ``where`` names the part at fault."""

    def __init__(self, *args: object, where: str | None = None) -> None:
        super().__init__(*args)
        self.where = where


class InputError(AssayError):
    """What a caller gave (an expression, a contract, a report, a request, a definition, a
    configuration, an id) was wrong, so nothing was done; fixing the input is the remedy."""


class LifecycleError(AssayError):
    """An illegal move in the life of a transition, a session or a workflow run: a bug in the
    caller, never data; each subclass says which move and what would be legal."""


class ExternalError(AssayError):
    """Something assay relies on (an application, a probe's source, a model) failed to load
    or answer; the caller's input may be fine, and trying again after fixing it may help."""


class ExpressionError(InputError):
    """A ``verify_expression`` could not be compiled or evaluated."""


class ExpressionSyntaxError(ExpressionError, SyntaxError):
    """The expression is not in the language; raised by the compiler, never at evaluation.

    ``position`` is the 0-based offset into ``source``; ``caret`` is the source line with a
    ``^`` under the offending character, for showing to a person: on a long line, only the
    ``CARET_BEFORE`` characters before it and ``CARET_AFTER`` from it on, cut with ``…``.
    """

    CARET_BEFORE = 60
    CARET_AFTER = 20

    def __init__(self, reason: str, source: str, position: int) -> None:
        self.reason = reason
        self.source = source
        self.position = position
        line_start = source.rfind("\n", 0, position) + 1
        line_end = source.find("\n", position)
        if line_end == -1:
            line_end = len(source)
        line = source[line_start:line_end]
        column = position - line_start
        shown_start = max(line_start, position - self.CARET_BEFORE)
        shown_end = min(line_end, position + self.CARET_AFTER)
        before = "…" if shown_start > line_start else ""
        after = "…" if shown_end < line_end else ""
        # Half of a surrogate pair is shown as its escape: text holding one cannot be printed.
        head = escape_surrogates(source[shown_start:position])
        shown = f"{before}{head}{escape_surrogates(source[position:shown_end])}{after}"
        self.caret = f"{shown}\n{' ' * (len(before) + len(head))}^"
        message = f"{escape_surrogates(reason)} at position {position}\n{self.caret}"
        super().__init__(message, where=f"position {position}")
        # SyntaxError's own fields, so tracebacks and tools render it natively.
        self.msg = message
        self.offset = len(escape_surrogates(line[:column])) + 1
        self.lineno = source.count("\n", 0, position) + 1
        self.text = escape_surrogates(line)

    def __str__(self) -> str:
        return self.msg


HALF_PAIR = re.compile("[\ud800-\udfff]")
"""A surrogate code point: in a ``str``, always half of a pair (a whole pair is one
character), as Python's ``json`` reads the escape ``"\\ud800"``; no UTF-8 text holds it."""


def escape_surrogates(text: str) -> str:
    """``text`` with each half of a surrogate pair written as its ``\\uXXXX`` escape: what
    errors and evidence do with text they did not choose (an expression's source, an
    exception's message holding a file name's undecodable bytes), which could not be printed
    or written as JSON otherwise."""
    if text.isascii() or HALF_PAIR.search(text) is None:
        return text
    return HALF_PAIR.sub(lambda half: f"\\u{ord(half.group()):04x}", text)


def describe_raised(error: BaseException) -> str:
    """What code of a user's (an application module, a workflow's steps) raised, for a
    message that puts the fault there: assay's own errors by their message alone (it says
    what to change), any other with its type, and the last line of the user's code it passed
    through (``(path, line N)``)."""
    said = str(error) if isinstance(error, AssayError) else f"{type(error).__name__}: {error}"
    theirs = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith((_PACKAGE, "<frozen"))
    ]
    where = f" ({theirs[-1].filename}, line {theirs[-1].lineno})" if theirs else ""
    return escape_surrogates(f"{said}{where}")


_PACKAGE: Final = str(Path(__file__).resolve().parent) + os.sep
"""Where assay's own modules are: a frame there is not the user's code."""


class ExpressionEvaluationError(ExpressionError, TypeError):
    """Evaluation failed where JavaScript would throw, e.g. reading a property of undefined.

    ``path`` names the expression text whose value was the problem, when there is one.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message, where=path)
        self.path = path


class ExpressionLimitError(ExpressionEvaluationError):
    """Evaluation exceeded a bound (steps, string or array size); ``limit`` names it."""

    def __init__(self, message: str, limit: str, bound: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.bound = bound


class ContractError(InputError, ValueError):
    """A declarative filter contract is malformed; ``key`` names the condition at fault
    (a nested one as ``items[*].status``) and ``op``, when known, its operator."""

    def __init__(self, message: str, key: str | None = None, op: str | None = None) -> None:
        super().__init__(message, where=key)
        self.key = key
        self.op = op


class StateError(InputError, ValueError):
    """A state report or value was rejected as a whole, so nothing was stored.

    ``key`` names the report key or path at fault; for two keys that conflict, ``conflict``
    names the other one.
    """

    def __init__(self, message: str, key: str | None = None, conflict: str | None = None) -> None:
        super().__init__(message, where=key)
        self.key = key
        self.conflict = conflict


class ProbeError(ExternalError, RuntimeError):
    """A probe's read failed; ``source`` names what was being read (a URL, a state key)."""

    def __init__(self, message: str, *, source: str | None = None) -> None:
        super().__init__(message, where=source)
        self.source = source


class ProbeConfigError(InputError, ValueError):
    """A probe was configured wrongly; ``parameter`` names the argument at fault."""

    def __init__(self, message: str, *, parameter: str) -> None:
        super().__init__(message, where=parameter)
        self.parameter = parameter


class GraphError(InputError, ValueError):
    """A navigation graph declaration is invalid; ``page``, ``action`` and ``field`` say where
    (``where`` is the innermost of them that is known)."""

    def __init__(
        self,
        message: str,
        *,
        page: str | None = None,
        action: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message, where=field or action or page)
        self.page = page
        self.action = action
        self.field = field


class TransitionError(LifecycleError, RuntimeError):
    """An illegal move in a transition's lifecycle (a bug in the caller, never data)."""


class SessionError(LifecycleError, RuntimeError):
    """A session was used where it cannot run (a fire outside a running event loop); nothing
    was done."""


class LedgerError(AssayError, RuntimeError):
    """The ledger could not be opened, read or written; ``url`` names it, password hidden.

    Head of the ledger's errors; ``where`` is the ``url``, unless a subclass names a part.
    """

    def __init__(self, message: str, *, url: str | None = None, where: str | None = None) -> None:
        super().__init__(message, where=url if where is None else where)
        self.url = url


class ProofError(InputError, ValueError):
    """A Merkle proof was rejected, or cannot be made for the arguments given.

    ``parameter`` names the argument at fault: ``"proof"``, ``"root"``, ``"index"``, ...
    """

    def __init__(self, message: str, *, parameter: str) -> None:
        super().__init__(message, where=parameter)
        self.parameter = parameter


class CheckpointError(InputError, ValueError):
    """A signed tree head failed verification; ``field`` names the checkpoint field at fault."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, where=field)
        self.field = field


class SigningKeyError(InputError, ValueError):
    """A key could not be loaded; ``source`` names where it came from (a path, a variable).

    The message never repeats the key material itself.
    """

    def __init__(self, message: str, *, source: str) -> None:
        super().__init__(message, where=source)
        self.source = source


class LedgerEntryError(InputError, ValueError):
    """An entry handed to the ledger was malformed, so nothing was stored; ``field`` names it."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, where=field)
        self.field = field


class EvidenceStoppedError(LedgerError):
    """Storing evidence failed, so the log that queued it (a host's ``DurableEvidence``) takes
    no more, and no action runs without its evidence; a new log (a restarted daemon) may
    append again once the ledger is back. ``__cause__`` is the failure."""


class LedgerIntegrityError(LedgerError):
    """A stored entry or checkpoint does not verify.

    ``seq`` names the first bad entry (``None`` when the fault is a checkpoint's own),
    ``checkpoint`` the index of the bad checkpoint if one is at fault, ``field`` the field
    that was wrong and ``reason`` what was wrong with it.
    """

    def __init__(
        self,
        message: str,
        *,
        seq: int | None,
        reason: str,
        field: str | None = None,
        checkpoint: int | None = None,
    ) -> None:
        super().__init__(message, where=field)
        self.seq = seq
        self.reason = reason
        self.field = field
        self.checkpoint = checkpoint


class RequestError(InputError, ValueError):
    """A request to a port (HTTP, MCP, Python) was malformed; nothing was done.

    ``field`` names the part of the request that was wrong, when one part was.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message, where=field)
        self.field = field


class IdempotencyKeyReusedError(RequestError):
    """An idempotency key came back with a different request than the one it first named."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message, field="Idempotency-Key")
        self.key = key


class NotFoundError(InputError, LookupError):
    """No session, transition, run or entry has the id asked for; ``kind`` and ``id`` say which."""

    def __init__(self, message: str, *, kind: str, id: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.id = id

    def __str__(self) -> str:
        # LookupError would show the message quoted, as KeyError does; show it plain.
        return str(self.args[0])


class ApplicationError(ExternalError, RuntimeError):
    """An application (``--app MODULE:ATTR``) could not be loaded, started or stopped."""


class WorkflowError(InputError, ValueError):
    """A workflow definition, or the input a run was started with, is invalid.

    ``workflow`` names the workflow (or file), ``step`` the step and ``field`` the field at
    fault, where there is one; ``where`` is the innermost of them that is known.
    """

    def __init__(
        self,
        message: str,
        *,
        workflow: str | None = None,
        step: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message, where=field or step or workflow)
        self.workflow = workflow
        self.step = step
        self.field = field


class WorkflowUnavailableError(WorkflowError):
    """A workflow the daemon runs (by name, or to resume a run) no longer loads: its file was
    changed into one that cannot run after the daemon started, or is gone. Whoever runs the
    daemon must fix it; the request that found it was not at fault."""


class WorkflowLintError(WorkflowError):
    """A workflow breaks an authoring rule; nothing was run.

    ``problems`` holds every problem found (each with ``rule``, ``step``, ``criterion`` and
    ``message``); ``step`` and ``criterion`` name the first, for programs that want one.
    """

    def __init__(self, message: str, *, workflow: str, problems: tuple[object, ...]) -> None:
        first = problems[0] if problems else None
        super().__init__(message, workflow=workflow, step=getattr(first, "step", None))
        self.problems = problems
        self.criterion: str | None = getattr(first, "criterion", None)
        self.rule: str | None = getattr(first, "rule", None)


class RunError(LifecycleError, RuntimeError):
    """An illegal move in a workflow run's lifecycle; ``run_id`` and ``status`` say where."""

    def __init__(self, message: str, *, run_id: str, status: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.status = status


class RunNotFoundError(RunError, LookupError):
    """No run with ``run_id`` is recorded in the ledger."""


class ModelError(ExternalError, RuntimeError):
    """The model verifier's model could not be asked: its endpoint did not answer, or its
    model file could not be loaded. ``where`` names the endpoint or the file."""

    def __init__(self, message: str, *, where: str) -> None:
        super().__init__(message, where=where)
        self.where: str = where


class WrongTypeError(InputError, TypeError):
    """A Python caller passed the wrong kind of value (a string where a list of them belongs,
    something not callable as a handler); nothing was done. ``parameter`` names it."""

    def __init__(self, message: str, *, parameter: str) -> None:
        super().__init__(message, where=parameter)
        self.parameter = parameter
