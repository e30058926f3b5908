"""The one error `mkq ctl` shows: a message naming the object or flag at fault, exit code 2."""

from __future__ import annotations


class CtlError(Exception):
    """What went wrong, in words for the user; the command prints it and exits 2."""
