"""Exceptions user code sees or raises."""
from typing import Any, Optional


class InputValidationError(ValueError):
    """Raise it from an endpoint function when the caller's input is wrong.

    The worker reports it with `error_type: "InputValidationError"` so the platform can
    answer HTTP 400 instead of treating it as a server failure; an LB route answers 400.
    """


class RemoteCallError(RuntimeError):
    """A call to an endpoint failed. Its message starts with the remote exception (`ValueError: item 500
    is cursed`), then where it ran; `error_type` and `traceback` hold the remote type and traceback
    (None when the platform, not the function, failed), `error` what the platform reported as is."""

    def __init__(self, message: str, *, endpoint: Optional[str] = None, function: Optional[str] = None,
                 error: Any = None, status: Any = None, job_id: Optional[str] = None,
                 error_type: Optional[str] = None, traceback: Optional[str] = None) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.function = function
        self.error = error
        self.status = status
        self.job_id = job_id
        self.error_type = error_type
        self.traceback = traceback


# Exception class names reported as input errors even when the app defines its own class.
INPUT_ERROR_NAMES = frozenset({"InputValidationError", "InputError"})


def is_input_error(exc: BaseException) -> bool:
    return isinstance(exc, InputValidationError) or type(exc).__name__ in INPUT_ERROR_NAMES
