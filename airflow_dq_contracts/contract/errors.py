"""Located contract errors: every problem names the file, the line and the path in the document."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable


@dataclasses.dataclass(frozen=True)
class ValidationIssue:
    """One problem in a contract document.

    >>> str(ValidationIssue("orders.yaml", 12, "columns[2].checks[0].between", "needs 2 numbers"))
    'orders.yaml:12: columns[2].checks[0].between: needs 2 numbers'
    """

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.path or '<document>'}: {self.message}"


class ContractValidationError(ValueError):
    """A contract is invalid. ``issues`` holds every problem found in the file, in document order.

    >>> err = ContractValidationError([ValidationIssue("c.yaml", 3, "name", "is required")])
    >>> print(err)
    c.yaml:3: name: is required
    """

    def __init__(self, issues: Iterable[ValidationIssue]):
        self.issues: list[ValidationIssue] = sorted(
            issues, key=lambda i: (i.file, i.line if i.line is not None else 0, i.path)
        )
        super().__init__("\n".join(str(i) for i in self.issues))

    @property
    def file(self) -> str | None:
        return self.issues[0].file if self.issues else None
